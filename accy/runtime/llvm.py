"""The LLVM CPU device: kernels as LLVM IR, JIT-compiled by llvmlite, run on
every core of this machine. It needs nothing but llvmlite (a pip package).

`LLVMDevice()` (`device="llvm"`). `prepare(module, fn, strict)`:

1. completes the module's target profile: the fields the module sets are
   kept, the device supplies the rest (`llvm_profile`: the CPU profile,
   format `llvm-ir`, vector width 16 on a host with AVX-512, 8 with AVX2, 4
   otherwise, fp16 and fp64). A module asking for another format, or for
   the GPU profile (barriers, local memory: the LLVM kernel ABI runs a
   work-group's work-items one after the other), is refused with a
   `TargetMismatch`;
2. runs `kernelize` (strict: a declined work item is an error);
3. emits the kernels as LLVM IR once (accy/backends/llvm) and JIT-compiles
   them with llvmlite's MCJIT for the host CPU: the O3 pipeline (loop and
   SLP vectorisation on), then code generation at O3. One engine per IR
   text, shared by every program of the same kernels (`JitCache`). The
   object code is kept in accy's disk cache (namespace `llvm-objects`,
   keyed by the IR text, the CPU name and features and the llvmlite
   version) through MCJIT's object cache, so a second process skips both
   the optimisation and the code generation (`JitStats.loaded`);
4. translates the host function into steps once (accy/runtime/schedule.py,
   shared with the OpenCL device).

`LLVMProgram.run` executes the steps on numpy buffers (the schedule's one
step loop, `StepExecutor`, with this device's steps: `_Steps`): allocations come from
a `HostMemoryPool` (64-byte aligned), except results returned whole, which
are fresh arrays the kernels write and the call returns as they are (with
`to_host=False`, pool buffers that the results' `accy.Array`s take over);
inputs (numpy arrays, and this device's `accy.Array`s, whose buffers are host
memory) that are C-contiguous, aligned and never written are used in place; a
launch's work-groups are split into contiguous ranges, one per thread of a
pool of `os.cpu_count()` threads (the calling thread runs the first), each
range a call of the kernel's function through ctypes, which releases the GIL
(`ACCY_THREADS` sets the pool's size);
a fallback evaluates its tensor ops with the reference interpreter on the
buffers. `profile=True` records each launch's wall time. `poison`
(`ACCY_POISON=1`) fills allocated buffers with NaN / 0x5A bytes before the
launches of each call, as on OpenCL.

Threads: a program may be called from any number of threads at once; each
call keeps its buffers to itself, the compiled functions are re-entrant, the
pool and the caches take their own locks.
"""

from __future__ import annotations

import array
import ctypes
import ctypes.util
import hashlib
import os
import threading
import time
from collections import OrderedDict
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import numpy as np

from accy.backends.llvm.host import FORMAT, host_target
from accy.debug import debug, debug_level
from accy.env import env_int
from accy.runtime.array import Array, result_arrays
from accy.runtime.compile_cache import pack_schedule, unpack_schedule
from accy.runtime.device import (
    HostMemory,
    KernelDevice,
    LaunchProfile,
    Program,
    RunStats,
    TargetMismatch,
    max_programs_from_env,
)
from accy.runtime.disk_cache import DiskCache
from accy.runtime.host_memory import aligned_empty
from accy.runtime.kernel_sources import kernel_source
from accy.runtime.llvm_worker import POOL, optimise_and_generate
from accy.runtime.phases import phase
from accy.runtime.results import result_layouts
from accy.runtime.schedule import (
    Alloc,
    Constant,
    Copy,
    Fallback,
    Free,
    HostScheduleError,
    Launch,
    Schedule,
    StepExecutor,
    describe,
    evaluate_fallback,
    fallback_input_types,
    has_kernels,
    host_function,
    map_steps,
    poison_from_env,
    poison_pattern,
    storage_dtype,
    translate,
    walk_steps,
)

if TYPE_CHECKING:
    from xdsl.dialects import func, gpu
    from xdsl.dialects.builtin import ModuleOp

    from accy.dialects.target import TargetProfile

# The emitter, the target attribute and xDSL are imported where a module is
# compiled: a program from the compile cache loads and runs without them.

INSTALL_HINT = "the LLVM device needs llvmlite: `pip install llvmlite`"
#: The disk cache namespace of compiled object code.
OBJECT_CACHE_NAMESPACE = "llvm-objects"
#: The optimisation level of the module pipeline and of code generation.
OPT_LEVEL = 3
#: Launches whose buffers hold fewer bytes than this run on the calling
#: thread alone: handing a range to the pool costs ~10-20 us, more than such
#: a launch's work. Bytes, not work-items: a row kernel's work-item walks a
#: whole row, so 1024 of them can be a millisecond of work.
MIN_PARALLEL_BYTES = 128 << 10
#: The environment variable that sets the launch thread count (as POCL_MAX_PTHREAD_COUNT does PoCL's).
THREADS_ENV = "ACCY_THREADS"

KernelFn = Any  # a ctypes CFUNCTYPE(None, c_void_p, c_int64, c_int64, c_int64) instance
#: The array.array type code of a pointer (an unsigned integer of its size).
_POINTER_CODE = "Q" if ctypes.sizeof(ctypes.c_void_p) == 8 else "I"
_KERNEL_PROTO = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64, ctypes.c_int64)



def threads_from_env() -> int:
    """`$ACCY_THREADS` (a positive integer) when set, else the CPU count."""
    return env_int(THREADS_ENV, os.cpu_count() or 1, "threads")


def host_vector_width(features: str) -> int:
    """Floats per vector on a host with these LLVM features (`+avx512f,...`)."""
    enabled = {f[1:] for f in features.split(",") if f.startswith("+")}
    if "avx512f" in enabled:
        return 16
    if "avx2" in enabled:
        return 8
    return 4


def llvm_profile(math_tier: str = "exact") -> TargetProfile:
    """The LLVM device's profile on this host (module docstring, step 1)."""
    from accy.dialects.target import CPU_PROFILE

    return CPU_PROFILE.replace(
        format=FORMAT,
        math=math_tier,
        vector_width=host_vector_width(host_target().features),
        fp16=True,
        fp64=True,
    )


# --------------------------------------------------------------------------
# The JIT
# --------------------------------------------------------------------------


@dataclass
class JitStats:
    """Per device: modules compiled here (optimised and code-generated),
    modules whose object code came from the disk cache, engines reused from
    memory, and the seconds spent in the JIT."""

    compiled: int = 0
    loaded: int = 0
    reused: int = 0
    seconds: float = 0.0


@dataclass
class JitProgram:
    """One MCJIT engine and its kernels' entry points."""

    engine: Any  # llvmlite.binding.ExecutionEngine (owns the code: keep it alive)
    functions: dict[str, KernelFn]
    seconds: float  # JIT time: parse, optimise, generate or load object code
    loaded: bool  # object code from the disk cache


_llvm_lock = threading.Lock()
_llvm_ready = False


def _init_llvm() -> Any:
    """llvmlite.binding, initialised for the host, with libm resolvable."""
    global _llvm_ready
    try:
        import llvmlite.binding as llvm
    except ImportError as e:
        raise RuntimeError(INSTALL_HINT) from e
    with _llvm_lock:
        if not _llvm_ready:
            llvm.initialize_native_target()
            llvm.initialize_native_asmprinter()
            _load_libm(llvm)
            _llvm_ready = True
    return llvm


#: glibc's libm by its soname: dlopen finds it without a search.
LIBM_SONAME = "libm.so.6"


def _load_libm(llvm: Any) -> None:
    """Makes libm's functions (tanhf, erff, ..., which the IR may declare)
    resolvable by name in the JIT's symbol lookup: by `LIBM_SONAME`, else
    where `ctypes.util.find_library` says (it runs ldconfig, ~5 ms of every
    process, so only on a system without glibc's soname)."""
    for name in (LIBM_SONAME, None):
        path = name if name is not None else ctypes.util.find_library("m")
        if not path:
            continue
        try:
            llvm.load_library_permanently(path)
            return
        except RuntimeError:
            continue
    # Neither: libm is linked into the Python process on most systems anyway.


def object_key(ir_text: str) -> str:
    """The disk cache key of the object code of `ir_text` on this host."""
    import llvmlite

    target = host_target()
    h = hashlib.sha256()
    for part in (ir_text, target.triple, target.cpu, target.features, llvmlite.__version__, f"O{OPT_LEVEL}"):
        h.update(part.encode())
        h.update(b"\0")
    return h.hexdigest()


class JitCache:
    """Compiled programs by IR text, in memory (bounded) and on disk."""

    def __init__(self, disk: DiskCache | None = None, max_entries: int | None = None) -> None:
        self.disk = disk if disk is not None else DiskCache(OBJECT_CACHE_NAMESPACE)
        # As many engines as the OpenCL device keeps programs ($ACCY_PROGRAM_CACHE_SIZE).
        self.max_entries = max_programs_from_env() if max_entries is None else max_entries
        self.stats = JitStats()
        self._entries: OrderedDict[str, JitProgram] = OrderedDict()
        self._lock = threading.Lock()  # llvmlite's compilation is not thread-safe: one at a time

    def get(self, ir_text: str, names: list[str]) -> JitProgram:
        key = object_key(ir_text)
        with self._lock:
            entry = self._entries.get(key)
            if entry is not None:
                self._entries.move_to_end(key)
                self.stats.reused += 1
                return entry
            entry = self._compile(ir_text, names, key)
            self._entries[key] = entry
            while len(self._entries) > self.max_entries:
                self._entries.popitem(last=False)
            return entry

    def _compile(self, ir_text: str, names: list[str], key: str) -> JitProgram:
        llvm = _init_llvm()
        start = time.perf_counter()
        code = cached = self.disk.get(key)
        if code is None:
            target = host_target()
            args = (ir_text, target.triple, target.cpu, target.features, OPT_LEVEL)
            # Past a process's first modules the worker optimises (llvm_worker: llvmlite's pass manager keeps memory per module).
            if POOL.wants_worker():
                code = POOL.compile_object(*args)
            if code is None:
                code = optimise_and_generate(llvm, *args)
            self.stats.compiled += 1
            self.disk.put(key, code)
        else:
            self.stats.loaded += 1
        # The object code loads through MCJIT's object cache: no optimisation or code generation here.
        engine = llvm.create_mcjit_compiler(llvm.parse_assembly(ir_text), _target_machine(llvm))
        engine.set_object_cache(lambda _module, _buffer: None, lambda _module: code)
        engine.finalize_object()
        functions = {}
        for name in names:
            address = engine.get_function_address(name)
            if not address:
                raise RuntimeError(f"llvm device: the JIT has no function @{name}")
            functions[name] = _KERNEL_PROTO(address)
        seconds = time.perf_counter() - start
        self.stats.seconds += seconds
        debug(1, f"accy: llvm JIT {'loaded' if cached is not None else 'compiled'} {len(names)} kernel(s) in {seconds * 1e3:.1f} ms")
        return JitProgram(engine, functions, seconds, cached is not None)

    def __len__(self) -> int:
        return len(self._entries)


def _target_machine(llvm: Any) -> Any:
    target = host_target()
    return llvm.Target.from_triple(target.triple).create_target_machine(
        cpu=target.cpu, features=target.features, opt=OPT_LEVEL
    )


# --------------------------------------------------------------------------
# The host schedule's launches
# --------------------------------------------------------------------------


@dataclass
class _Launch:
    name: str
    kind: str
    fn: KernelFn
    args: list[int]
    groups: int
    block: int


def _make_launch(functions: dict[str, KernelFn]) -> Any:
    def make(launch: Launch) -> _Launch:
        if launch.grid[1:] != (1, 1) or launch.block[1:] != (1, 1):
            raise HostScheduleError(
                f"llvm device: @{launch.name} is launched over a {'x'.join(map(str, launch.grid))} grid of "
                f"{'x'.join(map(str, launch.block))} blocks; the LLVM kernel ABI runs x-dimension launches only"
            )
        return _Launch(launch.name, launch.kind, functions[launch.name], launch.args, launch.grid[0], launch.block[0])

    return make


def _byte_view(array: np.ndarray) -> np.ndarray:
    return array.reshape(-1).view(np.uint8)


def _launch_line(step: _Launch) -> str:
    return f"{step.name} ({step.kind}) {step.groups} group(s) of {step.block}"


class _Steps(StepExecutor):
    """One call's steps on numpy buffers (the module docstring)."""

    LAUNCH = _Launch
    __slots__ = ("device", "pool", "owned", "fresh", "to_host", "trace")

    def __init__(self, device: LLVMDevice, num_slots: int, profile: bool, to_host: bool) -> None:
        StepExecutor.__init__(self, num_slots, profile)  # not super(): 0.1 us of every call
        self.device = device
        self.pool = device.pool
        self.owned: dict[int, np.ndarray] = {}  # slot -> pool buffer this call holds
        self.fresh: set[int] = set()  # result slots allocated as fresh arrays
        self.to_host = to_host
        self.trace = debug_level() >= 2  # ACCY_DEBUG=2: each launch as it runs

    def launch(self, step: _Launch) -> None:
        if self.trace:
            debug(2, f"accy: launch @{step.name} ({step.kind}) {step.groups} group(s) of {step.block}")
        bufs = self.bufs
        profile = self.profile
        start = time.perf_counter() if profile else 0.0
        self.device.launch(step.fn, [bufs[a] for a in step.args], step.groups, step.block)
        if profile:
            seconds = time.perf_counter() - start
            size = (step.groups * step.block,)
            self.records.append(LaunchProfile(step.name, step.kind, size, (step.block,), seconds))

    def alloc(self, step: Alloc) -> None:
        # A result returned whole is a fresh array the caller gets (to the host) or a
        # pool buffer the result's accy.Array takes over (result_arrays).
        if step.result and self.to_host and step.slot not in self.fresh:
            buf = self.device.recycled_results.take(step.nbytes)
            self.fresh.add(step.slot)
        else:
            buf = self.pool.acquire(step.nbytes)
            self.owned[step.slot] = buf
        if self.device.poison and step.nbytes:
            pattern = poison_pattern(step.dtype)
            buf[: step.nbytes].view(step.dtype)[:] = pattern[0]
        self.bufs[step.slot] = buf

    def free(self, step: Free) -> None:
        buf = self.owned.pop(step.slot, None)
        if buf is not None:
            self.pool.release(buf)

    def constant(self, step: Constant) -> None:
        if step.rewritten:
            buf = self.pool.acquire(step.nbytes)
            self.owned[step.slot] = buf
            buf[: step.data.nbytes] = _byte_view(step.data)
            self.bufs[step.slot] = buf
        else:
            # Read-only: the step's own array (element-aligned, contiguous).
            self.bufs[step.slot] = _byte_view(step.data) if step.data.nbytes else aligned_empty(1)

    def copy(self, step: Copy) -> None:
        bufs = self.bufs
        bufs[step.target][: step.nbytes] = bufs[step.source][: step.nbytes]

    def fallback(self, step: Fallback) -> None:
        bufs = self.bufs
        arrays = []
        for slot, t in zip(step.inputs, fallback_input_types(step), strict=True):
            dtype = storage_dtype(t.element_type)
            n = int(np.prod(t.get_shape())) * dtype.itemsize
            arrays.append(bufs[slot][:n].view(dtype))
        for slot, value in zip(step.outputs, evaluate_fallback(step, arrays), strict=True):
            if value.nbytes:
                bufs[slot][: value.nbytes] = value.view(np.uint8)


class LLVMProgram(Program):
    """A kernelized function on the LLVM device."""

    def __init__(
        self, device: LLVMDevice, schedule: Schedule, sources: dict[str, str], jits: dict[str, JitProgram]
    ) -> None:
        self.device = device
        self.schedule = schedule
        #: Each kernel's LLVM IR module, by kernel name.
        self.sources = sources
        #: The LLVM IR of the kernels, one module after the other ("" when the function has none).
        self.source = "\n".join(f"; kernel @{name}\n{text}" for name, text in sources.items())
        #: Each kernel's JIT engine (shared with other programs of the same kernel).
        self.jits = jits
        #: JIT seconds per kernel (those of its first compile when the engine is shared).
        self.jit_kernels = {name: jit.seconds for name, jit in jits.items()}
        self.jit_s = sum(self.jit_kernels.values())
        #: Whether every kernel's object code came from the disk cache.
        self.jit_cached = bool(jits) and all(jit.loaded for jit in jits.values())
        self.stats = RunStats(peak_bytes=schedule.peak_bytes, fallbacks=schedule.fallbacks)
        self.results = result_layouts(schedule)
        #: Inputs of the last call that ran in place (no copy), by argument index.
        self.in_place: list[bool] = []

    def describe(self) -> str:
        return describe(self.schedule, _Launch, _launch_line)

    def run(self, inputs: list[Any], profile: bool = False, to_host: bool = True) -> list[Any]:
        s = self.schedule
        device = self.device
        pool = device.pool
        steps = _Steps(device, s.num_slots, profile, to_host)
        bufs, owned = steps.bufs, steps.owned
        in_place: list[bool] = []
        stats = RunStats(kernels=s.launches, launches=s.launches_per_call, peak_bytes=s.peak_bytes, fallbacks=s.fallbacks)
        try:
            for i, (slot, arg) in enumerate(zip(s.arg_slots, inputs, strict=True)):
                if type(arg) is Array:  # this device's: its buffer is host memory already
                    if arg.buffer.nbytes == s.arg_nbytes[i] and not s.arg_written[i]:
                        bufs[slot] = arg.buffer  # a pool buffer: aligned, contiguous, of exactly these bytes
                        in_place.append(True)
                        continue
                    flat = arg.buffer[: arg.nbytes]
                else:
                    flat = arg.reshape(-1)
                    if flat.dtype == np.bool_:
                        flat = flat.view(np.int8)
                ok = (
                    not s.arg_written[i]
                    and flat.nbytes == s.arg_nbytes[i]
                    and flat.flags.c_contiguous
                    and flat.flags.aligned
                )
                in_place.append(ok)
                if ok:
                    bufs[slot] = _byte_view(flat)
                else:
                    buf = pool.acquire(s.arg_nbytes[i])
                    owned[slot] = buf
                    n = min(flat.nbytes, s.arg_nbytes[i])
                    buf[:n] = _byte_view(np.ascontiguousarray(flat))[:n]
                    bufs[slot] = buf
                    if not isinstance(arg, Array):
                        stats.upload(n)
            steps.run(s.steps)
            if to_host:
                outputs: list[Any] = self._results(bufs, steps.fresh, stats)
            else:
                outputs = result_arrays(device, self.results, bufs, lambda slot: owned.pop(slot, None), device.copy_buffer)
        finally:
            for buf in owned.values():
                pool.release(buf)
        stats.profile = steps.records if profile else []
        self.stats = stats
        self.in_place = in_place
        return outputs

    def _results(self, bufs: list[np.ndarray], fresh: set[int], stats: RunStats) -> list[np.ndarray]:
        outputs = []
        returned: set[int] = set()
        for r in self.results:
            view = bufs[r.slot][: r.nbytes].view(r.storage).reshape(r.shape)
            if r.slot in fresh and r.slot not in returned:  # a slot returned twice gets a copy the second time
                returned.add(r.slot)
                host = view
            else:
                host = view.copy()
                stats.download(r.nbytes)
            outputs.append(host.view(np.bool_) if r.is_bool else host)
        return outputs


# --------------------------------------------------------------------------
# The device
# --------------------------------------------------------------------------


class LLVMDevice(HostMemory, KernelDevice):
    """The host CPU through llvmlite's JIT; see the module docstring.
    `threads` is the size of the launch thread pool (default `$ACCY_THREADS`,
    else os.cpu_count());
    `poison` fills allocated buffers with NaN / a sentinel before each call's
    launches (default: `$ACCY_POISON`); `pool_max_bytes` bounds the idle
    buffers of the memory pool (default `$ACCY_POOL_MAX_BYTES`, else 1 GiB),
    `memory_limit` all its bytes (default `$ACCY_MEMORY_LIMIT`, else the
    host's physical memory; also settable as `device.memory_limit`);
    `object_cache` is the disk cache of object code (default the
    `llvm-objects` namespace of accy's cache root)."""

    FORMAT = FORMAT
    ARTIFACT = "LLVM IR"

    def __init__(
        self,
        index: int | None = None,
        poison: bool | None = None,
        threads: int | None = None,
        pool_max_bytes: int | None = None,
        object_cache: DiskCache | None = None,
        memory_limit: int | None = None,
    ) -> None:
        if index not in (None, 0):
            raise ValueError(f"there is one LLVM device (the host CPU), not llvm:{index}")
        llvm = _init_llvm()
        self.name = "llvm"
        target = host_target()
        self.description = f"LLVM {'.'.join(map(str, llvm.llvm_version_info))} JIT on {target.cpu} ({target.triple})"
        self.poison = poison_from_env(poison)
        self.threads = max(1, threads if threads is not None else threads_from_env())
        self._executor: ThreadPoolExecutor | None = None
        self._executor_lock = threading.Lock()
        self.pool = self.make_pool(pool_max_bytes, memory_limit)
        self.jit = JitCache(object_cache)

    def target_profile(self, math_tier: str = "exact") -> TargetProfile:
        """The device's own profile (what it fills in of a module's target)."""
        return llvm_profile(math_tier)

    def profile_for(self, module: ModuleOp) -> TargetProfile:
        """The complete profile `module` compiles with here (module docstring, step 1)."""
        from accy.dialects.target import target_fields

        profile = self.target_profile().filled_by(target_fields(module))
        self.check_format(profile)
        if profile.profile != "cpu":
            raise TargetMismatch(
                f"the module's target asks for profile '{profile.profile}', but device '{self.name}' runs a "
                "work-group's work-items one after the other (no barriers or local memory): drop the profile "
                "or set it to cpu"
            )
        return profile

    def load(self, module: ModuleOp, fn: str) -> LLVMProgram:
        """A program for function `fn` of an already kernelized module."""
        from accy.backends.llvm.emitter import emit_llvm_kernels, kernel_arguments, kernel_funcs

        host = host_function(module, fn)
        if not has_kernels(module):
            return LLVMProgram(self, _translate(host, {}, {}, {}), {}, {})
        gfuncs = {f.sym_name.data: f for f in kernel_funcs(module)}
        written = {name: {i for i, a in enumerate(args) if a.written} for name, args in kernel_arguments(module).items()}
        with phase("codegen"):
            sources = {name: kernel_source(name, "ll", text) for name, text in emit_llvm_kernels(module).items()}
        with phase("build"):
            jits = {name: self.jit.get(text, [name]) for name, text in sources.items()}
        functions = {name: jit.functions[name] for name, jit in jits.items()}
        return LLVMProgram(self, _translate(host, gfuncs, functions, written), sources, jits)

    # -- the compile cache (compile_cache.py) ------------------------------

    def cache_identity(self) -> str:
        target = host_target()
        return f"{target.triple}|{target.cpu}|{target.features}"

    def source_identity(self) -> str:
        """`cache_identity()`: the profile (`llvm_profile`) is made of the host's features."""
        return f"{type(self).__name__}:{self.cache_identity()}"

    def freeze(self, program: Program) -> bytes | None:
        """The schedule (launch steps without their function pointers) and
        the kernels' LLVM IR; None for a program with host fallbacks."""
        assert isinstance(program, LLVMProgram)
        schedule = program.schedule
        if schedule.fallbacks:
            return None
        steps = map_steps(schedule.steps, lambda step: replace(step, fn=None), _Launch)
        try:
            return pack_schedule(replace(schedule, steps=steps), program.sources, _Launch)
        except TypeError:  # a step the payload format does not hold: not kept
            return None

    def thaw(self, payload: bytes) -> LLVMProgram | None:
        """The program `freeze` wrote, its kernels from the JIT cache."""
        unpacked = unpack_schedule(payload, _Launch)
        if unpacked is None:  # written by another accy, or damaged: compile again
            return None
        schedule, sources = unpacked
        launched = {step.name for step in walk_steps(schedule.steps) if isinstance(step, _Launch)}
        if not isinstance(sources, dict) or not all(isinstance(t, str) for t in sources.values()):
            return None
        if not launched <= set(sources):
            return None
        jits = {name: self.jit.get(text, [name]) for name, text in sources.items()}
        for step in walk_steps(schedule.steps):
            if isinstance(step, _Launch):
                step.fn = jits[step.name].functions[step.name]
        return LLVMProgram(self, schedule, sources, jits)

    # -- launches ----------------------------------------------------------

    @property
    def executor(self) -> ThreadPoolExecutor:
        with self._executor_lock:
            if self._executor is None:
                self._executor = ThreadPoolExecutor(max_workers=self.threads, thread_name_prefix="accy-llvm")
            return self._executor

    def launch(self, fn: KernelFn, buffers: list[np.ndarray], groups: int, block: int) -> None:
        """Runs kernel `fn` over work-groups 0..groups-1 of `block` work-items,
        split into contiguous ranges over the thread pool."""
        if groups <= 0:
            return
        # The kernel ABI's array of buffer pointers. An array.array of
        # uint64 is made ~1 us faster than a ctypes array (dispatch cost).
        ptrs = array.array(_POINTER_CODE, [b.ctypes.data for b in buffers] or [0])
        address = ptrs.buffer_info()[0]
        parts = min(self.threads, groups)
        if parts <= 1 or sum(b.nbytes for b in buffers) < MIN_PARALLEL_BYTES:
            fn(address, 0, groups, block)
            return
        bounds = [groups * i // parts for i in range(parts + 1)]
        futures: list[Future[None]] = [
            self.executor.submit(fn, address, bounds[i], bounds[i + 1], block) for i in range(1, parts)
        ]
        try:
            fn(address, bounds[0], bounds[1], block)
        finally:
            for f in futures:
                f.result()
        del ptrs  # kept alive until every range has run


def _translate(
    host: func.FuncOp,
    gfuncs: dict[str, gpu.FuncOp],
    functions: dict[str, KernelFn],
    written: dict[str, set[int]],
) -> Schedule:
    return translate(host, gfuncs, _make_launch(functions), lambda f: written[f.sym_name.data], "llvm device")

