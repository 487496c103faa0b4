"""`accy-opt -t llvm`: prints a kernelized module's kernels as LLVM IR."""

from __future__ import annotations

from dataclasses import dataclass
from typing import IO, ClassVar

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.utils.target import Target

from accy.backends.llvm.emitter import emit_llvm


@dataclass(frozen=True)
class LLVMTarget(Target):
    """LLVM IR (for the host CPU) of every kernel of `gpu.module @kernels` (see accy.backends.llvm.emitter)."""

    name: ClassVar[str] = "llvm"

    def emit(self, ctx: Context, module: ModuleOp, output: IO[str]) -> None:
        output.write(emit_llvm(module))
