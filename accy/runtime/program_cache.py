"""Built OpenCL programs: in memory per process, and on disk across processes.

In memory, a program is built once per (source, options) on a device, and
its `cl.Kernel`s are kept (pyopencl's `program.name` makes a new kernel object
on every lookup). The in-memory cache is an LRU of at most `max_entries`
programs (`$ACCY_PROGRAM_CACHE_SIZE`, default `DEFAULT_MAX_PROGRAMS`): an
evicted program lives on in the executables that use it and is freed with
them.

On disk, accy keeps program binaries itself (`DiskCache("programs")`, see
disk_cache.py for the folder, the entry format and how corruption is
handled), one entry per (source, build options, device, driver version).

A program is complete when it is built, never at its first launch: PoCL
compiles each kernel's work-group function (the loop over a work-group's
work-items) apart from `clBuildProgram`, by default at the kernel's first
launch, specialised for that launch's work-group size (the work-group size
PoCL picks itself where accy leaves it open). accy instead has PoCL use one
generic work-group function per kernel (`generic_work_groups`:
`POCL_WORK_GROUP_SPECIALIZATION=0`, read by PoCL at every launch) and
compiles it right after the build by fetching the program's binary, which
is then stored. So the build counts all of the compile (`--stats` build_s;
first_launch_s is the launch alone), and a second process loading the
binary launches at once. Measured on PoCL 3.1 (2 cores, loaded): the
generic functions cost what the first launches' specialised ones did
(demo MLP ~0.3 s either way; the first process used to compile both: the
specialised ones at the first launch, the generic ones again when it
fetched the binary to store it), and the kernels run as fast: the CPU
bench workloads at one thread, medians of 25 calls in three alternated
processes each, all within the runs' spread (e.g. softmax 4096^2
15.8-16.0 ms specialised, 15.3-20.3 generic; matmul 1024 21.9-22.7 against
21.8-24.3). A user who sets `POCL_WORK_GROUP_SPECIALIZATION=1` gets PoCL's
specialised functions back, compiled at each kernel's first launch in every
process (the stored binary holds the generic ones). A binary the driver
refuses is discarded and the program is built from source.

PoCL's own kernel cache is isolated: `isolate_pocl_cache()` points
`POCL_CACHE_DIR` at a private folder of this process (created in the system
temp folder, removed at exit, left-overs of killed processes removed by the
next one), so nothing another process wrote, or corrupted, is ever read by
PoCL here. It must run before PoCL initialises (the first
`cl.get_platforms()`), which is why `opencl_devices()` calls it first; a
`POCL_CACHE_DIR` set by the user before is restored afterwards, so child
processes see what the user set.

pyopencl's own disk caches (its pickled invoker cache in
`$XDG_CACHE_HOME/pytools` above all) are turned off when this module is
imported: nothing accy has not checked is loaded from disk.

It also asks PoCL to pin its worker threads (pocl_threads.py).
"""

from __future__ import annotations

import atexit
import ctypes
import ctypes.util
import hashlib
import os
import re
import shutil
import tempfile
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

import pyopencl as cl

from accy.backends.opencl.format import WGMMA_MARK
from accy.runtime import pocl_threads
from accy.runtime.device import max_programs_from_env
from accy.runtime.disk_cache import DiskCache

# pyopencl's own disk caches (the invoker cache of every kernel's set_args,
# a pickled module in $XDG_CACHE_HOME/pytools; scan kernels; built sources)
# lie outside accy's protections (disk_cache.py): anything written there,
# random bytes included, would be loaded by every later run. accy keeps its
# own binaries and builds without pyopencl's caches, so they are turned off
# (pyopencl reads the flag when each is used; the invoker module is imported
# on the first kernel).
cl._PYOPENCL_NO_CACHE = True

#: Invokers kept in memory (`_memoized_invokers`).
INVOKER_CACHE_SIZE = 256


def _memoized_invokers() -> None:
    """Without its cache pyopencl generates every new kernel object's
    `set_args`/enqueue functions afresh as a Python module and files its
    source in `linecache` for good: ~100 KiB a distinct program, for ever
    (issue 25). The same functions serve every kernel of one name and
    signature, so they are kept here in memory (an LRU), as pyopencl's own
    cache would, and the linecache entries a generation makes are dropped
    (they only let a traceback through generated code show its lines)."""
    import linecache

    from pyopencl import invoker

    generate = invoker.generate_enqueue_and_set_args
    memo: OrderedDict[tuple[Any, ...], Any] = OrderedDict()
    lock = threading.Lock()

    def memoized(function_name: str, num_passed_args: int, num_cl_args: int, arg_types: Any, **flags: Any) -> Any:
        key = (function_name, num_passed_args, num_cl_args, arg_types, flags["work_around_arg_count_bug"], flags["warn_about_arg_count_bug"])
        with lock:
            if key in memo:
                memo.move_to_end(key)
                return memo[key]
            before = set(linecache.cache)
            made = memo[key] = generate(function_name, num_passed_args, num_cl_args, arg_types, **flags)
            for name in set(linecache.cache) - before:
                linecache.cache.pop(name, None)
            while len(memo) > INVOKER_CACHE_SIZE:
                memo.popitem(last=False)
            return made

    invoker.generate_enqueue_and_set_args = memoized


_memoized_invokers()

#: Bumped when what accy stores as a program entry changes.
FORMAT_VERSION = "1"

_POCL_PREFIX = "accy-pocl-"
_pocl_lock = threading.Lock()
_pocl_dir: str | None = None
#: Why no private folder could be made (None when one was, or not yet tried).
pocl_dir_error: str | None = None


def isolate_pocl_cache() -> str | None:
    """Gives PoCL a private cache folder for this process (see the module
    docstring) and returns it; None when no temp folder could be made (PoCL
    then uses its default). Idempotent; call before PoCL initialises."""
    global _pocl_dir, pocl_dir_error
    with _pocl_lock:
        if _pocl_dir is not None:
            return _pocl_dir
        try:
            tmp = tempfile.gettempdir()
            _remove_dead_pocl_dirs(tmp)
            path = tempfile.mkdtemp(prefix=f"{_POCL_PREFIX}{os.getpid()}-", dir=tmp)
        except OSError as e:
            pocl_dir_error = f"accy could not make a private PoCL cache folder ({e.strerror or e})"
            return None
        atexit.register(shutil.rmtree, path, True)
        _pocl_dir = path
        return path


#: PoCL's switch for work-group functions specialised at each launch (see the module docstring).
SPECIALIZATION_ENV = "POCL_WORK_GROUP_SPECIALIZATION"


def generic_work_groups() -> bool:
    """Has PoCL run every kernel on its generic work-group function, the one
    compiled with the program (module docstring), by setting
    `POCL_WORK_GROUP_SPECIALIZATION=0` for the rest of the process (PoCL
    reads it at each launch; child processes inherit it). A value the user
    set is kept. Returns whether PoCL's launches compile nothing."""
    return os.environ.setdefault(SPECIALIZATION_ENV, "0").strip() == "0"


class pocl_environment:
    """Context manager: the environment PoCL initialises in (`POCL_CACHE_DIR`
    the private folder; `POCL_AFFINITY=1` where `pocl_threads.can_pin`,
    unless the user set it), and the caller's values (or none) again after
    (but for `generic_work_groups`' variable, which stays).
    PoCL's threads read it before initialisation returns (they wait at a
    barrier). `pins`: whether accy set POCL_AFFINITY."""

    def __enter__(self) -> pocl_environment:
        generic_work_groups()  # kept after `__exit__`: PoCL reads it at every launch
        self._saved = {name: os.environ.get(name) for name in ("POCL_CACHE_DIR", "POCL_AFFINITY")}
        path = isolate_pocl_cache()
        if path is not None:
            os.environ["POCL_CACHE_DIR"] = path
        self.pins = self._saved["POCL_AFFINITY"] is None and pocl_threads.can_pin()
        if self.pins:
            os.environ["POCL_AFFINITY"] = "1"
        return self

    def __exit__(self, *exc: object) -> None:
        for name, value in self._saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def _remove_dead_pocl_dirs(tmp: str) -> None:
    """Removes private PoCL folders whose process is gone (killed before its
    exit handler ran)."""
    try:
        names = [n for n in os.listdir(tmp) if n.startswith(_POCL_PREFIX)]
    except OSError:
        return
    for name in names:
        pid_text = name[len(_POCL_PREFIX) :].split("-", 1)[0]
        if not pid_text.isdigit() or _process_alive(int(pid_text)):
            continue
        shutil.rmtree(os.path.join(tmp, name), ignore_errors=True)


def _process_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True  # someone else's process
    return True


@dataclass
class BuiltProgram:
    """A built program and one `cl.Kernel` per kernel name.

    `launch_lock` must be held from a kernel's `set_args` to its enqueue:
    argument values are captured at enqueue, and kernels are shared by every
    executable of the same source, so two threads must not interleave there.
    """

    program: cl.Program
    kernels: dict[str, cl.Kernel]
    build_seconds: float
    disk_key: str
    #: Whether the binary was loaded from disk (False: built from source, and stored when the disk allows).
    stored: bool = False
    launch_lock: threading.Lock = field(default_factory=threading.Lock)


class ProgramBuildError(ValueError):
    """The OpenCL compiler rejected generated source (an accy bug): the message
    carries the build log and the source."""


class ProgramCache:
    """Programs of one device and context (see the module docstring).

    `disk` is where binaries are kept across processes: the default is
    `DiskCache("programs")` under the cache root, None turns it off.
    """

    def __init__(
        self,
        context: cl.Context,
        device: cl.Device,
        max_entries: int | None = None,
        disk: DiskCache | None | str = "default",
    ) -> None:
        self.context = context
        self.device = device
        self.max_entries = max_programs_from_env() if max_entries is None else max_entries
        self.disk: DiskCache | None = DiskCache("programs") if disk == "default" else disk  # type: ignore[assignment]
        self._programs: OrderedDict[str, BuiltProgram] = OrderedDict()
        self._lock = threading.Lock()
        self._building: dict[str, threading.Lock] = {}
        # What identifies a binary beyond source and options.
        self._identity = "\n".join(
            [
                FORMAT_VERSION,
                device.platform.name,
                device.platform.version,
                device.name,
                device.version,
                device.driver_version,
            ]
        )
        self.hits = 0
        self.misses = 0
        self.evictions = 0
        #: Misses served from a disk binary / built from source.
        self.disk_loads = 0
        self.source_builds = 0

    @staticmethod
    def key(source: str, options: str) -> str:
        return hashlib.sha256(f"{options}\n{source}".encode()).hexdigest()

    def disk_key(self, source: str, options: str) -> str:
        return hashlib.sha256(f"{self._identity}\n{options}\n{source}".encode()).hexdigest()

    def get(self, source: str, options: str = "") -> BuiltProgram:
        """The program of `source` built with `options`: from memory, else
        from a verified disk binary, else built from source."""
        key = self.key(source, options)
        with self._lock:
            cached = self._lookup(key)
            if cached is not None:
                return cached
            building = self._building.setdefault(key, threading.Lock())
        # One thread builds a given program; others wait for it, not for builds of other programs.
        with building:
            with self._lock:
                cached = self._lookup(key)
                if cached is not None:
                    return cached
            try:
                built = self._load_or_build(source, options)
            finally:
                with self._lock:
                    self._building.pop(key, None)
            with self._lock:
                self.misses += 1
                self._programs[key] = built
                while len(self._programs) > self.max_entries:
                    self._programs.popitem(last=False)
                    self.evictions += 1
        return built

    def _lookup(self, key: str) -> BuiltProgram | None:
        cached = self._programs.get(key)
        if cached is not None:
            self._programs.move_to_end(key)
            self.hits += 1
        return cached

    def _load_or_build(self, source: str, options: str) -> BuiltProgram:
        disk_key = self.disk_key(source, options)
        start = time.perf_counter()
        binary = self.disk.get(disk_key) if self.disk is not None else None
        if binary is not None:
            try:
                program = cl.Program(self.context, [self.device], [binary]).build(options=options.split())
            except cl.Error:
                assert self.disk is not None
                self.disk.discard(disk_key)  # the driver refuses it: rebuild below
            else:
                self.disk_loads += 1
                return self._built(program, start, disk_key, stored=True)
        try:
            # A plain `cl.Program(context, source)` would also use pyopencl's
            # own disk cache on some platforms: accy keeps its own.
            program = cl.Program(cl._cl._Program(self.context, source))
            program.build(options=options.split(), devices=[self.device])
            if WGMMA_MARK in source:  # its PTX, the marked lines uncommented, for sm_90a
                ptx = sm90a_ptx(program_binary(program))
                program = cl.Program(self.context, [self.device], [ptx]).build(options=options.split())
        except (cl.Error, ValueError) as e:
            raise ProgramBuildError(
                f"the OpenCL compiler rejected accy's generated kernels (a bug in accy):\n{e}\n--- source ---\n{source}"
            ) from e
        self.source_builds += 1
        self._complete(program, disk_key)
        return self._built(program, start, disk_key, stored=False)

    def _built(self, program: cl.Program, start: float, disk_key: str, stored: bool) -> BuiltProgram:
        # One cl.Kernel a name, not program.all_kernels(): pyopencl 2025's
        # all_kernels keeps a reference it never drops, so the program and
        # its kernels were never freed (~95 KiB a distinct program on PoCL).
        names = [n for n in program.get_info(cl.program_info.KERNEL_NAMES).split(";") if n]
        kernels = {name: cl.Kernel(program, name) for name in names}
        return BuiltProgram(program, kernels, time.perf_counter() - start, disk_key, stored)

    def _complete(self, program: cl.Program, disk_key: str) -> None:
        """Fetches the binary of a program just built from source, and
        stores it (a cache that cannot be written is turned off with one
        warning). On PoCL the fetch compiles every kernel's work-group
        function (the module docstring), the part of the build that would
        otherwise come at each kernel's first launch; without a disk cache
        only the binary's size is asked for, which compiles them as well,
        and nothing is copied. No launch of the program can be in flight:
        none has been made."""
        if self.disk is None or self.disk.directory is None:
            program_binary_sizes(program)
            return
        binary = program_binary(program)
        if binary:
            self.disk.put(disk_key, binary)

    def __len__(self) -> int:
        return len(self._programs)


def sm90a_ptx(ptx: bytes) -> bytes:
    """NVIDIA's PTX of a program whose source holds `accy_kernel.wgmma`:
    the lines marked `WGMMA_MARK` (comments to the compiler, which builds
    for `.target sm_90`, whose ptxas refuses wgmma) uncommented, and the
    target `sm_90a`, which the driver builds as a binary (probed on an
    H100 and the H200: docs/kernel-notes.md). ValueError where the PTX is
    not one module for sm_90 with marked lines."""
    text = ptx.decode(errors="replace").rstrip("\0")
    marked = text.count(WGMMA_MARK)
    text, targets = re.subn(r"^(\s*\.target\s+sm_90)(?![0-9a-z])", r"\1a", text, flags=re.M)
    if not marked or targets != 1:
        raise ValueError(f"the PTX of a wgmma program has {marked} marked lines and {targets} sm_90 targets (one wanted)")
    return text.replace(WGMMA_MARK, "").encode() + b"\0"


# clGetProgramInfo's parameter names (CL/cl.h).
_CL_PROGRAM_BINARY_SIZES = 0x1165
_CL_PROGRAM_BINARIES = 0x1166


def _opencl_library() -> ctypes.CDLL | None:
    name = ctypes.util.find_library("OpenCL") or "libOpenCL.so.1"
    try:
        library = ctypes.CDLL(name)
    except OSError:
        return None
    library.clGetProgramInfo.argtypes = [ctypes.c_void_p, ctypes.c_uint, ctypes.c_size_t, ctypes.c_void_p, ctypes.c_void_p]
    library.clGetProgramInfo.restype = ctypes.c_int
    return library


_OPENCL: ctypes.CDLL | None = _opencl_library()


def program_binary_sizes(program: cl.Program) -> list[int]:
    """The sizes of a program's binaries, one a device, fetched through
    ctypes, which lets go of the GIL during the call: on PoCL asking for
    them compiles every work-group function, seconds to minutes during
    which pyopencl's `program.binaries` held the GIL, so no other thread
    ran and a Ctrl-C waited for its end (`interruptible` relies on the main
    thread running). pyopencl's is the fallback where the OpenCL library is
    not found by name."""
    if _OPENCL is None:
        return [len(b) if b else 0 for b in program.binaries]
    handle = ctypes.c_void_p(program.int_ptr)
    count = ctypes.c_size_t()
    _check(_OPENCL.clGetProgramInfo(handle, _CL_PROGRAM_BINARY_SIZES, 0, None, ctypes.byref(count)))
    sizes = (ctypes.c_size_t * (count.value // ctypes.sizeof(ctypes.c_size_t)))()
    _check(_OPENCL.clGetProgramInfo(handle, _CL_PROGRAM_BINARY_SIZES, ctypes.sizeof(sizes), sizes, None))
    return list(sizes)


def program_binary(program: cl.Program) -> bytes:
    """The binary of a program built for one device (b"" when the driver
    has none), fetched through ctypes as `program_binary_sizes` says."""
    sizes = program_binary_sizes(program)
    if not sizes or not sizes[0]:
        return b""
    if _OPENCL is None:
        return bytes(program.binaries[0])
    buffers = [ctypes.create_string_buffer(size) for size in sizes]
    pointers = (ctypes.c_char_p * len(buffers))(*(ctypes.cast(b, ctypes.c_char_p) for b in buffers))
    handle = ctypes.c_void_p(program.int_ptr)
    _check(_OPENCL.clGetProgramInfo(handle, _CL_PROGRAM_BINARIES, ctypes.sizeof(pointers), pointers, None))
    return buffers[0].raw


def _check(status: int) -> None:
    if status != 0:
        raise cl.Error(f"clGetProgramInfo failed with status {status}")
