"""Lowering of row_pipeline work items: softmax, log_softmax, layer_norm
(named or written with primitives) and any other pipeline of innermost
reductions over rows R x row length N, with its elementwise prologue and
epilogue.

Named row ops are first expanded into their primitive form (the decompose
pass's `decompose`), so both forms take one path. The item's values then live
on three domains: [*R, N] (computed per element), R or [*R, 1] (one scalar per
row) and, for prologues, whatever their views read. Reductions are ordered by
level: a reduction's level is one more than the highest level of the
reductions its operand depends on. Each level is one pass over the row that
accumulates all of its reductions; a last pass computes and stores the
outputs. Elementwise work between reductions is recomputed from the inputs in
every pass that needs it; row scalars (a reduction's total and what is
computed from totals alone) are computed once per row, between passes.

CPU profile: one work-item per row; each pass walks the row W lanes at a time
(`vector.load`, `vector<WxT>` accumulators, `vector.reduction`) with a scalar
tail. A pass whose values cannot be computed W lanes at a time (casts,
compares, views computed inside the kernel) walks the row one element at a
time. No barriers. When an output is computed from the operand of a
last-level reduction and that operand costs library math (softmax's
exp(x - max)), the reduction's pass stores the operand into the output's row
and the write pass reads it back from there (`_stash`): exp once per
element, not twice, and the row is still in the cache, where the write
pass's plain stores find it (no streaming stores: docs/kernel-notes.md).

GPU profile: one work-group per row; in every pass each work-item takes a
strided share of the row, and the shares are combined by a tree in local
memory (`work_group_combine`) whose total every work-item reads. A share
of at most `GPU_ROW_REGISTERS` elements (a row of 4096 over 256
work-items) is held in registers: the row is read from memory once, not
once a pass. Where a buffer holds 16-bit floats and every work-item's
share is whole vectors of `half_lanes` (8) elements, the share is vectors
(vector k at column (tid + threads·k)·8), each read, and the full outputs
written, as one aligned 16-byte access (`_held_lanes`); element by element
otherwise, and for f32 (W = 4 lanes were slower there).

Short rows (`row_segments`: at most `GPU_ROW_REGISTERS` elements a
work-item over `row_segment` work-items, 512 by default) are several to a
work-group: a segment of `row_segment` work-items a row (a warp, as torch's
softmax), up to `row_threads` work-items in all, each segment's shares
combined apart (`work_group_tree`'s `segment`), every share held in
registers. A row that is not whole steps of its segment ends in a partial
step: its work-items past the row read the row's last element, combine the
identity and store nothing. A last work-group with fewer rows than
segments runs the last row in the segments past it, which reach every
barrier and store nothing. (One row of one work-item combines nothing.)
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from xdsl.dialects import arith, memref, vector
from xdsl.dialects.builtin import VectorType
from xdsl.ir import Operation, SSAValue

from accy.dialects import accy
from accy.dialects.host import buffer_element_type
from accy.dialects.target import TargetProfile
from accy.dialects.types import element_bytes, numel
from accy.passes.analyses.bufferization import BufferPlan
from accy.passes.analyses.outlining import OutlinedKernel
from accy.passes.analyses.reads import COL, ZERO, on_own_row, reads_of, row_coords
from accy.passes.kernelization.combining import (
    combine,
    identity,
    pow2_at_most,
    segment_start,
    vector_total,
    work_group_combine,
    work_group_size,
    work_group_tree,
)
from accy.passes.kernelization.evaluate import Expr, Loader, postorder
from accy.passes.kernelization.kernel_builder import (
    ELEMENTWISE,
    VIEWS,
    Access,
    KernelBuilder,
    half_lanes,
    vectors_aligned,
)
from accy.passes.kernelization.launch import work_group_per, work_item_per
from accy.passes.kernelization.lowered import Decline, LoweredKernel
from accy.passes.kernelization.row_values import broadcast_accesses, expanded, pin_aliases, varying_dims, walk_cone

T = TypeVar("T")

#: Elements of a GPU work-item's share of a row held in registers across
#: passes (H200, softmax and layer norm rows of 4096: one read of the row
#: instead of three).
GPU_ROW_REGISTERS = 16
#: Elements a work-item of a short row's segment takes at least, where the
#: row allows: fewer, wider segments would each hold fewer (H200, softmax
#: 65536 x 128: 32 work-items of 4 elements a row 0.025 ms, 16 of 8 0.020
#: ms, 8 of 16 0.022 ms; torch 0.021).
SEGMENT_SHARE = 8

#: Ops a backend computes by a polynomial or a library call, tens of
#: instructions a lane: a per-element value computed from one of them is
#: worth storing once rather than computing in two passes (`_stash`).
LIBRARY_MATH = (accy.ExpOp, accy.LogOp, accy.TanhOp, accy.SigmoidOp, accy.GeluOp, accy.SinOp, accy.CosOp,
                accy.ErfOp, accy.PowOp)


def lower_row_pipeline(kernel: OutlinedKernel, plan: BufferPlan, profile: TargetProfile) -> LoweredKernel:
    """A row-pipeline kernel over the rows the schedule found (`rows`, `row_length`)."""
    if kernel.facts is None:
        raise Decline("the schedule found no rows for this row pipeline")
    facts = kernel.facts
    kb = KernelBuilder.for_kernel(kernel, plan, profile)
    with expanded(kernel.ops) as (ops, aliases):
        rp = RowPipeline(kb, ops, aliases, facts.rows, facts.row_length, kernel.outputs, facts.axis)
        # No row: one work-item per row launches none (a GPU grid keeps one
        # work-group, which would read a row of none).
        gpu = profile.profile == "gpu" and numel(facts.rows) > 0
        return rp.work_group_per_row() if gpu else rp.work_item_per_row()


# --------------------------------------------------------------------------
# The pipeline
# --------------------------------------------------------------------------


class RowPipeline:
    """The reductions, levels and row scalars of one row pipeline, and the
    kernels that compute it (see the module docstring)."""

    def __init__(
        self, kb: KernelBuilder, ops: list[Operation], aliases: dict[SSAValue, SSAValue],
        rows: tuple[int, ...], n: int, outputs: Sequence[SSAValue], axis: int | None = None,
    ) -> None:
        self.kb, self.ops, self.aliases, self.rows, self.n = kb, ops, aliases, rows, n
        # The row runs along `axis` of the values on the rows (the last dim, but
        # for a named softmax or log_softmax along another axis).
        self.axis = len(rows) if axis is None else axis
        self.full = tuple(self.at_c(rows, n))
        self.row_by_one = tuple(self.at_c(rows, 1))
        self.outputs = list(outputs)
        for out in self.outputs:
            self.domain(out)  # declines outputs on other shapes
        self.producer = {r: op for op in ops for r in op.results}
        for op in ops:
            if not isinstance(op, (*ELEMENTWISE, *VIEWS, accy.ReduceOp, accy.ConstantOp)):
                raise Decline(f"{op.name} inside a row pipeline")
        self.reduces = [op for op in ops if isinstance(op, accy.ReduceOp)]
        for red in self.reduces:
            shape = accy.shape_of(red.x)
            if shape != self.full or red.norm_axes() != (self.axis,):
                raise Decline(f"a reduction over {list(shape)} axes {list(red.norm_axes())} is not along the rows")
        self.levels = self._levels()
        self.inputs = broadcast_accesses(kb, ops)
        self.totals: dict[SSAValue, SSAValue] = {}
        self.scalars: dict[SSAValue, SSAValue] = {}
        self.splats: dict[tuple[Any, ...], SSAValue] = {}
        self.invariant = self._invariant()
        self._check_row_reads()

    # -- structure -------------------------------------------------------------

    def _reduce_deps(self, v: SSAValue, memo: dict[SSAValue, frozenset[Operation]]) -> frozenset[Operation]:
        """The reductions `v` is computed from (a named op's result: those of
        its decomposition, so a reduction of a log_softmax comes after the
        log_softmax's own)."""

        def operands(x: SSAValue) -> Sequence[SSAValue]:
            if x in self.aliases:
                return (self.aliases[x],)
            op = self.producer.get(x)
            return op.operands if op is not None else ()

        # Operands first, without recursing (chains are as long as the program).
        for x in postorder([v], operands, memo):
            op = self.producer.get(x)
            deps: frozenset[Operation] = memo[self.aliases[x]] if x in self.aliases else frozenset()
            if op is not None:
                if isinstance(op, accy.ReduceOp):
                    deps = frozenset({op})
                deps = deps.union(*(memo[o] for o in op.operands))
            memo[x] = deps
        return memo[v]

    def _levels(self) -> list[list[accy.ReduceOp]]:
        memo: dict[SSAValue, frozenset[Operation]] = {}
        level: dict[Operation, int] = {}
        for red in self.reduces:  # program order: operands first
            level[red] = 1 + max((level[d] for d in self._reduce_deps(red.x, memo)), default=0)
        self.deps = memo
        return [[r for r in self.reduces if level[r] == k] for k in range(1, max(level.values(), default=0) + 1)]

    def _invariant(self) -> set[SSAValue]:
        """Values that are one scalar per row, computed once per row:
        reductions, and broadcasts (and elementwise work or views on such
        values) whose value does not change along the row (`on_row`). A
        broadcast is one only if none of its operand's dims of size > 1
        lands on the row dim: an identity broadcast [N] -> [N] (layer_norm's
        gamma of a rank-1 x) is not. A constant operand keeps a value on the
        row only if it is itself constant along the row (a splat)."""
        inv: set[SSAValue] = set()
        varying: dict[SSAValue, frozenset[int]] = {}
        for op in self.ops:
            if isinstance(op, accy.ReduceOp) or (
                (isinstance(op, accy.BroadcastOp) or (
                    isinstance(op, (*ELEMENTWISE, *VIEWS)) and any(o in inv for o in op.operands)))
                and self.on_row(op.results[0], varying)
            ):
                inv.update(op.results)
        return inv

    def _check_row_reads(self) -> None:
        """Row scalars are computed once per row and handed out wherever they
        are read, so each must be read only at its own row. A per-row value
        that comes back onto the rows along another dim (a row total
        broadcast onto the column index, a transposed row-invariant input)
        is not one: an input-only value is then computed per element
        instead; a value of a reduction cannot be, and the kernel declines.
        (The schedule never fuses such a read; this is the lowering's own
        guard.)"""
        r = len(self.rows)
        full = tuple(self.at_c(row_coords(r), COL))
        at_zero = tuple(self.at_c(row_coords(r), ZERO))
        reduced = {red.result for red in self.reduces}
        while True:
            # Per element (reduction operands, full outputs), every row scalar is pinned.
            roots = [(red.x, full) for red in self.reduces]
            roots += [(o, full) for o in self.outputs if accy.shape_of(o) == self.full]
            bad = [v for v, cs in reads_of(roots, self.producer, self.aliases, self.invariant).items()
                   if not all(on_own_row(c, self.rows, self.axis) for c in cs)]
            # Row scalars themselves are computed with only the totals pinned.
            scalars = [(v, at_zero if len(accy.shape_of(v)) > r else row_coords(r))
                       for v in [*(self.invariant - reduced), *self.outputs] if self.on_row(v, {})]
            bad += [v for v, cs in reads_of(scalars, self.producer, self.aliases, reduced).items()
                    if not all(on_own_row(c, self.rows, self.axis) for c in cs)]
            if not bad:
                return
            for v in bad:
                if v in reduced or self._reduce_deps(v, self.deps):
                    raise Decline(f"a row value ({v.name_hint or v}) is read at another row than its own")
                self.invariant.discard(v)

    def on_row(self, v: SSAValue, memo: dict[SSAValue, frozenset[int]]) -> bool:
        """Whether `v` is one scalar per row: a row value (R or [*R, 1]), or a
        [*R, N] value that does not vary along the row dim."""
        shape = accy.shape_of(v)
        if shape in (self.rows, self.row_by_one):
            return True
        return shape == self.full and self.axis not in varying_dims(v, self.producer, self.aliases, memo)

    def domain(self, v: SSAValue) -> str:
        """"full" for [*R, N], "row" for R or [*R, 1]; declines other shapes."""
        shape = accy.shape_of(v)
        if shape == self.full:
            return "full"
        if shape in (self.rows, self.row_by_one):
            return "row"
        raise Decline(f"value of shape {list(shape)} is on neither the rows {list(self.rows)} nor [*rows, {self.n}]")

    def coords(self, v: SSAValue, row: list[SSAValue], c: SSAValue) -> list[SSAValue]:
        """Coordinates of `v` at row `row`, element `c` (ignored for row values)."""
        return list(row) if accy.shape_of(v) == self.rows else self.at_c(row, c)

    def at_c(self, row: Sequence[T], c: T) -> list[T]:
        """Row indices `row` with `c` put in at the row's axis: coordinates
        (or sizes) of a value on the rows."""
        return [*row[: self.axis], c, *row[self.axis :]]

    def _cone(self, values: Sequence[SSAValue]) -> tuple[list[SSAValue], bool]:
        """The row scalars that computing `values` per element needs, and
        whether those per-element values can be computed W lanes at a time."""
        return walk_cone(self.kb, self.producer, self.aliases, values, self.invariant, set(self.inputs))

    # -- evaluation ------------------------------------------------------------

    def expr(self, width: int, load: Loader | None = None) -> Expr:
        """An evaluator for per-element values: inputs through their
        accesses (by `load`, `KernelBuilder.load` by default), row scalars
        computed (pinned), named results aliased."""
        kb = self.kb
        loader = load if load is not None else kb.load
        e = Expr(kb, self.ops, width, load=loader)
        for v, acc in self.inputs.items():
            e.pin(v, lambda coords, acc=acc: loader(acc, coords, width, False))
        self.pin_scalars(e, width)
        pin_aliases(e, self.aliases)
        return e

    def pin_scalars(self, e: Expr, width: int) -> None:
        """The row scalars computed so far, pinned in `e`."""
        for v, s in self.scalars.items():
            e.pin(v, lambda _, v=v, s=s: s if width == 1 else self._splat(v, s, width))

    def _splat(self, v: SSAValue, s: SSAValue, width: int) -> SSAValue:
        # Reused only where it dominates (one made inside a sweep's loop is no value after it).
        hit = self.kb.lookup(self.splats, (v, width))
        if hit is None:
            hit = self.kb.remember(self.splats, (v, width), self.kb.val(vector.BroadcastOp(s, VectorType(s.type, [width]))))
        return hit

    def compute_scalars(self, row: list[SSAValue], values: Sequence[SSAValue], width: int) -> None:
        """Computes (once per row, where it dominates every later pass) the
        row scalars in `values`, and their vector splats for `width`."""
        kb = self.kb
        e = Expr(kb, self.ops)
        for v in self.reduces:
            if v.result in self.totals:
                e.pin(v.result, lambda _, t=self.totals[v.result]: t)
        for v, acc in self.inputs.items():
            e.pin(v, lambda coords, acc=acc: kb.load(acc, coords))
        pin_aliases(e, self.aliases)
        for v in values:
            if v not in self.scalars:
                self.scalars[v] = e.at(v, self.coords(v, row, kb.idx(0)))
            if width > 1:
                self._splat(v, self.scalars[v], width)

    def finish_level(self, reds: Sequence[accy.ReduceOp], totals: Sequence[SSAValue]) -> None:
        for red, total in zip(reds, totals, strict=True):
            if red.kind.data == "mean":
                total = self.kb.val(arith.DivfOp(total, self.kb.const(float(self.n), total.type)))
            self.totals[red.result] = total

    def store_row_outputs(self, outputs: Sequence[SSAValue], row: list[SSAValue]) -> None:
        kb = self.kb
        for out in outputs:
            if self.domain(out) == "row":
                self.compute_scalars(row, [out], 1)
                kb.store(kb.access[out], self.coords(out, row, kb.idx(0)), self.scalars[out])

    # -- CPU: one work-item per row ----------------------------------------------

    def _sweep(
        self, width: int, inits: Sequence[SSAValue], tail_inits: Sequence[SSAValue],
        body: Callable[[SSAValue, int, list[SSAValue]], list[SSAValue]],
    ) -> tuple[list[SSAValue], list[SSAValue]]:
        """The row W lanes at a time (carrying `inits`), then a scalar tail
        (carrying `tail_inits`); `body(c, width, carried)`."""
        kb = self.kb
        end = self.n - self.n % width if width > 1 else 0
        vec = kb.for_(0, end, width, inits, lambda c, a: body(c, width, a)) if width > 1 else list(inits)
        tail = kb.for_(end, self.n, 1, tail_inits, lambda c, a: body(c, 1, a))
        return vec, tail

    def work_item_per_row(self) -> LoweredKernel:
        kb = self.kb
        total = numel(self.rows)
        stash = self._stash()

        def body(gid: SSAValue) -> None:
            row = kb.delinearize(gid, self.rows)
            for reds in self.levels:
                width = self._width([r.x for r in reds], all(accy.is_float(accy.elem_of(r.x)) for r in reds))
                self._prepare(row, [r.x for r in reds], width)

                def step(c: SSAValue, w: int, acc: list[SSAValue], reds: list[accy.ReduceOp] = reds) -> list[SSAValue]:
                    e = self.expr(w)
                    at = self.at_c(row, c)
                    if stash is not None and stash[0] in (r.x for r in reds):
                        kb.store(kb.access[stash[1]], at, e.at(stash[0], at), w)
                    return [combine(kb, r.kind.data, a, e.at(r.x, at)) for r, a in zip(reds, acc, strict=True)]

                ets = [accy.elem_of(r.x) for r in reds]
                inits = [kb.const(identity(r.kind.data, t), VectorType(t, [width])) for r, t in zip(reds, ets, strict=True)]
                tails = [kb.const(identity(r.kind.data, t), t) for r, t in zip(reds, ets, strict=True)]
                vec, tail = self._sweep(width, inits if width > 1 else [], tails, step)
                if width > 1:
                    tail = [combine(kb, r.kind.data, vector_total(kb, r.kind.data, v), s)
                            for r, v, s in zip(reds, vec, tail, strict=True)]
                self.finish_level(reds, tail)
            full = [o for o in self.outputs if self.domain(o) == "full"]
            if full:
                width = self._width(full, True)
                self._prepare(row, full, width)

                def write(c: SSAValue, w: int, _: list[SSAValue]) -> list[SSAValue]:
                    e = self.expr(w)
                    if stash is not None:
                        e.pin(stash[0], lambda at, w=w: kb.load(kb.access[stash[1]], at, w))
                    # Plain stores, never streaming ones: the stash's lines are
                    # in the cache, dirty, and a streaming store must write each
                    # back around it. Softmax 4096² so took 1.6-1.7x the time on
                    # an Intel Xeon, 1.12-1.15x on an AMD EPYC (1-4% less on a
                    # Zen 5); layer norm's output, first written here, 7-12% more.
                    e.store(full, self.at_c(row, c))
                    return []

                self._sweep(width, [], [], write)
            self.store_row_outputs(self.outputs, row)

        return work_item_per(kb, total, body)

    def _stash(self) -> tuple[SSAValue, SSAValue] | None:
        """A last-level reduction's operand worth keeping for the write pass,
        and the full output whose row keeps it (None when there is none).

        The reduction's pass stores the operand into that output's row, and
        the write pass loads it back instead of computing it again. Each
        element is loaded before the write pass stores over it (an `Expr`
        computes a value once per element), so overwriting in place is safe
        as long as every output reads the operand at its own coordinates:
        through elementwise ops only, no view between (a view could read an
        element the write pass already overwrote). Only for an operand that
        costs library math (reading the input again is as cheap otherwise),
        of the output's element type, into a buffer that is none of the
        kernel's inputs (a later pass may still read those)."""
        if not self.levels:
            return None
        kb = self.kb
        full = [o for o in self.outputs if self.domain(o) == "full"]
        read = {kb.access[v].arg for v in kb.values if v not in self.outputs}
        for red in self.levels[-1]:
            v = red.x
            if not self._library_math(v):
                continue
            reach = {o: self._reads_of(o, v) for o in full}
            if "moved" in reach.values():
                continue
            for out in full:
                if reach[out] == "same" and accy.elem_of(out) == accy.elem_of(v) and kb.access[out].arg not in read:
                    return v, out
        return None

    def _reads_of(self, out: SSAValue, v: SSAValue) -> str | None:
        """How computing `out` per element reads `v`: "same" (at its own
        coordinates, through elementwise ops only), "moved" (through a view
        somewhere) or None (not at all). Row scalars, inputs and loaded
        views end the walk."""
        how: str | None = None
        seen: set[tuple[SSAValue, bool]] = set()
        stack = [(out, False)]
        while stack:
            x, moved = stack.pop()
            if (x, moved) in seen or x in self.invariant or x in self.inputs or x in self.kb.view_leaves:
                continue
            seen.add((x, moved))
            if x == v:
                if moved:
                    return "moved"
                how = "same"
            elif x in self.aliases:
                stack.append((self.aliases[x], moved))
            elif (op := self.producer.get(x)) is not None:
                stack.extend((o, moved or not isinstance(op, ELEMENTWISE)) for o in op.operands)
        return how

    def _library_math(self, v: SSAValue) -> bool:
        """Whether computing `v` per element takes a `LIBRARY_MATH` op (row
        scalars, computed once per row, do not count)."""
        seen: set[SSAValue] = set()
        stack = [v]
        while stack:
            x = stack.pop()
            if x in seen or x in self.invariant or x in self.inputs:
                continue
            seen.add(x)
            if x in self.aliases:
                stack.append(self.aliases[x])
            elif (op := self.producer.get(x)) is not None:
                if isinstance(op, LIBRARY_MATH):
                    return True
                stack.extend(op.operands)
        return False

    def _width(self, values: Sequence[SSAValue], float_only: bool) -> int:
        w = self.kb.profile.vector_width
        _, ok = self._cone(values)
        # W lanes run along the last dim: a row along another axis is walked an element at a time.
        along_last = self.axis == len(self.rows)
        return w if w > 1 and ok and float_only and along_last and self.n >= w else 1

    def _prepare(self, row: list[SSAValue], values: Sequence[SSAValue], width: int) -> None:
        needed, _ = self._cone(values)
        self.compute_scalars(row, needed, width)

    # -- GPU: a work-group (or a segment of one) per row ---------------------------

    def row_segments(self) -> tuple[int, int]:
        """(T, P): work-items that share a row, and rows a work-group. A
        short row, of at most `GPU_ROW_REGISTERS` elements a work-item over
        T = `row_segment` work-items (a warp: 512 elements by default), takes
        one segment of T (fewer where each would take under `SEGMENT_SHARE`
        elements: 16 for a row of 128), and P segments (a power of two, at most
        `row_threads` work-items in all and at most the rows) make a
        work-group; a longer row takes the whole work-group of `row_threads`
        (P = 1)."""
        profile, rows = self.kb.profile, numel(self.rows)
        group = work_group_size(self.n, profile.row_threads, profile)
        segment = work_group_size(-(-self.n // SEGMENT_SHARE), min(profile.row_segment, profile.row_threads), profile)
        if -(-self.n // segment) > GPU_ROW_REGISTERS:
            return group, 1
        cap = work_group_size(profile.row_threads, profile.row_threads, profile)
        return segment, pow2_at_most(min(max(cap // segment, 1), rows))

    def work_group_per_row(self) -> LoweredKernel:
        kb = self.kb
        threads, per_group = self.row_segments()
        size = threads * per_group
        scratch_bytes = size * sum(element_bytes(accy.elem_of(r.x)) for r in self.reduces)
        if scratch_bytes > kb.profile.local_mem_bytes:
            raise Decline(f"{scratch_bytes} bytes of local memory for the row totals exceed the device's")
        # A row of one work-item needs no tree: its share is the total.
        scratch = {r: kb.local_array(size, buffer_element_type(accy.elem_of(r.x)), workgroup=True)
                   for r in self.reduces} if threads > 1 else {}

        full = [o for o in self.outputs if self.domain(o) == "full"]
        # A short row's share stays in registers: each element's values are
        # computed once (its evaluator's memo) for every pass, and the row is
        # read once. Element by element: on the H200, W = 4 lanes a load took
        # softmax rows of 4096 from 0.152 to 0.200 ms. A row of segments
        # (short) may end in a partial step: its work-items past the row read
        # the row's last element, combine the identity and store nothing.
        steps = -(-self.n // threads)
        # A row that takes the whole work-group of `row_threads` (as every
        # row did before segments, whose kernels stay as they were) holds its
        # share only when it is whole steps; a row of a segment always does.
        whole_group = (threads, per_group) == (work_group_size(self.n, kb.profile.row_threads, kb.profile), 1)
        held = steps <= GPU_ROW_REGISTERS and (not whole_group or self.n % threads == 0)
        assert held or per_group == 1, "segments past the last row store nothing only when held"
        lanes = self._held_lanes(threads) if held else 1
        vectors: dict[tuple[Any, ...], SSAValue] = {}
        rows = numel(self.rows)

        def body(group: SSAValue, flat: SSAValue) -> None:
            if per_group == 1:
                unit, tid, real = group, flat, None
            else:
                # Segments past the last row compute the last row again and
                # store nothing: every work-item reaches every barrier.
                wanted = kb.add(kb.mul(group, per_group), kb.div(flat, threads))
                unit, tid, real = kb.min(wanted, rows - 1), kb.rem(flat, threads), kb.lt(wanted, rows)
            row = kb.delinearize(unit, self.rows)
            if lanes > 1:
                # Vector k of the share starts at column (tid + threads * k) * lanes.
                starts = [kb.mul(kb.add(tid, threads * k), lanes) for k in range(steps // lanes)]
                cols = [kb.add(start, j) for start in starts for j in range(lanes)]
                exprs = [self.expr(1, self._lane_load(c, starts[i // lanes], i % lanes, lanes, vectors))
                         for i, c in enumerate(cols)]
            else:
                starts = []
                cols = [kb.add(tid, threads * k) for k in range(steps)] if held else []
                exprs = [self.expr(1) for _ in cols]
            # Within the row: the column, and whether it is one (None: always).
            inside = [(c, None) if lanes > 1 or threads * (k + 1) <= self.n else (kb.min(c, self.n - 1), kb.lt(c, self.n))
                      for k, c in enumerate(cols)]
            for reds in self.levels:
                self._prepare(row, [r.x for r in reds], 1)
                ets = [accy.elem_of(r.x) for r in reds]
                inits = [kb.const(identity(r.kind.data, t), t) for r, t in zip(reds, ets, strict=True)]

                def step(
                    c: SSAValue, acc: list[SSAValue], e: Expr | None = None, valid: SSAValue | None = None,
                    reds: list[accy.ReduceOp] = reds,
                ) -> list[SSAValue]:
                    e = e or self.expr(1)
                    out = []
                    for r, a in zip(reds, acc, strict=True):
                        x = e.at(r.x, self.at_c(row, c))
                        if valid is not None:
                            x = kb.select(valid, x, kb.const(identity(r.kind.data, x.type), x.type))
                        out.append(combine(kb, r.kind.data, a, x))
                    return out

                if held:
                    shares = inits
                    for (c, valid), e in zip(inside, exprs, strict=True):
                        self.pin_scalars(e, 1)
                        shares = step(c, shares, e, valid)
                else:
                    shares = kb.for_(tid, self.n, threads, inits, step)
                totals = [self._row_total(r.kind.data, s, scratch.get(r), flat, threads, size)
                          for r, s in zip(reds, shares, strict=True)]
                self.finish_level(reds, totals)
            if full:
                self._prepare(row, full, 1)

                def write_held() -> None:
                    if lanes == 1:
                        for (c, valid), e in zip(inside, exprs, strict=True):
                            self.pin_scalars(e, 1)
                            guarded_by(kb, [valid], lambda c=c, e=e: e.store(full, self.at_c(row, c)))
                        return
                    for e in exprs:
                        self.pin_scalars(e, 1)
                    for k, start in enumerate(starts):
                        one = slice(k * lanes, (k + 1) * lanes)
                        self._store_lanes(full, row, start, cols[one], exprs[one])

                guarded_by(kb, [real], write_held)
                if not held:

                    def write(c: SSAValue, _: list[SSAValue]) -> list[SSAValue]:
                        self.expr(1).store(full, self.at_c(row, c))
                        return []

                    kb.for_(tid, self.n, threads, [], write)
            if any(self.domain(o) == "row" for o in self.outputs):
                guarded_by(kb, [kb.lt(tid, 1), real], lambda: self.store_row_outputs(self.outputs, row))

        return work_group_per(kb, -(-rows // per_group), size, body)

    def _held_lanes(self, threads: int) -> int:
        """Lanes of the vectors a GPU work-item's held share of a row is read
        (and written) in: `half_lanes` of the kernel's buffers, where the row
        runs along the last dim and every one of the row's `threads`
        work-items holds whole vectors of them; else 1, element by element
        (f32 rows of 4096 read W = 4 lanes a `vload4` were slower on the H200)."""
        kb = self.kb
        lanes = half_lanes(kb.profile, [kb.access[v].element_type for v in kb.values])
        along_last = self.axis == len(self.rows)
        return lanes if lanes > 1 and along_last and self.n % (threads * lanes) == 0 else 1

    def _lane_load(
        self, c: SSAValue, start: SSAValue, lane: int, lanes: int, vectors: dict[tuple[Any, ...], SSAValue]
    ) -> Loader:
        """The loader of column `c` = `start` + `lane` of a held share: an
        element at a last coordinate `c` of an access whose vectors are
        aligned (`vectors_aligned`: `start` is a multiple of `lanes`) is lane
        `lane` of one aligned vector load at `start`, made once for all its
        lanes where it dominates (`vectors`); any other load is
        `KernelBuilder.load`'s."""
        kb = self.kb

        def load(acc: Access, coords: Sequence[SSAValue], width: int, aligned: bool) -> SSAValue:
            at_c = width == 1 and bool(coords) and coords[-1] is c
            if not at_c or accy.is_bool(acc.element_type) or not vectors_aligned(acc, lanes):
                return kb.load(acc, coords, width, aligned)
            at = [*coords[:-1], start]
            key = (acc.arg, acc.offset, acc.strides, acc.element_type, *at)
            vec = kb.lookup(vectors, key)
            if vec is None:
                vec = kb.remember(vectors, key, kb.load(acc, at, lanes, aligned=True))
            return kb.val(vector.ExtractOp(vec, [lane], buffer_element_type(acc.element_type)))

        return load

    def _store_lanes(
        self, outputs: Sequence[SSAValue], row: list[SSAValue], start: SSAValue, cols: Sequence[SSAValue],
        exprs: Sequence[Expr],
    ) -> None:
        """Stores `outputs` at the row's columns `cols` (`start` and the
        lanes after it, each computed by its own evaluator of `exprs`): one
        aligned vector store where the output's vectors are aligned, element
        by element otherwise."""
        kb = self.kb
        lanes = len(cols)
        for out in outputs:
            acc = kb.access[out]
            values = [e.at(out, self.at_c(row, c)) for c, e in zip(cols, exprs, strict=True)]
            if accy.is_bool(acc.element_type) or not vectors_aligned(acc, lanes):
                for c, x in zip(cols, values, strict=True):
                    kb.store(acc, self.at_c(row, c), x)
                continue
            vec = kb.const(0, VectorType(acc.element_type, [lanes]))
            for j, x in enumerate(values):
                vec = kb.val(vector.InsertOp(x, vec, [j]))
            kb.store(acc, self.at_c(row, start), vec, lanes, aligned=True)

    def _row_total(
        self, kind: str, share: SSAValue, scratch: SSAValue | None, flat: SSAValue, threads: int, size: int
    ) -> SSAValue:
        """The total of a row's `threads` shares, for every work-item of the
        row (work-item `flat` of a work-group of `size`, a row to each run
        of `threads`)."""
        kb = self.kb
        if scratch is None:
            return share
        if threads == size:
            return work_group_combine(kb, kind, share, scratch, flat, size)
        work_group_tree(kb, kind, share, scratch, flat, size, threads)
        return kb.val(memref.LoadOp.get(scratch, [segment_start(kb, flat, threads)]))


def guarded_by(kb: KernelBuilder, conds: Sequence[SSAValue | None], body: Callable[[], None]) -> None:
    """Runs `body` where every condition in `conds` holds (None: always)."""
    given = [c for c in conds if c is not None]
    if not given:
        body()
        return
    cond = given[0]
    for c in given[1:]:
        cond = kb.val(arith.AndIOp(cond, c))

    def then() -> list[SSAValue]:
        body()
        return []

    kb.if_(cond, then)
