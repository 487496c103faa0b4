"""`accy.compile`: a function of a module, prepared for a device, callable
with numpy arrays.

    exe = accy.compile("model.mlir", device="reference")
    (y,) = exe(x, w)
    exe.stats.kernels, exe.compile_s

The `Executable` checks what it is given against the function's signature
(count, dtype, shape) before the device sees it, and says which argument is
wrong and how. Arrays must have the exact dtype (no silent float64 -> float32
narrowing); a non-contiguous array is copied to C order, which loses nothing.
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from xdsl.dialects.builtin import ModuleOp, TensorType
from xdsl.dialects.func import FuncOp

from accy.reference.constants import numpy_dtype
from accy.reference.interpreter import check_arguments, find_function
from accy.reference.interpreter import run as reference_run
from accy.runtime.device import Device, RunStats
from accy.runtime.devices import get_device
from accy.runtime.source import parse_module, verify_module


class Executable:
    """Function `fn`, compiled for `device`. Calling it returns a tuple with
    one array per function result."""

    def __init__(self, module: ModuleOp, fn: str, device: Device, strict: bool = False) -> None:
        # The device may rewrite `module` as it compiles: keep the function as
        # written for `compare_with_reference`.
        self.source = module.clone()
        self.module = module
        self.function: FuncOp = find_function(module, fn)
        self.fn = self.function.sym_name.data
        self.device = device
        self.strict = strict
        start = time.perf_counter()
        self.program = device.prepare(module, self.fn, strict)
        self.compile_s = time.perf_counter() - start
        self.run_s = 0.0

    @property
    def input_types(self) -> list[TensorType]:
        return list(self.function.function_type.inputs.data)  # type: ignore[arg-type]

    @property
    def output_types(self) -> list[TensorType]:
        return list(self.function.function_type.outputs.data)  # type: ignore[arg-type]

    @property
    def stats(self) -> RunStats:
        """Figures of the last call (kernels, peak bytes, fallbacks, profile)."""
        return self.program.stats

    def check_inputs(self, arrays: Sequence[object]) -> list[np.ndarray]:
        """The arrays as the device gets them; ValueError naming the first
        argument whose count, dtype or shape does not match the signature."""
        prepared = [np.asarray(a) if isinstance(a, np.generic) else a for a in arrays]
        check_arguments(self.function, prepared)
        return [np.ascontiguousarray(a) for a in prepared]  # type: ignore[arg-type]

    def __call__(self, *arrays: object, profile: bool = False) -> tuple[np.ndarray, ...]:
        inputs = self.check_inputs(arrays)
        start = time.perf_counter()
        outputs = self.program.run(inputs, profile=profile)
        self.run_s = time.perf_counter() - start
        return tuple(outputs)

    def reference_outputs(self, inputs: Sequence[np.ndarray]) -> tuple[np.ndarray, ...]:
        """What the reference interpreter computes for `inputs`."""
        return reference_run(self.source, self.fn, *self.check_inputs(inputs))

    def compare_with_reference(
        self, inputs: Sequence[np.ndarray], outputs: Sequence[np.ndarray]
    ) -> list[Comparison]:
        """Compares `outputs` (of this executable on `inputs`) with the
        reference interpreter's, output by output."""
        expected = self.reference_outputs(inputs)
        return [Comparison.of(got, want) for got, want in zip(outputs, expected, strict=True)]

    def random_inputs(self, seed: int = 0) -> list[np.ndarray]:
        """Random arguments of the right shapes and dtypes (see `random_array`)."""
        rng = np.random.default_rng(seed)
        return [random_array(t, rng) for t in self.input_types]

    def __repr__(self) -> str:
        ins = ", ".join(str(t) for t in self.input_types)
        outs = ", ".join(str(t) for t in self.output_types)
        return f"<accy.Executable @{self.fn}({ins}) -> ({outs}) on {self.device.name}>"


# (rtol, atol) by element type; integers and i1 must match exactly.
TOLERANCES: dict[np.dtype, tuple[float, float]] = {
    np.dtype(np.float16): (1e-2, 1e-3),
    np.dtype(np.float32): (1e-3, 1e-4),
    np.dtype(np.float64): (1e-9, 1e-12),
}


@dataclass(frozen=True)
class Comparison:
    """One output against the reference: `ok` when every element is within
    atol + rtol*|expected| (NaN where the reference has NaN, same infinities).
    `max_rel` is max |got - expected| / |expected| over nonzero expected."""

    max_abs: float
    max_rel: float
    rtol: float
    atol: float
    ok: bool

    @staticmethod
    def of(got: np.ndarray, expected: np.ndarray) -> Comparison:
        rtol, atol = TOLERANCES.get(expected.dtype, (0.0, 0.0))
        if got.shape != expected.shape or got.dtype != expected.dtype:
            return Comparison(math.inf, math.inf, rtol, atol, False)
        g = got.astype(np.float64)
        e = expected.astype(np.float64)
        ok = bool(np.allclose(g, e, rtol=rtol, atol=atol, equal_nan=True))
        with np.errstate(invalid="ignore", divide="ignore"):
            diff = np.abs(g - e)
            # Equal values (infinities included) differ by nothing.
            diff = np.where((g == e) | (np.isnan(g) & np.isnan(e)), 0.0, diff)
            diff = np.where(np.isnan(diff), math.inf, diff)
            nonzero = e != 0
            rel = diff[nonzero] / np.abs(e[nonzero])
            rel = np.where(diff[nonzero] == 0, 0.0, np.where(np.isnan(rel), math.inf, rel))
        max_abs = float(diff.max()) if diff.size else 0.0
        max_rel = float(rel.max()) if rel.size else 0.0
        return Comparison(max_abs, max_rel, rtol, atol, ok)


def random_array(t: TensorType, rng: np.random.Generator) -> np.ndarray:
    """Standard normal values for floats, 0/1 for i1, integers in [-5, 5]."""
    dtype = numpy_dtype(t.element_type)
    shape = tuple(t.get_shape())
    if dtype == np.bool_:
        return rng.integers(0, 2, size=shape).astype(np.bool_)
    if dtype.kind == "f":
        return rng.standard_normal(size=shape).astype(dtype)
    return rng.integers(-5, 6, size=shape).astype(dtype)


def compile(
    module_or_path: ModuleOp | str | os.PathLike[str],
    device: str | Device = "reference",
    fn: str = "main",
    strict: bool = False,
) -> Executable:
    """Compiles function `fn` of a module (a `ModuleOp`, `.mlir` text or a
    path) for `device` (a name such as "reference", "opencl", "opencl:1", or a
    `Device`). The caller's module is not modified. `strict` makes a work item
    that would run on the host reference path instead of a kernel an error.
    """
    if isinstance(module_or_path, ModuleOp):
        module = module_or_path.clone()
        verify_module(module)
    else:
        module = parse_module(module_or_path)
    target = get_device(device) if isinstance(device, str) else device
    return Executable(module, fn, target, strict)
