"""Evaluation of a kernel's tensor values at coordinates (`Expr`).

Kernel inputs are loaded through their layout; values produced by the
kernel's own elementwise / view / concat ops are computed from their
operands (views map the coordinates); a lowering may pin values (a
reduction's accumulator, a dot's tile) with `Expr.pin`. Every lowering's
prologue and epilogue goes through it, so each op of the contract has
exactly one implementation in kernel IR (`scalar_semantics`). It evaluates
with an explicit worklist, as every walk of use-def chains in the compiler
must: a fused chain is as long as the program. A splat literal (or a view
of one, such as the rank-0 literals the decompositions broadcast) is a
constant of the kernel, read from the literal's bytes.

An `Expr` has a width: 1 evaluates scalars, W > 1 evaluates `vector<WxT>`
of W consecutive elements along the last dimension (coordinates name the
first lane). Vector evaluation needs no views inside the kernel
(`vectorizable`); compares, selects, casts and i1 masks are lane-wise
through the `accy_kernel` ops.
"""

from __future__ import annotations

from collections.abc import Callable, Container, Iterable, Sequence
from typing import Any, TypeVar

import numpy as np
from xdsl.dialects import arith
from xdsl.dialects.builtin import (
    DenseIntOrFPElementsAttr,
    IndexType,
    IntegerType,
    VectorType,
)
from xdsl.ir import Attribute, Operation, SSAValue

from accy.dialects import accy
from accy.dialects.dense import splat_value, storage_format
from accy.passes.kernelization.kernel_builder import ELEMENTWISE, VIEWS, Access, KernelBuilder
from accy.passes.kernelization.lowered import Decline
from accy.passes.kernelization.scalar_semantics import apply_elementwise, cast

T = TypeVar("T")

#: Loads a value of an `Access` at coordinates, `width` lanes, `aligned`
#: (`KernelBuilder.load`'s arguments).
Loader = Callable[[Access, Sequence[SSAValue], int, bool], SSAValue]


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
        aligned: bool = False,
        load: Loader | None = None,
    ) -> None:
        self.kb = kb
        #: How inputs are loaded: `KernelBuilder.load`'s arguments (by default
        #: that very method; a lowering may hand out values it loaded itself).
        self.load: Loader = load if load is not None else kb.load
        self.width = width
        #: The caller evaluates only at a last coordinate that is a multiple
        #: of `width` (`KernelBuilder.load`'s `aligned`): the loads at that
        #: very coordinate may say so.
        self.aligned = aligned
        self._aligned_last: SSAValue | None = None
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

    def store(self, outputs: Sequence[SSAValue], coords: Sequence[SSAValue], stream: Container[SSAValue] = ()) -> None:
        """Stores each of `outputs`, evaluated at `coords` (`width` lanes),
        into its buffer: a lowering's epilogue. Those in `stream` by
        streaming stores (`KernelBuilder.streams`)."""
        for out in outputs:
            self.kb.store(self.access[out], coords, self.at(out, coords), self.width, stream=out in stream)

    def at(self, value: SSAValue, coords: Sequence[SSAValue]) -> SSAValue:
        """`value` at `coords`, computed once per block where it dominates.

        Evaluates with an explicit stack, operands first: a chain of
        thousands of elementwise ops or views is no deeper in Python than
        one op."""
        key = (value, tuple(coords))
        hit = self.kb.lookup(self._memo, key)
        if hit is not None:
            return hit
        outer = self._aligned_last
        if self.aligned and self.width > 1 and coords:
            self._aligned_last = coords[-1]
        try:
            return self._evaluate(key)
        finally:
            self._aligned_last = outer

    def _evaluate(self, key: tuple[SSAValue, tuple[SSAValue, ...]]) -> SSAValue:
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
        if isinstance(op, accy.GatherOp) and self.width == 1 and accy.shape_of(op.x)[op.norm_axis()] > 1:
            axis, rank = op.norm_axis(), len(accy.shape_of(op.indices))
            return [(op.indices, coords[axis : axis + rank])]
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
                aligned = self._aligned_last is not None and coords[-1] is self._aligned_last
                return self.load(self.access[value], coords, self.width, aligned)
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
        if isinstance(op, accy.GatherOp):
            return self._gather(op, coords, operands)
        if isinstance(op, accy.IotaOp):
            return self._iota(op, coords)
        if isinstance(op, accy.PadOp):
            return self._pad(op, coords)
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

    def gather_position(self, op: accy.GatherOp, index: SSAValue) -> SSAValue:
        """Where `op` reads along its axis for the loaded `index` (i32 or
        i64): an index below 0 counts from the end, and the result is then
        clamped into [0, d - 1] with an explicit `minsi` / `maxsi`, so the
        bounds proof (passes/kernel_ir/bounds.py) sees the read inside `x`
        whatever the index holds (docs/op-contract.md, `accy.gather`)."""
        kb = self.kb
        d = accy.shape_of(op.x)[op.norm_axis()]
        i = kb.val(arith.IndexCastOp(index, IndexType()))
        wrapped = kb.select(kb.lt(i, 0), kb.add(i, d), i)
        return kb.val(arith.MaxSIOp(kb.val(arith.MinSIOp(wrapped, kb.idx(d - 1))), kb.idx(0)))

    def _gather(self, op: accy.GatherOp, coords: list[SSAValue], operands: list[SSAValue]) -> SSAValue:
        """x at the coordinates `op` reads for result `coords`: the index
        loaded (evaluated) at the coordinates of `indices` in the result,
        made a position by `gather_position` (an axis of one element is read
        at 0 without loading an index)."""
        axis, rank = op.norm_axis(), len(accy.shape_of(op.indices))
        position = self.gather_position(op, operands[0]) if operands else self.kb.idx(0)
        return self.at(op.x, [*coords[:axis], position, *coords[axis + rank :]])

    def clamp(self, i: SSAValue, hi: int) -> SSAValue:
        """i clamped into [0, hi] by an explicit `minsi` / `maxsi` (what the
        bounds proof, passes/kernel_ir/bounds.py, reads a read's range from)."""
        kb = self.kb
        return kb.val(arith.MaxSIOp(kb.val(arith.MinSIOp(i, kb.idx(hi))), kb.idx(0)))

    def pad_position(self, mode: str, j: SSAValue, low: int, kept: int) -> SSAValue:
        """Where `accy.pad` in `mode` reads a dim of `kept` elements for
        position `j` (= result coordinate - low, so j >= -low) relative to
        the kept elements: clamped (edge and constant, whose padding the
        caller selects away), mirrored with period 2·(kept - 1) (reflect), or
        modulo kept (wrap); made non-negative by a multiple of the period
        before `remsi`, and clamped into [0, kept - 1] at the end."""
        kb = self.kb
        period = {"reflect": 2 * (kept - 1), "wrap": kept}.get(mode, 0)
        if period == 0:
            return self.clamp(j, kept - 1)
        m = kb.rem(kb.add(j, -(-low // period) * period), period)
        if mode == "reflect":
            m = kb.select(kb.lt(m, kept), m, kb.sub(period, m))
        return self.clamp(m, kept - 1)

    def _pad(self, op: accy.PadOp, coords: list[SSAValue]) -> SSAValue:
        """x at the position `pad_position` gives in every padded dim; in
        mode constant, `value` where a coordinate falls outside the kept
        elements (an `arith.select`, so the read stays in bounds), and
        `value` alone when a dim keeps nothing."""
        kb = self.kb
        mode = op.mode.data
        where: list[SSAValue] = []
        inside: SSAValue | None = None
        for d, (n, lo, hi) in enumerate(zip(accy.shape_of(op.x), op.low.get_values(), op.high.get_values(), strict=True)):
            start, kept, low, _ = accy.pad_extent(n, lo, hi)
            if kept == 0:
                return self.at(op.value, [])
            if (lo, hi) == (0, 0):
                where.append(coords[d])
                continue
            j = kb.sub(coords[d], low)
            where.append(kb.add(self.pad_position(mode, j, low, kept), start))
            if mode == "constant" and (low > 0 or hi > 0):
                ok = kb.val(arith.AndIOp(kb.lt(-1, j), kb.lt(j, kept)))
                inside = ok if inside is None else kb.val(arith.AndIOp(inside, ok))
        x = self.at(op.x, where)
        return x if inside is None else kb.select(inside, x, self.at(op.value, []))

    def _iota(self, op: accy.IotaOp, coords: list[SSAValue]) -> SSAValue:
        """The coordinate along `dimension`, converted as `accy.cast` from
        i32 (i64 past 2^31 elements) converts."""
        n = accy.shape_of(op.result)[op.norm_dimension()]
        src = IntegerType(32 if n <= 2**31 else 64)
        i = self.kb.val(arith.IndexCastOp(coords[op.norm_dimension()], src))
        return cast(self.kb, i, src, accy.elem_of(op.result))

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
