"""The LLVM IR backend: kernel IR emitted as LLVM IR with llvmlite's IR builder (no runtime here).

The names below are imported on first use (module `__getattr__`): the host
target (host.py) is read without loading the emitter and xDSL.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from accy.backends.llvm.emitter import (
        BufferArg,
        LLVMEmitError,
        emit_llvm,
        emit_llvm_kernels,
        emit_llvm_module,
        emit_math,
        kernel_arguments,
        kernel_funcs,
    )
    from accy.backends.llvm.host import CodegenTarget, host_target

_HOST = ("CodegenTarget", "host_target")

__all__ = [
    "BufferArg",
    "CodegenTarget",
    "LLVMEmitError",
    "emit_llvm",
    "emit_llvm_kernels",
    "emit_llvm_module",
    "emit_math",
    "host_target",
    "kernel_arguments",
    "kernel_funcs",
]


def __getattr__(name: str) -> Any:
    if name not in __all__:
        raise AttributeError(f"module 'accy.backends.llvm' has no attribute '{name}'")
    module = import_module("accy.backends.llvm.host" if name in _HOST else "accy.backends.llvm.emitter")
    value = getattr(module, name)
    globals()[name] = value
    return value
