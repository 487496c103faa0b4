"""16-bit float rows read wide on the GPU profile (issue 23): a row sum
(the reduction's vector shares) and row pipelines (softmax, layer norm)
over f16 and bf16 rows read `half_lanes` elements (8: 16 bytes) a step
as one aligned vector access, and the pipelines' held shares are written
back so too, where every work-item's share is whole vectors and the
buffer's vectors are aligned; elsewhere element by element (or, for a
reduction whose shares are whole vectors of 4 only, 4 lanes a step).

Each case runs under PoCL with the GPU profile (outputs poisoned, bounds
verified, f16 stored in 16 bits and computed in f32 as on NVIDIA's
OpenCL) against the reference interpreter, and the emitted source is
checked for the path it should take: rows of 4096 and 2048 (a work-group
a row), 256 and 512 (segments), a row sum of 1024 (vectors of 4), and
rows where no vector fits (1000, 17, 1 x 1), a row read through a slice
that starts one element in (no aligned vectors) or eight in (aligned
again), and inputs that start one element into a numpy buffer (copied,
not read in place)."""

from __future__ import annotations

import re

import ml_dtypes
import numpy as np
import pytest
from check import assert_matches, ty
from conftest import profiled_device

import accy
from accy.runtime.opencl import opencl_devices

DTYPES = {"f16": np.dtype(np.float16), "bf16": np.dtype(ml_dtypes.bfloat16)}
#: A few roundings of the element type: the kernel's f32 sums are in another order than the reference's.
TOLERANCE = {"f16": 2**-9, "bf16": 2**-7}


@pytest.fixture
def gpu():
    if not opencl_devices():
        pytest.skip("no OpenCL device")
    return profiled_device("gpu")


def program(rows: int, n: int, et: str, skip: int = 0) -> str:
    """A row sum, a softmax and a layer norm of the rows of %a (the last
    `n` of its `n + skip` columns: a slice when `skip`)."""
    t, r, g = ty([rows, n], et), ty([rows], et), ty([n], et)
    lines = [f"func.func @main(%in: {ty([rows, n + skip], et)}, %g: {g}, %b: {g}) -> ({r}, {t}, {t}) {{"]
    if skip:
        lines.append(f'  %a = "accy.slice"(%in) <{{start = array<i64: 0, {skip}>, limit = array<i64: {rows}, '
                     f'{n + skip}>, stride = array<i64: 1, 1>}}> : ({ty([rows, n + skip], et)}) -> {t}')
    else:
        lines[0] = lines[0].replace("%in", "%a")
    lines += [
        f'  %s = "accy.reduce"(%a) <{{kind = "sum", axes = array<i64: 1>}}> : ({t}) -> {r}',
        f'  %sm = "accy.softmax"(%a) <{{axis = 1 : i64}}> : ({t}) -> {t}',
        f'  %ln = "accy.layer_norm"(%a, %g, %b) <{{epsilon = 1.0e-05 : f32}}> : ({t}, {g}, {g}) -> {t}',
        f"  func.return %s, %sm, %ln : {r}, {t}, {t}",
        "}",
    ]
    return "\n".join(lines)


def compiled(src: str, et: str, gpu) -> accy.Executable:
    fields = "" if et == "bf16" or "cl_khr_fp16" in gpu.cl_device.extensions.split() else "fp16 = false"
    if fields:
        src = f"builtin.module attributes {{accy.target = #accy.target<{fields}>}} {{\n{src}\n}}"
    return accy.compile(src, device=gpu)


def check(exe: accy.Executable, ins: list[np.ndarray], et: str) -> None:
    got = exe(*ins)
    assert exe.stats.fallbacks == 0
    for g, w in zip(got, exe.reference_outputs(ins), strict=True):
        assert g.dtype == w.dtype
        assert_matches(g.astype(np.float32), w.astype(np.float32), TOLERANCE[et], TOLERANCE[et])


def wide(source: str, kind: str) -> set[int]:
    """The lanes of the aligned 16-bit vector accesses of the `kind` kernels."""
    kernels = re.split(r"// kind: ", source)[1:]
    return {int(w) for k in kernels if k.startswith(kind) for w in re.findall(r"ushort(\d+)\*", k)}


#: (rows, n, skip, lanes of the row sum's aligned loads, of the row pipelines' aligned accesses).
CASES = [
    (3, 4096, 0, {8}, {8}),  # a work-group a row, 2 vectors a work-item
    (5, 2048, 0, {8}, {8}),  # 1 vector a work-item
    (9, 256, 0, set(), {8}),  # segments of 32, 1 vector a work-item (the sum: 1 element a work-item)
    (7, 512, 0, set(), {8}),  # segments of 32, 2 vectors a work-item (the sum: 2 elements a work-item)
    (3, 1024, 0, {4}, set()),  # the sum's shares whole vectors of 4 only; the pipelines' 4 elements a work-item
    (3, 1000, 0, set(), set()),  # no share is whole vectors
    (13, 17, 0, set(), set()),
    (1, 1, 0, set(), set()),
    (3, 2048, 1, set(), {8}),  # a slice one element in: no vector of it aligned (gamma's, beta's, the outputs' are)
    (3, 2048, 8, {8}, {8}),  # eight in, rows of 2056: aligned vectors again
]


@pytest.mark.parametrize("et", sorted(DTYPES))
@pytest.mark.parametrize("rows,n,skip,sum_lanes,row_lanes", CASES)
def test_half_rows_match_the_reference(
    rows: int, n: int, skip: int, sum_lanes: set[int], row_lanes: set[int], et: str, gpu
) -> None:
    exe = compiled(program(rows, n, et, skip), et, gpu)
    source = exe.program.source
    assert wide(source, "reduction") == sum_lanes and wide(source, "row_pipeline") == row_lanes
    if skip % 8:
        assert not re.search(r"ushort\d+\*\)\(b0 ", source)  # the slice (argument 0) element by element
    rng = np.random.default_rng(0)
    for _ in range(2):
        ins = [(rng.standard_normal(s) * 3).astype(DTYPES[et]) for s in ([rows, n + skip], [n], [n])]
        check(exe, ins, et)


@pytest.mark.parametrize("et", sorted(DTYPES))
def test_inputs_one_element_into_a_buffer_are_copied(et: str, gpu) -> None:
    """Inputs that start 2 bytes past a 16-byte boundary (views of a numpy
    buffer): kernels whose loads are aligned vectors read a copy, not the
    array in place (an aligned load of it faults on PoCL)."""
    rows, n = 3, 4096
    exe = compiled(program(rows, n, et), et, gpu)
    assert wide(exe.program.source, "row_pipeline") == {8}
    rng = np.random.default_rng(1)
    buffers = [(rng.standard_normal(size + 16) * 3).astype(DTYPES[et]) for size in (rows * n, n, n)]
    starts = [b[8 - b.ctypes.data % 16 // 2 :] for b in buffers]  # a 16-byte boundary
    for offset, in_place in ((0, True), (1, False)):
        ins = [s[offset : offset + a].reshape(shape) for s, a, shape in
               zip(starts, (rows * n, n, n), ([rows, n], [n], [n]), strict=True)]
        check(exe, ins, et)
        if gpu.host_unified_memory:
            assert exe.program.in_place == [in_place] * 3
