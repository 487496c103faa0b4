"""The `accy_kernel` dialect: the lane-wise comparisons, selections and
conversions that kernel IR needs and xDSL 0.75's `arith` cannot say.

MLIR's `arith.cmpf`/`arith.cmpi` compare vectors into `vector<Wxi1>` masks,
`arith.select` takes such a mask and `arith.fptosi`/`sitofp`/`extsi`/`trunci`
convert vectors; xDSL 0.75 only verifies them on scalars. These ops are
exactly those vector forms, so a lowering keeps whole chains with compares,
selects, casts and i1 masks vectorised:

    %m = accy_kernel.vcmp "olt", %a, %b : vector<16xf32> -> vector<16xi1>
    %r = accy_kernel.vselect %m, %a, %b : vector<16xi1>, vector<16xf32>
    %i = accy_kernel.vcast "fptosi", %r : vector<16xf32> -> vector<16xi32>

- `accy_kernel.vcmp`: operands `lhs`, `rhs` of one type `vector<WxT>`;
  property `predicate`, a string naming an `arith.cmpf` predicate when T is a
  float (`oeq`, `olt`, `une`, `uno`, ...) or an `arith.cmpi` predicate when T
  is an integer or index (`eq`, `slt`, `uge`, ...). Result `vector<Wxi1>`:
  lane i is `arith.cmp{f,i} predicate lhs[i], rhs[i]`.
- `accy_kernel.vselect`: `cond: vector<Wxi1>`, `lhs`, `rhs`, result of one
  type `vector<WxT>`: lane i is `cond[i] ? lhs[i] : rhs[i]`.
- `accy_kernel.vcast`: `input: vector<WxS>` -> `vector<WxD>` (same W);
  property `kind`, one of `fptosi`, `sitofp`, `extsi`, `trunci`: lane i is
  `arith.<kind> input[i] : S to D` (with that op's type rules).

All are pure (CSE and DCE apply). Scalars keep using the `arith` ops; the
helpers `compare_op`, `select_op` and `convert_op` pick the right op.

`accy_kernel.mma` is one warp-level matrix multiply-add of NVIDIA's
`mma.sync` (PTX ISA, "warp-level matrix fragments"), a collective of the 32
work-items of a warp (consecutive local ids along x, a sub-group of 32): all
of them execute it together, none under a condition that differs between
them. Property `shape`:

- "m16n8k16": D (16x8, f32) = A (16x16) x B (16x8) + C, A and B f16 or
  bf16: operands `a` (4 x vector<2xT>), `b` (2 x vector<2xT>), `c` (4 x
  f32), results 4 x f32;
- "m16n8k8": the same with A 16x8 and B 8x8 of TF32 (f32 values whose low
  13 mantissa bits the tensor core ignores): `a` 4 x f32, `b` 2 x f32.

With lane = 4·g + t (g = lane / 4, t = lane % 4), k16 = (2t, 2t+1) and
k8 = t, a work-item's fragments hold (row, k) of A, (k, column) of B and
(row, column) of C and D (`FRAGMENTS`, checked on an H200 against numpy):

    m16n8k16: a0 (g, k16)    a1 (g+8, k16)   a2 (g, k16+8)  a3 (g+8, k16+8)
              b0 (k16, g)    b1 (k16+8, g)
    m16n8k8:  a0 (g, t)      a1 (g+8, t)     a2 (g, t+4)    a3 (g+8, t+4)
              b0 (t, g)      b1 (t+4, g)
    both:     c0/d0 (g, 2t)  c1 (g, 2t+1)    c2 (g+8, 2t)   c3 (g+8, 2t+1)

The OpenCL C backend prints it as inline PTX (`asm volatile`), which only
NVIDIA's driver builds; the LLVM backend declines it. The dot lowering
emits it only where the target's `mma` is "sm80".

`accy_kernel.ldmatrix` is NVIDIA's `ldmatrix.sync.aligned.m8n8.x4.shared.b16`,
a collective of a warp like `mma`: operands a workgroup (local) memref of
16-bit elements and `index`, where this work-item's row starts (8
consecutive elements, 16 bytes, 16-byte aligned); results four
`vector<2xT>`. Work-items 8i to 8i+7 give the rows of 8x8 matrix i (i = 0
to 3); work-item 4·g + t gets, as its result i, elements 2t and 2t+1 of
row g of matrix i (with `trans`, of its transpose: elements g of rows 2t
and 2t+1): an mma fragment (A's four registers from a 16x16 block stored
k-contiguous; with `trans`, two n-tiles' B registers from [k][n] rows) in
one instruction instead of four 32-bit loads. Over an f32 memref (no
`trans`) a row is 4 elements, still 16 bytes, and the results four f32:
work-item 4·g + t gets element t of row g of each matrix, which is TF32's
m16n8k8 A fragment of a 16x8 block stored k-contiguous (the instruction
moves 32-bit words as pairs of 16-bit ones). The bounds verifier proves
each row in bounds and aligned; only the OpenCL C backend prints it.

`accy_kernel.async_copy %src[%i], %dst[%j] if %valid` copies 16 bytes
(16 / element bytes elements) of a global buffer from element i into a
workgroup memref from element j, both 16-byte aligned, or writes 16 zero
bytes there where `valid` is false (src is then not read): MLIR's
`nvgpu.device_async_copy` with `srcElements` 0 for a zero fill. The copy
may complete late: this work-item's copies issued since the last
`accy_kernel.async_commit` form a group, and `accy_kernel.async_wait
{pending = n}` waits until at most the n groups committed last are
incomplete (`nvgpu.device_async_create_group` / `device_async_wait`); a
barrier after the wait makes every work-item's finished copies visible to
the work-group. The OpenCL C backend prints them as NVIDIA's `cp.async.cg`,
`cp.async.commit_group` and `cp.async.wait_group` (inline PTX) where the
module's target has `mma = "sm80"`, and elsewhere as a plain copy done at
once (which every wait finds complete); the LLVM backend declines them (it
has no workgroup memory). The bounds verifier proves the destination, and
the source under `valid`, in bounds and both aligned.

`accy_kernel.wgmma` is Hopper's `wgmma.mma_async.sync.aligned` m64nNk16 (N
256, 128 or 64) of f16 or bf16 operands, or m64nNk8 of f32 operands read as
TF32 (the tensor core keeps 10 of the 23 mantissa bits), f32 accumulators:
a collective of a warpgroup (four
consecutive warps, 128 consecutive flat local ids, the first a multiple of
128): D = A x B + C for A 64 x K and B K x N in workgroup memory,
both 128-byte swizzled (the 16-byte chunk c of a 128-byte row r of a
1024-byte-aligned atom of 8 rows lies at chunk c XOR (r % 8)), the k of
the 32 bytes 32 · `k_step` to 32 · `k_step` + 31 of each 128-byte row of a
staged block (64 k of 16-bit elements, 32 of f32). A is
k-contiguous from element `a_index` of `a_tile` (rows of 128 bytes along k,
the atoms of 8 rows `a_atom` bytes apart). B is n-contiguous from
`b_index` of `b_tile` (atoms of 8 k rows by 64 n: `b_k_atom` bytes from one
8 k rows to the next, `b_n_atom` bytes from one 64 n to the next); a B
under `b_k_major` (a unit property; an f32 B always, PTX transposing only
16-bit operands) is k-contiguous, as A is (rows of 128 bytes along k, one
an n, the atoms of 8 n rows `b_n_atom` bytes apart; `b_k_atom` unused); both
indices 1024-byte aligned. Operands c, results d:
N / 2 f32 a work-item, warp w of the warpgroup holding rows 16w to 16w + 15
as N / 8 accumulator fragments of m16n8 (`ACCUMULATOR_FRAGMENT`, d[4j + i]
that of columns 8j to 8j + 7). It is asynchronous: `accy_kernel.wgmma_sync`
orders it, "proxy" (`fence.proxy.async.shared::cta`, after this
work-item's writes of workgroup memory and before the barrier that
publishes them to the matrix instructions), "fence" (`wgmma.fence`, before
the first wgmma of a round), "commit" (`wgmma.commit_group`: the wgmmas
since the last commit form a group) and "wait" {pending = n}
(`wgmma.wait_group`: at most the n groups committed last are incomplete;
the results d of the others are final, their operands free). NVIDIA's
OpenCL compiles for `.target sm_90`, whose ptxas refuses these
instructions: the OpenCL C backend prints each as a marked PTX comment
(`WGMMA_MARK`, accy/backends/opencl/format.py), and the runtime uncomments them in the compiled PTX and
builds it for sm_90a (docs/runtime.md). Only where the target's `mma` is
"sm90"; the bounds verifier proves each operand's span in bounds; the LLVM
backend declines them.

`accy_kernel.shuffle_xor %x {mask = m}` is a warp's butterfly exchange
(NVIDIA's `shfl.sync.bfly.b32` with all 32 lanes and no clamp; MLIR's
`gpu.shuffle xor` of width 32), a collective of a warp like `mma`: `x` a
32-bit scalar (f32 or i32), property `mask` (an i64) in [0, 32); each work-item gets
the `x` of the work-item of its work-group whose flat local id is its own
XOR mask (the same warp: the lanes of a warp are 32 consecutive flat local
ids, x fastest). The OpenCL C backend prints it as inline PTX where the
module's target has `mma = "sm80"`, and elsewhere through a local array of
one word per work-item of the kernel's stated block size between two
barriers (so there, unlike on NVIDIA's cards, the whole work-group reaches
it together); the kernel interpreter exchanges the values in lockstep; the
LLVM backend declines it.

`accy_kernel.narrow_pair %lo, %hi : vector<2xT>` rounds two f32 values
to a pair of 16-bit floats (T f16 or bf16), to nearest even: lane 0 from
`lo`, lane 1 from `hi` (an mma fragment register). Unlike `arith.truncf`,
a NaN lane is a NaN of unspecified sign and payload, so the OpenCL C
backend prints NVIDIA's packed `cvt.rn.{f16x2,bf16x2}.f32` (one
instruction for the pair: the canonical NaN) where the target has `mma =
"sm80"`, and two conversions elsewhere. For values that no result shows
bit for bit (the tensor-core attention's probabilities); the LLVM backend
declines it.

Streaming stores are xDSL's own `vector.store` with `nontemporal = true`
(`stream_store_op`, `is_stream_store`): the vector goes to memory around
the caches (x86 `movntps`), and its address must be a multiple of the
vector's size in bytes, which the lowering that marks one guarantees.

Aligned vector accesses are `vector.load` / `vector.store` with an
`alignment` attribute (bytes, an i64, as MLIR's `vector.load` has it;
`aligned_access`, `alignment_of`): the address is a multiple of it. The
base must be a kernel's buffer argument (a whole device allocation) or a
`memref.alloca` whose own `alignment` is at least as large; the bounds
verifier proves both, with the index a multiple of alignment / element
bytes. The OpenCL C backend reads and writes such a vector through a
pointer to the vector type, one wide access (`vloadN` may assume only the
element's alignment: NVIDIA's compiler splits a `vload8` of 16-bit
elements into 8 loads); the LLVM backend keeps the element's alignment.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from xdsl.dialects import arith, gpu, vector
from xdsl.dialects.builtin import (
    BFloat16Type,
    BoolAttr,
    Float16Type,
    Float32Type,
    IndexType,
    IntegerAttr,
    IntegerType,
    MemRefType,
    StringAttr,
    UnitAttr,
    VectorType,
)
from xdsl.ir import Attribute, Dialect, Operation, SSAValue
from xdsl.irdl import (
    AttrSizedOperandSegments,
    IRDLOperation,
    ParsePropInAttrDict,
    VarConstraint,
    base,
    irdl_op_definition,
    operand_def,
    opt_prop_def,
    prop_def,
    result_def,
    traits_def,
    var_operand_def,
    var_result_def,
)
from xdsl.traits import Pure
from xdsl.utils.exceptions import VerifyException

from accy.dialects.alignment import ARGUMENT_ACCESS_BYTES, BUFFER_ALIGN_BYTES
from accy.dialects.host import AddressSpace, AddressSpaceAttr
from accy.dialects.types import element_bytes

#: arith.cmpf's predicates, in the order of its integer encoding.
FLOAT_PREDICATES = (
    "false", "oeq", "ogt", "oge", "olt", "ole", "one", "ord",
    "ueq", "ugt", "uge", "ult", "ule", "une", "uno", "true",
)  # fmt: skip
#: arith.cmpi's predicates, in the order of its integer encoding.
INT_PREDICATES = ("eq", "ne", "slt", "sle", "sgt", "sge", "ult", "ule", "ugt", "uge")
#: Kernel IR's work-item ids and sizes (`gpu` ops, `dimension` x, y or z):
#: the one list the backends and the kernel-IR verifiers read.
WORK_ITEM_OPS = (gpu.GlobalIdOp, gpu.ThreadIdOp, gpu.BlockIdOp, gpu.BlockDimOp, gpu.GridDimOp)


def _mask_type(t: VectorType) -> VectorType:
    return VectorType(IntegerType(1), t.get_shape())


def _is_float_vector(t: VectorType) -> bool:
    return not isinstance(t.element_type, IntegerType | IndexType)


@irdl_op_definition
class VCmpOp(IRDLOperation):
    """Lane-wise `arith.cmpf`/`arith.cmpi` of two vectors into a `vector<Wxi1>` mask."""

    name = "accy_kernel.vcmp"

    T: ClassVar = VarConstraint("T", base(VectorType))
    lhs = operand_def(T)
    rhs = operand_def(T)
    predicate = prop_def(StringAttr)
    result = result_def(base(VectorType))

    traits = traits_def(Pure())

    assembly_format = "$predicate `,` $lhs `,` $rhs attr-dict `:` type($lhs) `->` type($result)"

    def __init__(self, lhs: SSAValue, rhs: SSAValue, predicate: str) -> None:
        t = lhs.type
        assert isinstance(t, VectorType)
        super().__init__(
            operands=[lhs, rhs], result_types=[_mask_type(t)], properties={"predicate": StringAttr(predicate)}
        )

    @property
    def is_float(self) -> bool:
        return _is_float_vector(self.lhs.type)  # type: ignore[arg-type]

    @property
    def predicate_index(self) -> int:
        """The predicate's integer encoding in arith.cmpf / arith.cmpi."""
        names = FLOAT_PREDICATES if self.is_float else INT_PREDICATES
        return names.index(self.predicate.data)

    def verify_(self) -> None:
        t = self.lhs.type
        assert isinstance(t, VectorType)
        names = FLOAT_PREDICATES if self.is_float else INT_PREDICATES
        kind = "a float" if self.is_float else "an integer"
        if self.predicate.data not in names:
            raise VerifyException(
                f"'{self.name}' predicate '{self.predicate.data}' is not {kind} predicate (one of {', '.join(names)})"
            )
        if self.result.type != _mask_type(t):
            raise VerifyException(f"'{self.name}' result must be {_mask_type(t)} for operands {t}, got {self.result.type}")


@irdl_op_definition
class VSelectOp(IRDLOperation):
    """Lane-wise `cond[i] ? lhs[i] : rhs[i]` under a `vector<Wxi1>` mask."""

    name = "accy_kernel.vselect"

    T: ClassVar = VarConstraint("T", base(VectorType))
    cond = operand_def(base(VectorType))
    lhs = operand_def(T)
    rhs = operand_def(T)
    result = result_def(T)

    traits = traits_def(Pure())

    assembly_format = "$cond `,` $lhs `,` $rhs attr-dict `:` type($cond) `,` type($result)"

    def __init__(self, cond: SSAValue, lhs: SSAValue, rhs: SSAValue) -> None:
        super().__init__(operands=[cond, lhs, rhs], result_types=[lhs.type])

    def verify_(self) -> None:
        t = self.result.type
        assert isinstance(t, VectorType)
        if self.cond.type != _mask_type(t):
            raise VerifyException(f"'{self.name}' condition must be {_mask_type(t)} for {t}, got {self.cond.type}")


#: The arith conversions `accy_kernel.vcast` applies lane-wise: kind ->
#: (source is float, result is float, result wider than source or None).
CAST_KINDS: dict[str, tuple[bool, bool, bool | None]] = {
    "fptosi": (True, False, None),
    "sitofp": (False, True, None),
    "extsi": (False, False, True),
    "trunci": (False, False, False),
}
_SCALAR_CASTS: dict[str, type[Operation]] = {
    "fptosi": arith.FPToSIOp,
    "sitofp": arith.SIToFPOp,
    "extsi": arith.ExtSIOp,
    "trunci": arith.TruncIOp,
}


@irdl_op_definition
class VCastOp(IRDLOperation):
    """Lane-wise `arith.fptosi` / `sitofp` / `extsi` / `trunci` of a vector."""

    name = "accy_kernel.vcast"

    input = operand_def(base(VectorType))
    kind = prop_def(StringAttr)
    result = result_def(base(VectorType))

    traits = traits_def(Pure())

    assembly_format = "$kind `,` $input attr-dict `:` type($input) `->` type($result)"

    def __init__(self, kind: str, x: SSAValue, result_type: VectorType) -> None:
        super().__init__(operands=[x], result_types=[result_type], properties={"kind": StringAttr(kind)})

    def verify_(self) -> None:
        src, dst = self.input.type, self.result.type
        assert isinstance(src, VectorType) and isinstance(dst, VectorType)
        kind = self.kind.data
        if kind not in CAST_KINDS:
            raise VerifyException(f"'{self.name}' kind '{kind}' is not one of {', '.join(CAST_KINDS)}")
        if src.get_shape() != dst.get_shape():
            raise VerifyException(f"'{self.name}' changes the vector shape: {src} -> {dst}")
        src_float, dst_float, wider = CAST_KINDS[kind]
        s, d = src.element_type, dst.element_type
        if (not isinstance(s, IntegerType)) != src_float or (not isinstance(d, IntegerType)) != dst_float:
            raise VerifyException(f"'{self.name}' {kind} does not convert {src} to {dst}")
        if wider is not None:
            assert isinstance(s, IntegerType) and isinstance(d, IntegerType)
            if (d.width.data > s.width.data) != wider or d.width.data == s.width.data:
                raise VerifyException(f"'{self.name}' {kind} cannot convert {src} to {dst} (bit widths)")


#: Fragment element positions of `accy_kernel.mma` (module docstring), per
#: shape and operand, one (g offset, t scale, t offset) per register: the
#: element's coordinate along the warp's groups is g + g offset (a row of A
#: and of C, a column of B), along its threads t scale · t + t offset (k of
#: A and B, a column of C). A register of a 16-bit fragment holds that
#: element and the next along k.
FRAGMENTS: dict[str, dict[str, tuple[tuple[int, int, int], ...]]] = {
    "m16n8k16": {"a": ((0, 2, 0), (8, 2, 0), (0, 2, 8), (8, 2, 8)), "b": ((0, 2, 0), (0, 2, 8))},
    "m16n8k8": {"a": ((0, 1, 0), (8, 1, 0), (0, 1, 4), (8, 1, 4)), "b": ((0, 1, 0), (0, 1, 4))},
}
#: The accumulator fragment (c and d) of both shapes, as FRAGMENTS.
ACCUMULATOR_FRAGMENT = ((0, 2, 0), (0, 2, 1), (8, 2, 0), (8, 2, 1))
#: k of each shape.
MMA_K = {"m16n8k16": 16, "m16n8k8": 8}


@irdl_op_definition
class MmaOp(IRDLOperation):
    """One warp's `mma.sync` D = A x B + C (module docstring)."""

    name = "accy_kernel.mma"

    a = var_operand_def()
    b = var_operand_def()
    c = var_operand_def(Float32Type)
    shape = prop_def(StringAttr)
    d = var_result_def(Float32Type)

    irdl_options = (AttrSizedOperandSegments(as_property=True),)

    assembly_format = "$shape `(` $a `:` type($a) `)` `(` $b `:` type($b) `)` `(` $c `:` type($c) `)` attr-dict `:` type($d)"

    def __init__(self, shape: str, a: Sequence[SSAValue], b: Sequence[SSAValue], c: Sequence[SSAValue]) -> None:
        super().__init__(
            operands=[a, b, c], result_types=[[Float32Type()] * 4], properties={"shape": StringAttr(shape)}
        )

    @property
    def operand_element(self) -> Attribute:
        """The element type of A and B: f16, bf16 or f32 (TF32)."""
        t = self.a[0].type
        return t.element_type if isinstance(t, VectorType) else t

    def verify_(self) -> None:
        shape = self.shape.data
        if shape not in MMA_K:
            raise VerifyException(f"'{self.name}' shape '{shape}' is not one of {', '.join(MMA_K)}")
        if (len(self.a), len(self.b), len(self.c), len(self.d)) != (4, 2, 4, 4):
            raise VerifyException(f"'{self.name}' takes 4 a, 2 b and 4 c fragment registers and gives 4")
        types = {v.type for v in (*self.a, *self.b)}
        if shape == "m16n8k16":
            ok = len(types) == 1 and any(
                t == VectorType(e, [2]) for t in types for e in (Float16Type(), BFloat16Type())
            )
            wanted = "vector<2xf16> or vector<2xbf16>"
        else:
            ok = types == {Float32Type()}
            wanted = "f32 (TF32)"
        if not ok:
            raise VerifyException(f"'{self.name}' {shape} takes a and b fragments of one type, {wanted}")


def _space(t: Attribute) -> AddressSpace | None:
    space = t.memory_space if isinstance(t, MemRefType) else None
    return space.data if isinstance(space, AddressSpaceAttr) else None


@irdl_op_definition
class LdMatrixOp(IRDLOperation):
    """One warp's `ldmatrix ... .x4` of four 8x8 matrices of 16-bit elements, or of 8x4 of f32 (module docstring)."""

    name = "accy_kernel.ldmatrix"

    tile = operand_def(MemRefType)
    index = operand_def(IndexType)
    trans = opt_prop_def(UnitAttr)
    d = var_result_def(VectorType | Float32Type)

    assembly_format = "(`trans` $trans^)? $tile `[` $index `]` attr-dict `:` type($tile) `->` type($d)"

    #: Bytes of the row each work-item names.
    ROW_BYTES: ClassVar[int] = 16

    def __init__(self, tile: SSAValue, index: SSAValue, trans: bool = False) -> None:
        assert isinstance(tile.type, MemRefType)
        properties = {"trans": UnitAttr()} if trans else {}
        super().__init__(operands=[tile, index], result_types=[[_ldmatrix_register(tile.type.element_type)] * 4], properties=properties)

    @property
    def row_elements(self) -> int:
        """Elements of the row each work-item names."""
        t = self.tile.type
        assert isinstance(t, MemRefType)
        return self.ROW_BYTES // element_bytes(t.element_type)

    def verify_(self) -> None:
        t = self.tile.type
        assert isinstance(t, MemRefType)
        if _space(t) != AddressSpace.WORKGROUP:
            raise VerifyException(f"'{self.name}' reads workgroup (local) memory")
        element = t.element_type
        if not isinstance(element, Float16Type | BFloat16Type | Float32Type):
            raise VerifyException(f"'{self.name}' reads f16, bf16 or f32 elements")
        if isinstance(element, Float32Type) and self.trans is not None:
            raise VerifyException(f"'{self.name}' transposes 16-bit elements only")
        register = _ldmatrix_register(element)
        if len(self.d) != 4 or any(r.type != register for r in self.d):
            raise VerifyException(f"'{self.name}' gives four {register}")


def _ldmatrix_register(element: Attribute) -> Attribute:
    """A result of `ldmatrix` over `element`s: a pair of 16-bit elements, or one f32."""
    return element if isinstance(element, Float32Type) else VectorType(element, [2])


#: Bytes an `accy_kernel.async_copy` moves (cp.async.cg's only size).
ASYNC_COPY_BYTES = 16


@irdl_op_definition
class AsyncCopyOp(IRDLOperation):
    """16 bytes from a global buffer into workgroup memory, or zeros, completing by an async_wait (module docstring)."""

    name = "accy_kernel.async_copy"

    src = operand_def(MemRefType)
    src_index = operand_def(IndexType)
    dst = operand_def(MemRefType)
    dst_index = operand_def(IndexType)
    valid = operand_def(IntegerType(1))

    assembly_format = (
        "$src `[` $src_index `]` `,` $dst `[` $dst_index `]` `if` $valid attr-dict `:` type($src) `,` type($dst)"
    )

    def __init__(self, src: SSAValue, src_index: SSAValue, dst: SSAValue, dst_index: SSAValue, valid: SSAValue) -> None:
        super().__init__(operands=[src, src_index, dst, dst_index, valid])

    @property
    def elements(self) -> int:
        """Elements copied: ASYNC_COPY_BYTES of the element type."""
        t = self.dst.type
        assert isinstance(t, MemRefType)
        return ASYNC_COPY_BYTES // element_bytes(t.element_type)

    def verify_(self) -> None:
        src, dst = self.src.type, self.dst.type
        assert isinstance(src, MemRefType) and isinstance(dst, MemRefType)
        if _space(dst) != AddressSpace.WORKGROUP or _space(src) == AddressSpace.WORKGROUP:
            raise VerifyException(f"'{self.name}' copies from a global buffer into workgroup (local) memory")
        if src.element_type != dst.element_type:
            raise VerifyException(f"'{self.name}' copies between memrefs of one element type")
        if ASYNC_COPY_BYTES % element_bytes(dst.element_type):
            raise VerifyException(f"'{self.name}' copies whole elements of {ASYNC_COPY_BYTES} bytes")


@irdl_op_definition
class AsyncCommitOp(IRDLOperation):
    """Closes the group of this work-item's async copies issued since the last commit (module docstring)."""

    name = "accy_kernel.async_commit"

    assembly_format = "attr-dict"

    def __init__(self) -> None:
        super().__init__()


@irdl_op_definition
class AsyncWaitOp(IRDLOperation):
    """Waits until at most `pending` of this work-item's last committed groups of async copies are incomplete."""

    name = "accy_kernel.async_wait"

    pending = prop_def(IntegerAttr)

    assembly_format = "attr-dict"
    irdl_options = (ParsePropInAttrDict(),)

    def __init__(self, pending: int) -> None:
        super().__init__(properties={"pending": IntegerAttr(pending, IntegerType(64))})

    def verify_(self) -> None:
        if self.pending.value.data < 0:
            raise VerifyException(f"'{self.name}' waits with pending >= 0 groups")


#: The shapes of `accy_kernel.wgmma`: N by name (k16 of 16-bit operands, k8 of TF32).
WGMMA_N = {f"m64n{n}k{k}": n for k in (16, 8) for n in (256, 128, 64)}


@irdl_op_definition
class WgmmaOp(IRDLOperation):
    """One warpgroup's `wgmma.mma_async` D = A x B + C from swizzled workgroup memory (module docstring)."""

    name = "accy_kernel.wgmma"

    a_tile = operand_def(MemRefType)
    a_index = operand_def(IndexType)
    b_tile = operand_def(MemRefType)
    b_index = operand_def(IndexType)
    c = var_operand_def(Float32Type)
    shape = prop_def(StringAttr)
    k_step = prop_def(IntegerAttr)
    a_atom = prop_def(IntegerAttr)
    b_k_atom = prop_def(IntegerAttr)
    b_n_atom = prop_def(IntegerAttr)
    b_k_major = opt_prop_def(UnitAttr)
    d = var_result_def(Float32Type)

    assembly_format = (
        "$shape $a_tile `[` $a_index `]` `,` $b_tile `[` $b_index `]` `(` $c `)` attr-dict "
        "`:` type($a_tile) `,` type($b_tile) `->` type($d)"
    )
    irdl_options = (ParsePropInAttrDict(),)

    #: Bytes of a row of a swizzle atom, and of an atom (8 rows).
    ROW_BYTES: ClassVar[int] = 128
    ATOM_BYTES: ClassVar[int] = 1024

    def __init__(
        self, shape: str, a_tile: SSAValue, a_index: SSAValue, b_tile: SSAValue, b_index: SSAValue,
        c: Sequence[SSAValue], k_step: int, a_atom: int, b_k_atom: int, b_n_atom: int, b_k_major: bool = False,
    ) -> None:  # fmt: skip
        numbers = {"k_step": k_step, "a_atom": a_atom, "b_k_atom": b_k_atom, "b_n_atom": b_n_atom}
        properties: dict[str, Attribute] = {"shape": StringAttr(shape)}
        properties.update({k: IntegerAttr(v, IntegerType(64)) for k, v in numbers.items()})
        if b_k_major:
            properties["b_k_major"] = UnitAttr()
        super().__init__(operands=[a_tile, a_index, b_tile, b_index, c], result_types=[[Float32Type()] * len(c)], properties=properties)

    @property
    def n(self) -> int:
        return WGMMA_N[self.shape.data]

    @property
    def element(self) -> Attribute:
        t = self.a_tile.type
        assert isinstance(t, MemRefType)
        return t.element_type

    @property
    def b_is_k_major(self) -> bool:
        """Whether B is k-contiguous (`b_k_major`; a TF32 B always is), else n-contiguous."""
        return self.b_k_major is not None

    def starts(self) -> tuple[int, int]:
        """Bytes from a_index and from b_index to where this k step's A and B start (the descriptors' addresses)."""
        step = self.k_step.value.data
        return 32 * step, 32 * step if self.b_is_k_major else 2 * step * self.b_k_atom.value.data

    def spans(self) -> tuple[int, int]:
        """Elements from a_index and from b_index that the instruction reads
        within (the bounds verifier's): whole rows, which the swizzle permutes."""
        width, b_start = element_bytes(self.element), self.starts()[1]
        a = 7 * self.a_atom.value.data + self.ATOM_BYTES
        if self.b_is_k_major:
            b = (self.n // 8 - 1) * self.b_n_atom.value.data + self.ATOM_BYTES
        else:
            b = (self.n // 64 - 1) * self.b_n_atom.value.data + b_start + self.b_k_atom.value.data + self.ATOM_BYTES
        return a // width, b // width

    def verify_(self) -> None:
        if self.shape.data not in WGMMA_N:
            raise VerifyException(f"'{self.name}' shape '{self.shape.data}' is not one of {', '.join(WGMMA_N)}")
        for tile in (self.a_tile, self.b_tile):
            t = tile.type
            assert isinstance(t, MemRefType)
            if _space(t) != AddressSpace.WORKGROUP or not isinstance(t.element_type, Float16Type | BFloat16Type | Float32Type):
                raise VerifyException(f"'{self.name}' reads f16, bf16 or f32 workgroup (local) memory")
        if self.a_tile.type.element_type != self.b_tile.type.element_type:  # type: ignore[union-attr]
            raise VerifyException(f"'{self.name}' takes A and B of one element type")
        tf32 = isinstance(self.element, Float32Type)
        k = 8 if tf32 else 16
        if not self.shape.data.endswith(f"k{k}"):
            raise VerifyException(f"'{self.name}' of {self.element} operands takes a k{k} shape")
        if tf32 and not self.b_is_k_major:
            raise VerifyException(f"'{self.name}' reads a TF32 B only k-contiguous (b_k_major)")
        if len(self.c) != self.n // 2 or len(self.d) != self.n // 2:
            raise VerifyException(f"'{self.name}' {self.shape.data} takes and gives {self.n // 2} accumulators")
        if not 0 <= self.k_step.value.data < 4:
            raise VerifyException(f"'{self.name}' k_step is one of 0 to 3 (32 bytes of k each of a 128-byte row)")
        for name in ("a_atom", "b_k_atom", "b_n_atom"):
            value = getattr(self, name).value.data
            if value <= 0 or value % self.ATOM_BYTES or value >> 4 >= 1 << 14:
                raise VerifyException(f"'{self.name}' {name} must be a positive multiple of {self.ATOM_BYTES} bytes under 256 KiB")


#: `accy_kernel.wgmma_sync`'s steps and the PTX of each.
WGMMA_SYNC = {
    "proxy": "fence.proxy.async.shared::cta;",
    "fence": "wgmma.fence.sync.aligned;",
    "commit": "wgmma.commit_group.sync.aligned;",
    "wait": "wgmma.wait_group.sync.aligned {pending};",
}


@irdl_op_definition
class WgmmaSyncOp(IRDLOperation):
    """Orders `accy_kernel.wgmma` (module docstring): "proxy", "fence", "commit" or "wait" {pending}."""

    name = "accy_kernel.wgmma_sync"

    step = prop_def(StringAttr)
    pending = opt_prop_def(IntegerAttr)

    assembly_format = "$step attr-dict"
    irdl_options = (ParsePropInAttrDict(),)

    def __init__(self, step: str, pending: int | None = None) -> None:
        properties: dict[str, Attribute] = {"step": StringAttr(step)}
        if pending is not None:
            properties["pending"] = IntegerAttr(pending, IntegerType(64))
        super().__init__(properties=properties)

    @property
    def ptx(self) -> str:
        pending = self.pending.value.data if self.pending is not None else 0
        return WGMMA_SYNC[self.step.data].format(pending=pending)

    def verify_(self) -> None:
        if self.step.data not in WGMMA_SYNC:
            raise VerifyException(f"'{self.name}' step '{self.step.data}' is not one of {', '.join(WGMMA_SYNC)}")
        if (self.step.data == "wait") != (self.pending is not None) or (self.pending is not None and self.pending.value.data < 0):
            raise VerifyException(f"'{self.name}' takes pending >= 0 with 'wait' and only there")


@irdl_op_definition
class ShuffleXorOp(IRDLOperation):
    """A warp's butterfly exchange: the `x` of the work-item whose flat local id is this one's XOR `mask` (module docstring)."""

    name = "accy_kernel.shuffle_xor"

    T: ClassVar = VarConstraint("T", base(Float32Type) | base(IntegerType))
    x = operand_def(T)
    mask = prop_def(IntegerAttr)
    result = result_def(T)

    assembly_format = "$x attr-dict `:` type($x)"
    irdl_options = (ParsePropInAttrDict(),)

    #: Lanes of a warp: masks are below it.
    WARP: ClassVar[int] = 32

    def __init__(self, x: SSAValue, mask: int) -> None:
        super().__init__(
            operands=[x], result_types=[x.type], properties={"mask": IntegerAttr(mask, IntegerType(64))}
        )

    def verify_(self) -> None:
        if not 0 <= self.mask.value.data < self.WARP:
            raise VerifyException(f"'{self.name}' mask must be in [0, {self.WARP}), got {self.mask.value.data}")
        t = self.x.type
        if isinstance(t, IntegerType) and t.width.data != 32:
            raise VerifyException(f"'{self.name}' exchanges 32-bit values (f32 or i32), got {t}")


@irdl_op_definition
class NarrowPairOp(IRDLOperation):
    """Two f32 values rounded to a `vector<2xT>` of f16 or bf16 (module docstring)."""

    name = "accy_kernel.narrow_pair"

    lo = operand_def(Float32Type)
    hi = operand_def(Float32Type)
    result = result_def(VectorType)

    assembly_format = "$lo `,` $hi attr-dict `:` type($result)"
    traits = traits_def(Pure())

    def __init__(self, lo: SSAValue, hi: SSAValue, element: Attribute) -> None:
        super().__init__(operands=[lo, hi], result_types=[VectorType(element, [2])])

    def verify_(self) -> None:
        t = self.result.type
        assert isinstance(t, VectorType)
        if t.get_shape() != (2,) or not isinstance(t.element_type, Float16Type | BFloat16Type):
            raise VerifyException(f"'{self.name}' gives a vector<2xf16> or vector<2xbf16>, got {t}")

def compare_op(lhs: SSAValue, rhs: SSAValue, predicate: str) -> Operation:
    """`predicate` (an arith.cmpf name for floats, arith.cmpi name otherwise)
    of two scalars (`arith.cmpf/cmpi`) or vectors (`accy_kernel.vcmp`)."""
    t: Attribute = lhs.type
    if isinstance(t, VectorType):
        return VCmpOp(lhs, rhs, predicate)
    if isinstance(t, IntegerType | IndexType):
        return arith.CmpiOp(lhs, rhs, predicate)
    return arith.CmpfOp(lhs, rhs, predicate)


def select_op(cond: SSAValue, lhs: SSAValue, rhs: SSAValue) -> Operation:
    """`cond ? lhs : rhs` for a scalar `i1` (`arith.select`) or a mask (`accy_kernel.vselect`)."""
    if isinstance(cond.type, VectorType):
        return VSelectOp(cond, lhs, rhs)
    return arith.SelectOp(cond, lhs, rhs)


def convert_op(kind: str, x: SSAValue, element_type: Attribute) -> Operation:
    """`arith.<kind>` (a key of `CAST_KINDS`) of a scalar, or `accy_kernel.vcast` of a vector."""
    t = x.type
    if isinstance(t, VectorType):
        return VCastOp(kind, x, VectorType(element_type, t.get_shape()))
    return _SCALAR_CASTS[kind](x, element_type)


def stream_store_op(value: SSAValue, base: SSAValue, indices: Sequence[SSAValue]) -> Operation:
    """A streaming `vector.store` (`nontemporal`; module docstring)."""
    return vector.StoreOp(value, base, indices, nontemporal=BoolAttr.from_bool(True))


def is_stream_store(op: Operation) -> bool:
    """Whether `op` is a `vector.store` marked `nontemporal`."""
    flag = op.properties.get("nontemporal") if isinstance(op, vector.StoreOp) else None
    return isinstance(flag, IntegerAttr) and flag.value.data != 0


#: The attribute of an aligned vector access (module docstring).
ALIGNMENT_ATTR = "alignment"


def aligned_access(op: Operation, nbytes: int) -> Operation:
    """`op` (a `vector.load` / `vector.store`) promising an address that is a multiple of `nbytes`."""
    assert isinstance(op, vector.LoadOp | vector.StoreOp)
    op.attributes[ALIGNMENT_ATTR] = IntegerAttr(nbytes, IntegerType(64))
    return op


def alignment_of(op: Operation) -> int:
    """The alignment in bytes `op` promises (`aligned_access`), 0 if none."""
    flag = op.attributes.get(ALIGNMENT_ATTR)
    return flag.value.data if isinstance(flag, IntegerAttr) else 0


AccyKernel = Dialect(
    "accy_kernel",
    [VCmpOp, VSelectOp, VCastOp, MmaOp, LdMatrixOp, AsyncCopyOp, AsyncCommitOp, AsyncWaitOp, ShuffleXorOp,
     NarrowPairOp, WgmmaOp, WgmmaSyncOp],
    [],
)

__all__ = [
    "CAST_KINDS",
    "FLOAT_PREDICATES",
    "INT_PREDICATES",
    "ACCUMULATOR_FRAGMENT",
    "FRAGMENTS",
    "MMA_K",
    "ALIGNMENT_ATTR",
    "BUFFER_ALIGN_BYTES",
    "ARGUMENT_ACCESS_BYTES",
    "ASYNC_COPY_BYTES",
    "AccyKernel",
    "AsyncCommitOp",
    "AsyncCopyOp",
    "AsyncWaitOp",
    "NarrowPairOp",
    "LdMatrixOp",
    "MmaOp",
    "ShuffleXorOp",
    "VCastOp",
    "VCmpOp",
    "VSelectOp",
    "WGMMA_N",
    "WORK_ITEM_OPS",
    "WgmmaOp",
    "WgmmaSyncOp",
    "aligned_access",
    "alignment_of",
    "compare_op",
    "convert_op",
    "is_stream_store",
    "select_op",
    "stream_store_op",
]
