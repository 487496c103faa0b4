"""Reductions longer than one accumulator's chunk (the profile's `reduce_chunk` elements a
lane) run in two launches, partials then totals, and keep float32 sums
within a few ulp of a float64 sum however long they are.

Drawn around the chunk boundaries of both profiles (CPU vector: 16 x 256
per row piece or group of rows; CPU scalar: 256; GPU: 256 x 256 per
work-group; rows of whole vectors per GPU work-item), with a prologue and an epilogue, every kind, integers exactly,
NaN propagated by max, on random inputs of mixed signs and on the
worst case for a running sum (one value repeated)."""

from __future__ import annotations

import numpy as np
import pytest
from check import assert_matches

import accy


def ty(shape: tuple[int, ...], et: str = "f32") -> str:
    return f"tensor<{'x'.join(map(str, shape))}x{et}>" if shape else f"tensor<{et}>"


def reduce_src(shape: tuple[int, ...], axes: tuple[int, ...], kind: str, et: str = "f32",
               prologue: bool = False, epilogue: bool = False) -> str:
    out = tuple(s for i, s in enumerate(shape) if i not in axes)
    t, r = ty(shape, et), ty(out, et)
    lines = [f"func.func @main(%x: {t}) -> {r} {{"]
    x = "%x"
    if prologue:
        lines.append(f'  %p = "accy.abs"(%x) : ({t}) -> {t}')
        x = "%p"
    axes_txt = ", ".join(map(str, axes))
    lines.append(f'  %r = "accy.reduce"({x}) <{{kind = "{kind}", axes = array<i64: {axes_txt}>}}> : ({t}) -> {r}')
    res = "%r"
    if epilogue:
        lines.append(f'  %e = "accy.add"(%r, %r) : ({r}, {r}) -> {r}')
        res = "%e"
    lines.append(f"  func.return {res} : {r}\n}}")
    return "\n".join(lines)


CASES = [
    # (shape, axes): full reductions, long rows, rows just past a chunk, columns, groups of short rows.
    ((4097,), (0,)),
    ((65537,), (0,)),
    ((300_001,), (0,)),
    ((3, 4096 * 2 + 17), (1,)),
    ((2, 65536 + 3), (1,)),
    ((257, 5), (0,)),
    ((1000, 257), (0, 1)),
    ((17, 33, 31), (0, 2)),
    ((5, 3000), (0, 1)),
    # Rows of whole vectors for every GPU work-item (W x 256 elements): vector shares.
    ((3, 4096), (1,)),
    ((2, 5, 1024), (1, 2)),
]


@pytest.mark.parametrize("shape,axes", CASES)
@pytest.mark.parametrize("kind", ["sum", "mean", "max", "min", "prod"])
def test_long_reduction(shape, axes, kind, device) -> None:
    rng = np.random.default_rng(len(shape) * 7 + shape[0])
    if kind == "prod":
        # Factors far from 1 in ulps (a factor within half an ulp of 1 is
        # lost by any float32 product), whose products stay in range.
        v = rng.uniform(-0.1, 0.1, shape)
        x = np.exp(v - v.mean(axis=axes, keepdims=True)).astype(np.float32)
    else:
        x = rng.uniform(-1, 2, shape).astype(np.float32)
    exe = accy.compile(reduce_src(shape, axes, kind, prologue=kind != "prod", epilogue=True), device=device)
    (got,) = exe(x)
    assert exe.stats.fallbacks == 0
    # Against float64: numpy's float32 prod (and max/min, trivially) runs
    # one accumulator, which is what the split is there to avoid.
    x64 = np.abs(x.astype(np.float64)) if kind != "prod" else x.astype(np.float64)
    want = 2 * getattr(np, kind)(x64, axis=axes)
    # Every product rounds (blocks cannot help a prod): a random walk of n roundings.
    rtol = 2e-5 if kind != "prod" else 1e-6 * np.sqrt(x.size)
    assert_matches(got.astype(np.float64), np.asarray(want), rtol=rtol, atol=1e-6)


@pytest.mark.parametrize("n", [1_000_003, 3 * 65536 + 1])
def test_sum_accuracy_against_float64(n: int, device) -> None:
    """Relative error within 1e-5 of a float64 sum, on one value repeated
    (where a single running float32 sum is off by 1e-3) and on mixed signs."""
    exe = accy.compile(reduce_src((n,), (0,), "mean"), device=device)
    rng = np.random.default_rng(n)
    for x in (np.full(n, 0.1, np.float32), rng.uniform(-1, 3, n).astype(np.float32),
              (rng.standard_normal(n) + 0.5).astype(np.float32)):
        (got,) = exe(x)
        exact = x.astype(np.float64).mean()
        assert abs(float(got) - exact) <= 1e-5 * abs(exact)


def test_integer_sum_exact(device) -> None:
    n = 200_003
    x = np.random.default_rng(1).integers(-5, 6, n).astype(np.int32)
    (got,) = accy.compile(reduce_src((n,), (0,), "sum", "i32"), device=device)(x)
    assert int(got) == int(x.astype(np.int64).sum())


def test_integer_row_sums_in_vector_shares(device) -> None:
    x = np.random.default_rng(2).integers(-50, 51, (5, 2048)).astype(np.int32)
    (got,) = accy.compile(reduce_src((5, 2048), (1,), "sum", "i32"), device=device)(x)
    np.testing.assert_array_equal(got, x.astype(np.int64).sum(axis=1))


def test_nan_propagates_through_partials(device) -> None:
    x = np.random.default_rng(2).standard_normal((3, 70_001)).astype(np.float32)
    x[1, 50_000] = np.nan
    (got,) = accy.compile(reduce_src(x.shape, (1,), "max"), device=device)(x)
    assert np.isnan(got[1]) and not np.isnan(got[0]) and got[2] == x[2].max()


@pytest.mark.slow
@pytest.mark.parametrize("n", [10**7, 10**8])
def test_sum_accuracy_large(n: int, device) -> None:
    exe = accy.compile(reduce_src((n,), (0,), "sum"), device=device)
    rng = np.random.default_rng(0)
    for x in (np.full(n, 0.1, np.float32), rng.uniform(-1, 2, n).astype(np.float32)):
        (got,) = exe(x)
        exact = x.astype(np.float64).sum()
        assert abs(float(got) - exact) <= 1e-5 * abs(exact)
