"""GPU products whose grid takes Triton's grouped order (register_tiles'
`grouped_blocks`: groups of GPU_BLOCK_GROUP block rows, the last group
partial): every block computed once, none left out. Shapes whose block
rows are not whole groups (a partial last group), a single block column,
a batch; the SIMT tiles on the GPU profile (f32, i32). Outputs are
poisoned, so a block that no work-group computes reads NaN (or the
poison's integer)."""

from __future__ import annotations

import numpy as np
import pytest
from check import ty
from conftest import profiled_device

import accy

#: (batch, M, N, K): more block rows than a group, not whole groups (whatever the tile: 128 rows a block or fewer).
SHAPES = [((), 1100, 300, 33), ((), 1031, 129, 7), ((2,), 1300, 40, 5), ((), 2100, 17, 3)]


def _program(batch: tuple[int, ...], m: int, n: int, k: int, et: str, target: str) -> str:
    nb = len(batch)
    a, b, out = ty([*batch, m, k], et), ty([*batch, k, n], et), ty([*batch, m, n], et)
    dims = f"lhs_batch = array<i64{''.join(f', {i}' for i in range(nb))}>, rhs_batch = array<i64{''.join(f', {i}' for i in range(nb))}>"
    dims = dims.replace("array<i64, ", "array<i64: ")
    dims += f", lhs_contract = array<i64: {nb + 1}>, rhs_contract = array<i64: {nb}>"
    return f"""builtin.module attributes {{accy.target = #accy.target<{target}>}} {{
func.func @main(%a: {a}, %b: {b}) -> {out} {{
  %d = "accy.dot_general"(%a, %b) <{{{dims}}}> : ({a}, {b}) -> {out}
  func.return %d : {out}
}}
}}"""


def _inputs(batch, m, n, k, dtype, seed):
    rng = np.random.default_rng(seed)
    if np.issubdtype(dtype, np.integer):
        return [rng.integers(-5, 5, s).astype(dtype) for s in ([*batch, m, k], [*batch, k, n])]
    return [rng.standard_normal(s).astype(dtype) for s in ([*batch, m, k], [*batch, k, n])]


@pytest.mark.parametrize("et", ["f32", "i32"])
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, [*s[0], *s[1:]])))
def test_simt_tiles_compute_every_block(shape, et: str) -> None:
    batch, m, n, k = shape
    dtype = np.dtype(np.float32 if et == "f32" else np.int32)
    exe = accy.compile(_program(batch, m, n, k, et, 'profile = "gpu"'), device=profiled_device("gpu"))
    a, b = _inputs(batch, m, n, k, dtype, m + n)
    (got,) = exe(a, b)
    assert exe.stats.fallbacks == 0 and "get_group_id(1)" in exe.program.source
    want = np.einsum("...ij,...jk->...ik", a.astype(np.float64), b.astype(np.float64))
    if et == "i32":
        np.testing.assert_array_equal(got, want.astype(np.int32))
    else:
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4 * max(1.0, float(np.abs(want).max())))

