"""The dialect's types, read: element kinds, shapes, sizes and row-major layout.

Shared by verifiers, builders, the reference interpreter, the passes and the
runtime, so that "how many elements", "how many bytes" and "what are row-major
strides" have one answer. They need only xDSL: numpy's view of the element
types (`numpy_dtype`) is the reference interpreter's (`accy.reference`).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from typing import Any

from xdsl.dialects.builtin import (
    BFloat16Type,
    Float16Type,
    Float32Type,
    Float64Type,
    IntegerType,
    Signedness,
    TensorType,
)
from xdsl.ir import Attribute, SSAValue

FLOAT_TYPES = (Float16Type, BFloat16Type, Float32Type, Float64Type)


@functools.cache
def bfloat16_dtype() -> Any:
    """The numpy dtype of bf16 (`ml_dtypes.bfloat16`; casts round to nearest
    even): a `numpy.dtype`, untyped here since the dialects do not import numpy.

    ml_dtypes is imported on first call only: importing it costs over a second,
    so only programs that hold bf16 values pay for it."""
    import ml_dtypes

    return ml_dtypes.bfloat16(0).dtype


def is_bfloat16(dtype: object) -> bool:
    """Whether `dtype` (a numpy dtype, or anything with a `name`) is bf16,
    decided by name so that ml_dtypes need not be imported."""
    return getattr(dtype, "name", None) == "bfloat16"


#: The 16-bit floats: stored in 16 bits; computed in f32 wherever the target
#: has no native arithmetic for them (bf16 always; docs/op-contract.md).
HALF_TYPES = (Float16Type, BFloat16Type)


def is_float(t: Attribute) -> bool:
    """f16, bf16, f32 or f64."""
    return isinstance(t, FLOAT_TYPES)


def is_half(t: Attribute) -> bool:
    """f16 or bf16."""
    return isinstance(t, HALF_TYPES)


def is_int(t: Attribute) -> bool:
    """An integer type wider than one bit."""
    return isinstance(t, IntegerType) and t.width.data > 1


def is_bool(t: Attribute) -> bool:
    """i1: masks and the results of `accy.cmp`."""
    return isinstance(t, IntegerType) and t.width.data == 1


#: The element types accy computes in, as messages name them.
RUNNABLE_ELEMENTS = "f16, bf16, f32, f64, i1, i8, i16, i32, i64"


def is_runnable_element(t: Attribute) -> bool:
    """One of `RUNNABLE_ELEMENTS` (a signless integer of 1, 8, 16, 32 or 64
    bits, or a float): what buffers, kernels and the reference's numpy arrays
    hold. `si32` and `ui8` are other types to MLIR (no buffer, kernel or
    emitter knows them), so they are refused, not read as `i32` or `i8`."""
    if isinstance(t, IntegerType):
        return t.signedness.data == Signedness.SIGNLESS and t.width.data in (1, 8, 16, 32, 64)
    return is_float(t)


def tensor(shape: Sequence[int], element_type: Attribute) -> TensorType:
    """`tensor<shape x element_type>`."""
    return TensorType(element_type, list(shape))


def shape_of(v: SSAValue | Attribute) -> tuple[int, ...]:
    """The shape of a tensor value or type."""
    t = v.type if isinstance(v, SSAValue) else v
    assert isinstance(t, TensorType)
    return tuple(t.get_shape())


def elem_of(v: SSAValue | Attribute) -> Attribute:
    """The element type of a tensor value or type."""
    t = v.type if isinstance(v, SSAValue) else v
    assert isinstance(t, TensorType)
    return t.element_type


def numel(shape: Sequence[int]) -> int:
    """The number of elements of `shape`."""
    return math.prod(shape)


def element_bytes(t: Attribute) -> int:
    """Bytes one element takes in a buffer (i1 is stored as one byte)."""
    if isinstance(t, Float16Type | BFloat16Type):
        return 2
    if isinstance(t, Float32Type):
        return 4
    if isinstance(t, Float64Type):
        return 8
    if isinstance(t, IntegerType):
        return max(1, (t.width.data + 7) // 8)
    raise ValueError(f"no storage size for element type {t}")


def row_major_strides(shape: Sequence[int]) -> tuple[int, ...]:
    """Row-major strides in elements. A size-0 dim counts as 1, so that the
    dims before it keep the strides of the same shape without it (every
    layout accy compares against this one agrees on empty tensors)."""
    strides = []
    acc = 1
    for n in reversed(shape):
        strides.append(acc)
        acc *= max(n, 1)
    return tuple(reversed(strides))


def is_row_major(shape: Sequence[int], strides: Sequence[int]) -> bool:
    """Dense row-major, ignoring the strides of size-1 dims (never stepped)."""
    return all(s == r for n, s, r in zip(shape, strides, row_major_strides(shape), strict=True) if n != 1)
