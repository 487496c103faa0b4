"""accy.conv and accy.pool against the reference interpreter on every device
(PoCL under both profiles, LLVM), outputs poisoned: 1-d, 2-d and 3-d;
strides, dilations, asymmetric pads; groups, depthwise (with and without a
channel multiplier); 1x1 kernels, a kernel as large as the (padded) input,
odd sizes, batch 1 and more; a conv large enough for the packed dot; conv
with a fused prologue and a bias + relu epilogue; f32, f16 and bf16; conv
lowered directly (kernelization/conv.py) and, for a few cases, its
decomposition (the `decompose` pass: im2col as slices and a dot).
Pools: max, sum and average with count_include_pad both ways, ONNX's
ceil_mode as larger pads_high, windows wholly in the padding (-inf for max,
NaN for an average without count_include_pad), integer max pools (the
padding is the type's lowest), f16 and bf16; a pool is one kernel. Never a
host fallback."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from check import arr, assert_matches, ty
from test_kernels import for_float16

import accy
from accy.dialects.accy import infer_window
from accy.dialects.parse import parse_module
from accy.passes.decompose import DecomposePass
from accy.passes.pass_manager import PassManager

DTYPES = {"f32": np.dtype(np.float32), "f16": np.dtype(np.float16), "bf16": np.dtype(ml_dtypes.bfloat16),
          "i32": np.dtype(np.int32), "i64": np.dtype(np.int64)}  # fmt: skip
#: (input shape, weight shape, strides, dilations, pads_low, pads_high, groups)
CONVS = {
    "1d": ((2, 3, 11), (4, 3, 3), [1], [1], [1], [1], 1),
    "1d-stride-dilation-groups": ((1, 4, 17), (6, 2, 3), [2], [3], [2], [0], 2),
    "2d-3x3-batch2": ((2, 5, 9, 7), (7, 5, 3, 3), [1, 1], [1, 1], [1, 1], [1, 1], 1),
    "2d-strides-asymmetric-pads": ((1, 3, 10, 11), (5, 3, 3, 2), [2, 3], [1, 1], [0, 2], [1, 0], 1),
    "2d-depthwise": ((2, 6, 8, 9), (6, 1, 3, 3), [1, 1], [1, 1], [1, 1], [1, 1], 6),
    "2d-depthwise-multiplier": ((1, 3, 7, 7), (6, 1, 3, 3), [2, 2], [1, 1], [1, 1], [1, 1], 3),
    "2d-groups-dilations": ((1, 8, 9, 9), (4, 4, 2, 3), [1, 2], [2, 1], [1, 0], [0, 1], 2),
    "2d-1x1": ((3, 16, 5, 7), (8, 16, 1, 1), [1, 1], [1, 1], [0, 0], [0, 0], 1),
    "2d-1x1-stride2": ((1, 4, 9, 9), (4, 4, 1, 1), [2, 2], [1, 1], [0, 0], [0, 0], 1),
    "2d-kernel-is-input": ((2, 3, 5, 4), (6, 3, 5, 4), [1, 1], [1, 1], [0, 0], [0, 0], 1),
    "2d-kernel-is-padded-input": ((1, 2, 3, 3), (2, 2, 5, 5), [1, 1], [1, 1], [1, 1], [1, 1], 1),
    "2d-packed": ((1, 32, 17, 19), (64, 32, 3, 3), [1, 1], [1, 1], [1, 1], [1, 1], 1),
    "2d-packed-groups-batch2": ((2, 16, 9, 13), (32, 8, 3, 3), [1, 1], [1, 1], [1, 1], [1, 1], 2),
    "3d": ((1, 2, 5, 6, 4), (3, 2, 3, 2, 3), [1, 2, 1], [1, 1, 2], [1, 0, 2], [2, 1, 0], 1),
    "3d-batch2-1x1x1": ((2, 3, 3, 4, 5), (2, 3, 1, 1, 1), [1, 1, 2], [1, 1, 1], [0, 1, 0], [0, 0, 1], 1),
}
#: (input shape, kind, window, strides, dilations, pads_low, pads_high)
POOLS = {
    "1d-max-pads": ((2, 3, 11), "max", [3], [2], [1], [1], [1]),
    "2d-max-resnet": ((1, 4, 13, 12), "max", [3, 3], [2, 2], [1, 1], [1, 1], [1, 1]),
    "2d-max-dilations": ((2, 2, 9, 10), "max", [2, 3], [1, 2], [2, 2], [0, 1], [1, 1]),
    "2d-average": ((2, 3, 7, 9), "average", [3, 3], [2, 2], [1, 1], [1, 1], [1, 1]),
    "2d-average-asymmetric": ((1, 2, 6, 5), "average", [2, 3], [1, 2], [1, 1], [0, 2], [1, 0]),
    "2d-average-1x1": ((1, 3, 5, 5), "average", [1, 1], [2, 2], [1, 1], [0, 0], [0, 0]),
    # ONNX's ceil_mode = 1 at 8 wide, window 3, stride 2: 4 windows, the last
    # one past the input by one (pads_high 1 more than ceil_mode = 0's 0).
    "2d-ceil-mode": ((1, 2, 8, 8), "average", [3, 3], [2, 2], [1, 1], [0, 0], [1, 1]),
    "2d-global": ((2, 3, 5, 7), "average", [5, 7], [1, 1], [1, 1], [0, 0], [0, 0]),
    "2d-sum": ((1, 2, 6, 7), "sum", [2, 2], [2, 3], [1, 1], [1, 0], [0, 1]),
    "3d-max": ((1, 2, 5, 6, 7), "max", [2, 3, 2], [1, 2, 2], [1, 1, 2], [1, 1, 0], [0, 1, 1]),
    "3d-average": ((2, 1, 4, 5, 3), "average", [2, 2, 2], [2, 1, 1], [1, 1, 1], [1, 0, 1], [0, 1, 1]),
}


def conv_src(case: tuple, et: str = "f32", prologue: bool = False, bias: bool = False) -> str:
    """@main(x, w[, b]) -> conv(x, w) (of neg(x) with `prologue`; relu(+ b
    broadcast along the channels) with `bias`)."""
    xs, ws, strides, dilations, lo, hi, groups = case
    rs = (xs[0], ws[0], *infer_window(xs[2:], ws[2:], strides, dilations, lo, hi))
    tx, tw, tr = ty(xs, et), ty(ws, et), ty(rs, et)
    args = f"%x: {tx}, %w: {tw}" + (f", %b: {ty(ws[:1], et)}" if bias else "")
    body = [f'  %nx = "accy.neg"(%x) : ({tx}) -> {tx}'] if prologue else []
    body.append(
        f'  %c = "accy.conv"({"%nx" if prologue else "%x"}, %w) <{{strides = {arr(strides)}, '
        f"dilations = {arr(dilations)}, pads_low = {arr(lo)}, pads_high = {arr(hi)}, groups = {groups} : i64}}> "
        f": ({tx}, {tw}) -> {tr}"
    )
    out = "%c"
    if bias:
        body += [
            f'  %bb = "accy.broadcast"(%b) <{{dims = {arr([1])}}}> : ({ty(ws[:1], et)}) -> {tr}',
            f'  %s = "accy.add"(%c, %bb) : ({tr}, {tr}) -> {tr}',
            f'  %r = "accy.relu"(%s) : ({tr}) -> {tr}',
        ]
        out = "%r"
    return "\n".join([f"func.func @main({args}) -> {tr} {{", *body, f"  func.return {out} : {tr}", "}"])


def pool_src(case: tuple, et: str = "f32", count_include_pad: bool = False) -> str:
    xs, kind, window, strides, dilations, lo, hi = case
    rs = (*xs[:2], *infer_window(xs[2:], window, strides, dilations, lo, hi))
    tx, tr = ty(xs, et), ty(rs, et)
    cip = ", count_include_pad = true" if count_include_pad else ""
    return f"""func.func @main(%x: {tx}) -> {tr} {{
  %p = "accy.pool"(%x) <{{kind = "{kind}", window = {arr(window)}, strides = {arr(strides)}, dilations = {arr(dilations)}, pads_low = {arr(lo)}, pads_high = {arr(hi)}{cip}}}> : ({tx}) -> {tr}
  func.return %p : {tr}
}}"""


def values(rng: np.random.Generator, shape: tuple[int, ...], et: str) -> np.ndarray:
    if et.startswith("i"):  # a third at and just above the type's lowest: the padding must never win a max
        lowest = np.iinfo(DTYPES[et]).min
        near = rng.integers(lowest, lowest + 3, shape, dtype=DTYPES[et])
        return np.where(rng.random(shape) < 0.3, near, rng.integers(-1000, 1000, shape, dtype=DTYPES[et]))
    return rng.standard_normal(shape).astype(DTYPES[et])


def run(src: str, inputs: list[np.ndarray], device, et: str, kernels: int | None = None) -> None:
    """Runs `src` on `device` (no fallback, `kernels` launches if given) and
    compares with the reference: f32 at the suite's tolerance; f16 and bf16
    within a few roundings of their type, relative to the largest result
    (a conv's sums are accumulated in f32 or f16). f16 on a driver without
    cl_khr_fp16 with `fp16 = false` (half storage, f32 compute)."""
    exe = accy.compile(for_float16(src, device)[0] if et == "f16" else src, device=device)
    outs = exe(*inputs)
    assert exe.stats.fallbacks == 0
    if kernels is not None:
        assert exe.stats.kernels == kernels
    (want,) = exe.reference_outputs(inputs)
    (got,) = outs
    if et in ("f16", "bf16"):
        tol = 2**-6 if et == "bf16" else 2**-8
        assert got.dtype == want.dtype and got.shape == want.shape
        assert_matches(got.astype(np.float32), want.astype(np.float32), rtol=tol, atol=tol)
    else:
        assert_matches(got, want)


@pytest.mark.parametrize("name", list(CONVS))
def test_conv(name: str, device) -> None:
    case = CONVS[name]
    rng = np.random.default_rng(len(name))
    run(conv_src(case), [values(rng, case[0], "f32"), values(rng, case[1], "f32")], device, "f32")


@pytest.mark.parametrize("name", ["1d-stride-dilation-groups", "2d-depthwise-multiplier", "2d-packed-groups-batch2",
                                  "2d-kernel-is-padded-input", "3d"])
def test_conv_decomposed(name: str, device) -> None:
    """The decomposition kernelize no longer takes (a conv is its own kind)
    is still a right one: pad, slices, concat and one dot_general."""
    case = CONVS[name]
    module = parse_module(conv_src(case, prologue=True, bias=True))
    PassManager([DecomposePass(ops=("conv",))]).run(module)
    assert "accy.conv" not in str(module)
    rng = np.random.default_rng(3)
    inputs = [values(rng, case[0], "f32"), values(rng, case[1], "f32"), values(rng, case[1][:1], "f32")]
    run(str(module), inputs, device, "f32")


@pytest.mark.parametrize("et", ["f16", "bf16"])
@pytest.mark.parametrize("name", ["1d-stride-dilation-groups", "2d-3x3-batch2", "2d-depthwise", "2d-packed"])
def test_conv_half(name: str, et: str, device) -> None:
    case = CONVS[name]
    rng = np.random.default_rng(len(name))
    run(conv_src(case, et), [values(rng, case[0], et), values(rng, case[1], et)], device, et)


@pytest.mark.parametrize("name", ["2d-3x3-batch2", "2d-depthwise", "2d-packed-groups-batch2", "1d"])
def test_conv_fused(name: str, device) -> None:
    """neg(x) read as a prologue, a bias and relu after the conv."""
    case = CONVS[name]
    rng = np.random.default_rng(7)
    inputs = [values(rng, case[0], "f32"), values(rng, case[1], "f32"), values(rng, case[1][:1], "f32")]
    run(conv_src(case, prologue=True, bias=True), inputs, device, "f32")


#: Each pool case, and each average once more with count_include_pad.
POOL_CASES = [(n, False) for n in POOLS] + [(n, True) for n, case in POOLS.items() if case[1] == "average"]


@pytest.mark.parametrize(("name", "count_include_pad"), POOL_CASES, ids=[f"{n}-{c}" for n, c in POOL_CASES])
def test_pool(name: str, count_include_pad: bool, device) -> None:
    case = POOLS[name]
    rng = np.random.default_rng(len(name))
    run(pool_src(case, count_include_pad=count_include_pad), [values(rng, case[0], "f32")], device, "f32", kernels=1)


@pytest.mark.parametrize("et", ["i32", "i64"])
@pytest.mark.parametrize("name", ["1d-max-pads", "2d-max-resnet", "3d-max"])
def test_pool_integer_max(name: str, et: str, device) -> None:
    """Inputs at and near the type's lowest: the padding (the lowest) never
    wins over an element, and an element equal to it is still the max."""
    case = POOLS[name]
    rng = np.random.default_rng(len(name))
    run(pool_src(case, et), [values(rng, case[0], et)], device, et, kernels=1)


@pytest.mark.parametrize("et", ["f16", "bf16"])
@pytest.mark.parametrize("name", ["2d-max-resnet", "2d-average", "2d-sum"])
def test_pool_half(name: str, et: str, device) -> None:
    case = POOLS[name]
    rng = np.random.default_rng(len(name))
    run(pool_src(case, et), [values(rng, case[0], et)], device, et, kernels=1)


@pytest.mark.parametrize(("kind", "count_include_pad"), [("max", False), ("sum", False), ("average", False),
                                                      ("average", True)])
def test_pool_windows_in_padding(kind: str, count_include_pad: bool, device) -> None:
    """Pads longer than the window: the first and last windows lie wholly in
    the padding (max: -inf; average: NaN without count_include_pad, 0 with;
    sum: 0)."""
    case = ((1, 2, 3), kind, [2], [2], [1], [3], [4])
    run(pool_src(case, count_include_pad=count_include_pad), [values(np.random.default_rng(1), (1, 2, 3), "f32")],
        device, "f32", kernels=1)
