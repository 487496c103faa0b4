"""OpenCL C from kernel IR: one `__kernel` per `gpu.func` of `gpu.module @kernels`.

The input follows docs/kernel-ir.md; the output is meant to be read:

- kernel arguments are the global buffers, `__global float* restrict b0`
  (`const` when the kernel never stores to it); a launch must not pass one
  buffer to two arguments;
- every SSA value is a typed local (`float v3 = exp(v2);`), scalar constants
  are written in place as literals;
- `scf.for` is `for (long i0 = lb; i0 < ub; i0 += step)`; its iter_args are
  mutable locals declared before the loop, assigned by `scf.yield`; `scf.if`
  with results declares them before the `if`;
- `vector<WxT>` is `TW` (`float16`), loaded and stored with `vloadW`/`vstoreW`;
  a `vector.store` marked `nontemporal` into a kernel argument is a
  streaming store (`accy_stream_store`: clang's `__builtin_nontemporal_store`
  through a `TW` pointer, so its address must be a multiple of the vector's
  size, as the lowerings that mark one ensure);
  `vector<Wxi1>` is `intW` (OpenCL's -1/0 comparison masks): `accy_kernel.vcmp`
  is a vector comparison (converted to `intW` when the lanes are not 32-bit)
  and `accy_kernel.vselect %m, %a, %b` is `select(b, a, m)` (OpenCL picks its
  second operand where the mask lane's top bit is set; the mask is converted
  to the lanes' width first); `accy_kernel.vcast` is `convert_TW(x)` (float to
  int rounds toward zero, int to float to nearest, as the scalar C casts);
- math ops are OpenCL built-ins (exp, log, sqrt, rsqrt, tanh, sin, cos, erf,
  floor, ceil, fabs, pow, fma, ...); `arith.maximumf`/`minimumf` propagate NaN
  (as the reference does) while `maxnumf`/`minnumf` are `fmax`/`fmin`;
  `vector.reduction` calls a small tree-order helper printed once per file;
  a float vector's sin/cos calls `accy_sin_floatW`/`accy_cos_floatW`, printed
  once per file, which goes lane by lane when a lane is huge (`_trig_helper`);
- `memref.alloca` in `#gpu.address_space<workgroup>` is `__local T lN[size];`
  at kernel scope; a plain `memref.alloca` is a private array `T pN[size];`;
  multi-dimensional allocas are flattened row-major;
- `accy_kernel.mma` is NVIDIA's `mma.sync` as inline PTX (`asm volatile`),
  which only NVIDIA's OpenCL driver builds; `accy_kernel.async_copy` /
  `async_commit` / `async_wait` are `cp.async.cg` / `commit_group` /
  `wait_group` where the target has `mma = "sm80"`, else a plain copy and
  nothing;
- `gpu.barrier` is `barrier(CLK_LOCAL_MEM_FENCE)`, `gpu.global_id x` is
  `get_global_id(0)`, and so on.

Each kernel is first checked against the conventions (`check_kernel` of
accy/backends/kernels.py, which both backends share): an op outside
`KERNEL_OPS`, or of a form they do not give it, is declined with
`OpenCLEmitError` naming the kernel and the op, and so is a module whose
target (`accy.target`) asks for another artifact format than `opencl-c`.
Ops are printed by a method per op class (`_HANDLERS`: one for each op of
`KERNEL_OPS` but the blocks' terminators), comparisons by predicate name.
This module reads IR only; it never imports the runtime.
"""

from __future__ import annotations

import math
import re
import struct
from collections.abc import Callable, Sequence
from functools import partial
from typing import TypeVar

import numpy as np
from xdsl.dialects import arith, gpu, scf
from xdsl.dialects import math as math_dialect
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
    StringAttr,
    VectorType,
)
from xdsl.ir import Attribute, Block, Operation, SSAValue

from accy.backends import kernels as backend_kernels
from accy.backends.kernels import written_arguments
from accy.backends.opencl.format import WGMMA_MARK
from accy.dialects.dense import bf16_bits
from accy.dialects.host import AddressSpace, AddressSpaceAttr
from accy.dialects.kernel import (
    ASYNC_COPY_BYTES,
    AsyncCopyOp,
    AsyncWaitOp,
    LdMatrixOp,
    MmaOp,
    NarrowPairOp,
    ShuffleXorOp,
    VCmpOp,
    WgmmaOp,
    WgmmaSyncOp,
    alignment_of,
    is_stream_store,
)
from accy.dialects.target import TargetProfile, format_mismatch
from accy.dialects.types import element_bytes


class OpenCLEmitError(ValueError):
    """The kernel IR holds something the OpenCL C backend does not print."""


# --------------------------------------------------------------------------
# Types and literals
# --------------------------------------------------------------------------

_INT_NAMES = {1: "bool", 8: "char", 16: "short", 32: "int", 64: "long"}
_VECTOR_WIDTHS = (2, 3, 4, 8, 16)


def scalar_c_type(t: Attribute) -> str:
    if isinstance(t, IndexType):
        return "long"
    if isinstance(t, IntegerType) and t.width.data in _INT_NAMES:
        return _INT_NAMES[t.width.data]
    if isinstance(t, Float32Type):
        return "float"
    if isinstance(t, Float64Type):
        return "double"
    if isinstance(t, Float16Type):
        return "half"
    if isinstance(t, BFloat16Type):
        return "ushort"  # its bits: only loaded, stored, selected and converted (`convert`)
    raise OpenCLEmitError(f"opencl: no OpenCL C type for {t}")


def c_type(t: Attribute) -> str:
    """The OpenCL C type of a scalar or `vector<WxT>` value (i1 lanes are int)."""
    if isinstance(t, VectorType):
        shape = t.get_shape()
        if len(shape) != 1 or shape[0] not in _VECTOR_WIDTHS:
            raise OpenCLEmitError(f"opencl: vector type {t} is not 1-D of width 2, 3, 4, 8 or 16")
        elem = t.element_type
        base = "int" if _is_bool(elem) else scalar_c_type(elem)
        return f"{base}{shape[0]}"
    return scalar_c_type(t)


def _is_bool(t: Attribute) -> bool:
    return isinstance(t, IntegerType) and t.width.data == 1


def _elem(t: Attribute) -> Attribute:
    return t.element_type if isinstance(t, VectorType) else t


def _width(t: Attribute) -> int:
    return t.get_shape()[0] if isinstance(t, VectorType) else 1


def _unsigned(t: Attribute) -> str:
    """The unsigned OpenCL C type of the same width as integer type `t`."""
    name = c_type(t)
    return "u" + name


def _bits(t: Attribute) -> int:
    e = _elem(t)
    if isinstance(e, IndexType):
        return 64
    if isinstance(e, IntegerType):
        return e.width.data
    return {Float16Type: 16, BFloat16Type: 16, Float32Type: 32, Float64Type: 64}[type(e)]


#: f16 bits -> float and float (or double) -> f16 bits, rounded to nearest
#: even, through a private `half*`: vload_half / vstore_half_rte need no
#: cl_khr_fp16.
_HALF_LOAD = """static inline float{w} {name}(ushort{w} h) {{
  return vload_half{w}(0, (const half*)&h);
}}"""
_HALF_STORE = """static inline ushort{w} {name}({c}{w} x) {{
  ushort{w} h;
  vstore_half{w}_rte(x, 0, (half*)&h);
  return h;
}}"""
#: float -> bf16 bits, to nearest even: (u + 0x7FFF + ((u >> 16) & 1)) >> 16
#: of the float's bits u; a NaN keeps its sign and upper payload, made quiet.
_BF16_ROUNDING = """static inline ushort{w} {name}(float{w} x) {{
  uint{w} u = as_uint{w}(x);
  uint{w} rounded = (u + 0x7FFFu + ((u >> 16) & 1u)) >> 16;
  return convert_ushort{w}(select(rounded, (u >> 16) | 0x40u, as_uint{w}(isnan(x))));
}}"""


def float_literal(value: float, t: Attribute) -> str:
    if isinstance(t, BFloat16Type):
        return f"((ushort)0x{bf16_bits(value):04X})"
    if math.isnan(value):
        text = "NAN"
    elif math.isinf(value):
        text = "INFINITY" if value > 0 else "(-INFINITY)"
    else:
        if isinstance(t, Float64Type):
            text = repr(float(value))
        else:
            text = str(np.float32(value))
        if not any(c in text for c in ".en"):
            text += ".0"
        if not isinstance(t, Float64Type):
            text += "f"
        if value < 0:
            text = f"({text})"
    if isinstance(t, Float64Type) and not text.replace("(", "").lstrip("-")[:1].isdigit():
        return f"((double){text})"
    if isinstance(t, Float16Type):
        return f"((half){text})"
    return text


def int_literal(value: int, t: Attribute) -> str:
    if _is_bool(t):
        return "true" if value & 1 else "false"
    if isinstance(t, IntegerType) and t.width.data == 64 or isinstance(t, IndexType):
        if not -(2**31) <= value < 2**31:
            text = f"{value}L" if value != -(2**63) else "(-9223372036854775807L - 1)"
            return f"({text})" if value < 0 else text
    if value == -(2**31):
        # `-2147483648` is the negation of a long literal, a long (`max` of it and an int is ambiguous).
        return "(-2147483647 - 1)"
    return f"({value})" if value < 0 else str(value)


def _lane(i: int) -> str:
    return f"s{i:x}"


# --------------------------------------------------------------------------
# Reductions: OpenCL C has no horizontal reduce; small helpers, tree order.
# --------------------------------------------------------------------------

def _nan_max(a: str, b: str, vector: bool) -> str:
    """IEEE maximum (NaN-propagating, as arith.maximumf and the reference): OpenCL's fmax drops NaNs."""
    if vector:
        return f"select({b}, {a}, ({a} > {b}) | isnan({a}))"
    return f"({a} > {b} || isnan({a})) ? {a} : {b}"


def _nan_min(a: str, b: str, vector: bool) -> str:
    if vector:
        return f"select({b}, {a}, ({a} < {b}) | isnan({a}))"
    return f"({a} < {b} || isnan({a})) ? {a} : {b}"


# Combining functions of reductions and binary ops: (a, b, vector operands?) -> C.
_COMBINE: dict[str, Callable[[str, str, bool], str]] = {
    "add": lambda a, b, v: f"{a} + {b}",
    "mul": lambda a, b, v: f"{a} * {b}",
    "maximumf": _nan_max,
    "minimumf": _nan_min,
    "maxnumf": lambda a, b, v: f"fmax({a}, {b})",
    "minnumf": lambda a, b, v: f"fmin({a}, {b})",
    "maxsi": lambda a, b, v: f"max({a}, {b})",
    "minsi": lambda a, b, v: f"min({a}, {b})",
    "and": lambda a, b, v: f"{a} & {b}",
    "or": lambda a, b, v: f"{a} | {b}",
    "xor": lambda a, b, v: f"{a} ^ {b}",
}


def _reduction_helper(kind: str, elem: str, width: int) -> tuple[str, str]:
    """(name, definition) of `elem accy_reduce_<kind>_<elem><W>(elem<W> v)`."""
    name = f"accy_reduce_{kind}_{elem}{width}"
    combine = _COMBINE[kind]
    lines = [f"static inline {elem} {name}({elem}{width} v) {{"]
    if width == 3:
        lines.append(f"  {elem} r = {combine('v.s0', 'v.s1', False)};")
        lines.append(f"  return {combine('r', 'v.s2', False)};")
    else:
        cur, w = "v", width
        while w > 1:
            h = w // 2
            lines.append(f"  {elem}{h if h > 1 else ''} r{h} = {combine(cur + '.lo', cur + '.hi', h > 1)};")
            cur, w = f"r{h}", h
        lines.append(f"  return {cur};")
    lines.append("}")
    return name, "\n".join(lines)


_STREAM_STORE = "accy_stream_store"
# Clang (PoCL's compiler) stores around the caches: `movntps` on x86, whose
# address must be aligned to the vector. Another compiler stores plainly.
_STREAM_STORE_TEXT = f"""#ifdef __clang__
#define {_STREAM_STORE}(T, v, p) __builtin_nontemporal_store((v), (__global T*)(p))
#else
#define {_STREAM_STORE}(T, v, p) (*(__global T*)(p) = (v))
#endif"""


# --------------------------------------------------------------------------
# Op tables
# --------------------------------------------------------------------------

# Binary ops that are a C operator, a C call, or a NaN-propagating combine.
_BINARY_C: dict[type[Operation], str] = {
    arith.AddiOp: "+", arith.AddfOp: "+",
    arith.SubiOp: "-", arith.SubfOp: "-",
    arith.MuliOp: "*", arith.MulfOp: "*",
    arith.DivfOp: "/", arith.DivSIOp: "/", arith.RemSIOp: "%",
    arith.AndIOp: "&", arith.OrIOp: "|", arith.XOrIOp: "^",
    arith.ShLIOp: "<<", arith.ShRSIOp: ">>",
}  # fmt: skip
# Unsigned ops: C's operator on the operands reinterpreted as unsigned.
_UNSIGNED_BINARY_C: dict[type[Operation], str] = {arith.DivUIOp: "/", arith.RemUIOp: "%", arith.ShRUIOp: ">>"}
# Math ops as OpenCL's built-ins, which are C's functions (round-to-even is `rint`).
_MATH_CALLS = {**backend_kernels.MATH_CALLS, math_dialect.RoundEvenOp: "rint"}
# Past this magnitude a float vector's sin/cos is computed lane by lane
# (`_trig_helper`): PoCL's vector ones go wrong from 2^23; 2^22 leaves
# a margin, and lanes this large are rare enough to cost nothing.
_TRIG_VECTOR_LIMIT = "0x1p22f"


def _trig_helper(fn: str, width: int) -> tuple[str, str]:
    """(name, definition) of `floatW accy_<fn>_floatW(floatW x)`: `fn` (sin
    or cos) of a float vector, lane by lane when a lane's magnitude reaches
    `_TRIG_VECTOR_LIMIT` or is inf. PoCL's (3.1) vector sin/cos of
    float2..float16 then take a large-argument path that gets every lane
    wrong, the small ones too (sin(1e-10) = 0.0134), while its scalar ones
    are exact. A function, not `static inline` and not inlined at each use:
    PoCL compiles W+1 sin/cos a use otherwise (200 chained sins of float16
    took minutes to first call; called, 0.17 s), while a call is one line."""
    ct = f"float{width}"
    name = f"accy_{fn}_{ct}"
    lanes = ", ".join(f"{fn}(x.{_lane(i)})" for i in range(width))
    text = f"""{ct} {name}({ct} x) {{
  if (any(isgreaterequal(fabs(x), ({ct})({_TRIG_VECTOR_LIMIT}))))
    return ({ct})({lanes});
  return {fn}(x);
}}"""
    return name, text


# arith.cmpi by predicate name (INT_PREDICATES); the unsigned ones compare
# the operands reinterpreted as unsigned.
_CMPI = {
    "eq": "==", "ne": "!=", "slt": "<", "sle": "<=", "sgt": ">", "sge": ">=",
    "ult": "<", "ule": "<=", "ugt": ">", "uge": ">=",
}  # fmt: skip
_UNSIGNED_PREDICATES = frozenset({"ult", "ule", "ugt", "uge"})
# arith.cmpf by predicate name (FLOAT_PREDICATES): C's relational operators
# are the ordered comparisons; `!=` is une.
_CMPF: dict[str, Callable[[str, str], str]] = {
    "oeq": lambda a, b: f"{a} == {b}",
    "ogt": lambda a, b: f"{a} > {b}",
    "oge": lambda a, b: f"{a} >= {b}",
    "olt": lambda a, b: f"{a} < {b}",
    "ole": lambda a, b: f"{a} <= {b}",
    "one": lambda a, b: f"islessgreater({a}, {b})",
    "ord": lambda a, b: f"isordered({a}, {b})",
    "ueq": lambda a, b: f"!islessgreater({a}, {b})",
    "ugt": lambda a, b: f"!({a} <= {b})",
    "uge": lambda a, b: f"!({a} < {b})",
    "ult": lambda a, b: f"!({a} >= {b})",
    "ule": lambda a, b: f"!({a} > {b})",
    "une": lambda a, b: f"{a} != {b}",
    "uno": lambda a, b: f"isunordered({a}, {b})",
}
# The cmpf predicates whose result does not depend on the operands.
_CONSTANT_PREDICATES = {"false": False, "true": True}
_IDS: dict[type[Operation], str] = {
    gpu.GlobalIdOp: "get_global_id",
    gpu.ThreadIdOp: "get_local_id",
    gpu.BlockIdOp: "get_group_id",
    gpu.BlockDimOp: "get_local_size",
    gpu.GridDimOp: "get_num_groups",
}
_DIMS = {"x": 0, "y": 1, "z": 2}
# Casts from an i1 (or its -1/0 vector lanes): zero-extending ones give 1, sign-extending ones -1.
_ZERO_EXTEND = (arith.ExtUIOp, arith.UIToFPOp)
_SIGN_EXTEND = (arith.ExtSIOp, arith.SIToFPOp)
_SIGNED_OF_BITS = {8: "char", 16: "short", 32: "int", 64: "long"}


# --------------------------------------------------------------------------
# The kernel printer
# --------------------------------------------------------------------------


#: A wgmma shared-memory descriptor (PTX ISA, "Matrix Descriptor Format"):
#: the start address, leading and stride byte offsets (16-byte units), the
#: 128-byte swizzle.
_WGMMA_DESC = "accy_wgmma_desc"
_IDENTIFIER = re.compile(r"[A-Za-z_]\w*")
#: The emulated wgmma's products of one accumulator (16 of 16-bit
#: operands, 8 of TF32): A's row `row` and B's column `col` read where the
#: 128-byte swizzle puts them (the address's bits 4-6 XOR its bits 7-9,
#: atoms 1024-byte aligned), from the tiles' atom-aligned starts `a` and
#: `b` plus the k step's bytes (`a_at`, `b_at`); B n-contiguous in atoms of
#: 8 k by 64 n, or (`b_k_major`, a TF32 B always) k-contiguous as A is.
_WGMMA_EMULATED = """static inline float {name}(__local const {storage}* a, uint a_at, uint a_atom, __local const {storage}* b,
    uint b_at, uint b_k_atom, uint b_n_atom, uint row, uint col) {{
  float sum = 0.0f;
  for (uint k = 0; k < {k}; k++) {{
    uint ao = a_at + (row / 8) * a_atom + (row % 8) * 128 + {width} * k;
    uint bo = {b_offset};
    ao ^= (ao >> 3) & 0x70;
    bo ^= (bo >> 3) & 0x70;
    sum += {load_a} * {load_b};
  }}
  return sum;
}}"""
#: Where the emulated wgmma reads B's element (k, col), by `b_k_major`: n-contiguous (16-bit only) or k-contiguous.
_WGMMA_B_OFFSET = {
    False: "b_at + (col / 64) * b_n_atom + (k / 8) * b_k_atom + (k % 8) * 128 + 2 * (col % 64)",
    True: "b_at + (col / 8) * b_n_atom + (col % 8) * 128 + {width} * k",
}
#: How the emulated wgmma reads element i of tile p as f32, by operand type:
#: the storage it reads and the load (TF32 as f32: the products are closer
#: than the tensor core's, within its tolerance).
_WGMMA_LOADS = {
    "f16": ("ushort", "vload_half({i}, (__local const half*){p})"),
    "bf16": ("ushort", "as_float((uint){p}[{i}] << 16)"),
    "tf32": ("float", "{p}[{i}]"),
}
_WGMMA_DESC_TEXT = """static inline ulong accy_wgmma_desc(uint address, uint lead, uint stride) {
  return (ulong)((address & 0x3FFFF) >> 4) | ((ulong)(lead & 0x3FFF) << 16) | ((ulong)(stride & 0x3FFF) << 32) | (1UL << 62);
}"""


def _wgmma_kind(op: WgmmaOp) -> str:
    """PTX's name of a wgmma's operand type: f16, bf16, or tf32 for f32 operands."""
    return {Float16Type: "f16", BFloat16Type: "bf16", Float32Type: "tf32"}[type(op.element)]


class _KernelEmitter:
    """Prints one `gpu.func` kernel; collects the helpers it needs."""

    def __init__(self, func: gpu.FuncOp, helpers: dict[str, str], half_bits: bool = False, ptx: bool = False) -> None:
        #: f16 held as its bits in a ushort (a target without cl_khr_fp16):
        #: loaded and stored as 16-bit words, converted with vload_half /
        #: vstore_half_rte, which need no extension.
        self.half_bits = half_bits
        #: The target has NVIDIA's sm80 instructions (`mma = "sm80"`): async
        #: copies are cp.async, else plain copies done at once.
        self.ptx = ptx
        self.func = func
        self.kernel = func.sym_name.data
        self.helpers = helpers
        self.names: dict[SSAValue, str] = {}
        self.counters: dict[str, int] = {}
        self.local_decls: list[str] = []
        #: The local array `shuffle_xor` exchanges through without `ptx`, once declared.
        self.shuffle_words: str | None = None
        self.lines: list[str] = []
        self.depth = 1

    # -- helpers -------------------------------------------------------

    def fail(self, op: Operation, why: str) -> OpenCLEmitError:
        return OpenCLEmitError(f"opencl: {backend_kernels.cannot_emit(self.kernel, op, why)}")

    def fresh(self, prefix: str) -> str:
        n = self.counters.get(prefix, 0)
        self.counters[prefix] = n + 1
        return f"{prefix}{n}"

    def line(self, text: str) -> None:
        self.lines.append("  " * self.depth + text)

    def get(self, v: SSAValue) -> str:
        return self.names[v]

    def define(self, v: SSAValue, expr: str) -> None:
        name = self.fresh("v")
        self.names[v] = name
        self.line(f"{self.c_type(v.type)} {name} = {expr};")

    def scalar_c_type(self, t: Attribute) -> str:
        return "ushort" if self.half_bits and isinstance(t, Float16Type) else scalar_c_type(t)

    def c_type(self, t: Attribute) -> str:
        if self.half_bits and isinstance(_elem(t), Float16Type):
            return f"ushort{_width(t)}" if isinstance(t, VectorType) else "ushort"
        return c_type(t)

    def float_literal(self, value: float, t: Attribute) -> str:
        if self.half_bits and isinstance(t, Float16Type):
            return f"((ushort)0x{int.from_bytes(struct.pack('<e', value), 'little'):04X})"
        return float_literal(value, t)

    def convert(self, expr: str, src: Attribute, dst: Attribute) -> str:
        """`expr` of type `src` as type `dst` (C cast for scalars, convert_ for
        vectors); bf16 (its bits in a ushort) through f32: widened by a shift,
        narrowed by `accy_bf16` (round to nearest even, NaN kept quiet)."""
        from_bf16, to_bf16 = isinstance(_elem(src), BFloat16Type), isinstance(_elem(dst), BFloat16Type)
        if from_bf16 != to_bf16:
            w = _width(dst)
            suffix = str(w) if isinstance(dst, VectorType) else ""
            f32 = VectorType(Float32Type(), [w]) if isinstance(dst, VectorType) else Float32Type()
            if from_bf16:
                widened = f"as_float{suffix}(convert_uint{suffix}({expr}) << 16)"
                return self.convert(widened, f32, dst)
            name = f"accy_bf16{suffix}"
            self.helpers.setdefault(name, _BF16_ROUNDING.format(name=name, w=suffix))
            return f"{name}({self.convert(expr, src, f32)})"
        from_half = self.half_bits and isinstance(_elem(src), Float16Type)
        to_half = self.half_bits and isinstance(_elem(dst), Float16Type)
        if from_half != to_half:
            w = _width(dst)
            suffix = str(w) if isinstance(dst, VectorType) else ""
            wide = Float64Type() if isinstance(_elem(dst if from_half else src), Float64Type) else Float32Type()
            f32 = VectorType(Float32Type(), [w]) if suffix else Float32Type()
            if from_half:
                name = f"accy_from_half{suffix}"
                self.helpers.setdefault(name, _HALF_LOAD.format(name=name, w=suffix))
                return self.convert(f"{name}({expr})", f32, dst)
            c = "double" if isinstance(wide, Float64Type) else "float"
            name = f"accy_to_half_{c}{suffix}"
            self.helpers.setdefault(name, _HALF_STORE.format(name=name, w=suffix, c=c))
            return f"{name}({self.convert(expr, src, VectorType(wide, [w]) if suffix else wide)})"
        if self.c_type(src) == self.c_type(dst):
            return expr
        if isinstance(dst, VectorType):
            return f"convert_{self.c_type(dst)}({expr})"
        return f"({self.c_type(dst)})({expr})"

    def as_unsigned(self, expr: str, t: Attribute) -> str:
        if isinstance(t, VectorType):
            return f"as_{_unsigned(t)}({expr})"
        if _is_bool(t):
            return expr  # C's bool is already ordered false < true
        return f"({_unsigned(t)})({expr})"

    def mask(self, expr: str, operand_type: Attribute) -> str:
        """A vector comparison of `operand_type` lanes as the intW mask type."""
        if isinstance(operand_type, VectorType) and _bits(operand_type) != 32:
            return f"convert_int{_width(operand_type)}({expr})"
        return expr

    def address(self, memref: SSAValue, indices: Sequence[SSAValue]) -> str:
        """`base + linear index` (row-major over the memref's static shape)."""
        t = memref.type
        assert isinstance(t, MemRefType)
        shape = t.get_shape()
        terms = []
        for d, idx in enumerate(indices):
            stride = math.prod(shape[d + 1 :])
            terms.append(self.get(idx) if stride == 1 else f"{self.get(idx)} * {stride}")
        return " + ".join(terms) if terms else "0"

    # -- structure -----------------------------------------------------

    def emit(self) -> str:
        func = self.func
        _read(backend_kernels.check_kernel, func)
        block = func.body.block
        written = written_arguments(func)
        params = []
        for i, (arg, t) in enumerate(zip(block.args, backend_kernels.kernel_buffers(func), strict=True)):
            name = f"b{i}"
            self.names[arg] = name
            const = "" if i in written else "const "
            params.append(f"__global {const}{self.scalar_c_type(t.element_type)}* restrict {name}")
        self.emit_block(block)
        header = []
        kind = func.attributes.get("accy.kind")
        if isinstance(kind, StringAttr):
            header.append(f"// kind: {kind.data}")
        attrs = ""
        if func.known_block_size is not None:
            sizes = ", ".join(str(s) for s in func.known_block_size.get_values())
            attrs = f"__attribute__((reqd_work_group_size({sizes}))) "
        sig = f"__kernel {attrs}void {self.kernel}("
        if len(params) > 2:
            header.append(sig + "\n" + ",\n".join("    " + p for p in params) + ") {")
        else:
            header.append(sig + ", ".join(params) + ") {")
        body = ["  " + d for d in self.local_decls] + self.lines
        return "\n".join(header + body + ["}"])

    def emit_block(self, block: Block, targets: Sequence[str] = ()) -> None:
        """The block's ops (of kernel IR: check_kernel), then its results
        (what its scf.yield yields) assigned to `targets`."""
        ops, results = backend_kernels.block_parts(block)
        for op in ops:
            _HANDLERS[type(op)](self, op)
        self.assign(targets, [self.get(v) for v in results], [v.type for v in results])

    # -- arith ---------------------------------------------------------

    def binary(self, op: Operation, c_op: str) -> None:
        """`a <c_op> b`."""
        if isinstance(op, backend_kernels.DIVISIONS) and backend_kernels.division_needs_guard(op):
            self.define(op.results[0], self.guarded_division(op, c_op, self.get(op.operands[0]), self.get(op.operands[1])))
            return
        self.define(op.results[0], f"{self.get(op.operands[0])} {c_op} {self.get(op.operands[1])}")

    def unsigned_binary(self, op: Operation, c_op: str) -> None:
        t = op.results[0].type
        a, b = (self.as_unsigned(self.get(v), t) for v in op.operands)
        back = f"as_{self.c_type(t)}" if isinstance(t, VectorType) else f"({self.c_type(t)})"
        if isinstance(op, backend_kernels.DIVISIONS) and backend_kernels.division_needs_guard(op):
            ut = _unsigned(t)
            ua, ub = self.fresh("v"), self.fresh("v")
            self.line(f"{ut} {ua} = {a};")
            self.line(f"{ut} {ub} = {b};")
            self.define(op.results[0], f"{back}({self.guarded_division(op, c_op, ua, ub, ut)})")
            return
        self.define(op.results[0], f"{back}({a} {c_op} {b})")

    def guarded_division(self, op: Operation, c_op: str, a: str, b: str, ct: str | None = None) -> str:
        """Integer `a / b` or `a % b` (variables or literals of C type `ct`)
        as kernel IR defines them where C does not (backends/kernels.py):
        divided by 1 instead where b is 0 (or, signed, where a is INT_MIN and
        b is -1), then x / 0 = 0 and x % 0 = x. Lane-wise with select() on
        vectors, whose comparisons are masks."""
        t = op.results[0].type
        ct = ct or self.c_type(t)
        zero, one = f"(({ct})0)", f"(({ct})1)"
        by_zero = f"({b} == {zero})"
        bad = by_zero
        if isinstance(op, backend_kernels.SIGNED_DIVISIONS):
            least = int_literal(-(2 ** (_bits(t) - 1)), _elem(t))
            bad = f"({by_zero} | (({a} == ({ct}){least}) & ({b} == (({ct})-1))))"
        at_zero = a if c_op == "%" else zero
        if isinstance(t, VectorType):
            safe = self.fresh("v")
            self.line(f"{ct} {safe} = select({b}, {one}, {bad});")
            return f"select({a} {c_op} {safe}, {at_zero}, {by_zero})"
        safe = self.fresh("v")
        self.line(f"{ct} {safe} = {bad} ? {one} : {b};")
        return f"{by_zero} ? {at_zero} : {a} {c_op} {safe}"

    def constant(self, op: Operation) -> None:
        value = op.properties.get("value", op.attributes.get("value"))
        t = op.results[0].type
        if isinstance(value, IntegerAttr):
            self.names[op.results[0]] = int_literal(value.value.data, t)
        elif isinstance(value, FloatAttr):
            self.names[op.results[0]] = self.float_literal(value.value.data, t)
        else:
            assert isinstance(value, DenseIntOrFPElementsAttr) and isinstance(t, VectorType)
            elem = t.element_type
            values = value.get_values()
            lit = float_literal if isinstance(elem, Float16Type | BFloat16Type | Float32Type | Float64Type) else int_literal
            if _is_bool(elem):
                lanes = ["-1" if v else "0" for v in values]
            else:
                lanes = [lit(v, elem) for v in values]  # type: ignore[operator]
            if len(set(lanes)) == 1:
                self.names[op.results[0]] = f"(({self.c_type(t)})({lanes[0]}))"
            else:
                self.names[op.results[0]] = f"(({self.c_type(t)})({', '.join(lanes)}))"

    def call(self, op: Operation, fn: str) -> None:
        """`fn(operands...)`: an OpenCL built-in of the same meaning."""
        self.define(op.results[0], f"{fn}({', '.join(self.overload_operands(op))})")

    def trig(self, op: Operation, fn: str) -> None:
        """`sin`/`cos`: the built-in, except on a float vector, a call of its
        guarded helper (`_trig_helper`). The guard costs nothing measurable
        on other inputs, so every OpenCL device gets it (the emitter does not
        know the driver); f16 and f64 vectors are exact and call the
        built-in directly."""
        t = op.results[0].type
        if not (isinstance(t, VectorType) and isinstance(t.element_type, Float32Type)):
            self.call(op, fn)
            return
        name, text = _trig_helper(fn, _width(t))
        self.helpers.setdefault(name, text)
        self.define(op.results[0], f"{name}({self.get(op.operands[0])})")

    def combine(self, op: Operation, kind: str) -> None:
        """A binary op that is one of the reductions' combining functions (`_COMBINE`)."""
        a, b = self.overload_operands(op)
        self.define(op.results[0], _COMBINE[kind](a, b, isinstance(op.results[0].type, VectorType)))

    def overload_operands(self, op: Operation) -> list[str]:
        """The operands of a call to an overloaded built-in (`max`, `min`):
        an integer literal beside a char, short or long is an int, which
        makes the overload ambiguous (`max(v, 0)` on a char), so constants
        are cast to the result's scalar type there."""
        t = op.results[0].type
        literal_int = isinstance(t, IntegerType | IndexType) and not _is_bool(t) and self.c_type(t) != "int"
        return [
            f"(({self.c_type(t)}){self.get(v)})" if literal_int and isinstance(v.owner, arith.ConstantOp) else self.get(v)
            for v in op.operands
        ]

    def negf(self, op: Operation) -> None:
        self.define(op.results[0], f"-{self.get(op.operands[0])}")

    def cmpi(self, op: Operation) -> None:
        """arith.cmpi, or an integer vcmp."""
        pred = backend_kernels.predicate(op)
        a, b = (self.get(v) for v in op.operands)
        t = op.operands[0].type
        if pred in _UNSIGNED_PREDICATES:
            a, b = self.as_unsigned(a, t), self.as_unsigned(b, t)
        self.define(op.results[0], self.mask(f"{a} {_CMPI[pred]} {b}", t))

    def cmpf(self, op: Operation) -> None:
        """arith.cmpf, or a float vcmp."""
        pred = backend_kernels.predicate(op)
        t = op.operands[0].type
        res = op.results[0].type
        if pred in _CONSTANT_PREDICATES:
            truth = _CONSTANT_PREDICATES[pred]
            expr = (f"(({self.c_type(res)})({-1 if truth else 0}))" if isinstance(res, VectorType)
                    else ("true" if truth else "false"))  # fmt: skip
            self.names[op.results[0]] = expr
            return
        form = _CMPF[pred]
        self.define(op.results[0], self.mask(form(self.get(op.operands[0]), self.get(op.operands[1])), t))

    def vcmp(self, op: Operation) -> None:
        """accy_kernel.vcmp: the arith comparison of the same predicate, on vectors (an intW -1/0 mask)."""
        assert isinstance(op, VCmpOp)
        (self.cmpf if op.is_float else self.cmpi)(op)

    def vcast(self, op: Operation) -> None:
        """accy_kernel.vcast: `convert_TW(x)`."""
        self.define(op.results[0], self.convert(self.get(op.operands[0]), op.operands[0].type, op.results[0].type))

    def select(self, op: Operation) -> None:
        c, a, b = (self.get(v) for v in op.operands)
        cond_t = op.operands[0].type
        t = op.results[0].type
        if isinstance(cond_t, VectorType):
            # select(b, a, c) = c ? a : b per lane; c must have the lanes' bit width.
            bits = _bits(t) if not _is_bool(_elem(t)) else 32
            if bits != 32:
                c = f"convert_{_SIGNED_OF_BITS[bits]}{_width(t)}({c})"
            self.define(op.results[0], f"select({b}, {a}, {c})")
        else:
            self.define(op.results[0], f"{c} ? {a} : {b}")

    def cast(self, op: Operation) -> None:
        src, dst = op.operands[0].type, op.results[0].type
        x = self.get(op.operands[0])
        vec = isinstance(dst, VectorType)
        if _is_bool(_elem(src)) and isinstance(op, (*_ZERO_EXTEND, *_SIGN_EXTEND, arith.IndexCastOp)):
            if vec:  # lanes are -1/0
                x = f"({x} & 1)" if isinstance(op, _ZERO_EXTEND) else x
                return self.define(op.results[0], f"convert_{self.c_type(dst)}({x})")
            if isinstance(op, _SIGN_EXTEND):
                return self.define(op.results[0], f"-({self.c_type(dst)})({x})")
            return self.define(op.results[0], f"({self.c_type(dst)})({x})")
        if _is_bool(_elem(dst)):  # trunci to i1: the low bit
            if vec:
                return self.define(op.results[0], f"-(convert_{self.c_type(dst)}({x} & 1))")
            return self.define(op.results[0], f"({x} & 1) != 0")
        if isinstance(op, _ZERO_EXTEND):  # zero-extend: from unsigned
            u = self.as_unsigned(x, src)
            return self.define(op.results[0], f"convert_{self.c_type(dst)}({u})" if vec else f"({self.c_type(dst)})({u})")
        if isinstance(op, arith.FPToUIOp):
            if vec:
                return self.define(op.results[0], f"as_{self.c_type(dst)}(convert_{_unsigned(dst)}({x}))")
            return self.define(op.results[0], f"({self.c_type(dst)})({_unsigned(dst)})({x})")
        if isinstance(op, arith.BitcastOp):
            return self.define(op.results[0], f"as_{self.c_type(dst)}({x})")
        self.define(op.results[0], self.convert(x, src, dst))

    # -- math ----------------------------------------------------------

    def absi(self, op: Operation) -> None:
        t = op.results[0].type
        x = self.get(op.operands[0])
        # OpenCL's abs returns the unsigned type; reinterpret it (abs(INT_MIN) wraps as in MLIR).
        self.define(op.results[0], f"as_{self.c_type(t)}(abs({x}))" if isinstance(t, VectorType) else f"({self.c_type(t)})abs({x})")

    # -- gpu -----------------------------------------------------------

    def work_item_id(self, op: Operation) -> None:
        """gpu.global_id / thread_id / block_id / block_dim / grid_dim: the OpenCL work-item function."""
        dim = _DIMS[op.properties["dimension"].data.value]  # type: ignore[union-attr]
        self.define(op.results[0], f"{_IDS[type(op)]}({dim})")

    def barrier(self, op: Operation) -> None:
        self.line("barrier(CLK_LOCAL_MEM_FENCE);")

    def mma(self, op: Operation) -> None:
        """`accy_kernel.mma` as inline PTX: `asm volatile("mma.sync...")`
        with the fragment registers as 32-bit operands (`as_uint` of a
        ushort2 pair or of a TF32 float) and the accumulators as f32."""
        assert isinstance(op, MmaOp)
        kind = {Float16Type: "f16", BFloat16Type: "bf16"}.get(type(op.operand_element), "tf32")
        instruction = f"mma.sync.aligned.{op.shape.data}.row.col.f32.{kind}.{kind}.f32"
        operands = "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%10,%11,%12,%13}"
        names = [self.fresh("v") for _ in op.d]
        self.names.update(zip(op.d, names, strict=True))
        self.line(f"float {', '.join(names)};")
        outs = ", ".join(f'"=f"({n})' for n in names)
        ins = ", ".join(
            [f'"r"(as_uint({self.get(v)}))' for v in (*op.a, *op.b)] + [f'"f"({self.get(v)})' for v in op.c]
        )
        self.line(f'asm volatile("{instruction} {operands};" : {outs} : {ins});')

    def ldmatrix(self, op: Operation) -> None:
        """`accy_kernel.ldmatrix` as inline PTX: the row's local address as
        a 32-bit shared-window offset (what a `__local` pointer's integer
        value is on NVIDIA's driver), four 32-bit results as ushort2 pairs."""
        assert isinstance(op, LdMatrixOp)
        words = [self.fresh("w") for _ in op.d]
        self.line(f"uint {', '.join(words)};")
        outs = ", ".join(f'"=r"({w})' for w in words)
        at = f"(uint)(ulong)({self.get(op.tile)} + {self.get(op.index)})"
        trans = ".trans" if op.trans is not None else ""
        self.line(f'asm volatile("ldmatrix.sync.aligned.m8n8.x4{trans}.shared.b16 {{%0,%1,%2,%3}}, [%4];" : {outs} : "r"({at}));')
        for result, w in zip(op.d, words, strict=True):
            self.define(result, f"as_{self.c_type(result.type)}({w})")

    def async_copy(self, op: Operation) -> None:
        """`accy_kernel.async_copy`: with `ptx`, `cp.async.cg` of 16 bytes
        (a source size of 0 where not valid: zeros, nothing read, from an
        address kept in the buffer), else the copy done at once."""
        assert isinstance(op, AsyncCopyOp)
        t = self.c_type(VectorType(op.dst.type.element_type, [op.elements]))  # type: ignore[union-attr]
        valid, src, dst = self.get(op.valid), self.get(op.src), self.get(op.dst)
        at, src_at = f"{dst} + {self.get(op.dst_index)}", f"{src} + {self.get(op.src_index)}"
        if self.ptx:
            shared = f"(uint)(ulong)({at})"
            source = f"(ulong)({src} + ({valid} ? {self.get(op.src_index)} : 0))"
            size = f"{valid} ? {ASYNC_COPY_BYTES} : 0"
            self.line(
                f'asm volatile("cp.async.cg.shared.global [%0], [%1], {ASYNC_COPY_BYTES}, %2;" :: '
                f'"r"({shared}), "l"({source}), "r"({size}) : "memory");'
            )
            return
        self.line(f"*(__local {t}*)({at}) = {valid} ? *(__global const {t}*)({src_at}) : ({t})(0);")

    def async_commit(self, op: Operation) -> None:
        if self.ptx:
            self.line('asm volatile("cp.async.commit_group;" ::: "memory");')

    def async_wait(self, op: Operation) -> None:
        assert isinstance(op, AsyncWaitOp)
        if self.ptx:
            self.line(f'asm volatile("cp.async.wait_group {op.pending.value.data};" ::: "memory");')

    def narrow_pair(self, op: Operation) -> None:
        """`accy_kernel.narrow_pair`: with `ptx`, one packed `cvt.rn` of
        both (its first source is the upper half, lane 1); else each lane
        converted as `arith.truncf` converts it."""
        assert isinstance(op, NarrowPairOp)
        t = op.result.type
        assert isinstance(t, VectorType)
        element = t.element_type
        lo, hi = self.get(op.lo), self.get(op.hi)
        if self.ptx:
            word = self.fresh("w")
            kind = "bf16x2" if isinstance(element, BFloat16Type) else "f16x2"
            self.line(f"uint {word};")
            self.line(f'asm("cvt.rn.{kind}.f32 %0, %1, %2;" : "=r"({word}) : "f"({hi}), "f"({lo}));')
            self.define(op.result, f"as_{self.c_type(t)}({word})")
            return
        lanes = ", ".join(self.convert(x, Float32Type(), element) for x in (lo, hi))
        self.define(op.result, f"(({self.c_type(t)})({lanes}))")

    def wgmma(self, op: Operation) -> None:
        """`accy_kernel.wgmma` as a marked PTX comment (`WGMMA_MARK`, which
        the runtime uncomments for sm_90a): the accumulators as "+f"
        operands, shared-memory descriptors of A and B (128-byte swizzle)
        from the tiles' 32-bit shared-window addresses, B transposed
        (n-contiguous), the scale of D a predicate set true."""
        assert isinstance(op, WgmmaOp)
        if not self.ptx:
            return self._emulated_wgmma(op)
        self.helpers.setdefault(_WGMMA_DESC, _WGMMA_DESC_TEXT)
        incoming = [self.get(c) for c in op.c]
        if all(c.has_one_use() and _IDENTIFIER.fullmatch(n) for c, n in zip(op.c, incoming, strict=True)):
            names = incoming  # in place: no copy of an accumulator another wgmma may still be writing
        else:
            names = [self.fresh("v") for _ in op.d]
            self.line(f"float {', '.join(f'{n} = {c}' for n, c in zip(names, incoming, strict=True))};")
        self.names.update(zip(op.d, names, strict=True))
        a_start, b_start = op.starts()
        kind = _wgmma_kind(op)
        count = len(names)
        # A k-contiguous B (a TF32 one always) is read as A is (lead unused:
        # 1); an n-contiguous one through the atoms' strides, transposed.
        b_lead, b_stride = (1, op.b_n_atom.value.data >> 4) if op.b_is_k_major else (op.b_n_atom.value.data >> 4, op.b_k_atom.value.data >> 4)
        descs = []
        for tile, index, start, lead, stride in (
            (op.a_tile, op.a_index, a_start, 1, op.a_atom.value.data >> 4),
            (op.b_tile, op.b_index, b_start, b_lead, b_stride),
        ):
            address = f"(uint)(ulong)({self.get(tile)} + {self.get(index)}) + {start}"
            descs.append(f"{_WGMMA_DESC}({address}, {lead}, {stride})")
        slots = ",".join(f"%{i}" for i in range(count))
        instruction = f"wgmma.mma_async.sync.aligned.{op.shape.data}.f32.{kind}.{kind}"
        # PTX's wgmma takes the operands' transposes (imm-trans-a, -b) for 16-bit types only:
        # A k-major, B n-major (transposed) or k-major.
        immediates = "p, 1, 1" if kind == "tf32" else f"p, 1, 1, 0, {0 if op.b_is_k_major else 1}"
        outs = ", ".join(f'"+f"({n})' for n in names)
        self.line(
            f'asm volatile("{{\\n.reg .pred p;\\nsetp.ne.b32 p, %{count + 2}, 0;\\n{WGMMA_MARK}{instruction} '
            f'{{{slots}}}, %{count}, %{count + 1}, {immediates};\\n}}" : {outs} : '
            f'"l"({descs[0]}), "l"({descs[1]}), "r"(1) : "memory");'
        )

    def _emulated_wgmma(self, op: WgmmaOp) -> None:
        """`accy_kernel.wgmma` done by each work-item: its accumulators (warp
        w of the warpgroup rows 16w + g and + 8, columns 8j + 2t and + 1)
        each plus its products read from the tiles where the instruction's
        descriptors point (`_WGMMA_EMULATED`), at once."""
        kind = _wgmma_kind(op)
        name = f"accy_wgmma_dot_{kind}" + ("_kb" if op.b_is_k_major and kind != "tf32" else "")
        storage, load = _WGMMA_LOADS[kind]
        width = element_bytes(op.element)
        loads = {"load_a": load.format(p="a", i=f"ao / {width}"), "load_b": load.format(p="b", i=f"bo / {width}")}
        text = _WGMMA_EMULATED.format(
            name=name, storage=storage, k=32 // width, width=width,
            b_offset=_WGMMA_B_OFFSET[op.b_is_k_major].format(width=width), **loads,
        )
        self.helpers.setdefault(name, text)
        a_start, b_start = op.starts()
        lane = self.fresh("wl")
        self.line(
            f"const uint {lane} = (uint)((get_local_id(0) + get_local_size(0) * (get_local_id(1) + "
            f"get_local_size(1) * get_local_id(2))) % 128);"
        )
        a = f"(__local const {storage}*)({self.get(op.a_tile)} + {self.get(op.a_index)})"
        b = f"(__local const {storage}*)({self.get(op.b_tile)} + {self.get(op.b_index)})"
        names = [self.fresh("v") for _ in op.d]
        for i, (name_i, c) in enumerate(zip(names, op.c, strict=True)):
            j, e = divmod(i, 4)
            row = f"16 * ({lane} / 32) + ({lane} % 32) / 4 + {8 * (e // 2)}"
            col = f"{8 * j} + 2 * ({lane} % 4) + {e % 2}"
            self.line(
                f"float {name_i} = {self.get(c)} + {name}({a}, {a_start}, {op.a_atom.value.data}, {b}, {b_start}, "
                f"{op.b_k_atom.value.data}, {op.b_n_atom.value.data}, {row}, {col});"
            )
        self.names.update(zip(op.d, names, strict=True))

    def wgmma_sync(self, op: Operation) -> None:
        assert isinstance(op, WgmmaSyncOp)
        if self.ptx:  # emulated, a wgmma is done at once and its operands read as any load
            self.line(f'asm volatile("{WGMMA_MARK}{op.ptx}" ::: "memory");')

    def shuffle_xor(self, op: Operation) -> None:
        """`accy_kernel.shuffle_xor`: with `ptx`, `shfl.sync.bfly.b32` over
        the whole warp; else each work-item's word into a local array of
        the kernel's stated block size (one word a work-item, at its flat
        local id), a barrier, the partner's word read, a barrier (the
        array is free again)."""
        assert isinstance(op, ShuffleXorOp)
        t = self.c_type(op.result.type)
        word, mask = self.fresh("w"), op.mask.value.data
        if self.ptx:
            self.line(f"uint {word};")
            self.line(
                f'asm volatile("shfl.sync.bfly.b32 %0, %1, {mask}, 0x1f, 0xffffffff;" : "=r"({word}) : '
                f'"r"(as_uint({self.get(op.x)})));'
            )
            self.define(op.result, f"as_{t}({word})")
            return
        sizes = self.func.known_block_size
        if sizes is None:
            raise self.fail(op, "a shuffle emulated through local memory needs the kernel's block size (gpu.known_block_size)")
        bx, by, bz = sizes.get_values()
        if self.shuffle_words is None:
            self.shuffle_words = self.fresh("l")
            self.local_decls.append(f"__local uint {self.shuffle_words}[{bx * by * bz}];")
        flat = self.fresh("f")
        self.line(f"const long {flat} = get_local_id(0) + {bx} * (get_local_id(1) + {by} * get_local_id(2));")
        self.line(f"{self.shuffle_words}[{flat}] = as_uint({self.get(op.x)});")
        self.line("barrier(CLK_LOCAL_MEM_FENCE);")
        self.line(f"const uint {word} = {self.shuffle_words}[{flat} ^ {mask}];")
        self.line("barrier(CLK_LOCAL_MEM_FENCE);")
        self.define(op.result, f"as_{t}({word})")

    # -- memory --------------------------------------------------------

    def alloca(self, op: Operation) -> None:
        t = op.results[0].type
        assert isinstance(t, MemRefType)
        elem = self.scalar_c_type(t.element_type)
        size = max(1, math.prod(t.get_shape()))
        space = t.memory_space
        aligned = f" __attribute__((aligned({op.alignment.value.data})))" if op.alignment is not None else ""
        if isinstance(space, AddressSpaceAttr) and space.data == AddressSpace.WORKGROUP:
            name = self.fresh("l")
            self.local_decls.append(f"__local {elem} {name}[{size}]{aligned};")
        else:  # none or private (check_kernel)
            name = self.fresh("p")
            self.line(f"{elem} {name}[{size}]{aligned};")
        self.names[op.results[0]] = name

    def load(self, op: Operation) -> None:
        memref, *indices = op.operands
        self.define(op.results[0], f"{self.get(memref)}[{self.address(memref, indices)}]")

    def store(self, op: Operation) -> None:
        value, memref, *indices = op.operands
        self.line(f"{self.get(memref)}[{self.address(memref, indices)}] = {self.get(value)};")

    def vector_load(self, op: Operation) -> None:
        memref, *indices = op.operands
        w = _width(op.results[0].type)
        at = f"{self.get(memref)} + {self.address(memref, indices)}"
        if self.wide_access(op, memref, op.results[0].type):
            self.define(op.results[0], f"*({self.vector_pointer(memref, op.results[0].type, const=True)})({at})")
            return
        self.define(op.results[0], f"vload{w}(0, {at})")

    def vector_store(self, op: Operation) -> None:
        value, memref, *indices = op.operands
        w = _width(value.type)
        at = f"{self.get(memref)} + {self.address(memref, indices)}"
        if is_stream_store(op) and memref in self.func.body.block.args:
            self.helpers.setdefault(_STREAM_STORE, _STREAM_STORE_TEXT)
            self.line(f"{_STREAM_STORE}({self.c_type(value.type)}, {self.get(value)}, {at});")
            return
        if self.wide_access(op, memref, value.type):
            self.line(f"*({self.vector_pointer(memref, value.type, const=False)})({at}) = {self.get(value)};")
            return
        self.line(f"vstore{w}({self.get(value)}, 0, {at});")

    def wide_access(self, op: Operation, memref: SSAValue, t: Attribute) -> bool:
        """Whether a vector access is aligned to its whole vector (`aligned_access`:
        one wide load or store through a vector pointer instead of `vloadN`)."""
        assert isinstance(memref.type, MemRefType)
        return not _is_bool(_elem(t)) and alignment_of(op) >= _width(t) * _bits(memref.type.element_type) // 8

    def vector_pointer(self, memref: SSAValue, t: Attribute, const: bool) -> str:
        """The C type of a pointer to vector `t` in `memref`'s address space."""
        space = memref.type.memory_space if isinstance(memref.type, MemRefType) else None
        if isinstance(space, AddressSpaceAttr) and space.data == AddressSpace.WORKGROUP:
            qualifier = "__local "
        elif memref in self.func.body.block.args:
            qualifier = "__global const " if const else "__global "
        else:  # private memory
            qualifier = ""
        return f"{qualifier}{self.c_type(t)}*"

    # -- vector --------------------------------------------------------

    def broadcast(self, op: Operation) -> None:
        src, t = op.operands[0], op.results[0].type
        if isinstance(src.type, VectorType):  # of its own type (check_kernel)
            self.names[op.results[0]] = self.get(src)
            return
        x = self.get(src)
        if _is_bool(src.type):
            x = f"-(int)({x})"
        self.define(op.results[0], f"({self.c_type(t)})({x})")

    def reduction(self, op: Operation) -> None:
        vec = op.operands[0]
        kind = backend_kernels.reduction_kind(op)
        elem = self.scalar_c_type(_elem(vec.type))
        name, text = _reduction_helper(kind, elem, _width(vec.type))
        self.helpers.setdefault(name, text)
        expr = f"{name}({self.get(vec)})"
        if len(op.operands) > 1:
            expr = _COMBINE[kind](self.overload_operands(op)[1], expr, False)
        self.define(op.results[0], expr)

    def extract(self, op: Operation) -> None:
        lane = backend_kernels.lane_position(op)
        self.define(op.results[0], f"{self.get(op.operands[0])}.{_lane(lane)}")

    def shuffle(self, op: Operation) -> None:
        """vector.shuffle as shuffle2 (lanes numbered across both operands)."""
        mask = op.properties["mask"].get_values()  # type: ignore[union-attr]
        if len(mask) not in (2, 4, 8, 16):
            raise self.fail(op, f"OpenCL's shuffle2 gives 2, 4, 8 or 16 lanes, not {len(mask)}")
        elem = _elem(op.results[0].type)
        name = "int" if _is_bool(elem) else self.scalar_c_type(elem)
        unsigned = {"half": "ushort", "float": "uint", "double": "ulong"}.get(name) or ("u" + name.removeprefix("u"))
        lanes = ", ".join(map(str, mask))
        a, b = self.get(op.operands[0]), self.get(op.operands[1])
        self.define(op.results[0], f"shuffle2({a}, {b}, ({unsigned}{len(mask)})({lanes}))")

    def insert(self, op: Operation) -> None:
        lane = backend_kernels.lane_position(op)
        source, dest = op.operands[0], op.operands[1]
        self.define(op.results[0], self.get(dest))
        value = self.get(source)
        if _is_bool(source.type):
            value = f"-(int)({value})"
        self.line(f"{self.get(op.results[0])}.{_lane(lane)} = {value};")

    # -- scf -----------------------------------------------------------

    def declare_results(self, results: Sequence[SSAValue], inits: Sequence[str] | None) -> list[str]:
        names = []
        for i, r in enumerate(results):
            name = self.fresh("a")
            self.names[r] = name
            init = f" = {inits[i]}" if inits is not None else ""
            self.line(f"{self.c_type(r.type)} {name}{init};")
            names.append(name)
        return names

    def for_(self, op: Operation) -> None:
        lb, ub, step, *inits = op.operands
        body = op.regions[0].block
        carried = self.declare_results(op.results, [self.get(v) for v in inits])
        iv = self.fresh("i")
        self.names[body.args[0]] = iv
        for arg, name in zip(body.args[1:], carried, strict=True):
            self.names[arg] = name
        ty = self.c_type(lb.type)
        self.line(f"for ({ty} {iv} = {self.get(lb)}; {iv} < {self.get(ub)}; {iv} += {self.get(step)}) {{")
        self.nested(body, carried)
        self.line("}")

    def if_(self, op: Operation) -> None:
        results = self.declare_results(op.results, None)
        self.line(f"if ({self.get(op.operands[0])}) {{")
        self.nested(op.regions[0].block, results)
        other = op.regions[1]
        if other.blocks and any(not isinstance(o, scf.YieldOp) or o.operands for o in other.block.ops):
            self.line("} else {")
            self.nested(op.regions[1].block, results)
        self.line("}")

    def nested(self, block: Block, targets: Sequence[str]) -> None:
        self.depth += 1
        self.emit_block(block, targets)
        self.depth -= 1

    def assign(self, targets: Sequence[str], values: Sequence[str], types: Sequence[Attribute]) -> None:
        """`targets = values` (a block's results into the locals of its scf.for / scf.if)."""
        # Parallel assignment: read every value before writing any target it names.
        clash = any(v in targets and v != t for v, t in zip(values, targets, strict=True))
        if clash:
            temps = []
            for v, t in zip(values, types, strict=True):
                tmp = self.fresh("t")
                self.line(f"{self.c_type(t)} {tmp} = {v};")
                temps.append(tmp)
            values = temps
        for t, v in zip(targets, values, strict=True):
            if t != v:
                self.line(f"{t} = {v};")


# The printer of each op class of kernel IR (as xDSL's own printers
# dispatch): every op of KERNEL_OPS but the terminators, which end the
# blocks (emit_block); check_kernel declines the others.
_HANDLERS: dict[type[Operation], Callable[[_KernelEmitter, Operation], None]] = {
    **{op: getattr(_KernelEmitter, name) for op, name in backend_kernels.EMIT_METHODS.items()},
    **{op: partial(_KernelEmitter.binary, c_op=c_op) for op, c_op in _BINARY_C.items()},
    **{op: partial(_KernelEmitter.unsigned_binary, c_op=c_op) for op, c_op in _UNSIGNED_BINARY_C.items()},
    **{op: partial(_KernelEmitter.combine, kind=kind) for op, kind in backend_kernels.COMBINING_OPS.items()},
    **{op: partial(_KernelEmitter.call, fn=fn) for op, fn in _MATH_CALLS.items()},
    math_dialect.SinOp: partial(_KernelEmitter.trig, fn="sin"),
    math_dialect.CosOp: partial(_KernelEmitter.trig, fn="cos"),
}


# --------------------------------------------------------------------------
# Module level
# --------------------------------------------------------------------------


_HINT = "accy-opt -p kernelize -t opencl"
_T = TypeVar("_T")


def _read(read: Callable[..., _T], *args: object) -> _T:
    """`read(*args)`, a reader of backends/kernels.py, its KernelModuleError an OpenCLEmitError."""
    try:
        return read(*args)
    except backend_kernels.KernelModuleError as e:
        raise OpenCLEmitError(f"opencl: {e}") from None


def kernel_module(module: ModuleOp) -> gpu.ModuleOp:
    """The module's `gpu.module @kernels` (error if it has none)."""
    return _read(backend_kernels.kernel_module, module, _HINT)


def kernel_funcs(module: ModuleOp) -> list[gpu.FuncOp]:
    """The `gpu.func`s of the module's kernels, in order."""
    return _read(backend_kernels.kernel_funcs, module, _HINT)


def _uses_type(gmod: gpu.ModuleOp, kinds: tuple[type, ...]) -> bool:
    def involves(t: Attribute) -> bool:
        if isinstance(t, VectorType | MemRefType):
            return isinstance(t.element_type, kinds)
        return isinstance(t, kinds)

    for op in gmod.walk():
        for v in (*op.results, *op.operands):
            if involves(v.type):
                return True
        for region in op.regions:
            for block in region.blocks:
                if any(involves(a.type) for a in block.args):
                    return True
    return False


def build_options(module: ModuleOp) -> str:
    """OpenCL compiler options the module's target asks for (`-cl-fast-relaxed-math` under math=fast)."""
    return "-cl-fast-relaxed-math" if TargetProfile.of_module(module).math == "fast" else ""


#: The artifact format (`accy.target`'s `format`) this backend prints (format.py: no xDSL).
from accy.backends.opencl.format import FORMAT  # noqa: E402


def check_format(module: ModuleOp) -> None:
    """Refuses a module whose target asks for an artifact other than OpenCL C."""
    problem = format_mismatch(module, FORMAT, "OpenCL C")
    if problem is not None:
        raise OpenCLEmitError(f"opencl: {problem}")


def emit_opencl(module: ModuleOp) -> str:
    """The OpenCL C source of every kernel of `module` (see the module
    docstring); `OpenCLEmitError` when the module's target format is not
    `opencl-c`."""
    check_format(module)
    gmod = kernel_module(module)
    helpers: dict[str, str] = {}
    half_bits = not TargetProfile.of_module(module).fp16
    ptx = TargetProfile.of_module(module).mma in ("sm80", "sm90")
    kernels = [_KernelEmitter(f, helpers, half_bits, ptx).emit() for f in kernel_funcs(module)]
    head = [f"// OpenCL C for gpu.module @{backend_kernels.symbol(gmod.sym_name)}, generated by accy"]
    if _uses_type(gmod, (Float64Type,)):
        head.append("#pragma OPENCL EXTENSION cl_khr_fp64 : enable")
    if _uses_type(gmod, (Float16Type,)) and not half_bits:
        head.append("#pragma OPENCL EXTENSION cl_khr_fp16 : enable")
    parts = ["\n".join(head), *helpers.values(), *kernels]
    return "\n\n".join(parts) + "\n"
