"""Dots on tensor-core tiles (issue 23: `mma.sync` for f16 and bf16, TF32
under `math = fast`) against the reference, at sizes that are not
multiples of the mma tiles or of the staged blocks, K = 1, batches,
transposed operands and a fused epilogue.

Two targets: `mma = "emulate"` on the GPU-profile PoCL device (the same
kernel, each matrix instruction done by the warp's work-items through
local memory: the tiling, staging, fragment placement and epilogue are
tested where no tensor core is), and `mma = "sm80"` on an OpenCL device
whose own profile has it (NVIDIA's driver: the real `mma.sync`; skipped
elsewhere). Every case checks that the kernel is the tensor-core one
(its source), that nothing fell back to the host, and the results within
the tolerance of the operands' type: f16/bf16 results are rounded once
from f32 sums (one rounding of the reference, up to the summation order);
TF32 truncates each operand to 10 mantissa bits (relative error up to
2^-10 per product)."""

from __future__ import annotations

import re
import zlib

import ml_dtypes
import numpy as np
import pytest
from check import arr, ty
from tensor_core_devices import tensor_core_device

import accy
from accy.passes.kernelization import mma_tiles

DTYPES = {"f16": np.dtype(np.float16), "bf16": np.dtype(ml_dtypes.bfloat16), "f32": np.dtype(np.float32)}
#: (rtol, atol scaled by the largest expected magnitude) by element type and mma kind.
TOLERANCE = {("f16", "sm80"): (2e-3, 2e-3), ("bf16", "sm80"): (1.6e-2, 1.6e-2), ("f32", "sm80"): (4e-3, 4e-3)}
#: (batch, M, N, K, lhs transposed, rhs transposed)
SHAPES = [
    ((), 37, 45, 29, False, False),
    ((), 1, 1, 1, False, False),
    ((), 5, 9, 1, False, False),
    ((), 130, 150, 70, False, False),
    ((3,), 20, 17, 33, False, False),
    ((), 33, 19, 40, True, False),
    ((), 18, 70, 21, False, True),
    ((2,), 16, 8, 16, True, True),
    ((2,), 37, 48, 40, False, False),  # K and N whole 16-byte vectors: staged by async copies
    ((), 136, 264, 72, False, False),  # so, over several blocks along m and n and k steps, all partial
    ((), 70, 264, 200, False, False),  # so, more k steps than the deepest pipeline has stages
    ((), 300, 520, 264, False, False),  # so, 3 x 3 blocks of the warpgroup tiles (128 x 256), 5 k steps of 64
    ((2,), 19, 33, 48, False, True),  # K whole vectors, the rhs contracted along its last dim: staged k-contiguous as it is
    ((), 21, 45, 64, False, False),  # K whole vectors, N not: on sm90 the rhs packed k-contiguous
]
#: The emulated cases a plain run takes, by element type (the others are
#: `slow`: PoCL takes 10-30 s to build each emulated kernel, whose exchange
#: puts barriers in the k loop): between them odd M, N and K, k past one
#: staged step, a batch, transposed operands, and async-copy staging.
QUICK = {("f16", 5), ("f16", 8), ("bf16", 4), ("bf16", 9), ("f32", 8)}
#: The cases of the deeper-pipelined tiles, emulated where static local
#: memory is plenty (`emulating_deep`): the shapes staged by async copies.
DEEP = {8, 9, 10}
QUICK_DEEP = {("f16", 10), ("f32", 10)}
#: The emulated warpgroup tiles' quick cases: TF32's, batched, its rhs
#: packed k-contiguous and staged as it is (a few seconds each; the 16-bit
#: ones take PoCL 1.5 minutes or more: every work-item sums its own
#: products); the slow ones have several blocks, k steps past the
#: pipeline's depth, f16 and bf16.
QUICK_SM90 = {("f32", 8), ("f32", 12)}


def _cases() -> list:
    cases = []
    for kind in ("emulate", "emulate-deep", "emulate-sm90", "sm80", "sm90"):
        for et in ("f16", "bf16", "f32"):
            for i, shape in enumerate(SHAPES):
                if kind == "emulate-deep" and i not in DEEP:
                    continue
                name = f"{kind}-{et}-" + "x".join(map(str, [*shape[0], *shape[1:4]])) + "t" * (shape[4] + shape[5])
                slow = (
                    (kind == "emulate" and (et, i) not in QUICK)
                    or (kind == "emulate-deep" and (et, i) not in QUICK_DEEP)
                    or (kind == "emulate-sm90" and (et, i) not in QUICK_SM90)
                )
                cases.append(pytest.param(kind, et, shape, id=name, marks=[pytest.mark.slow] if slow else []))
    return cases


def _program(batch: tuple[int, ...], m: int, n: int, k: int, ta: bool, tb: bool, et: str, target: str) -> str:
    nb = len(batch)
    a_shape = [*batch, k, m] if ta else [*batch, m, k]
    b_shape = [*batch, n, k] if tb else [*batch, k, n]
    out = ty([*batch, m, n], et)
    dims = (
        f"lhs_batch = {arr(range(nb))}, rhs_batch = {arr(range(nb))}, "
        f"lhs_contract = {arr([nb if ta else nb + 1])}, rhs_contract = {arr([nb + 1 if tb else nb])}"
    )
    return f"""builtin.module attributes {{accy.target = #accy.target<{target}>}} {{
func.func @main(%a: {ty(a_shape, et)}, %b: {ty(b_shape, et)}, %r: {out}) -> {out} {{
  %d = "accy.dot_general"(%a, %b) <{{{dims}}}> : ({ty(a_shape, et)}, {ty(b_shape, et)}) -> {out}
  %s = "accy.add"(%d, %r) : ({out}, {out}) -> {out}
  %y = "accy.relu"(%s) : ({out}) -> {out}
  func.return %y : {out}
}}
}}"""


@pytest.mark.parametrize(("kind", "et", "shape"), _cases())
def test_dot_on_tensor_cores(kind: str, et: str, shape, request) -> None:
    device = tensor_core_device(kind)
    batch, m, n, k, ta, tb = shape
    math = "fast" if et == "f32" else "exact"
    mma = {"emulate-deep": "emulate"}.get(kind, kind)
    target = f'profile = "gpu", mma = "{mma}", math = "{math}", fp16 = false'
    rng = np.random.default_rng(zlib.crc32(request.node.name.encode()))
    a = rng.standard_normal([*batch, k, m] if ta else [*batch, m, k])
    b = rng.standard_normal([*batch, n, k] if tb else [*batch, k, n])
    r = rng.standard_normal([*batch, m, n])
    inputs = [x.astype(DTYPES[et]) for x in (a, b, r)]
    exe = accy.compile(_program(batch, m, n, k, ta, tb, et, target), device=device)
    (got,) = exe(*inputs)
    assert exe.stats.fallbacks == 0
    lanes = 16 // DTYPES[et].itemsize
    copies = not ta and not tb and k % lanes == 0 and n % lanes == 0
    # sm90: 16-bit operands staged by copies take the warpgroup tiles
    # (wgmma), as do those whose lhs alone is (the rhs staged k-contiguous:
    # as it is where transposed, else packed so first), and TF32 where the
    # lhs is staged; the rest mma.sync.
    sm90 = kind in ("sm90", "emulate-sm90")
    tf32_wgmma = sm90 and et == "f32" and not ta and k % lanes == 0
    k_major = sm90 and et != "f32" and not copies and not ta and k % lanes == 0
    wgmma = (sm90 and et != "f32" and copies) or tf32_wgmma or k_major
    warps = 4 if et == "f32" and not wgmma else 8  # mma_tiles.CONFIGS: TF32 2 x 2 warps, 16-bit 2 x 4; wgmma_tiles: 8
    assert f"reqd_work_group_size(32, {warps}, 1)" in exe.program.source  # the tensor-core tiles, not the SIMT ones
    if kind == "emulate-deep":  # the first configuration: its staged lhs tile holds more stages of wider blocks
        deep, width = mma_tiles.CONFIGS[DTYPES[et].itemsize][0], DTYPES[et].itemsize
        rows = deep.stages * deep.layout.bm * (deep.step_bytes + mma_tiles.PAD_BYTES) // width
        assert re.search(rf"__local \w+ l0\[{rows}\]", exe.program.source), "not the deep configuration"
    shape_name = "m16n8k8" if et == "f32" else "m16n8k16"
    if wgmma and kind == "emulate-sm90":  # each work-item's sums from the swizzled tiles
        assert "accy_wgmma_dot_" in exe.program.source and "asm volatile" not in exe.program.source
    elif wgmma:
        assert f"wgmma.mma_async.sync.aligned.m64n256k{8 if et == 'f32' else 16}" in exe.program.source
        assert "mma.sync" not in exe.program.source
    elif kind in ("sm80", "sm90"):
        assert f"mma.sync.aligned.{shape_name}" in exe.program.source and "wgmma" not in exe.program.source
    else:  # the emulated kernel: the tensor-core tiles' exchange, no inline PTX
        assert "asm volatile" not in exe.program.source and "barrier(" in exe.program.source
    vector = f"{'float' if et == 'f32' else 'ushort'}{lanes}"
    # Operands of whole 16-byte vectors along k (lhs) and n (rhs) are staged
    # by async copies: cp.async, or emulated plain copies with a zero fill.
    copied = "cp.async.cg" in exe.program.source if kind in ("sm80", "sm90") else f": ({vector})(0);" in exe.program.source
    assert copied == (copies or tf32_wgmma or k_major)
    assert ("dot_general_pack_b(" in exe.program.source) == ((tf32_wgmma or k_major) and not tb)
    (want,) = exe.reference_outputs(inputs)
    assert got.dtype == want.dtype and got.shape == want.shape
    # In float64 from the operands as stored: the tensor-core sums are f32.
    exact = np.maximum(
        np.einsum("...ij,...jk->...ik", *_as_products(inputs[0], inputs[1], ta, tb)) + inputs[2].astype(np.float64), 0
    )
    rtol, atol = TOLERANCE.get((et, "sm80" if kind.endswith("sm90") else kind), TOLERANCE[(et, "sm80")] if et != "f32" else (1e-5, 1e-5))
    scale = max(1.0, float(np.abs(exact).max(initial=0)))
    np.testing.assert_allclose(got.astype(np.float64), exact, rtol=rtol, atol=atol * scale)


def _as_products(a: np.ndarray, b: np.ndarray, ta: bool, tb: bool) -> tuple[np.ndarray, np.ndarray]:
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    return (np.swapaxes(a64, -1, -2) if ta else a64), (np.swapaxes(b64, -1, -2) if tb else b64)


#: TF32 products whose rhs the warpgroup tiles' first launch packs [b][n][k]
#: while evaluating what is fused into it: a prologue (tanh) on the rhs, and
#: the rhs's batch dim between its contracting and free dims.
PACKED_RHS = {
    "prologue": ("tensor<19x44xf32>", "tensor<44x29xf32>", "tensor<19x29xf32>", "array<i64>", "array<i64>", 1, 0, True),
    "batch-in-the-middle": (
        "tensor<3x21x28xf32>", "tensor<28x3x35xf32>", "tensor<3x21x35xf32>", "array<i64: 0>", "array<i64: 1>", 2, 0, False,
    ),
}


@pytest.mark.parametrize("case", sorted(PACKED_RHS))
def test_tf32_warpgroup_tiles_pack_any_rhs(case: str) -> None:
    a, b, out, lb, rb, lc, rc, prologue = PACKED_RHS[case]
    rhs = "%e" if prologue else "%b"
    tanh = f'  %e = "accy.tanh"(%b) : ({b}) -> {b}\n' if prologue else ""
    program = f"""builtin.module attributes {{accy.target = #accy.target<profile = "gpu", mma = "emulate-sm90", math = "fast", fp16 = false>}} {{
func.func @main(%a: {a}, %b: {b}) -> {out} {{
{tanh}  %d = "accy.dot_general"(%a, {rhs}) <{{lhs_batch = {lb}, rhs_batch = {rb}, lhs_contract = array<i64: {lc}>, rhs_contract = array<i64: {rc}>}}> : ({a}, {b}) -> {out}
  func.return %d : {out}
}}
}}"""
    exe = accy.compile(program, device=tensor_core_device("emulate-sm90"), strict=True)
    assert "dot_general_pack_b(" in exe.program.source and "accy_wgmma_dot_tf32" in exe.program.source
    rng = np.random.default_rng(zlib.crc32(case.encode()))
    inputs = exe.random_inputs(int(rng.integers(1 << 30)))
    (got,), (want,) = exe(*inputs), exe.reference_outputs(inputs)
    scale = max(1.0, float(np.abs(want).max()))
    np.testing.assert_allclose(got, want, rtol=4e-3, atol=4e-3 * scale)
