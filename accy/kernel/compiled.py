"""`Kernel.compile()`: the passes over a hand-written kernel, its
verification, and the `CompiledKernel` that runs it.

The passes, in order, on a copy of the built `gpu.func`:

1. dead-code elimination (xDSL's `region_dce`: pure ops whose results
   nobody uses go; loads and stores stay);
2. global buffers ordered: read-only buffers (inputs) first, then the
   others (outputs), each group in the order `define` made them;
3. the verifier: xDSL's op verifiers (types), every value used where it is
   defined (`check_dominance`), no store into a read-only buffer, at least
   one output, a launch of at most 2^32 work-items, and every load and
   store proved in bounds under the launch sizes by the bounds verifier
   (accy/passes/kernel_ir/bounds.py); building it for a device checks
   its local memory and work-group size against the device's limits.

The verified kernel is then a tensor program of one `accy.kernel_call`
(inputs -> outputs, flat tensors of the buffers' sizes) over a
`gpu.module @kernels` holding it, compiled with `accy.compile` for the
kernel's device: the same kernelize pass, backends, program caches and
debug output as generated kernels, and on the `reference` device the kernel
IR interpreted with numpy.
"""

from __future__ import annotations

from collections.abc import Sequence
from io import StringIO
from typing import Any

import numpy as np
from xdsl.dialects import func, gpu, memref, vector
from xdsl.dialects.builtin import DenseArrayBase, ModuleOp, StringAttr, SymbolRefAttr, TensorType, i32, i64
from xdsl.ir import Block, Operation, Region
from xdsl.printer import Printer
from xdsl.transforms.dead_code_elimination import region_dce
from xdsl.utils.exceptions import VerifyException

from accy.dialects import accy
from accy.dialects.host import KERNELS_MODULE
from accy.kernel.builder import Buffer, Kernel, KernelError, MemScope
from accy.passes.kernel_ir.bounds import GLOBAL_SIZE_ATTR, OutOfBoundsError, launch_of, verify_bounds
from accy.passes.kernel_ir.kernel_checks import InvalidKernelError, check_dominance, resource_problem
from accy.runtime.array import Array
from accy.runtime.executable import Executable
from accy.runtime.executable import compile as compile_module


def _verified(k: Kernel) -> tuple[gpu.FuncOp, list[Buffer], list[Buffer]]:
    """The kernel's function after the passes and the verifier (module
    docstring), with its input and output buffers in argument order."""
    original = k.kb.func
    f = original.clone()
    where = {new: k.where[old] for old, new in zip(original.walk(), f.walk(), strict=True) if old in k.where}
    globals_ = [b for b in k.buffers if b.scope is MemScope.GLOBAL]
    inputs = [b for b in globals_ if b.read_only]
    outputs = [b for b in globals_ if not b.read_only]
    if not outputs:
        raise KernelError(f"kernel @{k.name} has no output: define a GLOBAL buffer with read_only=False and store to it")
    f = _ordered(f, [b.index for b in (*inputs, *outputs)])
    region_dce(f.body)
    try:
        check_dominance(f, "as built")
    except InvalidKernelError as e:
        at = f" ({where[e.op]})" if e.op in where else ""
        made = e.operand.owner.name if e.operand is not None and isinstance(e.operand.owner, Operation) else "a value"
        raise KernelError(
            f"kernel @{k.name}: '{e.op.name if e.op else '?'}'{at} uses a value ({made}) made inside a "
            "`with k.loop(...)` or `with k.if_(...)` block after that block: values do not leave their block; "
            "keep it in a PRIVATE buffer (define(dtype, MemScope.PRIVATE, size=1)) and load it after the block"
        ) from None
    try:
        f.verify()
    except VerifyException as e:
        raise KernelError(f"kernel @{k.name} does not verify: {e}") from None
    read_only = {f.body.block.args[i] for i in range(len(inputs))}
    for op in f.walk():
        if isinstance(op, memref.StoreOp | vector.StoreOp) and op.operands[1] in read_only:
            raise KernelError(f"kernel @{k.name}: {op.name} into read-only buffer #{op.operands[1].index}")
    global_size, local_size = k.launch_sizes()
    launch = launch_of(global_size, local_size)
    # The device's local memory and work-group size are checked where the
    # kernel is built for it (kernel_call.py); the launch's size here, on
    # every device.
    problem = resource_problem(f, launch.grid, launch.block)
    if problem is not None:
        raise KernelError(problem)
    try:
        verify_bounds(f, launch, where.get)
    except OutOfBoundsError as e:
        raise KernelError(
            f"kernel @{k.name} may access memory out of bounds:\n" + "\n".join(f"  {p.message}" for p in e.problems)
        ) from None
    f.known_block_size = DenseArrayBase.from_list(i32, [*local_size, 1, 1, 1][:3])
    f.attributes[GLOBAL_SIZE_ATTR] = DenseArrayBase.from_list(i64, global_size)
    return f, inputs, outputs


def _ordered(f: gpu.FuncOp, order: list[int]) -> gpu.FuncOp:
    """`f` with its arguments permuted: new argument j is old argument order[j]."""
    old = f.body.block
    types = [old.args[i].type for i in order]
    block = Block(arg_types=types)
    for j, i in enumerate(order):
        old.args[i].replace_all_uses_with(block.args[j])
    for op in list(old.ops):
        op.detach()
        block.add_op(op)
    new = gpu.FuncOp(f.sym_name.data, (types, []), Region(block), kernel=True)
    for name, attr in f.attributes.items():
        if name not in ("sym_name", "function_type"):
            new.attributes[name] = attr
    return new


def kernel_module(k: Kernel) -> ModuleOp:
    """A module of `gpu.module @kernels` holding the verified kernel (see `Kernel.module`)."""
    f, _, _ = _verified(k)
    return ModuleOp([gpu.ModuleOp(StringAttr(KERNELS_MODULE), Region(Block([f])))])  # type: ignore[arg-type]


def _tensor(b: Buffer) -> TensorType:
    return TensorType(b.element_type, [b.size])


def compile_kernel(k: Kernel) -> CompiledKernel:
    """`Kernel.compile()`: see the module docstring."""
    f, inputs, outputs = _verified(k)
    global_size, local_size = k.launch_sizes()
    block = Block(arg_types=[_tensor(b) for b in inputs])
    call = accy.KernelCallOp(k.name, block.args, [_tensor(b) for b in outputs], global_size, local_size)
    call.properties["callee"] = SymbolRefAttr(KERNELS_MODULE, [k.name])  # @kernels::@<name>
    block.add_ops([call, func.ReturnOp(*call.results)])
    main = func.FuncOp("main", ([_tensor(b) for b in inputs], [_tensor(b) for b in outputs]), Region(block))
    kernels = gpu.ModuleOp(StringAttr(KERNELS_MODULE), Region(Block([f])))  # type: ignore[arg-type]
    module = ModuleOp([main, kernels])
    try:
        exe = compile_module(module, device=k.device)
    except (ValueError, RuntimeError) as e:
        device = k.device if isinstance(k.device, str) else k.device.name
        raise KernelError(f"kernel @{k.name} cannot be built for device '{device}': {e}") from None
    return CompiledKernel(k.name, f, inputs, outputs, exe)


class CompiledKernel:
    """A verified kernel built for its device. `forward` runs it."""

    def __init__(self, name: str, f: gpu.FuncOp, inputs: list[Buffer], outputs: list[Buffer], exe: Executable) -> None:
        self.name = name
        self.func = f
        self.inputs = inputs
        self.outputs = outputs
        self.executable = exe

    @property
    def source(self) -> str:
        """The kernel as the device builds it (OpenCL C, LLVM IR; "" on the reference device)."""
        return self.executable.program.source

    def device_info(self) -> str:
        """The device this kernel runs on: its name and what it is."""
        device = self.executable.device
        description = getattr(device, "description", "the numpy reference interpreter of the kernel IR")
        return f"{device.name}: {description}"

    def __str__(self) -> str:
        """The verified kernel IR, as text."""
        text = StringIO()
        Printer(stream=text).print_op(self.func)
        return text.getvalue()

    def forward(
        self, inputs: Sequence[np.ndarray | Array], output_shapes: Sequence[Sequence[int]], to_host: bool = True
    ) -> list[Any]:
        """Runs the kernel once over its launch. `inputs` are the read-only
        buffers in the order defined, each a numpy array or an `accy.Array`
        (of the kernel's device: used in place; of another: copied) of the
        buffer's dtype with as many elements as the buffer (any shape: it is
        read row-major); `output_shapes` give each output's shape (an int is
        a 1-D shape), as many elements as its buffer. Returns the outputs as
        numpy arrays of those shapes, or with `to_host=False` as
        `accy.Array`s that stay on the device."""
        if len(inputs) != len(self.inputs):
            raise KernelError(f"kernel @{self.name} takes {len(self.inputs)} input(s), got {len(inputs)}")
        if len(output_shapes) != len(self.outputs):
            raise KernelError(f"kernel @{self.name} has {len(self.outputs)} output(s), got {len(output_shapes)} output shape(s)")
        flat = [self._to_device(i, a, b) for i, (a, b) in enumerate(zip(inputs, self.inputs, strict=True))]
        shapes = []
        for i, (shape, b) in enumerate(zip(output_shapes, self.outputs, strict=True)):
            try:
                shape = (int(shape),) if isinstance(shape, int | np.integer) else tuple(int(n) for n in shape)
            except TypeError:
                raise KernelError(f"output #{i} of @{self.name}: shape must be a sequence of integers, got {shape!r}") from None
            if int(np.prod(shape)) != b.size or any(n < 0 for n in shape):
                raise KernelError(
                    f"output #{i} of @{self.name}: shape {shape} has {int(np.prod(shape))} elements; "
                    f"its buffer holds {b.size} ({b.dtype})"
                )
            shapes.append(shape)
        results = self.executable(*flat, to_host=to_host)
        return [self._from_device(r, s) for r, s in zip(results, shapes, strict=True)]

    def _to_device(self, i: int, array: object, b: Buffer) -> np.ndarray | Array:
        """Input `i` as the executable takes it (a flat array of the buffer's size)."""
        if not isinstance(array, np.ndarray | Array):
            raise KernelError(
                f"input #{i} of @{self.name} must be a numpy array or an accy.Array of {b.dtype}, got {type(array).__name__}"
            )
        if array.dtype != b.dtype:
            raise KernelError(f"input #{i} of @{self.name} must be {b.dtype} ({b.describe()}), got {array.dtype}")
        if array.size != b.size:
            raise KernelError(
                f"input #{i} of @{self.name} must have {b.size} elements ({b.describe()}), got {array.size} (shape {array.shape})"
            )
        return array.reshape(-1)

    @staticmethod
    def _from_device(result: np.ndarray | Array, shape: tuple[int, ...]) -> np.ndarray | Array:
        return result.reshape(shape)
