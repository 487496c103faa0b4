"""Runs kernelized modules on OpenCL for the conformance suite.

`run_opencl(module, inputs)` compiles a tensor module with `accy.compile(...,
device="opencl")` when the runtime provides it; until then (and for checking
the kernels alone) `run_schedule` executes the host schedule itself: every
buffer the schedule allocates is first filled with a poison value (NaN, or a
sentinel integer) so that an output element no kernel wrote fails the
comparison, launches go to pyopencl, and `accy_host.fallback` regions run on
the reference interpreter.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

import numpy as np
import pyopencl as cl
from xdsl.dialects import arith, func, gpu, memref
from xdsl.dialects.builtin import FunctionType, ModuleOp

from accy.backends.opencl.emitter import emit_opencl
from accy.dialects import host
from accy.dialects.target import TargetProfile
from accy.passes.kernelization.kernelize import KernelizePass
from accy.passes.pass_manager import PassManager
from accy.reference.constants import dense_to_numpy, numpy_dtype
from accy.reference.interpreter import evaluate_op

POISON_INT = 0x5A


@dataclass
class Stats:
    kernels: int = 0
    fallbacks: int = 0


@cache
def _queue() -> cl.CommandQueue:
    platforms = cl.get_platforms()
    device = platforms[0].get_devices()[0]
    return cl.CommandQueue(cl.Context([device]))


def storage_dtype(t) -> np.dtype:
    d = numpy_dtype(t)
    return np.dtype(np.int8) if d == np.bool_ else d


def poisoned(n: int, dtype: np.dtype) -> np.ndarray:
    if dtype.kind == "f":
        return np.full(n, np.nan, dtype)
    return np.full(n, POISON_INT, dtype)


def kernelize(module: ModuleOp, profile: TargetProfile) -> ModuleOp:
    profile.attach(module)
    PassManager([KernelizePass()]).run(module)
    return module


def run_schedule(module: ModuleOp, inputs: list[np.ndarray], fn: str = "main") -> tuple[list[np.ndarray], Stats]:
    """Executes a kernelized module's host function (module docstring)."""
    queue = _queue()
    ctx = queue.context
    program = cl.Program(ctx, emit_opencl(module)).build()
    f = next(op for op in module.ops if isinstance(op, func.FuncOp) and op.sym_name.data == fn)
    sig = f.attributes["accy.signature"]
    assert isinstance(sig, FunctionType)
    mf = cl.mem_flags
    env: dict = {}
    stats = Stats()

    def new_buffer(host: np.ndarray) -> cl.Buffer:
        return cl.Buffer(ctx, mf.READ_WRITE | mf.COPY_HOST_PTR, hostbuf=np.ascontiguousarray(host))

    def read(value) -> np.ndarray:
        t = value.type
        out = np.empty(t.get_shape()[0], storage_dtype(t.element_type))
        cl.enqueue_copy(queue, out, env[value])
        return out

    for arg, a, t in zip(f.body.block.args, inputs, sig.inputs.data, strict=True):
        flat = np.asarray(a).astype(storage_dtype(t.element_type)).reshape(-1)
        n = arg.type.get_shape()[0]
        env[arg] = new_buffer(np.concatenate([flat, poisoned(n - flat.size, flat.dtype)]))
    for op in f.body.block.ops:
        if isinstance(op, arith.ConstantOp):
            env[op.result] = op.value.value.data
        elif isinstance(op, memref.AllocOp):
            t = op.memref.type
            env[op.memref] = new_buffer(poisoned(t.get_shape()[0], storage_dtype(t.element_type)))
        elif isinstance(op, host.ConstantOp):
            env[op.result] = new_buffer(dense_to_numpy(op.value).astype(storage_dtype(op.value.get_element_type())).reshape(-1))
        elif isinstance(op, gpu.LaunchFuncOp):
            sizes = [env[v] for v in op.operands[:6]]
            kernel = getattr(program, op.kernel.nested_references.data[-1].data)
            args = [env[v] for v in op.kernelOperands]
            glob = tuple(sizes[i] * sizes[3 + i] for i in range(3))
            kernel(queue, glob, tuple(sizes[3:]), *args)
            stats.kernels += 1
        elif isinstance(op, host.FallbackOp):
            stats.fallbacks += 1
            vals = {}
            for barg, buf in zip(op.body.block.args, op.inputs, strict=True):
                shape = tuple(barg.type.get_shape())
                data = read(buf)[: int(np.prod(shape))]
                vals[barg] = data.astype(numpy_dtype(barg.type.element_type)).reshape(shape)
            for inner in op.body.block.ops:
                if isinstance(inner, host.YieldOp):
                    for v, buf in zip(inner.values, op.outputs, strict=True):
                        data = vals[v].astype(storage_dtype(v.type.element_type)).reshape(-1)
                        cur = read(buf)
                        cur[: data.size] = data
                        cl.enqueue_copy(queue, env[buf], cur)
                    break
                results = evaluate_op(inner, [vals[o] for o in inner.operands])
                vals.update(zip(inner.results, results, strict=True))
        elif isinstance(op, func.ReturnOp):
            outs = []
            for v, t in zip(op.arguments, sig.outputs.data, strict=True):
                shape = tuple(t.get_shape())
                data = read(v)[: int(np.prod(shape))]
                outs.append(data.astype(numpy_dtype(t.element_type)).reshape(shape))
            queue.finish()
            return outs, stats
    raise AssertionError("host function without func.return")
