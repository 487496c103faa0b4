"""Element types <-> numpy dtypes, and dense elements attributes <-> arrays.

The mapping is fixed: f16/f32/f64 are numpy's float16/float32/float64, bf16
is `ml_dtypes.bfloat16` (numpy has none; its casts round to nearest even), i1 is
`np.bool_`, and i8/i16/i32/i64 (signless) are numpy's *signed* integers of that
width, as MLIR's signless integers are read by `arith`'s signed ops.

xDSL 0.75 stores a `DenseIntOrFPElementsAttr` as little-endian packed bytes of
every element (a splat is stored expanded). i1 takes one byte per element and
stores `true` as 0xFF (the sign-extended -1 of a one-bit signed integer), so
reading treats any non-zero byte as true and writing emits 0xFF.
"""

from __future__ import annotations

import numpy as np
from xdsl.dialects.builtin import (
    BFloat16Type,
    BytesAttr,
    DenseIntOrFPElementsAttr,
    Float16Type,
    Float32Type,
    Float64Type,
    IntegerType,
    Signedness,
    TensorType,
)
from xdsl.ir import Attribute

from accy.dialects.types import bfloat16_dtype, is_bfloat16, numel

_FLOATS: dict[type[Attribute], np.dtype] = {
    Float16Type: np.dtype(np.float16),
    Float32Type: np.dtype(np.float32),
    Float64Type: np.dtype(np.float64),
}
_INTS: dict[int, np.dtype] = {
    8: np.dtype(np.int8),
    16: np.dtype(np.int16),
    32: np.dtype(np.int32),
    64: np.dtype(np.int64),
}


def numpy_dtype(element_type: Attribute) -> np.dtype:
    """The numpy dtype that holds values of `element_type`.

    Raises ValueError for an element type accy does not compute in.
    """
    if isinstance(element_type, BFloat16Type):
        return bfloat16_dtype()
    for cls, dtype in _FLOATS.items():
        if isinstance(element_type, cls):
            return dtype
    if isinstance(element_type, IntegerType) and element_type.signedness.data == Signedness.SIGNLESS:
        width = element_type.width.data
        if width == 1:
            return np.dtype(np.bool_)
        if width in _INTS:
            return _INTS[width]
    raise ValueError(
        f"element type {element_type} has no numpy counterpart in accy (use f16, bf16, f32, f64, i1, i8, i16, i32 or i64)"
    )


def is_float_dtype(dtype: np.dtype) -> bool:
    """Whether numpy `dtype` holds floats: numpy's own (kind "f") or bfloat16
    (ml_dtypes' kind is "V")."""
    return dtype.kind == "f" or is_bfloat16(dtype)


def element_type_for_dtype(dtype: np.dtype | type) -> Attribute:
    """The accy element type of numpy `dtype` (the inverse of `numpy_dtype`).

    Unsigned numpy integers have no accy counterpart and raise ValueError.
    """
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return IntegerType(1)
    if dtype.kind == "i" and dtype.itemsize * 8 in _INTS:
        return IntegerType(dtype.itemsize * 8)
    if is_bfloat16(dtype):
        return BFloat16Type()
    for cls, d in _FLOATS.items():
        if d == dtype:
            return cls()
    raise ValueError(f"numpy dtype {dtype} has no accy element type (use float16/32/64, bfloat16, bool or int8/16/32/64)")


def _dense_storage_dtype(element_type: Attribute) -> np.dtype:
    """How xDSL lays one element out in a dense attribute's bytes."""
    dtype = numpy_dtype(element_type)
    if dtype == np.bool_:
        return np.dtype("<i1")
    return dtype.newbyteorder("<")


def dense_to_numpy(attr: DenseIntOrFPElementsAttr) -> np.ndarray:
    """A fresh, writable array with the value and shape of a dense attribute."""
    return np.array(dense_view(attr))


def dense_view(attr: DenseIntOrFPElementsAttr) -> np.ndarray:
    """A read-only array with the value and shape of a dense attribute: a
    splat stored as one element (as accy's parser stores every splat) is
    that element broadcast, so it costs one element whatever its shape."""
    shape = tuple(attr.get_shape())
    element_type = attr.get_element_type()
    raw = np.frombuffer(attr.data.data, dtype=_dense_storage_dtype(element_type))
    count = numel(shape)
    dtype = numpy_dtype(element_type)
    if raw.size == 1 and count != 1:
        one = raw != 0 if dtype == np.bool_ else raw.astype(dtype)
        return np.broadcast_to(one.reshape(()), shape)
    if raw.size != count:
        raise ValueError(f"dense attribute of type {attr.type} holds {raw.size} elements, expected {count}")
    values = raw != 0 if dtype == np.bool_ else raw.astype(dtype, copy=False)
    values = values.reshape(shape)
    values.flags.writeable = False
    return values


def numpy_to_dense(arr: np.ndarray, element_type: Attribute | None = None) -> DenseIntOrFPElementsAttr:
    """A dense attribute of type `tensor<shape x element_type>` holding `arr`.

    `element_type` defaults to the array's own (`element_type_for_dtype(arr.dtype)`);
    values are converted to it with numpy's `astype` (to i1: non-zero is true).
    """
    arr = np.asarray(arr)
    if element_type is None:
        element_type = element_type_for_dtype(arr.dtype)
    dtype = numpy_dtype(element_type)
    if dtype == np.bool_:
        data = np.where(arr != 0, -1, 0).astype("<i1")
    else:
        data = np.ascontiguousarray(arr.astype(dtype).astype(dtype.newbyteorder("<")))
    return DenseIntOrFPElementsAttr(TensorType(element_type, list(arr.shape)), BytesAttr(data.tobytes()))
