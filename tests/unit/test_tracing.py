"""Tracing (accy/frontends/tracing.py) and `accy.jit` (accy/jit.py): numpy
programs traced, compiled and run on the reference, LLVM and OpenCL devices,
compared with numpy itself on random inputs.

The programs are written once: `accy.numpy`'s functions are numpy's own when
no argument is traced, so each test calls the same Python function on numpy
arrays (numpy's answer) and through `accy.jit` (accy's), and compares values
and dtypes. Sizes are odd and degenerate (1, 3, 17, a 0-length dim where the
op allows one); broadcasting cases include those a matcher could confuse
(square shapes, size-1 dims). Also: numpy 2's weak Python scalars, the
retrace counter (a new shape, dtype or static argument traces again; nothing
else does), Python control flow on traced values and unsupported functions
as errors naming the file and line, accy.Array inputs and outputs, nested
and numpy-dispatched calls, and docs/tracing.md's example.
"""

from __future__ import annotations

import math
import re
import warnings
from pathlib import Path

import numpy as np
import pytest

import accy
import accy.numpy as anp
from accy.frontends import tracing
from accy.frontends.tracing import ShapeDtype, TracerConversionError, UnsupportedError

# PoCL builds each traced program in ~1-3 s: make test runs a fixed quarter
# of the OpenCL cases (`sampled`, tests/conftest.py), make conformance all.
DEVICES = ["reference", "llvm", pytest.param("opencl", marks=pytest.mark.sampled)]
# (rtol, atol) by dtype: the op contract's device tolerances, f16 widened
# for sums over 17 elements rounded once.
TOLERANCE = {np.dtype(np.float16): (2e-2, 2e-2), np.dtype(np.float32): (1e-3, 1e-4), np.dtype(np.float64): (1e-9, 1e-12)}


@pytest.fixture(scope="module", params=DEVICES)
def device(request: pytest.FixtureRequest) -> str:
    name = request.param
    if name == "opencl":
        pytest.importorskip("pyopencl")
    if name == "llvm":
        pytest.importorskip("llvmlite.binding")
    try:
        accy.get_device(name)
    except ValueError as e:
        pytest.skip(str(e))
    return name


def rand(shape: tuple[int, ...], dtype: object, seed: int = 0, low: int = -5, high: int = 6) -> np.ndarray:
    rng = np.random.default_rng(seed)
    dt = np.dtype(dtype)
    if dt == np.bool_:
        return np.asarray(rng.integers(0, 2, size=shape)).astype(bool)
    if dt.kind == "i":
        return np.asarray(rng.integers(low, high, size=shape)).astype(dt)
    return np.asarray(rng.standard_normal(shape)).astype(dt)


def numpy_result(fn, *args, **kwargs):
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore", RuntimeWarning)
        return fn(*args, **kwargs)


def assert_same(got, want, where: str = "") -> None:
    """got (accy's) equals want (numpy's): nesting, dtype, shape, and the
    values (exactly for integers and bools, within TOLERANCE for floats)."""
    if isinstance(want, tuple | list):
        assert isinstance(got, type(want)) and len(got) == len(want), where
        for i, (g, w) in enumerate(zip(got, want, strict=True)):
            assert_same(g, w, f"{where}[{i}]")
        return
    want = np.asarray(want)
    got = np.asarray(got)
    assert got.dtype == want.dtype, f"{where}: dtype {got.dtype}, numpy's {want.dtype}"
    assert got.shape == want.shape, f"{where}: shape {got.shape}, numpy's {want.shape}"
    if want.dtype.kind == "f":
        rtol, atol = TOLERANCE[want.dtype]
        np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=rtol, atol=atol, err_msg=where)
    else:
        np.testing.assert_array_equal(got, want, err_msg=where)


def check(fn, *args, device: str = "reference", **jit_options) -> accy.jit:
    """fn traced and run on `device` gives what fn gives on numpy arrays."""
    jitted = accy.jit(fn, device=device, **jit_options)
    assert_same(jitted(*args), numpy_result(fn, *args), getattr(fn, "__name__", "fn"))
    return jitted


# --------------------------------------------------------------------------
# Elementwise ops, dtypes and sizes, on every device
# --------------------------------------------------------------------------

SIZES = [(1,), (3,), (17,), (0,), (3, 17)]


def arithmetic(x, y):
    return (
        x + y, x - y, x * y, x / y, -x, abs(x), x > y, x <= y, x == y, x != y,
        anp.maximum(x, y), anp.minimum(x, y), anp.where(x > y, x, y), x * 3 - 2, 1 - x, x ** 2,
    )  # fmt: skip


def floats_only(x):
    return anp.exp(x), anp.log(abs(x) + 0.5), anp.tanh(x), anp.sqrt(abs(x)), anp.sin(x), anp.cos(x), x / 0.5, x ** 0.5


def integers_only(x, y):
    return x // y, x % y, x & y, x | y, x ^ y, ~x, anp.floor(x), x ** 3


def booleans(x, y):
    return x + y, x * y, x & y, x | y, x ^ y, ~x, x == y, x < y, anp.maximum(x, y), anp.minimum(x, y), anp.logical_not(x), x + 1


@pytest.mark.parametrize("shape", SIZES, ids=str)
@pytest.mark.parametrize("dtype", ["float16", "float32", "float64", "int8", "int32", "int64"])
def test_arithmetic_matches_numpy(device: str, dtype: str, shape: tuple[int, ...]) -> None:
    check(arithmetic, rand(shape, dtype, 1), rand(shape, dtype, 2), device=device)


@pytest.mark.parametrize("shape", [(1,), (17,), (0,)], ids=str)
@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
def test_float_functions_match_numpy(device: str, dtype: str, shape: tuple[int, ...]) -> None:
    check(floats_only, rand(shape, dtype, 3), device=device)


@pytest.mark.parametrize("dtype", ["int8", "int16", "int32", "int64"])
def test_integer_division_remainder_and_bits_match_numpy(device: str, dtype: str) -> None:
    x = rand((3, 17), dtype, 4, -9, 10)
    y = rand((3, 17), dtype, 5, -3, 4)  # zeros included: numpy's x // 0 and x % 0 are 0
    x[0, :2], y[0, :2] = np.iinfo(dtype).min, -1
    check(integers_only, x, y, device=device)


@pytest.mark.parametrize("shape", [(1,), (17,), (0,)], ids=str)
def test_booleans_match_numpy(device: str, shape: tuple[int, ...]) -> None:
    check(booleans, rand(shape, bool, 6), rand(shape, bool, 7), device=device)


def test_integer_inputs_to_transcendental_functions_take_numpys_float_dtype() -> None:
    def f(a, b, c):
        return anp.exp(a), anp.sqrt(b), anp.tanh(c), a / a

    a, b, c = rand((5,), "int8", 1, 1, 4), rand((5,), "int16", 2, 0, 9), rand((5,), "int32", 3)
    got = check(f, a, b, c)(a, b, c)
    assert [g.dtype for g in got] == [np.float16, np.float32, np.float64, np.float64]
    assert accy.jit(anp.softmax)(c).dtype == np.float64


def test_casts_match_numpy(device: str) -> None:
    def f(x, i, b):
        return x.astype(np.int32), x.astype(np.float16), x.astype(bool), i.astype(np.int8), i.astype(np.float64), b.astype(np.int16), anp.astype(i, np.float32)

    x = (rand((17,), np.float32, 1) * 50).astype(np.float32)
    i = rand((17,), np.int64, 2, -1000, 1000)
    check(f, x, i, rand((17,), bool, 3), device=device)


# --------------------------------------------------------------------------
# Broadcasting by numpy's rules, made explicit
# --------------------------------------------------------------------------

BROADCASTS = [
    ((3, 3), (3,)),  # square: the row vector goes along dim 1, not 0
    ((3, 3), (3, 1)),  # square with a column
    ((1, 3), (3, 1)),  # both sides grow
    ((3, 1, 4), (1, 5, 1)),
    ((4,), (1,)),
    ((), (3,)),
    ((2, 3, 3), (3, 3)),
    ((1, 1), (1,)),
    ((0, 3), (3,)),
    ((2, 0), (1, 1)),
    ((17, 1), (1, 17)),
]


def broadcasting(x, y):
    return x + y, x * y, anp.where(x > y, x, y), x - y.mean(), anp.maximum(x, 0.5)


@pytest.mark.parametrize(("sx", "sy"), BROADCASTS, ids=str)
def test_broadcasting_matches_numpy(device: str, sx: tuple[int, ...], sy: tuple[int, ...]) -> None:
    check(broadcasting, rand(sx, np.float32, 1), rand(sy, np.float32, 2), device=device)
    check(broadcasting, rand(sy, np.float32, 3), rand(sx, np.float32, 4), device=device)


def test_broadcast_ops_are_explicit_and_named_by_numpys_rule() -> None:
    text = accy.jit(lambda x, b: x + b).lower(np.zeros((3, 3), np.float32), np.zeros(3, np.float32)).as_text()
    assert "accy.broadcast %b {dims = array<i64: 1>} : tensor<3xf32> -> tensor<3x3xf32>" in text
    text = accy.jit(lambda x, c: x * c).lower(np.zeros((3, 3), np.float32), np.zeros((3, 1), np.float32)).as_text()
    assert "accy.broadcast %c {dims = array<i64: 0, 1>} : tensor<3x1xf32> -> tensor<3x3xf32>" in text


def test_incompatible_shapes_are_numpys_error_at_the_users_line() -> None:
    def f(x, y):
        return x + y

    with pytest.raises(ValueError, match=rf"{re.escape(__file__)}:{f.__code__.co_firstlineno + 1}: operands could not be broadcast together with shapes \(2, 3\) \(4,\)"):
        accy.jit(f).lower(np.zeros((2, 3), np.float32), np.zeros(4, np.float32))


# --------------------------------------------------------------------------
# dtypes: numpy's promotion, Python scalars weak
# --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("dtype", "expr"),
    [
        ("float16", lambda x: x * 2.0),  # f16: a Python float does not widen it
        ("float16", lambda x: x + 1),
        ("int8", lambda x: x + 1),  # i8 stays i8
        ("int8", lambda x: x + 1.5),  # a float scalar with an integer array: float64
        ("int8", lambda x: x * True),
        ("bool", lambda x: x + 1),  # bool with an int: int64
        ("bool", lambda x: x * 1.5),
        ("int32", lambda x: x / 2),
        ("float32", lambda x: x + np.float64(1.0)),  # numpy scalars are strong
        ("float32", lambda x: x + np.array(1.0)),  # so are 0-d arrays
        ("float32", lambda x: x + np.int64(1)),
        ("int16", lambda x: x + np.ones(3, np.int8)),
        ("float16", lambda x: x + np.ones(3, np.int8)),
        ("float16", lambda x: x + np.ones(3, np.int32)),
        ("int32", lambda x: x + np.ones(3, np.float32)),
        ("int64", lambda x: 2 ** x),
        ("float32", lambda x: anp.where(x > 0, x, 0.0)),
        ("float16", lambda x: anp.where(x > 0, x, 1)),
        ("int8", lambda x: anp.maximum(x, 3)),
    ],
)
def test_promotion_and_weak_scalars_follow_numpy_2(dtype: str, expr) -> None:
    x = rand((3,), dtype, 1, 0, 4)
    got = accy.jit(expr)(x)
    want = numpy_result(expr, x)
    assert got.dtype == want.dtype
    assert_same(got, want)


def test_python_scalar_arguments_are_weak(device: str) -> None:
    def f(x, s, n):
        return x * s, x + n, s * 2 + x, x * anp.exp(s), s + n

    x = rand((4,), np.float32, 1)
    f_jit = check(f, x, 0.5, 3, device=device)
    got = f_jit(x, 0.5, 3)
    assert [g.dtype for g in got] == [np.float32, np.float32, np.float32, np.float64, np.float64]
    # Another value of the same Python types: the same signature, no retrace.
    assert_same(f_jit(x, -2.25, 7), numpy_result(f, x, -2.25, 7))
    assert f_jit.trace_count == 1


def test_a_python_int_out_of_the_arrays_range_is_numpys_overflow_error() -> None:
    with pytest.raises(OverflowError, match="300 out of bounds for int8"):
        accy.jit(lambda x: x + 300)(np.zeros(3, np.int8))


def test_weakness_ends_where_numpy_makes_an_array() -> None:
    """A Python scalar argument stays weak through Python arithmetic, not
    through numpy functions, shape ops or astype (numpy returns arrays)."""

    def f(x, s):
        return x + s * 2, x + anp.reshape(s, (1,)), x + anp.asarray(s).astype(np.float64), x + -s, x + abs(s)

    x = rand((3,), np.float16, 1)
    got = accy.jit(f)(x, 1.5)
    assert [g.dtype for g in got] == [np.float16, np.float64, np.float64, np.float16, np.float16]
    assert_same(got, numpy_result(f, x, 1.5))


def test_numpy_scalars_arrays_and_lists_of_tracers() -> None:
    def f(x, y):
        return np.float32(2) * x, anp.array([x, y]).sum(axis=0), anp.asarray([[x], [y]], dtype=np.float64), np.shape(x), x.ndim

    x, y = rand((3,), np.float32, 1), rand((3,), np.float32, 2)
    got = accy.jit(f)(x, y)
    assert_same(got[:3], (2 * x, x + y, np.asarray([[x], [y]], np.float64)))
    assert got[3] == (np.asarray(3),) and got[4] == 1


def test_a_known_negative_integer_exponent_is_numpys_error() -> None:
    with pytest.raises(ValueError, match="Integers to negative integer powers are not allowed"):
        accy.jit(lambda x: x ** -1)(np.ones(3, np.int32))


def test_booleans_refuse_what_numpy_refuses() -> None:
    with pytest.raises(TypeError, match="boolean subtract"):
        accy.jit(lambda x, y: x - y)(np.zeros(3, bool), np.zeros(3, bool))
    with pytest.raises(TypeError, match="boolean negative"):
        accy.jit(lambda x: -x)(np.zeros(3, bool))


def test_unsigned_and_complex_inputs_are_refused() -> None:
    with pytest.raises(TypeError, match="uint8, which accy has no element type for"):
        accy.jit(lambda x: x + 1)(np.zeros(3, np.uint8))
    with pytest.raises(TypeError, match="complex128"):
        accy.jit(lambda x: x + np.ones(3, complex)).lower(np.zeros(3))


# --------------------------------------------------------------------------
# Reductions and scans
# --------------------------------------------------------------------------


def reductions(x):
    return (
        x.sum(), x.sum(axis=0), anp.sum(x, axis=-1, keepdims=True), x.max(axis=(0, 2)), x.min(axis=1, keepdims=True),
        anp.prod(x, axis=2), anp.max(x), x.sum(axis=()),
    )  # fmt: skip


def means(x):
    return x.mean(), anp.mean(x, axis=(1, 2), keepdims=True), x.mean(axis=0)


@pytest.mark.parametrize("shape", [(3, 17, 1), (1, 1, 1), (2, 3, 5)], ids=str)
@pytest.mark.parametrize("dtype", ["float16", "float32", "float64", "int8", "int32", "int64", "bool"])
def test_reductions_match_numpy(device: str, dtype: str, shape: tuple[int, ...]) -> None:
    x = rand(shape, dtype, 8, -2, 3)
    check(reductions, x, device=device)
    if dtype != "float16":  # numpy's f16 mean rounds differently enough over 17 elements
        check(means, x, device=device)


def test_reductions_over_nothing_are_numpys(device: str) -> None:
    x = np.zeros((0, 3), np.float32)

    def f(x):
        return x.sum(axis=0), x.sum(), x.max(axis=1), x.mean(axis=0), x.prod(axis=0), anp.any(x), anp.all(x, axis=0)

    check(f, x, device=device)
    with pytest.raises(ValueError, match="zero-size array to reduction operation maximum which has no identity"):
        accy.jit(lambda x: x.max(axis=0))(x)


def test_any_all_and_reduction_dtypes(device: str) -> None:
    def f(x, b):
        return anp.any(x > 0, axis=0), anp.all(b, axis=1), anp.any(b), x.sum(dtype=np.float64), anp.sum(b), anp.mean(b, axis=0)

    check(f, rand((3, 17), np.int32, 1), rand((3, 17), bool, 2), device=device)


@pytest.mark.parametrize("dtype", ["float32", "int8", "int32", "bool", "float64"])
def test_cumsum_and_cumprod_match_numpy(device: str, dtype: str) -> None:
    def f(x):
        return anp.cumsum(x), x.cumsum(axis=0), anp.cumsum(x, axis=-1), anp.cumprod(x, axis=1)

    check(f, rand((3, 17), dtype, 9, -1, 2), device=device)
    check(lambda x: anp.cumsum(x, axis=0), rand((0, 3), dtype), device=device)


def test_bad_axes_are_numpys_errors() -> None:
    with pytest.raises(np.exceptions.AxisError):
        accy.jit(lambda x: x.sum(axis=2))(np.zeros((2, 3)))
    with pytest.raises(ValueError, match="repeated axis"):
        accy.jit(lambda x: x.sum(axis=(0, 0)))(np.zeros((2, 3)))


# --------------------------------------------------------------------------
# Shapes: reshape, transpose, concatenate, slicing
# --------------------------------------------------------------------------


def shapes(x):
    n0, n1, n2 = x.shape
    return (
        x.reshape(-1), anp.reshape(x, (n1, n0 * n2)), x.T, anp.transpose(x, (1, 0, 2)), anp.swapaxes(x, 0, 2),
        anp.expand_dims(x, (0, -1)), anp.squeeze(anp.expand_dims(x, 1), 1), anp.moveaxis(x, 0, -1),
        x.reshape(n0, 1, n1 * n2), anp.squeeze(x[:1]), anp.broadcast_to(x[:1], (4, n1, n2)), x.reshape(n0, -1),
        anp.ravel(x),
    )  # fmt: skip


@pytest.mark.parametrize("shape", [(2, 3, 4), (1, 3, 1), (3, 3, 3), (2, 0, 3)], ids=str)
def test_shape_functions_match_numpy(device: str, shape: tuple[int, ...]) -> None:
    check(shapes, rand(shape, np.float32, 10), device=device)


def slicing(x):
    return (
        x[1:], x[::2], x[1:-1:3], x[..., 0], x[None, :, 1], x[-1], x[2:2], x[:, 1:], x[0, 2], x[:, None, ::4],
        x[..., -3:], x[-100:100], x[5:1], x[::-1][:1] if x.shape[0] == 1 else x[:1], x[:, :][::16],
    )  # fmt: skip


@pytest.mark.parametrize("shape", [(3, 17), (17, 3), (1, 3)], ids=str)
def test_slicing_with_steps_matches_numpy(device: str, shape: tuple[int, ...]) -> None:
    check(slicing, rand(shape, np.int32, 11), device=device)


def test_slice_ops_are_one_slice_and_one_reshape() -> None:
    text = accy.jit(lambda x: x[1::2, 0]).lower(np.zeros((7, 5), np.float32)).as_text()
    assert "accy.slice %x {start = array<i64: 1, 0>, limit = array<i64: 6, 1>, stride = array<i64: 2, 1>}" in text
    assert text.count("accy.slice") == 1 and text.count("accy.reshape") == 1


def test_indexing_errors_are_numpys() -> None:
    with pytest.raises(IndexError, match="index 3 is out of bounds for axis 0 with size 3"):
        accy.jit(lambda x: x[3])(np.zeros(3))
    with pytest.raises(IndexError, match="too many indices"):
        accy.jit(lambda x: x[0, 0])(np.zeros(3))
    with pytest.raises(ValueError, match="cannot reshape array of size 6 into shape"):
        accy.jit(lambda x: x.reshape(4, -1))(np.zeros(6))
    with pytest.raises(ValueError, match="squeeze"):
        accy.jit(lambda x: anp.squeeze(x, 0))(np.zeros((2, 1)))


def joins(x, y, i):
    return (
        anp.concatenate([x, y]), anp.concatenate((x, y, x), axis=1), anp.concatenate([x, y], axis=None),
        anp.concatenate([x, i], axis=-1), anp.stack([x, y]), anp.stack([x, y, x], axis=-1), anp.concatenate([x]),
        anp.concatenate([x[:0], y], axis=0),
    )  # fmt: skip


@pytest.mark.parametrize("shape", [(3, 17), (1, 1), (2, 3)], ids=str)
def test_concatenate_and_stack_match_numpy(device: str, shape: tuple[int, ...]) -> None:
    check(joins, rand(shape, np.float32, 1), rand(shape, np.float32, 2), rand(shape, np.int8, 3), device=device)


# --------------------------------------------------------------------------
# Contractions
# --------------------------------------------------------------------------

MATMULS = [
    ((3, 4), (4, 5)),
    ((3, 3), (3, 3)),
    ((4,), (4, 5)),
    ((3, 4), (4,)),
    ((4,), (4,)),
    ((2, 3, 4), (4, 5)),
    ((3, 4), (2, 4, 5)),
    ((2, 3, 4), (2, 4, 5)),
    ((2, 1, 3, 4), (5, 4, 2)),
    ((1, 1), (1, 1)),
    ((3, 0), (0, 2)),
    ((0, 3), (3, 17)),
    ((17, 1), (1, 17)),
]


@pytest.mark.parametrize(("sa", "sb"), MATMULS, ids=str)
def test_matmul_matches_numpy(device: str, sa: tuple[int, ...], sb: tuple[int, ...]) -> None:
    check(lambda a, b: (a @ b, anp.matmul(a, b)), rand(sa, np.float32, 1), rand(sb, np.float32, 2), device=device)


@pytest.mark.parametrize("dtype", ["float16", "float64", "int32", "int64", "bool", "int8"])
def test_matmul_dtypes_match_numpy(device: str, dtype: str) -> None:
    check(lambda a, b: a @ b, rand((3, 17), dtype, 1, -3, 4), rand((17, 5), dtype, 2, -3, 4), device=device)


def test_matmul_mixed_dtypes_promote() -> None:
    got = check(lambda a, b: a @ b, rand((3, 4), np.int8, 1), rand((4, 2), np.float32, 2))
    assert got(rand((3, 4), np.int8, 1), rand((4, 2), np.float32, 2)).dtype == np.float32


@pytest.mark.parametrize(("sa", "sb"), [((2, 3, 4), (5, 4, 6)), ((3, 4), (4,)), ((4,), (4,)), ((), (3, 2)), ((3, 4), (4, 2))], ids=str)
def test_dot_matches_numpy(device: str, sa: tuple[int, ...], sb: tuple[int, ...]) -> None:
    check(lambda a, b: (anp.dot(a, b), a.dot(b)), rand(sa, np.float32, 1), rand(sb, np.float32, 2), device=device)


def test_matmul_mismatch_is_an_error() -> None:
    with pytest.raises(ValueError, match=r"matmul: shapes \(3, 4\) and \(5, 2\) not aligned"):
        accy.jit(lambda a, b: a @ b)(np.zeros((3, 4)), np.zeros((5, 2)))


# --------------------------------------------------------------------------
# Named ops: against numpy written out
# --------------------------------------------------------------------------


def np_softmax(x, axis=-1):
    e = np.exp(x - x.max(axis, keepdims=True))
    return e / e.sum(axis, keepdims=True)


def np_layer_norm(x, g, b, eps=1e-5):
    c = x - x.mean(-1, keepdims=True)
    return c / np.sqrt((c * c).mean(-1, keepdims=True) + eps) * g + b


def np_attention(q, k, v, scale, causal=False):
    s = scale * (q @ np.swapaxes(k, -1, -2))
    if causal:
        s = np.where(np.triu(np.ones(s.shape[-2:], bool), 1), -np.inf, s)
    return np_softmax(s) @ v


@pytest.mark.parametrize("n", [1, 3, 17])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_named_ops_match_numpy(device: str, n: int, dtype: str) -> None:
    x, g, b = rand((n, 2, n), dtype, 1), rand((n,), dtype, 2), rand((n,), dtype, 3)
    q, k, v = rand((2, n, 8), dtype, 4), rand((2, n + 2, 8), dtype, 5), rand((2, n + 2, 3), dtype, 6)

    def f(x, g, b, q, k, v):
        return (
            anp.softmax(x, axis=1), anp.log_softmax(x), anp.layer_norm(x, g, b), anp.layer_norm(x, epsilon=1e-3),
            anp.attention(q, k, v), anp.attention(q, k[:, :n], v[:, :n], scale=0.5, causal=True),
        )  # fmt: skip

    got = accy.jit(f, device=device)(x, g, b, q, k, v)
    want = (
        np_softmax(x, 1), np.log(np_softmax(x)), np_layer_norm(x, g, b), np_layer_norm(x, 1.0, 0.0, 1e-3),
        # The op's scale is an f32 property (docs/op-contract.md): 1/sqrt(8) rounded to f32.
        np_attention(q, k, v, float(np.float32(1 / math.sqrt(8)))), np_attention(q, k[:, :n], v[:, :n], 0.5, causal=True),
    )  # fmt: skip
    assert_same(got, want)


def test_named_ops_promote_and_broadcast(device: str) -> None:
    q = rand((2, 4, 5, 8), np.float32, 1)
    k, v = rand((1, 4, 6, 8), np.float32, 2), rand((4, 6, 3), np.float32, 3)  # batch dims broadcast
    got = accy.jit(lambda q, k, v: anp.attention(q, k, v), device=device)(q, k, v)
    assert_same(got, np_attention(q, np.broadcast_to(k, (2, 4, 6, 8)), np.broadcast_to(v, (2, 4, 6, 3)), 1 / math.sqrt(8)))
    x = rand((3, 5), np.int16, 4)  # integers: numpy's float dtype for them (exp's)
    assert accy.jit(anp.softmax, device=device)(x).dtype == np.float32
    assert_same(accy.jit(lambda x: anp.softmax(x), device=device)(np.float32(2.0)), np.float32(1.0))


def test_accy_elementwise_extras(device: str) -> None:
    x = rand((17,), np.float32, 1)
    erf = np.vectorize(math.erf)
    got = accy.jit(lambda x: (anp.sigmoid(x), anp.relu(x), anp.gelu(x), anp.erf(x)), device=device)(x)
    assert_same(got, (1 / (1 + np.exp(-x)), np.maximum(x, 0), (0.5 * x * (1 + erf(x / math.sqrt(2)))).astype(np.float32), erf(x).astype(np.float32)))


# --------------------------------------------------------------------------
# The cache: one trace per signature
# --------------------------------------------------------------------------


def test_retraces_only_on_a_new_signature() -> None:
    @accy.jit(static_argnums=(1,))
    def f(x, n):
        for _ in range(n):  # a static argument may steer Python control flow
            x = x * 2
        return x

    a = np.ones(3, np.float32)
    assert_same(f(a, 2), a * 4)
    assert f.trace_count == 1
    f(a + 1, 2)  # new values, same signature
    f(np.ones(3, np.float32)[::-1], 2)  # a non-contiguous view: still (3,) float32
    assert f.trace_count == 1
    f(np.ones(4, np.float32), 2)  # new shape
    assert f.trace_count == 2
    f(np.ones(4, np.float64), 2)  # new dtype
    assert f.trace_count == 3
    assert_same(f(a, 3), a * 8)  # new static argument
    assert f.trace_count == 4
    f(a, 2), f(np.ones(4, np.float32), 2), f(np.ones(4, np.float64), 2), f(a, 3)  # all known
    assert f.trace_count == 4 and f.cache_size() == 4
    f(np.float32(1.0), 2)  # a numpy scalar: a 0-d float32 array
    f(1.0, 2)  # a Python float: weak, another signature
    f(2.0, 2)
    assert f.trace_count == 6


def test_lower_then_call_traces_once_and_compile_is_the_calls_executable() -> None:
    g = accy.jit(lambda x: anp.exp(x) + 1.0)
    x = np.zeros((2, 5), np.float32)
    lowered = g.lower(x)
    assert "func.func @main(%x: tensor<2x5xf32>) -> tensor<2x5xf32>" in lowered.as_text() == str(lowered)
    assert g.trace_count == 1
    exe = lowered.compile()
    assert_same(g(x), np.exp(x) + 1)
    assert g.trace_count == 1 and g.lower(x).compile() is exe
    assert_same(exe(x)[0], np.exp(x) + 1)
    assert "accy.exp" in g.lower(ShapeDtype((2, 5), np.float32)).as_text() and g.trace_count == 1


def test_static_arguments_must_be_hashable() -> None:
    with pytest.raises(TypeError, match="static argument 1 of .* is a list, which is not hashable"):
        accy.jit(lambda x, axes: x.sum(axis=tuple(axes)), static_argnums=1)(np.zeros((2, 3)), [0])


def test_keyword_arguments_static_and_dynamic() -> None:
    @accy.jit(static_argnames="axis")
    def f(x, y=None, *, axis=0):
        return x.sum(axis=axis) + (0 if y is None else y)

    x = rand((3, 4), np.float32, 1)
    assert_same(f(x, axis=1), x.sum(axis=1))
    assert_same(f(x, y=np.float32(2), axis=0), x.sum(axis=0) + np.float32(2))
    assert f.trace_count == 2


def test_pytrees_in_and_out(device: str) -> None:
    @accy.jit(device=device)
    def f(params, x):
        h = anp.tanh(x @ params["w"] + params["b"])
        return {"h": h, "stats": (h.mean(), [h.max()])}

    p = {"w": rand((4, 3), np.float32, 1), "b": rand((3,), np.float32, 2)}
    x = rand((5, 4), np.float32, 3)
    got = f(p, x)
    h = np.tanh(x @ p["w"] + p["b"])
    assert set(got) == {"h", "stats"}
    assert_same(got["h"], h)
    assert_same(got["stats"][0], h.mean())
    assert isinstance(got["stats"], tuple) and isinstance(got["stats"][1], list)
    assert_same(got["stats"][1][0], h.max())


def test_identity_constants_and_repeated_results(device: str) -> None:
    c = rand((3,), np.float32, 1)
    f = accy.jit(lambda x: (x, c, x, 2.5, np.arange(4)), device=device)
    x = rand((3,), np.float32, 2)
    assert_same(f(x), (x, c, x, np.float64(2.5), np.arange(4)))


def test_nested_jit_inlines_and_numpy_calls_on_tracers_trace(device: str) -> None:
    inner = accy.jit(lambda x: np.exp(x) * 2)  # numpy's own functions, on tracers, trace

    @accy.jit(device=device)
    def outer(x, y):
        return inner(x) + np.sum(y, axis=0), np.ones(3, np.float32) + x, np.maximum.reduce(y, axis=1)

    x, y = rand((3,), np.float32, 1), rand((2, 3), np.float32, 2)
    assert_same(outer(x, y), (np.exp(x) * 2 + y.sum(0), 1 + x, y.max(1)))
    assert inner.trace_count == 0


def test_accy_arrays_in_and_out(device: str) -> None:
    f = accy.jit(lambda x, y: (x * y + 1, x.sum()), device=device)
    x, y = rand((17,), np.float32, 1), rand((17,), np.float32, 2)
    dx, dy = accy.device_put(x, device), accy.device_put(y, device)
    assert_same(f(dx, dy), (x * y + 1, x.sum()))
    assert_same(f(x, dy), (x * y + 1, x.sum()))  # arrays and numpy mixed: one signature
    assert f.trace_count == 1
    g = accy.jit(lambda x: anp.exp(x), device=device, to_host=False)
    h = g(dx)
    assert isinstance(h, accy.Array) and h.device is dx.device
    assert_same(np.asarray(g(h)), np.exp(np.exp(x)))


# --------------------------------------------------------------------------
# Errors at the user's line
# --------------------------------------------------------------------------


def branch_on(x):
    if x.sum() > 0:
        return x
    return -x


def bool_of(x):
    return x * bool(x)


def float_of(x):
    return x + float(x[0])


def int_of(x):
    return x[int(x.max())]


def iterate(x):
    return [r * 2 for r in x]


def while_on(x):
    while x.max() > 1:
        x = x / 2
    return x


def to_numpy(x):
    return np.asarray(x) + 1


def item_of(x):
    return x.sum().item()


@pytest.mark.parametrize("fn", [branch_on, bool_of, float_of, int_of, iterate, while_on, to_numpy, item_of], ids=lambda f: f.__name__)
def test_control_flow_on_traced_values_names_the_line(fn) -> None:
    line = fn.__code__.co_firstlineno + 1
    with pytest.raises(TracerConversionError, match=rf"^{re.escape(__file__)}:{line}: .* traced array .*static_argnums"):
        accy.jit(fn)(np.ones((3,), np.float32))


def test_a_tracer_that_escapes_its_trace_is_an_error() -> None:
    kept = []
    accy.jit(lambda x: kept.append(x) or x)(np.ones(2))
    with pytest.raises(TracerConversionError, match="outside its trace"):
        accy.jit(lambda y: y + kept[0])(np.ones(2))


def sort_of(x):
    return anp.sort(x)


def boolean_mask(x):
    return x[x > 0]


def reverse(x):
    return x[::-1]


def numpy_flip(x):
    return np.flip(x, axis=0)


def float_mod(x):
    return x % 2.0


def assign(x):
    x[0] = 1.0
    return x


@pytest.mark.parametrize(
    ("fn", "message"),
    [
        (sort_of, "numpy.sort is not supported by accy tracing: the dialect has no sort op"),
        (boolean_mask, "boolean indexing .* depends on the values"),
        (reverse, "slicing with a negative step .* no reverse op"),
        (numpy_flip, "numpy.flip is not supported"),
        (float_mod, r"numpy.remainder \(%\) of floats .* no fmod"),
        (assign, "item assignment"),
    ],
    ids=["sort", "boolean_mask", "reverse", "numpy_flip", "float_mod", "assign"],
)
def test_unsupported_functions_are_named_at_the_users_line(fn, message: str) -> None:
    line = fn.__code__.co_firstlineno + 1
    with pytest.raises(UnsupportedError, match=rf"^{re.escape(__file__)}:{line}: {message}"):
        accy.jit(fn)(np.ones((3,), np.float32))


def test_unsupported_functions_are_numpys_on_values_not_traced() -> None:
    x = rand((3, 5), np.float32, 1)
    assert_same(anp.argsort(x, axis=1), np.argsort(x, axis=1))
    assert_same(accy.jit(lambda y: y + anp.argsort(x, axis=1))(np.ones((3, 5), np.int64)), 1 + np.argsort(x, axis=1))


def test_a_non_array_argument_says_to_make_it_static() -> None:
    with pytest.raises(TypeError, match="argument arg1 of .* is a str, not an array or a number.*static_argnums"):
        accy.jit(lambda x, mode: x)(np.ones(2), "fast")
    assert_same(accy.jit(lambda x, mode: x * 2 if mode == "double" else x, static_argnums=1)(np.ones(2), "double"), np.ones(2) * 2)


# --------------------------------------------------------------------------
# The face and the room
# --------------------------------------------------------------------------


def test_accy_jit_and_accy_numpy_at_the_face() -> None:
    import sys

    import accy.jit  # noqa: F401 (binds the module to the package's name)

    jit_module = sys.modules["accy.jit"]
    assert "jit" in accy.__all__ and "numpy" in accy.__all__
    assert accy.numpy is anp
    assert callable(accy.jit) and callable(jit_module)  # `import accy.jit` binds the module: callable too
    assert isinstance(jit_module(lambda x: x), type(accy.jit(lambda x: x)))
    for name in tracing.NUMPY_FUNCTIONS.keys() | tracing.ACCY_FUNCTIONS.keys():
        assert getattr(anp, name) is tracing.NUMPY_FUNCTIONS.get(name, tracing.ACCY_FUNCTIONS.get(name)), name
    assert anp.float32 is np.float32 and anp.newaxis is None


def test_tracing_builds_ir_without_the_runtime() -> None:
    import subprocess
    import sys

    code = (
        "import sys, numpy as np\n"
        "from accy.frontends import tracing\n"
        "t = tracing.trace(lambda x: tracing.exp(x).sum(axis=0), [np.zeros((2, 3), np.float32)])\n"
        "assert 'accy.reduce' in str(t.module)\n"
        "print(sorted(m for m in sys.modules if m.startswith(('accy.runtime', 'accy.reference', 'accy.passes'))))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


def test_docs_example_runs() -> None:
    """docs/tracing.md's Python blocks, in order, in one namespace."""
    page = Path(__file__).parents[2] / "docs" / "tracing.md"
    blocks = re.findall(r"```python\n(.*?)```", page.read_text(), re.S)
    assert blocks
    namespace: dict[str, object] = {"__name__": "__tracing_doc__"}
    for block in blocks:
        exec(compile(block, str(page), "exec"), namespace)
