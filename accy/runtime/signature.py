"""A tensor type as the runtime needs it, without xDSL: its text, shape,
numpy dtype and buffer dtype.

A function taken from the compile cache by its source text
(source_cache.py) is called, checked and printed through these, so that a
warm process never loads xDSL's dialects to run it. Only dtypes that
numpy names by `dtype.str` are kept this way (bf16, an `ml_dtypes` type,
is not: such a function takes the parsing path).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np


@dataclass(frozen=True, slots=True)
class TensorSpec:
    """`text` is the type as MLIR prints it (`tensor<8x5xf32>`); `dtype`
    the numpy dtype of its values (bool for i1), `storage` that of its
    buffer (int8 for i1)."""

    text: str
    shape: tuple[int, ...]
    dtype: np.dtype
    storage: np.dtype

    @property
    def nbytes(self) -> int:
        return math.prod(self.shape) * self.storage.itemsize

    def __str__(self) -> str:
        return self.text

    @staticmethod
    def of(t: Any) -> TensorSpec:
        """The spec of an xDSL `TensorType` (ValueError for an element type without a numpy dtype)."""
        from accy.reference.constants import numpy_dtype

        dtype = numpy_dtype(t.element_type)
        storage = np.dtype(np.int8) if dtype == np.bool_ else dtype
        return TensorSpec(str(t), tuple(int(n) for n in t.get_shape()), dtype, storage)

    def to_json(self) -> dict[str, Any] | None:
        """The spec as JSON data; None when its dtype does not round-trip by name (bf16)."""
        if np.dtype(self.dtype.str) != self.dtype or np.dtype(self.storage.str) != self.storage:
            return None
        return {"type": self.text, "shape": list(self.shape), "dtype": self.dtype.str, "storage": self.storage.str}

    @staticmethod
    def from_json(data: Any) -> TensorSpec:
        """The spec `to_json` wrote; ValueError (or another exception) for anything else."""
        dtype, storage = np.dtype(data["dtype"]), np.dtype(data["storage"])
        if dtype.hasobject or storage.hasobject or not isinstance(data["type"], str):
            raise ValueError("not a tensor spec")
        return TensorSpec(data["type"], tuple(int(n) for n in data["shape"]), dtype, storage)
