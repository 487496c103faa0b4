"""The `kernel_call` lowering: an `accy.kernel_call` work item launches its
callee, a hand-written `gpu.func` already in the module's `gpu.module`.

The kernel is launched as it is (never rebuilt, tidied or copied: one
kernel serves every call of it), over the buffers the plan gives the call's
inputs then its outputs, with the call's launch sizes (`global_size`,
`local_size`, else those the callee states: `accy.global_size` and
`gpu.known_block_size`). It is proved in bounds under that launch first,
always (a custom kernel gets the verifier that `Kernel.compile()` runs);
one that is not is an error (`OutOfBoundsError`), not a host fallback.

Under the LLVM IR format (the LLVM device runs x-dimension launches of
independent work-items), a kernel with barriers or work-group memory, or a
2-D or 3-D launch, is launched in its work-group-per-work-item form
(work_groups.py), made once and kept beside it.

It declines (the call then runs on the host reference path, which
interprets the kernel IR) where a buffer is not the whole value: an input
that is a strided view or a splat constant.
"""

from __future__ import annotations

from xdsl.dialects import gpu
from xdsl.dialects.builtin import MemRefType, ModuleOp, StringAttr
from xdsl.traits import SymbolTable

from accy.dialects import accy
from accy.dialects.accy import kernel_name_problem
from accy.dialects.host import buffer_element_type
from accy.dialects.target import TargetProfile
from accy.dialects.types import element_bytes, is_row_major
from accy.passes.analyses.bufferization import BufferPlan
from accy.passes.analyses.outlining import OutlinedKernel
from accy.passes.kernel_ir.bounds import LaunchSizes, launch_of, verify_bounds
from accy.passes.kernel_ir.kernel_checks import resource_problem
from accy.passes.kernel_ir.work_groups import KernelShapeError, needs_serializing, serialize_work_groups
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
    problem = kernel_name_problem(callee.sym_name.data)
    if problem is not None:  # every backend prints it as a C function name
        raise KernelCallError(f"'{call.name}' of {call.callee}: {problem}")
    try:
        global_size, local_size = call.launch_sizes(callee)
    except ValueError as e:
        raise KernelCallError(str(e)) from None
    launch = launch_of(global_size, local_size)
    problem = resource_problem(callee, launch.grid, launch.block, profile.local_capacity, profile.max_work_group_size)
    if problem is not None:
        raise KernelCallError(problem)
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
    if profile.format == "llvm-ir" and needs_serializing(callee, launch):
        # The LLVM device runs x-dimension launches of independent
        # work-items: run each work-group as one (work_groups.py).
        callee = _serialized(callee, launch)
        launch = LaunchSizes((launch.grid[0] * launch.grid[1] * launch.grid[2], 1, 1), (1, 1, 1))
    return LoweredKernel(callee, launch.grid, launch.block, buffers, list(values), existing=True)


def _serialized(callee: gpu.FuncOp, launch: LaunchSizes) -> gpu.FuncOp:
    """The work-group-per-work-item form of `callee` under `launch`, made
    once and kept beside it in its gpu.module (named after it and the launch)."""
    g, b = launch.grid, launch.block
    name = f"{callee.sym_name.data}_groups_{'x'.join(map(str, g))}_{'x'.join(map(str, b))}"
    holder = callee.parent_block()
    assert holder is not None
    for op in holder.ops:
        if isinstance(op, gpu.FuncOp) and op.sym_name.data == name:
            return op
    try:
        serial = serialize_work_groups(callee, launch, name)
    except KernelShapeError as e:
        raise KernelCallError(str(e)) from None
    holder.insert_op_after(serial, callee)
    callee.attributes[SERIALIZED_ATTR] = StringAttr(name)
    return serial


#: On a custom kernel launched in its work-group-per-work-item form: that
#: form's name. `drop_serialized` removes such kernels when nothing launches them.
SERIALIZED_ATTR = "accy.serialized_as"


def drop_serialized(module: ModuleOp) -> None:
    """Erases the custom kernels replaced by their work-group-per-work-item
    form that no `gpu.launch_func` of `module` launches (a backend that
    needs the replacement cannot print them)."""
    launched = set()
    for op in module.walk():
        if isinstance(op, gpu.LaunchFuncOp):
            ref = op.kernel
            launched.add((ref.nested_references.data[-1] if ref.nested_references.data else ref.root_reference).data)
    for op in list(module.walk()):
        if isinstance(op, gpu.FuncOp) and SERIALIZED_ATTR in op.attributes and op.sym_name.data not in launched:
            op.detach()
            op.erase()
