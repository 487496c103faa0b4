"""Lowering of reduction work items: one `accy.reduce` (any axes, any kind)
with the elementwise prologue that feeds it and the epilogue that consumes
its result fused in, as the work item lists them.

CPU profile: one work-item per output element loops over the reduced
elements. When the last dim is reduced and the prologue has no views, it
walks that dim W lanes at a time into a vector accumulator (`vector.reduction`
at the end) with a scalar tail; otherwise a scalar loop over the flattened
reduced index space. No barriers.

GPU profile: one work-group per output element; each work-item accumulates a
strided share of the reduced elements, then a tree in local memory (with
barriers, `work_group_tree`) combines the shares, and work-item 0 reads the
total, runs the epilogue and stores.

`mean` is a sum divided by the reduced count.
"""

from __future__ import annotations

from xdsl.dialects import arith
from xdsl.dialects.builtin import VectorType
from xdsl.ir import SSAValue

from accy.dialects import accy
from accy.dialects.host import buffer_element_type
from accy.dialects.target import TargetProfile
from accy.passes.analyses.bufferization import BufferPlan
from accy.passes.analyses.outlining import OutlinedKernel
from accy.passes.analyses.shape_layout import numel
from accy.passes.kernelization.combining import (
    combine,
    identity,
    place,
    vector_total,
    work_group_size,
    work_group_total,
    work_group_tree,
)
from accy.passes.kernelization.common import (
    Expr,
    KernelBuilder,
    LoweredKernel,
    anchored_kernel,
    guarded,
    launch_1d,
    vectorizable,
)

#: Work-items of a GPU work-group sharing one output element (at most).
GPU_REDUCE_THREADS = 256


def lower_reduction(kernel: OutlinedKernel, plan: BufferPlan, profile: TargetProfile) -> LoweredKernel:
    """A reduction kernel: one `accy.reduce` and the work fused around it."""
    kb, red = anchored_kernel(kernel, plan, profile, accy.ReduceOp, "reduction")
    lowering = _Reduction(kb, kernel, red)
    return lowering.work_group_per_output() if profile.profile == "gpu" else lowering.work_item_per_output()


class _Reduction:
    """The reduction's index spaces (reduced and kept dims) and its kernels."""

    def __init__(self, kb: KernelBuilder, kernel: OutlinedKernel, red: accy.ReduceOp) -> None:
        self.kb, self.kernel, self.red = kb, kernel, red
        self.kind = red.kind.data
        self.x = red.x
        self.shape = accy.shape_of(red.x)
        self.axes = red.norm_axes()
        self.red_shape = [self.shape[a] for a in self.axes]
        self.count = numel(self.red_shape)
        self.out_shape = accy.shape_of(red.result)
        self.n_out = numel(self.out_shape)
        self.et = accy.elem_of(red.x)
        self.prologue = [op for op in kernel.ops if op is not red]

    def _full(self, reduced: list[SSAValue], kept: list[SSAValue]) -> list[SSAValue]:
        return place(len(self.shape), self.axes, reduced, kept)

    def _scalar_accumulate(self, kept: list[SSAValue], lo: SSAValue | int, step: int, acc: SSAValue) -> SSAValue:
        """acc combined with x at reduced flat indices lo, lo+step, ... < count."""
        kb = self.kb

        def body(r: SSAValue, carried: list[SSAValue]) -> list[SSAValue]:
            x = Expr(kb, self.prologue).at(self.x, self._full(kb.delinearize(r, self.red_shape), kept))
            return [combine(kb, self.kind, carried[0], x)]

        return kb.for_(lo, self.count, step, [acc], body)[0]

    def _vector_accumulate(self, kept: list[SSAValue], width: int) -> SSAValue:
        """The last dim is reduced: W lanes at a time, then a scalar tail."""
        kb = self.kb
        last = self.shape[-1]
        outer_shape = self.red_shape[:-1]
        vt = VectorType(self.et, [width])
        full_end = last - last % width

        def outer(o: SSAValue, carried: list[SSAValue]) -> list[SSAValue]:
            prefix = kb.delinearize(o, outer_shape)

            def vec(c: SSAValue, acc: list[SSAValue]) -> list[SSAValue]:
                x = Expr(kb, self.prologue, width).at(self.x, self._full([*prefix, c], kept))
                return [combine(kb, self.kind, acc[0], x)]

            def tail(c: SSAValue, acc: list[SSAValue]) -> list[SSAValue]:
                x = Expr(kb, self.prologue).at(self.x, self._full([*prefix, c], kept))
                return [combine(kb, self.kind, acc[0], x)]

            v = kb.for_(0, full_end, width, [carried[0]], vec)[0]
            s = kb.for_(full_end, last, 1, [carried[1]], tail)[0]
            return [v, s]

        init = [kb.const(identity(self.kind, self.et), vt), kb.const(identity(self.kind, self.et), self.et)]
        v, s = kb.for_(0, numel(outer_shape), 1, init, outer)
        return combine(kb, self.kind, vector_total(kb, self.kind, v), s)

    def _finish(self, kept: list[SSAValue], total: SSAValue) -> None:
        """Epilogue and stores of one output element."""
        kb = self.kb
        if self.kind == "mean":
            total = kb.val(arith.DivfOp(total, kb.const(float(self.count), self.et)))
        epilogue = Expr(kb, self.prologue)
        epilogue.pin(self.red.result, lambda _: total)
        epilogue.store(self.kernel.outputs, kept)

    def work_item_per_output(self) -> LoweredKernel:
        kb = self.kb
        width = kb.profile.vector_width
        use_vector = (
            width > 1
            and (len(self.shape) - 1) in self.axes
            and self.shape[-1] >= width
            and vectorizable(self.prologue, self.kb)
            and (accy.is_float(self.et) or self.kind in ("sum", "prod", "mean"))
        )
        grid, block, padded = launch_1d(self.n_out, kb.profile)
        gid = kb.global_id()

        def body() -> None:
            kept = kb.delinearize(gid, self.out_shape)
            if use_vector:
                total = self._vector_accumulate(kept, width)
            else:
                total = self._scalar_accumulate(kept, 0, 1, kb.const(identity(self.kind, self.et), self.et))
            self._finish(kept, total)

        guarded(kb, gid, self.n_out, padded, body)
        return kb.lowered(grid, block)

    def work_group_per_output(self) -> LoweredKernel:
        kb = self.kb
        size = work_group_size(self.count, GPU_REDUCE_THREADS, kb.profile)
        scratch = kb.local_array(size, buffer_element_type(self.et), workgroup=True)
        group, tid = kb.group_id(), kb.local_id()
        kept = kb.delinearize(group, self.out_shape)
        share = self._scalar_accumulate(kept, tid, size, kb.const(identity(self.kind, self.et), self.et))
        work_group_tree(kb, self.kind, share, scratch, tid, size)

        def store() -> list[SSAValue]:
            self._finish(kept, work_group_total(kb, scratch))
            return []

        kb.if_(kb.lt(tid, 1), store)
        return kb.lowered((max(self.n_out, 1), 1, 1), (size, 1, 1))
