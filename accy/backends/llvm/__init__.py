"""The LLVM IR backend: kernel IR emitted as LLVM IR with llvmlite's IR builder (no runtime here)."""

from accy.backends.llvm.emitter import (
    BufferArg,
    CodegenTarget,
    LLVMEmitError,
    emit_llvm,
    emit_llvm_kernels,
    emit_llvm_module,
    emit_math,
    host_target,
    kernel_arguments,
    kernel_funcs,
)

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
