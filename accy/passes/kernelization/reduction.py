"""Lowering of reduction work items: one `accy.reduce` (any axes, any kind)
with the elementwise prologue that feeds it and the epilogue that consumes
its result fused in, as the work item lists them.

Every accumulator (a vector lane, a work-item's share) takes at most
`reduce_chunk` elements (a field of the target profile, 256 by default):
a float32 sum of n values drifts by up to n ulp, and
the mean of 10^7 values summed in one accumulator is off by 1e-3. A
reduction of more elements per output than one chunk (`_Reduction.chunk`)
is split in two launches: the first computes one partial result per
(output, chunk) into a scratch buffer, in parallel over all of them; the
second combines each output's partials in blocks of `reduce_chunk` (a sum of
sums of sums), then runs the epilogue. So a full reduction of 10^8 elements
is both parallel and within a few ulp of a float64 sum.

CPU profile: one work-item per output element (or per (output, chunk))
loops over its elements. When the last dim is reduced and the prologue has
no views, it walks that dim W lanes at a time into a vector accumulator
(`vector.reduction` at the end) with a scalar tail; otherwise a scalar loop
over the flattened reduced index space. No barriers.

GPU profile: one work-group per output element (or per (output, chunk));
each work-item accumulates a strided share (W consecutive elements at a
time, a vector load, when the last dim is reduced and is whole vectors for
every work-item; for 16-bit float inputs aligned loads of `half_lanes`
lanes, 16 bytes, where the shares are whole such vectors), then a tree in
local memory (with barriers, `work_group_tree`) combines the shares, and work-item 0
reads the total, runs the epilogue (or stores the partial) and stores.

`mean` is a sum divided by the reduced count.

`argmax` / `argmin` accumulate (value, position) pairs (`combine_all`:
ties to the smaller position, a NaN beats a number) on the scalar paths,
the position being the flat index over the reduced dims in the result's
element type; a GPU work-group's tree carries the pair in two local arrays.
A position is exact, so they never split into two launches.
"""

from __future__ import annotations

from collections.abc import Callable

from xdsl.dialects import arith, memref
from xdsl.dialects.builtin import VectorType
from xdsl.ir import Attribute, SSAValue

from accy.dialects import accy
from accy.dialects.host import buffer_element_type
from accy.dialects.target import TargetProfile
from accy.dialects.types import numel
from accy.passes.analyses.bufferization import BufferPlan
from accy.passes.analyses.outlining import OutlinedKernel
from accy.passes.kernelization.combining import (
    combine,
    combine_all,
    identities,
    identity,
    place,
    pow2_at_most,
    segment_start,
    vector_total,
    work_group_size,
    work_group_tree,
)
from accy.passes.kernelization.evaluate import Expr, vectorizable
from accy.passes.kernelization.kernel_builder import KernelBuilder, anchored_kernel, half_lanes
from accy.passes.kernelization.launch import work_group_per, work_item_per
from accy.passes.kernelization.lowered import LoweredKernel, Scratch

#: Work-items of a GPU reduction's work-group: outputs shared by fewer
#: (`reduce_threads`) are several to a work-group.
GPU_REDUCE_GROUP = 256


def lower_reduction(kernel: OutlinedKernel, plan: BufferPlan, profile: TargetProfile) -> LoweredKernel:
    """A reduction kernel: one `accy.reduce` and the work fused around it."""
    kb, red = anchored_kernel(kernel, plan, profile, accy.ReduceOp, "reduction")
    lowering = _Reduction(kb, kernel, red)
    if lowering.n_out == 0:
        # No output element: one work-item per output launches none (a GPU
        # grid keeps one work-group, which would read a row of none).
        return lowering.work_item_per_output()
    if lowering.count > lowering.chunk:
        return lowering.split(plan)
    return lowering.work_group_per_output() if lowering.gpu else lowering.work_item_per_output()


class _Reduction:
    """The reduction's index spaces (reduced and kept dims) and its kernels."""

    def __init__(self, kb: KernelBuilder, kernel: OutlinedKernel, red: accy.ReduceOp) -> None:
        self.kb, self.kernel, self.red = kb, kernel, red
        self.profile = kb.profile
        self.gpu = self.profile.profile == "gpu"
        self.kind = red.kind.data
        self.x = red.x
        self.shape = accy.shape_of(red.x)
        self.axes = red.norm_axes()
        self.red_shape = [self.shape[a] for a in self.axes]
        self.count = numel(self.red_shape)
        self.out_shape = accy.shape_of(red.result)
        self.n_out = numel(self.out_shape)
        self.et = accy.elem_of(red.x)
        self.arg = self.kind in accy.ARG_KINDS
        self.index_type = accy.elem_of(red.result) if self.arg else None
        """argmax/argmin: the type positions are counted in (the result's element type)."""
        self.prologue = [op for op in kernel.ops if op is not red]
        self.width = self.profile.vector_width
        lanes_ok = (
            self.width > 1
            and (len(self.shape) - 1) in self.axes
            and self.shape[-1] >= self.width
            and vectorizable(self.prologue, kb)
            and (accy.is_float(self.et) or self.kind in ("sum", "prod", "mean"))
            and not self.arg
        )
        self.use_vector = lanes_ok and not self.gpu
        self.threads = work_group_size(self.count, self.profile.reduce_threads, self.profile)
        self.vector_shares = lanes_ok and self.gpu and self.shape[-1] % (self.width * self.threads) == 0
        """GPU: each work-item's share of a row is W consecutive elements at a time (vector loads)."""
        half = half_lanes(self.profile, [kb.access[v].element_type for v in kernel.inputs]) if self.gpu else 1
        self.aligned = lanes_ok and half > 1
        """GPU, 16-bit float inputs: the shares' vectors are aligned accesses (`half_lanes`), of
        `half_lanes` lanes where every work-item's share is whole such vectors."""
        if self.aligned and self.shape[-1] % (half * self.threads) == 0:
            self.width, self.vector_shares = half, True
        lanes = self.threads if self.gpu else self.width if self.use_vector else 1
        self.chunk = max(self.count, 1) if self.arg else lanes * self.profile.reduce_chunk
        """Reduced elements per output that one launch takes (per work-item on the CPU, per work-group on the GPU)."""

    def _full(self, reduced: list[SSAValue], kept: list[SSAValue]) -> list[SSAValue]:
        return place(len(self.shape), self.axes, reduced, kept)

    def _init(self, kb: KernelBuilder, t: Attribute | None = None) -> SSAValue:
        return kb.const(identity(self.kind, self.et), t or self.et)

    def _inits(self, kb: KernelBuilder) -> list[SSAValue]:
        """The neutral accumulator (`combining.identities`): one value, or a
        (value, position) pair for argmax/argmin."""
        types = [self.et] if self.index_type is None else [self.et, self.index_type]
        return [kb.const(v, t) for v, t in zip(identities(self.kind, self.et, self.index_type), types, strict=True)]

    # -- accumulating a range of the reduced elements ----------------------------

    def _scalar_accumulate(
        self, kb: KernelBuilder, kept: list[SSAValue], lo: SSAValue | int, hi: SSAValue | int, step: int,
        acc: list[SSAValue],
    ) -> list[SSAValue]:
        """acc combined with x at reduced flat indices lo, lo+step, ... < hi
        (with its position r, for argmax/argmin)."""

        def body(r: SSAValue, carried: list[SSAValue]) -> list[SSAValue]:
            x = Expr(kb, self.prologue).at(self.x, self._full(kb.delinearize(r, self.red_shape), kept))
            if self.index_type is None:
                return combine_all(kb, self.kind, carried, [x])
            return combine_all(kb, self.kind, carried, [x, kb.val(arith.IndexCastOp(r, self.index_type))])

        return kb.for_(lo, hi, step, acc, body)

    def _vector_accumulate(
        self, kb: KernelBuilder, kept: list[SSAValue], rows: tuple[SSAValue | int, SSAValue | int],
        cols: tuple[SSAValue | int, SSAValue | int], first: SSAValue | int = 0, every: int = 1,
    ) -> SSAValue:
        """The last dim is reduced: rows [r0, r1) of the other reduced dims
        (flat), each over columns [c0, c1) of the last dim, W lanes at a
        time, then a scalar tail. Shared by `every` work-items, this one
        taking the `first`-th vector (and tail element) of every `every`."""
        last = self.shape[-1]
        outer_shape = self.red_shape[:-1]
        width = self.width
        c0, c1 = cols
        if isinstance(c0, int) and isinstance(c1, int):
            vec_end: SSAValue | int = c0 + (c1 - c0) // width * width
        else:
            span = kb.sub(kb.as_index(c1), kb.as_index(c0))
            vec_end = kb.add(c0, kb.mul(kb.div(span, width), width))

        def outer(o: SSAValue, carried: list[SSAValue]) -> list[SSAValue]:
            prefix = kb.delinearize(o, outer_shape)

            def lanes(w: int) -> Callable[[SSAValue, list[SSAValue]], list[SSAValue]]:
                def step(c: SSAValue, acc: list[SSAValue]) -> list[SSAValue]:
                    # `aligned` only on the GPU, whose shares start at column 0: c is a multiple of w.
                    x = Expr(kb, self.prologue, w, aligned=self.aligned).at(self.x, self._full([*prefix, c], kept))
                    return [combine(kb, self.kind, acc[0], x)]

                return step

            lo, step = kb.add(c0, kb.mul(kb.as_index(first), width)), width * every
            if every > 1 and isinstance(c0, int) and isinstance(vec_end, int) and (vec_end - c0) % step == 0:
                # Every work-item takes as many vectors: a loop of a known trip
                # count, which a GPU compiler unrolls, its loads issued together.
                trips = (vec_end - c0) // step
                v = kb.for_(0, trips, 1, [carried[0]], lambda j, acc: lanes(width)(kb.add(lo, kb.mul(j, step)), acc))[0]
            else:
                v = kb.for_(lo, vec_end, step, [carried[0]], lanes(width))[0]
            whole = isinstance(vec_end, int) and vec_end == c1
            s = carried[1] if whole else kb.for_(kb.add(vec_end, first), c1, every, [carried[1]], lanes(1))[0]
            return [v, s]

        assert last >= width
        init = [self._init(kb, VectorType(self.et, [width])), self._init(kb)]
        v, s = kb.for_(rows[0], rows[1], 1, init, outer)
        return combine(kb, self.kind, vector_total(kb, self.kind, v), s)

    def _accumulate_all(self, kb: KernelBuilder, kept: list[SSAValue]) -> list[SSAValue]:
        """Every reduced element of one output (at most one chunk of them)."""
        if self.use_vector:
            return [self._vector_accumulate(kb, kept, (0, numel(self.red_shape[:-1])), (0, self.shape[-1]))]
        return self._scalar_accumulate(kb, kept, 0, self.count, 1, self._inits(kb))

    def _finish(self, kb: KernelBuilder, kept: list[SSAValue], acc: list[SSAValue]) -> None:
        """Epilogue and stores of one output element (the accumulator's
        value, or for argmax/argmin its position)."""
        total = acc[-1]
        if self.kind == "mean":
            total = kb.val(arith.DivfOp(total, kb.const(float(self.count), self.et)))
        epilogue = Expr(kb, self.prologue)
        epilogue.pin(self.red.result, lambda _: total)
        epilogue.store(self.kernel.outputs, kept)

    # -- one launch: an output per work-item (CPU) or work-group (GPU) -------------

    def work_item_per_output(self) -> LoweredKernel:
        kb = self.kb
        def body(gid: SSAValue) -> None:
            kept = kb.delinearize(gid, self.out_shape)
            self._finish(kb, kept, self._accumulate_all(kb, kept))

        return work_item_per(kb, self.n_out, body)

    def _work_group_share(
        self, kb: KernelBuilder, groups: int, threads: int,
        work: Callable[[SSAValue, SSAValue], tuple[list[SSAValue], Callable[[list[SSAValue]], None]]],
        per_group: int = 1,
    ) -> LoweredKernel:
        """`per_group` units a work-group of `per_group` x `threads`
        work-items, unit 0..groups-1 being (group, slot) = divmod(unit,
        per_group): `work(unit, tid)` gives each work-item's share of its
        unit (tid its index among the unit's `threads`) and what to do with
        the total; a unit's shares are combined by a tree in local memory
        and its first work-item hands the total on. Units past `groups` (a
        last work-group not full) compute the last unit again and hand
        nothing on."""
        size = per_group * threads
        scratch = [kb.local_array(size, buffer_element_type(self.et), workgroup=True)]
        if self.index_type is not None:
            scratch.append(kb.local_array(size, self.index_type, workgroup=True))

        def body(group: SSAValue, flat: SSAValue) -> None:
            if per_group == 1:
                unit, tid, real = group, flat, None
            else:
                wanted = kb.add(kb.mul(group, per_group), kb.div(flat, threads))
                unit, tid = kb.min(wanted, groups - 1), kb.rem(flat, threads)
                real = kb.lt(wanted, groups)
            share, finish = work(unit, tid)
            work_group_tree(kb, self.kind, share, scratch, flat, size, threads if per_group > 1 else None)

            def first() -> list[SSAValue]:
                start = kb.idx(0) if per_group == 1 else segment_start(kb, flat, threads)
                finish([kb.val(memref.LoadOp.get(array, [start])) for array in scratch])
                return []

            lead = kb.lt(tid, 1)
            kb.if_(lead if real is None else kb.val(arith.AndIOp(lead, real)), first)

        return work_group_per(kb, -(-groups // per_group), size, body)

    def work_group_per_output(self) -> LoweredKernel:
        kb = self.kb
        # Outputs shared by fewer work-items than GPU_REDUCE_GROUP are several
        # to a work-group, a power of two of them: the work-group's size is one.
        per_group = pow2_at_most(min(GPU_REDUCE_GROUP // self.threads, self.n_out))

        def work(group: SSAValue, tid: SSAValue) -> tuple[list[SSAValue], Callable[[list[SSAValue]], None]]:
            kept = kb.delinearize(group, self.out_shape)
            if self.vector_shares:
                rows = numel(self.red_shape[:-1])
                share = [self._vector_accumulate(kb, kept, (0, rows), (0, self.shape[-1]), tid, self.threads)]
            else:
                share = self._scalar_accumulate(kb, kept, tid, self.count, self.threads, self._inits(kb))
            return share, lambda total: self._finish(kb, kept, total)

        return self._work_group_share(kb, self.n_out, self.threads, work, per_group)

    # -- two launches: partials per (output, chunk), then their totals -------------

    def split(self, plan: BufferPlan) -> LoweredKernel:
        """Partial results of every (output, chunk) into a scratch buffer,
        then each output's partials combined (the module docstring)."""
        parts = self._chunks()
        partials = Scratch(self.et, self.n_out * parts)
        first = KernelBuilder(
            f"{self.kernel.name}_partials", self.kernel.kind, self.profile, plan, list(self.kernel.inputs),
            ops=self.kernel.ops,
        )
        out = first.scratch_argument(partials)
        stage1 = self._partials_gpu(first, out, parts) if self.gpu else self._partials_cpu(first, out, parts)
        inp = self.kb.scratch_argument(partials)
        stage2 = self._totals_gpu(inp, parts) if self.gpu else self._totals_cpu(inp, parts)
        stage2.before = stage1
        return stage2

    def _chunks(self) -> int:
        """Chunks per output: on the CPU's vector path whole rows of the last
        dim, or pieces of one row, so that no vector straddles two rows."""
        if not self.use_vector:
            return -(-self.count // self.chunk)
        last, rows = self.shape[-1], numel(self.red_shape[:-1])
        if last >= self.chunk:
            return rows * -(-last // self.chunk)
        return -(-rows // (self.chunk // last))

    def _chunk_of(self, kb: KernelBuilder, kept: list[SSAValue], p: SSAValue) -> SSAValue:
        """The partial result of chunk `p` of one output (CPU)."""
        if not self.use_vector:
            lo = kb.mul(p, self.chunk)
            return self._scalar_accumulate(kb, kept, lo, kb.min(kb.add(lo, self.chunk), self.count), 1, self._inits(kb))[0]
        last, rows = self.shape[-1], numel(self.red_shape[:-1])
        if last >= self.chunk:
            per_row = -(-last // self.chunk)
            row, c0 = kb.div(p, per_row), kb.mul(kb.rem(p, per_row), self.chunk)
            return self._vector_accumulate(kb, kept, (row, kb.add(row, 1)), (c0, kb.min(kb.add(c0, self.chunk), last)))
        group = self.chunk // last
        r0 = kb.mul(p, group)
        return self._vector_accumulate(kb, kept, (r0, kb.min(kb.add(r0, group), rows)), (0, last))

    def _partials_cpu(self, kb: KernelBuilder, out: SSAValue, parts: int) -> LoweredKernel:
        total = self.n_out * parts
        def body(gid: SSAValue) -> None:
            kept = kb.delinearize(kb.div(gid, parts), self.out_shape)
            kb.op(memref.StoreOp.get(self._chunk_of(kb, kept, kb.rem(gid, parts)), out, [gid]))

        return work_item_per(kb, total, body)

    def _partials_gpu(self, kb: KernelBuilder, out: SSAValue, parts: int) -> LoweredKernel:
        def work(group: SSAValue, tid: SSAValue) -> tuple[list[SSAValue], Callable[[list[SSAValue]], None]]:
            kept = kb.delinearize(kb.div(group, parts), self.out_shape)
            lo = kb.mul(kb.rem(group, parts), self.chunk)
            hi = kb.min(kb.add(lo, self.chunk), self.count)
            share = self._scalar_accumulate(kb, kept, kb.add(lo, tid), hi, self.threads, self._inits(kb))
            return share, lambda partial: kb.op(memref.StoreOp.get(partial[0], out, [group]))

        return self._work_group_share(kb, self.n_out * parts, self.threads, work)

    def _blocked_sum_of_partials(
        self, kb: KernelBuilder, partials: SSAValue, base: SSAValue, lo: SSAValue | int, hi: int, step: int
    ) -> SSAValue:
        """partials[base + i] for i = lo, lo+step, ... < hi, combined in
        blocks of the profile's `reduce_chunk` (each block's total into the running one)."""
        span = step * self.profile.reduce_chunk

        def block(b: SSAValue, acc: list[SSAValue]) -> list[SSAValue]:
            def one(i: SSAValue, inner: list[SSAValue]) -> list[SSAValue]:
                x = kb.val(memref.LoadOp.get(partials, [kb.add(base, i)]))
                return [combine(kb, self.kind, inner[0], x)]

            inner = kb.for_(b, kb.min(kb.add(b, span), hi), step, [self._init(kb)], one)[0]
            return [combine(kb, self.kind, acc[0], inner)]

        return kb.for_(lo, hi, span, [self._init(kb)], block)[0]

    def _totals_cpu(self, partials: SSAValue, parts: int) -> LoweredKernel:
        kb = self.kb
        def body(gid: SSAValue) -> None:
            total = self._blocked_sum_of_partials(kb, partials, kb.mul(gid, parts), 0, parts, 1)
            self._finish(kb, kb.delinearize(gid, self.out_shape), [total])

        return work_item_per(kb, self.n_out, body)

    def _totals_gpu(self, partials: SSAValue, parts: int) -> LoweredKernel:
        kb = self.kb
        threads = work_group_size(parts, self.profile.reduce_threads, self.profile)

        def work(group: SSAValue, tid: SSAValue) -> tuple[list[SSAValue], Callable[[list[SSAValue]], None]]:
            kept = kb.delinearize(group, self.out_shape)
            share = [self._blocked_sum_of_partials(kb, partials, kb.mul(group, parts), tid, parts, threads)]
            return share, lambda total: self._finish(kb, kept, total)

        return self._work_group_share(kb, self.n_out, threads, work)
