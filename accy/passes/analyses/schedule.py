"""schedule: the program split into work items, each of which becomes one kernel.

The schedule groups the top-level ops of a function into work items and orders
them so that every item runs after the items it reads from. Each item has a
kind, the kernel it becomes (kinds.py), and an anchor, the op that gives the
kind (None for pure elementwise and shape items).

What is not a work item:
- `accy.constant`: constants are kernel inputs with a buffer of their own.
- Views (`accy.transpose`, `accy.slice`, `accy.broadcast`, and an
  `accy.reshape` that strides can express; see `ShapeLayout`): they are index
  math inside every item that reads them, and are listed in those items' ops
  (and `read_through`). A view becomes (part of) a `shape` item only where a
  copy is needed: when it is returned. That copy item is the one item that
  stores the view, even when other items (a row pipeline, say) read through
  it: they compute it as index math and never store it. A reshape no strides
  can express is a copy: a `shape` item of its own, or part of an elementwise
  item that computes its operand.

Each returned value that an op computes is stored by exactly one item, and
every item stores at least one value (`Outlining` checks both).

Fusion rules, applied in this order:
1. Row pipelines. A reduction along the innermost axis, or a named
   `accy.softmax`/`accy.log_softmax` along the last axis or `accy.layer_norm`,
   seeds a row domain: rows R and row length N of its operand [*R, N]. Every
   connected op that works on those rows joins: elementwise ops on [*R, N] or
   on R (or [*R, 1]), further innermost reductions of [*R, N], named row ops,
   reached through views that keep the row index (reshape R <-> [*R, 1],
   broadcast of R or [*R, 1] back to [*R, N] along the leading dims). An op
   joins only if EVERY edge between it and the group keeps the row index,
   not just the one that reached it: sizes alone cannot tell a row total
   broadcast back along the rows from one broadcast along the columns of a
   square matrix; only the `dims` can. If the
   group holds a named row op, more than one reduction, or a reduced value
   broadcast back onto the rows, it is ONE `row_pipeline` item: softmax,
   log_softmax and layer_norm are each one kernel, named or written with
   primitives, with their elementwise prologue and epilogue.
2. Flash attention. A row pipeline whose only row-sized input from a kernel
   is a dot_general q·kᵀ [*B, Sq, Sk] (used by nothing else), and whose only
   output feeds the lhs of one dot_general contracting Sk (p·v), and which
   holds no named log_softmax or layer_norm (no softmax: no attention), is ONE
   `flash_attention` item with both dots (scale and mask in between are part
   of the row pipeline). `accy.attention` is one such item. No Sq×Sk value
   leaves the item, so it never owns an Sq×Sk buffer.
3. Epilogues. Elementwise work after a dot_general, reduction, scan, row
   pipeline or flash attention, on the anchor's result shape and reading the
   item's result directly (no view in between, on any of its edges from the
   item: the kernel hands its result out at the coordinates it computes,
   and a row pipeline's row values only along the rows), fuses in: bias,
   activation, residual add after a dot_general are one kernel with it.
4. Elementwise chains. Elementwise ops (and the views between them) fuse into
   one `elementwise` item when the result is acyclic and every value the item
   stores has one shape (so that one index space computes them all).
5. Prologues. An elementwise item whose values are read only by one
   dot_general, reduction, scan, row pipeline or flash attention item (and
   not returned) fuses into it as a prologue: the consumer computes it from
   the inputs as it reads them, once per element it reads.
6. Shared values. A value read by several items is recomputed in each of them
   when that is cheap: it is computed by at most `RECOMPUTE_LIMIT`
   elementwise ops that read only function arguments and constants, and it
   is not returned. Otherwise it is computed once and stored.
No merge may make the item graph cyclic: each rule checks that first.

Size limits, so that compile cost grows linearly with the program (issue 19):
- No item holds more than `MAX_FUSED_OPS` compute ops (views not counted):
  a longer chain is cut into several kernels, each storing its last value
  for the next. LLVM's O3 pipeline costs more per op as a function grows
  (a chain of math ops: 8.6 ms an op at 125 ops, 21 ms at 500), and one
  kernel of 20,000 ops took minutes to build.
- No row pipeline spans more than `MAX_ROW_LEVELS` reduction levels. Its
  lowering recomputes the elementwise work from the inputs in every pass
  over the row (one pass per level), so a pipeline of L levels over n ops
  emits O(L * n) ops: N softmax stages in a row were one kernel of O(N^2).
  A reduction's depth is the number of reduction levels on the longest path
  from the function's arguments to its operand (a named softmax,
  log_softmax or layer_norm counts two); a row pipeline admits a reduction
  only if the depths its reductions occupy stay within `MAX_ROW_LEVELS`.
  Depths count every path in the function, not only those inside the
  group, so this may cut sooner than needed, never later.
"""

from __future__ import annotations

import heapq
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import ClassVar

from xdsl.dialects import func
from xdsl.ir import Operation, SSAValue

from accy.dialects.accy import (
    ARG_KINDS,
    ELEMENTWISE_OPS,
    BroadcastOp,
    ConstantOp,
    DotGeneralOp,
    KernelCallOp,
    LayerNormOp,
    LogSoftmaxOp,
    ReduceOp,
    ReshapeOp,
    SoftmaxOp,
    shape_of,
)
from accy.passes.analyses import ValueNames, body_ops, external_operands, func_name, returned_values
from accy.passes.analyses.attention import AttentionMatch, NoMatch, match_attention
from accy.passes.analyses.kinds import KINDS
from accy.passes.analyses.shape_layout import VIEW_OP_TYPES, ShapeLayout
from accy.passes.pass_manager import Analysis, AnalysisManager

RECOMPUTE_LIMIT = 8
"""At most this many elementwise ops are recomputed in each reader (rule 6)."""

MAX_FUSED_OPS = 256
"""At most this many compute ops fuse into one work item (see "Size limits")."""

MAX_ROW_LEVELS = 4
"""At most this many reduction levels in one row pipeline (see "Size
limits"): softmax and layer norm take two, a cross-entropy over a
log_softmax three."""

# Kinds that take elementwise work in as a prologue or an epilogue.
_FUSING = tuple(name for name, kind in KINDS.items() if kind.takes_elementwise)


@dataclass(frozen=True)
class RowFacts:
    """A row pipeline's rows R and row length N: its values live on [*R, N]
    and on R (or [*R, 1]). `axis` is where the row runs in the values on
    the rows: None for the last dim (every fused pipeline), another for a
    named softmax or log_softmax along another axis (an item of its own)."""

    rows: tuple[int, ...]
    row_length: int
    axis: int | None = None


@dataclass(frozen=True)
class AttentionFacts(RowFacts):
    """A flash-attention item written with two dots: its rows ([*B, Sq],
    row length Sk) and what the attention matcher found."""

    match: AttentionMatch = field(kw_only=True)


@dataclass
class WorkItem:
    """One future kernel."""

    kind: str
    ops: list[Operation]
    """Tensor ops inside, in program order (views and recomputed elementwise
    ops included)."""
    anchor: Operation | None
    """The op that gives the kind; None for pure elementwise/shape items."""
    facts: RowFacts | None = None
    """What the matcher found: the rows of a row pipeline (`RowFacts`), and
    the matched attention of a flash-attention item written with dots
    (`AttentionFacts`); None for other kinds, and for a named softmax along
    another axis than the last or a named `accy.attention` (its lowering
    matches its decomposition)."""
    read_through: frozenset[Operation] = frozenset()
    """Views of `ops` that the item only reads through (index math): it
    never stores their results; a returned one is stored by its copy item."""


# --------------------------------------------------------------------------
# The op graph, with views transparent
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class _Edge:
    """`value` of `producer` (None: an argument or constant) reaches
    `consumer` through the view ops `chain` (outermost last)."""

    producer: Operation | None
    consumer: Operation
    value: SSAValue
    chain: tuple[Operation, ...]


class _Graph:
    """The top-level compute ops of a function and the data edges between
    them. True views are not nodes: an edge runs through them."""

    def __init__(self, fn: Operation, layout: ShapeLayout) -> None:
        self.layout = layout
        self.returned = returned_values(fn)
        live = _live_ops(body_ops(fn))
        self.nodes: list[Operation] = [
            op
            for op in body_ops(fn)
            if op in live and not isinstance(op, func.ReturnOp | ConstantOp) and not self.is_view(op)
        ]
        self.index = {op: i for i, op in enumerate(body_ops(fn))}
        self.ins: dict[Operation, list[_Edge]] = {op: [] for op in self.nodes}
        self.outs: dict[Operation, list[_Edge]] = {op: [] for op in self.nodes}
        for op in self.nodes:
            for v in external_operands(op):
                e = self._edge(v, op)
                self.ins[op].append(e)
                if e.producer is not None:
                    self.outs[e.producer].append(e)
        # Values returned through a chain of views, and those views.
        self.returned_views: list[Operation] = []
        for v in self.returned:
            if isinstance(v.owner, Operation) and self.is_view(v.owner):
                self.returned_views.append(v.owner)

    def is_view(self, op: Operation) -> bool:
        return isinstance(op, VIEW_OP_TYPES) and self.layout.is_view(op.results[0])

    def _edge(self, v: SSAValue, consumer: Operation) -> _Edge:
        chain: list[Operation] = []
        while isinstance(v.owner, Operation) and self.is_view(v.owner):
            chain.append(v.owner)
            v = v.owner.operands[0]
        owner = v.owner if isinstance(v.owner, Operation) else None
        producer = owner if owner in self.ins else None
        return _Edge(producer, consumer, v, tuple(reversed(chain)))

    def base_edge(self, view: Operation) -> _Edge:
        """The edge a returned view reads: its base value and view chain."""
        return self._edge(view.results[0], view)

    def is_returned(self, v: SSAValue) -> bool:
        """`v` is returned, itself or through a chain of views (walked with
        a worklist: a chain of views may be as long as the program)."""
        work, seen = [v], {v}
        while work:
            x = work.pop()
            if x in self.returned:
                return True
            for u in x.uses:
                r = u.operation.results[0] if self.is_view(u.operation) else None
                if r is not None and r not in seen:
                    seen.add(r)
                    work.append(r)
        return False


def _live_ops(ops: list[Operation]) -> set[Operation]:
    """Ops whose results reach the return or a custom kernel call (the only
    op with effects): a dead tensor op becomes no kernel."""
    live: set[Operation] = set()
    for op in reversed(ops):
        if isinstance(op, func.ReturnOp | KernelCallOp) or any(
            _top(u.operation, op.parent_block()) in live for r in op.results for u in r.uses
        ):
            live.add(op)
    return live


def _top(op: Operation, block: object) -> Operation:
    """The ancestor of `op` that sits in `block`."""
    while op.parent_block() is not block and op.parent_op() is not None:
        op = op.parent_op()  # type: ignore[assignment]
    return op


# --------------------------------------------------------------------------
# Groups
# --------------------------------------------------------------------------


@dataclass(eq=False)
class _Group:
    ops: set[Operation]
    tag: str
    """A kind of `KINDS`, or "copy" for a reshape that needs a copy."""
    anchor: Operation | None = None
    facts: RowFacts | None = None


def _rank(grp: _Group) -> int:
    if grp.anchor is not None:
        return 2
    return 1 if grp.tag == "elementwise" else 0


def _initial_tag(op: Operation) -> tuple[str, Operation | None]:
    """The tag and anchor of the group `op` starts: the kind it seeds, or
    "copy" for a view that must be copied."""
    if isinstance(op, VIEW_OP_TYPES):  # only views that must copy reach here
        return "copy", None
    for kind in KINDS.values():
        if isinstance(op, kind.seeds):
            return kind.name, op if kind.anchored else None
    raise ValueError(f"schedule: cannot schedule op '{op.name}': it is not an accy tensor op")


def _row_levels(op: Operation) -> int:
    """Passes over the row that `op` takes in a row pipeline."""
    if isinstance(op, SoftmaxOp | LogSoftmaxOp | LayerNormOp):
        return 2
    return 1 if isinstance(op, ReduceOp) else 0


def _reduction_depths(g: _Graph) -> dict[Operation, tuple[int, int]]:
    """Per node, the reduction levels on the longest path from the function's
    arguments to its operands, and to its results (see "Size limits"); in
    program order, operands first."""
    depth: dict[Operation, tuple[int, int]] = {}
    for op in g.nodes:
        start = max((depth[e.producer][1] for e in g.ins[op] if e.producer is not None), default=0)
        depth[op] = (start, start + _row_levels(op))
    return depth


def _last_axis(op: Operation) -> bool:
    """A named softmax/log_softmax along the last axis."""
    assert isinstance(op, SoftmaxOp | LogSoftmaxOp)
    rank = len(shape_of(op.x))
    return op.axis.value.data % rank == rank - 1


class _Walk:
    """A depth-first walk over groups, one group a step (`acyclic_merge`)."""

    def __init__(self, start: Iterable[_Group], next_groups: Callable[[_Group], set[_Group]]) -> None:
        self.stack = list(start)
        self.next_groups = next_groups
        self.seen: set[int] = set()

    def step(self, targets: set[int]) -> bool | None:
        """True when the walk reached a target, False when it ended without
        reaching one, None while it goes on."""
        while self.stack:
            grp = self.stack.pop()
            if id(grp) in targets:
                return True
            if id(grp) in self.seen:
                continue
            self.seen.add(id(grp))
            self.stack.extend(self.next_groups(grp))
            return None
        return False


class _Fuser:
    """Applies the fusion rules of the module docstring to one function."""

    def __init__(self, g: _Graph) -> None:
        self.g = g
        self.groups: list[_Group] = []
        self.of: dict[Operation, _Group] = {}
        # Per group, the ops outside it that read it and the values it must
        # store, carried through `merge` (dropped when the graph gains
        # edges): fusing a chain of n ops then costs O(n), not O(n^2).
        self._readers: dict[_Group, set[Operation]] = {}
        self._stored: dict[_Group, list[SSAValue]] = {}
        self.depth = _reduction_depths(g)
        for op in g.nodes:
            tag, anchor = _initial_tag(op)
            self._new({op}, tag, anchor)

    def _new(self, ops: set[Operation], tag: str, anchor: Operation | None) -> _Group:
        grp = _Group(set(ops), tag, anchor)
        self.groups.append(grp)
        for op in ops:
            self.of[op] = grp
        return grp

    # -- queries ----------------------------------------------------------

    def succ_groups(self, grp: _Group) -> set[_Group]:
        readers = self._readers.get(grp)
        if readers is None:
            readers = self._readers[grp] = {e.consumer for op in grp.ops for e in self.g.outs[op]} - grp.ops
        return {self.of[c] for c in readers} - {grp}

    def pred_groups(self, grp: _Group) -> set[_Group]:
        return {self.of[e.producer] for op in grp.ops for e in self.g.ins[op] if e.producer is not None} - {grp}

    def acyclic_merge(self, a: _Group, b: _Group) -> bool:
        """Merging `a` and `b` leaves the group graph acyclic: no path
        between them runs through a third group."""
        succ_a, succ_b = self.succ_groups(a), self.succ_groups(b)
        # The group graph is acyclic: with an edge b -> a, a path from a to
        # b would already close a cycle, so only a second path from b to a
        # can (which keeps fusing a long chain from walking all of it).
        if a in succ_b:
            ahead, behind = succ_b, self.pred_groups(a)
        elif b in succ_a:
            ahead, behind = succ_a, self.pred_groups(b)
        else:
            ahead, behind = succ_a | succ_b, self.pred_groups(a) | self.pred_groups(b)
        # Such a path is found both from the pair's readers forwards and from
        # its writers backwards: the two walks take turns, and the first to
        # end answers. Growing a group in the middle of a long program then
        # costs what the shorter side does, not the whole rest of it (a row
        # pipeline's sweep over a chain of N stages walked O(N) a merge).
        walks = [_Walk(ahead - {a, b}, self.succ_groups), _Walk(behind - {a, b}, self.pred_groups)]
        while True:
            for walk in walks:
                found = walk.step({id(a), id(b)})
                if found is not None:
                    return not found

    def stored(self, ops: set[Operation]) -> list[SSAValue]:
        """Values computed in `ops` that something outside reads or that are
        returned: what an item of these ops must store."""
        out: dict[SSAValue, None] = {}
        for op in ops:
            for e in self.g.outs[op]:
                if e.consumer not in ops:
                    out.setdefault(e.value)
            for r in op.results:
                if r in self.g.returned or any(
                    self.g.base_edge(view).value is r and view not in ops for view in self.g.returned_views
                ):
                    out.setdefault(r)
        return list(out)

    def group_stored(self, grp: _Group) -> list[SSAValue]:
        """`stored(grp.ops)`, remembered."""
        if grp not in self._stored:
            self._stored[grp] = self.stored(grp.ops)
        return self._stored[grp]

    def merged_stored(self, a: _Group, b: _Group) -> list[SSAValue]:
        """`stored(a.ops | b.ops)` from what `a` and `b` store (a value the
        union stores is stored by its own group), without walking either."""

        def outside(op: Operation) -> bool:
            return op not in a.ops and op not in b.ops

        def leaves(v: SSAValue) -> bool:
            return (
                v in self.g.returned
                or any(e.value is v and outside(e.consumer) for e in self.g.outs[v.owner])  # type: ignore[index]
                or any(self.g.base_edge(view).value is v and outside(view) for view in self.g.returned_views)
            )

        return [v for v in dict.fromkeys([*self.group_stored(a), *self.group_stored(b)]) if leaves(v)]

    def merge(self, a: _Group, b: _Group) -> _Group:
        """Merges `b` into `a`. An anchored kind wins over elementwise work,
        which wins over copies."""
        stored = self.merged_stored(a, b) if a in self._stored and b in self._stored else None
        readers = (self._readers.pop(a, None), self._readers.pop(b, None))
        self._stored.pop(a, None)
        if _rank(b) > _rank(a):
            a.tag, a.anchor, a.facts = b.tag, b.anchor, b.facts
        elif _rank(a) == 0 and _rank(b) == 0 and a.tag != b.tag:
            a.tag = "shape"
        a.ops |= b.ops
        for op in b.ops:
            self.of[op] = a
        self.groups.remove(b)
        if readers[0] is not None and readers[1] is not None:
            self._readers[a] = {c for c in readers[0] | readers[1] if c not in a.ops}
        if stored is not None:
            self._stored[a] = stored
        return a

    def try_merge(self, a: _Group, b: _Group, one_shape: bool = False) -> bool:
        if a is b or len(a.ops) + len(b.ops) > MAX_FUSED_OPS or not self.acyclic_merge(a, b):
            return False
        if one_shape and len({shape_of(v) for v in self.merged_stored(a, b)}) > 1:
            return False
        self.merge(a, b)
        return True

    def single(self, op: Operation) -> bool:
        return len(self.of[op].ops) == 1

    # -- rule 1: row pipelines -------------------------------------------

    def row_pipelines(self) -> None:
        for seed in self.g.nodes:
            if not self.single(seed):
                continue
            rows = self._row_seed(seed)
            if rows is not None:
                self._grow_rows(seed, *rows)
            elif isinstance(seed, SoftmaxOp | LogSoftmaxOp):
                # Along another axis than the last: a row pipeline of its own
                # whose row runs along that axis (nothing fuses into its rows).
                shape = shape_of(seed.x)
                axis = seed.axis.value.data % len(shape)
                self.of[seed].facts = RowFacts((*shape[:axis], *shape[axis + 1 :]), shape[axis], axis)

    @staticmethod
    def _row_seed(op: Operation) -> tuple[tuple[int, ...], int] | None:
        if isinstance(op, ReduceOp):
            shape = shape_of(op.x)
            # An argmax/argmin's position is no value a row pipeline carries.
            if shape and op.norm_axes() == (len(shape) - 1,) and op.kind.data not in ARG_KINDS:
                return shape[:-1], shape[-1]
        elif isinstance(op, SoftmaxOp | LogSoftmaxOp) and _last_axis(op) or isinstance(op, LayerNormOp):
            shape = shape_of(op.operands[0])
            return shape[:-1], shape[-1]
        return None

    def _in_rows(self, op: Operation, rows: tuple[int, ...], n: int) -> bool:
        full = (*rows, n)
        if isinstance(op, ELEMENTWISE_OPS):
            return shape_of(op.results[0]) in (full, rows, (*rows, 1))
        if isinstance(op, ReduceOp | SoftmaxOp | LogSoftmaxOp | LayerNormOp):
            return self._row_seed(op) == (rows, n)
        return False

    @staticmethod
    def _row_chain(chain: Sequence[Operation], rows: tuple[int, ...], n: int) -> bool:
        """Views that keep the row index: R <-> [*R, 1] reshapes, and
        broadcasts of R or [*R, 1] onto [*R, N] along the leading dims."""
        r = len(rows)
        for view in chain:
            src, dst = shape_of(view.operands[0]), shape_of(view.results[0])
            if isinstance(view, ReshapeOp) and {src, dst} <= {rows, (*rows, 1)}:
                continue
            if isinstance(view, BroadcastOp) and dst == (*rows, n):
                want = tuple(range(r)) if src == rows else tuple(range(r + 1)) if src == (*rows, 1) else None
                if view.dims.get_values() == want:
                    continue
            return False
        return True

    def _row_edges(self, op: Operation, grp: _Group, rows: tuple[int, ...], n: int) -> bool:
        """Every edge between `op` and the group keeps the row index. The
        edge that reached `op` is not enough: a reduced value may come back
        onto the rows along another dim (a broadcast whose `dims` put the
        row total on the column index), which only sizes cannot tell apart
        when the dims are equal (a square score matrix)."""
        inside = [e for e in self.g.ins[op] if e.producer in grp.ops]
        inside += [e for e in self.g.outs[op] if e.consumer in grp.ops]
        return all(self._row_chain(e.chain, rows, n) for e in inside)

    def _grow_rows(self, seed: Operation, rows: tuple[int, ...], n: int) -> None:
        grp = self.of[seed]
        # The reduction depths the group's passes occupy (`MAX_ROW_LEVELS`).
        lo, hi = self.depth[seed]
        queue = deque([seed])
        while queue:
            op = queue.popleft()
            neighbours = [e.producer for e in self.g.ins[op]] + [e.consumer for e in self.g.outs[op]]
            for other in neighbours:
                if other is None or other in grp.ops or not self.single(other):
                    continue
                if not self._in_rows(other, rows, n) or not self._row_edges(other, grp, rows, n):
                    continue
                start, end = self.depth[other]
                levels = _row_levels(other) > 0
                if levels and max(hi, end) - min(lo, start) > MAX_ROW_LEVELS:
                    continue
                if self.try_merge(grp, self.of[other]):
                    queue.append(other)
                    if levels:
                        lo, hi = min(lo, start), max(hi, end)
        if self._is_row_pipeline(grp, rows):
            grp.tag = "row_pipeline"
            grp.anchor = min((op for op in grp.ops if self._row_seed(op)), key=self.g.index.__getitem__)
            grp.facts = RowFacts(rows, n)
        else:  # a plain reduction: undo, rules 3 and 5 fuse it
            self.groups.remove(grp)
            for op in sorted(grp.ops, key=self.g.index.__getitem__):
                self._new({op}, *_initial_tag(op))

    def _is_row_pipeline(self, grp: _Group, rows: tuple[int, ...]) -> bool:
        if any(isinstance(op, SoftmaxOp | LogSoftmaxOp | LayerNormOp) for op in grp.ops):
            return True
        reduces = [op for op in grp.ops if isinstance(op, ReduceOp)]
        if len(reduces) > 1:
            return True
        # A reduced value broadcast back onto the rows it came from.
        derived: set[Operation] = set()
        for op in sorted(grp.ops, key=self.g.index.__getitem__):
            if isinstance(op, ReduceOp) or any(e.producer in derived for e in self.g.ins[op]):
                derived.add(op)
        return any(
            e.producer in derived and any(isinstance(v, BroadcastOp) for v in e.chain)
            for op in grp.ops
            for e in self.g.ins[op]
        )

    # -- rule 2: flash attention -----------------------------------------

    def flash_attention(self) -> None:
        for grp in [g for g in self.groups if g.tag == "row_pipeline"]:
            self._try_flash(grp)

    def _try_flash(self, grp: _Group) -> None:
        if grp.facts is None or grp.facts.axis is not None:  # along another axis than the last
            return
        if any(isinstance(op, LogSoftmaxOp | LayerNormOp) for op in grp.ops):
            return  # no softmax between the dots: no attention, the dots stay kernels of their own
        rows, n = grp.facts.rows, grp.facts.row_length
        rank = len(rows) + 1
        full = (*rows, n)
        if rank < 2:
            return
        batch = tuple(range(rank - 2))
        stored = self.stored(grp.ops)
        if len(stored) != 1 or shape_of(stored[0]) != full or self.g.is_returned(stored[0]):
            return
        probs = stored[0]
        readers = [e for op in grp.ops for e in self.g.outs[op] if e.consumer not in grp.ops]
        if len(readers) != 1 or readers[0].chain:
            return
        pv = readers[0].consumer
        if not (
            isinstance(pv, DotGeneralOp)
            and self.single(pv)
            and pv.lhs is probs
            and pv.rhs is not probs
            and pv.dims()[0] == batch
            and pv.dims()[1] == batch
            and pv.dims()[2] == (rank - 1,)
            and len(pv.dims()[3]) == 1
            and len(shape_of(pv.rhs)) == rank
        ):
            return
        sources = {
            e.producer
            for op in grp.ops
            for e in self.g.ins[op]
            if e.producer is not None and e.producer not in grp.ops and shape_of(e.value) == full
        }
        dots = [p for p in sources if isinstance(p, DotGeneralOp)]
        if len(dots) != 1:
            return
        qk = dots[0]
        if not (
            self.single(qk)
            and all(e.consumer in grp.ops and not e.chain for e in self.g.outs[qk])
            and not self.g.is_returned(qk.result)
            and qk.dims()[0] == batch
            and qk.dims()[1] == batch
            and len(qk.dims()[2]) == 1
            and len(qk.dims()[3]) == 1
            and len(shape_of(qk.lhs)) == rank
            and len(shape_of(qk.rhs)) == rank
        ):
            return
        if not self.acyclic_merge(grp, self.of[qk]):
            return
        try:
            match = match_attention(list(_with_views(self.g, grp.ops | {qk, pv})), qk, pv)
        except NoMatch:
            return  # some other row pipeline between the dots: it and the dots stay kernels of their own
        self.merge(grp, self.of[qk])
        if not self.acyclic_merge(grp, self.of[pv]):
            return  # unreachable: pv reads only grp and its own rhs
        self.merge(grp, self.of[pv])
        grp.tag, grp.anchor = "flash_attention", pv
        grp.facts = AttentionFacts(rows, n, match=match)

    # -- rule 3: epilogues -------------------------------------------------

    def epilogues(self) -> None:
        for grp in sorted(
            (g for g in self.groups if g.tag in _FUSING and g.anchor is not None),
            key=lambda g: self.g.index[g.anchor],  # type: ignore[index]
        ):
            row_facts = grp.facts if grp.tag == "row_pipeline" and grp.facts and grp.facts.axis is None else None
            if row_facts is not None:
                rows, n = row_facts.rows, row_facts.row_length
                domain = {(*rows, n), rows}
            else:
                assert grp.anchor is not None
                domain = {shape_of(grp.anchor.results[0])}
            changed = True
            while changed:
                changed = False
                for e in [e for op in grp.ops for e in self.g.outs[op]]:
                    c = e.consumer
                    if c in grp.ops or not isinstance(c, ELEMENTWISE_OPS) or not self.single(c):
                        continue
                    if e.chain or shape_of(c.results[0]) not in domain:
                        continue
                    # The kernel hands its result out at the coordinates it
                    # computes: every read of the item must be at those.
                    inside = [x for x in self.g.ins[c] if x.producer in grp.ops]
                    if row_facts is not None and not self._row_edges(c, grp, rows, n):
                        continue
                    if row_facts is None and any(x.chain for x in inside):
                        continue
                    if self.try_merge(grp, self.of[c]):
                        changed = True

    # -- rule 4: elementwise chains ---------------------------------------

    def elementwise_chains(self) -> None:
        for op in self.g.nodes:
            for e in self.g.ins[op]:
                a, b = self.of[op], self.of[e.producer] if e.producer is not None else None
                if b is None or a is b:
                    continue
                if a.tag in ("elementwise", "copy") and b.tag in ("elementwise", "copy"):
                    # Either way gives the same group; moving the smaller
                    # one's ops keeps a long chain linear.
                    self.try_merge(*((a, b) if len(a.ops) >= len(b.ops) else (b, a)), one_shape=True)

    # -- rule 5: prologues ---------------------------------------------------

    def prologues(self) -> None:
        changed = True
        while changed:
            changed = False
            for grp in list(self.groups):
                if grp.tag != "elementwise" or any(not isinstance(op, ELEMENTWISE_OPS) for op in grp.ops):
                    continue
                if any(self.g.is_returned(v) for v in self.stored(grp.ops)):
                    continue
                readers = self.succ_groups(grp)
                if len(readers) != 1:
                    continue
                (reader,) = readers
                if reader.tag in _FUSING and self.try_merge(reader, grp):
                    changed = True

    # -- returned views ---------------------------------------------------

    def returned_views(self) -> None:
        """A returned view must be stored contiguously: a copy, fused into
        the elementwise item that computes its base where one shape allows."""
        for view in self.g.returned_views:
            if view in self.of:
                continue
            base = self.g.base_edge(view)
            self.g.outs.setdefault(view, [])
            self.g.ins[view] = [base]
            if base.producer is not None:
                self.g.outs[base.producer].append(base)
                self._readers.clear()  # the graph has a new edge
                self._stored.clear()
            grp = self._new({view}, "shape", None)
            if base.producer is not None and self.of[base.producer].tag == "elementwise":
                self.try_merge(self.of[base.producer], grp, one_shape=True)

    # -- rule 6: shared values ----------------------------------------------

    def recompute(self) -> dict[_Group, list[Operation]]:
        """Extra ops each group recomputes (cheap shared values)."""
        extra: dict[_Group, list[Operation]] = {}
        for grp in list(self.groups):
            if (
                grp.tag != "elementwise"
                or len(grp.ops) > RECOMPUTE_LIMIT
                or any(not isinstance(op, ELEMENTWISE_OPS) for op in grp.ops)
                or self.pred_groups(grp)
                or any(self.g.is_returned(v) for v in self.stored(grp.ops))
            ):
                continue
            readers = self.succ_groups(grp)
            if not readers or any(r.tag not in (*_FUSING, "elementwise") for r in readers):
                continue
            self.groups.remove(grp)
            for r in readers:
                extra.setdefault(r, []).extend(grp.ops)
        return extra


# --------------------------------------------------------------------------
# The analysis
# --------------------------------------------------------------------------


class Schedule(Analysis):
    """The work items of a function in a dependency-respecting order."""

    name: ClassVar[str] = "schedule"
    version: ClassVar[int] = 2

    def __init__(self, op: Operation, am: AnalysisManager) -> None:
        super().__init__(op, am)
        layout = am.get(ShapeLayout, op)
        graph = _Graph(op, layout)
        fuser = _Fuser(graph)
        fuser.row_pipelines()
        fuser.flash_attention()
        fuser.epilogues()
        fuser.elementwise_chains()
        fuser.prologues()
        fuser.returned_views()
        extra = fuser.recompute()
        self.items: list[WorkItem] = _order(graph, fuser, extra)

    def print(self) -> str:
        names = ValueNames(self.op)
        lines = [f"schedule @{func_name(self.op)}: {len(self.items)} work items"]
        for i, item in enumerate(self.items):
            ops = ", ".join(op.name for op in item.ops)
            anchor = f" (anchor {item.anchor.name} -> {names.join(item.anchor.results)})" if item.anchor else ""
            lines.append(f"  item {i} {item.kind}: {ops}{anchor}")
        return "\n".join(lines) + "\n"

    def statistics(self) -> dict[str, int | float]:
        return {"kernels": len(self.items)}


def _order(g: _Graph, fuser: _Fuser, extra: dict[_Group, list[Operation]]) -> list[WorkItem]:
    """Items in dependency order; ties go to the item whose last op comes
    first in the program."""
    groups = fuser.groups
    members = {id(grp): grp.ops | set(extra.get(grp, ())) for grp in groups}
    key = {id(grp): max(g.index[op] for op in grp.ops) for grp in groups}
    preds: dict[int, set[int]] = {id(grp): set() for grp in groups}
    for grp in groups:
        for op in members[id(grp)]:
            for e in g.ins[op]:
                if e.producer is not None and e.producer not in members[id(grp)]:
                    preds[id(grp)].add(id(fuser.of[e.producer]))
    by_id = {id(grp): grp for grp in groups}
    succs: dict[int, list[int]] = {k: [] for k in by_id}
    for k, ps in preds.items():
        for p in ps:
            succs[p].append(k)
    waiting = {k: len(ps) for k, ps in preds.items()}
    ready = [(key[k], k) for k, n in waiting.items() if n == 0]
    heapq.heapify(ready)
    items: list[WorkItem] = []
    while ready:
        _, k = heapq.heappop(ready)
        grp = by_id[k]
        ops = _with_views(g, members[k])
        kind = "elementwise" if grp.tag == "copy" and any(isinstance(o, ELEMENTWISE_OPS) for o in ops) else grp.tag
        kind = "shape" if kind == "copy" else kind
        items.append(
            WorkItem(
                kind, sorted(ops, key=g.index.__getitem__), grp.anchor, grp.facts, frozenset(ops - members[k])
            )
        )
        for s in succs[k]:
            waiting[s] -= 1
            if waiting[s] == 0:
                heapq.heappush(ready, (key[s], s))
    if len(items) != len(groups):
        raise ValueError("schedule: the fused work items depend on each other in a cycle (a fusion bug)")
    return items


def _with_views(g: _Graph, ops: Iterable[Operation]) -> set[Operation]:
    """`ops` and the views they read through."""
    out = set(ops)
    for op in list(out):
        for e in g.ins[op]:
            out.update(e.chain)
    return out
