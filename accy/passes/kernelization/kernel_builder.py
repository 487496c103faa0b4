"""The kernel builder: one `gpu.func @<name> kernel` per lowered work item.

Its arguments are the kernel's buffers (flat 1-D memrefs, i1 stored as i8),
placed by the buffer plan; its body is built through xDSL's `Builder` at
an `InsertPoint` (before the return, or at the end of a region's block),
with helpers for index math, constants (hoisted to the top of the
kernel), `scf.for` / `scf.if` regions and loads/stores through a value's
`Access` (offset + strides: a view is index math, never a
copy). A lowering starts from `KernelBuilder.for_kernel` (or
`anchored_kernel`, for kinds built around one anchor op such as a
reduction) and ends with `KernelBuilder.lowered`, which checks the
kernel's SSA (`kernel_checks`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, TypeVar

from xdsl.builder import Builder
from xdsl.dialects import arith, gpu, memref, scf, vector
from xdsl.dialects.builtin import (
    BFloat16Type,
    DenseArrayBase,
    Float16Type,
    FloatAttr,
    FunctionType,
    IndexType,
    IntegerAttr,
    IntegerType,
    MemRefType,
    NoneAttr,
    StringAttr,
    VectorType,
    i8,
    i32,
)
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.rewriter import InsertPoint

from accy.dialects import accy
from accy.dialects.host import WORKGROUP, buffer_element_type
from accy.dialects.kernel import (
    ARGUMENT_ACCESS_BYTES,
    BUFFER_ALIGN_BYTES,
    aligned_access,
    compare_op,
    select_op,
    stream_store_op,
)
from accy.dialects.target import TargetProfile
from accy.dialects.types import element_bytes, is_row_major, numel
from accy.passes.analyses.bufferization import Buffer, BufferPlan
from accy.passes.analyses.outlining import OutlinedKernel
from accy.passes.analyses.reads import read_elsewhere
from accy.passes.kernel_ir.kernel_checks import check_dominance
from accy.passes.kernelization.lowered import Decline, LoweredKernel, Scratch

T = TypeVar("T")

#: Bytes of a float the profile's `vector_width` counts in (a vector of
#: `vector_width` floats is the load width the profile asks for).
_FLOAT_BYTES = 4
Anchor = TypeVar("Anchor", bound=Operation)



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


ELEMENTWISE = tuple(accy.ELEMENTWISE_OPS)
VIEWS = tuple(accy.VIEW_OPS)


@dataclass
class Access:
    """How a value is addressed: buffer argument, element offset, strides
    over the coordinates the kernel indexes it with."""

    arg: SSAValue
    offset: int
    strides: tuple[int, ...]
    element_type: Attribute


def vectors_aligned(acc: Access, width: int) -> bool:
    """Whether `width` consecutive elements of `acc` along its last
    coordinate, from a multiple of `width`, are contiguous and aligned to
    their size: unit last stride, every other stride and the offset whole
    vectors, and a vector's bytes dividing what an access of a buffer
    argument may claim (`ARGUMENT_ACCESS_BYTES`: an input read in place is
    aligned that far only)."""
    size = width * element_bytes(acc.element_type)
    return (
        bool(acc.strides) and acc.strides[-1] == 1 and ARGUMENT_ACCESS_BYTES % size == 0
        and all(s % width == 0 for s in (acc.offset, *acc.strides[:-1]))
    )  # fmt: skip


def half_lanes(profile: TargetProfile, element_types: Iterable[Attribute]) -> int:
    """Lanes a GPU work-item reads at a time from buffers of
    `element_types` when one of them holds 16-bit floats (f16, bf16): as
    many as fill the bytes of the profile's `vector_width` floats, at most
    `ARGUMENT_ACCESS_BYTES` (8 at `vector_width` 4: one 16-byte access,
    NVIDIA's widest); 1 when none does or the profile loads no vectors
    (`vector_width` 1).
    NVIDIA's compiler splits a `vloadN`, which may assume only its
    element's alignment, into N accesses: the lanes pay only as one
    aligned access (`KernelBuilder.load`'s `aligned`)."""
    if profile.vector_width == 1 or not any(isinstance(t, Float16Type | BFloat16Type) for t in element_types):
        return 1
    return min(ARGUMENT_ACCESS_BYTES, profile.vector_width * _FLOAT_BYTES) // 2


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

    @classmethod
    def standalone(cls, name: str, kind: str, profile: TargetProfile) -> KernelBuilder:
        """The builder of a kernel over no buffers yet (a hand-written kernel:
        `accy.kernel`); `argument` adds its buffers one by one."""
        return cls(name, kind, profile, None, [])  # type: ignore[arg-type]

    def __post_init__(self) -> None:
        self.arg_values: list[SSAValue | Scratch] = []
        types = self._arguments_from_plan() if self.plan is not None else []
        self.func = gpu.FuncOp(self.name, (types, []), kernel=True)
        self.func.attributes["accy.kind"] = StringAttr(self.kind)
        entry = self.func.body.block
        for v in self.values:
            ref = self.plan.refs[v]
            arg = entry.args[self._arg_of[ref.buffer]]
            self.access[v] = Access(arg, ref.offset, tuple(ref.strides), accy.elem_of(v))
        self._start()

    def _arguments_from_plan(self) -> list[Attribute]:
        """The kernel's argument types: one buffer per plan buffer that
        `values` live in (`self._arg_of`: plan buffer id -> argument)."""
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
        self._arg_of = arg_of
        return types

    def _start(self) -> None:
        """Sets up building: an empty body ending in `gpu.return`, the caches."""
        entry = self.func.body.block
        # Ops go before the kernel's return; regions move the insertion point
        # into their blocks and back (`_into`).
        returned = gpu.ReturnOp([])
        entry.add_op(returned)
        self.builder = Builder(InsertPoint.before(returned))
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
        return self.builder.insert(op)

    @property
    def block(self) -> Block:
        """The block ops are inserted into now."""
        return self.builder.insertion_point.block

    @contextmanager
    def _into(self, block: Block) -> Iterator[None]:
        """Inserts at the end of `block` (a region's body) until the with-block ends."""
        outer = self.builder.insertion_point
        self.builder.insertion_point = InsertPoint.at_end(block)
        try:
            yield
        finally:
            self.builder.insertion_point = outer

    def val(self, op: Operation) -> SSAValue:
        return self.op(op).results[0]

    def lowered(
        self, grid: tuple[int, int, int], block: tuple[int, int, int], states_block: bool = False
    ) -> LoweredKernel:
        """The finished kernel with its launch sizes; its SSA dominance is
        checked as built (the kernelize pass tidies it with
        `simplify_kernel`). A kernel whose result depends on its work-group
        size (local memory, barriers, local ids) `states_block`:
        `gpu.known_block_size`, which the runtime launches it with."""
        if states_block:
            self.func.known_block_size = DenseArrayBase.from_list(i32, block)
        check_dominance(self.func, "as the lowering built it")
        return LoweredKernel(self.func, grid, block, self.buffers, self.arg_values)

    def scratch_argument(self, scratch: Scratch) -> SSAValue:
        """A new last argument of the kernel: the flat buffer `scratch`."""
        t = MemRefType(buffer_element_type(scratch.element_type), [max(1, scratch.size)])
        self.arg_values.append(scratch)
        return self.argument(t)

    def argument(self, t: Attribute) -> SSAValue:
        """A new last argument of the kernel, of type `t` (a flat buffer)."""
        entry = self.func.body.block
        arg = entry.insert_arg(t, len(entry.args))
        self.func.function_type = FunctionType.from_lists([a.type for a in entry.args], [])
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
    # Folded as it is built, not left to `simplify_kernel`: xDSL 0.75's
    # canonicalization leaves `x % 1`, compares of two constants and selects
    # on them; `for_` needs known trip counts to inline loops that run once;
    # and the load cache and `address`'s delinearize shortcut know an index
    # by its SSA identity, which only folded index math keeps (tried without
    # the folder, with the missing patterns added and index ops hash-consed:
    # kernels still lost static addresses and reloaded vectors).

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
        with self._into(block):
            self.op(scf.YieldOp(*body(block.args[0], list(block.args[1:]))))
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
        for blk, fn in zip(blocks, (then, else_ or (lambda: [])), strict=False):
            with self._into(blk):
                self.op(scf.YieldOp(*fn()))
        return list(op.results)

    # -- memory --------------------------------------------------------------

    def load(self, acc: Access, coords: Sequence[SSAValue], width: int = 1, aligned: bool = False) -> SSAValue:
        """The value at `coords` (width > 1: W consecutive elements along the
        last coordinate), converted from storage (i8 -> i1). `aligned`: the
        caller knows the last coordinate is a multiple of W, so a contiguous
        vector at an offset and strides of whole vectors is aligned to its
        size (`aligned_access`, proved again by the bounds verifier)."""
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
            load = vector.LoadOp(acc.arg, [self.address(acc, coords)], VectorType(st, [width]))
            if aligned and vectors_aligned(acc, width):
                aligned_access(load, width * element_bytes(et))
            x = self.val(load)
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

    def streams(self, value: SSAValue, width: int) -> bool:
        """Whether the output `value` is worth streaming stores of `width`
        lanes (`store(..., stream=True)`), and may take them: the CPU
        profile, at least the target's `stream_bytes`, and a vector at a
        multiple of `width` along its contiguous last dim is aligned to its
        size (`BUFFER_ALIGN_BYTES`)."""
        acc = self.access[value]
        size = width * element_bytes(acc.element_type)
        return (
            self.profile.profile == "cpu" and width > 1 and accy.is_float(acc.element_type)
            and numel(accy.shape_of(value)) * element_bytes(acc.element_type) >= self.profile.stream_bytes
            and BUFFER_ALIGN_BYTES % size == 0 and bool(acc.strides) and acc.strides[-1] == 1
            and all(s % width == 0 for s in (acc.offset, *acc.strides[:-1]))
        )

    def store(
        self, acc: Access, coords: Sequence[SSAValue], x: SSAValue, width: int = 1, stream: bool = False,
        aligned: bool = False,
    ) -> None:
        """Stores `x` at `coords` (width > 1: W consecutive elements along the
        last coordinate). `stream`: a streaming store, for a vector whose
        address the caller knows to be aligned (`streams`). `aligned`: as
        `load`'s."""
        if accy.is_bool(acc.element_type):
            x = self.select(x, self.const(1, like_type(x.type, i8)), self.const(0, like_type(x.type, i8)))
        if width == 1:
            self.op(memref.StoreOp.get(x, acc.arg, [self.address(acc, coords)]))
        elif acc.strides[-1] == 1:
            at = [self.address(acc, coords)]
            if stream:
                self.op(stream_store_op(x, acc.arg, at))
                return
            store = vector.StoreOp(x, acc.arg, at)
            if aligned and vectors_aligned(acc, width):
                aligned_access(store, width * element_bytes(acc.element_type))
            self.op(store)
        else:
            for lane in range(width):
                lc = [*coords[:-1], self.add(coords[-1], lane)]
                s = self.val(vector.ExtractOp(x, [lane], buffer_element_type(acc.element_type)))
                self.op(memref.StoreOp.get(s, acc.arg, [self.address(acc, lc)]))

    def local_array(self, n: int, t: Attribute, workgroup: bool, alignment: int | None = None) -> SSAValue:
        """A static local (work-group shared) or private array of n elements,
        its start a multiple of `alignment` bytes where given."""
        space = WORKGROUP if workgroup else NoneAttr()
        return self.val(memref.AllocaOp.get(t, alignment=alignment, shape=[n], memory_space=space))


def _view_root(v: SSAValue) -> SSAValue:
    """The value a chain of views starts from."""
    while isinstance(v.owner, VIEWS):
        v = v.owner.operands[0]
    return v


def like_type(t: Attribute, element: Attribute) -> Attribute:
    """`element`, or a vector of it shaped like `t` when `t` is a vector."""
    return VectorType(element, t.get_shape()) if isinstance(t, VectorType) else element


def element_type_of(t: Attribute) -> Attribute:
    return t.element_type if isinstance(t, VectorType) else t


_FCMP = {"eq": "oeq", "ne": "une", "lt": "olt", "le": "ole", "gt": "ogt", "ge": "oge"}
_ICMP = {"eq": "eq", "ne": "ne", "lt": "slt", "le": "sle", "gt": "sgt", "ge": "sge"}
# i1 is the boolean type, ordered false < true as numpy orders bools; read
# as signed, its `true` is -1 and every ordering would be inverted.
_BOOL_CMP = {"eq": "eq", "ne": "ne", "lt": "ult", "le": "ule", "gt": "ugt", "ge": "uge"}


def cmp(kb: KernelBuilder, pred: str, a: SSAValue, b: SSAValue, integer: bool) -> SSAValue:
    """a <pred> b on scalars or lane-wise on vectors (numpy semantics: a NaN
    compares unequal to everything; i1 compares unsigned, false < true)."""
    if not integer:
        return kb.val(compare_op(a, b, _FCMP[pred]))
    et = element_type_of(a.type)
    is_bool = isinstance(et, IntegerType) and et.width.data == 1
    return kb.val(compare_op(a, b, (_BOOL_CMP if is_bool else _ICMP)[pred]))


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
