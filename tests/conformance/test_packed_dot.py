"""The CPU profile's packed dot (accy/passes/kernelization/dot.py): products
large enough to be packed, drawn to hit what the packing and the register
tiles could confuse: M, N and K that are not multiples of the tile (rows past
M, a partial last vector, a whole vector past N), N exactly whole tiles,
transposed operands (the rhs gathered column by column), batch dims, several
contracting and several free dims (the epilogue vectorised over the last free
dim or lane by lane), an lhs prologue and a bias/activation/residual
epilogue, float64. Each runs as three launches (pack, pack, tiles) on the
CPU profile, against the reference, with poisoned buffers; the GPU profile
and the LLVM device run them too."""

from __future__ import annotations

import numpy as np
import pytest
from check import arr, assert_matches, ty
from xdsl.dialects.builtin import f32

import accy
from accy.dialects.accy import infer_dot_general
from accy.passes.kernelization.register_tiles import PACK_MIN_WORK, tile_shape

CASES = {
    # name: (lhs shape, rhs shape, lhs_batch, rhs_batch, lhs_contract, rhs_contract)
    "odd_n": ((97, 61), (61, 67), [], [], [1], [0]),
    "vector_past_n": ((100, 70), (70, 80), [], [], [1], [0]),
    "whole_tiles": ((96, 64), (64, 64), [], [], [1], [0]),
    "rhs_transposed": ((97, 65), (48, 65), [], [], [1], [1]),
    "lhs_transposed": ((65, 97), (65, 48), [], [], [0], [0]),
    "batch": ((3, 53, 70), (3, 70, 80), [0], [0], [2], [1]),
    "batch_last": ((53, 70, 2), (70, 80, 2), [2], [2], [1], [0]),
    "two_contract_two_free": ((20, 5, 8, 9), (8, 9, 6, 16), [], [], [2, 3], [0, 1]),
    "last_free_dim_short": ((20, 5, 8, 9), (8, 9, 16, 6), [], [], [2, 3], [0, 1]),
}


def rand(rng: np.random.Generator, shape: tuple[int, ...], dtype: str) -> np.ndarray:
    return rng.standard_normal(shape).astype(dtype)


def program(case: str, et: str) -> tuple[str, list[tuple[int, ...]], int]:
    """@main(a, b, bias, residual) = gelu(dot(-a, b) + bias) + residual, and
    the input shapes and the product's multiply-adds per batch."""
    a_shape, b_shape, lb, rb, lc, rc = CASES[case]
    out = list(infer_dot_general(a_shape, b_shape, lb, rb, lc, rc))
    macs = int(np.prod([d for i, d in enumerate(a_shape) if i not in lb]) * np.prod([d for i, d in enumerate(b_shape) if i not in (*rb, *rc)]))
    props = f"lhs_batch = {arr(lb)}, rhs_batch = {arr(rb)}, lhs_contract = {arr(lc)}, rhs_contract = {arr(rc)}"
    ta, tb, to, tc = ty(a_shape, et), ty(b_shape, et), ty(out, et), ty(out[-1:], et)
    src = f"""func.func @main(%a: {ta}, %b: {tb}, %c: {tc}, %r: {to}) -> {to} {{
  %an = "accy.neg"(%a) : ({ta}) -> {ta}
  %d = "accy.dot_general"(%an, %b) <{{{props}}}> : ({ta}, {tb}) -> {to}
  %cb = "accy.broadcast"(%c) <{{dims = {arr([len(out) - 1])}}}> : ({tc}) -> {to}
  %s = "accy.add"(%d, %cb) : ({to}, {to}) -> {to}
  %g = "accy.gelu"(%s) : ({to}) -> {to}
  %y = "accy.add"(%g, %r) : ({to}, {to}) -> {to}
  func.return %y : {to}
}}"""
    return src, [tuple(a_shape), tuple(b_shape), tuple(out[-1:]), tuple(out)], macs


@pytest.mark.parametrize("case", sorted(CASES))
def test_packed_dot_matches_reference(case: str, device) -> None:
    src, shapes, macs = program(case, "f32")
    assert macs >= PACK_MIN_WORK, "the case must be large enough to be packed"
    exe = accy.compile(src, device=device)
    for seed in (0, 1):
        rng = np.random.default_rng(seed)
        inputs = [rand(rng, s, "float32") for s in shapes]
        (got,) = exe(*inputs)
        assert exe.stats.fallbacks == 0
        if device.target_profile().profile == "cpu":
            assert exe.stats.kernels == 3  # both packs and the tiles
        assert_matches(got, exe.reference_outputs(inputs)[0], rtol=1e-3, atol=1e-4)


@pytest.mark.parametrize("case", ["odd_n", "rhs_transposed"])
def test_packed_dot_float64(case: str, device) -> None:
    if not device.target_profile().fp64:
        pytest.skip("the device has no float64")
    src, shapes, _ = program(case, "f64")
    exe = accy.compile(src, device=device)
    rng = np.random.default_rng(5)
    inputs = [rand(rng, s, "float64") for s in shapes]
    (got,) = exe(*inputs)
    assert exe.stats.fallbacks == 0
    np.testing.assert_allclose(got, exe.reference_outputs(inputs)[0], rtol=1e-9, atol=1e-9)


def test_small_products_are_not_packed(device) -> None:
    """Below PACK_MIN_WORK (and for a single tile of rows) the dot packs
    nothing (on the GPU profile, a long k may still split into two launches).
    The tile's rows are the device's (`tile_shape`: 12 with AVX-512's 32
    vector registers, 6 with AVX2's 16)."""
    rows, _ = tile_shape(device.target_profile(), f32, 10**6)
    for a_shape, b_shape in (((13, 16), (16, 32)), ((rows, 300), (300, 300))):
        src = f"""func.func @main(%a: {ty(a_shape)}, %b: {ty(b_shape)}) -> {ty([a_shape[0], b_shape[1]])} {{
  %d = "accy.dot_general"(%a, %b) <{{lhs_batch = {arr([])}, rhs_batch = {arr([])}, lhs_contract = {arr([1])}, rhs_contract = {arr([0])}}}> : ({ty(a_shape)}, {ty(b_shape)}) -> {ty([a_shape[0], b_shape[1]])}
  func.return %d : {ty([a_shape[0], b_shape[1]])}
}}"""
        exe = accy.compile(src, device=device)
        rng = np.random.default_rng(3)
        inputs = [rand(rng, a_shape, "float32"), rand(rng, b_shape, "float32")]
        (got,) = exe(*inputs, profile=True)
        assert not any("pack" in p.name for p in exe.stats.profile) and exe.stats.kernels in (1, 2)
        assert_matches(got, exe.reference_outputs(inputs)[0], rtol=1e-3, atol=1e-4)


def test_many_batches_take_the_full_gpu_register_tile(device) -> None:
    """256 batches make 256 work-groups at the GPU profile's 8x8 register
    tiles (128x128 blocks), so no tile halving: odd M, N, K below one block
    exercise every guard of the full tile (on the CPU profile and the LLVM
    device, the register tile kernel)."""
    from accy.passes.kernelization.register_tiles import GPU_LHS_PAD, GPU_MIN_BLOCKS, gpu_ownership_run

    b, m, n, k = GPU_MIN_BLOCKS, 67, 45, 33
    ta, tb, to = ty([b, m, k]), ty([b, k, n]), ty([b, m, n])
    src = f"""func.func @main(%a: {ta}, %b: {tb}) -> {to} {{
  %d = "accy.dot_general"(%a, %b) <{{lhs_batch = {arr([0])}, rhs_batch = {arr([0])}, lhs_contract = {arr([2])}, rhs_contract = {arr([1])}}}> : ({ta}, {tb}) -> {to}
  %t = "accy.tanh"(%d) : ({to}) -> {to}
  func.return %t : {to}
}}"""
    exe = accy.compile(src, device=device)
    rng = np.random.default_rng(11)
    inputs = [rand(rng, (b, m, k), "float32"), rand(rng, (b, k, n), "float32")]
    (got,) = exe(*inputs)
    assert exe.stats.kernels == 1 and exe.stats.fallbacks == 0
    assert_matches(got, exe.reference_outputs(inputs)[0], rtol=1e-3, atol=1e-4)
    if device.target_profile().profile == "gpu":
        # 4 k x 128 rows (padded, the lhs): the full tile, 16-byte aligned where read in runs of 4 (`gpu_ownership_run`)
        aligned = " __attribute__((aligned(16)))" if gpu_ownership_run(8, f32) == 4 else ""
        assert f"__local float l0[{4 * (128 + GPU_LHS_PAD)}]{aligned};" in exe.program.source


@pytest.mark.parametrize("tile", [8, 4, 2])
def test_gpu_register_tiles_of_every_size(tile: int, device) -> None:
    """Batches enough for GPU register tiles of 8, 4 and 2, with M and N
    ragged against the 16·tile blocks, the rhs transposed. Tiles halve down
    to GPU_MIN_TILE; a smaller one is the module's `dot_rows`."""
    from accy.passes.kernelization.register_tiles import GPU_LHS_PAD, GPU_MIN_BLOCKS, GPU_MIN_TILE, gpu_ownership_run

    m, n, k = 16 * tile + 13, 16 * tile + 5, 21
    b = -(-GPU_MIN_BLOCKS // 4)  # 2 x 2 blocks a batch at this tile, 4x fewer at the next
    ta, tb, to = ty([b, m, k]), ty([b, n, k]), ty([b, m, n])
    src = f"""func.func @main(%a: {ta}, %b: {tb}) -> {to} {{
  %d = "accy.dot_general"(%a, %b) <{{lhs_batch = {arr([0])}, rhs_batch = {arr([0])}, lhs_contract = {arr([2])}, rhs_contract = {arr([2])}}}> : ({ta}, {tb}) -> {to}
  func.return %d : {to}
}}"""
    if tile < GPU_MIN_TILE:
        src = f"builtin.module attributes {{accy.target = #accy.target<dot_rows = {tile}>}} {{\n{src}\n}}"
    exe = accy.compile(src, device=device)
    rng = np.random.default_rng(tile)
    inputs = [rand(rng, (b, m, k), "float32"), rand(rng, (b, n, k), "float32")]
    (got,) = exe(*inputs)
    assert exe.stats.fallbacks == 0
    assert_matches(got, exe.reference_outputs(inputs)[0], rtol=1e-3, atol=1e-4)
    if device.target_profile().profile == "gpu":
        # 4 k x 16·tile rows (padded, the lhs), 16-byte aligned where read in runs of 4 (`gpu_ownership_run`)
        aligned = " __attribute__((aligned(16)))" if gpu_ownership_run(tile, f32) == 4 else ""
        assert f"__local float l0[{4 * (16 * tile + GPU_LHS_PAD)}]{aligned};" in exe.program.source


@pytest.mark.parametrize("width", [2, 4, 8])
@pytest.mark.parametrize("case", sorted(CASES))
def test_packed_dot_at_narrower_vectors(case: str, width: int, device) -> None:
    """The packed dot with the vectors of an AVX2 (8), SSE (4) or narrower
    machine (the module's `vector_width`; the suite's own machines report
    16): the bias read of the epilogue at a multiple of the width modulo N
    was refused by the bounds proof below 16 (`col % 16`, col a multiple
    of 4), so every compile on such a machine failed."""
    from accy.dialects.target import TARGET_KEY, TargetAttr

    src, shapes, _ = program(case, "f32")
    module = accy.parse_module(src)
    module.attributes[TARGET_KEY] = TargetAttr.from_fields({"vector_width": width})
    exe = accy.compile(module, device=device)
    rng = np.random.default_rng(width)
    inputs = [rand(rng, s, "float32") for s in shapes]
    (got,) = exe(*inputs)
    assert exe.stats.fallbacks == 0
    assert_matches(got, exe.reference_outputs(inputs)[0], rtol=1e-3, atol=1e-4)
