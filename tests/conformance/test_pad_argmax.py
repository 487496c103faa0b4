"""accy.pad and accy.reduce's argmax/argmin against the reference
interpreter on every device: every pad mode at odd and degenerate sizes
(a dim of 0 or 1, pads longer than the dim, negative pads that crop),
fused with an elementwise producer and consumer into one kernel; arg
reductions over one or several axes, i32 and i64 positions, float and
integer inputs with ties and NaNs (and +-inf) drawn on purpose, long rows
and full reductions; never a host fallback."""

from __future__ import annotations

import numpy as np
import pytest
from check import arr, check, ty

PADS = [
    ((5,), (2,), (7,)),
    ((1,), (3,), (2,)),
    ((3, 4), (1, -1), (-2, 3)),
    ((1, 3), (3, 0), (2, 2)),
    ((2, 3, 5), (0, 1, 4), (1, 0, -2)),
    ((4, 0), (1, 2), (0, 1)),
    ((0,), (0,), (0,)),
]


def pad_src(xs: tuple[int, ...], lo: tuple[int, ...], hi: tuple[int, ...], mode: str, et: str) -> str:
    rs = tuple(n + a + b for n, a, b in zip(xs, lo, hi, strict=True))
    unary = "accy.neg" if et != "i1" else "accy.not"
    return f"""func.func @main(%x: {ty(xs, et)}, %v: {ty((), et)}) -> {ty(rs, et)} {{
  %e = "{unary}"(%x) : ({ty(xs, et)}) -> {ty(xs, et)}
  %p = "accy.pad"(%e, %v) <{{low = {arr(lo)}, high = {arr(hi)}, mode = "{mode}"}}> : ({ty(xs, et)}, {ty((), et)}) -> {ty(rs, et)}
  %n = "{unary}"(%p) : ({ty(rs, et)}) -> {ty(rs, et)}
  func.return %n : {ty(rs, et)}
}}"""


def values(rng: np.random.Generator, shape: tuple[int, ...], et: str) -> np.ndarray:
    if et == "i1":
        return rng.random(shape) < 0.5
    if et.startswith("i"):
        return rng.integers(-1000, 1000, shape).astype(np.int32 if et == "i32" else np.int64)
    return rng.standard_normal(shape).astype(np.float32 if et == "f32" else np.float64)


@pytest.mark.parametrize("mode", ["constant", "edge", "reflect", "wrap"])
@pytest.mark.parametrize("case", PADS, ids=str)
def test_pad(case, mode: str, device) -> None:
    xs, lo, hi = case
    if mode != "constant" and 0 in xs and any(lo) | any(hi):
        pytest.skip("edge/reflect/wrap of an empty dim is a verifier error (tests/lit/dialect)")
    rng = np.random.default_rng(len(xs) * 7 + sum(lo))
    rs = tuple(n + a + b for n, a, b in zip(xs, lo, hi, strict=True))
    check(pad_src(xs, lo, hi, mode, "f32"), [values(rng, xs, "f32"), np.float32(9.5).reshape(())], device,
          kernels=1 if 0 not in rs else None)


@pytest.mark.parametrize("et", ["i32", "i64", "i1", "f64"])
@pytest.mark.parametrize("mode", ["constant", "reflect"])
def test_pad_element_types(et: str, mode: str, device) -> None:
    rng = np.random.default_rng(3)
    xs, lo, hi = (3, 7), (2, 5), (1, -3)
    check(pad_src(xs, lo, hi, mode, et), [values(rng, xs, et), values(rng, (), et)], device, kernels=1)


def arg_src(xs: tuple[int, ...], axes: tuple[int, ...], kind: str, et: str, it: str) -> str:
    norm = [a % len(xs) for a in axes] if xs else []
    rs = tuple(n for d, n in enumerate(xs) if d not in norm)
    return f"""func.func @main(%x: {ty(xs, et)}) -> {ty(rs, it)} {{
  %a = "accy.reduce"(%x) <{{kind = "{kind}", axes = {arr(axes)}}}> : ({ty(xs, et)}) -> {ty(rs, it)}
  func.return %a : {ty(rs, it)}
}}"""


def tied(rng: np.random.Generator, shape: tuple[int, ...], et: str) -> np.ndarray:
    """Few distinct values (ties everywhere); for floats NaNs and +-inf at random places."""
    x = rng.integers(-3, 3, shape)
    if not et.startswith("f"):
        return x.astype(np.int32 if et == "i32" else np.int64)
    x = x.astype(np.float32 if et == "f32" else np.float64)
    flat = x.reshape(-1)
    if flat.size > 3:
        flat[rng.integers(0, flat.size, max(1, flat.size // 5))] = np.nan
        flat[rng.integers(0, flat.size, 2)] = np.inf
        flat[rng.integers(0, flat.size, 2)] = -np.inf
    return x


ARGS = [
    ((7,), (0,)),
    ((1,), (0,)),
    ((3, 5), (1,)),
    ((3, 5), (0,)),
    ((2, 3, 4), (0, 2)),
    ((0, 3), (1,)),
    ((4, 1000), (-1,)),
    ((3001,), (0,)),
    ((), ()),
]


@pytest.mark.parametrize("it", ["i32", "i64"])
@pytest.mark.parametrize("kind", ["argmax", "argmin"])
@pytest.mark.parametrize("case", ARGS, ids=str)
def test_arg_reduce(case, kind: str, it: str, device) -> None:
    xs, axes = case
    rng = np.random.default_rng(len(xs) + len(axes))
    for et in ("f32", "i32"):
        check(arg_src(xs, axes, kind, et, it), [tied(rng, xs, et)], device)


@pytest.mark.parametrize("et", ["f64", "i64"])
def test_arg_reduce_element_types(et: str, device) -> None:
    rng = np.random.default_rng(5)
    check(arg_src((5, 17), (1,), "argmax", et, "i64"), [tied(rng, (5, 17), et)], device)


def test_arg_of_all_nan_and_all_equal_rows(device) -> None:
    """Rows of only NaN, only -inf, only one value: position 0 each time;
    a NaN after an inf wins."""
    x = np.array([[np.nan] * 5, [-np.inf] * 5, [2.0] * 5, [1, np.inf, 3, np.nan, np.nan]], np.float32)
    for kind in ("argmax", "argmin"):
        check(arg_src((4, 5), (1,), kind, "f32", "i64"), [x], device)


def test_argmax_fused_with_its_producer_and_consumer(device) -> None:
    src = f"""func.func @main(%x: {ty((6, 9))}) -> {ty((6,), "i32")} {{
  %e = "accy.neg"(%x) : ({ty((6, 9))}) -> {ty((6, 9))}
  %a = "accy.reduce"(%e) <{{kind = "argmax", axes = array<i64: 1>}}> : ({ty((6, 9))}) -> {ty((6,), "i32")}
  %b = "accy.add"(%a, %a) : ({ty((6,), "i32")}, {ty((6,), "i32")}) -> {ty((6,), "i32")}
  func.return %b : {ty((6,), "i32")}
}}"""
    check(src, [tied(np.random.default_rng(1), (6, 9), "f32")], device, kernels=1)
