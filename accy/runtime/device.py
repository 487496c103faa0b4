"""What a device is to the runtime: something that prepares a function of a
module into a `Program`, which runs numpy arrays and the device's own
`accy.Array`s (runtime/array.py) to numpy arrays or `accy.Array`s; and the
owner of a memory pool (`Device.pool`: every buffer accy allocates there,
bounded by `memory_limit`, reported by `memory_report()`) with the few
buffer operations an `accy.Array` needs (write, read, copy, host view).

`accy.compile` checks the caller's arrays against the function's signature
before a `Program` sees them, so programs may assume shapes and dtypes match.
A `KernelDevice` (OpenCL, LLVM) compiles through the kernelize pass.
Devices are looked up by name (`reference`, `opencl`, `opencl:N`, `llvm`) in
`accy.runtime.devices.get_device`.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from accy.debug import debug, debug_level
from accy.env import env_int
from accy.progress import Bar
from accy.runtime.disk_cache import DiskCache
from accy.runtime.host_memory import (
    HostMemoryPool,
    MemoryReport,
    RecycledResults,
    SizedPool,
    memory_limit_from_env,
    physical_memory,
    pool_max_bytes_from_env,
)
from accy.runtime.kernel_sources import dumping_or_overriding
from accy.runtime.phases import phase
from accy.runtime.signature import TensorSpec

if TYPE_CHECKING:
    from xdsl.dialects.builtin import ModuleOp

    from accy.dialects.target import TargetProfile
    from accy.runtime.source_cache import RecentCompiles, SourceEntry

#: Compiled programs a device keeps in memory: the OpenCL device's built
#: programs, the LLVM device's JIT engines (an LRU each).
PROGRAM_CACHE_SIZE_ENV = "ACCY_PROGRAM_CACHE_SIZE"
DEFAULT_MAX_PROGRAMS = 128


def max_programs_from_env() -> int:
    """`$ACCY_PROGRAM_CACHE_SIZE` (a number of programs >= 1), else `DEFAULT_MAX_PROGRAMS`."""
    return env_int(PROGRAM_CACHE_SIZE_ENV, DEFAULT_MAX_PROGRAMS, "programs")


@dataclass
class LaunchProfile:
    """One kernel launch as `--profile` shows it."""

    name: str
    kind: str
    global_size: tuple[int, ...]
    local_size: tuple[int, ...] | None
    seconds: float


@dataclass(slots=True)
class RunStats:
    """Figures of the last call: the program's kernels (`kernels`: its
    launch ops, a loop's body counted once) and the launches the call made
    (`launches`: a loop's body once per trip), the plan's peak device bytes
    (inputs and outputs included), work items run on the host reference
    path instead of a kernel, and the copies between host and device:
    `uploads` / `upload_bytes` (host arrays copied into device buffers:
    arguments not used in place, constants written again, a fallback's
    outputs) and `downloads` / `download_bytes` (device buffers copied into
    host arrays: results read back, a fallback's inputs, an `accy.Array` of
    another device read to the host). Memory used in place (an input or a
    result aliased by a host-memory device, an `accy.Array` of this device)
    counts as neither."""

    kernels: int = 0
    launches: int = 0
    peak_bytes: int = 0
    fallbacks: int = 0
    profile: list[LaunchProfile] = field(default_factory=list)
    uploads: int = 0
    upload_bytes: int = 0
    downloads: int = 0
    download_bytes: int = 0

    def upload(self, nbytes: int) -> None:
        self.uploads += 1
        self.upload_bytes += nbytes

    def download(self, nbytes: int) -> None:
        self.downloads += 1
        self.download_bytes += nbytes


class Program(ABC):
    """A compiled function, ready to run."""

    stats: RunStats
    #: The kernels' source as the device builds it ("" when it has none).
    source: str = ""
    #: Whether the program came from the compile cache (compile_cache.py).
    compile_cached: bool = False

    def describe(self) -> str:
        """What `ACCY_DEBUG=1` prints of the program."""
        return ""

    @abstractmethod
    def run(self, inputs: list[Any], profile: bool = False, to_host: bool = True) -> list[Any]:
        """Runs on arguments already checked against the signature: numpy
        arrays (C-contiguous) and `accy.Array`s of this device, whose
        buffers are used as they are. Returns numpy arrays, or with
        `to_host=False` `accy.Array`s of this device that own their buffers
        (no copy to the host)."""


class Device(ABC):
    """Where programs run; `name` is the one `get_device` knows it by.

    Memory: `pool` hands out every buffer accy allocates on the device and
    accounts for it (host_memory.py's `SizedPool`); `memory_limit` bounds
    it (bytes, or None), `memory_report()` says what it holds. An
    `accy.Array` (runtime/array.py) moves bytes with `write_buffer`,
    `read_buffer` and `copy_buffer`, which complete before they return
    (with asynchronous calls, issue 11 item 2, they would take and give
    events), and views a host-memory buffer with `host_view`."""

    name: str
    pool: SizedPool[Any]
    #: The device's memory is the CPU's (PoCL's CPU device, LLVM, reference): its arrays speak DLPack.
    cpu: bool = False

    @abstractmethod
    def prepare(self, module: ModuleOp, fn: str, strict: bool = False) -> Program:
        """Compiles function `fn` of `module` (which it may transform)."""

    @property
    def memory_limit(self) -> int | None:
        """The most bytes the device's pool may hold, in use and cached
        (None: no bound but the driver's). Setting it drops idle buffers
        down to it; buffers in use stay, and allocations fail with
        `DeviceMemoryError` until enough come back."""
        pool = getattr(self, "pool", None)  # a user's Device may keep no pool
        return pool.limit if pool is not None else None

    @memory_limit.setter
    def memory_limit(self, value: int | None) -> None:
        self.pool.limit = value

    def memory_report(self) -> MemoryReport:
        """What the device's pool holds now: bytes in use by holder, cached, the limit."""
        return self.pool.report()

    def write_buffer(self, buffer: Any, host: np.ndarray) -> None:
        """Copies the bytes of the C-contiguous `host` into the start of `buffer`."""
        raise NotImplementedError(f"device '{self.name}' keeps no arrays")

    def read_buffer(self, buffer: Any, host: np.ndarray) -> None:
        """Copies the start of `buffer` into the C-contiguous `host` (all its bytes)."""
        raise NotImplementedError(f"device '{self.name}' keeps no arrays")

    def copy_buffer(self, dst: Any, src: Any, nbytes: int) -> None:
        """Copies the first `nbytes` bytes of `src` into `dst` on the device."""
        raise NotImplementedError(f"device '{self.name}' keeps no arrays")

    def host_view(self, buffer: Any) -> np.ndarray | None:
        """`buffer` as a flat uint8 host array without a copy, or None when
        the device's memory is not the host's."""
        return None

    @cached_property
    def recycled_results(self) -> RecycledResults:
        """The host arrays calls return results in where the kernels write
        them in place (host_memory.py's `RecycledResults`): a result the
        caller dropped is the next call's, its pages already faulted in."""
        return RecycledResults(pool_max_bytes_from_env(1 << 30))


class HostMemory:
    """Device memory that is host memory (the LLVM and reference devices):
    buffers are flat, aligned uint8 numpy arrays from a `HostMemoryPool`,
    and an `accy.Array`'s values are viewed in place."""

    cpu = True
    name: str

    def make_pool(self, pool_max_bytes: int | None, memory_limit: int | None) -> HostMemoryPool:
        """The pool: idle bytes bounded by `pool_max_bytes` (default
        `$ACCY_POOL_MAX_BYTES`, else 1 GiB), all bytes by `memory_limit`
        (default `$ACCY_MEMORY_LIMIT`, else the host's physical memory)."""
        return HostMemoryPool(
            max_free_bytes=pool_max_bytes_from_env(1 << 30) if pool_max_bytes is None else pool_max_bytes,
            limit=memory_limit_from_env(physical_memory()) if memory_limit is None else memory_limit,
            name=self.name,
        )

    def write_buffer(self, buffer: np.ndarray, host: np.ndarray) -> None:
        buffer[: host.nbytes] = host.reshape(-1).view(np.uint8)

    def read_buffer(self, buffer: np.ndarray, host: np.ndarray) -> None:
        host.reshape(-1).view(np.uint8)[:] = buffer[: host.nbytes]

    def copy_buffer(self, dst: np.ndarray, src: np.ndarray, nbytes: int) -> None:
        dst[:nbytes] = src[:nbytes]

    def host_view(self, buffer: np.ndarray) -> np.ndarray:
        return buffer


class TargetMismatch(ValueError):
    """The module's target asks for what the device cannot give."""


class KernelDevice(Device):
    """A device that runs kernelized modules: `prepare` attaches the complete
    profile the module compiles with here (`profile_for`), runs the
    kernelize pass and `load`s the result. `FORMAT` and `ARTIFACT` name the
    kernels' format it builds ("opencl-c", "OpenCL C")."""

    FORMAT: ClassVar[str]
    ARTIFACT: ClassVar[str]

    @abstractmethod
    def profile_for(self, module: ModuleOp) -> TargetProfile:
        """The complete profile `module` compiles with on this device."""

    @abstractmethod
    def load(self, module: ModuleOp, fn: str) -> Program:
        """A program for function `fn` of an already kernelized module."""

    def check_format(self, profile: TargetProfile) -> None:
        """Refuses a profile whose artifact format this device does not build."""
        if profile.format != self.FORMAT:
            raise TargetMismatch(
                f"the module's target asks for format '{profile.format}', but device '{self.name}' runs "
                f"{self.ARTIFACT} ('{self.FORMAT}'): drop the format or set it to {self.FORMAT}"
            )

    def cache_identity(self) -> str | None:
        """What besides the module its compiled programs depend on (for the
        compile cache, compile_cache.py); None: this device keeps none."""
        return None

    def freeze(self, program: Program) -> bytes | None:
        """`program` as bytes for the compile cache; None when it cannot be kept."""
        return None

    def thaw(self, payload: bytes) -> Program | None:
        """The program `freeze` wrote; None when `payload` does not make one."""
        return None

    def source_identity(self) -> str | None:
        """What besides the program's text the module it compiles to depends
        on: the device's `cache_identity()` and whatever its profile is made
        of (source_cache.py); None: the device keeps no source index."""
        return None

    def prepare(self, module: ModuleOp, fn: str, strict: bool = False, source: str | None = None) -> Program:
        """Attaches the profile, then takes the program from the compile
        cache, or kernelizes and loads it (and keeps it there). At
        `ACCY_DEBUG=3`, which prints the IR after kernelize, and while
        `ACCY_DUMP_DIR` or `ACCY_OVERRIDE_DIR` is set (kernel_sources.py), it
        always kernelizes. `ACCY_DEBUG=2` prints the kernel IR. Any
        `ACCY_DEBUG` level reports that every kernel is proved in bounds; one
        that is not is an error in every compile (kernelize's
        `verify_bounds`). `source`, the text `module` was parsed from (and
        prepared for `fn`), is indexed for `prepare_source` when the program
        is in the compile cache."""
        self.profile_for(module).attach(module)
        identity = self.cache_identity()
        key = None
        # Every kernel kernelize makes is proved in bounds, in every compile
        # (about 1% of a compile's time on tests/programs): one that is not
        # is an error, never a run. ACCY_DEBUG reports it too.
        verify = True
        report = debug_level() >= 1
        signature = _signature_of(module, fn) if source is not None else None
        if identity is not None and _caching():
            from accy.runtime.compile_cache import compile_key

            checked = ":bounds" if verify or report else ""
            key = compile_key(f"{type(self).__name__}:{identity}{checked}", module, fn, strict)
            payload = self.compiled.get(key)
            program = self._thaw_entry(key, payload)
            if program is not None:
                if source is not None and signature is not None and payload is not None:
                    self._index_source(source, fn, strict, key, signature, payload)
                self._debug(fn, program)
                return program
        with phase("passes"):  # a new process's first compile imports the pipeline's modules here
            from accy.passes.pass_manager import PassManager
            from accy.passes.registry import DevicePipeline

            # accy-opt -p accy-device-pipeline runs the same passes.
            passes = DevicePipeline(strict=strict, verify_bounds=verify).passes()
            pm = PassManager(passes, print_after=["all"] if debug_level() >= 3 else (), out=_ir_out)
        with Bar(f"compile @{fn} on {self.name}") as bar:  # drawn only past a second (accy/progress.py)
            with phase("passes"):
                pm.run(module)
            if report:
                _report_bounds(module)
            if debug_level() >= 2:
                from xdsl.dialects import gpu

                debug(2, "\n".join(str(op) for op in module.ops if isinstance(op, gpu.ModuleOp)))
            bar.set_postfix("build")
            program = self.load(module, fn)
        if key is not None:
            payload = self.freeze(program)
            if payload is not None:
                payload = key.encode() + b"\n" + payload
                self.compiled.put(key, payload)
                if source is not None and signature is not None:
                    self._index_source(source, fn, strict, key, signature, payload)
        self._debug(fn, program)
        return program

    def prepare_source(self, text: str, fn: str, strict: bool = False) -> tuple[Program, SourceEntry] | None:
        """The program of function `fn` of the program `text`, thawed from
        the compile cache through the source index (source_cache.py) with
        nothing parsed, and its index entry; None when it is not there (or
        does not thaw): the caller parses and `prepare`s."""
        identity = self._source_identity
        # Memory fronts the disk cache, folder by folder: ACCY_CACHE_DIR=off turns both off.
        folder = self.compiled.directory
        if identity is None or not _caching() or folder is None:
            return None
        from accy.runtime.source_cache import SourceEntry, source_key

        key = source_key(identity, text, fn, strict)
        found = self.recent.get(f"{folder}\0{key}")
        if found is not None:
            entry, payload = found
        else:
            data = self.sources.get(key)
            entry = SourceEntry.from_bytes(data) if data is not None else None
            if entry is not None and entry.source_key != key:
                entry = None  # another text's entry, copied over this one's
            payload = self.compiled.get(entry.compile_key) if entry is not None else None
            if entry is None or payload is None:
                return None
        program = self._thaw_entry(entry.compile_key, payload)
        if program is None:
            return None
        if found is None:
            self.recent.put(f"{folder}\0{key}", entry, payload)
        self._debug(entry.fn, program)
        return program, entry

    def _thaw_entry(self, key: str, payload: bytes | None) -> Program | None:
        # An entry names its key first: another key's payload (a file copied
        # or renamed) is a miss, never the program of another module.
        stamp = key.encode() + b"\n"
        if payload is None or not payload.startswith(stamp):
            return None
        with phase("build"):  # the device's artifact, from its own caches
            program = self.thaw(payload[len(stamp) :])
        if program is not None:
            program.compile_cached = True
        return program

    def _index_source(
        self, text: str, fn: str, strict: bool, key: str, signature: tuple[Any, Any], payload: bytes
    ) -> None:
        """Keeps `text` -> compile key `key` in the source index, on disk and in memory."""
        identity = self._source_identity
        if identity is None:
            return
        from accy.runtime.source_cache import SourceEntry, source_key

        skey = source_key(identity, text, fn, strict)
        entry = SourceEntry(skey, key, fn, *signature)
        data = entry.to_bytes()
        if data is None:
            return
        self.sources.put(skey, data)
        folder = self.compiled.directory
        if folder is not None:
            self.recent.put(f"{folder}\0{skey}", entry, payload)

    @cached_property
    def _source_identity(self) -> str | None:
        # Taken once: a device's identity does not change (OpenCL's reads package metadata).
        identity = self.source_identity()
        if identity is not None and not _profile_is_its_classes(type(self)):
            # A subclass that makes its own profile (a test's or a user's
            # device forcing one) would share its class's identity, and so
            # take programs compiled for the other profile: the profile
            # itself is part of it then.
            identity += f"|profile={self.target_profile()!r}"
        return identity

    @cached_property
    def recent(self) -> RecentCompiles:
        """This device's recent compiles in memory (source_cache.py)."""
        from accy.runtime.source_cache import RecentCompiles

        return RecentCompiles()

    @cached_property
    def sources(self) -> DiskCache:
        """The source index's disk store (source_cache.py), found when first used."""
        from accy.runtime.source_cache import sources_cache

        return sources_cache()

    @cached_property
    def compiled(self) -> DiskCache:
        """The compile cache's disk store (compile_cache.py), found when first used."""
        from accy.runtime.compile_cache import compiled_cache

        return compiled_cache()

    def _debug(self, fn: str, program: Program) -> None:
        cached = " (from the compile cache)" if program.compile_cached else ""
        debug(1, f"accy: @{fn} on {self.name}{cached}: {program.describe()}")
        debug(2, program.source)


def _caching() -> bool:
    """Whether a compile may come from the compile cache (not at
    `ACCY_DEBUG=3`, nor while kernel sources are dumped or overridden)."""
    return debug_level() < 3 and not dumping_or_overriding()


def _signature_of(module: ModuleOp, fn: str) -> tuple[tuple[TensorSpec, ...], tuple[TensorSpec, ...]] | None:
    """The TensorSpecs of function `fn`'s arguments and results (before it
    is kernelized); None where one has no numpy dtype."""
    from xdsl.dialects import func

    f = next((op for op in module.ops if isinstance(op, func.FuncOp) and op.sym_name.data == fn), None)
    if f is None:
        return None
    try:
        return (
            tuple(TensorSpec.of(t) for t in f.function_type.inputs.data),
            tuple(TensorSpec.of(t) for t in f.function_type.outputs.data),
        )
    except (ValueError, KeyError, AttributeError):
        return None


def _profile_is_its_classes(cls: type[Device]) -> bool:
    """Whether `cls` makes its target profile as the class whose
    `source_identity` it uses does (so that identity covers the profile)."""
    owner = next(c for c in cls.__mro__ if "source_identity" in c.__dict__)
    return cls.target_profile is owner.target_profile


def _report_bounds(module: ModuleOp) -> None:
    """What `ACCY_DEBUG` says of the kernels' loads and stores (bounds.py)."""
    from accy.passes.kernel_ir.bounds import OutOfBoundsError, verify_module_bounds

    try:
        verify_module_bounds(module)
    except OutOfBoundsError as e:
        for problem in e.problems:
            debug(1, f"accy: not proved in bounds: {problem.message}")
        return
    debug(1, "accy: every load and store of every kernel proved in bounds")


def _ir_out(text: str) -> None:
    debug(3, text)
