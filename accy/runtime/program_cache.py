"""Built OpenCL programs, cached by source text, build options and device.

In memory, a program is built once per (source, options, device) in a
process and its `cl.Kernel`s are kept: pyopencl's `program.name` makes a new
kernel object on every lookup. Across processes, PoCL caches compiled
kernels itself under `POCL_CACHE_DIR`; `configure_pocl_cache()` points it at
a stable directory (`~/.cache/accy/pocl`, or `$XDG_CACHE_HOME/accy/pocl`)
unless the variable is already set. It must run before pyopencl creates a
context, which is why `OpenCLDevice` calls it first.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path

import pyopencl as cl


def configure_pocl_cache() -> str:
    """Sets POCL_CACHE_DIR (unless set) and returns the directory in use."""
    if "POCL_CACHE_DIR" not in os.environ:
        base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
        path = Path(base) / "accy" / "pocl"
        try:
            path.mkdir(parents=True, exist_ok=True)
        except OSError:
            return ""  # unwritable home: PoCL falls back to its own default
        os.environ["POCL_CACHE_DIR"] = str(path)
    return os.environ["POCL_CACHE_DIR"]


@dataclass
class BuiltProgram:
    """A built program and one `cl.Kernel` per kernel name."""

    program: cl.Program
    kernels: dict[str, cl.Kernel]
    build_seconds: float


class ProgramBuildError(ValueError):
    """The OpenCL compiler rejected generated source (an accy bug): the message
    carries the build log and the source."""


class ProgramCache:
    """Programs of one device and context, keyed by sha256(source + options)."""

    def __init__(self, context: cl.Context, device: cl.Device) -> None:
        self.context = context
        self.device = device
        self._programs: dict[str, BuiltProgram] = {}
        self.hits = 0
        self.misses = 0

    @staticmethod
    def key(source: str, options: str) -> str:
        return hashlib.sha256(f"{options}\n{source}".encode()).hexdigest()

    def get(self, source: str, options: str = "") -> BuiltProgram:
        import time

        key = self.key(source, options)
        cached = self._programs.get(key)
        if cached is not None:
            self.hits += 1
            return cached
        self.misses += 1
        start = time.perf_counter()
        try:
            program = cl.Program(self.context, source).build(options=options.split(), devices=[self.device])
        except cl.RuntimeError as e:
            raise ProgramBuildError(
                f"the OpenCL compiler rejected accy's generated kernels (a bug in accy):\n{e}\n--- source ---\n{source}"
            ) from e
        kernels = {k.function_name: k for k in program.all_kernels()}
        built = BuiltProgram(program, kernels, time.perf_counter() - start)
        self._programs[key] = built
        return built

    def __len__(self) -> int:
        return len(self._programs)
