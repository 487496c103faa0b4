"""Short rows on the GPU profile (issue 23 item 5): a row pipeline whose rows
take at most `row_segment` x 16 elements puts several rows in one
work-group, a segment of `row_segment` work-items a row, each combining
apart (row_pipeline.py's `row_segments`).

One program holds softmax, log_softmax, layer_norm, a row-sum pipeline and
a row-max pipeline (each also returning its row totals), each on its own
input; it runs under PoCL with the GPU profile (outputs poisoned, bounds
verified) in f32, f16, bf16 and f64, at row counts that leave the last
work-group part empty (odd, and 1) and row lengths of 1, a partial last
step (100, 130), whole steps (64, 512) and one past the short rows (513),
against the reference interpreter. A module target with a small
`row_segment` draws more rows a work-group. The kernels' work-group sizes
are checked too, so a test cannot pass on the one-row-a-work-group kernel."""

from __future__ import annotations

import re

import ml_dtypes
import numpy as np
import pytest
from check import assert_matches, ty
from conftest import profiled_device
from xdsl.dialects.builtin import ModuleOp

import accy
from accy.backends.opencl.emitter import emit_opencl
from accy.dialects.parse import parse_module
from accy.passes.kernelization.kernelize import KernelizePass
from accy.passes.pass_manager import PassManager
from accy.runtime.opencl import opencl_devices

DTYPES = {"f32": np.dtype(np.float32), "f16": np.dtype(np.float16), "bf16": np.dtype(ml_dtypes.bfloat16),
          "f64": np.dtype(np.float64)}  # fmt: skip
#: Within one rounding of the element type of the reference (which computes
#: f16 and bf16 in f32 too): the kernel's f32 sums are in another order.
TOLERANCE = {"f16": (2**-9, 2**-9), "bf16": (2**-7, 2**-7)}

#: (rows, row length): rows of 1 (a work-item a row), partial last steps,
#: whole steps, the longest short row and one past it; row counts odd, 1,
#: and fewer than a work-group's rows.
SIZES = [(37, 1), (1, 100), (45, 100), (9, 130), (37, 64), (3, 512), (5, 513), (13, 17)]
#: Module targets: the default profile (a warp a row, 256 work-items a
#: work-group) and segments of 4 work-items (64 a work-group: n = 64 holds
#: 16 elements a work-item, 16 rows a work-group; n = 100 is a long row then).
TARGETS = ["", "row_threads = 64, row_segment = 4"]


def program(rows: int, n: int, et: str) -> str:
    """softmax, log_softmax, layer_norm, x·sum(x) and x - max(x) over rows
    of n, the last two with their row totals."""
    t, r, g = ty([rows, n], et), ty([rows], et), ty([n], et)
    bc = f'<{{dims = array<i64: 0>}}> : ({r}) -> {t}'
    red = '<{{kind = "{}", axes = array<i64: 1>}}> : ({}) -> {}'
    return f"""func.func @main(%a: {t}, %b: {t}, %c: {t}, %gamma: {g}, %beta: {g}, %d: {t}, %e: {t})
    -> ({t}, {t}, {t}, {t}, {r}, {t}, {r}) {{
  %sm = "accy.softmax"(%a) <{{axis = 1 : i64}}> : ({t}) -> {t}
  %lsm = "accy.log_softmax"(%b) <{{axis = 1 : i64}}> : ({t}) -> {t}
  %ln = "accy.layer_norm"(%c, %gamma, %beta) <{{epsilon = 1.0e-05 : f32}}> : ({t}, {g}, {g}) -> {t}
  %s = "accy.reduce"(%d) {red.format("sum", t, r)}
  %sb = "accy.broadcast"(%s) {bc}
  %ds = "accy.mul"(%d, %sb) : ({t}, {t}) -> {t}
  %m = "accy.reduce"(%e) {red.format("max", t, r)}
  %mb = "accy.broadcast"(%m) {bc}
  %em = "accy.sub"(%e, %mb) : ({t}, {t}) -> {t}
  func.return %sm, %lsm, %ln, %ds, %s, %em, %m : {t}, {t}, {t}, {t}, {r}, {t}, {r}
}}"""


def in_module(src: str, fields: str) -> str:
    return f"builtin.module attributes {{accy.target = #accy.target<{fields}>}} {{\n{src}\n}}" if fields else src


def inputs(rows: int, n: int, dtype: np.dtype, rng: np.random.Generator) -> list[np.ndarray]:
    def draw(*shape: int) -> np.ndarray:
        return (rng.standard_normal(shape) * 3).astype(dtype)

    return [draw(rows, n), draw(rows, n), draw(rows, n), draw(n), draw(n), draw(rows, n), draw(rows, n)]


@pytest.fixture
def gpu():
    if not opencl_devices():
        pytest.skip("no OpenCL device")
    return profiled_device("gpu")


#: f32 at every size under both targets; the other types at a few sizes.
CASES = [(rows, n, "f32", target) for rows, n in SIZES for target in TARGETS] + [
    (rows, n, et, "") for et in ("f16", "bf16", "f64") for rows, n in [(45, 100), (3, 512), (37, 1)]
]


@pytest.mark.parametrize("rows,n,et,target", CASES)
def test_short_rows_match_the_reference(rows: int, n: int, et: str, target: str, gpu) -> None:
    fields = [target] if target else []
    if et == "f16" and "cl_khr_fp16" not in gpu.cl_device.extensions.split():
        fields.append("fp16 = false")  # stored in 16 bits, computed in f32 (PoCL)
    exe = accy.compile(in_module(program(rows, n, et), ", ".join(fields)), device=gpu)
    rtol, atol = TOLERANCE.get(et, (2e-4, 2e-5))
    for seed in (0, 1):
        ins = inputs(rows, n, DTYPES[et], np.random.default_rng(seed))
        got = exe(*ins)
        assert exe.stats.fallbacks == 0
        for g, w in zip(got, exe.reference_outputs(ins), strict=True):
            assert g.dtype == w.dtype
            if et in TOLERANCE:
                g, w = g.astype(np.float32), w.astype(np.float32)
            assert_matches(g, w, rtol, atol)


def kernelized(src: str) -> ModuleOp:
    module = parse_module(src)
    PassManager([KernelizePass(verify_bounds=True)]).run(module)
    return module


@pytest.mark.parametrize(
    "rows,n,target,group",
    [
        # Segments of at most a warp, at least 8 elements a work-item where
        # the row allows (128: 16 work-items a row, 16 rows a work-group of
        # 256); fewer rows, a smaller work-group (a power of two of rows):
        # 64 takes 2 rows of 8, 100 one of 8 (13 elements each).
        (37, 128, "", 256), (3, 64, "", 16), (1, 100, "", 8), (45, 512, "", 256), (45, 256, "", 256),
        # One work-item a row: 256 rows a work-group, at most the rows.
        (37, 1, "", 32), (300, 1, "", 256),
        # Longer rows: one work-group of row_threads a row, as before segments.
        (5, 513, "", 256), (5, 4096, "", 256),
        # Segments of 4: 16 rows a work-group of 64; a row of 100 is long then.
        (37, 64, "row_segment = 4, row_threads = 64", 64), (37, 100, "row_segment = 4, row_threads = 64", 64),
    ],
)
def test_short_rows_share_a_work_group(rows: int, n: int, target: str, group: int) -> None:
    """Every row-pipeline kernel of the program states the work-group the
    row shape asks for."""
    fields = ", ".join(f for f in ('profile = "gpu"', target) if f)
    src = emit_opencl(kernelized(in_module(program(rows, n, "f32"), fields)))
    kinds = re.findall(r"// kind: (\w+)", src)
    sizes = [int(s) for s in re.findall(r"reqd_work_group_size\((\d+), 1, 1\)", src)]
    assert kinds == ["row_pipeline"] * 5 and sizes == [group] * 5
