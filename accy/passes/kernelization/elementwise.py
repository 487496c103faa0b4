"""Lowering of elementwise work items: any fused chain of elementwise ops and
views, one or more outputs.

Each work-item owns W consecutive elements of an output row (W = the target's
vector width): it evaluates the chain with `vector<WxT>` loads, math and
stores, and the last, partial chunk of a row falls back to a scalar loop.
Before that, dims that every buffer walks as one are merged (a contiguous
tensor becomes one long row; a bias broadcast over rows keeps two dims), so
vectors span whole rows (a contiguous chain is one row: work-item i owns
elements W*i.., with no div/rem index math). Compares, selects, casts and
i1 masks are vectorised like the rest. A chain with views inside it (a
transpose of a computed value, say) evaluates one element per work-item
through the view's index math instead. The same kernel serves CPUs and GPUs:
on a GPU the vector width is small and work-groups are larger (`launch_1d`).
Shape work items (the copies the buffer plan asks for: a concat, a view
that is returned or must be materialised contiguously) are pointwise
kernels whose chain is views and concats, so they take this same lowering:
each work-item computes one output element's source coordinates through
the view index math (a concat picks its operand with `scf.if`).
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.ir import Operation, SSAValue

from accy.dialects import accy
from accy.dialects.target import TargetProfile
from accy.dialects.types import numel
from accy.passes.analyses.bufferization import BufferPlan
from accy.passes.analyses.outlining import OutlinedKernel
from accy.passes.kernelization.evaluate import Expr, vectorizable
from accy.passes.kernelization.kernel_builder import Access, KernelBuilder, collapse
from accy.passes.kernelization.launch import guarded, work_item_per
from accy.passes.kernelization.lowered import LoweredKernel


def lower_elementwise(kernel: OutlinedKernel, plan: BufferPlan, profile: TargetProfile) -> LoweredKernel:
    """Computes every output of `kernel` element by element (W lanes at a
    time when the chain is `vectorizable`). Outputs of different shapes share
    one launch, each guarded by its own element count."""
    kb = KernelBuilder.for_kernel(kernel, plan, profile)
    width = profile.vector_width if vectorizable(kernel.ops, kb) else 1
    groups: dict[tuple[int, ...], list[SSAValue]] = {}
    for out in kernel.outputs:
        groups.setdefault(accy.shape_of(out), []).append(out)
    plans = [_plan_group(kb, kernel, shape, outs, width) for shape, outs in groups.items()]
    total = max(p.count for p in plans)

    def body(gid: SSAValue) -> None:
        for p in plans:
            guarded(kb, gid, p.count, total, lambda p=p: p.emit(gid))

    return work_item_per(kb, total, body)


class _SameShapeOutputs:
    """The outputs of one shape, and how work-items map onto them."""

    def __init__(
        self, kb: KernelBuilder, ops: Sequence[Operation], shape: list[int], outs: list[SSAValue],
        access: dict[SSAValue, Access], width: int,
    ) -> None:
        self.kb, self.ops, self.shape, self.outs, self.access = kb, ops, shape, outs, access
        self.last = shape[-1] if shape else 1
        self.width = width if self.last >= width else 1
        self.per_row = -(-self.last // self.width)
        self.count = numel(shape[:-1]) * self.per_row

    def emit(self, gid: SSAValue) -> None:
        kb, w, last = self.kb, self.width, self.last
        if w == 1:
            self._store(kb.delinearize(gid, self.shape), 1)
            return
        if len(self.shape) == 1:  # one row: work-item i owns lanes i*W..
            prefix, col = [], kb.mul(gid, w)
        else:
            row, col = kb.div(gid, self.per_row), kb.mul(kb.rem(gid, self.per_row), w)
            prefix = kb.delinearize(row, self.shape[:-1])
        if last % w == 0:
            self._store([*prefix, col], w)
            return

        def full() -> list[SSAValue]:
            self._store([*prefix, col], w)
            return []

        def tail() -> list[SSAValue]:
            kb.for_(col, last, 1, [], lambda i, _: (self._store([*prefix, i], 1), [])[1])
            return []

        kb.if_(kb.lt(kb.add(col, w), last + 1), full, tail)

    def _store(self, coords: list[SSAValue], width: int) -> None:
        Expr(self.kb, self.ops, width, self.access).store(self.outs, coords)


def _plan_group(
    kb: KernelBuilder, kernel: OutlinedKernel, shape: tuple[int, ...], outs: list[SSAValue], width: int
) -> _SameShapeOutputs:
    if not vectorizable(kernel.ops, kb):
        # Views inside the chain: coordinates stay in the outputs' own shape.
        return _SameShapeOutputs(kb, kernel.ops, list(shape), outs, kb.access, 1)
    # No inner views: every input has the outputs' shape, so the dims can be
    # merged wherever all buffers allow it.
    leaves = [v for v in kb.access if accy.shape_of(v) == shape]
    new_shape, strides = collapse(shape, [kb.access[v].strides for v in leaves])
    access = {v: Access(kb.access[v].arg, kb.access[v].offset, tuple(s), kb.access[v].element_type)
              for v, s in zip(leaves, strides, strict=False)}
    return _SameShapeOutputs(kb, kernel.ops, new_shape, outs, access, width)
