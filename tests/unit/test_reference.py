"""The reference interpreter against plain numpy/Python written independently.

Every op of the tensor dialect contract is built in the generic text form,
parsed, run with `accy.reference.run`, and compared with an expression that
does not share code with the interpreter (float64 math, Python loops, einsum).
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from xdsl.dialects.builtin import (
    DenseIntOrFPElementsAttr,
    Float16Type,
    Float32Type,
    Float64Type,
    IntegerType,
    ModuleOp,
    Signedness,
    TensorType,
)
from xdsl.parser import Parser

from accy.dialects.accy import AddOp, ConstantOp, ExpOp, IterateOp, YieldOp
from accy.dialects.context import make_context
from accy.reference import (
    dense_to_numpy,
    element_type_for_dtype,
    evaluate_op,
    numpy_dtype,
    numpy_to_dense,
    run,
)

CTX = make_context()
FAST = settings(max_examples=25, deadline=None)
FEW = settings(max_examples=8, deadline=None)

F32, F16, F64, I32, I1 = np.float32, np.float16, np.float64, np.int32, np.bool_
_ELEM = {F16: "f16", F32: "f32", F64: "f64", I1: "i1", np.int8: "i8", np.int16: "i16", I32: "i32", np.int64: "i64"}

dims = st.sampled_from([1, 2, 3, 5, 17])
shapes = st.lists(dims, min_size=0, max_size=3).map(tuple)
nonscalar_shapes = st.lists(dims, min_size=1, max_size=3).map(tuple)
seeds = st.integers(0, 2**32 - 1)


# --------------------------------------------------------------------------
# Helpers: build, parse and run one op; draw arrays.
# --------------------------------------------------------------------------


def ttype(shape: tuple[int, ...], dtype: type) -> str:
    return "tensor<" + "".join(f"{d}x" for d in shape) + _ELEM[np.dtype(dtype).type] + ">"


def parse(text: str) -> ModuleOp:
    module = Parser(CTX, text).parse_module()
    module.verify()
    return module


def op_module(name: str, inputs: list[np.ndarray], result: str, props: str = "") -> ModuleOp:
    args = ", ".join(f"%a{i}: {ttype(a.shape, a.dtype.type)}" for i, a in enumerate(inputs))
    operands = ", ".join(f"%a{i}" for i in range(len(inputs)))
    types = ", ".join(ttype(a.shape, a.dtype.type) for a in inputs)
    props = f" <{{{props}}}>" if props else ""
    return parse(
        f"func.func @main({args}) -> {result} {{\n"
        f'  %r = "{name}"({operands}){props} : ({types}) -> {result}\n'
        f"  func.return %r : {result}\n}}"
    )


def run_op(name: str, inputs: list[np.ndarray], shape: tuple[int, ...], dtype: type, props: str = "") -> np.ndarray:
    """Runs one op; checks the result has exactly the result type's dtype and shape."""
    (out,) = run(op_module(name, inputs, ttype(shape, dtype), props), "main", *inputs)
    assert out.dtype == np.dtype(dtype), (name, out.dtype, dtype)
    assert out.shape == tuple(shape), (name, out.shape, shape)
    return out


def draw(
    rng: np.random.Generator, shape: tuple[int, ...], dtype: type, lo: float = -3.0, hi: float = 3.0
) -> np.ndarray:
    if dtype is I1:
        return np.asarray(rng.random(shape) < 0.5)
    if np.dtype(dtype).kind == "i":
        return rng.integers(int(lo), int(hi) + 1, size=shape).astype(dtype)
    return rng.uniform(lo, hi, size=shape).astype(dtype)


def i64s(values: list[int] | tuple[int, ...]) -> str:
    return "array<i64" + "".join(f", {v}" if i else f": {v}" for i, v in enumerate(values)) + ">"


def close(got: np.ndarray, want: np.ndarray, rtol: float = 1e-5, atol: float = 1e-6) -> None:
    np.testing.assert_allclose(got.astype(np.float64), np.asarray(want, dtype=np.float64), rtol=rtol, atol=atol)


_erf64 = np.vectorize(math.erf, otypes=[np.float64])


def wrap32(values: np.ndarray) -> np.ndarray:
    """Python integers reduced to int32 two's complement."""
    return np.array([((int(v) + 2**31) % 2**32) - 2**31 for v in np.ravel(values)], dtype=np.int64).reshape(
        np.shape(values)
    )


# --------------------------------------------------------------------------
# Elementwise
# --------------------------------------------------------------------------

# op -> (dtype, input range, float64 expression, exact?)
UNARY = {
    "neg": (F32, (-5, 5), lambda x: -x, True),
    "abs": (F32, (-5, 5), np.abs, True),
    "exp": (F32, (-10, 10), np.exp, False),
    "log": (F32, (0.01, 100), np.log, False),
    "sqrt": (F32, (0, 100), np.sqrt, False),
    "rsqrt": (F32, (0.01, 100), lambda x: 1 / np.sqrt(x), False),
    "tanh": (F32, (-6, 6), np.tanh, False),
    "sigmoid": (F32, (-100, 100), lambda x: 1 / (1 + np.exp(-x)), False),
    "relu": (F32, (-5, 5), lambda x: np.where(x > 0, x, 0), True),
    "gelu": (F32, (-6, 6), lambda x: 0.5 * x * (1 + _erf64(x / math.sqrt(2))), False),
    "sin": (F32, (-7, 7), np.sin, False),
    "cos": (F32, (-7, 7), np.cos, False),
    "erf": (F32, (-4, 4), _erf64, False),
    "reciprocal": (F32, (0.1, 10), lambda x: 1 / x, False),
    "floor": (F32, (-10, 10), np.floor, True),
    "ceil": (F32, (-10, 10), np.ceil, True),
    "not": (I1, (0, 1), lambda x: x == 0, True),
}
INT_UNARY = {"neg": lambda x: -x, "abs": np.abs, "relu": lambda x: np.where(x > 0, x, 0)}


@pytest.mark.parametrize("op", sorted(UNARY))
@FEW
@given(shape=shapes, seed=seeds)
def test_unary(op: str, shape: tuple[int, ...], seed: int) -> None:
    dtype, (lo, hi), expr, exact = UNARY[op]
    x = draw(np.random.default_rng(seed), shape, dtype, lo, hi)
    got = run_op(f"accy.{op}", [x], shape, dtype)
    want = expr(x.astype(np.float64) if dtype is F32 else x)
    if exact:
        np.testing.assert_array_equal(got, want)
    else:
        close(got, want, rtol=2e-6, atol=1e-6)


@pytest.mark.parametrize("op", sorted(INT_UNARY))
@FEW
@given(shape=shapes, seed=seeds)
def test_int_unary(op: str, shape: tuple[int, ...], seed: int) -> None:
    x = draw(np.random.default_rng(seed), shape, I32, -100, 100)
    np.testing.assert_array_equal(run_op(f"accy.{op}", [x], shape, I32), INT_UNARY[op](x.astype(np.int64)))


@pytest.mark.parametrize("dtype", [F16, F32, F64])
def test_unary_keeps_the_element_type(dtype: type) -> None:
    x = np.linspace(-2, 2, 17).astype(dtype)
    for op in ("exp", "gelu", "erf", "sigmoid", "rsqrt"):
        got = run_op(f"accy.{op}", [np.abs(x) + dtype(0.5)], (17,), dtype)
        assert got.dtype == np.dtype(dtype)


def test_erf_and_gelu_are_precise_in_float64() -> None:
    x = np.concatenate([np.linspace(-7, 7, 4001), [0.0, -0.0, 1e-12, 2.5, -2.5, 30.0]])
    close(run_op("accy.erf", [x], x.shape, F64), _erf64(x), rtol=1e-14, atol=1e-15)
    # erfc(-t) = 1 + erf(t), without the cancellation of 1 + erf(t) for t << 0.
    gelu = 0.5 * x * np.vectorize(math.erfc, otypes=[np.float64])(-x / math.sqrt(2))
    close(run_op("accy.gelu", [x], x.shape, F64), gelu, rtol=1e-12, atol=1e-300)
    special = np.array([np.inf, -np.inf, np.nan])
    np.testing.assert_array_equal(run_op("accy.erf", [special], (3,), F64), [1.0, -1.0, np.nan])


def test_sigmoid_does_not_overflow() -> None:
    x = np.array([-1e30, -200, 0, 200, 1e30, np.inf, -np.inf], dtype=F32)
    with np.errstate(all="raise"):
        got = run_op("accy.sigmoid", [x], x.shape, F32)
    np.testing.assert_array_equal(got, np.array([0, 0, 0.5, 1, 1, 1, 0], dtype=F32))


# op -> float64 expression on (a, b); the int form below where it differs
BINARY = {
    "add": lambda a, b: a + b,
    "sub": lambda a, b: a - b,
    "mul": lambda a, b: a * b,
    "div": lambda a, b: a / b,
    "max": np.fmax,
    "min": np.fmin,
    "pow": lambda a, b: a**b,
}


def _trunc_div(a: int, b: int) -> int:
    if b == 0:
        return 0
    q = abs(a) // abs(b)
    return q if (a < 0) == (b < 0) else -q


def _int_pow(a: int, b: int) -> int:
    if b >= 0:
        return a**b
    return 1 if a == 1 else (-1) ** b if a == -1 else 0


INT_BINARY = {
    "add": lambda a, b: a + b,
    "sub": lambda a, b: a - b,
    "mul": lambda a, b: a * b,
    "div": _trunc_div,
    "max": max,
    "min": min,
    "pow": _int_pow,
}


@pytest.mark.parametrize("op", sorted(BINARY))
@FEW
@given(shape=shapes, seed=seeds)
def test_binary_float(op: str, shape: tuple[int, ...], seed: int) -> None:
    rng = np.random.default_rng(seed)
    a = draw(rng, shape, F32, 0.1 if op == "pow" else -5, 5)
    b = draw(rng, shape, F32, 0.1, 5) * (1 if op in ("pow", "div") else rng.choice([-1, 1], size=shape).astype(F32))
    got = run_op(f"accy.{op}", [a, b], shape, F32)
    close(got, BINARY[op](a.astype(np.float64), b.astype(np.float64)), rtol=3e-6, atol=1e-6)


@pytest.mark.parametrize("op", sorted(INT_BINARY))
@FEW
@given(shape=shapes, seed=seeds)
def test_binary_int32(op: str, shape: tuple[int, ...], seed: int) -> None:
    rng = np.random.default_rng(seed)
    lo, hi = (-4, 6) if op == "pow" else (-(2**31), 2**31 - 1)
    a = draw(rng, shape, I32, -9, 9) if op == "pow" else draw(rng, shape, I32, lo, hi)
    b = draw(rng, shape, I32, lo, hi) if op != "div" else draw(rng, shape, I32, -7, 7)
    if op == "div":  # also divide big numbers by small ones, and by zero
        a = draw(rng, shape, I32, -(2**31), 2**31 - 1)
    got = run_op(f"accy.{op}", [a, b], shape, I32)
    fn = INT_BINARY[op]
    want = np.array([fn(int(x), int(y)) for x, y in zip(a.ravel(), b.ravel(), strict=True)], dtype=object)
    np.testing.assert_array_equal(got, wrap32(want).reshape(shape))


def test_int_division_edge_cases() -> None:
    a = np.array([7, -7, 7, -7, 5, -(2**31), -(2**31), 0], dtype=I32)
    b = np.array([2, 2, -2, -2, 0, -1, 1, 0], dtype=I32)
    np.testing.assert_array_equal(run_op("accy.div", [a, b], (8,), I32), [3, -3, -3, 3, 0, -(2**31), -(2**31), 0])
    p = np.array([2, -1, -1, 1, 3, 0], dtype=I32)
    e = np.array([31, -3, -4, -5, -1, 0], dtype=I32)
    np.testing.assert_array_equal(run_op("accy.pow", [p, e], (6,), I32), [-(2**31), -1, 1, 1, 0, 1])


def test_max_min_propagate_nan() -> None:
    a = np.array([np.nan, 1.0, 2.0, np.nan], dtype=F32)
    b = np.array([1.0, np.nan, 3.0, np.nan], dtype=F32)
    np.testing.assert_array_equal(run_op("accy.max", [a, b], (4,), F32), [np.nan, np.nan, 3.0, np.nan])
    np.testing.assert_array_equal(run_op("accy.min", [a, b], (4,), F32), [np.nan, np.nan, 2.0, np.nan])


@pytest.mark.parametrize("op", ["and", "or", "xor"])
@pytest.mark.parametrize("dtype", [I1, I32])
@FEW
@given(shape=shapes, seed=seeds)
def test_logical(op: str, dtype: type, shape: tuple[int, ...], seed: int) -> None:
    rng = np.random.default_rng(seed)
    a, b = draw(rng, shape, dtype, -1000, 1000), draw(rng, shape, dtype, -1000, 1000)
    pyop = {"and": lambda x, y: x & y, "or": lambda x, y: x | y, "xor": lambda x, y: x ^ y}[op]
    want = np.array([pyop(int(x), int(y)) for x, y in zip(a.ravel(), b.ravel(), strict=True)]).reshape(shape)
    np.testing.assert_array_equal(run_op(f"accy.{op}", [a, b], shape, dtype).astype(np.int64), want)


CMP = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}


@pytest.mark.parametrize("dtype", [F32, I32])
@FAST
@given(shape=shapes, seed=seeds, pred=st.sampled_from(sorted(CMP)))
def test_cmp(dtype: type, shape: tuple[int, ...], seed: int, pred: str) -> None:
    rng = np.random.default_rng(seed)
    a, b = draw(rng, shape, dtype, -2, 2), draw(rng, shape, dtype, -2, 2)
    if dtype is F32:  # make ties and NaNs likely
        a, b = np.asarray(np.round(a)), np.asarray(np.round(b))
        a[rng.random(shape) < 0.2] = np.nan
    got = run_op("accy.cmp", [a, b], shape, I1, f'predicate = "{pred}"')
    want = [eval(f"float(x) {CMP[pred]} float(y)") for x, y in zip(a.ravel(), b.ravel(), strict=True)]  # noqa: S307
    np.testing.assert_array_equal(got.ravel(), np.array(want, dtype=bool))


@pytest.mark.parametrize("dtype", [F32, I32, I1])
@FEW
@given(shape=shapes, seed=seeds)
def test_select(dtype: type, shape: tuple[int, ...], seed: int) -> None:
    rng = np.random.default_rng(seed)
    c, a, b = draw(rng, shape, I1), draw(rng, shape, dtype, -9, 9), draw(rng, shape, dtype, -9, 9)
    want = [x if k else y for k, x, y in zip(c.ravel(), a.ravel(), b.ravel(), strict=True)]
    got = run_op("accy.select", [c, a, b], shape, dtype)
    np.testing.assert_array_equal(got.ravel(), np.array(want, dtype=dtype))


@pytest.mark.parametrize(
    ("src", "dst", "values", "want"),
    [
        (
            F32,
            I32,
            [1.9, -1.9, 0.5, -0.5, 3e9, -3e9, np.nan, np.inf, -np.inf],
            [1, -1, 0, 0, 2**31 - 1, -(2**31), 0, 2**31 - 1, -(2**31)],
        ),
        (F64, np.int64, [2.5, -2.5, 1e19, -1e19], [2, -2, 2**63 - 1, -(2**63)]),
        (F32, I1, [0.0, -0.0, 0.5, np.nan, -2.0], [False, False, True, True, True]),
        (I32, I1, [0, 1, -3], [False, True, True]),
        (I1, F32, [True, False], [1.0, 0.0]),
        (I1, I32, [True, False], [1, 0]),
        (I32, F32, [-7, 16777217, 3], [-7.0, 16777216.0, 3.0]),
        (I32, np.int8, [127, 128, -129, 300], [127, -128, 127, 44]),
        (F32, F16, [1.0, 65504.0, 1e6], [1.0, 65504.0, np.inf]),
        (F16, F64, [0.1], [float(np.float16(0.1))]),
    ],
)
def test_cast(src: type, dst: type, values: list, want: list) -> None:
    x = np.array(values, dtype=src)
    np.testing.assert_array_equal(run_op("accy.cast", [x], x.shape, dst), np.array(want, dtype=dst))


@FAST
@given(shape=shapes, seed=seeds)
def test_cast_float_to_int_truncates_toward_zero(shape: tuple[int, ...], seed: int) -> None:
    x = draw(np.random.default_rng(seed), shape, F32, -1000, 1000)
    want = np.array([math.trunc(float(v)) for v in x.ravel()], dtype=I32).reshape(shape)
    np.testing.assert_array_equal(run_op("accy.cast", [x], shape, I32), want)


# --------------------------------------------------------------------------
# Shape ops
# --------------------------------------------------------------------------


@FAST
@given(shape=shapes, seed=seeds, data=st.data())
def test_reshape(shape: tuple[int, ...], seed: int, data: st.DataObject) -> None:
    x = draw(np.random.default_rng(seed), shape, F32)
    flat = x.ravel().tolist()
    # a random factorisation of the size into at most 3 dims (row-major).
    n, out = len(flat), []
    while n > 1 and len(out) < 2:
        d = data.draw(st.sampled_from([f for f in range(1, n + 1) if n % f == 0]))
        out.append(d)
        n //= d
    out.append(n)
    got = run_op("accy.reshape", [x], tuple(out), F32)
    assert got.ravel().tolist() == flat


@FAST
@given(shape=shapes, seed=seeds, data=st.data())
def test_transpose(shape: tuple[int, ...], seed: int, data: st.DataObject) -> None:
    x = draw(np.random.default_rng(seed), shape, I32, -50, 50)
    perm = data.draw(st.permutations(range(len(shape))))
    letters = "abc"[: len(shape)]
    want = np.einsum(f"{letters}->{''.join(letters[p] for p in perm)}", x)
    got = run_op("accy.transpose", [x], tuple(shape[p] for p in perm), I32, f"permutation = {i64s(perm)}")
    np.testing.assert_array_equal(got, want)


@FAST
@given(out=nonscalar_shapes, seed=seeds, data=st.data())
def test_broadcast(out: tuple[int, ...], seed: int, data: st.DataObject) -> None:
    dims = sorted(data.draw(st.sets(st.sampled_from(range(len(out))))))
    shape = tuple(data.draw(st.sampled_from([1, out[d]])) for d in dims)
    x = draw(np.random.default_rng(seed), shape, F32)
    got = run_op("accy.broadcast", [x], out, F32, f"dims = {i64s(dims)}")
    for idx in np.ndindex(*out):
        src = tuple(0 if shape[i] == 1 else idx[d] for i, d in enumerate(dims))
        assert got[idx] == x[src]


@FAST
@given(shape=nonscalar_shapes, seed=seeds, data=st.data())
def test_slice(shape: tuple[int, ...], seed: int, data: st.DataObject) -> None:
    x = draw(np.random.default_rng(seed), shape, I32, -99, 99)
    start, limit, stride = [], [], []
    for n in shape:
        a = data.draw(st.integers(0, n))
        start.append(a)
        limit.append(data.draw(st.integers(a, n)))
        stride.append(data.draw(st.integers(1, 4)))
    ranges = [list(range(a, b, s)) for a, b, s in zip(start, limit, stride, strict=True)]
    want = np.array([x[idx] for idx in itertools.product(*ranges)], dtype=I32).reshape([len(r) for r in ranges])
    props = f"start = {i64s(start)}, limit = {i64s(limit)}, stride = {i64s(stride)}"
    np.testing.assert_array_equal(run_op("accy.slice", [x], want.shape, I32, props), want)


@FAST
@given(shape=nonscalar_shapes, seed=seeds, data=st.data())
def test_concat(shape: tuple[int, ...], seed: int, data: st.DataObject) -> None:
    rng = np.random.default_rng(seed)
    axis = data.draw(st.integers(-len(shape), len(shape) - 1))
    parts = []
    for _ in range(data.draw(st.integers(1, 3))):
        s = list(shape)
        s[axis] = data.draw(dims)
        parts.append(draw(rng, tuple(s), I1))
    out = list(shape)
    out[axis] = sum(p.shape[axis] for p in parts)
    got = run_op("accy.concat", parts, tuple(out), I1, f"axis = {axis} : i64")
    offset = 0
    for p in parts:
        index = [slice(None)] * len(shape)
        index[axis] = slice(offset, offset + p.shape[axis])
        np.testing.assert_array_equal(got[tuple(index)], p)
        offset += p.shape[axis]


# --------------------------------------------------------------------------
# dot_general, reductions, scans
# --------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [F32, I32])
@FAST
@given(seed=seeds, data=st.data())
def test_dot_general(dtype: type, seed: int, data: st.DataObject) -> None:
    rng = np.random.default_rng(seed)
    n_batch, n_contract = data.draw(st.integers(0, 1)), data.draw(st.integers(1, 2))
    n_free_a, n_free_b = data.draw(st.integers(0, 1)), data.draw(st.integers(0, 1))
    batch = [data.draw(dims) for _ in range(n_batch)]
    contract = [data.draw(dims) for _ in range(n_contract)]
    # Each operand's dims in a random order: role lists of (kind, index).
    roles_a = data.draw(
        st.permutations(
            [("b", i) for i in range(n_batch)]
            + [("c", i) for i in range(n_contract)]
            + [("f", i) for i in range(n_free_a)]
        )
    )
    roles_b = data.draw(
        st.permutations(
            [("b", i) for i in range(n_batch)]
            + [("c", i) for i in range(n_contract)]
            + [("f", i) for i in range(n_free_b)]
        )
    )
    free_a, free_b = [data.draw(dims) for _ in range(n_free_a)], [data.draw(dims) for _ in range(n_free_b)]

    def layout(roles: list, free: list) -> tuple[tuple[int, ...], str]:
        sizes = {"b": batch, "c": contract, "f": free}
        letter = {"b": "bd", "c": "kl", "f": "mn" if free is free_a else "pq"}
        return tuple(sizes[k][i] for k, i in roles), "".join(letter[k][i] for k, i in roles)

    shape_a, sub_a = layout(roles_a, free_a)
    shape_b, sub_b = layout(roles_b, free_b)
    a, b = draw(rng, shape_a, dtype, -5, 5), draw(rng, shape_b, dtype, -5, 5)
    out_sub = "bd"[:n_batch] + "mn"[:n_free_a] + "pq"[:n_free_b]
    want = np.einsum(f"{sub_a},{sub_b}->{out_sub}", a.astype(np.float64), b.astype(np.float64))

    def where(roles: list, kind: str, n: int) -> list[int]:
        return [roles.index((kind, i)) for i in range(n)]

    props = (
        f"lhs_batch = {i64s(where(roles_a, 'b', n_batch))}, rhs_batch = {i64s(where(roles_b, 'b', n_batch))}, "
        f"lhs_contract = {i64s(where(roles_a, 'c', n_contract))}, rhs_contract = {i64s(where(roles_b, 'c', n_contract))}"
    )
    got = run_op("accy.dot_general", [a, b], want.shape, dtype, props)
    close(got, want, rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize("dtype", [F32, I32])
@FAST
@given(shape=nonscalar_shapes, seed=seeds, data=st.data())
def test_reduce(dtype: type, shape: tuple[int, ...], seed: int, data: st.DataObject) -> None:
    kinds = ["sum", "prod", "max", "min"] + (["mean"] if dtype is F32 else [])
    kind = data.draw(st.sampled_from(kinds))
    axes = data.draw(st.lists(st.integers(0, len(shape) - 1), unique=True))
    signed_axes = [a - len(shape) if data.draw(st.booleans()) else a for a in axes]  # negative axes
    x = draw(np.random.default_rng(seed), shape, dtype, 0.5 if kind == "prod" else -9, 1.5 if kind == "prod" else 9)
    keep = tuple(n for d, n in enumerate(shape) if d not in axes)
    got = run_op("accy.reduce", [x], keep, dtype, f'kind = "{kind}", axes = {i64s(signed_axes)}')
    # Python numbers over the reduced elements of each kept index.
    fn = {"sum": sum, "prod": math.prod, "max": max, "min": min, "mean": lambda v: sum(v) / len(v)}[kind]
    number = int if dtype is I32 else float
    grouped = np.moveaxis(x, axes, list(range(len(axes)))).reshape(math.prod(shape[a] for a in axes), *keep)
    want = np.empty(keep, dtype=object)
    for idx in np.ndindex(*keep):
        want[idx] = fn([number(v) for v in grouped[(slice(None), *idx)]])
    if dtype is I32:
        np.testing.assert_array_equal(got.astype(np.int64), wrap32(want))
    elif kind in ("sum", "mean"):
        # float32 summation of n terms errs by up to ~n·eps·Σ|x| (cancellation):
        # bound each result by its own terms, not by one fixed atol.
        n = max(grouped.shape[0], 1)
        scale = np.abs(grouped).astype(np.float64).sum(axis=0) / (n if kind == "mean" else 1)
        bound = 2e-5 + 2e-5 * np.abs(want.astype(np.float64)) + n * np.finfo(np.float32).eps * scale
        assert np.all(np.abs(got.astype(np.float64) - want.astype(np.float64)) <= bound)
    else:
        close(got, want.astype(np.float64), rtol=2e-5, atol=2e-5)


def _scan_reference(x: np.ndarray, kind: str, axis: int, exclusive: bool, reverse: bool) -> np.ndarray:
    """A Python loop over the scanned axis, in float64 / Python ints."""
    moved = np.moveaxis(x, axis, -1)
    out = np.empty(moved.shape, dtype=object)
    ident = {"sum": 0, "prod": 1, "max": -math.inf, "min": math.inf}[kind]
    if x.dtype.kind == "i" and kind in ("max", "min"):
        ident = int(np.iinfo(x.dtype).min if kind == "max" else np.iinfo(x.dtype).max)
    combine = {"sum": lambda a, b: a + b, "prod": lambda a, b: a * b, "max": max, "min": min}[kind]
    n = moved.shape[-1]
    for row in np.ndindex(*moved.shape[:-1]):
        acc = ident
        order = range(n - 1, -1, -1) if reverse else range(n)
        for j in order:
            v = moved[row + (j,)].item()
            if exclusive:
                out[row + (j,)] = acc
                acc = combine(acc, v)
            else:
                acc = combine(acc, v)
                out[row + (j,)] = acc
    return np.moveaxis(out, -1, axis)


@pytest.mark.parametrize("dtype", [F32, I32])
@FAST
@given(shape=nonscalar_shapes, seed=seeds, data=st.data())
def test_scan(dtype: type, shape: tuple[int, ...], seed: int, data: st.DataObject) -> None:
    kind = data.draw(st.sampled_from(["sum", "prod", "max", "min"]))
    axis = data.draw(st.integers(-len(shape), len(shape) - 1))
    exclusive, reverse = data.draw(st.booleans()), data.draw(st.booleans())
    lo, hi = (0.8, 1.25) if kind == "prod" and dtype is F32 else (-3, 3) if kind == "prod" else (-9, 9)
    x = draw(np.random.default_rng(seed), shape, dtype, lo, hi)
    props = (
        f'kind = "{kind}", axis = {axis} : i64, exclusive = {str(exclusive).lower()}, reverse = {str(reverse).lower()}'
    )
    got = run_op("accy.scan", [x], shape, dtype, props)
    want = _scan_reference(x, kind, axis, exclusive, reverse)
    if dtype is I32:
        np.testing.assert_array_equal(got.astype(np.int64), wrap32(want))
    else:
        close(got, want.astype(np.float64), rtol=2e-5, atol=2e-5)


def test_exclusive_scan_identities() -> None:
    x = np.array([[3.0, -1.0, 2.0]], dtype=F32)
    cases = {"sum": [0, 3, 2], "prod": [1, 3, -3], "max": [-np.inf, 3, 3], "min": [np.inf, 3, -1]}
    for kind, want in cases.items():
        props = f'kind = "{kind}", axis = 1 : i64, exclusive = true'
        np.testing.assert_array_equal(run_op("accy.scan", [x], (1, 3), F32, props), [want])
    props = 'kind = "max", axis = 0 : i64, exclusive = true, reverse = true'
    xi = np.array([4, 9, 1], dtype=I32)
    np.testing.assert_array_equal(run_op("accy.scan", [xi], (3,), I32, props), [9, 1, -(2**31)])


# --------------------------------------------------------------------------
# softmax, layer_norm, attention
# --------------------------------------------------------------------------


def _softmax64(x: np.ndarray, axis: int) -> np.ndarray:
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


@pytest.mark.parametrize("op", ["softmax", "log_softmax"])
@FAST
@given(shape=nonscalar_shapes, seed=seeds, data=st.data())
def test_softmax(op: str, shape: tuple[int, ...], seed: int, data: st.DataObject) -> None:
    axis = data.draw(st.integers(-len(shape), len(shape) - 1))
    # Large magnitudes: a naive exp would overflow float32.
    x = draw(np.random.default_rng(seed), shape, F32, -200, 200)
    got = run_op(f"accy.{op}", [x], shape, F32, f"axis = {axis} : i64")
    p = _softmax64(x.astype(np.float64), axis)
    if op == "softmax":
        close(got, p, rtol=1e-5, atol=1e-7)
    else:
        x64 = x.astype(np.float64)
        m = x64.max(axis=axis, keepdims=True)
        close(got, x64 - m - np.log(np.exp(x64 - m).sum(axis=axis, keepdims=True)), rtol=1e-5, atol=1e-4)


@FAST
@given(shape=nonscalar_shapes, seed=seeds, eps=st.sampled_from([1e-5, 1e-3, 0.5]))
def test_layer_norm(shape: tuple[int, ...], seed: int, eps: float) -> None:
    rng = np.random.default_rng(seed)
    x, gamma, beta = draw(rng, shape, F32, -4, 6), draw(rng, shape[-1:], F32), draw(rng, shape[-1:], F32)
    got = run_op("accy.layer_norm", [x, gamma, beta], shape, F32, f"epsilon = {eps:e} : f32")
    x64 = x.astype(np.float64)
    want = (x64 - x64.mean(-1, keepdims=True)) / np.sqrt(x64.var(-1, keepdims=True) + np.float32(eps)) * gamma + beta
    close(got, want, rtol=1e-4, atol=1e-4)


@FAST
@given(seed=seeds, data=st.data())
def test_attention(seed: int, data: st.DataObject) -> None:
    rng = np.random.default_rng(seed)
    batch = tuple(data.draw(st.lists(st.sampled_from([1, 2, 3]), max_size=2)))
    sq, sk, d, dv = (data.draw(dims) for _ in range(4))
    causal = data.draw(st.booleans())
    scale = data.draw(st.sampled_from([0.125, 0.5, 1.0]))
    q, k, v = (draw(rng, (*batch, s, e), F32) for s, e in ((sq, d), (sk, d), (sk, dv)))
    props = f"scale = {scale} : f32, causal = {str(causal).lower()}"
    got = run_op("accy.attention", [q, k, v], (*batch, sq, dv), F32, props)
    want = np.empty((*batch, sq, dv))
    for b in np.ndindex(*batch):
        for i in range(sq):
            keys = range(min(i + 1, sk) if causal else sk)
            s = np.array([scale * sum(float(q[b + (i, c)]) * float(k[b + (j, c)]) for c in range(d)) for j in keys])
            p = np.exp(s - s.max())
            p /= p.sum()
            want[b + (i,)] = sum(p[j] * v[b + (j,)].astype(np.float64) for j in keys)
    close(got, want, rtol=1e-4, atol=1e-5)


# --------------------------------------------------------------------------
# iterate, calls, constants, kernel_call
# --------------------------------------------------------------------------

ITERATE = """
func.func @main(%x: tensor<3xf32>, %y: tensor<3xf32>) -> (tensor<3xf32>, tensor<3xf32>) {{
  %r:2 = "accy.iterate"(%x, %y) <{{count = {count} : i64}}> ({{
  ^bb0(%a: tensor<3xf32>, %b: tensor<3xf32>):
    %s = "accy.add"(%a, %b) : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
    %m = "accy.mul"(%b, %x) : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
    "accy.yield"(%s, %m) : (tensor<3xf32>, tensor<3xf32>) -> ()
  }}) : (tensor<3xf32>, tensor<3xf32>) -> (tensor<3xf32>, tensor<3xf32>)
  func.return %r#0, %r#1 : tensor<3xf32>, tensor<3xf32>
}}
"""


@pytest.mark.parametrize("count", [0, 1, 5])
def test_iterate(count: int) -> None:
    x, y = np.array([1.0, -0.5, 2.0], F32), np.array([0.5, 3.0, -1.0], F32)
    got_a, got_b = run(parse(ITERATE.format(count=count)), "main", x, y)
    a, b = x.astype(np.float64), y.astype(np.float64)
    for _ in range(count):
        a, b = a + b, b * x  # the body reads %x from outside the region
    close(got_a, a)
    close(got_b, b)


def test_iterate_with_evaluate_op() -> None:
    """evaluate_op runs a region whose only outside value is a constant, and
    names the problem when the region reads any other outside value."""
    block_module = parse(ITERATE.format(count=2))
    iterate = next(op for op in block_module.walk() if isinstance(op, IterateOp))
    with pytest.raises(ValueError, match="defined outside"):
        evaluate_op(iterate, [np.ones(3, F32), np.ones(3, F32)])

    from xdsl.ir import Block, Region

    c = ConstantOp(numpy_to_dense(np.array([2.0, 3.0], F32)))
    body = Block(arg_types=[c.result.type])
    body.add_ops([s := AddOp(body.args[0], c.result), YieldOp([s])])
    loop = IterateOp([c.result], 3, Region(body))
    (out,) = evaluate_op(loop, [np.array([1.0, 1.0], F32)])
    np.testing.assert_array_equal(out, [7.0, 10.0])


def test_func_call_and_constants() -> None:
    module = parse(
        """
        func.func @main(%x: tensor<2x2xf32>) -> (tensor<2x2xf32>, tensor<3xi1>, tensor<2xi32>) {
          %c = "accy.constant"() <{value = dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xf32>}> : () -> tensor<2x2xf32>
          %m = "accy.constant"() <{value = dense<[true, false, true]> : tensor<3xi1>}> : () -> tensor<3xi1>
          %s = "accy.constant"() <{value = dense<-7> : tensor<2xi32>}> : () -> tensor<2xi32>
          %y = func.call @scaled(%x, %c) : (tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<2x2xf32>
          func.return %y, %m, %s : tensor<2x2xf32>, tensor<3xi1>, tensor<2xi32>
        }
        func.func private @scaled(%a: tensor<2x2xf32>, %b: tensor<2x2xf32>) -> tensor<2x2xf32> {
          %p = "accy.mul"(%a, %b) : (tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<2x2xf32>
          %e = "accy.exp"(%p) : (tensor<2x2xf32>) -> tensor<2x2xf32>
          func.return %e : tensor<2x2xf32>
        }
        """
    )
    x = np.array([[0.5, -1.0], [0.25, 0.0]], F32)
    y, m, s = run(module, "main", x)
    close(y, np.exp(x.astype(np.float64) * [[1, 2], [3, 4]]))
    assert m.dtype == np.bool_ and m.tolist() == [True, False, True]
    assert s.dtype == np.int32 and s.tolist() == [-7, -7]


def test_results_do_not_alias_inputs() -> None:
    module = op_module("accy.reshape", [np.zeros((2, 3), F32)], ttype((6,), F32))
    x = np.arange(6, dtype=F32).reshape(2, 3)
    (out,) = run(module, "main", x)
    out[0] = 99.0
    assert x[0, 0] == 0.0


KERNEL_CALL = """
func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %r = "accy.kernel_call"(%x) <{callee = @kernels::@my_kernel SIZES}> : (tensor<4xf32>) -> tensor<4xf32>
  func.return %r : tensor<4xf32>
}
"gpu.module"() <{sym_name = "kernels"}> ({
  "gpu.func"() <{function_type = (memref<4xf32>, memref<4xf32>) -> (), kernel}> ({
  ^bb0(%in: memref<4xf32>, %out: memref<4xf32>):
    %i = "gpu.global_id"() <{dimension = #gpu<dim x>}> : () -> index
    %v = memref.load %in[%i] : memref<4xf32>
    %e = math.exp %v : f32
    memref.store %e, %out[%i] : memref<4xf32>
    "gpu.return"() : () -> ()
  }) {sym_name = "my_kernel"} : () -> ()
}) : () -> ()
"""


def test_kernel_call_runs_the_kernel_ir() -> None:
    """The reference interpreter runs a custom kernel's IR (kernel_interpreter.py)."""
    module = parse(KERNEL_CALL.replace("SIZES", ", global_size = array<i64: 4>"))
    x = np.linspace(-1, 1, 4).astype(F32)
    (r,) = run(module, "main", x)
    np.testing.assert_allclose(r, np.exp(x), rtol=1e-6)
    without_sizes = parse(KERNEL_CALL.replace("SIZES", ""))
    with pytest.raises(ValueError, match="states no launch size"):
        run(without_sizes, "main", x)
    past_the_end = parse(KERNEL_CALL.replace("SIZES", ", global_size = array<i64: 5>"))
    with pytest.raises(ValueError, match=r"kernel @my_kernel: 'memref.load' of buffer #0 \(memref<4xf32>\) at index 4: out of bounds"):
        run(past_the_end, "main", x)


# --------------------------------------------------------------------------
# evaluate_op and errors
# --------------------------------------------------------------------------


def test_evaluate_op_matches_numpy_and_keeps_dtype() -> None:
    c = ConstantOp(numpy_to_dense(np.array([0.0, 1.0], F32)))
    (out,) = evaluate_op(ExpOp(c.result), [[0.0, 1.0]])  # a list is converted to f32
    assert out.dtype == np.float32
    np.testing.assert_array_equal(out, np.exp(np.array([0.0, 1.0], F32)))
    with pytest.raises(ValueError, match="'accy.exp' takes 1 operand"):
        evaluate_op(ExpOp(c.result), [])
    with pytest.raises(ValueError, match=r"operand #0 of 'accy.exp' must have shape \(2,\), got \(3,\)"):
        evaluate_op(ExpOp(c.result), [np.zeros(3, F32)])


def test_every_dialect_op_has_semantics() -> None:
    """A new op in the dialect must be given reference semantics."""
    from accy.dialects.accy import Accy
    from accy.reference.interpreter import _SEMANTICS

    structural = {"accy.iterate", "accy.yield", "accy.kernel_call"}
    missing = [op.name for op in Accy.operations if op not in _SEMANTICS and op.name not in structural]
    assert not missing, f"no reference semantics for {missing}"


def test_evaluate_op_rejects_unknown_ops() -> None:
    from xdsl.dialects.arith import ConstantOp as ArithConstant

    op = ArithConstant(numpy_to_dense(np.zeros(2, F32)))
    with pytest.raises(ValueError, match="no semantics for 'arith.constant'"):
        evaluate_op(op, [])


SIGNATURE = """
func.func @main(%x: tensor<3x4xf32>, %m: tensor<4xi1>) -> tensor<3x4xf32> {
  func.return %x : tensor<3x4xf32>
}
"""


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ((np.zeros((3, 4), F32),), r"@main takes 2 argument\(s\) \(tensor<3x4xf32>, tensor<4xi1>\), got 1"),
        (
            (np.zeros(4, F64), np.zeros(4, I1)),
            r"argument #0 of @main expects tensor<3x4xf32> \(float32, shape \(3, 4\)\), got float64 array of shape \(4,\)",
        ),
        (
            (np.zeros((3, 4), F32), np.zeros(4, I32)),
            r"argument #1 of @main expects tensor<4xi1> \(bool, shape \(4,\)\), got int32 array",
        ),
        ((np.zeros((3, 4), F32), [True] * 4), r"argument #1 of @main expects tensor<4xi1> .*got list"),
    ],
)
def test_argument_errors(args: tuple, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        run(parse(SIGNATURE), "main", *args)


def test_unknown_function() -> None:
    with pytest.raises(ValueError, match=r"no function @nope \(functions: @main\)"):
        run(parse(SIGNATURE), "nope")


# --------------------------------------------------------------------------
# dtype helpers
# --------------------------------------------------------------------------

ELEMENT_TYPES = [
    (Float16Type(), F16),
    (Float32Type(), F32),
    (Float64Type(), F64),
    (IntegerType(1), I1),
    (IntegerType(8), np.int8),
    (IntegerType(16), np.int16),
    (IntegerType(32), I32),
    (IntegerType(64), np.int64),
]


@pytest.mark.parametrize(("element_type", "dtype"), ELEMENT_TYPES)
def test_dtype_mapping_and_dense_round_trip(element_type, dtype: type) -> None:
    assert numpy_dtype(element_type) == np.dtype(dtype)
    assert element_type_for_dtype(np.dtype(dtype)) == element_type
    values = draw(np.random.default_rng(0), (3, 5), dtype, -100, 100)
    attr = numpy_to_dense(values, element_type)
    assert attr.type == TensorType(element_type, [3, 5])
    back = dense_to_numpy(attr)
    assert back.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(back, values)
    # The same bytes as the attribute xDSL parses from text.
    literal = (
        "["
        + ", ".join(
            ("true" if v else "false") if dtype is I1 else repr(float(v) if np.dtype(dtype).kind == "f" else int(v))
            for v in values.ravel()
        )
        + "]"
    )
    parsed = Parser(CTX, f"dense<{literal}> : tensor<15x{_ELEM[np.dtype(dtype).type]}>").parse_attribute()
    assert isinstance(parsed, DenseIntOrFPElementsAttr)
    assert parsed.data == numpy_to_dense(values.ravel(), element_type).data


def test_dense_splats_and_scalars() -> None:
    splat = Parser(CTX, "dense<true> : tensor<2x3xi1>").parse_attribute()
    assert dense_to_numpy(splat).tolist() == [[True] * 3] * 2
    scalar = Parser(CTX, "dense<2.5> : tensor<f32>").parse_attribute()
    out = dense_to_numpy(scalar)
    assert out.shape == () and out.dtype == np.float32 and out == 2.5
    assert numpy_to_dense(np.float64(1.5)).type == TensorType(Float64Type(), [])


def test_dtype_helper_errors() -> None:
    with pytest.raises(ValueError, match="uint8 has no accy element type"):
        element_type_for_dtype(np.uint8)
    with pytest.raises(ValueError, match="ui32 has no numpy counterpart"):
        numpy_dtype(IntegerType(32, Signedness.UNSIGNED))
    with pytest.raises(ValueError, match="i7 has no numpy counterpart"):
        numpy_dtype(IntegerType(7))
