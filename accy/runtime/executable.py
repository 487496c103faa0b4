"""`accy.compile`: a function of a module, prepared for a device, callable
with numpy arrays and device arrays (`accy.Array`, runtime/array.py).

    exe = accy.compile("model.mlir", device="reference")
    (y,) = exe(x, w)
    (h,) = exe(x, w, to_host=False)     # an accy.Array: stays on the device
    exe.stats.kernels, exe.compile_s

The `Executable` checks what it is given against the function's signature
(count, dtype, shape) before the device sees it, and says which argument is
wrong and how. Arrays must have the exact dtype (no silent float64 -> float32
narrowing); a non-contiguous array is copied to C order, which loses nothing.
An `accy.Array` of the executable's device is passed as it is (no transfer);
one of another device is read to the host first (counted in `stats` as a
download).

Memory: a program whose buffer plan peaks past its device's `memory_limit`
(the host's memory on the LLVM and reference devices, an OpenCL device's
global memory, or `$ACCY_MEMORY_LIMIT`) cannot run there. `accy.compile`
warns (`DeviceMemoryWarning`) and every call raises `DeviceMemoryError`
before it allocates anything (`Executable.check_memory`), as MLIR's runtimes
fail at the allocation rather than at compile time: the limit may be raised
between the two.
"""

from __future__ import annotations

import math
import os
import sys
import time
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING

import numpy as np

from accy.dialects.source_text import read_source
from accy.runtime.array import Array, is_bfloat16_dtype
from accy.runtime.device import Device, KernelDevice, RunStats
from accy.runtime.devices import get_device
from accy.runtime.disk_cache import stacklevel_outside_accy
from accy.runtime.host_memory import (
    MEMORY_LIMIT_ENV,
    DeviceMemoryError,
    DeviceMemoryWarning,
    format_bytes,
    physical_memory,
)
from accy.runtime.phases import PHASES, collecting, phase
from accy.runtime.signature import TensorSpec

if TYPE_CHECKING:
    from xdsl.dialects.builtin import ModuleOp, TensorType
    from xdsl.dialects.func import FuncOp

    from accy.dialects.parse import SourceMap
    from accy.runtime.source_cache import SourceEntry

# xDSL, the parser, the passes and the reference interpreter are imported
# where they are used: an executable of a text found in the compile cache
# (`compile`, source_cache.py) is built and called without them.


class Executable:
    """Function `fn`, compiled for `device`. Calling it returns a tuple with
    one result per function result: numpy arrays, or `accy.Array`s on the
    device when `to_host` is False (the executable's default, or the
    call's `to_host=` argument)."""

    def __init__(
        self,
        module: ModuleOp,
        fn: str,
        device: Device,
        strict: bool = False,
        to_host: bool = True,
        source_text: str | None = None,
    ) -> None:
        from accy.passes.pass_manager import PassFailure
        from accy.reference.interpreter import find_function

        # The device may rewrite `module` as it compiles (kernelize replaces
        # the function): keep the function as written, in a clone, for the
        # signature checks and `compare_with_reference`.
        self.source = module.clone()
        self.module = module
        self.function = find_function(self.source, fn)
        self.fn = self.function.sym_name.data
        self.device = device
        self.strict = strict
        #: Whether calls return numpy arrays (True) or accy.Arrays on the device, unless a call says.
        self.to_host = to_host
        self._text = source_text
        self.input_specs, self.output_specs = _specs(self.input_types), _specs(self.output_types)
        start = time.perf_counter()
        try:
            if source_text is not None and isinstance(device, KernelDevice):
                # The text is indexed with the program in the compile cache (source_cache.py).
                self.program = device.prepare(module, self.fn, strict, source=source_text)
            else:
                self.program = device.prepare(module, self.fn, strict)
        except PassFailure as failure:
            from accy.passes.kernel_ir.bounds import OutOfBoundsError
            from accy.passes.kernelization.kernel_call import KernelCallError
            from accy.passes.kernelization.kernelize import LoweringRefused  # loads every lowering: only now

            if isinstance(failure.__cause__, LoweringRefused | OutOfBoundsError | KernelCallError):
                # --strict or the fast tier refused a host fallback, a custom
                # kernel is not proved in bounds: say why, plainly.
                raise ValueError(str(failure.__cause__)) from None
            raise
        self.compile_s = time.perf_counter() - start
        self._ready()

    @classmethod
    def _from_cache(
        cls, text: str, entry: SourceEntry, program: object, device: Device, strict: bool, to_host: bool, seconds: float
    ) -> Executable:
        """The executable of a program thawed through the source index
        (source_cache.py): `source`, `function` and `module` are parsed from
        `text` when first asked for."""
        exe = cls.__new__(cls)
        exe.fn, exe.device, exe.strict, exe.to_host = entry.fn, device, strict, to_host
        exe._text = text
        exe.input_specs, exe.output_specs = list(entry.inputs), list(entry.outputs)
        exe.program = program  # type: ignore[assignment]
        exe.compile_s = seconds
        exe._ready()
        return exe

    def _ready(self) -> None:
        self.run_s = 0.0
        #: Seconds of the first call (every kernel is built by then, on PoCL too), None before it.
        self.first_call_s: float | None = None
        #: Seconds of the compile by phase (runtime/phases.py), filled by `accy.compile`.
        self.phases: dict[str, float] = dict.fromkeys(PHASES, 0.0)
        specs = self.input_specs
        self._signature = [(s.dtype, s.shape) for s in specs] if specs is not None else None
        #: The bytes the buffer plan peaks at (inputs and outputs included; 0 where the device plans none).
        self.peak_bytes = self.program.stats.peak_bytes
        limit = self._limit_exceeded()
        if limit is not None:
            warnings.warn(
                DeviceMemoryWarning(
                    f"@{self.fn}'s buffers peak at {format_bytes(self.peak_bytes)}, more than device "
                    f"'{self.device.name}' may hold (memory_limit {format_bytes(limit)}): calling it raises DeviceMemoryError"
                ),
                stacklevel=stacklevel_outside_accy(),  # the caller of accy.compile, through any of accy's frames
            )

    # An executable from the source index parses its text only when its IR is asked for.
    @cached_property
    def source(self) -> ModuleOp:
        """The module holding function `fn` as written (prepared: other functions dropped, calls inlined)."""
        from accy.dialects.parse import parse_module, source_map_of

        assert self._text is not None
        module = parse_module(self._text)
        prepare_function(module, self.fn, source_map_of(module))
        return module

    @cached_property
    def function(self) -> FuncOp:
        """Function `fn` of `source`."""
        from accy.reference.interpreter import find_function

        return find_function(self.source, self.fn)

    @cached_property
    def module(self) -> ModuleOp:
        """The module as the device compiled it (for a cached program: `source` with the device's profile attached)."""
        module = self.source.clone()
        if isinstance(self.device, KernelDevice):
            self.device.profile_for(module).attach(module)
        return module

    def _limit_exceeded(self) -> int | None:
        """The device's memory_limit when the buffer plan peaks past it, else None."""
        limit = self.device.memory_limit
        return limit if limit is not None and self.peak_bytes > limit else None

    def check_memory(self) -> None:
        """`DeviceMemoryError` when the buffer plan peaks past the device's
        `memory_limit` (see the module docstring): no call can fit."""
        limit = self._limit_exceeded()
        if limit is not None:
            raise DeviceMemoryError(
                f"calling @{self.fn} (its buffers peak at {self.peak_bytes:,} bytes): device '{self.device.name}' is "
                f"out of memory: that is more than its memory_limit, {format_bytes(limit)}; nothing was allocated. "
                f"Use smaller tensors, or raise the device's memory_limit (${MEMORY_LIMIT_ENV})",
                self.peak_bytes,
                self.device.memory_report(),
            )

    @property
    def input_types(self) -> list[TensorType]:
        """The argument types (xDSL's; `input_specs` holds them without xDSL, where numpy has their dtypes)."""
        return list(self.function.function_type.inputs.data)  # type: ignore[arg-type]

    @property
    def output_types(self) -> list[TensorType]:
        return list(self.function.function_type.outputs.data)  # type: ignore[arg-type]

    @property
    def stats(self) -> RunStats:
        """Figures of the last call (kernels, peak bytes, fallbacks, profile)."""
        return self.program.stats

    def check_inputs(self, arrays: Sequence[object], keep_arrays: bool = False) -> list[np.ndarray | Array]:
        """The arrays as the device gets them; ValueError naming the first
        argument whose count, dtype or shape does not match the signature.

        A numpy scalar is a 0-d array of its dtype. A Python `bool`, `int` or
        `float` given for a rank-0 tensor takes the tensor's element type when
        it is of that kind (bool for i1; int for integers, in range; int or
        float for floats, finite stays finite), as numpy's weak scalars do.
        An `accy.Array` is checked as an array of its dtype and shape; with
        `keep_arrays`, one of this executable's device stays as it is (the
        device uses its buffer), else its values are read to the host."""
        device = self.device if keep_arrays else None
        warm = self._warm_inputs(arrays, device)
        if warm is not None:
            return warm
        from accy.reference.constants import numpy_dtype
        from accy.reference.interpreter import check_arguments

        if len(arrays) == len(self.input_types):
            for i, (a, t) in enumerate(zip(arrays, self.input_types, strict=True)):
                if isinstance(a, Array) and (a.dtype, a.shape) != (numpy_dtype(t.element_type), tuple(t.get_shape())):
                    raise ValueError(
                        f"argument #{i} of @{self.fn} expects {t} ({numpy_dtype(t.element_type)}, shape "
                        f"{tuple(t.get_shape())}), got an accy.Array of {a.dtype} and shape {a.shape}"
                    )
        arrays = [_argument(a, device) for a in arrays]
        prepared = [np.asarray(a) if isinstance(a, np.generic) else a for a in arrays]
        if len(prepared) == len(self.input_types):
            prepared = [
                _python_scalar(a, t, i, self.fn) if isinstance(a, bool | int | float) else a
                for i, (a, t) in enumerate(zip(prepared, self.input_types, strict=True))
            ]
        # Kept accy.Arrays are checked as zero-copy stand-ins of their dtype and shape.
        check_arguments(self.function, [_stand_in(a) if isinstance(a, Array) else a for a in prepared])
        return [a if isinstance(a, Array) else _c_order(a) for a in prepared]  # type: ignore[arg-type]

    def _warm_inputs(self, arrays: Sequence[object], device: Device | None) -> list[np.ndarray | Array] | None:
        """The warm path of `check_inputs`: when every argument is a numpy
        array or an accy.Array of `device` of exactly the signature's dtype
        and shape, the arrays as the device gets them (numpy arrays in C
        order); else None, and the full check runs."""
        signature = self._signature
        if signature is None or len(arrays) != len(signature):
            return None
        prepared: list[np.ndarray | Array] = []
        for a, (dtype, shape) in zip(arrays, signature, strict=True):
            kind = type(a)
            if kind is np.ndarray:
                if a.dtype != dtype or a.shape != shape:  # type: ignore[attr-defined]
                    return None
                prepared.append(a if a.flags.c_contiguous else _c_order(a))  # type: ignore[attr-defined,arg-type]
            elif kind is Array and a.device is device and a.dtype == dtype and a.shape == shape:  # type: ignore[attr-defined]
                prepared.append(a)  # type: ignore[arg-type]
            else:
                return None
        return prepared

    def __call__(self, *arrays: object, profile: bool = False, to_host: bool | None = None) -> tuple[object, ...]:
        """Runs the function on `arrays` (numpy arrays, scalars, `accy.Array`s);
        its results as numpy arrays, or as `accy.Array`s on the device when
        `to_host` is False (default: the executable's `to_host`).
        `DeviceMemoryError` when the call's buffers do not fit on the device."""
        inputs = self._warm_inputs(arrays, self.device)
        moved: list[int] = []
        if inputs is None:
            inputs = self.check_inputs(arrays, keep_arrays=True)
            # accy.Arrays of other devices, read to the host by check_inputs.
            moved = [a.nbytes for a in arrays if isinstance(a, Array) and a.device is not self.device]
        limit = self.device.memory_limit
        if limit is not None and self.peak_bytes > limit:
            self.check_memory()
        start = time.perf_counter()
        try:
            outputs = self.program.run(inputs, profile=profile, to_host=self.to_host if to_host is None else to_host)
        except DeviceMemoryError as e:
            peak = self.program.stats.peak_bytes
            raise DeviceMemoryError(f"calling @{self.fn} (its buffers peak at {peak:,} bytes): {e}", e.requested, e.report) from None
        self.run_s = time.perf_counter() - start
        if self.first_call_s is None:
            self.first_call_s = self.run_s
        for nbytes in moved:
            self.program.stats.download(nbytes)
        return tuple(outputs)

    def reference_outputs(self, inputs: Sequence[np.ndarray]) -> tuple[np.ndarray, ...]:
        """What the reference interpreter computes for `inputs`."""
        from accy.reference.interpreter import run as reference_run

        return reference_run(self.source, self.fn, *self.check_inputs(inputs))

    def compare_with_reference(
        self, inputs: Sequence[object], outputs: Sequence[object]
    ) -> list[Comparison]:
        """Compares `outputs` (of this executable on `inputs`) with the
        reference interpreter's, output by output."""
        expected = self.reference_outputs(inputs)
        return [Comparison.of(np.asarray(got), want) for got, want in zip(outputs, expected, strict=True)]

    def random_inputs(self, seed: int = 0) -> list[np.ndarray]:
        """Random arguments of the right shapes and dtypes (see
        `random_array`); `MemoryError`, before anything is allocated, when
        they take more than the host's memory."""
        specs = self.input_specs if self.input_specs is not None else _specs_or_fail(self.input_types)
        need = sum(math.prod(s.shape) * s.dtype.itemsize for s in specs)
        host = physical_memory()
        if host is not None and need > host:
            raise MemoryError(
                f"random arguments of @{self.fn} take {format_bytes(need)}, more than the host's memory ({format_bytes(host)})"
            )
        rng = np.random.default_rng(seed)
        return [_random_values(s.dtype, s.shape, rng) for s in specs]

    def __repr__(self) -> str:
        ins = ", ".join(str(t) for t in (self.input_specs or self.input_types))
        outs = ", ".join(str(t) for t in (self.output_specs or self.output_types))
        return f"<accy.Executable @{self.fn}({ins}) -> ({outs}) on {self.device.name}>"


def _specs(types: list[TensorType]) -> list[TensorSpec] | None:
    """The spec of each type, or None where an element type has no numpy dtype."""
    try:
        return _specs_or_fail(types)
    except (ValueError, KeyError):
        return None


def _specs_or_fail(types: list[TensorType]) -> list[TensorSpec]:
    return [TensorSpec.of(t) for t in types]


def _c_order(array: np.ndarray) -> np.ndarray:
    # np.ascontiguousarray would make a 0-d array 1-d.
    return array if array.flags.c_contiguous else np.array(array, order="C")


def _argument(value: object, device: Device | None) -> object:
    """`value`, unless it is an `accy.Array` not of `device`: then its values on the host."""
    if not isinstance(value, Array) or value.device is device:
        return value
    return value._values(export=False)


def _stand_in(array: Array) -> np.ndarray:
    """A read-only array of `array`'s dtype and shape that holds no memory."""
    return np.broadcast_to(np.zeros((), array.dtype), array.shape)


def _python_scalar(value: bool | int | float, t: object, index: int, fn: str) -> object:
    """`value` as a 0-d array for the rank-0 tensor type `t` (see
    `Executable.check_inputs`); `value` unchanged where no conversion is
    sensible, so the signature check reports it."""
    from xdsl.dialects.builtin import TensorType

    from accy.reference.constants import numpy_dtype

    if not isinstance(t, TensorType) or t.get_shape() != ():
        return value
    dtype = numpy_dtype(t.element_type)
    if dtype == np.bool_:
        return np.asarray(value, dtype) if isinstance(value, bool) else value
    if isinstance(value, bool) or (dtype.kind in "iu" and not isinstance(value, int)):
        return value
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        if not info.min <= value <= info.max:
            raise ValueError(f"argument #{index} of @{fn} expects {t}: {value} is out of the range of {dtype}")
        return np.asarray(value, dtype)
    with np.errstate(over="ignore"):
        array = np.asarray(value, dtype)
    if math.isfinite(value) and not np.isfinite(array):
        raise ValueError(f"argument #{index} of @{fn} expects {t}: {value} overflows {dtype}")
    return array


class _Tolerances(dict[np.dtype, tuple[float, float]]):
    """(rtol, atol) by element type (integers and i1 must match exactly); bf16 is found by name, so that this table needs
    no `ml_dtypes` import. bf16 keeps 8 bits of mantissa to f16's 11: one
    rounding is 2^-9 relative."""

    def __missing__(self, dtype: np.dtype) -> tuple[float, float]:
        if is_bfloat16_dtype(dtype):
            return (4e-2, 8e-3)
        raise KeyError(dtype)

    def get(self, dtype: np.dtype, default: tuple[float, float] | None = None) -> tuple[float, float] | None:  # type: ignore[override]
        return self[dtype] if dtype in self or is_bfloat16_dtype(dtype) else default


TOLERANCES = _Tolerances({
    np.dtype(np.float16): (1e-2, 1e-3),
    np.dtype(np.float32): (1e-3, 1e-4),
    np.dtype(np.float64): (1e-9, 1e-12),
})


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


#: Elements `random_array` draws at a time: what it needs beyond the array itself.
RANDOM_CHUNK = 1 << 20


def random_array(t: TensorType, rng: np.random.Generator) -> np.ndarray:
    """Standard normal values for floats, 0/1 for i1, integers in [-5, 5].
    Drawn into the array itself, a chunk at a time in its own dtype (f16 in
    f32), so that it costs the array and a chunk, not float64s of its size."""
    from accy.reference.constants import numpy_dtype

    return _random_values(numpy_dtype(t.element_type), tuple(t.get_shape()), rng)


def _random_values(dtype: np.dtype, shape: tuple[int, ...], rng: np.random.Generator) -> np.ndarray:
    """`random_array`'s values for an array of `dtype` and `shape`."""
    array = np.empty(shape, dtype)
    flat = array.reshape(-1)
    for start in range(0, flat.size, RANDOM_CHUNK):
        part = flat[start : start + RANDOM_CHUNK]
        if dtype == np.bool_:
            part[:] = rng.integers(0, 2, size=part.size, dtype=np.int8)
        elif dtype.kind == "f" and dtype.itemsize >= 4:
            rng.standard_normal(out=part, dtype=dtype)
        elif dtype.kind == "f" or is_bfloat16_dtype(dtype):
            part[:] = rng.standard_normal(size=part.size, dtype=np.float32)
        else:
            part[:] = rng.integers(-5, 6, size=part.size, dtype=dtype)
    return array


def compile(
    module_or_path: ModuleOp | str | os.PathLike[str],
    device: str | Device = "auto",
    fn: str = "main",
    strict: bool = False,
    to_host: bool = True,
) -> Executable:
    """Compiles function `fn` of a module (a `ModuleOp`, `.mlir` text or a
    path) for `device` (a name such as "reference", "opencl", "opencl:1",
    "llvm", or a `Device`; by default `auto`: an OpenCL GPU when one works,
    else the LLVM device). The caller's module is not modified. `strict` makes a work item
    that would run on the host reference path instead of a kernel an error.
    `to_host=False` makes calls return `accy.Array`s that stay on the device
    (a call's own `to_host=` argument overrides it).

    A text (or file) compiled before on a device of the same identity is
    taken from the compile cache by its text, unparsed (source_cache.py):
    in the same process from memory, in another from disk.
    """
    start = time.perf_counter()
    target = get_device(device) if isinstance(device, str) else device
    with collecting() as phases:
        exe = _compile(module_or_path, target, fn, strict, to_host, start)
    exe.phases = phases
    return exe


def _compile(
    module_or_path: ModuleOp | str | os.PathLike[str], target: Device, fn: str, strict: bool, to_host: bool, start: float
) -> Executable:
    text = None
    if not _is_module_op(module_or_path):
        text, _ = read_source(module_or_path)  # type: ignore[arg-type]
        if isinstance(target, KernelDevice):
            found = target.prepare_source(text, fn, strict)
            if found is not None:
                program, entry = found
                return Executable._from_cache(text, entry, program, target, strict, to_host, time.perf_counter() - start)
    with phase("parse"):
        from accy.dialects.parse import parse_module, source_map_of, verify_module

        if text is None:
            module = module_or_path.clone()  # type: ignore[union-attr]
            verify_module(module)
        else:
            module = parse_module(module_or_path)  # type: ignore[arg-type]
        prepare_function(module, fn, source_map_of(module))
    return Executable(module, fn, target, strict, to_host, source_text=text)


def _is_module_op(value: object) -> bool:
    """Whether `value` is an xDSL `ModuleOp` (never, while xDSL is not loaded)."""
    builtin = sys.modules.get("xdsl.dialects.builtin")
    return builtin is not None and isinstance(value, builtin.ModuleOp)


def _runnable_func_ops() -> tuple[type, ...]:
    """Ops a function accy runs may hold besides the accy dialect's."""
    from xdsl.dialects import func

    return (func.CallOp, func.ReturnOp)


def prepare_function(module: ModuleOp, fn: str, source_map: SourceMap | None = None) -> None:
    """Makes `module` (a private copy) hold function `fn` alone, its calls
    inlined, after checking that accy can run it: `fn` and every function it
    calls take and return tensors and hold only accy ops, calls and returns;
    no call is recursive or to a declared-only function. Raises
    `SourceDiagnostic` at the first offending op; does nothing when there is
    no function `fn` (`Executable` reports that)."""
    from xdsl.dialects import func

    from accy.dialects.parse import diagnostic_at
    from accy.passes.inline import CallError, callees, inline_calls

    functions = {op.sym_name.data: op for op in module.ops if isinstance(op, func.FuncOp)}
    if fn not in functions:
        return
    reached = [functions[fn]]
    for f in reached:  # grows as calls are found: breadth-first over the call graph
        _check_runnable(f, source_map)
        for call in callees(f):
            callee = functions.get(call.callee.root_reference.data)
            if callee is not None and callee not in reached:
                reached.append(callee)
    for f in functions.values():
        if f not in reached:
            f.detach()
            f.erase()
    try:
        inline_calls(module)
    except CallError as e:
        raise diagnostic_at(e.op, str(e), source_map) from None
    for f in reached[1:]:
        f.detach()
        f.erase()


def _check_runnable(f: FuncOp, source_map: SourceMap | None) -> None:
    from xdsl.dialects.builtin import TensorType

    from accy.dialects.parse import diagnostic_at
    from accy.dialects.types import RUNNABLE_ELEMENTS, is_runnable_element

    runnable_func_ops = _runnable_func_ops()
    name = f.sym_name.data
    if f.is_declaration:
        raise diagnostic_at(f, f"@{name} is only declared: accy needs the body of every function it runs", source_map)
    for i, t in enumerate(f.function_type.inputs.data):
        if not isinstance(t, TensorType):
            raise diagnostic_at(f, f"argument #{i} of @{name} has type {t}; accy runs functions over tensors", source_map)
    for i, t in enumerate(f.function_type.outputs.data):
        if not isinstance(t, TensorType):
            raise diagnostic_at(f, f"result #{i} of @{name} has type {t}; accy runs functions over tensors", source_map)
    for op in f.walk():
        if op is not f and op.dialect_name() != "accy" and not isinstance(op, runnable_func_ops):
            raise diagnostic_at(
                op, "accy cannot run this op: a function accy runs holds accy ops, func.call and func.return", source_map
            )
        types = f.function_type.inputs.data if op is f else [r.type for r in op.results]
        for t in types:
            if isinstance(t, TensorType) and not is_runnable_element(t.element_type):
                raise diagnostic_at(
                    op, f"accy runs no element type {t.element_type} (only {RUNNABLE_ELEMENTS})", source_map
                )
