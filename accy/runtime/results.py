"""A call's results as the host schedule returns them, worked out once per
program: which buffer slot each result is, its shape, its numpy dtype (bool
for i1), the dtype of its buffer (int8 for i1) and its bytes. A warm call
reads these instead of asking the tensor types again (dispatch cost,
docs/performance.md)."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from accy.runtime.schedule import Schedule
from accy.runtime.signature import TensorSpec


@dataclass(frozen=True, slots=True)
class ResultLayout:
    """One result of a program's calls (see the module docstring)."""

    slot: int
    shape: tuple[int, ...]
    dtype: np.dtype
    storage: np.dtype
    nbytes: int
    is_bool: bool  # an i1 result: its int8 buffer is viewed as bool


def result_layouts(schedule: Schedule) -> list[ResultLayout]:
    """The layout of each of `schedule`'s results, in order."""
    layouts = []
    for slot, t in zip(schedule.result_slots, schedule.result_types, strict=True):
        # A TensorSpec where the schedule came from the compile cache (compile_cache.py), else a TensorType.
        spec = t if isinstance(t, TensorSpec) else TensorSpec.of(t)
        shape, dtype, storage = spec.shape, spec.dtype, spec.storage
        layouts.append(ResultLayout(slot, shape, dtype, storage, math.prod(shape) * storage.itemsize, dtype != storage))
    return layouts
