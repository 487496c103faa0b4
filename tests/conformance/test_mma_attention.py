"""Flash attention on tensor cores (issue 23 item 3: both products on
`mma.sync` m16n8k16, the online softmax in f32 registers with quad
shuffles, P as the second product's A fragment) against a float64
reference from the operands as stored: f16 and bf16, causal and not,
Sq != Sk, odd sizes (1, 7, 65, 130), D in {16, 64, 80, 128} and one not a
multiple of 16 (zero-padded), Dv != D, batches, a fused epilogue.

Two targets, as test_mma_dot's: `mma = "emulate"` on the GPU-profile PoCL
device (each matrix instruction and shuffle done by the work-items
through local memory) and `mma = "sm80"` on an OpenCL device whose own
profile has it (NVIDIA's driver; skipped elsewhere). Every case checks
that the kernel is the tensor-core one (its work-group and its source),
that nothing fell back to the host, and the results within the tolerance
of the operands' type: p is rounded to it before the second product (one
relative rounding per product term, 2^-11 for f16 and 2^-8 for bf16), the
output rounded once. Outputs are poisoned (NaN) before each run.

f32 q, k and v under `math = "fast"` take TF32 m16n8k8 in both products
(the tensor core reads 10 of f32's 23 mantissa bits of q, k, p and v:
each product term off by up to about 2^-10 of its size, twice, so the
tolerance is 2e-2, scaled as the 16-bit ones; emulated, the products are
exact f32, and the cases check the fragments' layouts, P's permuted A
fragment and V's B fragment among them); f32 under `exact` keeps the
SIMT kernel (`test_uncovered_attentions_keep_the_simt_kernel`). The f32
cases build with `-cl-fast-relaxed-math` (`fast`'s OpenCL option, finite
math only), as in use: masked scores and the running max start at the
type's lowest finite value under `fast`, not -inf, which that option may
fold away (analyses/attention.py). NaNs are checked for f16 and bf16
only: `fast` allows a NaN or an infinity to give any result
(docs/op-contract.md)."""

from __future__ import annotations

import re
import zlib

import ml_dtypes
import numpy as np
import pytest
from check import ty
from tensor_core_devices import tensor_core_device

import accy

DTYPES = {"f16": np.dtype(np.float16), "bf16": np.dtype(ml_dtypes.bfloat16), "f32": np.dtype(np.float32)}
#: (rtol, atol scaled by the largest expected magnitude) by element type
#: (f32: TF32, module docstring).
TOLERANCE = {"f16": (4e-3, 4e-3), "bf16": (3e-2, 3e-2), "f32": (2e-2, 2e-2)}
#: (batch, Sq, Sk, D, Dv, causal, epilogue, prologue): the epilogue
#: relu(o + r), the prologue k·2 (k is then no buffer: the tiles are
#: staged by plain loads instead of async copies).
SHAPES = [
    ((), 7, 9, 16, 24, True, False, False),
    ((2,), 65, 130, 64, 64, False, True, False),
    ((), 130, 65, 80, 48, True, False, True),
    ((2, 2), 1, 7, 128, 16, False, False, False),
    ((), 65, 65, 64, 64, True, True, True),
    ((3,), 130, 130, 16, 80, False, False, False),
    ((), 7, 1, 24, 8, False, False, False),  # D and Dv past whole mma tiles: zero-padded
    ((), 64, 200, 128, 128, True, False, False),
    ((), 9, 17, 20, 12, False, True, True),  # D and Dv not whole 16-byte chunks: plain loads
    # 256 blocks of 128 rows or more, D and Dv <= 64: two row tiles a warp
    ((256,), 128, 16, 16, 16, False, False, False),
    ((128,), 130, 20, 32, 24, True, True, False),
]
#: The emulated cases a plain run takes (the others are `slow`: PoCL
#: takes many seconds to build each emulated kernel, whose exchanges put
#: barriers in the key loop): causal with Sq < Sk, odd sizes and Dv != D.
#: f32 (TF32): causal with Sq > Sk, D and Dv not whole k8 steps (odd, zero-padded).
QUICK = {("f16", 0), ("bf16", 8), ("f32", 2), ("f32", 8)}


def _cases() -> list:
    cases = []
    for kind in ("emulate", "sm80", "sm90"):  # sm90: a Hopper device's own target, whose attention keeps mma.sync
        for et in DTYPES:
            for i, shape in enumerate(SHAPES):
                batch, sq, sk, d, dv, causal, epilogue, prologue = shape
                flags = "c" * causal + "e" * epilogue + "p" * prologue
                name = f"{kind}-{et}-" + "x".join(map(str, [*batch, sq, sk, d, dv])) + flags
                slow = kind == "emulate" and (et, i) not in QUICK
                cases.append(pytest.param(kind, et, shape, id=name, marks=[pytest.mark.slow] if slow else []))
    return cases


def _target(kind: str, et: str) -> str:
    """The module's target: f32 under `math = "fast"` (TF32)."""
    fast = ', math = "fast"' if et == "f32" else ""
    return f'profile = "gpu", mma = "{kind}", fp16 = false{fast}'


def _program(shape: tuple, et: str, target: str) -> str:
    batch, sq, sk, d, dv, causal, epilogue, prologue = shape
    tq, tk, tv, to = ty([*batch, sq, d], et), ty([*batch, sk, d], et), ty([*batch, sk, dv], et), ty([*batch, sq, dv], et)
    flag = "true" if causal else "false"
    lines = [f"func.func @main(%q: {tq}, %k0: {tk}, %v: {tv}, %r: {to}) -> {to} {{"]
    if prologue:
        lines += [
            f'  %two = "accy.constant"() <{{value = dense<2.0> : {tk}}}> : () -> {tk}',
            f'  %k = "accy.mul"(%k0, %two) : ({tk}, {tk}) -> {tk}',
        ]
    k = "%k" if prologue else "%k0"
    lines.append(
        f'  %o = "accy.attention"(%q, {k}, %v) <{{scale = 0.3 : f32, causal = {flag}}}> : ({tq}, {tk}, {tv}) -> {to}'
    )
    if epilogue:
        lines += [f'  %s = "accy.add"(%o, %r) : ({to}, {to}) -> {to}', f'  %y = "accy.relu"(%s) : ({to}) -> {to}']
    lines += [f"  func.return {'%y' if epilogue else '%o'} : {to}", "}"]
    body = "\n".join(lines)
    return f"builtin.module attributes {{accy.target = #accy.target<{target}>}} {{\n{body}\n}}"


def _reference(
    q: np.ndarray, k: np.ndarray, v: np.ndarray, r: np.ndarray, causal: bool, epilogue: bool, prologue: bool
) -> np.ndarray:
    """In float64 from the operands as stored (k·2 is exact in f16, bf16 and f32)."""
    q64, k64, v64 = (x.astype(np.float64) for x in (q, k, v))
    k64 = 2 * k64 if prologue else k64
    s = 0.3 * np.einsum("...id,...jd->...ij", q64, k64)
    if causal:
        sq, sk = s.shape[-2:]
        s = np.where(np.arange(sk)[None, :] > np.arange(sq)[:, None], -np.inf, s)
    p = np.exp(s - s.max(axis=-1, keepdims=True))
    out = np.einsum("...ij,...jd->...id", p / p.sum(axis=-1, keepdims=True), v64)
    return np.maximum(out + r.astype(np.float64), 0) if epilogue else out


@pytest.mark.parametrize(("kind", "et", "shape"), _cases())
def test_attention_on_tensor_cores(kind: str, et: str, shape, request) -> None:
    device = tensor_core_device(kind)
    batch, sq, sk, d, dv, causal, epilogue, prologue = shape
    target = _target(kind, et)
    rng = np.random.default_rng(zlib.crc32(request.node.name.encode()))
    arrays = [rng.standard_normal(s) for s in ([*batch, sq, d], [*batch, sk, d], [*batch, sk, dv], [*batch, sq, dv])]
    inputs = [x.astype(DTYPES[et]) for x in arrays]
    exe = accy.compile(_program(shape, et, target), device=device)
    (got,) = exe(*inputs)
    assert exe.stats.fallbacks == 0
    assert ("-cl-fast-relaxed-math" in exe.program.build_options) == (et == "f32")
    source = exe.program.source
    assert "reqd_work_group_size(32, 4, 1)" in source  # the tensor-core kernel, not the SIMT one
    # Blocks of 128 query rows (two row tiles a warp) where D and Dv are at
    # most 64 and there are 256 such blocks, else 64 (mma_attention.plan).
    two = max(-(-d // 16), -(-dv // 16)) <= 4 and -(-sq // 128) * int(np.prod(batch)) >= 256
    # Causal blocks run in reverse (the last queries', the longest, first).
    bq = 128 if two else 64
    reverse = rf"\s*long (v\d+) = {-(-sq // bq) - 1} - \1;\n" if causal else ""
    origin = re.search(rf"long (v\d+) = get_group_id\(0\);\n{reverse}\s*long v\d+ = \{1 + causal} \* (\d+);", source)
    assert origin is not None and int(origin.group(2 + causal)) == bq
    if kind != "emulate" and et == "f32":  # TF32: fragments by plain local loads
        assert "mma.sync.aligned.m16n8k8" in source and ".tf32" in source and "shfl.sync.bfly.b32" in source
        assert "m16n8k16" not in source and "ldmatrix" not in source
    elif kind != "emulate":
        assert "mma.sync.aligned.m16n8k16" in source and "shfl.sync.bfly.b32" in source
        assert "ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16" in source
    else:  # emulated: the exchange and the shuffles through local memory, no inline PTX
        assert "asm volatile" not in source and "barrier(" in source
    # k and v buffers of whole 16-byte chunks along D and Dv are staged by
    # async copies: cp.async, or emulated plain copies with a zero fill.
    chunk = 4 if et == "f32" else 8  # elements of 16 bytes
    copies = not prologue and d % chunk == 0 and dv % chunk == 0
    zeros = ": (float4)(0);" if et == "f32" else ": (ushort8)(0);"
    assert ("cp.async.cg" in source if kind != "emulate" else zeros in source) == copies
    assert got.dtype == DTYPES[et] and got.shape == (*batch, sq, dv)
    want = _reference(*inputs, causal, epilogue, prologue)
    rtol, atol = TOLERANCE[et]
    scale = max(1.0, float(np.abs(want).max(initial=0)))
    np.testing.assert_allclose(got.astype(np.float64), want, rtol=rtol, atol=atol * scale)



@pytest.mark.parametrize("kind", ["emulate", "sm80"])
@pytest.mark.parametrize("et", ["f16", "bf16"])
def test_nans_reach_the_rows_they_reach_in_the_reference(kind: str, et: str) -> None:
    """The row max is fmax (NaN-dropping) and p = exp2(x·log2 e): a NaN
    score must still make its row's outputs NaN, through p and the row's
    sum, as the reference's NaN max does. q's row 2 NaN (every score of the
    row), k's key 4 NaN (the rows that see it: causal, rows 4 on), v's key
    1 NaN in column 1 (that column of the rows from 1 on), and nothing else."""
    device = tensor_core_device(kind)
    shape = ((), 7, 9, 16, 24, True, False, False)
    rng = np.random.default_rng(23)
    q, k, v, r = (rng.standard_normal(s).astype(DTYPES[et]) for s in ([7, 16], [9, 16], [9, 24], [7, 24]))
    q[2, 3], k[4, 0], v[1, 1] = np.nan, np.nan, np.nan
    exe = accy.compile(_program(shape, et, f'profile = "gpu", mma = "{kind}", fp16 = false'), device=device)
    (got,) = exe(q, k, v, r)
    assert exe.stats.fallbacks == 0 and "reqd_work_group_size(32, 4, 1)" in exe.program.source
    want = _reference(q, k, v, r, True, False, False)
    nan_rows = {2, 4, 5, 6}
    assert [i for i in range(7) if np.isnan(want[i]).all()] == sorted(nan_rows)
    assert np.isnan(want[1:, 1]).all() and not np.isnan(np.delete(want[[0, 1, 3]], 1, axis=1)).any()
    rtol, atol = TOLERANCE[et]
    np.testing.assert_allclose(got.astype(np.float64), want, rtol=rtol, atol=atol * max(1.0, float(np.nanmax(np.abs(want)))))

def test_uncovered_attentions_keep_the_simt_kernel() -> None:
    """f32 under `math = "exact"` and D past 256 take the SIMT kernel, and
    `unsupported` says why; a f16 one and a f32 one under `fast` (TF32)
    take the tensor cores."""
    from accy.passes.kernelization import mma_attention
    from accy.passes.registry import DevicePipeline

    reasons: list[str] = []
    real = mma_attention.unsupported

    def spy(fa):
        reasons.append(str(real(fa)))
        return real(fa)

    exact, fast = 'profile = "gpu", mma = "emulate", fp16 = false', _target("emulate", "f32")
    cases = [
        ("f32", 16, exact, "not f16 or bf16"),
        ("f32", 272, fast, "above 256"),
        ("f16", 272, exact, "above 256"),
        ("f16", 32, exact, "None"),
        ("f32", 32, fast, "None"),
    ]
    for et, d, target, reason in cases:
        reasons.clear()
        src = _program(((), 5, 6, d, 16, False, False, False), et, target)
        mma_attention.unsupported = spy
        try:
            module = accy.parse_module(src)
            accy.PassManager(DevicePipeline().passes()).run(module)
        finally:
            mma_attention.unsupported = real
        assert reasons and reason in reasons[0], (et, d, reasons)
