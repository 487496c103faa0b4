"""LLVM IR from kernel IR: one function per `gpu.func` of `gpu.module @kernels`.

Why llvmlite's IR builder, straight from kernel IR: xDSL 0.75 has an `llvm`
dialect and `xdsl.backend.llvm.convert_module` (llvm dialect -> llvmlite), but
no arith/scf/memref/vector/gpu -> llvm conversions. Writing those lowerings
would be a second, MLIR-shaped pipeline whose input is the same kernel IR;
emitting from kernel IR, as the OpenCL C emitter does (a handler per op
class), keeps one set of conventions (docs/kernel-ir.md) that both backends
read, and the LLVM IR comes out of llvmlite's builder, which types it as it
goes. The text is what `llvmlite.binding.parse_assembly` parses.

Kernel ABI (also in docs/kernel-ir.md). Each kernel `K` becomes

    define void @K(ptr %buffers, i64 %group_lo, i64 %group_hi, i64 %block)

- `%buffers` points to an array of buffer base pointers, one per `gpu.func`
  argument, in order (a flat buffer of the argument's element type; i1
  buffers hold one byte per element, 0 or 1);
- the function runs the work-groups `group_lo .. group_hi-1` of the x
  dimension, each of `block` work-items, one work-item after the other:
  `gpu.global_id x = group * block + thread`, `gpu.thread_id x = thread`,
  `gpu.block_id x = group`, `gpu.block_dim x = block`; the y and z ids are 0
  and the y/z block and grid sizes 1. `gpu.grid_dim x` is not known to a
  range of groups and is declined. A caller splits a launch's groups into
  ranges (one per core) and calls the function once per range.
- A work-group's work-items run in sequence, so a kernel that synchronises
  them (`gpu.barrier`) or shares memory between them (a `memref.alloca` in
  `#gpu.address_space<workgroup>`) cannot run this way: it is declined with
  `LLVMEmitError` naming the kernel. The CPU profile never makes such kernels
  (and `set-target` refuses `profile=gpu` with `format=llvm-ir`).

The mapping:

- index -> i64; iN -> iN; f16/f32/f64 -> half/float/double; `vector<WxT>` ->
  `<W x T>` (masks `<W x i1>`), loaded and stored with the elements'
  alignment; memory of i1 elements holds i8 (0/1): loads truncate, stores
  zero-extend; a `vector.store` marked `nontemporal` is a store aligned to
  the vector's size with `!nontemporal` (x86 `movntps`, around the caches;
  the lowering that marks one guarantees the alignment);
- `memref.load/store` -> GEP on the flat buffer (indices linearised
  row-major over the memref's static shape) + load/store; a private
  `memref.alloca` is an `alloca T, i64 N` in the entry block;
- `scf.for` -> a loop of basic blocks whose iter_args are phi nodes; `scf.if`
  with results -> branches meeting in phis;
- `arith` ops -> the LLVM instructions of the same meaning; `maximumf` /
  `minimumf` -> `llvm.maximum` / `llvm.minimum` (NaN-propagating, as the
  reference), `maxnumf`/`minnumf` -> `llvm.maxnum`/`llvm.minnum`; shifts
  are LLVM's; integer division is guarded where its divisor may be 0 or -1
  (`guarded_division`: kernel IR defines it on every input, backends/kernels.py);
  float->int casts are `fptosi` (the lowering replaces NaN and out-of-range
  inputs first);
- `accy_kernel.vcmp/vselect/vcast` -> `fcmp`/`icmp`, `select` and casts on
  vectors;
- `vector.broadcast` -> insertelement + shufflevector; `vector.reduction`:
  float add/mul in the OpenCL helper's tree order (halves added pairwise, by
  shufflevector), maximumf/minimumf -> `llvm.vector.reduce.fmaximum/fminimum`
  (NaN-propagating), the others -> `llvm.vector.reduce.*`;
- math ops go through `emit_math` (the hook the vectorised math library
  replaces): LLVM intrinsics for exp, log, sqrt, sin, cos, floor, ceil,
  fabs, pow, fma, ...; rsqrt is 1/sqrt; tanh, erf and the other functions
  LLVM has no intrinsic for are calls of libm's `tanhf`, `erff`, ... (`tanh`,
  `erf` for f64; lane by lane for vectors), declared as external functions:
  the device that JIT-compiles this IR must make them resolvable (llvmlite's
  MCJIT finds them in the process, which links libm).

The module's triple and data layout are the host's (`host_target()`, from
llvmlite.binding), and so are each function's "target-cpu" and
"target-features"; a caller passes another `CodegenTarget` to `emit_llvm` to
cross-compile. Each kernel is first checked against the conventions
(`check_kernel` of accy/backends/kernels.py, which both backends share): an
op outside `KERNEL_OPS`, or of a form they do not give it, is declined with
`LLVMEmitError` naming the kernel and the op, and so is a module whose
target asks for another artifact format than `llvm-ir`. This module reads
IR only; it never imports the runtime.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import TypeVar

import numpy as np
from llvmlite import ir
from xdsl.dialects import arith, gpu
from xdsl.dialects.builtin import (
    BFloat16Type,
    DenseIntOrFPElementsAttr,
    Float16Type,
    Float32Type,
    Float64Type,
    FloatAttr,
    IndexType,
    IntegerAttr,
    IntegerType,
    MemRefType,
    ModuleOp,
    VectorType,
)
from xdsl.ir import Attribute, Block, Operation, SSAValue

from accy.backends import kernels as backend_kernels
from accy.backends.llvm import vector_math
from accy.backends.llvm.host import FORMAT as FORMAT
from accy.backends.llvm.host import CodegenTarget as CodegenTarget
from accy.backends.llvm.host import host_target as host_target
from accy.dialects.dense import bf16_bits
from accy.dialects.host import AddressSpace, AddressSpaceAttr
from accy.dialects.kernel import VCastOp, VCmpOp, is_stream_store
from accy.dialects.target import TargetProfile, format_mismatch
from accy.dialects.types import bfloat16_dtype


class LLVMEmitError(ValueError):
    """The kernel IR holds something the LLVM backend does not emit."""


# --------------------------------------------------------------------------
# Types
# --------------------------------------------------------------------------

I1 = ir.IntType(1)
I8 = ir.IntType(8)
I16 = ir.IntType(16)
I32 = ir.IntType(32)
I64 = ir.IntType(64)
PTR = ir.PointerType()


def scalar_type(t: Attribute) -> ir.Type:
    if isinstance(t, IndexType):
        return I64
    if isinstance(t, IntegerType):
        return ir.IntType(t.width.data)
    if isinstance(t, Float32Type):
        return ir.FloatType()
    if isinstance(t, Float64Type):
        return ir.DoubleType()
    if isinstance(t, Float16Type):
        return ir.HalfType()
    if isinstance(t, BFloat16Type):
        return I16  # its bits: only loaded, stored, selected and converted (`bf16_to_float`)
    raise LLVMEmitError(f"llvm: no LLVM type for {t}")


def llvm_type(t: Attribute) -> ir.Type:
    """The LLVM type of a scalar or `vector<WxT>` value."""
    if isinstance(t, VectorType):
        shape = t.get_shape()
        if len(shape) != 1 or shape[0] < 1:
            raise LLVMEmitError(f"llvm: vector type {t} is not 1-D")
        return ir.VectorType(scalar_type(t.element_type), shape[0])
    return scalar_type(t)


def storage_type(t: Attribute) -> ir.Type:
    """The type of one element of a buffer of element type `t` (i1 -> i8)."""
    return I8 if _is_bool(t) else scalar_type(t)


def _is_bool(t: Attribute) -> bool:
    return isinstance(t, IntegerType) and t.width.data == 1


def _elem(t: ir.Type) -> ir.Type:
    return t.element if isinstance(t, ir.VectorType) else t


def _is_float(t: ir.Type) -> bool:
    return isinstance(_elem(t), ir.HalfType | ir.FloatType | ir.DoubleType)


def _byte_size(t: ir.Type) -> int:
    e = _elem(t)
    if isinstance(e, ir.IntType):
        return max(1, e.width // 8)
    return {ir.HalfType: 2, ir.FloatType: 4, ir.DoubleType: 8}[type(e)]


def mangle(t: ir.Type) -> str:
    """The suffix of an overloaded intrinsic's name (`v16f32`, `f64`, `i32`)."""
    if isinstance(t, ir.VectorType):
        return f"v{t.count}{mangle(t.element)}"
    if isinstance(t, ir.IntType):
        return f"i{t.width}"
    return {ir.HalfType: "f16", ir.FloatType: "f32", ir.DoubleType: "f64"}[type(t)]


def _declare(module: ir.Module, name: str, ret: ir.Type, args: Sequence[ir.Type]) -> ir.Function:
    """The module's function `name` (declared on first use)."""
    fn = module.globals.get(name)
    if fn is None:
        fn = ir.Function(module, ir.FunctionType(ret, list(args)), name=name)
    assert isinstance(fn, ir.Function)
    return fn


def intrinsic(builder: ir.IRBuilder, name: str, args: Sequence[ir.Value], ret: ir.Type | None = None) -> ir.Value:
    """A call of the overloaded intrinsic `llvm.<name>` on the type of `args[0]`."""
    ty = args[0].type
    fn = _declare(builder.module, f"llvm.{name}.{mangle(ty)}", ret or ty, [a.type for a in args])
    return builder.call(fn, list(args))


def splat(builder: ir.IRBuilder, x: ir.Value, width: int) -> ir.Value:
    """`<width x T>` with every lane `x` (insertelement + shufflevector)."""
    vt = ir.VectorType(x.type, width)
    if isinstance(x, ir.Constant):
        return ir.Constant(vt, [x] * width)
    one = builder.insert_element(ir.Constant(vt, None), x, ir.Constant(I32, 0))
    return builder.shuffle_vector(one, ir.Constant(vt, None), ir.Constant(ir.VectorType(I32, width), [0] * width))


def _scalar_elem(t: Attribute) -> Attribute:
    return t.element_type if isinstance(t, VectorType) else t


def _like(t: ir.Type, e: ir.Type) -> ir.Type:
    """`e`, or a vector of it as wide as `t`."""
    return ir.VectorType(e, t.count) if isinstance(t, ir.VectorType) else e


def bf16_to_float(b: ir.IRBuilder, bits: ir.Value) -> ir.Value:
    """The f32 of bf16 `bits` (i16, or a vector of them): the upper half of
    an f32, so exact (NaNs, infinities and subnormals included)."""
    i32 = _like(bits.type, I32)
    return b.bitcast(b.shl(b.zext(bits, i32), _constant_like(i32, 16)), _like(bits.type, ir.FloatType()))


def float_to_bf16(b: ir.IRBuilder, x: ir.Value) -> ir.Value:
    """The bits of the bf16 nearest f32 `x` (ties to even, as ml_dtypes):
    (u + 0x7FFF + ((u >> 16) & 1)) >> 16 of its bits u; a NaN keeps its
    sign and upper payload and is made quiet (| 0x40)."""
    i32 = _like(x.type, I32)
    u = b.bitcast(x, i32)
    odd = b.and_(b.lshr(u, _constant_like(i32, 16)), _constant_like(i32, 1))
    rounded = b.lshr(b.add(b.add(u, _constant_like(i32, 0x7FFF)), odd), _constant_like(i32, 16))
    quiet = b.or_(b.lshr(u, _constant_like(i32, 16)), _constant_like(i32, 0x40))
    nan = b.fcmp_unordered("uno", x, x)
    return b.trunc(b.select(nan, quiet, rounded), _like(x.type, I16))


def _constant_like(t: ir.Type, value: float | int) -> ir.Constant:
    if isinstance(t, ir.VectorType):
        return ir.Constant(t, [ir.Constant(t.element, value)] * t.count)
    return ir.Constant(t, value)


# --------------------------------------------------------------------------
# Math: the hook of the vectorised math library
# --------------------------------------------------------------------------

#: Math functions LLVM has an intrinsic for: op name -> intrinsic name.
MATH_INTRINSICS = {
    "exp": "exp", "exp2": "exp2", "log": "log", "log2": "log2", "log10": "log10", "sqrt": "sqrt",
    "sin": "sin", "cos": "cos", "tan": "tan", "floor": "floor", "ceil": "ceil", "trunc": "trunc",
    "round": "round", "roundeven": "roundeven", "fabs": "fabs", "pow": "pow", "fma": "fma",
    "copysign": "copysign",
}  # fmt: skip
#: Math functions that are libm calls (C name for double; `f` appended for float).
LIBM_FUNCTIONS = frozenset({
    "tanh", "erf", "expm1", "log1p", "cbrt", "sinh", "cosh", "asin", "acos", "atan", "asinh", "acosh",
    "atanh", "atan2",
})  # fmt: skip
MATH_FUNCTIONS = frozenset(MATH_INTRINSICS) | LIBM_FUNCTIONS | {"rsqrt"}
#: A kernel computing one math function of one type at this many sites calls
#: one function of the module for it (`emit_math`'s `shared`): fewer sites
#: stay inlined, as a loop body's one or two do.
SHARED_MATH_SITES = 3


def emit_math(
    builder: ir.IRBuilder, op_name: str, value: ir.Value, tier: str, *more: ir.Value, shared: bool = False
) -> ir.Value:
    """`op_name(value, *more)` (a name of `MATH_FUNCTIONS`; `more` holds the
    other operands of pow, atan2, copysign and fma) on a scalar or a vector,
    under the math tier `tier` ("exact" or "fast").

    float32 exp, log, tanh, erf, sin and cos, scalar or vector, are
    `vector_math`'s inlined polynomials (vectorised; the tier picks the
    accuracy, `vector_math.ERROR_BOUNDS`; `shared`: as one function of the
    module that each site calls, `vector_math.emit`). Other types and functions call
    LLVM's intrinsics, which the code generator turns into scalar libm calls
    per lane where the CPU has no instruction, and libm for the functions
    LLVM has no intrinsic for."""
    args = [value, *more]
    element = value.type.element if isinstance(value.type, ir.VectorType) else value.type
    if isinstance(element, ir.HalfType):
        # In float: LLVM promotes some half intrinsics (fma) to double, and
        # rounding double to half is a compiler-rt call the JIT cannot resolve.
        wide = ir.VectorType(ir.FloatType(), value.type.count) if isinstance(value.type, ir.VectorType) else ir.FloatType()
        wider = (builder.fpext(m, wide) for m in more)
        result = emit_math(builder, op_name, builder.fpext(value, wide), tier, *wider, shared=shared)
        return builder.fptrunc(result, value.type)
    if op_name in vector_math.FUNCTIONS and isinstance(element, ir.FloatType) and not more:
        return vector_math.emit(builder, op_name, value, tier, shared)
    if op_name in MATH_INTRINSICS:
        return intrinsic(builder, MATH_INTRINSICS[op_name], args)
    if op_name == "rsqrt":
        root = intrinsic(builder, "sqrt", [value])
        return builder.fdiv(_constant_like(value.type, 1.0), root)
    if op_name in LIBM_FUNCTIONS:
        return libm_call(builder, op_name, args)
    raise LLVMEmitError(f"llvm: no math function '{op_name}' (known: {', '.join(sorted(MATH_FUNCTIONS))})")


def libm_call(builder: ir.IRBuilder, name: str, args: Sequence[ir.Value]) -> ir.Value:
    """libm's `name` (double) / `namef` (float) on scalars, lane by lane on
    vectors; half is computed in float."""
    ty = args[0].type
    if isinstance(ty, ir.VectorType):
        out: ir.Value = ir.Constant(ty, None)
        for lane in range(ty.count):
            idx = ir.Constant(I32, lane)
            r = libm_call(builder, name, [builder.extract_element(a, idx) for a in args])
            out = builder.insert_element(out, r, idx)
        return out
    if isinstance(ty, ir.HalfType):
        wide = [builder.fpext(a, ir.FloatType()) for a in args]
        return builder.fptrunc(libm_call(builder, name, wide), ty)
    c_name = name if isinstance(ty, ir.DoubleType) else name + "f"
    fn = _declare(builder.module, c_name, ty, [a.type for a in args])
    return builder.call(fn, list(args))


# --------------------------------------------------------------------------
# Op tables
# --------------------------------------------------------------------------

# (int instruction, float instruction) of binary ops.
_BINARY: dict[type[Operation], str] = {
    arith.AddiOp: "add", arith.AddfOp: "fadd", arith.SubiOp: "sub", arith.SubfOp: "fsub",
    arith.MuliOp: "mul", arith.MulfOp: "fmul", arith.DivfOp: "fdiv", arith.DivSIOp: "sdiv",
    arith.RemSIOp: "srem", arith.DivUIOp: "udiv", arith.RemUIOp: "urem", arith.AndIOp: "and_",
    arith.OrIOp: "or_", arith.XOrIOp: "xor", arith.ShLIOp: "shl", arith.ShRSIOp: "ashr",
    arith.ShRUIOp: "lshr",
}  # fmt: skip
# Combining functions (of binary ops and reductions) that are an intrinsic.
_COMBINE_INTRINSIC = {
    "maximumf": "maximum", "minimumf": "minimum", "maxnumf": "maxnum", "minnumf": "minnum",
    "maxsi": "smax", "minsi": "smin",
}  # fmt: skip
# vector.reduction kind -> llvm.vector.reduce.<name> (float add/mul are a tree, see reduction).
_REDUCE_INTRINSIC = {
    "add": "add", "mul": "mul", "and": "and", "or": "or", "xor": "xor", "maxsi": "smax", "minsi": "smin",
    "maximumf": "fmaximum", "minimumf": "fminimum", "maxnumf": "fmax", "minnumf": "fmin",
}  # fmt: skip
# arith.cmpf predicate -> (ordered?, llvmlite operator); false/true are constants.
_CMPF = {
    "oeq": (True, "=="), "ogt": (True, ">"), "oge": (True, ">="), "olt": (True, "<"), "ole": (True, "<="),
    "one": (True, "!="), "ord": (True, "ord"), "ueq": (False, "=="), "ugt": (False, ">"),
    "uge": (False, ">="), "ult": (False, "<"), "ule": (False, "<="), "une": (False, "!="),
    "uno": (False, "uno"),
}  # fmt: skip
_CONSTANT_PREDICATES = {"false": 0, "true": 1}
# arith.cmpi predicate -> (signed?, llvmlite operator).
_CMPI = {
    "eq": (True, "=="), "ne": (True, "!="), "slt": (True, "<"), "sle": (True, "<="), "sgt": (True, ">"),
    "sge": (True, ">="), "ult": (False, "<"), "ule": (False, "<="), "ugt": (False, ">"), "uge": (False, ">="),
}  # fmt: skip
# accy_kernel.vcast kind -> the scalar arith op it applies lane-wise.
_VCAST = {"fptosi": arith.FPToSIOp, "sitofp": arith.SIToFPOp, "extsi": arith.ExtSIOp, "trunci": arith.TruncIOp}


@dataclass
class _Memory:
    """A memref value: its base pointer and type."""

    base: ir.Value
    type: MemRefType


class _FunctionAttributes(ir.values.FunctionAttributes):
    """llvmlite's function attributes, also taking string attributes
    (`"target-cpu"="znver5"`), which it has no API for."""

    def add(self, name: str) -> None:
        if name.startswith('"'):
            set.add(self, name)
        else:
            super().add(name)


# --------------------------------------------------------------------------
# The kernel emitter
# --------------------------------------------------------------------------


class _KernelEmitter:
    """Emits one `gpu.func` kernel as an LLVM function of the kernel ABI."""

    def __init__(self, func: gpu.FuncOp, module: ir.Module, tier: str, target: CodegenTarget) -> None:
        self.func = func
        self.kernel = func.sym_name.data
        self.module = module
        self.tier = tier
        self.target = target
        self.values: dict[SSAValue, ir.Value] = {}
        self.memories: dict[SSAValue, _Memory] = {}
        sites = Counter((op.name, op.results[0].type) for op in func.walk() if type(op) in backend_kernels.MATH_CALLS)
        self.shared_math = {site for site, count in sites.items() if count >= SHARED_MATH_SITES}

    # -- helpers -------------------------------------------------------

    def fail(self, op: Operation, why: str) -> LLVMEmitError:
        return LLVMEmitError(f"llvm: {backend_kernels.cannot_emit(self.kernel, op, why)}")

    def get(self, v: SSAValue) -> ir.Value:
        return self.values[v]

    def set(self, op: Operation, value: ir.Value) -> None:
        self.values[op.results[0]] = value

    # -- structure -----------------------------------------------------

    def refuse_work_group(self, what: str) -> LLVMEmitError:
        """A kernel whose work-items synchronise or share memory through `what`."""
        return LLVMEmitError(
            f"llvm: kernel @{self.kernel} uses {what}: the LLVM backend runs a work-group's work-items one "
            "after the other, so they cannot synchronise or share memory; kernelize for the CPU profile "
            "(set-target{profile=cpu format=llvm-ir})"
        )

    def emit(self) -> ir.Function:
        _read(backend_kernels.check_kernel, self.func)
        block = self.func.body.block
        fn = ir.Function(self.module, ir.FunctionType(ir.VoidType(), [PTR, I64, I64, I64]), name=self.kernel)
        attrs = _FunctionAttributes()
        attrs.add("nounwind")
        if self.target.cpu:
            attrs.add(f'"target-cpu"="{self.target.cpu}"')
        if self.target.features:
            attrs.add(f'"target-features"="{self.target.features}"')
        fn.attributes = attrs
        buffers, lo, hi, self.block_size = fn.args
        for arg, name in zip(fn.args, ("buffers", "group_lo", "group_hi", "block"), strict=True):
            arg.name = name
        entry = fn.append_basic_block("entry")
        self.allocas = ir.IRBuilder(entry)  # private arrays, at the top of the entry block
        b = self.builder = ir.IRBuilder(entry)
        for i, (arg, t) in enumerate(zip(block.args, backend_kernels.kernel_buffers(self.func), strict=True)):
            slot = b.gep(buffers, [ir.Constant(I64, i)], inbounds=True, source_etype=PTR, name=f"b{i}.slot")
            self.memories[arg] = _Memory(b.load(slot, typ=PTR, align=8, name=f"b{i}"), t)
        # for group in [lo, hi): for thread in [0, block): body
        g_head, t_head, body, t_latch, g_latch, done = (
            fn.append_basic_block(n) for n in ("group", "item", "body", "item.next", "group.next", "done")
        )
        b.branch(g_head)
        b.position_at_end(g_head)
        self.group = b.phi(I64, name="group")
        self.group.add_incoming(lo, entry)
        b.cbranch(b.icmp_signed("<", self.group, hi), t_head, done)
        b.position_at_end(t_head)
        self.thread = b.phi(I64, name="thread")
        self.thread.add_incoming(ir.Constant(I64, 0), g_head)
        b.cbranch(b.icmp_signed("<", self.thread, self.block_size), body, g_latch)
        b.position_at_end(body)
        self.emit_block(block)
        b.branch(t_latch)
        b.position_at_end(t_latch)
        self.thread.add_incoming(b.add(self.thread, ir.Constant(I64, 1), name="thread.next"), t_latch)
        b.branch(t_head)
        b.position_at_end(g_latch)
        self.group.add_incoming(b.add(self.group, ir.Constant(I64, 1), name="group.next"), g_latch)
        b.branch(g_head)
        b.position_at_end(done)
        b.ret_void()
        self.allocas.position_at_start(entry)
        return fn

    def emit_block(self, block: Block) -> list[ir.Value]:
        """Emits the block's ops (of kernel IR: check_kernel); the values its `scf.yield` yields."""
        ops, results = backend_kernels.block_parts(block)
        for op in ops:
            _HANDLERS[type(op)](self, op)
        return [self.get(v) for v in results]

    # -- arith ---------------------------------------------------------

    def constant(self, op: Operation) -> None:
        value = op.properties.get("value", op.attributes.get("value"))
        t = op.results[0].type
        ty = llvm_type(t)
        if isinstance(value, IntegerAttr):
            v = value.value.data
            self.set(op, ir.Constant(ty, v & 1 if ty == I1 else v))
        elif isinstance(value, FloatAttr) and isinstance(value.type, BFloat16Type):
            self.set(op, ir.Constant(ty, bf16_bits(float(value.value.data))))
        elif isinstance(value, FloatAttr):
            self.set(op, ir.Constant(ty, float(value.value.data)))
        else:
            assert isinstance(value, DenseIntOrFPElementsAttr) and isinstance(ty, ir.VectorType)
            values = list(value.get_values())
            if len(values) == 1:
                values = values * ty.count
            if ty.element == I1:
                values = [int(v) & 1 for v in values]
            if isinstance(value.get_element_type(), BFloat16Type):
                values = [bf16_bits(float(v)) for v in values]
            self.set(op, ir.Constant(ty, [ir.Constant(ty.element, v) for v in values]))

    def binary(self, op: Operation, inst: str) -> None:
        a, b = (self.get(v) for v in op.operands)
        if isinstance(op, backend_kernels.DIVISIONS) and backend_kernels.division_needs_guard(op):
            self.set(op, self.guarded_division(op, inst, a, b))
            return
        self.set(op, getattr(self.builder, inst)(a, b))

    def guarded_division(self, op: Operation, inst: str, a: ir.Value, b: ir.Value) -> ir.Value:
        """Integer `a / b` or `a % b` as kernel IR defines them where LLVM
        does not (backends/kernels.py): divided by 1 instead where b is 0
        (or, signed, where a is INT_MIN and b is -1), then x / 0 = 0 and
        x % 0 = x. INT_MIN / 1 and INT_MIN % 1 are already the results."""
        bld = self.builder
        ty = a.type
        bits = (ty.element if isinstance(ty, ir.VectorType) else ty).width
        by_zero = bld.icmp_unsigned("==", b, _constant_like(ty, 0))
        bad = by_zero
        if isinstance(op, backend_kernels.SIGNED_DIVISIONS):
            least = bld.icmp_unsigned("==", a, _constant_like(ty, -(2 ** (bits - 1))))
            bad = bld.or_(by_zero, bld.and_(least, bld.icmp_unsigned("==", b, _constant_like(ty, -1))))
        result = getattr(bld, inst)(a, bld.select(bad, _constant_like(ty, 1), b))
        at_zero = a if isinstance(op, arith.RemSIOp | arith.RemUIOp) else _constant_like(ty, 0)
        return bld.select(by_zero, at_zero, result)

    def combine(self, kind: str, a: ir.Value, b: ir.Value) -> ir.Value:
        """A combining function of binary ops and reductions."""
        if kind in _COMBINE_INTRINSIC:
            return intrinsic(self.builder, _COMBINE_INTRINSIC[kind], [a, b])
        if kind == "add":
            return self.builder.fadd(a, b) if _is_float(a.type) else self.builder.add(a, b)
        if kind == "mul":
            return self.builder.fmul(a, b) if _is_float(a.type) else self.builder.mul(a, b)
        return getattr(self.builder, {"and": "and_", "or": "or_", "xor": "xor"}[kind])(a, b)

    def combine_op(self, op: Operation, kind: str) -> None:
        self.set(op, self.combine(kind, *(self.get(v) for v in op.operands)))

    def negf(self, op: Operation) -> None:
        self.set(op, self.builder.fneg(self.get(op.operands[0])))

    def cmpi(self, op: Operation) -> None:
        signed, cmp = _CMPI[backend_kernels.predicate(op)]
        a, b = (self.get(v) for v in op.operands)
        self.set(op, (self.builder.icmp_signed if signed else self.builder.icmp_unsigned)(cmp, a, b))

    def cmpf(self, op: Operation) -> None:
        pred = backend_kernels.predicate(op)
        if pred in _CONSTANT_PREDICATES:
            self.set(op, _constant_like(llvm_type(op.results[0].type), _CONSTANT_PREDICATES[pred]))
            return
        ordered, cmp = _CMPF[pred]
        a, b = (self.get(v) for v in op.operands)
        self.set(op, (self.builder.fcmp_ordered if ordered else self.builder.fcmp_unordered)(cmp, a, b))

    def vcmp(self, op: Operation) -> None:
        assert isinstance(op, VCmpOp)
        (self.cmpf if op.is_float else self.cmpi)(op)

    def select(self, op: Operation) -> None:
        c, a, b = (self.get(v) for v in op.operands)
        if isinstance(a.type, ir.VectorType) and not isinstance(c.type, ir.VectorType):
            c = splat(self.builder, c, a.type.count)
        self.set(op, self.builder.select(c, a, b))

    def vcast(self, op: Operation) -> None:
        assert isinstance(op, VCastOp)
        self.cast(op, _VCAST[op.kind.data])

    def cast(self, op: Operation, kind: type[Operation] | None = None) -> None:
        """`op`'s conversion; bf16 (held as its i16 bits) converts through f32."""
        kind = type(op) if kind is None else kind
        src, dst = (_scalar_elem(v.type) for v in (op.operands[0], op.results[0]))
        x, to = self.get(op.operands[0]), llvm_type(op.results[0].type)
        if isinstance(src, BFloat16Type) and not isinstance(dst, BFloat16Type):
            self.set(op, self.convert(arith.ExtFOp, bf16_to_float(self.builder, x), to))
        elif isinstance(dst, BFloat16Type) and not isinstance(src, BFloat16Type):
            f32 = ir.VectorType(ir.FloatType(), to.count) if isinstance(to, ir.VectorType) else ir.FloatType()
            self.set(op, float_to_bf16(self.builder, self.convert(arith.TruncFOp, x, f32)))
        else:
            self.set(op, self.convert(kind, x, to))

    def convert(self, kind: type[Operation], x: ir.Value, dst: ir.Type) -> ir.Value:
        """`x` converted to `dst` as the arith op class `kind` (of CASTS) does."""
        b = self.builder
        src = x.type
        if src == dst:
            return x
        if kind in (arith.IndexCastOp, arith.ExtSIOp, arith.ExtUIOp, arith.TruncIOp):
            sw, dw = _elem(src).width, _elem(dst).width
            if dw < sw:
                return b.trunc(x, dst)
            # index_cast sign-extends, except an i1 (0/1, as the OpenCL backend's scalar bool).
            zero = kind is arith.ExtUIOp or (kind is arith.IndexCastOp and sw == 1)
            return b.zext(x, dst) if zero else b.sext(x, dst)
        simple = {
            arith.SIToFPOp: b.sitofp, arith.UIToFPOp: b.uitofp, arith.FPToSIOp: b.fptosi,
            arith.FPToUIOp: b.fptoui, arith.BitcastOp: b.bitcast,
        }  # fmt: skip
        if kind in simple:
            return simple[kind](x, dst)
        assert kind in (arith.ExtFOp, arith.TruncFOp), kind
        if _byte_size(dst) > _byte_size(src):
            return b.fpext(x, dst)
        if isinstance(_elem(dst), ir.HalfType) and isinstance(_elem(src), ir.DoubleType):
            # double -> half is a compiler-rt call the JIT cannot resolve: through float.
            x = b.fptrunc(x, ir.VectorType(ir.FloatType(), dst.count) if isinstance(dst, ir.VectorType) else ir.FloatType())
        return b.fptrunc(x, dst)

    # -- math ----------------------------------------------------------

    def math(self, op: Operation, name: str) -> None:
        args = [self.get(v) for v in op.operands]
        shared = (op.name, op.results[0].type) in self.shared_math
        self.set(op, emit_math(self.builder, name, args[0], self.tier, *args[1:], shared=shared))

    def absi(self, op: Operation) -> None:
        x = self.get(op.operands[0])
        # abs(INT_MIN) wraps, as in MLIR (is_int_min_poison = false).
        fn = _declare(self.module, f"llvm.abs.{mangle(x.type)}", x.type, [x.type, I1])
        self.set(op, self.builder.call(fn, [x, ir.Constant(I1, 0)]))

    # -- gpu -----------------------------------------------------------

    def work_item_id(self, op: Operation) -> None:
        dim = op.properties["dimension"].data.value  # type: ignore[union-attr]
        b = self.builder
        if dim != "x":
            value = ir.Constant(I64, 1 if isinstance(op, gpu.BlockDimOp | gpu.GridDimOp) else 0)
        elif isinstance(op, gpu.GlobalIdOp):
            value = b.add(b.mul(self.group, self.block_size), self.thread, name="gid")
        elif isinstance(op, gpu.ThreadIdOp):
            value = self.thread
        elif isinstance(op, gpu.BlockIdOp):
            value = self.group
        elif isinstance(op, gpu.BlockDimOp):
            value = self.block_size
        else:
            raise self.fail(op, "the number of work-groups (x) is not passed to an LLVM kernel (its ABI runs a range of groups)")
        self.set(op, value)

    def barrier(self, op: Operation) -> None:
        raise self.refuse_work_group("gpu.barrier")

    def mma(self, op: Operation) -> None:
        raise self.fail(op, "a warp's mma.sync is NVIDIA's inline PTX, which only the OpenCL C backend prints")

    def ldmatrix(self, op: Operation) -> None:
        raise self.fail(op, "a warp's ldmatrix is NVIDIA's inline PTX, which only the OpenCL C backend prints")

    def wgmma(self, op: Operation) -> None:
        raise self.fail(op, "a warpgroup's wgmma is NVIDIA's PTX for sm_90a, which only the OpenCL C backend prints")

    def wgmma_sync(self, op: Operation) -> None:
        raise self.fail(op, "a warpgroup's wgmma is NVIDIA's PTX for sm_90a, which only the OpenCL C backend prints")

    def narrow_pair(self, op: Operation) -> None:
        raise self.fail(op, "a packed pair of 16-bit floats is for tensor-core fragments, which only the OpenCL C backend prints")

    def shuffle_xor(self, op: Operation) -> None:
        raise self.fail(op, "a warp's shuffle exchanges between work-items, which a range of work-groups run one by one")

    def async_copy(self, op: Operation) -> None:
        raise self.refuse_work_group("an async copy into workgroup memory (accy_kernel.async_copy)")

    def async_commit(self, op: Operation) -> None:
        raise self.refuse_work_group("async copies into workgroup memory (accy_kernel.async_commit)")

    def async_wait(self, op: Operation) -> None:
        raise self.refuse_work_group("async copies into workgroup memory (accy_kernel.async_wait)")

    # -- memory --------------------------------------------------------

    def alloca(self, op: Operation) -> None:
        t = op.results[0].type
        assert isinstance(t, MemRefType)
        space = t.memory_space
        if isinstance(space, AddressSpaceAttr) and space.data == AddressSpace.WORKGROUP:
            raise self.refuse_work_group("workgroup memory (memref.alloca in #gpu.address_space<workgroup>)")
        size = max(1, math.prod(t.get_shape()))
        elem = storage_type(t.element_type)
        # `alloca T, i64 N` (not `[N x T]`): llvmlite types an alloca's pointer, and GEPs index T.
        ptr = self.allocas.alloca(elem, size=ir.Constant(I64, size), name="private")
        ptr.align = max(16, _byte_size(elem))
        self.memories[op.results[0]] = _Memory(ptr, t)

    def address(self, ref: SSAValue, indices: Sequence[SSAValue]) -> tuple[ir.Value, MemRefType]:
        """The element pointer `base + linear index` (row-major over the static shape)."""
        mem = self.memories[ref]
        shape = mem.type.get_shape()
        b = self.builder
        linear: ir.Value | None = None
        for d, idx in enumerate(indices):
            stride = math.prod(shape[d + 1 :])
            term = self.get(idx)
            if term.type != I64:
                term = b.sext(term, I64)
            if stride != 1:
                term = b.mul(term, ir.Constant(I64, stride))
            linear = term if linear is None else b.add(linear, term)
        if linear is None:
            linear = ir.Constant(I64, 0)
        elem = storage_type(mem.type.element_type)
        return b.gep(mem.base, [linear], inbounds=True, source_etype=elem), mem.type

    def load(self, op: Operation) -> None:
        ref, *indices = op.operands
        ptr, t = self.address(ref, indices)
        elem = storage_type(t.element_type)
        value = self.builder.load(ptr, typ=elem, align=_byte_size(elem))
        self.set(op, self.builder.trunc(value, I1) if _is_bool(t.element_type) else value)

    def store(self, op: Operation) -> None:
        value, ref, *indices = op.operands
        ptr, t = self.address(ref, indices)
        x = self.get(value)
        if _is_bool(t.element_type):
            x = self.builder.zext(x, I8)
        self.builder.store(x, ptr, align=_byte_size(x.type))

    def vector_load(self, op: Operation) -> None:
        ref, *indices = op.operands
        ptr, t = self.address(ref, indices)
        vt = llvm_type(op.results[0].type)
        assert isinstance(vt, ir.VectorType)
        stored = ir.VectorType(I8, vt.count) if _is_bool(t.element_type) else vt
        value = self.builder.load(ptr, typ=stored, align=_byte_size(stored))
        self.set(op, self.builder.trunc(value, vt) if stored != vt else value)

    def vector_store(self, op: Operation) -> None:
        value, ref, *indices = op.operands
        ptr, t = self.address(ref, indices)
        x = self.get(value)
        if _is_bool(t.element_type):
            x = self.builder.zext(x, ir.VectorType(I8, x.type.count))
        if not ptr.type.is_opaque:  # a private array's element pointer: llvmlite checks the pointee
            ptr = self.builder.bitcast(ptr, x.type.as_pointer())
        if is_stream_store(op):
            # LLVM emits a non-temporal store only where it knows the vector's alignment.
            stored = self.builder.store(x, ptr, align=_byte_size(x.type) * x.type.count)
            stored.set_metadata("nontemporal", self.module.add_metadata([ir.Constant(ir.IntType(32), 1)]))
            return
        self.builder.store(x, ptr, align=_byte_size(x.type))

    # -- vector --------------------------------------------------------

    def broadcast(self, op: Operation) -> None:
        src, t = op.operands[0], op.results[0].type
        if isinstance(src.type, VectorType):  # of its own type (check_kernel)
            self.set(op, self.get(src))
            return
        vt = llvm_type(t)
        assert isinstance(vt, ir.VectorType)
        self.set(op, splat(self.builder, self.get(src), vt.count))

    def reduction(self, op: Operation) -> None:
        kind = backend_kernels.reduction_kind(op)
        v = self.get(op.operands[0])
        vt = v.type
        assert isinstance(vt, ir.VectorType)
        b = self.builder
        if kind in ("add", "mul") and _is_float(vt):
            r = self.tree_reduce(kind, v)
        else:
            r = intrinsic(b, f"vector.reduce.{_REDUCE_INTRINSIC[kind]}", [v], ret=vt.element)
        if len(op.operands) > 1:
            r = self.combine(kind, self.get(op.operands[1]), r)
        self.set(op, r)

    def tree_reduce(self, kind: str, v: ir.Value) -> ir.Value:
        """Lanes combined in the OpenCL helper's order: halves pairwise
        (`lo + hi`) down to one lane; a 3-wide vector left to right."""
        b = self.builder
        w = v.type.count

        def lane(x: ir.Value, i: int) -> ir.Value:
            return b.extract_element(x, ir.Constant(I32, i))

        if w & (w - 1):  # not a power of two
            r = lane(v, 0)
            for i in range(1, w):
                r = self.combine(kind, r, lane(v, i))
            return r
        while w > 1:
            h = w // 2
            if h == 1:
                return self.combine(kind, lane(v, 0), lane(v, 1))
            mask_lo = ir.Constant(ir.VectorType(I32, h), list(range(h)))
            mask_hi = ir.Constant(ir.VectorType(I32, h), list(range(h, w)))
            v = self.combine(kind, b.shuffle_vector(v, v, mask_lo), b.shuffle_vector(v, v, mask_hi))
            w = h
        return lane(v, 0)

    def extract(self, op: Operation) -> None:
        lane = ir.Constant(I32, backend_kernels.lane_position(op))
        self.set(op, self.builder.extract_element(self.get(op.operands[0]), lane))

    def shuffle(self, op: Operation) -> None:
        """vector.shuffle as shufflevector (lanes numbered across both operands)."""
        mask = op.properties["mask"].get_values()  # type: ignore[union-attr]
        a, b = (self.get(v) for v in op.operands)
        w = a.type.count
        if op.operands[0] == op.operands[1] or all(m < w for m in mask) or all(m >= w for m in mask):
            self.set(op, self.builder.shuffle_vector(a, b, ir.Constant(ir.VectorType(I32, len(mask)), list(mask))))
            return
        # Lanes of two vectors: each vector's lanes moved on its own, then a
        # select by a constant mask. As one two-source shuffle, LLVM lowers a
        # shift of a scan's lanes with the identity coming in to a masked
        # `vexpandps` on AVX-512, which took a cumsum along rows 2.5x longer
        # on Zen 5 (its lanes moved by `vpermps`/`vpermt2ps` here).
        def lanes(v: ir.Value, picked: list[int]) -> ir.Value:
            return self.builder.shuffle_vector(v, ir.Constant(v.type, None), ir.Constant(ir.VectorType(I32, len(picked)), picked))

        from_a = lanes(a, [m if m < w else i % w for i, m in enumerate(mask)])
        from_b = lanes(b, [m - w if m >= w else i % w for i, m in enumerate(mask)])
        keep = ir.Constant(ir.VectorType(I1, len(mask)), [int(m < w) for m in mask])
        self.set(op, self.builder.select(keep, from_a, from_b))

    def insert(self, op: Operation) -> None:
        lane = ir.Constant(I32, backend_kernels.lane_position(op))
        self.set(op, self.builder.insert_element(self.get(op.operands[1]), self.get(op.operands[0]), lane))

    # -- scf -----------------------------------------------------------

    def for_(self, op: Operation) -> None:
        lb, ub, step, *inits = (self.get(v) for v in op.operands)
        body = op.regions[0].block
        b = self.builder
        fn = b.function
        pre = b.block
        head, loop, done = (fn.append_basic_block(n) for n in ("for", "for.body", "for.end"))
        b.branch(head)
        b.position_at_end(head)
        iv = b.phi(lb.type, name="i")
        iv.add_incoming(lb, pre)
        carried = []
        for init, result in zip(inits, op.results, strict=True):
            phi = b.phi(llvm_type(result.type))
            phi.add_incoming(init, pre)
            carried.append(phi)
        b.cbranch(b.icmp_signed("<", iv, ub), loop, done)
        b.position_at_end(loop)
        self.values[body.args[0]] = iv
        for arg, phi in zip(body.args[1:], carried, strict=True):
            self.values[arg] = phi
        yielded = self.emit_block(body)
        latch = b.block
        iv.add_incoming(b.add(iv, step, name="i.next"), latch)
        for phi, value in zip(carried, yielded, strict=True):
            phi.add_incoming(value, latch)
        b.branch(head)
        b.position_at_end(done)
        for result, phi in zip(op.results, carried, strict=True):
            self.values[result] = phi

    def if_(self, op: Operation) -> None:
        b = self.builder
        fn = b.function
        then, other, done = (fn.append_basic_block(n) for n in ("then", "else", "endif"))
        b.cbranch(self.get(op.operands[0]), then, other)
        arms = []
        for region, bb in ((op.regions[0], then), (op.regions[1], other)):
            b.position_at_end(bb)
            values = self.emit_block(region.block) if region.blocks else []
            arms.append((values, b.block))
            b.branch(done)
        b.position_at_end(done)
        for i, result in enumerate(op.results):
            phi = b.phi(llvm_type(result.type))
            for values, end in arms:
                phi.add_incoming(values[i], end)
            self.values[result] = phi


# The emitter of each op class of kernel IR (as xDSL's own printers
# dispatch): every op of KERNEL_OPS but the terminators, which end the
# blocks (emit_block); check_kernel declines the others.
_HANDLERS: dict[type[Operation], Callable[[_KernelEmitter, Operation], None]] = {
    **{op: getattr(_KernelEmitter, name) for op, name in backend_kernels.EMIT_METHODS.items()},
    **{op: partial(_KernelEmitter.binary, inst=inst) for op, inst in _BINARY.items()},
    **{op: partial(_KernelEmitter.combine_op, kind=kind) for op, kind in backend_kernels.COMBINING_OPS.items()},
    **{op: partial(_KernelEmitter.math, name=name) for op, name in backend_kernels.MATH_CALLS.items()},
}


# --------------------------------------------------------------------------
# Module level
# --------------------------------------------------------------------------


_T = TypeVar("_T")


def _read(read: Callable[..., _T], *args: object) -> _T:
    """`read(*args)`, a reader of backends/kernels.py, its KernelModuleError an LLVMEmitError."""
    try:
        return read(*args)
    except backend_kernels.KernelModuleError as e:
        raise LLVMEmitError(f"llvm: {e}") from None


def kernel_funcs(module: ModuleOp) -> list[gpu.FuncOp]:
    """The `gpu.func`s of the module's `gpu.module @kernels`, in order."""
    return _read(backend_kernels.kernel_funcs, module, "accy-opt -p 'set-target{format=llvm-ir},kernelize' -t llvm")


@dataclass(frozen=True)
class BufferArg:
    """One kernel argument: a flat buffer (`%buffers[i]` of the kernel ABI)."""

    element: str  # the memref's element type as MLIR prints it ("f32", "i1", ...)
    dtype: np.dtype  # the numpy type of the buffer's elements (i1 -> uint8, 0/1)
    size: int  # elements
    written: bool  # whether the kernel stores to it


_DTYPES = {"f16": np.float16, "f32": np.float32, "f64": np.float64, "i1": np.uint8, "i8": np.int8,
           "i16": np.int16, "i32": np.int32, "i64": np.int64}  # fmt: skip


def kernel_arguments(module: ModuleOp) -> dict[str, list[BufferArg]]:
    """Per kernel (by name, in order), its arguments' buffers: what the caller
    puts in `%buffers`."""
    out = {}
    for func in kernel_funcs(module):
        written = backend_kernels.written_arguments(func)
        bufs = []
        for i, t in enumerate(_read(backend_kernels.kernel_buffers, func)):
            name = str(t.element_type)
            if name not in _DTYPES and name != "bf16":
                raise LLVMEmitError(f"llvm: kernel @{func.sym_name.data} argument {i}: no buffer of element type {name}")
            dtype = bfloat16_dtype() if name == "bf16" else np.dtype(_DTYPES[name])
            bufs.append(BufferArg(name, dtype, t.get_shape()[0], i in written))
        out[func.sym_name.data] = bufs
    return out


def check_format(module: ModuleOp) -> None:
    """Refuses a module whose target asks for an artifact other than LLVM IR."""
    problem = format_mismatch(module, FORMAT, "LLVM IR")
    if problem is not None:
        raise LLVMEmitError(f"llvm: {problem}")


def _new_module(name: str, target: CodegenTarget) -> ir.Module:
    out = ir.Module(name=name)
    out.triple = target.triple
    out.data_layout = target.data_layout
    return out


def emit_llvm_module(module: ModuleOp, target: CodegenTarget | None = None) -> ir.Module:
    """The llvmlite module of every kernel of `module` (see the module docstring)."""
    check_format(module)
    target = target or host_target()
    out = _new_module("kernels", target)
    tier = TargetProfile.of_module(module).math
    for func in kernel_funcs(module):
        _KernelEmitter(func, out, tier, target).emit()
    return out


def emit_llvm(module: ModuleOp, target: CodegenTarget | None = None) -> str:
    """The LLVM IR text of every kernel of `module`, for `target` (the host's
    when None); `LLVMEmitError` when the module's target format is not
    `llvm-ir` or a kernel holds what the LLVM backend does not emit."""
    return str(emit_llvm_module(module, target))


def emit_llvm_kernels(module: ModuleOp, target: CodegenTarget | None = None) -> dict[str, str]:
    """Each kernel of `module` as a module of its own (LLVM IR text by kernel
    name), with the declarations and helpers it uses: what a JIT compiles,
    caches and times kernel by kernel."""
    check_format(module)
    target = target or host_target()
    tier = TargetProfile.of_module(module).math
    out = {}
    for func in kernel_funcs(module):
        name = func.sym_name.data
        one = _new_module(name, target)
        _KernelEmitter(func, one, tier, target).emit()
        out[name] = str(one)
    return out
