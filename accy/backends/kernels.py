"""What every backend reads of a kernelized module: its `gpu.module
@kernels`, the `gpu.func` kernels in it, which of a kernel's buffer
arguments it writes, and the conventions of kernel IR that every backend
relies on (docs/kernel-ir.md): the ops a kernel may hold (`KERNEL_OPS`) and
the shape of a kernel and of those ops (`check_kernel`)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from xdsl.dialects import arith, gpu, memref, scf, vector
from xdsl.dialects import math as math_dialect
from xdsl.dialects.builtin import (
    DenseIntOrFPElementsAttr,
    FloatAttr,
    IntegerAttr,
    MemRefType,
    ModuleOp,
    NoneAttr,
    StringAttr,
    VectorType,
)
from xdsl.ir import Attribute, Block, Operation, SSAValue

from accy.dialects.host import KERNELS_MODULE, AddressSpace, AddressSpaceAttr, written_arguments
from accy.dialects.kernel import (
    FLOAT_PREDICATES,
    INT_PREDICATES,
    WORK_ITEM_OPS,
    AsyncCommitOp,
    AsyncCopyOp,
    AsyncWaitOp,
    LdMatrixOp,
    MmaOp,
    NarrowPairOp,
    ShuffleXorOp,
    VCastOp,
    VCmpOp,
    VSelectOp,
    WgmmaOp,
    WgmmaSyncOp,
)


class KernelModuleError(ValueError):
    """The module holds no kernels a backend can read: not kernelized,
    something other than `gpu.func` kernels in `gpu.module @kernels`, or a
    kernel that breaks the conventions of docs/kernel-ir.md (`check_kernel`)."""


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


# --------------------------------------------------------------------------
# The ops of kernel IR
# --------------------------------------------------------------------------

#: The arith conversions (on scalars: their vector forms are accy_kernel.vcast).
CASTS = (
    arith.IndexCastOp, arith.SIToFPOp, arith.UIToFPOp, arith.FPToSIOp, arith.FPToUIOp, arith.ExtFOp,
    arith.TruncFOp, arith.ExtSIOp, arith.ExtUIOp, arith.TruncIOp, arith.BitcastOp,
)  # fmt: skip
#: Binary ops that are a combining function of `vector.reduction`: op -> its kind.
COMBINING_OPS: dict[type[Operation], str] = {
    arith.MaximumfOp: "maximumf", arith.MinimumfOp: "minimumf", arith.MaxnumfOp: "maxnumf",
    arith.MinnumfOp: "minnumf", arith.MaxSIOp: "maxsi", arith.MinSIOp: "minsi",
}  # fmt: skip
#: The kinds of `vector.reduction` in kernel IR.
REDUCTION_KINDS = frozenset({"add", "mul", "and", "or", "xor", *COMBINING_OPS.values()})
#: Math ops that are the C library's function of this name (C99; C23's
#: roundeven), on scalars and lane by lane on vectors.
MATH_CALLS: dict[type[Operation], str] = {
    math_dialect.ExpOp: "exp", math_dialect.Exp2Op: "exp2", math_dialect.ExpM1Op: "expm1",
    math_dialect.LogOp: "log", math_dialect.Log2Op: "log2", math_dialect.Log10Op: "log10",
    math_dialect.Log1pOp: "log1p", math_dialect.SqrtOp: "sqrt", math_dialect.RsqrtOp: "rsqrt",
    math_dialect.CbrtOp: "cbrt", math_dialect.TanhOp: "tanh", math_dialect.SinOp: "sin",
    math_dialect.CosOp: "cos", math_dialect.TanOp: "tan", math_dialect.SinhOp: "sinh",
    math_dialect.CoshOp: "cosh", math_dialect.AsinOp: "asin", math_dialect.AcosOp: "acos",
    math_dialect.AtanOp: "atan", math_dialect.AsinhOp: "asinh", math_dialect.AcoshOp: "acosh",
    math_dialect.AtanhOp: "atanh", math_dialect.ErfOp: "erf", math_dialect.FloorOp: "floor",
    math_dialect.CeilOp: "ceil", math_dialect.TruncOp: "trunc", math_dialect.RoundOp: "round",
    math_dialect.RoundEvenOp: "roundeven", math_dialect.AbsFOp: "fabs", math_dialect.PowFOp: "pow",
    math_dialect.Atan2Op: "atan2", math_dialect.CopySignOp: "copysign", math_dialect.FmaOp: "fma",
    vector.FMAOp: "fma",
}  # fmt: skip
#: What ends a block of kernel IR: scf.yield the blocks of scf.for / scf.if
#: (its operands are the block's results), gpu.return the kernel's.
TERMINATORS = (scf.YieldOp, gpu.ReturnOp)

#: The ops a kernel body may hold, by dialect, and nothing else: both
#: backends handle every one (tests/unit/test_kernel_ir_ops.py), and
#: docs/kernel-ir.md lists them (tested against this).
KERNEL_OPS: dict[str, tuple[type[Operation], ...]] = {
    "gpu": (*WORK_ITEM_OPS, gpu.BarrierOp, gpu.ReturnOp),
    "arith": (
        arith.ConstantOp, arith.AddiOp, arith.SubiOp, arith.MuliOp, *DIVISIONS, arith.AddfOp, arith.SubfOp,
        arith.MulfOp, arith.DivfOp, arith.NegfOp, *COMBINING_OPS, arith.AndIOp, arith.OrIOp, arith.XOrIOp,
        arith.ShLIOp, arith.ShRSIOp, arith.ShRUIOp, arith.CmpiOp, arith.CmpfOp, arith.SelectOp, *CASTS,
    ),
    "math": (*(op for op in MATH_CALLS if op.name.startswith("math.")), math_dialect.AbsIOp),
    "scf": (scf.ForOp, scf.IfOp, scf.YieldOp),
    "memref": (memref.LoadOp, memref.StoreOp, memref.AllocaOp),
    "vector": (
        vector.LoadOp, vector.StoreOp, vector.BroadcastOp, vector.ReductionOp, vector.ExtractOp, vector.InsertOp,
        vector.ShuffleOp, vector.FMAOp,
    ),
    "accy_kernel": (
        VCmpOp, VSelectOp, VCastOp, MmaOp, LdMatrixOp, AsyncCopyOp, AsyncCommitOp, AsyncWaitOp, ShuffleXorOp,
        NarrowPairOp, WgmmaOp, WgmmaSyncOp,
    ),
}  # fmt: skip
#: Every op of `KERNEL_OPS`.
KERNEL_OP_SET: frozenset[type[Operation]] = frozenset(op for ops in KERNEL_OPS.values() for op in ops)
#: The ops that each backend's kernel emitter emits by a method of this
#: name, taking the op (`emitter.<name>(op)`); a backend's handlers of the
#: others (binary ops, math calls) carry what it prints for each.
EMIT_METHODS: dict[type[Operation], str] = {
    arith.ConstantOp: "constant", arith.NegfOp: "negf", arith.CmpiOp: "cmpi", arith.CmpfOp: "cmpf",
    arith.SelectOp: "select", VCmpOp: "vcmp", VSelectOp: "select", VCastOp: "vcast", MmaOp: "mma",
    LdMatrixOp: "ldmatrix", AsyncCopyOp: "async_copy", AsyncCommitOp: "async_commit", AsyncWaitOp: "async_wait",
    ShuffleXorOp: "shuffle_xor", NarrowPairOp: "narrow_pair", WgmmaOp: "wgmma", WgmmaSyncOp: "wgmma_sync",
    **dict.fromkeys(CASTS, "cast"), math_dialect.AbsIOp: "absi",
    **dict.fromkeys(WORK_ITEM_OPS, "work_item_id"), gpu.BarrierOp: "barrier",
    memref.AllocaOp: "alloca", memref.LoadOp: "load", memref.StoreOp: "store",
    vector.LoadOp: "vector_load", vector.StoreOp: "vector_store", vector.BroadcastOp: "broadcast",
    vector.ReductionOp: "reduction", vector.ExtractOp: "extract", vector.InsertOp: "insert",
    vector.ShuffleOp: "shuffle", scf.ForOp: "for_", scf.IfOp: "if_",
}  # fmt: skip


def predicate(op: Operation) -> str:
    """The predicate of an arith.cmpi / arith.cmpf / accy_kernel.vcmp, by
    name (one of INT_PREDICATES or FLOAT_PREDICATES)."""
    if isinstance(op, VCmpOp):
        return op.predicate.data
    assert isinstance(op, arith.CmpiOp | arith.CmpfOp)
    names = INT_PREDICATES if isinstance(op, arith.CmpiOp) else FLOAT_PREDICATES
    return names[op.predicate.value.data]


def reduction_kind(op: Operation) -> str:
    """The kind of a `vector.reduction` (`add`, `maximumf`, ...)."""
    return op.properties["kind"].data.value  # type: ignore[union-attr]


def lane_position(op: Operation) -> int:
    """The lane a `vector.extract` / `vector.insert` reads or writes
    (`check_kernel` makes sure there is one, constant)."""
    return op.properties["static_position"].get_values()[0]  # type: ignore[union-attr]


def block_parts(block: Block) -> tuple[list[Operation], Sequence[SSAValue]]:
    """A block's ops but its terminator, and the values it yields (none
    where it ends in gpu.return, or in no terminator)."""
    ops = list(block.ops)
    if ops and isinstance(ops[-1], TERMINATORS):
        return ops[:-1], ops[-1].operands if isinstance(ops[-1], scf.YieldOp) else ()
    return ops, ()


# --------------------------------------------------------------------------
# The shape of a kernel
# --------------------------------------------------------------------------

#: Why a backend declines an op that `KERNEL_OPS` does not hold.
NOT_KERNEL_IR = "not part of the kernel IR conventions (docs/kernel-ir.md)"


def cannot_emit(kernel: str, op: Operation, why: str) -> str:
    """The diagnostic of an op a backend declines, naming the kernel and the op."""
    return f"kernel @{kernel}: cannot emit '{op.name}': {why}"


def kernel_buffers(func: gpu.FuncOp) -> list[MemRefType]:
    """The types of a kernel's arguments, its global buffers: each a flat
    1-D memref (`KernelModuleError` otherwise)."""
    types = []
    for i, arg in enumerate(func.body.block.args):
        t = arg.type
        if not isinstance(t, MemRefType) or len(t.get_shape()) != 1:
            raise KernelModuleError(
                f"kernel @{func.sym_name.data} argument {i} has type {t}; kernel arguments are flat 1-D memrefs"
            )
        types.append(t)
    return types


def check_kernel(func: gpu.FuncOp) -> None:
    """Refuses (`KernelModuleError`, naming the kernel and, where one is to
    blame, the op) a `gpu.func` that breaks the conventions every backend
    relies on (docs/kernel-ir.md): a kernel, not a helper function, of one
    block; flat 1-D memref arguments (`kernel_buffers`); only `KERNEL_OPS` in
    its body, each of the form the conventions give it (`_form_problem`);
    scf.yield ending the blocks of scf.for / scf.if and gpu.return only at
    the end of the kernel. What a backend cannot emit of the rest (OpenCL C:
    vectors of 5 lanes; LLVM: barriers) it declines itself."""
    name = func.sym_name.data
    if func.kernel is None:
        raise KernelModuleError(f"gpu.func @{name} is not a kernel (helper functions are not supported)")
    if len(func.body.blocks) != 1:
        raise KernelModuleError(f"kernel @{name} has {len(func.body.blocks)} blocks; kernels are structured (one block)")
    kernel_buffers(func)
    for op in func.walk():
        if op is func:
            continue
        why = NOT_KERNEL_IR if type(op) not in KERNEL_OP_SET else _form_problem(op, func)
        if why is not None:
            raise KernelModuleError(cannot_emit(name, op, why))


def _form_problem(op: Operation, func: gpu.FuncOp) -> str | None:
    """Why kernel op `op` of `func` is not of the form the conventions give
    it (None when it is, or when they give it none)."""
    check = _FORMS.get(type(op))
    return check(op, func) if check is not None else None


def _constant(op: Operation, func: gpu.FuncOp) -> str | None:
    value = op.properties.get("value", op.attributes.get("value"))
    t = op.results[0].type
    if isinstance(value, IntegerAttr | FloatAttr) or isinstance(value, DenseIntOrFPElementsAttr) and isinstance(t, VectorType):
        return None
    return f"constant {value} of type {t} is not a scalar or a vector"


def _alloca(op: Operation, func: gpu.FuncOp) -> str | None:
    t = op.results[0].type
    assert isinstance(t, MemRefType)
    if any(d < 0 for d in t.get_shape()) or op.operands:
        return f"{t} is not statically shaped"
    space = t.memory_space
    if isinstance(space, AddressSpaceAttr) and space.data == AddressSpace.GLOBAL:
        return "global memory cannot be allocated inside a kernel"
    if not isinstance(space, AddressSpaceAttr | NoneAttr):
        return f"memory space {space} is not #gpu.address_space<workgroup|private>"
    return None


def _access(op: Operation, func: gpu.FuncOp) -> str | None:
    """A load or store: of a kernel argument or a memref.alloca, statically shaped."""
    ref = op.operands[1 if isinstance(op, memref.StoreOp | vector.StoreOp) else 0]
    if ref not in func.body.block.args and not isinstance(ref.owner, memref.AllocaOp):
        return "its memref is neither a kernel argument nor a memref.alloca"
    assert isinstance(ref.type, MemRefType)
    if any(d < 0 for d in ref.type.get_shape()):
        return f"memref {ref.type} has a dynamic shape"
    return None


def _broadcast(op: Operation, func: gpu.FuncOp) -> str | None:
    src, t = op.operands[0].type, op.results[0].type
    if isinstance(src, VectorType) and src != t:
        return f"only scalar -> vector broadcasts are supported, got {src} -> {t}"
    return None


def _lane(op: Operation, func: gpu.FuncOp) -> str | None:
    positions = op.properties["static_position"].get_values()  # type: ignore[union-attr]
    if len(positions) != 1 or positions[0] < 0 or len(op.operands) > (1 if isinstance(op, vector.ExtractOp) else 2):
        return "only a single constant lane position is supported"
    return None


def _reduction(op: Operation, func: gpu.FuncOp) -> str | None:
    kind = reduction_kind(op)
    return None if kind in REDUCTION_KINDS else f"reduction kind '{kind}' is not supported"


def _shuffle(op: Operation, func: gpu.FuncOp) -> str | None:
    mask = op.properties["mask"].get_values()  # type: ignore[union-attr]
    if op.operands[0].type != op.operands[1].type or min(mask) < 0:
        return "only shuffles of two equal vectors by a mask of known lanes are supported"
    return None


def _structured(op: Operation, func: gpu.FuncOp) -> str | None:
    """scf.for / scf.if: each block ends in scf.yield (its results)."""
    if any(not isinstance(block.last_op, scf.YieldOp) for region in op.regions for block in region.blocks):
        return "a block of it does not end in scf.yield"
    return None


def _yield(op: Operation, func: gpu.FuncOp) -> str | None:
    if not isinstance(op.parent_op(), scf.ForOp | scf.IfOp):
        return "scf.yield outside scf.for / scf.if"
    if op is not op.parent_block().last_op:  # type: ignore[union-attr]
        return "scf.yield before the end of its block (kernels are structured)"
    return None


def _return(op: Operation, func: gpu.FuncOp) -> str | None:
    if op.parent_op() is not func or op is not func.body.block.last_op:
        return "a return before the end of the kernel (kernels are structured)"
    return None


#: The form the conventions give an op, where they give one: a function
#: saying why `op` (of kernel `func`) is not of it, or None.
_FORMS: dict[type[Operation], Callable[[Operation, gpu.FuncOp], str | None]] = {
    arith.ConstantOp: _constant,
    memref.AllocaOp: _alloca,
    **{op: _access for op in (memref.LoadOp, memref.StoreOp, vector.LoadOp, vector.StoreOp)},
    vector.BroadcastOp: _broadcast,
    vector.ExtractOp: _lane,
    vector.InsertOp: _lane,
    vector.ReductionOp: _reduction,
    vector.ShuffleOp: _shuffle,
    scf.ForOp: _structured,
    scf.IfOp: _structured,
    scf.YieldOp: _yield,
    gpu.ReturnOp: _return,
}


__all__ = [
    "CASTS",
    "COMBINING_OPS",
    "DIVISIONS",
    "EMIT_METHODS",
    "KERNEL_OPS",
    "KERNEL_OP_SET",
    "MATH_CALLS",
    "NOT_KERNEL_IR",
    "REDUCTION_KINDS",
    "SIGNED_DIVISIONS",
    "TERMINATORS",
    "WORK_ITEM_OPS",
    "KernelModuleError",
    "block_parts",
    "cannot_emit",
    "check_kernel",
    "division_needs_guard",
    "kernel_buffers",
    "kernel_funcs",
    "kernel_module",
    "lane_position",
    "predicate",
    "reduction_kind",
    "symbol",
    "written_arguments",
]
