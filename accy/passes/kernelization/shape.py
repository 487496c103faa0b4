"""Lowering of shape work items: the copies the buffer plan asks for (a
concat, a view that is returned or must be materialised contiguously).

A copy is a pointwise kernel whose chain is made of views and concats, so it
is `lower_elementwise`'s kernel: each work-item computes one output element's
source coordinates through the view index math (`Expr.view_coords`; a concat
picks its operand with `scf.if`) and copies it. Chains without views or
concats (a plain reshape of a contiguous value, say) are vectorised like
elementwise kernels.
"""

from __future__ import annotations

from accy.dialects.target import TargetProfile
from accy.passes.analyses.bufferization import BufferPlan
from accy.passes.analyses.outlining import OutlinedKernel
from accy.passes.kernelization.elementwise import lower_elementwise
from accy.passes.kernelization.lowered import LoweredKernel


def lower_shape(kernel: OutlinedKernel, plan: BufferPlan, profile: TargetProfile) -> LoweredKernel:
    """A copy kernel for a shape work item."""
    return lower_elementwise(kernel, plan, profile)
