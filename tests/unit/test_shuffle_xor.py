"""`accy_kernel.shuffle_xor` (a warp's butterfly exchange): its verifier,
the kernel interpreter's lockstep exchange, the OpenCL C emulation through
local memory (run on the first OpenCL device, PoCL here), the inline PTX it
prints under `mma = "sm80"`, and the LLVM backend declining it. The kernel:
two warps (64 work-items of a block of 32 x 2) over two work-groups; each
work-item exchanges an f32 and an i32 across every mask drawn."""

from __future__ import annotations

import numpy as np
import pytest
from xdsl.dialects import gpu
from xdsl.utils.exceptions import VerifyException

import accy
from accy.backends.llvm.emitter import LLVMEmitError, emit_llvm
from accy.backends.opencl.emitter import emit_opencl
from accy.reference.kernel_interpreter import run_kernel

MASKS = (1, 2, 3, 16, 31)
BLOCK = (32, 2)
GROUPS = 2
ITEMS = BLOCK[0] * BLOCK[1] * GROUPS


def _module(target: str, masks: tuple[int, ...] = MASKS) -> str:
    """Work-item with flat global id i (group-major) stores, for mask j, the
    exchanged f32 a[i] at f[j*N + i] and the exchanged i32 b[i] at n[j*N + i]."""
    n = ITEMS * len(masks)
    body = []
    for j, m in enumerate(masks):
        body += [
            f"    %x{j} = accy_kernel.shuffle_xor %a_i {{mask = {m} : i64}} : f32",
            f"    %y{j} = accy_kernel.shuffle_xor %b_i {{mask = {m} : i64}} : i32",
            f"    %o{j} = arith.addi %i, %c{j * ITEMS} : index",
            f"    memref.store %x{j}, %f[%o{j}] : memref<{n}xf32>",
            f"    memref.store %y{j}, %n[%o{j}] : memref<{n}xi32>",
        ]
    consts = "\n".join(f"    %c{j * ITEMS} = arith.constant {j * ITEMS} : index" for j in range(len(masks)))
    sig = f"memref<{ITEMS}xf32>, memref<{ITEMS}xi32>, memref<{n}xf32>, memref<{n}xi32>"
    return f"""builtin.module attributes {{accy.target = #accy.target<{target}>}} {{
"gpu.module"() <{{sym_name = "kernels"}}> ({{
  "gpu.func"() <{{function_type = ({sig}) -> (), kernel}}> ({{
  ^bb0(%a: memref<{ITEMS}xf32>, %b: memref<{ITEMS}xi32>, %f: memref<{n}xf32>, %n: memref<{n}xi32>):
{consts}
    %c32 = arith.constant 32 : index
    %c64 = arith.constant 64 : index
    %tx = "gpu.thread_id"() <{{dimension = #gpu<dim x>}}> : () -> index
    %ty = "gpu.thread_id"() <{{dimension = #gpu<dim y>}}> : () -> index
    %g = "gpu.block_id"() <{{dimension = #gpu<dim x>}}> : () -> index
    %l = arith.muli %ty, %c32 : index
    %lf = arith.addi %l, %tx : index
    %gb = arith.muli %g, %c64 : index
    %i = arith.addi %gb, %lf : index
    %a_i = memref.load %a[%i] : memref<{ITEMS}xf32>
    %b_i = memref.load %b[%i] : memref<{ITEMS}xi32>
{chr(10).join(body)}
    "gpu.return"() : () -> ()
  }}) {{sym_name = "k", gpu.known_block_size = array<i32: {BLOCK[0]}, {BLOCK[1]}, 1>}} : () -> ()
}}) : () -> ()
}}"""


def _inputs() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(7)
    return rng.standard_normal(ITEMS).astype(np.float32), rng.integers(-(2**31), 2**31 - 1, ITEMS, dtype=np.int32)


def _expected(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    i = np.arange(ITEMS)
    partners = [i ^ m for m in MASKS]  # 64 work-items a group: flat ids XOR m stay in the warp
    return np.concatenate([a[p] for p in partners]), np.concatenate([b[p] for p in partners])


def _func(module) -> gpu.FuncOp:
    return next(op for op in module.walk() if isinstance(op, gpu.FuncOp))


def test_the_interpreter_exchanges_in_lockstep() -> None:
    module = accy.parse_module(_module('profile = "gpu"'))
    a, b = _inputs()
    f = np.full(ITEMS * len(MASKS), np.nan, np.float32)
    n = np.zeros(ITEMS * len(MASKS), np.int32)
    run_kernel(_func(module), [a, b, f, n], [BLOCK[0] * GROUPS, BLOCK[1]], list(BLOCK))
    want_f, want_n = _expected(a, b)
    np.testing.assert_array_equal(f, want_f)
    np.testing.assert_array_equal(n, want_n)


def test_emulated_on_opencl_through_local_memory() -> None:
    cl = pytest.importorskip("pyopencl")
    from accy.runtime.opencl import opencl_devices

    devices = opencl_devices()
    if not devices:
        pytest.skip("no OpenCL device")
    source = emit_opencl(accy.parse_module(_module('profile = "gpu"')))
    assert "asm" not in source and source.count("barrier(CLK_LOCAL_MEM_FENCE)") == 4 * len(MASKS)
    ctx = cl.Context([devices[0]])
    queue = cl.CommandQueue(ctx)
    a, b = _inputs()
    flags = cl.mem_flags.READ_WRITE | cl.mem_flags.COPY_HOST_PTR
    f = np.full(ITEMS * len(MASKS), np.nan, np.float32)
    n = np.zeros(ITEMS * len(MASKS), np.int32)
    bufs = [cl.Buffer(ctx, flags, hostbuf=x) for x in (a, b, f, n)]
    kernel = cl.Kernel(cl.Program(ctx, source).build(), "k")
    kernel.set_args(*bufs)
    cl.enqueue_nd_range_kernel(queue, kernel, (BLOCK[0] * GROUPS, BLOCK[1]), BLOCK)
    cl.enqueue_copy(queue, f, bufs[2])
    cl.enqueue_copy(queue, n, bufs[3])
    queue.finish()
    want_f, want_n = _expected(a, b)
    np.testing.assert_array_equal(f, want_f)
    np.testing.assert_array_equal(n, want_n)


def test_sm80_prints_shfl_sync_and_llvm_declines() -> None:
    source = emit_opencl(accy.parse_module(_module('profile = "gpu", mma = "sm80"', (3,))))
    assert 'shfl.sync.bfly.b32 %0, %1, 3, 0x1f, 0xffffffff;' in source and "barrier(" not in source
    with pytest.raises(LLVMEmitError, match="shuffle_xor"):
        emit_llvm(accy.parse_module(_module('format = "llvm-ir"', (3,))))


@pytest.mark.parametrize(("text", "message"), [("{mask = 32 : i64} : f32", "mask must be in"), ("{mask = 1 : i64} : i8", "32-bit")])
def test_the_verifier_refuses_bad_masks_and_types(text: str, message: str) -> None:
    x = "%x = arith.constant 1 : i8" if text.endswith("i8") else "%x = arith.constant 1.0 : f32"
    with pytest.raises(VerifyException, match=message):
        accy.parse_module(f"builtin.module {{\n  {x}\n  %y = accy_kernel.shuffle_xor %x {text}\n}}").verify()
