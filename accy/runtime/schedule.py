"""The host schedule as steps: what every device that runs kernels shares.

A kernelized function (`func.func` with `accy.signature`) is a straight-line
list of host ops over flat memref buffers, with `scf.for` loops (an
`accy.iterate`) whose iter_args are buffers. `translate` walks it once into
a `Schedule`: numbered buffer slots and one step per op (`Alloc`, `Free`,
`Constant`, a device-made launch step, `Fallback`, `Copy`, and `Loop`,
which holds the steps of its body); index constants become launch sizes
and trip counts. A loop's iter_args are slots that are rebound, not
copied: a trip ends by binding each to the buffer its `scf.yield` names
(`StepExecutor.loop`), so two buffers that swap roles cost nothing per
trip. A device passes `make_launch`, which turns the device-neutral
`Launch` into its own step (an OpenCL kernel and its NDRange, an LLVM
function and its work-group ranges) or raises `HostScheduleError`.

A call runs the steps through a `StepExecutor`, the one step loop: a device
subclasses it with how it launches, allocates, frees, fills a constant,
copies and runs a fallback, and writes no loop of its own. `describe` says
the steps in one line each.

Also here: the storage type of a buffer (i1 is stored as int8), the poison
value of allocated buffers (`ACCY_POISON`), and a fallback's evaluation by
the reference interpreter on flat host arrays.
"""

from __future__ import annotations

import math
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from accy.env import env_flag
from accy.runtime.device import LaunchProfile

if TYPE_CHECKING:
    from xdsl.dialects import func, gpu, scf
    from xdsl.dialects.builtin import MemRefType, ModuleOp, TensorType
    from xdsl.ir import Operation, SSAValue

    from accy.dialects.host import FallbackOp

# The steps and the step loop import no xDSL: a program from the compile
# cache runs without its dialects (compile_cache.py). What reads IR
# (translate, fallbacks) imports them where it runs.

#: The byte integer buffers are filled with under `poison` (see opencl.py's docstring).
POISON_BYTE = 0x5A
POISON_ENV = "ACCY_POISON"


class HostScheduleError(ValueError):
    """The host function holds an op the runtime does not run."""


def poison_from_env(poison: bool | None) -> bool:
    """`poison` when given, else `$ACCY_POISON` (yes/no, as accy/env.py reads it; default no)."""
    return env_flag(POISON_ENV) if poison is None else poison


def storage_dtype(t: Any) -> np.dtype:
    """The numpy dtype of a buffer's elements (i1 tensors are stored as int8)."""
    from accy.reference.constants import numpy_dtype

    dtype = numpy_dtype(t)
    return np.dtype(np.int8) if dtype == np.bool_ else dtype


def poison_pattern(dtype: np.dtype) -> np.ndarray:
    """One element of the poison value of a buffer of `dtype` (NaN or POISON_BYTE bytes)."""
    if dtype.kind == "f":
        return np.full(1, np.nan, dtype)
    return np.full(dtype.itemsize, POISON_BYTE, np.uint8).view(dtype)


def memref_nbytes(t: MemRefType) -> int:
    return math.prod(t.get_shape()) * storage_dtype(t.element_type).itemsize


def as_tensor(host: np.ndarray, t: TensorType) -> np.ndarray:
    """A flat storage array viewed with `t`'s shape (and as bool for i1)."""
    from accy.reference.constants import numpy_dtype

    array = host.reshape(tuple(t.get_shape()))
    if numpy_dtype(t.element_type) == np.bool_:
        return array.view(np.bool_)
    return array


def host_function(module: ModuleOp, fn: str) -> func.FuncOp:
    from xdsl.dialects import func

    host = next((op for op in module.ops if isinstance(op, func.FuncOp) and op.sym_name.data == fn), None)
    if host is None:
        raise ValueError(f"the module has no function @{fn}")
    return host


def has_kernels(module: ModuleOp) -> bool:
    from xdsl.dialects import gpu

    return any(isinstance(op, gpu.ModuleOp) and op.body.block.first_op is not None for op in module.ops)


# --------------------------------------------------------------------------
# Steps
# --------------------------------------------------------------------------


@dataclass
class Launch:
    """A `gpu.launch_func`, before a device makes its step of it."""

    name: str
    kind: str  # the kernel's accy.kind ("kernel" when unset)
    func: gpu.FuncOp
    args: list[int]
    grid: tuple[int, int, int]
    block: tuple[int, int, int]


@dataclass
class Fallback:
    op: FallbackOp
    inputs: list[int]
    outputs: list[int]


@dataclass
class Alloc:
    slot: int
    nbytes: int
    dtype: np.dtype
    # The function returns this buffer as a whole (same bytes and dtype, not a
    # larger buffer that a result shares with other values).
    result: bool = False


@dataclass
class Free:
    slot: int


@dataclass
class Constant:
    slot: int
    data: np.ndarray  # flat, storage dtype
    nbytes: int
    rewritten: bool  # some step writes the buffer: refill on every call


@dataclass
class Copy:
    """`accy_host.copy`: the first `nbytes` bytes of `source` into `target`, on the device."""

    source: int
    target: int
    nbytes: int


@dataclass
class Loop:
    """An `scf.for` over buffers: bind `carried` to `inits`, run `body`
    `count` times, each trip ending by binding `carried` to what was in
    `yields`; then bind `results` to `carried`."""

    count: int
    carried: list[int]
    inits: list[int]
    body: list[Any]
    yields: list[int]
    results: list[int]


def walk_steps(steps: list[Any]) -> list[Any]:
    """`steps` and the steps of their loops' bodies, in program order."""
    out: list[Any] = []
    for step in steps:
        out.append(step)
        if isinstance(step, Loop):
            out.extend(walk_steps(step.body))
    return out


def map_steps(steps: list[Any], change: Callable[[Any], Any], kind: type) -> list[Any]:
    """`steps` with every step of type `kind` (in loops too) replaced by `change(step)`."""
    out = []
    for step in steps:
        if isinstance(step, Loop):
            step = replace(step, body=map_steps(step.body, change, kind))
        elif isinstance(step, kind):
            step = change(step)
        out.append(step)
    return out


@dataclass
class Schedule:
    """The host function as steps over numbered buffer slots."""

    num_slots: int
    arg_slots: list[int]
    arg_nbytes: list[int]
    arg_written: list[bool]
    steps: list[Any]
    result_slots: list[int]
    result_types: list[TensorType]
    peak_bytes: int
    fallbacks: int
    #: Launch ops of the host function (a loop's body counted once): the program's kernels.
    launches: int = field(default=0)
    #: Kernels one call launches (a loop's body counted once per trip).
    launches_per_call: int = field(default=0)


def translate(
    host: func.FuncOp,
    gfuncs: dict[str, gpu.FuncOp],
    make_launch: Callable[[Launch], Any],
    written_arguments: Callable[[gpu.FuncOp], set[int]],
    who: str,
) -> Schedule:
    """The steps of `host` (see the module docstring). `gfuncs` are the
    kernels by name, `written_arguments` the argument indices a kernel
    stores to, `who` the prefix of error messages ("opencl runtime")."""
    from xdsl.dialects import arith, func, gpu, memref, scf
    from xdsl.dialects.builtin import IntegerAttr, MemRefType

    from accy.dialects.host import PEAK_BYTES_ATTR, SIGNATURE_ATTR, CopyOp, FallbackOp
    from accy.dialects.host import ConstantOp as HostConstantOp
    from accy.reference.constants import dense_to_numpy

    slots: dict[SSAValue, int] = {}
    ints: dict[SSAValue, int] = {}
    steps: list[Any] = []
    written: set[int] = set()

    def slot(v: SSAValue) -> int:
        if v not in slots:
            slots[v] = len(slots)
        return slots[v]

    def buffer(v: SSAValue, user: Operation) -> int:
        if v not in slots:
            raise HostScheduleError(f"{who}: '{user.name}' uses {v} which is not a buffer of the schedule")
        return slots[v]

    block = host.body.block
    arg_slots = [slot(a) for a in block.args]
    for a in block.args:
        if not isinstance(a.type, MemRefType):
            raise HostScheduleError(f"{who}: @{host.sym_name.data} takes {a.type}; expected flat memref buffers")
    result_slots: list[int] = []
    fallbacks = 0
    launches = 0

    def steps_of(ops: Iterable[Operation]) -> tuple[list[Any], int]:
        """The steps of `ops` and how many launches one run of them makes."""
        nonlocal fallbacks, launches, result_slots
        steps: list[Any] = []
        per_run = 0
        for op in ops:
            if isinstance(op, arith.ConstantOp):
                value = op.value
                if isinstance(value, IntegerAttr):
                    ints[op.result] = value.value.data
                    continue
                raise HostScheduleError(f"{who}: host constant {value} is not an index")
            if isinstance(op, memref.AllocOp):
                t = op.memref.type
                steps.append(Alloc(slot(op.memref), memref_nbytes(t), storage_dtype(t.element_type)))
            elif isinstance(op, memref.DeallocOp):
                steps.append(Free(buffer(op.memref, op)))
            elif isinstance(op, HostConstantOp):
                data = dense_to_numpy(op.value).reshape(-1)
                data = np.ascontiguousarray(data.astype(storage_dtype(op.result.type.element_type)))
                steps.append(Constant(slot(op.result), data, memref_nbytes(op.result.type), False))
            elif isinstance(op, gpu.LaunchFuncOp):
                steps.append(launch_step(op))
                launches += 1
                per_run += 1
            elif isinstance(op, FallbackOp):
                ins = [buffer(v, op) for v in op.inputs]
                outs = [buffer(v, op) for v in op.outputs]
                written.update(outs)
                steps.append(Fallback(op, ins, outs))
                fallbacks += 1
            elif isinstance(op, CopyOp):
                t = op.source.type
                assert isinstance(t, MemRefType)
                target = buffer(op.target, op)
                written.add(target)
                nbytes = op.count.value.data * storage_dtype(t.element_type).itemsize
                steps.append(Copy(buffer(op.source, op), target, nbytes))
            elif isinstance(op, scf.ForOp):
                loop, per_trip = loop_step(op)
                steps.append(loop)
                per_run += loop.count * per_trip
            elif isinstance(op, func.ReturnOp) and op.parent_block() is block:
                result_slots = [buffer(v, op) for v in op.arguments]
            else:
                raise HostScheduleError(f"{who}: cannot run host op '{op.name}' in @{host.sym_name.data}")
        return steps, per_run

    def loop_step(op: scf.ForOp) -> tuple[Loop, int]:
        """The loop's step and how many launches one trip makes."""
        bounds = []
        for v in (op.lb, op.ub, op.step):
            if v not in ints:
                raise HostScheduleError(f"{who}: a loop of @{host.sym_name.data} has a bound that is not a constant")
            bounds.append(ints[v])
        lb, ub, step = bounds
        if step <= 0:
            raise HostScheduleError(f"{who}: a loop of @{host.sym_name.data} has step {step}; expected a positive one")
        body = op.body.block
        yielded = body.last_op
        if not isinstance(yielded, scf.YieldOp):
            raise HostScheduleError(f"{who}: a loop of @{host.sym_name.data} does not end in scf.yield")
        carried = [slot(a) for a in body.args[1:]]
        inits = [buffer(v, op) for v in op.iter_args]
        steps, per_trip = steps_of(o for o in body.ops if o is not yielded)
        yields = [buffer(v, yielded) for v in yielded.arguments]
        # A buffer a trip writes may come back as any carried value.
        if written & set(carried):
            written.update(inits)
            written.update(yields)
        trips = max(0, -(-(ub - lb) // step))
        return Loop(trips, carried, inits, steps, yields, [slot(r) for r in op.results]), per_trip

    def launch_step(op: gpu.LaunchFuncOp) -> Any:
        ref = op.kernel
        name = (ref.nested_references.data[-1] if ref.nested_references.data else ref.root_reference).data
        if name not in gfuncs:
            raise HostScheduleError(f"{who}: launch of unknown kernel @{name}")
        args = [buffer(v, op) for v in op.kernelOperands]
        if len(set(args)) != len(args):
            raise HostScheduleError(f"{who}: launch of @{name} passes one buffer to two arguments")
        gfunc = gfuncs[name]
        written.update(args[i] for i in written_arguments(gfunc))
        sizes = []
        for v in (op.gridSizeX, op.gridSizeY, op.gridSizeZ, op.blockSizeX, op.blockSizeY, op.blockSizeZ):
            if v not in ints:
                raise HostScheduleError(f"{who}: launch of @{name} has a size that is not a constant")
            sizes.append(ints[v])
        kind = gfunc.attributes.get("accy.kind")
        return make_launch(
            Launch(
                name,
                kind.data if kind is not None else "kernel",  # type: ignore[union-attr]
                gfunc,
                args,
                (sizes[0], sizes[1], sizes[2]),
                (sizes[3], sizes[4], sizes[5]),
            )
        )

    steps, per_call = steps_of(block.ops)
    signature = host.attributes.get(SIGNATURE_ATTR)
    if signature is None:
        raise HostScheduleError(f"{who}: @{host.sym_name.data} was not kernelized (no {SIGNATURE_ATTR})")
    result_types = list(signature.outputs.data)  # type: ignore[attr-defined]
    whole_results = {
        (slot, memref_nbytes(MemRefType(t.element_type, t.get_shape())), storage_dtype(t.element_type))
        for slot, t in zip(result_slots, result_types, strict=True)
    }
    for s in walk_steps(steps):
        if isinstance(s, Constant):
            s.rewritten = s.slot in written
        elif isinstance(s, Alloc):
            s.result = (s.slot, s.nbytes, s.dtype) in whole_results
    peak = host.attributes.get(PEAK_BYTES_ATTR)
    return Schedule(
        num_slots=len(slots),
        arg_slots=arg_slots,
        arg_nbytes=[memref_nbytes(a.type) for a in block.args],  # type: ignore[arg-type]
        arg_written=[s in written for s in arg_slots],
        steps=steps,
        result_slots=result_slots,
        result_types=result_types,
        peak_bytes=peak.value.data if isinstance(peak, IntegerAttr) else 0,
        fallbacks=fallbacks,
        launches=launches,
        launches_per_call=per_call,
    )


# --------------------------------------------------------------------------
# Running
# --------------------------------------------------------------------------


class StepExecutor(ABC):
    """One call's run of a schedule's steps on a device. `run` is the one
    loop every device shares: it dispatches each step to the method of its
    kind and runs loops itself; a device subclasses it with what each kind
    of step does over the call's buffer slots `bufs` (a slot's buffer, the
    device's own kind of buffer) and `LAUNCH`, the type of the launch steps
    its `make_launch` makes. With `profile`, each fallback's wall time goes
    to `records`.

    Made per call (a call's buffers are its own; threads calling one
    program each have theirs). It holds no reference to itself, so the
    call's buffers, results included, go when the call drops it, not at the
    next garbage collection."""

    __slots__ = ("bufs", "profile", "records")

    #: The type of the device's launch steps.
    LAUNCH: ClassVar[type]

    def __init__(self, num_slots: int, profile: bool) -> None:
        self.bufs: list[Any] = [None] * num_slots
        self.profile = profile
        self.records: list[LaunchProfile] = []

    def run(self, steps: list[Any]) -> None:
        """Runs `steps` in program order."""
        launch = self.LAUNCH
        for step in steps:
            if isinstance(step, launch):
                self.launch(step)
            elif isinstance(step, Alloc):
                self.alloc(step)
            elif isinstance(step, Free):
                self.free(step)
            elif isinstance(step, Constant):
                self.constant(step)
            elif isinstance(step, Copy):
                self.copy(step)
            elif isinstance(step, Loop):
                self.loop(step)
            else:
                start = time.perf_counter()
                self.fallback(step)
                if self.profile:
                    seconds = time.perf_counter() - start
                    self.records.append(LaunchProfile(step.op.kernel.data, "fallback", (), None, seconds))

    def loop(self, loop: Loop) -> None:
        """Binds `carried` to `inits`, runs the body `count` times, each
        trip ending by binding `carried` to what was in `yields`, then binds
        `results` to `carried` (see the module docstring)."""
        bufs, run, body, carried, yields = self.bufs, self.run, loop.body, loop.carried, loop.yields
        for c, i in zip(carried, loop.inits, strict=True):
            bufs[c] = bufs[i]
        for _ in range(loop.count):  # the loop's fields read once, not a trip
            run(body)
            bound = [bufs[y] for y in yields]
            for c, b in zip(carried, bound, strict=True):
                bufs[c] = b
        for r, c in zip(loop.results, carried, strict=True):
            bufs[r] = bufs[c]

    @abstractmethod
    def launch(self, step: Any) -> None:
        """Launches the kernel of a step of type `LAUNCH` on `bufs[a] for a in step.args`."""

    @abstractmethod
    def alloc(self, step: Alloc) -> None:
        """Binds `bufs[step.slot]` to a buffer of `step.nbytes` bytes (poisoned when the device poisons)."""

    @abstractmethod
    def free(self, step: Free) -> None:
        """Gives back the buffer of `step.slot` that `alloc` or `constant` took, if the call still holds it."""

    @abstractmethod
    def constant(self, step: Constant) -> None:
        """Binds `bufs[step.slot]` to a buffer holding `step.data` (a fresh one when `step.rewritten`)."""

    @abstractmethod
    def copy(self, step: Copy) -> None:
        """Copies the first `step.nbytes` bytes of `bufs[step.source]` into `bufs[step.target]`."""

    @abstractmethod
    def fallback(self, step: Fallback) -> None:
        """Evaluates the fallback on its input buffers (`evaluate_fallback`) into its output buffers."""


def describe(schedule: Schedule, launch: type, launch_line: Callable[[Any], str]) -> str:
    """One line per step (what `ACCY_DEBUG=1` prints): loops, launches (steps
    of type `launch`, as `launch_line` says them) and fallbacks."""
    s = schedule
    lines = [f"{s.launches} kernel(s), {s.fallbacks} fallback(s), peak {s.peak_bytes} bytes"]
    for step in walk_steps(s.steps):
        if isinstance(step, Loop):
            lines.append(f"  loop of {step.count} trip(s) over the next {len(walk_steps(step.body))} step(s)")
        elif isinstance(step, launch):
            lines.append(f"  {launch_line(step)}")
        elif isinstance(step, Fallback):
            lines.append(f"  {step.op.kernel.data} on the host reference path")
    return "\n".join(lines)


def fallback_input_types(step: Fallback) -> list[TensorType]:
    """The tensor types of a fallback's inputs (its body's arguments)."""
    from xdsl.dialects.builtin import TensorType

    types = []
    for arg in step.op.body.block.args:
        assert isinstance(arg.type, TensorType)
        types.append(arg.type)
    return types


def evaluate_fallback(step: Fallback, inputs: list[np.ndarray]) -> list[np.ndarray]:
    """Runs a fallback's tensor ops with the reference interpreter on flat
    storage arrays (one per input); its outputs as flat, contiguous storage
    arrays (bool as int8)."""
    from accy.reference.interpreter import evaluate_op

    op = step.op
    block = op.body.block
    env: dict[SSAValue, np.ndarray] = {
        arg: as_tensor(host, t) for arg, host, t in zip(block.args, inputs, fallback_input_types(step), strict=True)
    }
    yielded = op.yield_op
    for inner in block.ops:
        if inner is yielded:
            break
        results = evaluate_op(inner, [env[v] for v in inner.operands], env)
        env.update(zip(inner.results, results, strict=True))
    outputs = []
    for v in yielded.values:
        value = np.ascontiguousarray(env[v]).reshape(-1)
        if value.dtype == np.bool_:
            value = value.view(np.int8)
        outputs.append(value)
    return outputs
