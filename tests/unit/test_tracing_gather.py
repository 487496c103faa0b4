"""Integer-array indexing and numpy.take in traced functions: one
accy.gather each, equal to numpy on every device (traced and literal
indices, i32 and i64, negative ones, basic indexing around the array,
`...`, None, integers next to the array, take with and without an axis);
a traced index out of range is clamped to the nearest end (numpy would
raise), a literal one raises numpy's IndexError; what is not supported
(two index arrays, integers apart from the array) is an UnsupportedError."""

from __future__ import annotations

import numpy as np
import pytest

import accy
import accy.numpy as anp
from accy.dialects import accy as A
from accy.frontends.tracing import UnsupportedError

DEVICES = ["reference", "llvm", "opencl"]
RNG = np.random.default_rng(1212)
X = RNG.standard_normal((5, 7, 3)).astype(np.float32)

CASES = {
    "rows": lambda x, i: x[i],
    "middle": lambda x, i: x[:, i],
    "ellipsis_list": lambda x, i: x[..., [0, 2, -1]],
    "int_then_array": lambda x, i: x[1, i],
    "none_slice_array_int": lambda x, i: x[None, 1:, i, 1],
    "take_axis": lambda x, i: anp.take(x, i, axis=-2),
    "take_flat": lambda x, i: np.take(x, i),
    "embedding_fused": lambda x, i: anp.tanh(x[i] * 2.0).sum(axis=-1),
}


def indices(name: str, dtype) -> np.ndarray:
    """In range for the dim the case indexes, negative ones included."""
    n = {"rows": 5, "take_flat": 5 * 7 * 3, "embedding_fused": 5}.get(name, 7)
    return RNG.integers(-n, n, (2, 4)).astype(dtype)


@pytest.mark.parametrize("dtype", [np.int32, np.int64])
@pytest.mark.parametrize("name", sorted(CASES))
@pytest.mark.parametrize("device", DEVICES)
def test_integer_array_indexing_matches_numpy(name: str, dtype, device: str) -> None:
    fn = CASES[name]
    i = indices(name, dtype)
    got = np.asarray(accy.jit(fn, device=device)(X, i))
    want = fn(X, i)
    assert got.shape == want.shape and got.dtype == want.dtype
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name", sorted(CASES))
def test_indexing_is_one_gather(name: str) -> None:
    module = accy.jit(CASES[name]).lower(X, indices(name, np.int64)).module
    gathers = [op for op in module.walk() if isinstance(op, A.GatherOp)]
    assert len(gathers) == 1


@pytest.mark.parametrize("device", DEVICES)
def test_traced_indices_out_of_range_are_clamped(device: str) -> None:
    i = np.array([-100, -6, -5, -1, 0, 4, 5, 99, np.iinfo(np.int64).max, np.iinfo(np.int64).min], np.int64)
    got = np.asarray(accy.jit(lambda x, i: x[i], device=device)(X, i))
    np.testing.assert_array_equal(got, X[np.clip(np.where(i < 0, i + 5, i), 0, 4)])


def test_literal_indices_out_of_range_raise_as_numpy() -> None:
    with pytest.raises(IndexError, match="index 7 is out of bounds for axis 0 with size 5"):
        accy.jit(lambda x: x[[0, 7]])(X)


@pytest.mark.parametrize(
    ("fn", "message"),
    [
        (lambda x, i: x[i, i], "several index arrays"),
        (lambda x, i: x[i, :, 0], "integers apart from the index array"),
        (lambda x, i: x[x > 0], "boolean indexing"),
        (lambda x, i: x[i.astype(np.float32)], "arrays used as indices must be of integer type"),
    ],
    ids=["two_arrays", "int_apart", "mask", "float_index"],
)
def test_what_is_not_supported_is_named(fn, message: str) -> None:
    with pytest.raises((UnsupportedError, IndexError), match=message):
        accy.jit(fn)(X, indices("rows", np.int64))
