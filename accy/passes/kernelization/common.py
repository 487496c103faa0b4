"""Shared kernel-building helpers of the lowerings.

Every lowering builds one `gpu.func` through a `KernelBuilder`: its arguments
are the kernel's buffers (flat 1-D memrefs, i1 stored as i8), its body is
built by appending ops to the current block, with helpers for index math,
constants (hoisted to the top of the kernel), `scf.for` / `scf.if` regions and
loads/stores through a value's `BufferRef` (offset + strides: a view is index
math, never a copy).

`Expr` evaluates a tensor value of the kernel at a point of its index space:
kernel inputs are loaded through their layout, values produced by the
kernel's own elementwise / view / concat ops are computed from their operands
(views map the coordinates), and a lowering may pin values (a reduction's
accumulator, a dot's tile) with `Expr.pin`. Every lowering's prologue and
epilogue goes through it, so each op of the contract has exactly one
implementation in kernel IR (`apply_elementwise`). It evaluates with an
explicit worklist, as every walk of use-def chains in the compiler must: a
fused chain is as long as the program. A splat literal (or a view of one,
such as the rank-0 literals the decompositions broadcast) is a constant of
the kernel, read from the literal's bytes.

An `Expr` has a width: 1 evaluates scalars, W > 1 evaluates `vector<WxT>` of
W consecutive elements along the last dimension (coordinates name the first
lane). Vector evaluation needs no views inside the kernel (`vectorizable`);
compares, selects, casts and i1 masks are lane-wise through the
`accy_kernel` ops. Integer division and float->int casts give the
reference's results where C leaves them undefined (`int_div`,
`float_to_int`).

Every finished kernel is tidied by `simplify_kernel` (folding, dead code,
loop-invariant code motion, CSE).

A lowering starts from `KernelBuilder.for_kernel` (or `anchored_kernel`, for
kinds built around one anchor op such as a reduction) and ends with
`KernelBuilder.lowered`; `Expr.store` is every lowering's epilogue. What
reductions and scans combine values with is in `combining`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Container, Iterable, Sequence
from dataclasses import dataclass, field
from io import StringIO
from typing import Any, TypeVar

import numpy as np
from xdsl.dialects import arith, gpu, memref, scf, vector
from xdsl.dialects import math as mathd
from xdsl.dialects.builtin import (
    DenseIntOrFPElementsAttr,
    FloatAttr,
    FunctionType,
    IndexType,
    IntegerAttr,
    IntegerType,
    MemRefType,
    StringAttr,
    VectorType,
    i8,
)
from xdsl.ir import Attribute, Block, BlockArgument, Operation, Region, SSAValue
from xdsl.pattern_rewriter import GreedyRewritePatternApplier, PatternRewriteWalker
from xdsl.printer import Printer
from xdsl.transforms.canonicalize import CanonicalizationRewritePattern
from xdsl.transforms.common_subexpression_elimination import cse
from xdsl.transforms.dead_code_elimination import region_dce
from xdsl.transforms.loop_invariant_code_motion import LoopInvariantCodeMotion

from accy.dialects import accy
from accy.dialects.dense import splat_value, storage_format
from accy.dialects.host import WORKGROUP, buffer_element_type
from accy.dialects.kernel import compare_op, convert_op, select_op
from accy.dialects.target import TargetProfile
from accy.passes.analyses.bufferization import Buffer, BufferPlan
from accy.passes.analyses.outlining import OutlinedKernel
from accy.passes.analyses.shape_layout import element_bytes, is_row_major
from accy.passes.kernelization.reads import read_elsewhere
from accy.passes.registry import shared_context

T = TypeVar("T")
Anchor = TypeVar("Anchor", bound=Operation)

# --------------------------------------------------------------------------
# Results of a lowering
# --------------------------------------------------------------------------


class Decline(Exception):
    """A lowering cannot (or may not, under the math tier) lower a kernel; the
    message is the reason the remark shows."""


@dataclass(eq=False)
class Scratch:
    """A buffer of `size` elements of `element_type` that a lowering keeps
    between the launches of one work item (a split reduction's partial
    results): the host schedule allocates it before them and frees it after."""

    element_type: Attribute
    size: int


@dataclass
class LoweredKernel:
    """A kernel function plus how to launch it: `grid` work-groups of `block`
    work-items per dimension, over `buffers` (the kernel's arguments, in
    order; `values` holds a value stored in each, or the `Scratch` buffer
    the argument is). `before` runs first (a first stage over the same
    scratch buffers)."""

    func: gpu.FuncOp
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    buffers: list[Buffer]
    values: list[SSAValue | Scratch] = field(default_factory=list)
    before: LoweredKernel | None = None


# --------------------------------------------------------------------------
# Types
# --------------------------------------------------------------------------

def buffer_type(buffer: Buffer, element_type: Attribute) -> MemRefType:
    """The flat memref a buffer is seen as, for values of `element_type`."""
    st = buffer_element_type(element_type)
    return MemRefType(st, [max(1, buffer.nbytes // element_bytes(st))])


def collapse(shape: Sequence[int], stride_sets: Sequence[Sequence[int]]) -> tuple[list[int], list[list[int]]]:
    """Merges adjacent dims that every layout in `stride_sets` walks as one
    (stride[d] == stride[d+1] * shape[d+1]); drops size-1 dims. Returns the
    new shape and each layout's strides over it (at least one dim)."""
    dims = [d for d in range(len(shape)) if shape[d] != 1]
    out_shape: list[int] = []
    out_strides: list[list[int]] = [[] for _ in stride_sets]
    for d in dims:
        if out_shape and all(s[-1] == st[d] * shape[d] for s, st in zip(out_strides, stride_sets, strict=False)):
            out_shape[-1] *= shape[d]
            for s, st in zip(out_strides, stride_sets, strict=False):
                s[-1] = st[d]
            continue
        out_shape.append(shape[d])
        for s, st in zip(out_strides, stride_sets, strict=False):
            s.append(st[d])
    if not out_shape:
        return [1], [[0] for _ in stride_sets]
    return out_shape, out_strides


# --------------------------------------------------------------------------
# The kernel builder
# --------------------------------------------------------------------------


@dataclass
class Access:
    """How a value is addressed: buffer argument, element offset, strides
    over the coordinates the kernel indexes it with."""

    arg: SSAValue
    offset: int
    strides: tuple[int, ...]
    element_type: Attribute


@dataclass
class KernelBuilder:
    """Builds one `gpu.func @<name> kernel` over the buffers of `values`
    (kernel inputs, then outputs), as the buffer plan places them."""

    name: str
    kind: str
    profile: TargetProfile
    plan: BufferPlan
    values: Sequence[SSAValue]
    buffers: list[Buffer] = field(default_factory=list)
    access: dict[SSAValue, Access] = field(default_factory=dict)

    ops: Sequence[Operation] = ()

    @classmethod
    def for_kernel(cls, kernel: OutlinedKernel, plan: BufferPlan, profile: TargetProfile) -> KernelBuilder:
        """The builder of `kernel`'s function: its inputs, then its outputs.
        Declines a kernel that stores nothing (no lowering has a launch for it)."""
        if not kernel.outputs:
            raise Decline(f"kernel {kernel.name} stores no value")
        return cls(kernel.name, kernel.kind, profile, plan, [*kernel.inputs, *kernel.outputs], ops=kernel.ops)

    def __post_init__(self) -> None:
        # Views of the kernel's inputs that the plan places read their base's
        # buffer directly through their strides (no index math per view op).
        inside = {r for op in self.ops for r in op.results}
        self.view_leaves = {
            r for op in self.ops if isinstance(op, VIEWS)
            for r in op.results if r in self.plan.refs and r not in self.values and _view_root(r) not in inside
        }
        self.values = [*self.values, *self.view_leaves]
        arg_of: dict[int, int] = {}
        types: list[Attribute] = []
        self.arg_values: list[SSAValue | Scratch] = []
        for v in self.values:
            if v not in self.plan.refs:
                raise Decline(f"the buffer plan places no buffer for {v.name_hint or v}")
            buf = self.plan.buffer_of(v)
            if buf.id not in arg_of:
                arg_of[buf.id] = len(self.buffers)
                self.buffers.append(buf)
                self.arg_values.append(v)
                types.append(buffer_type(buf, accy.elem_of(v)))
            elif buffer_element_type(accy.elem_of(v)) != types[arg_of[buf.id]].element_type:
                raise Decline(f"buffer of {v} is read with two element types")
        self.func = gpu.FuncOp(self.name, (types, []), kernel=True)
        self.func.attributes["accy.kind"] = StringAttr(self.kind)
        entry = self.func.body.block
        for v in self.values:
            ref = self.plan.refs[v]
            arg = entry.args[arg_of[ref.buffer]]
            self.access[v] = Access(arg, ref.offset, tuple(ref.strides), accy.elem_of(v))
        self.block = entry
        self._anchor = gpu.ReturnOp([])
        entry.add_op(self._anchor)
        self._consts: dict[tuple[Any, Attribute], SSAValue] = {}
        # Loads made in the current block since the last store to their buffer
        # (xDSL's CSE leaves vector.load alone: it declares no memory effect),
        # and coordinates that `delinearize` made of a flat index, so a
        # row-major access of them is that index again. Both are keyed by the
        # block they were made in: a load is reused in that block only (a
        # store later in a loop body would stale it for the next iteration),
        # a flat index from there and from blocks nested in it (`lookup`), as
        # size-1 dims make equal coordinate tuples (all the constant 0) of
        # different flat indices, and an index made inside a loop is no value
        # after it.
        self._loads: dict[tuple[Any, ...], SSAValue] = {}
        self._delinearized: dict[tuple[Any, ...], tuple[SSAValue, tuple[int, ...]]] = {}
        self._const_tail: Operation | None = None
        self.const_value: dict[SSAValue, int] = {}

    # -- inserting -----------------------------------------------------

    def op(self, op: Operation) -> Operation:
        if isinstance(op, memref.StoreOp | vector.StoreOp | gpu.BarrierOp):
            # A load made before a write may not stand for one made after it.
            written = op.operands[1] if not isinstance(op, gpu.BarrierOp) else None
            self._loads = {k: v for k, v in self._loads.items() if written is not None and k[1] is not written}
        if self.block is self.func.body.block:
            self.block.insert_op_before(op, self._anchor)
        else:
            self.block.add_op(op)
        return op

    def val(self, op: Operation) -> SSAValue:
        return self.op(op).results[0]

    def lowered(self, grid: tuple[int, int, int], block: tuple[int, int, int]) -> LoweredKernel:
        """The finished kernel (tidied by `simplify_kernel`) with its launch
        sizes; its SSA dominance is checked as built and once tidied."""
        check_dominance(self.func, "as the lowering built it")
        simplify_kernel(self.func)
        check_dominance(self.func, "after simplify_kernel")
        return LoweredKernel(self.func, grid, block, self.buffers, self.arg_values)

    def scratch_argument(self, scratch: Scratch) -> SSAValue:
        """A new last argument of the kernel: the flat buffer `scratch`."""
        t = MemRefType(buffer_element_type(scratch.element_type), [max(1, scratch.size)])
        entry = self.func.body.block
        arg = entry.insert_arg(t, len(entry.args))
        self.func.function_type = FunctionType.from_lists([a.type for a in entry.args], [])
        self.arg_values.append(scratch)
        return arg

    # -- values computed once where they dominate ---------------------------

    def lookup(self, memo: dict[tuple[Any, ...], T], key: tuple[Any, ...]) -> T | None:
        """`memo`'s value for `key` made in the current block or one enclosing
        it, so it dominates the current insertion point (the builder only
        appends, and never reenters a finished region). Every cache of values
        the builder or a lowering hands out again goes through here."""
        block: Block | None = self.block
        while block is not None:
            hit = memo.get((block, *key))
            if hit is not None:
                return hit
            parent = block.parent_op()
            block = parent.parent_block() if parent is not None else None
        return None

    def remember(self, memo: dict[tuple[Any, ...], T], key: tuple[Any, ...], value: T) -> T:
        """Records `value` (made at the current insertion point) for `lookup`."""
        memo[(self.block, *key)] = value
        return value

    # -- constants (hoisted to the top) -----------------------------------

    def const(self, value: int | float | bool, t: Attribute) -> SSAValue:
        """A constant of scalar type or `vector<..>` type `t` (a broadcast)."""
        key = (value if not isinstance(value, float) or not math.isnan(value) else "nan", t)
        if key in self._consts:
            return self._consts[key]
        if isinstance(t, VectorType):
            scalar = self.const(value, t.element_type)
            c = vector.BroadcastOp(scalar, t)
        elif isinstance(t, IndexType):
            c = arith.ConstantOp.from_int_and_width(int(value), t)
        elif isinstance(t, IntegerType):
            v = int(value)
            if t.width.data == 1:
                v = -1 if v else 0  # i1 `true` is the one-bit -1
            c = arith.ConstantOp(IntegerAttr(v, t))
        else:
            c = arith.ConstantOp(FloatAttr(float(value), t))
        # Constants sit at the top of the kernel in creation order, so each
        # dominates every use (a vector splat follows its scalar).
        entry = self.func.body.block
        if self._const_tail is None:
            entry.insert_op_before(c, entry.first_op)  # type: ignore[arg-type]
        else:
            entry.insert_op_after(c, self._const_tail)
        self._const_tail = c
        self._consts[key] = c.results[0]
        if isinstance(t, IndexType):
            self.const_value[c.results[0]] = int(value)
        return c.results[0]

    def idx(self, n: int) -> SSAValue:
        return self.const(n, IndexType())

    # -- index math (folds constants) --------------------------------------

    def add(self, a: SSAValue | int, b: SSAValue | int) -> SSAValue:
        a, b = self.as_index(a), self.as_index(b)
        ca, cb = self.const_value.get(a), self.const_value.get(b)
        if ca is not None and cb is not None:
            return self.idx(ca + cb)
        if ca == 0:
            return b
        if cb == 0:
            return a
        return self.val(arith.AddiOp(a, b))

    def sub(self, a: SSAValue | int, b: SSAValue | int) -> SSAValue:
        a, b = self.as_index(a), self.as_index(b)
        ca, cb = self.const_value.get(a), self.const_value.get(b)
        if ca is not None and cb is not None:
            return self.idx(ca - cb)
        if cb == 0:
            return a
        return self.val(arith.SubiOp(a, b))

    def mul(self, a: SSAValue | int, b: SSAValue | int) -> SSAValue:
        a, b = self.as_index(a), self.as_index(b)
        ca, cb = self.const_value.get(a), self.const_value.get(b)
        if ca is not None and cb is not None:
            return self.idx(ca * cb)
        if ca == 0 or cb == 0:
            return self.idx(0)
        if ca == 1:
            return b
        if cb == 1:
            return a
        return self.val(arith.MuliOp(a, b))

    def div(self, a: SSAValue, n: int) -> SSAValue:
        """a / n for non-negative a."""
        ca = self.const_value.get(a)
        if ca is not None:
            return self.idx(ca // n)
        return a if n == 1 else self.val(arith.DivSIOp(a, self.idx(n)))

    def rem(self, a: SSAValue, n: int) -> SSAValue:
        ca = self.const_value.get(a)
        if ca is not None:
            return self.idx(ca % n)
        return self.idx(0) if n == 1 else self.val(arith.RemSIOp(a, self.idx(n)))

    def min(self, a: SSAValue | int, b: SSAValue | int) -> SSAValue:
        a, b = self.as_index(a), self.as_index(b)
        ca, cb = self.const_value.get(a), self.const_value.get(b)
        if ca is not None and cb is not None:
            return self.idx(min(ca, cb))
        return self.select(self.lt(a, b), a, b)

    def select(self, cond: SSAValue, a: SSAValue, b: SSAValue) -> SSAValue:
        """cond ? a : b, lane-wise when `cond` is a vector mask."""
        return self.val(select_op(cond, a, b))

    def lt(self, a: SSAValue | int, b: SSAValue | int) -> SSAValue:
        return self.val(arith.CmpiOp(self.as_index(a), self.as_index(b), "slt"))

    def as_index(self, a: SSAValue | int) -> SSAValue:
        """`a` as an index value (a constant when it is an int)."""
        return self.idx(a) if isinstance(a, int) else a

    def delinearize(self, flat: SSAValue, shape: Sequence[int]) -> list[SSAValue]:
        """Row-major coordinates of `flat` in `shape`, for `flat` in
        [0, numel(shape)): the outermost dim larger than 1 takes the quotient
        left (no remainder), the size-1 dims outside it are 0."""
        top = next((d for d, n in enumerate(shape) if n != 1), len(shape))
        coords: list[SSAValue] = []
        rest = flat
        for d in reversed(range(len(shape))):
            n = shape[d]
            if d < top:
                coords.append(self.idx(0))
            elif d == top:
                coords.append(rest)
            else:
                coords.append(self.rem(rest, n))
                rest = self.div(rest, n)
        coords.reverse()
        self.remember(self._delinearized, tuple(coords), (flat, tuple(shape)))
        return coords

    def linearize(self, coords: Sequence[SSAValue], shape: Sequence[int]) -> SSAValue:
        flat = self.idx(0)
        for c, n in zip(coords, shape, strict=False):
            flat = self.add(self.mul(flat, n), c)
        return flat

    def address(self, acc: Access, coords: Sequence[SSAValue]) -> SSAValue:
        """The element index of `coords` in `acc`'s buffer."""
        assert len(coords) == len(acc.strides), (coords, acc.strides)
        source = self.lookup(self._delinearized, tuple(coords))
        if source is not None and len(acc.strides) == len(source[1]) and is_row_major(source[1], acc.strides):
            # delinearize(i, shape) read row-major is i itself.
            return self.add(self.idx(acc.offset), source[0])
        flat = self.idx(acc.offset)
        for c, s in zip(coords, acc.strides, strict=False):
            if s:
                flat = self.add(flat, self.mul(c, s))
        return flat

    # -- ids ---------------------------------------------------------------

    def global_id(self, dim: str = "x") -> SSAValue:
        return self.val(gpu.GlobalIdOp(gpu.DimensionAttr(gpu.DimensionEnum(dim))))

    def group_id(self, dim: str = "x") -> SSAValue:
        return self.val(gpu.BlockIdOp(gpu.DimensionAttr(gpu.DimensionEnum(dim))))

    def local_id(self, dim: str = "x") -> SSAValue:
        return self.val(gpu.ThreadIdOp(gpu.DimensionAttr(gpu.DimensionEnum(dim))))

    def barrier(self) -> None:
        self.op(gpu.BarrierOp())

    # -- regions -----------------------------------------------------------

    def for_(
        self,
        lo: SSAValue | int,
        hi: SSAValue | int,
        step: SSAValue | int,
        inits: Sequence[SSAValue],
        body: Callable[[SSAValue, list[SSAValue]], Sequence[SSAValue]],
    ) -> list[SSAValue]:
        """scf.for lo..hi by step carrying `inits`; `body(iv, carried)` returns
        the next carried values. A loop known to run once is inlined."""
        lo, hi, step = self.as_index(lo), self.as_index(hi), self.as_index(step)
        clo, chi, cst = (self.const_value.get(x) for x in (lo, hi, step))
        if clo is not None and chi is not None and cst is not None:
            if chi <= clo:
                return list(inits)
            if clo + cst >= chi:
                return list(body(lo, list(inits)))
        block = Block(arg_types=[IndexType(), *[v.type for v in inits]])
        loop = scf.ForOp(lo, hi, step, list(inits), Region(block))
        self.op(loop)
        outer, self.block = self.block, block
        results = body(block.args[0], list(block.args[1:]))
        self.op(scf.YieldOp(*results))
        self.block = outer
        return list(loop.results)

    def if_(
        self,
        cond: SSAValue,
        then: Callable[[], Sequence[SSAValue]],
        else_: Callable[[], Sequence[SSAValue]] | None = None,
        result_types: Sequence[Attribute] = (),
    ) -> list[SSAValue]:
        """scf.if; each branch builder returns its yielded values."""
        blocks = [Block(), Block()] if else_ is not None or result_types else [Block()]
        op = scf.IfOp(cond, list(result_types), Region(blocks[0]), Region(blocks[1]) if len(blocks) > 1 else None)
        self.op(op)
        outer = self.block
        for blk, fn in zip(blocks, (then, else_ or (lambda: [])), strict=False):
            self.block = blk
            self.op(scf.YieldOp(*fn()))
        self.block = outer
        return list(op.results)

    # -- memory --------------------------------------------------------------

    def load(self, acc: Access, coords: Sequence[SSAValue], width: int = 1) -> SSAValue:
        """The value at `coords` (width > 1: W consecutive elements along the
        last coordinate), converted from storage (i8 -> i1)."""
        et = acc.element_type
        st = buffer_element_type(et)
        key = (self.block, acc.arg, self.address(acc, coords), width, acc.strides[-1] if acc.strides else 0, et)
        hit = self._loads.get(key)
        if hit is not None:
            return hit
        if width == 1:
            x = self.val(memref.LoadOp.get(acc.arg, [self.address(acc, coords)]))
        elif not acc.strides or acc.strides[-1] == 0:
            s = self.val(memref.LoadOp.get(acc.arg, [self.address(acc, coords)]))
            x = self.val(vector.BroadcastOp(s, VectorType(st, [width])))
        elif acc.strides[-1] == 1:
            x = self.val(vector.LoadOp(acc.arg, [self.address(acc, coords)], VectorType(st, [width])))
        else:  # a strided row: gather lane by lane
            x = self.const(0, VectorType(st, [width]))
            for lane in range(width):
                lc = [*coords[:-1], self.add(coords[-1], lane)]
                s = self.val(memref.LoadOp.get(acc.arg, [self.address(acc, lc)]))
                x = self.val(vector.InsertOp(s, x, [lane]))
        if accy.is_bool(et):
            x = cmp(self, "ne", x, self.const(0, x.type), integer=True)
        self._loads[key] = x
        return x

    def store(self, acc: Access, coords: Sequence[SSAValue], x: SSAValue, width: int = 1) -> None:
        if accy.is_bool(acc.element_type):
            x = self.select(x, self.const(1, _like(x.type, i8)), self.const(0, _like(x.type, i8)))
        if width == 1:
            self.op(memref.StoreOp.get(x, acc.arg, [self.address(acc, coords)]))
        elif acc.strides[-1] == 1:
            self.op(vector.StoreOp(x, acc.arg, [self.address(acc, coords)]))
        else:
            for lane in range(width):
                lc = [*coords[:-1], self.add(coords[-1], lane)]
                s = self.val(vector.ExtractOp(x, [lane], buffer_element_type(acc.element_type)))
                self.op(memref.StoreOp.get(s, acc.arg, [self.address(acc, lc)]))

    def local_array(self, n: int, t: Attribute, workgroup: bool) -> SSAValue:
        """A static local (work-group shared) or private array of n elements."""
        if workgroup:
            return self.val(memref.AllocaOp.get(t, shape=[n], memory_space=WORKGROUP))
        return self.val(memref.AllocaOp.get(t, shape=[n]))


def _view_root(v: SSAValue) -> SSAValue:
    """The value a chain of views starts from."""
    while isinstance(v.owner, VIEWS):
        v = v.owner.operands[0]
    return v


def _like(t: Attribute, element: Attribute) -> Attribute:
    return VectorType(element, t.get_shape()) if isinstance(t, VectorType) else element


def element_type_of(t: Attribute) -> Attribute:
    return t.element_type if isinstance(t, VectorType) else t


_FCMP = {"eq": "oeq", "ne": "une", "lt": "olt", "le": "ole", "gt": "ogt", "ge": "oge"}
_ICMP = {"eq": "eq", "ne": "ne", "lt": "slt", "le": "sle", "gt": "sgt", "ge": "sge"}


def cmp(kb: KernelBuilder, pred: str, a: SSAValue, b: SSAValue, integer: bool) -> SSAValue:
    """a <pred> b on scalars or lane-wise on vectors (numpy semantics: a NaN
    compares unequal to everything)."""
    return kb.val(compare_op(a, b, _ICMP[pred] if integer else _FCMP[pred]))


# --------------------------------------------------------------------------
# Elementwise ops in kernel IR: one implementation per op of the contract
# --------------------------------------------------------------------------

SQRT1_2 = 0.7071067811865476


def _is_float_t(t: Attribute) -> bool:
    return accy.is_float(element_type_of(t))


def int_pow(kb: KernelBuilder, base: SSAValue, exp: SSAValue) -> SSAValue:
    """base ** exp for integers by squaring, wrapping on overflow (the reference's rule)."""
    t = base.type
    bits = element_type_of(t).width.data
    one, zero, two = kb.const(1, t), kb.const(0, t), kb.const(2, t)

    def step(_: SSAValue, c: list[SSAValue]) -> list[SSAValue]:
        r, b, e = c
        odd = cmp(kb, "ne", kb.val(arith.RemSIOp(e, two)), zero, integer=True)
        r = kb.select(odd, kb.val(arith.MuliOp(r, b)), r)
        return [r, kb.val(arith.MuliOp(b, b)), kb.val(arith.DivSIOp(e, two))]

    r = kb.for_(0, bits, 1, [one, base, exp], step)[0]
    # A negative exponent: 1/base^|exp| truncated (1, +-1 for base -1, else 0).
    minus_one = kb.const(-1, t)
    odd = cmp(kb, "ne", kb.val(arith.RemSIOp(exp, two)), zero, integer=True)
    for_minus_one = kb.select(odd, minus_one, one)
    inverse = kb.select(cmp(kb, "eq", base, minus_one, integer=True), for_minus_one, zero)
    inverse = kb.select(cmp(kb, "eq", base, one, integer=True), one, inverse)
    return kb.select(cmp(kb, "lt", exp, zero, integer=True), inverse, r)


def int_div(kb: KernelBuilder, a: SSAValue, b: SSAValue) -> SSAValue:
    """a / b truncating toward zero, defined everywhere as the reference
    defines it: a / 0 = 0 and INT_MIN / -1 = INT_MIN (OpenCL C and LLVM leave
    both undefined; x86 traps). Both are divided by 1 instead, then x/0 is
    replaced by 0."""
    t = a.type
    bits = element_type_of(t).width.data
    zero, one = kb.const(0, t), kb.const(1, t)
    by_zero = cmp(kb, "eq", b, zero, integer=True)
    overflow = kb.val(
        arith.AndIOp(
            cmp(kb, "eq", a, kb.const(-(2 ** (bits - 1)), t), integer=True),
            cmp(kb, "eq", b, kb.const(-1, t), integer=True),
        )
    )
    safe = kb.select(kb.val(arith.OrIOp(by_zero, overflow)), one, b)
    return kb.select(by_zero, zero, kb.val(arith.DivSIOp(a, safe)))


def float_to_int(kb: KernelBuilder, x: SSAValue, dst: Attribute) -> SSAValue:
    """Float -> signed integer truncating toward zero and saturating as the
    reference (and LLVM's fptosi.sat): NaN -> 0, values at or beyond the
    type's range -> its min / max. Out-of-range inputs never reach
    `arith.fptosi` (undefined there), they are replaced by 0 first."""
    t = x.type
    bits = dst.width.data
    rt = _like(t, dst)
    # +-2^(bits-1) are exact in every float type wide enough to reach them
    # (f16 rounds them to +-inf, beyond which nothing lies).
    hi = cmp(kb, "ge", x, kb.const(float(2 ** (bits - 1)), t), integer=False)
    lo = cmp(kb, "le", x, kb.const(-float(2 ** (bits - 1)), t), integer=False)
    nan = cmp(kb, "ne", x, x, integer=False)
    bad = kb.val(arith.OrIOp(kb.val(arith.OrIOp(hi, lo)), nan))
    r = kb.val(convert_op("fptosi", kb.select(bad, kb.const(0.0, t), x), dst))
    r = kb.select(hi, kb.const(2 ** (bits - 1) - 1, rt), r)
    return kb.select(lo, kb.const(-(2 ** (bits - 1)), rt), r)


def cast(kb: KernelBuilder, x: SSAValue, src: Attribute, dst: Attribute) -> SSAValue:
    """accy.cast of a scalar or lane-wise of a vector `x` of element type
    `src`: float->int truncates and saturates (`float_to_int`), i1 -> 1/0,
    x -> i1 is x != 0, int->int wraps."""
    if src == dst:
        return x
    rt = _like(x.type, dst)
    if accy.is_bool(dst):
        return cmp(kb, "ne", x, kb.const(0, x.type), integer=not accy.is_float(src))
    if accy.is_bool(src):
        return kb.select(x, kb.const(1, rt), kb.const(0, rt))
    if accy.is_float(src) and accy.is_float(dst):
        wider = element_bytes(dst) > element_bytes(src)
        return kb.val(arith.ExtFOp(x, rt) if wider else arith.TruncFOp(x, rt))
    if accy.is_float(src):
        return float_to_int(kb, x, dst)
    if accy.is_float(dst):
        return kb.val(convert_op("sitofp", x, dst))
    return kb.val(convert_op("extsi" if element_bytes(dst) > element_bytes(src) else "trunci", x, dst))


def apply_elementwise(kb: KernelBuilder, op: Operation, args: Sequence[SSAValue]) -> SSAValue:
    """Kernel IR for one elementwise tensor op on scalars or vectors `args`."""
    x = args[0]
    t = x.type
    fl = _is_float_t(t)

    def c(v: float) -> SSAValue:
        return kb.const(v, t)

    match op:
        case accy.NegOp():
            return kb.val(arith.NegfOp(x) if fl else arith.SubiOp(c(0), x))
        case accy.AbsOp():
            return kb.val(mathd.AbsFOp(x) if fl else mathd.AbsIOp(x))
        case accy.ReluOp():
            return kb.val(arith.MaximumfOp(x, c(0.0)) if fl else arith.MaxSIOp(x, c(0)))
        case accy.SigmoidOp():
            e = kb.val(mathd.ExpOp(kb.val(arith.NegfOp(x))))
            return kb.val(arith.DivfOp(c(1.0), kb.val(arith.AddfOp(c(1.0), e))))
        case accy.GeluOp():
            erf = kb.val(mathd.ErfOp(kb.val(arith.MulfOp(x, c(SQRT1_2)))))
            half_x = kb.val(arith.MulfOp(x, c(0.5)))
            return kb.val(arith.MulfOp(half_x, kb.val(arith.AddfOp(c(1.0), erf))))
        case accy.ReciprocalOp():
            return kb.val(arith.DivfOp(c(1.0), x))
        case accy.RsqrtOp():
            # 1/sqrt: correctly rounded parts; OpenCL's rsqrt is a 2-ulp approximation.
            if kb.profile.math == "fast":
                return kb.val(mathd.RsqrtOp(x))
            return kb.val(arith.DivfOp(c(1.0), kb.val(mathd.SqrtOp(x))))
        case accy.NotOp():
            return kb.val(arith.XOrIOp(x, kb.const(1, t)))
        case accy.CmpOp():
            return cmp(kb, op.predicate.data, x, args[1], integer=not fl)
        case accy.SelectOp():
            return kb.select(args[0], args[1], args[2])
        case accy.DivOp() if not fl:
            return int_div(kb, x, args[1])
        case accy.CastOp():
            return cast(kb, x, accy.elem_of(op.x), accy.elem_of(op.result))
        case accy.PowOp() if not fl:
            return int_pow(kb, x, args[1])
    if type(op) in _UNARY_MATH:
        return kb.val(_UNARY_MATH[type(op)](x))
    pair = _BINARY.get(type(op))
    if pair is None:
        raise Decline(f"no kernel form for {op.name}")
    cls = pair[0] if fl else pair[1]
    if cls is None:
        raise Decline(f"{op.name} does not take {element_type_of(t)}")
    return kb.val(cls(x, args[1]))


_UNARY_MATH: dict[type, type[Operation]] = {
    accy.ExpOp: mathd.ExpOp,
    accy.LogOp: mathd.LogOp,
    accy.SqrtOp: mathd.SqrtOp,
    accy.TanhOp: mathd.TanhOp,
    accy.SinOp: mathd.SinOp,
    accy.CosOp: mathd.CosOp,
    accy.ErfOp: mathd.ErfOp,
    accy.FloorOp: mathd.FloorOp,
    accy.CeilOp: mathd.CeilOp,
}
_BINARY: dict[type, tuple[type[Operation] | None, type[Operation] | None]] = {
    accy.AddOp: (arith.AddfOp, arith.AddiOp),
    accy.SubOp: (arith.SubfOp, arith.SubiOp),
    accy.MulOp: (arith.MulfOp, arith.MuliOp),
    accy.DivOp: (arith.DivfOp, None),  # integers: int_div
    accy.MaxOp: (arith.MaximumfOp, arith.MaxSIOp),
    accy.MinOp: (arith.MinimumfOp, arith.MinSIOp),
    accy.PowOp: (mathd.PowFOp, None),
    accy.AndOp: (None, arith.AndIOp),
    accy.OrOp: (None, arith.OrIOp),
    accy.XorOp: (None, arith.XOrIOp),
}

ELEMENTWISE = tuple(accy.ELEMENTWISE_OPS)
VIEWS = tuple(accy.VIEW_OPS)


def vectorizable(ops: Sequence[Operation], kb: KernelBuilder | None = None) -> bool:
    """Whether `Expr` can evaluate these ops W lanes at a time: elementwise
    ops (compares, selects, casts and i1 masks included, through
    `accy_kernel.vcmp`/`vselect`) and splat constants; no views that must be
    computed (a view the builder loads through its strides is fine) or
    concats (they move lanes across dims). Such chains also index every
    operand with the output's own coordinates, so their dims can be merged."""
    leaves = kb.view_leaves if kb is not None else set()
    return all(
        isinstance(op, (*ELEMENTWISE, accy.ConstantOp))
        or (isinstance(op, VIEWS) and (op.results[0] in leaves or splat_of(op.results[0]) is not None))
        for op in ops
    )


def postorder(roots: Iterable[T], children: Callable[[T], Iterable[T]], done: Container[T]) -> list[T]:
    """The nodes reachable from `roots` through `children`, except those in
    `done` (and what is reachable only through them), each after all of its
    children: the order to compute a memoised function of a DAG in without
    recursing (a program's use-def chains are as deep as it is long)."""
    order: list[T] = []
    seen: set[T] = set()
    stack: list[tuple[T, bool]] = [(r, False) for r in roots]
    while stack:
        node, expanded = stack.pop()
        if expanded:
            order.append(node)
            continue
        if node in seen or node in done:
            continue
        seen.add(node)
        stack.append((node, True))
        stack.extend((c, False) for c in children(node) if c not in seen and c not in done)
    return order


def literal_elements(attr: DenseIntOrFPElementsAttr) -> np.ndarray:
    """The stored elements of a dense literal, flat, as a read-only numpy
    view of its bytes (no copy, no Python object per element; i1 reads as
    int8 0 / -1)."""
    return np.frombuffer(attr.data.data, dtype=np.dtype(storage_format(attr)))


def splat_of(value: SSAValue) -> int | float | None:
    """The one value of every element of `value` when it is a splat literal
    or a view of one (a rank-0 literal broadcast is how accy writes a scalar
    of any shape), read from the literal's bytes; None otherwise."""
    while isinstance(value.owner, VIEWS):
        value = value.owner.operands[0]
    owner = value.owner
    if not isinstance(owner, accy.ConstantOp):
        return None
    if not owner.value.data.data:
        return 0  # no element: any value stands for all of them
    return splat_value(owner.value)


# --------------------------------------------------------------------------
# Evaluating tensor values at a point
# --------------------------------------------------------------------------


class Expr:
    """Evaluates values of a kernel at coordinates (see the module docstring).

    `ops` are the kernel's tensor ops that this evaluator may compute;
    `access` maps kernel inputs to how they are loaded (by default the
    builder's own, through the BufferRef). Results are cached per block, so a
    value used twice is computed once where it dominates.
    """

    def __init__(
        self,
        kb: KernelBuilder,
        ops: Sequence[Operation],
        width: int = 1,
        access: dict[SSAValue, Access] | None = None,
    ) -> None:
        self.kb = kb
        self.width = width
        self.producers = {r: op for op in ops for r in op.results}
        self.access = access if access is not None else kb.access
        self.pinned: dict[SSAValue, Callable[[Sequence[SSAValue]], SSAValue]] = {}
        self.aliases: dict[SSAValue, SSAValue] = {}
        self._memo: dict[tuple[Any, ...], SSAValue] = {}

    def pin(self, value: SSAValue, fn: Callable[[Sequence[SSAValue]], SSAValue]) -> None:
        """Evaluate `value` with `fn(coords)` (a lowering's own result)."""
        self.pinned[value] = fn

    def alias(self, value: SSAValue, same: SSAValue) -> None:
        """Evaluate `value` as `same` at the same coordinates (a named op's
        result as the value of its decomposition)."""
        self.aliases[value] = same

    def store(self, outputs: Sequence[SSAValue], coords: Sequence[SSAValue]) -> None:
        """Stores each of `outputs`, evaluated at `coords` (`width` lanes),
        into its buffer: a lowering's epilogue."""
        for out in outputs:
            self.kb.store(self.access[out], coords, self.at(out, coords), self.width)

    def at(self, value: SSAValue, coords: Sequence[SSAValue]) -> SSAValue:
        """`value` at `coords`, computed once per block where it dominates.

        Evaluates with an explicit stack, operands first: a chain of
        thousands of elementwise ops or views is no deeper in Python than
        one op."""
        key = (value, tuple(coords))
        hit = self.kb.lookup(self._memo, key)
        if hit is not None:
            return hit
        # (value, coords) pairs whose operands are being evaluated; `reads`
        # keeps the operand points a view computed, so its index math is
        # emitted once.
        stack: list[tuple[SSAValue, tuple[SSAValue, ...]]] = [key]
        reads: dict[tuple[SSAValue, tuple[SSAValue, ...]], list[tuple[SSAValue, tuple[SSAValue, ...]]]] = {}
        while stack:
            point = stack[-1]
            if self.kb.lookup(self._memo, point) is not None:
                stack.pop()
                continue
            if point not in reads:
                reads[point] = self._operand_points(*point)
            missing = [p for p in reads[point] if self.kb.lookup(self._memo, p) is None]
            if missing:
                stack.extend(reversed(missing))  # first operand first, as written
                continue
            stack.pop()
            v, c = point
            operands = [self.kb.lookup(self._memo, p) for p in reads[point]]
            self.kb.remember(self._memo, point, self._compute(v, list(c), operands))  # type: ignore[arg-type]
        result = self.kb.lookup(self._memo, key)
        assert result is not None
        return result

    def _producer(self, value: SSAValue) -> Operation | None:
        """The op of this kernel that `value` is computed by, or None for a
        value that is loaded (an input, or a view the builder reads through
        its strides)."""
        op = self.producers.get(value)
        if op is None or (value in self.kb.view_leaves and value in self.access):
            return None
        return op

    def _operand_points(self, value: SSAValue, coords: tuple[SSAValue, ...]) -> list[tuple[SSAValue, tuple[SSAValue, ...]]]:
        """The (value, coords) points `value` at `coords` is computed from:
        an elementwise op's operands at the same point, a view's operand
        where the view reads it. Pinned values, loads, literals and concats
        (whose pieces are evaluated in branches) need none beforehand."""
        if value in self.pinned:
            return []
        if value in self.aliases:
            return [(self.aliases[value], coords)]
        op = self._producer(value)
        if isinstance(op, ELEMENTWISE):
            return [(o, coords) for o in op.operands]
        if isinstance(op, VIEWS) and self.width == 1 and splat_of(value) is None:
            return [(op.operands[0], tuple(self.view_coords(op, list(coords))))]
        return []

    def _compute(self, value: SSAValue, coords: list[SSAValue], operands: list[SSAValue]) -> SSAValue:
        """`value` at `coords`, given its `_operand_points` evaluated."""
        kb = self.kb
        if value in self.pinned:
            return self.pinned[value](coords)
        if value in self.aliases:
            return operands[0]
        op = self._producer(value)
        if op is None:
            if value in self.access:
                return kb.load(self.access[value], coords, self.width)
            raise Decline(f"value {value.name_hint or value} is neither computed by the kernel nor one of its inputs")
        if isinstance(op, ELEMENTWISE):
            return apply_elementwise(kb, op, operands)
        if isinstance(op, (accy.ConstantOp, *VIEWS)) and (splat := splat_of(value)) is not None:
            return self._splat(splat, accy.elem_of(value))
        if isinstance(op, accy.ConstantOp):
            raise Decline("a non-splat constant must be a kernel input")
        if self.width != 1:
            raise Decline(f"{op.name} inside a vectorised kernel")
        if isinstance(op, accy.ConcatOp):
            return self._concat(op, coords)
        if isinstance(op, VIEWS):
            return operands[0]
        raise Decline(f"{op.name} cannot be computed elementwise")

    def _splat(self, value: int | float, element_type: Attribute) -> SSAValue:
        t = VectorType(element_type, [self.width]) if self.width > 1 else element_type
        return self.kb.const(value, t)

    def view_coords(self, op: Operation, coords: list[SSAValue]) -> list[SSAValue]:
        """The operand coordinates a view reads at result coordinates `coords`."""
        kb = self.kb
        src = accy.shape_of(op.operands[0])
        match op:
            case accy.TransposeOp():
                out = [kb.idx(0)] * len(src)
                for i, p in enumerate(op.permutation.get_values()):
                    out[p] = coords[i]
                return out
            case accy.BroadcastOp():
                return [kb.idx(0) if src[i] == 1 else coords[d] for i, d in enumerate(op.dims.get_values())]
            case accy.SliceOp():
                starts, steps = op.start.get_values(), op.stride.get_values()
                return [kb.add(kb.mul(x, s), a) for x, a, s in zip(coords, starts, steps, strict=False)]
            case accy.ReshapeOp():
                return kb.delinearize(kb.linearize(coords, accy.shape_of(op.result)), src)
        raise Decline(f"unknown view {op.name}")

    def _concat(self, op: accy.ConcatOp, coords: list[SSAValue]) -> SSAValue:
        kb = self.kb
        rank = len(coords)
        axis = op.axis.value.data % rank
        pieces: list[tuple[SSAValue, int]] = []
        lo = 0
        for x in op.xs:
            pieces.append((x, lo))
            lo += accy.shape_of(x)[axis]
        t = accy.elem_of(op.result)

        def piece(i: int) -> SSAValue:
            x, start = pieces[i]
            shifted = [*coords[:axis], kb.sub(coords[axis], start), *coords[axis + 1 :]]
            if i == len(pieces) - 1:
                return self.at(x, shifted)
            end = pieces[i + 1][1]
            return kb.if_(
                kb.lt(coords[axis], end),
                lambda: [self.at(x, shifted)],
                lambda: [piece(i + 1)],
                [t],
            )[0]

        return piece(0)


def simplify_kernel(func: gpu.FuncOp) -> None:
    """Tidies a built kernel in place: xDSL's canonicalization patterns with
    constant folding and dead-op removal (index math of merged dims, loops
    that run once, unused ids), loop-invariant code motion (what a loop body
    computes from values defined outside it moves before the loop), then
    common-subexpression elimination (an address or a value the builders
    computed per operand or per output, or that moved out of a loop, is
    computed once). The patterns only produce ops of the kernel IR
    conventions (`arith.constant`, `arith.xori`, inlined `scf` regions)."""
    applier = GreedyRewritePatternApplier([CanonicalizationRewritePattern()], ctx=shared_context(), folding_enabled=True)
    PatternRewriteWalker(applier, post_walk_func=region_dce).rewrite_region(func.body)
    PatternRewriteWalker(LoopInvariantCodeMotion(), apply_recursively=False, walk_regions_first=True).rewrite_region(
        func.body
    )
    cse(func)


class InvalidKernelError(Exception):
    """A kernel the compiler built is not valid SSA: a bug in a lowering or in
    the kernel tidying, never in the user's program."""


def check_dominance(func: gpu.FuncOp, stage: str = "") -> None:
    """Checks that every operand of every op of kernel `func` is defined
    before its use in the same block or in a block enclosing it (an op
    result), or is an argument of such a block. xDSL's verifier checks
    neither (a value of a loop body used after the loop verifies, and prints
    as OpenCL C that no compiler accepts). Kernel regions are single blocks,
    so this is all dominance means there.

    Raises `InvalidKernelError` naming the kernel, the op and the operand."""
    visible: set[SSAValue] = set()

    def walk(block: Block) -> None:
        scope = list(block.args)
        visible.update(scope)
        for op in block.ops:
            for i, operand in enumerate(op.operands):
                if operand not in visible:
                    raise InvalidKernelError(_dominance_message(func, stage, op, i, operand))
            for region in op.regions:
                for inner in region.blocks:
                    walk(inner)
            visible.update(op.results)
            scope.extend(op.results)
        visible.difference_update(scope)

    for block in func.body.blocks:
        walk(block)


def _dominance_message(func: gpu.FuncOp, stage: str, op: Operation, index: int, operand: SSAValue) -> str:
    """The error text: the use and the definition, named as in the printed
    kernel that follows it."""
    text = StringIO()
    printer = Printer(stream=text)
    printer.print_op(func)
    names = printer._ssa_values  # the names the kernel text above gives

    def name(v: SSAValue) -> str:
        return f"%{names[v]}" if v in names else "<unnamed>"

    def brief(o: Operation) -> str:
        results = ", ".join(name(r) for r in o.results)
        return f"{results} = {o.name}" if results else o.name

    if isinstance(operand, BlockArgument):
        parent = operand.block.parent_op()
        where = f"argument #{operand.index} of a block of {brief(parent) if parent else '?'}"
    else:
        assert isinstance(operand.owner, Operation)
        where = f"defined by {brief(operand.owner)}"
    return (
        f"internal error: kernel @{func.sym_name.data} is not valid SSA{f' {stage}' if stage else ''}: "
        f"operand #{index} ({name(operand)}) of {brief(op)} is {where}, which does not dominate the use "
        f"(defined later, or inside a region that does not enclose it):\n{text.getvalue()}"
    )


def launch_1d(total: int, profile: TargetProfile, local: int | None = None) -> tuple[tuple[int, int, int], tuple[int, int, int], int]:
    """Work-groups and work-group size covering `total` work-items in x
    (the kernel guards ids >= total). Returns (grid, block, padded total)."""
    total = max(total, 1)
    if local is None:
        local = 256 if profile.profile == "gpu" else 64
    local = max(1, min(local, profile.max_work_group_size, total))
    groups = -(-total // local)
    return (groups, 1, 1), (local, 1, 1), groups * local


def guarded(kb: KernelBuilder, gid: SSAValue, total: int, padded: int, body: Callable[[], None]) -> None:
    """Runs `body` only for ids below `total` (no guard when the launch is exact)."""
    if padded == total:
        body()
        return

    def then() -> list[SSAValue]:
        body()
        return []

    kb.if_(kb.lt(gid, total), then)


def anchored_kernel(
    kernel: OutlinedKernel, plan: BufferPlan, profile: TargetProfile, anchor_type: type[Anchor], what: str
) -> tuple[KernelBuilder, Anchor]:
    """The builder of a kernel built around one anchor op of `anchor_type`
    (a reduction's `accy.reduce`, say; `what` names it in declines), and
    that op. Declines unless there is exactly one anchor and every output
    has the anchor's result shape (the epilogue runs on its index space)."""
    anchors = [op for op in kernel.ops if isinstance(op, anchor_type)]
    if len(anchors) != 1:
        raise Decline(f"a {what} kernel needs exactly one {anchor_type.name}, got {len(anchors)}")
    anchor = anchors[0]
    shape = accy.shape_of(anchor.results[0])
    for out in kernel.outputs:
        if accy.shape_of(out) != shape:
            raise Decline(f"output {out.name_hint or out} does not have the {what}'s shape {list(shape)}")
    if read_elsewhere(kernel.outputs, kernel.ops, anchor.results[0]):
        raise Decline(f"the epilogue reads the {what}'s result at other coordinates than its own (through a view)")
    return KernelBuilder.for_kernel(kernel, plan, profile), anchor
