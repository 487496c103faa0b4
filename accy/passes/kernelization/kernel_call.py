"""The `kernel_call` lowering: an `accy.kernel_call` work item launches its
callee, a hand-written `gpu.func` already in the module's `gpu.module`.

The kernel is launched as it is (never rebuilt, tidied or copied: one
kernel serves every call of it), over the buffers the plan gives the call's
inputs then its outputs, with the call's launch sizes (`global_size`,
`local_size`, else those the callee states: `accy.global_size` and
`gpu.known_block_size`). It is proved in bounds under that launch first,
always (a custom kernel gets the verifier that `Kernel.compile()` runs);
one that is not is an error (`OutOfBoundsError`), not a host fallback.

It declines (the call then runs on the host reference path, which
interprets the kernel IR) where a buffer is not the whole value: an input
that is a strided view or a splat constant.
"""

from __future__ import annotations

from xdsl.dialects import gpu
from xdsl.dialects.builtin import MemRefType
from xdsl.traits import SymbolTable

from accy.dialects import accy
from accy.dialects.host import buffer_element_type
from accy.dialects.target import TargetProfile
from accy.dialects.types import element_bytes, is_row_major
from accy.passes.analyses.bufferization import BufferPlan
from accy.passes.analyses.outlining import OutlinedKernel
from accy.passes.kernelization.bounds import launch_of, verify_bounds
from accy.passes.kernelization.lowered import Decline, LoweredKernel


class KernelCallError(ValueError):
    """An `accy.kernel_call` that cannot run anywhere (no launch size)."""


def lower_kernel_call(kernel: OutlinedKernel, plan: BufferPlan, profile: TargetProfile) -> LoweredKernel:
    calls = [op for op in kernel.ops if isinstance(op, accy.KernelCallOp)]
    if len(calls) != 1:
        raise Decline(f"a kernel_call work item holds one accy.kernel_call, got {len(calls)}")
    call = calls[0]
    callee = SymbolTable.lookup_symbol(call, call.callee)
    assert isinstance(callee, gpu.FuncOp)  # the op's verifier checked it
    try:
        global_size, local_size = call.launch_sizes(callee)
    except ValueError as e:
        raise KernelCallError(str(e)) from None
    launch = launch_of(global_size, local_size)
    verify_bounds(callee, launch)
    values = [*call.inputs, *call.outs]
    buffers = []
    for i, (v, t) in enumerate(zip(values, callee.function_type.inputs.data, strict=True)):
        what = f"input #{i}" if i < len(call.inputs) else f"output #{i - len(call.inputs)}"
        ref = plan.refs.get(v)
        if ref is None or ref.offset != 0 or not is_row_major(ref.shape, ref.strides):
            raise Decline(f"{what} of the call of {call.callee} is not a whole buffer (a view or a splat constant)")
        buf = plan.buffer_of(v)
        assert isinstance(t, MemRefType)
        if buffer_element_type(accy.elem_of(v)) != t.element_type or buf.nbytes < element_bytes(t.element_type) * t.get_shape()[0]:
            raise Decline(f"{what} of the call of {call.callee} does not fit the kernel's buffer {t}")
        buffers.append(buf)
    return LoweredKernel(callee, launch.grid, launch.block, buffers, list(values), existing=True)
