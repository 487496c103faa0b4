"""f16 and bf16 tensors as kernels (issue 23's half storage): stored in 16
bits, computed in f32 (compute-half-in-f32) for bf16 and for f16 on a
target with `fp16 = false`, rounded to nearest even on store; f16 computed
in half where the target has it (LLVM; an OpenCL driver with cl_khr_fp16).

Every elementwise op, compares and selects, reductions, scans, a dot,
softmax, layer norm and casts, at odd sizes, on every device (PoCL under
both profiles, LLVM): no work item falls back to the host, every result is
within one bf16 rounding of the reference (which computes bf16 in f32
too), and within the op contract's bf16 tolerance of the same program in
f32."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from check import arr, ty

import accy
from accy.runtime.executable import TOLERANCES

BF16 = np.dtype(ml_dtypes.bfloat16)
UNARY = ["neg", "abs", "exp", "log", "sqrt", "rsqrt", "tanh", "sigmoid", "relu", "gelu", "sin", "cos", "erf",
         "reciprocal", "floor", "ceil"]  # fmt: skip
BINARY = ["add", "sub", "mul", "div", "max", "min", "pow"]
SIZES = [1, 3, 17, 1023]


def _program(n: int, et: str) -> str:
    t, m, c = ty([n], et), ty([n], "i1"), ty([3, n], et)
    lines = [f"func.func @main(%a: {t}, %b: {t}, %p: {t}, %x: {c}, %y: {ty([n, 5], et)}, %f: {ty([n])}) -> ("]
    outs: list[tuple[str, str]] = []
    body: list[str] = []
    for op in UNARY:
        arg = "%p" if op in ("log", "sqrt", "rsqrt") else "%a"
        body.append(f'  %{op} = "accy.{op}"({arg}) : ({t}) -> {t}')
        outs.append((f"%{op}", t))
    for op in BINARY:
        lhs = "%p" if op == "pow" else "%a"
        body.append(f'  %{op} = "accy.{op}"({lhs}, %b) : ({t}, {t}) -> {t}')
        outs.append((f"%{op}", t))
    body += [
        f'  %lt = "accy.cmp"(%a, %b) <{{predicate = "lt"}}> : ({t}, {t}) -> {m}',
        f'  %sel = "accy.select"(%lt, %a, %b) : ({m}, {t}, {t}) -> {t}',
        f'  %sum = "accy.reduce"(%x) <{{kind = "sum", axes = {arr([1])}}}> : ({c}) -> {ty([3], et)}',
        f'  %mx = "accy.reduce"(%x) <{{kind = "max", axes = {arr([0])}}}> : ({c}) -> {t}',
        f'  %mean = "accy.reduce"(%x) <{{kind = "mean", axes = {arr([1])}}}> : ({c}) -> {ty([3], et)}',
        f'  %cs = "accy.scan"(%x) <{{kind = "sum", axis = 1 : i64}}> : ({c}) -> {c}',
        f'  %dot = "accy.dot_general"(%x, %y) <{{lhs_batch = {arr([])}, rhs_batch = {arr([])}, '
        f"lhs_contract = {arr([1])}, rhs_contract = {arr([0])}}}> : ({c}, {ty([n, 5], et)}) -> {ty([3, 5], et)}",
        f'  %sm = "accy.softmax"(%x) <{{axis = 1 : i64}}> : ({c}) -> {c}',
        f'  %g = "accy.constant"() <{{value = dense<1.5> : {t}}}> : () -> {t}',
        f'  %ln = "accy.layer_norm"(%x, %g, %b) <{{epsilon = 1.0e-05 : f32}}> : ({c}, {t}, {t}) -> {c}',
        f'  %down = "accy.cast"(%f) : ({ty([n])}) -> {t}',
        f'  %up = "accy.cast"(%a) : ({t}) -> {ty([n])}',
        f'  %toi = "accy.cast"(%a) : ({t}) -> {ty([n], "i32")}',
    ]
    outs += [("%lt", m), ("%sel", t), ("%sum", ty([3], et)), ("%mx", t), ("%mean", ty([3], et)), ("%cs", c),
             ("%dot", ty([3, 5], et)), ("%sm", c), ("%ln", c), ("%down", t), ("%up", ty([n])),
             ("%toi", ty([n], "i32"))]  # fmt: skip
    lines[0] += ", ".join(t for _, t in outs) + ") {"
    return "\n".join([*lines, *body, f"  func.return {', '.join(v for v, _ in outs)} : {', '.join(t for _, t in outs)}", "}"])


def _inputs(n: int, rng: np.random.Generator) -> list[np.ndarray]:
    a, b = rng.standard_normal(n), rng.standard_normal(n)
    p = np.abs(rng.standard_normal(n)) + 0.1
    return [a.astype(BF16), b.astype(BF16), p.astype(BF16), rng.standard_normal((3, n)).astype(BF16),
            rng.standard_normal((n, 5)).astype(BF16), (rng.standard_normal(n) * 100).astype(np.float32)]  # fmt: skip


def _close(got: np.ndarray, want: np.ndarray, rtol: float, atol: float) -> None:
    if want.dtype.kind in "biu":
        np.testing.assert_array_equal(got, want)
        return
    g, w = got.astype(np.float64), want.astype(np.float64)
    scaled = atol * max(1.0, float(np.abs(w[np.isfinite(w)]).max(initial=0)))
    np.testing.assert_allclose(g, w, rtol=rtol, atol=scaled)


#: element type -> (numpy dtype, the module's target attribute or None: f16
#: with `fp16 = false`, and f16 as the device says (half arithmetic where it
#: has it; on PoCL, which lacks cl_khr_fp16, that is fp16 = false too).
CASES = {"bf16": ("bf16", None), "f16": ("f16", None), "f16-fp16-false": ("f16", "fp16 = false")}


def _for_device(src: str, target: str | None, device) -> str:
    cl_device = getattr(device, "cl_device", None)
    if target is None and cl_device is not None and "cl_khr_fp16" not in cl_device.extensions.split():
        target = "fp16 = false"
    if target is None:
        return src
    return f"builtin.module attributes {{accy.target = #accy.target<{target}>}} {{\n{src}\n}}"


@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("n", SIZES)
def test_half_ops_run_as_kernels(case: str, n: int, device) -> None:
    et, target = CASES[case]
    dtype = BF16 if et == "bf16" else np.dtype(np.float16)
    rng = np.random.default_rng(n)
    src = _for_device(_program(n, et), target, device)
    inputs = [x.astype(dtype) if x.dtype == BF16 else x for x in _inputs(n, rng)]
    exe = accy.compile(src, device=device)
    outs = exe(*inputs)
    assert exe.stats.fallbacks == 0
    # Within one bf16 rounding of the reference (f32 math may differ by an
    # f32 ulp, which can move a bf16 rounding by one step).
    for got, want in zip(outs, exe.reference_outputs(inputs), strict=True):
        assert got.dtype == want.dtype and got.shape == want.shape
        _close(got, want, rtol=2**-7, atol=2**-7)
    # Within the op contract's bf16 tolerance of the program in f32.
    wide = accy.compile(_program(n, "f32"), device="reference")
    f32_inputs = [x.astype(np.float32) for x in inputs]
    rtol, atol = TOLERANCES[dtype]
    for got, want in zip(outs, wide(*f32_inputs), strict=True):
        _close(got.astype(np.float32) if got.dtype == dtype else got, want, rtol, atol)


def test_bf16_rounding_on_store_is_bit_exact(device) -> None:
    """f32 -> bf16 on the device: ties to even, just above and below a tie,
    infinities, overflow to inf, NaN kept a NaN, subnormals; and back exactly."""
    upper = np.arange(0, 0x7F80, 97, dtype=np.uint32)
    low = np.array([0x8000, 0x7FFF, 0x8001, 0x0000, 0xFFFF], np.uint32)
    bits = (upper[:, None] << 16 | low[None, :]).reshape(-1)
    bits = np.concatenate([bits, bits | 0x80000000, [0x7F800000, 0xFF800000, 0x7FC00000, 0x7F7FFFFF, 0x00000001]])
    x = bits.astype(np.uint32).view(np.float32)
    n = x.size
    src = f"""func.func @main(%x: {ty([n])}) -> ({ty([n], "bf16")}, {ty([n])}) {{
  %b = "accy.cast"(%x) : ({ty([n])}) -> {ty([n], "bf16")}
  %f = "accy.cast"(%b) : ({ty([n], "bf16")}) -> {ty([n])}
  func.return %b, %f : {ty([n], "bf16")}, {ty([n])}
}}"""
    exe = accy.compile(src, device=device)
    b, f = exe(x)
    assert exe.stats.fallbacks == 0
    want = x.astype(BF16)
    nan = np.isnan(x)
    np.testing.assert_array_equal(b.view(np.uint16)[~nan], want.view(np.uint16)[~nan])
    assert np.isnan(f[nan]).all()
    np.testing.assert_array_equal(f[~nan], want.astype(np.float32)[~nan])


def test_bf16_literals_reach_kernels_bit_exact(device) -> None:
    """A bf16 literal of inf, NaN, subnormals and -0 stored by a kernel (a
    select between it and the input, so the literal is in the kernel)."""
    hexes = [0x7F80, 0xFF80, 0x7FC0, 0x0001, 0x8001, 0x007F, 0x8000, 0x3F80, 0x7F7F]
    n = len(hexes)
    t, m = ty([n], "bf16"), ty([n], "i1")
    lit = ", ".join(f"0x{h:04X}" for h in hexes)
    src = f"""func.func @main(%a: {t}, %m: {m}) -> {t} {{
  %c = "accy.constant"() <{{value = dense<[{lit}]> : {t}}}> : () -> {t}
  %s = "accy.select"(%m, %c, %a) : ({m}, {t}, {t}) -> {t}
  func.return %s : {t}
}}"""
    a = np.full(n, 2.0, BF16)
    exe = accy.compile(src, device=device)
    (got,) = exe(a, np.ones(n, np.bool_))
    assert exe.stats.fallbacks == 0
    assert got.view(np.uint16).tolist() == hexes
