"""numpy.argmax / argmin and numpy.pad in traced functions: one
`accy.reduce` (kinds argmax, argmin) and one `accy.pad` each, equal to
numpy on every device: ties and NaNs (the first wins, as numpy's), axis
None (the flat index), keepdims, bools; every pad mode numpy and accy share
(constant, edge, reflect, wrap) at pad widths past the dim, dims of one
element, per-axis widths, a traced constant value. What does not trace
(numpy's 'symmetric', odd reflections, a value per axis) is an
UnsupportedError at the user's line; numpy's own errors stay numpy's."""

from __future__ import annotations

import re

import numpy as np
import pytest

import accy
import accy.numpy as anp
from accy.dialects import accy as A
from accy.frontends.tracing import UnsupportedError

# PoCL builds each program in ~1-3 s: make test runs a fixed part of the
# OpenCL cases (`sampled`, tests/conftest.py), make conformance all.
DEVICES = ["reference", "llvm", pytest.param("opencl", marks=pytest.mark.sampled)]


def with_ties_and_nans(shape: tuple[int, ...], dtype: str, seed: int) -> np.ndarray:
    """Small integers (many ties) and, for floats, NaNs and infinities placed on purpose."""
    rng = np.random.default_rng(seed)
    if dtype == "bool":
        return rng.integers(0, 2, shape).astype(bool)
    x = rng.integers(-2, 3, shape).astype(dtype)
    if x.dtype.kind == "f" and x.size >= 3:
        flat = x.reshape(-1)
        flat[rng.integers(0, x.size, 2)] = np.nan
        flat[rng.integers(0, x.size)] = np.inf
        flat[rng.integers(0, x.size)] = -np.inf
    return x


def arg_reductions(x):
    out = [anp.argmax(x), anp.argmin(x), x.argmax(keepdims=True), x.argmin(axis=-1)]
    for axis in range(x.ndim):
        out += [anp.argmax(x, axis=axis), np.argmin(x, axis=axis, keepdims=True)]
    return tuple(out)


def check(fn, *args, device: str) -> None:
    got = accy.jit(fn, device=device)(*args)
    want = fn(*args)
    got, want = (got, want) if isinstance(want, tuple) else ((got,), (want,))
    assert len(got) == len(want)
    for i, (g, w) in enumerate(zip(got, want, strict=True)):
        g, w = np.asarray(g), np.asarray(w)
        assert g.dtype == w.dtype and g.shape == w.shape, f"result #{i}: {g.dtype}{g.shape}, numpy's {w.dtype}{w.shape}"
        np.testing.assert_array_equal(g, w, err_msg=f"result #{i}")


#: Each program takes one array of each of these dtypes: one compile per shape and device.
ARG_DTYPES = ("float32", "float16", "int8", "int64", "bool")


@pytest.mark.parametrize("shape", [(3, 17), (5, 1, 3)], ids=str)
@pytest.mark.parametrize("device", DEVICES)
def test_argmax_argmin_match_numpy(device: str, shape: tuple[int, ...]) -> None:
    def every_dtype(*xs):
        return tuple(r for x in xs for r in arg_reductions(x))

    check(every_dtype, *(with_ties_and_nans(shape, dtype, seed=k) for k, dtype in enumerate(ARG_DTYPES)), device=device)


def test_argmax_of_one_element_and_of_a_scalar() -> None:
    check(arg_reductions, np.asarray([np.nan], np.float32), device="reference")
    check(lambda x: (anp.argmax(x), anp.argmin(x, keepdims=True)), np.float32(3.0).reshape(()), device="reference")


def test_argmax_is_one_reduce_and_axis_none_reduces_every_dim() -> None:
    x = np.zeros((3, 4, 5), np.float32)
    module = accy.jit(lambda x: anp.argmax(x)).lower(x).module
    (op,) = [op for op in module.walk() if isinstance(op, A.ReduceOp)]
    assert op.kind.data == "argmax" and list(op.norm_axes()) == [0, 1, 2]
    assert str(op.result.type) == "tensor<i64>"


def test_argmax_errors_are_numpys() -> None:
    with pytest.raises(ValueError, match="attempt to get argmax of an empty sequence"):
        accy.jit(lambda x: anp.argmax(x, axis=0))(np.zeros((0, 3), np.float32))
    with pytest.raises(np.exceptions.AxisError):
        accy.jit(lambda x: anp.argmin(x, axis=2))(np.zeros((2, 3), np.float32))
    # Over a non-empty axis of an array with an empty other dim: an empty result, as numpy's.
    check(lambda x: anp.argmax(x, axis=1), np.zeros((0, 3), np.float32), device="reference")


def pads(x, v):
    """Each mode, widths past the dim (reflect and wrap repeat), per axis and scalar."""
    out = []
    for mode in ("constant", "edge", "reflect", "wrap"):
        out += [np.pad(x, 2, mode), anp.pad(x, (0, 5), mode), np.pad(x, [(7, 1)] + [(1, 0)] * (x.ndim - 1), mode=mode)]
    out += [np.pad(x, 1, constant_values=3), anp.pad(x, ((2, 0),) * x.ndim, constant_values=v)]
    return tuple(out)


@pytest.mark.parametrize("shape", [(3, 5), (2, 1, 3)], ids=str)
@pytest.mark.parametrize("device", DEVICES)
def test_pad_matches_numpy(device: str, shape: tuple[int, ...]) -> None:
    def every_dtype(x, i, b, v):
        return (*pads(x, v), *pads(i, 2), *pads(b, True))

    x, i, b = (with_ties_and_nans(shape, dtype, seed=3) for dtype in ("float32", "int32", "bool"))
    check(every_dtype, x, i, b, np.float32(-1.5).reshape(()), device=device)


def test_pad_of_a_dim_of_one_element() -> None:
    check(lambda x: tuple(np.pad(x, (2, 3), mode) for mode in ("edge", "reflect", "wrap")), np.asarray([4.0], np.float32),
          device="reference")


def test_pad_is_one_pad_op_and_fuses() -> None:
    x = np.zeros((3, 4), np.float32)
    module = accy.jit(lambda x: anp.tanh(np.pad(x * 2.0, ((1, 2), (3, 0)), "reflect"))).lower(x).module
    (op,) = [op for op in module.walk() if isinstance(op, A.PadOp)]
    assert op.mode.data == "reflect" and op.low.get_values() == (1, 3) and op.high.get_values() == (2, 0)
    check(lambda x: anp.tanh(np.pad(x * 2.0, ((1, 2), (3, 0)), "reflect")), np.arange(12, dtype=np.float32).reshape(3, 4),
          device="llvm")


def symmetric(x):
    return np.pad(x, 1, "symmetric")


def odd_reflection(x):
    return np.pad(x, 1, "reflect", reflect_type="odd")


def value_per_axis(x):
    return anp.pad(x, 1, constant_values=((0, 1), (2, 3)))


def statistic(x):
    return np.pad(x, 1, "maximum")


@pytest.mark.parametrize(
    ("fn", "message"),
    [
        (symmetric, r"numpy.pad\(mode='symmetric'\) is not supported by accy tracing: accy.pad's reflect is numpy's "
                    r"'reflect' \(the edge element is not repeated\); 'symmetric' repeats it"),
        (odd_reflection, r"numpy.pad\(reflect_type='odd'\) is not supported"),
        (value_per_axis, "numpy.pad with constant_values per axis is not supported"),
        (statistic, r"numpy.pad\(mode='maximum'\) is not supported"),
    ],
    ids=["symmetric", "odd", "per_axis", "maximum"],
)
def test_pads_that_do_not_trace_are_named_at_the_users_line(fn, message: str) -> None:
    line = fn.__code__.co_firstlineno + 1
    with pytest.raises(UnsupportedError, match=rf"^{re.escape(__file__)}:{line}: {message}"):
        accy.jit(fn)(np.ones((2, 3), np.float32))


def test_pad_errors_are_numpys() -> None:
    x = np.ones((2, 3), np.float32)
    with pytest.raises(ValueError, match="negative values"):
        accy.jit(lambda x: np.pad(x, -1))(x)
    with pytest.raises(ValueError, match="can't extend empty axis 0"):
        accy.jit(lambda x: np.pad(x, 1, "edge"))(np.ones((0, 3), np.float32))
    with pytest.raises(TypeError, match="integral"):
        accy.jit(lambda x: np.pad(x, 1.5))(x)
    # An empty dim pads with constants, as numpy's does.
    check(lambda x: np.pad(x, 1), np.ones((0, 3), np.float32), device="reference")
