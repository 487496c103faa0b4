"""`accy-opt -t opencl`: prints a kernelized module's kernels as OpenCL C."""

from __future__ import annotations

from dataclasses import dataclass
from typing import IO, ClassVar

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.utils.target import Target

from accy.backends.opencl.emitter import emit_opencl


@dataclass(frozen=True)
class OpenCLTarget(Target):
    """OpenCL C for every kernel of `gpu.module @kernels` (see accy.backends.opencl.emitter)."""

    name: ClassVar[str] = "opencl"

    def emit(self, ctx: Context, module: ModuleOp, output: IO[str]) -> None:
        output.write(emit_opencl(module))
