"""Lowering of scan work items: one `accy.scan` (any kind, axis, exclusive,
reverse) with its elementwise prologue and epilogue fused.

One work-item owns one line along the scan axis (every other coordinate
fixed) and walks it in order (from the end when `reverse`), carrying the
running value: an inclusive scan stores it after combining the element, an
exclusive one before (so the first element is the identity). The prologue is
evaluated at each element and the epilogue at each stored element. Both
profiles use this kernel: lines are independent, so a GPU runs one per
work-item too (long lines would gain from a work-group scan, which this
lowering does not build).
"""

from __future__ import annotations

from xdsl.ir import SSAValue

from accy.dialects import accy
from accy.dialects.target import TargetProfile
from accy.dialects.types import numel
from accy.passes.analyses.bufferization import BufferPlan
from accy.passes.analyses.outlining import OutlinedKernel
from accy.passes.kernelization.combining import combine, identity, place
from accy.passes.kernelization.evaluate import Expr
from accy.passes.kernelization.kernel_builder import anchored_kernel
from accy.passes.kernelization.launch import work_item_per
from accy.passes.kernelization.lowered import LoweredKernel


def lower_scan(kernel: OutlinedKernel, plan: BufferPlan, profile: TargetProfile) -> LoweredKernel:
    """A scan kernel: one `accy.scan` and the work fused around it."""
    kb, scan = anchored_kernel(kernel, plan, profile, accy.ScanOp, "scan")
    shape = accy.shape_of(scan.x)
    kind, et = scan.kind.data, accy.elem_of(scan.x)
    rank = len(shape)
    axis = scan.axis.value.data % rank if rank else 0
    n = shape[axis] if rank else 1
    line_shape = [s for d, s in enumerate(shape) if d != axis]
    lines = numel(line_shape)
    others = [op for op in kernel.ops if op is not scan]
    def body(gid: SSAValue) -> None:
        kept = kb.delinearize(gid, line_shape)

        def step(k: SSAValue, carried: list[SSAValue]) -> list[SSAValue]:
            pos = kb.sub(n - 1, k) if scan.reverse.value.data else k
            coords = place(rank, (axis,), [pos], kept) if rank else []
            x = Expr(kb, others).at(scan.x, coords)
            acc = combine(kb, kind, carried[0], x)
            result = carried[0] if scan.exclusive.value.data else acc
            epilogue = Expr(kb, others)
            epilogue.pin(scan.result, lambda _: result)
            epilogue.store(kernel.outputs, coords)
            return [acc]

        kb.for_(0, n, 1, [kb.const(identity(kind, et), et)], step)

    return work_item_per(kb, lines, body)
