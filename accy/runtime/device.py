"""What a device is to the runtime: something that prepares a function of a
module into a `Program`, which runs numpy arrays to numpy arrays.

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
from typing import ClassVar

import numpy as np
from xdsl.dialects import gpu
from xdsl.dialects.builtin import ModuleOp

from accy.debug import debug, debug_level
from accy.dialects.target import TargetProfile
from accy.runtime.disk_cache import DiskCache
from accy.runtime.kernel_sources import dumping_or_overriding


@dataclass
class LaunchProfile:
    """One kernel launch as `--profile` shows it."""

    name: str
    kind: str
    global_size: tuple[int, ...]
    local_size: tuple[int, ...] | None
    seconds: float


@dataclass
class RunStats:
    """Figures of the last call: kernel launches, the plan's peak device bytes
    (inputs and outputs included), and work items run on the host reference
    path instead of a kernel."""

    kernels: int = 0
    peak_bytes: int = 0
    fallbacks: int = 0
    profile: list[LaunchProfile] = field(default_factory=list)


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
    def run(self, inputs: list[np.ndarray], profile: bool = False) -> list[np.ndarray]:
        """Runs on arrays already checked against the signature."""


class Device(ABC):
    """Where programs run; `name` is the one `get_device` knows it by."""

    name: str

    @abstractmethod
    def prepare(self, module: ModuleOp, fn: str, strict: bool = False) -> Program:
        """Compiles function `fn` of `module` (which it may transform)."""


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

    def prepare(self, module: ModuleOp, fn: str, strict: bool = False) -> Program:
        """Attaches the profile, then takes the program from the compile
        cache, or kernelizes and loads it (and keeps it there). At
        `ACCY_DEBUG=3`, which prints the IR after kernelize, and while
        `ACCY_DUMP_DIR` or `ACCY_OVERRIDE_DIR` is set (kernel_sources.py), it
        always kernelizes. `ACCY_DEBUG=2` prints the kernel IR. Any
        `ACCY_DEBUG` level reports whether every kernel is proved in bounds;
        `ACCY_VERIFY_BOUNDS` makes one that is not an error (kernelize's
        `verify_bounds`)."""
        self.profile_for(module).attach(module)
        identity = self.cache_identity()
        key = None
        from accy.passes.kernelization.bounds import bounds_requested_by_env

        # ACCY_VERIFY_BOUNDS makes a kernel not proved in bounds an error,
        # ACCY_DEBUG a report; what the compile cache keeps of such a run is
        # kept apart (its kernels were checked).
        verify = bounds_requested_by_env()
        report = debug_level() >= 1 and not verify
        if identity is not None and debug_level() < 3 and not dumping_or_overriding():
            from accy.runtime.compile_cache import compile_key

            checked = ":bounds" if verify or report else ""
            key = compile_key(f"{type(self).__name__}:{identity}{checked}", module, fn, strict)
            payload = self.compiled.get(key)
            program = self.thaw(payload) if payload is not None else None
            if program is not None:
                program.compile_cached = True
                self._debug(fn, program)
                return program
        from accy.passes.kernelization.kernelize import KernelizePass
        from accy.passes.pass_manager import PassManager

        pm = PassManager([KernelizePass(strict=strict, verify_bounds=verify)], print_after=["all"] if debug_level() >= 3 else (), out=_ir_out)
        pm.run(module)
        if report:
            _report_bounds(module)
        if debug_level() >= 2:
            debug(2, "\n".join(str(op) for op in module.ops if isinstance(op, gpu.ModuleOp)))
        program = self.load(module, fn)
        if key is not None:
            payload = self.freeze(program)
            if payload is not None:
                self.compiled.put(key, payload)
        self._debug(fn, program)
        return program

    @cached_property
    def compiled(self) -> DiskCache:
        """The compile cache's disk store (compile_cache.py), found when first used."""
        from accy.runtime.compile_cache import compiled_cache

        return compiled_cache()

    def _debug(self, fn: str, program: Program) -> None:
        cached = " (from the compile cache)" if program.compile_cached else ""
        debug(1, f"accy: @{fn} on {self.name}{cached}: {program.describe()}")
        debug(2, program.source)


def _report_bounds(module: ModuleOp) -> None:
    """What `ACCY_DEBUG` says of the kernels' loads and stores (bounds.py)."""
    from accy.passes.kernelization.bounds import OutOfBoundsError, verify_module_bounds

    try:
        verify_module_bounds(module)
    except OutOfBoundsError as e:
        for problem in e.problems:
            debug(1, f"accy: not proved in bounds: {problem.message}")
        return
    debug(1, "accy: every load and store of every kernel proved in bounds")


def _ir_out(text: str) -> None:
    debug(3, text)
