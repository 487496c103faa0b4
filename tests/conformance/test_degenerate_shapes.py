"""Reductions, scans and row pipelines at degenerate shapes (1x1, 1xN, Nx1,
rank 1 of size 1, reductions over every axis down to a rank-0 result),
under the CPU and the GPU profile, through the OpenCL runtime with poisoned
buffers, against the reference interpreter.

At these shapes index math folds away (a size-1 dim's coordinate is the
constant 0, a loop that runs once is inlined), which is where a kernel
builder's caches have handed out a value defined inside a loop to a use
after it (invalid SSA that NVIDIA's and PoCL's compilers reject). Every
kernel is also checked for SSA dominance when it is built
(`check_dominance`); the tests below make those programs run."""

from __future__ import annotations

import numpy as np
import pytest
from check import arr, check, ty
from test_row_pipeline import check_program, layer_norm_src, normal, softmax_src

KINDS = ["sum", "prod", "max", "min", "mean"]

#: (input shape, reduced axes): 1x1 over each axis and both, 1xN, Nx1,
#: rank 1 of size 1 and of size N, size-1 dims between others.
REDUCE_CASES = [
    ([1, 1], [1]),
    ([1, 1], [0]),
    ([1, 1], [0, 1]),
    ([1, 17], [1]),
    ([1, 17], [0]),
    ([1, 17], [0, 1]),
    ([17, 1], [1]),
    ([17, 1], [0]),
    ([17, 1], [0, 1]),
    ([1], [0]),
    ([5], [0]),
    ([3, 1, 4], [1]),
    ([1, 3, 1], [0, 2]),
]


def near_one(rng: np.random.Generator, shape, et: str) -> np.ndarray:
    """Values whose products stay in range: magnitudes in [0.9, 1.1] (f32)
    or small integers (i32), either sign."""
    if et == "i32":
        return rng.integers(-3, 4, shape).astype(np.int32)
    sign = np.where(rng.random(shape) < 0.5, -1.0, 1.0)
    return (sign * (0.9 + 0.2 * rng.random(shape))).astype(np.float32)


def reduce_src(shape: list[int], axes: list[int], kind: str, et: str = "f32") -> str:
    """x * y reduced over `axes` (prologue), negated (epilogue); x * y is
    also a result, as in the program that first showed the bug."""
    out = [s for d, s in enumerate(shape) if d not in axes]
    t, o = ty(shape, et), ty(out, et)
    neg = '"accy.neg"(%r)' if et == "f32" else '"accy.sub"(%z, %r)'
    zero = "" if et == "f32" else f'  %z = "accy.constant"() <{{value = dense<0> : {o}}}> : () -> {o}\n'
    neg_sig = f"({o})" if et == "f32" else f"({o}, {o})"
    return (
        f"func.func @main(%x: {t}, %y: {t}) -> ({o}, {t}) {{\n"
        f'  %m = "accy.mul"(%x, %y) : ({t}, {t}) -> {t}\n'
        f'  %r = "accy.reduce"(%m) <{{kind = "{kind}", axes = {arr(axes)}}}> : ({t}) -> {o}\n'
        f"{zero}"
        f"  %n = {neg} : {neg_sig} -> {o}\n"
        f"  func.return %n, %m : {o}, {t}\n}}"
    )


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("shape,axes", REDUCE_CASES, ids=lambda c: "x".join(map(str, c)))
def test_reduce(shape: list[int], axes: list[int], kind: str, device) -> None:
    rng = np.random.default_rng(len(shape) * 7 + sum(axes))
    ins = [near_one(rng, shape, "f32"), near_one(rng, shape, "f32")]
    check(reduce_src(shape, axes, kind), ins, device)


@pytest.mark.parametrize("kind", ["sum", "prod", "max", "min"])
@pytest.mark.parametrize("shape,axes", [([1, 1], [1]), ([1, 1], [0, 1]), ([1, 9], [1]), ([9, 1], [1]), ([1], [0])])
def test_reduce_int(shape: list[int], axes: list[int], kind: str, device) -> None:
    rng = np.random.default_rng(3)
    check(reduce_src(shape, axes, kind, "i32"), [near_one(rng, shape, "i32"), near_one(rng, shape, "i32")], device)


#: (shape, scan axis)
SCAN_CASES = [([1], 0), ([5], 0), ([1, 1], 0), ([1, 1], 1), ([1, 17], 1), ([1, 17], 0), ([17, 1], 0), ([17, 1], 1)]


def scan_src(shape: list[int], axis: int, kind: str, exclusive: bool, reverse: bool) -> str:
    """x * y scanned along `axis` (prologue), plus x (epilogue)."""
    t = ty(shape)
    flags = f"exclusive = {str(exclusive).lower()}, reverse = {str(reverse).lower()}"
    return (
        f"func.func @main(%x: {t}, %y: {t}) -> {t} {{\n"
        f'  %m = "accy.mul"(%x, %y) : ({t}, {t}) -> {t}\n'
        f'  %s = "accy.scan"(%m) <{{kind = "{kind}", axis = {axis} : i64, {flags}}}> : ({t}) -> {t}\n'
        f'  %r = "accy.add"(%s, %x) : ({t}, {t}) -> {t}\n'
        f"  func.return %r : {t}\n}}"
    )


@pytest.mark.parametrize(
    "kind,exclusive,reverse",
    [("sum", False, False), ("prod", True, False), ("max", False, True), ("min", True, True), ("sum", True, True)],
)
@pytest.mark.parametrize("shape,axis", SCAN_CASES, ids=lambda c: "x".join(map(str, c)) if isinstance(c, list) else str(c))
def test_scan(shape: list[int], axis: int, kind: str, exclusive: bool, reverse: bool, device) -> None:
    rng = np.random.default_rng(5)
    check(scan_src(shape, axis, kind, exclusive, reverse), [near_one(rng, shape, "f32"), near_one(rng, shape, "f32")], device)


#: (rows, row length) of the row pipelines beyond test_row_pipeline's.
ROW_SIZES = [(1, 1), (1, 17), (5, 1), (2, 2)]


@pytest.mark.parametrize("rows,n", ROW_SIZES)
@pytest.mark.parametrize("form", ["named", "primitive"])
@pytest.mark.parametrize("log", [False, True], ids=["softmax", "log_softmax"])
def test_softmax(rows: int, n: int, form: str, log: bool, device) -> None:
    check_program(softmax_src(rows, n, log, form == "named"), normal((rows, n)), device)


@pytest.mark.parametrize("shape", [[1, 1], [1, 17], [5, 1], [1, 1, 1], [1, 3, 1], [2, 1, 7]], ids=str)
@pytest.mark.parametrize("form", ["named", "primitive"])
def test_layer_norm(shape: list[int], form: str, device) -> None:
    n = shape[-1]
    check_program(layer_norm_src(shape, form == "named"), normal(tuple(shape), (n,), (n,)), device)
