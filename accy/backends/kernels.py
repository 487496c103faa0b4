"""What every backend reads of a kernelized module: its `gpu.module
@kernels`, the `gpu.func` kernels in it, and which of a kernel's buffer
arguments it writes (docs/kernel-ir.md)."""

from __future__ import annotations

from xdsl.dialects import arith, gpu
from xdsl.dialects.builtin import IntegerAttr, ModuleOp, StringAttr
from xdsl.ir import Attribute, Operation

from accy.dialects.host import KERNELS_MODULE, written_arguments


class KernelModuleError(ValueError):
    """The module holds no kernels a backend can read (not kernelized, or
    something other than `gpu.func` kernels in `gpu.module @kernels`)."""


def symbol(attr: Attribute) -> str:
    """A symbol name held as a StringAttr or a SymbolRefAttr (`@kernels`)."""
    return attr.data if isinstance(attr, StringAttr) else attr.string_value()  # type: ignore[attr-defined]


def kernel_module(module: ModuleOp, hint: str) -> gpu.ModuleOp:
    """The module's `gpu.module @kernels` (the only gpu.module, if none is
    called so); `hint` says how to make one in the error."""
    found = [op for op in module.body.block.ops if isinstance(op, gpu.ModuleOp)]
    for op in found:
        if symbol(op.sym_name) == KERNELS_MODULE:
            return op
    if len(found) == 1:
        return found[0]
    raise KernelModuleError(f"the module holds no gpu.module @kernels (run the kernelize pass first: {hint})")


def kernel_funcs(module: ModuleOp, hint: str) -> list[gpu.FuncOp]:
    """The `gpu.func`s of the module's kernels, in order."""
    funcs = []
    for op in kernel_module(module, hint).body.block.ops:
        if not isinstance(op, gpu.FuncOp):
            raise KernelModuleError(f"gpu.module @kernels holds '{op.name}'; only gpu.func kernels are supported")
        funcs.append(op)
    return funcs


__all__ = ["KernelModuleError", "kernel_funcs", "kernel_module", "symbol", "written_arguments"]


#: Integer division and remainder, which kernel IR defines everywhere
#: (docs/kernel-ir.md): x / 0 = 0, x % 0 = x, INT_MIN / -1 = INT_MIN and
#: INT_MIN % -1 = 0 (unsigned: x / 0 = 0, x % 0 = x). LLVM leaves them
#: undefined (x86 traps: SIGFPE), OpenCL C too, so the backends guard them.
SIGNED_DIVISIONS = (arith.DivSIOp, arith.RemSIOp)
DIVISIONS = (*SIGNED_DIVISIONS, arith.DivUIOp, arith.RemUIOp)


def division_needs_guard(op: Operation) -> bool:
    """Whether integer division or remainder `op` may divide by 0 (or, signed,
    by -1, which overflows for INT_MIN): its divisor is not a constant
    known to be neither."""
    divisor = op.operands[1].owner
    if isinstance(divisor, arith.ConstantOp) and isinstance(divisor.value, IntegerAttr):
        value = divisor.value.value.data
        return value == 0 or (value == -1 and isinstance(op, SIGNED_DIVISIONS))
    return True
