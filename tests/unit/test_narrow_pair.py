"""`accy_kernel.narrow_pair` (two f32 values rounded to a pair of f16 or
bf16, an mma fragment register): its verifier, the kernel interpreter, the
OpenCL C it prints with and without `mma = "sm80"` (a packed `cvt.rn`, or
two conversions), run on the first OpenCL device (PoCL here, NVIDIA's
driver on the H200, where the sm80 form runs), and the LLVM backend
declining it. Every lane is compared bit for bit with numpy's rounding (to
nearest even; ties, overflow to inf, subnormals, signed zeros), but NaN
lanes, which need only be NaN."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from xdsl.dialects import gpu
from xdsl.utils.exceptions import VerifyException

import accy
from accy.backends.llvm.emitter import LLVMEmitError, emit_llvm
from accy.backends.opencl.emitter import emit_opencl
from accy.reference.kernel_interpreter import run_kernel

DTYPES = {"f16": np.dtype(np.float16), "bf16": np.dtype(ml_dtypes.bfloat16)}
PAIRS = 64


def _module(et: str, target: str) -> str:
    """Work-item i rounds (a[2i], a[2i+1]) and stores the pair's lanes at out[2i], out[2i+1]."""
    n = 2 * PAIRS
    return f"""builtin.module attributes {{accy.target = #accy.target<{target}>}} {{
"gpu.module"() <{{sym_name = "kernels"}}> ({{
  "gpu.func"() <{{function_type = (memref<{n}xf32>, memref<{n}x{et}>) -> (), kernel}}> ({{
  ^bb0(%a: memref<{n}xf32>, %o: memref<{n}x{et}>):
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %g = "gpu.global_id"() <{{dimension = #gpu<dim x>}}> : () -> index
    %i = arith.muli %g, %c2 : index
    %j = arith.addi %i, %c1 : index
    %lo = memref.load %a[%i] : memref<{n}xf32>
    %hi = memref.load %a[%j] : memref<{n}xf32>
    %p = accy_kernel.narrow_pair %lo, %hi : vector<2x{et}>
    %x = vector.extract %p[0] : {et} from vector<2x{et}>
    %y = vector.extract %p[1] : {et} from vector<2x{et}>
    memref.store %x, %o[%i] : memref<{n}x{et}>
    memref.store %y, %o[%j] : memref<{n}x{et}>
    "gpu.return"() : () -> ()
  }}) {{sym_name = "k", gpu.known_block_size = array<i32: {PAIRS}, 1, 1>}} : () -> ()
}}) : () -> ()
}}"""


def _inputs(et: str) -> np.ndarray:
    """Random values and the cases a rounding gets wrong: exact ties (odd and
    even), values past the largest finite, subnormals, ±0, ±inf, NaN."""
    ulp = 2.0**-10 if et == "f16" else 2.0**-7  # of 1.0
    big = 65520.0 if et == "f16" else 3.3961776e38  # past the largest finite (rounds to inf)
    tiny = 2.0**-25 if et == "f16" else 2.0**-134
    special = [1 + ulp / 2, 1 + 3 * ulp / 2, -(1 + ulp / 2), 3 + 3 * ulp, big, -big, tiny, 3 * tiny, 0.0, -0.0]
    special += [np.inf, -np.inf, np.nan, -np.nan, 1.0, 65504.0 if et == "f16" else 1e38]
    rng = np.random.default_rng(1)
    values = rng.standard_normal(2 * PAIRS) * np.exp2(rng.integers(-20, 20, 2 * PAIRS))
    values[: len(special)] = special
    return values.astype(np.float32)


def _check(got: np.ndarray, a: np.ndarray, et: str) -> None:
    with np.errstate(over="ignore"):  # past the largest finite: inf, as wanted
        want = a.astype(DTYPES[et])
    nan = np.isnan(want.astype(np.float32))
    assert (np.isnan(got.astype(np.float32)) == nan).all()
    np.testing.assert_array_equal(got.view(np.uint16)[~nan], want.view(np.uint16)[~nan])


def _func(module) -> gpu.FuncOp:
    return next(op for op in module.walk() if isinstance(op, gpu.FuncOp))


@pytest.mark.parametrize("et", DTYPES)
def test_the_interpreter_rounds_as_numpy(et: str) -> None:
    a = _inputs(et)
    out = np.full(2 * PAIRS, np.nan, DTYPES[et])
    run_kernel(_func(accy.parse_module(_module(et, 'profile = "gpu"'))), [a, out], [PAIRS], [PAIRS])
    _check(out, a, et)


@pytest.mark.parametrize("et", DTYPES)
def test_opencl_rounds_as_numpy(et: str) -> None:
    """On the first OpenCL device: the packed cvt where it has sm80, else two conversions."""
    cl = pytest.importorskip("pyopencl")
    from accy.runtime.opencl import mma_of_device, opencl_devices

    devices = opencl_devices()
    if not devices:
        pytest.skip("no OpenCL device")
    sm80 = mma_of_device(devices[0]) == "sm80"
    source = emit_opencl(accy.parse_module(_module(et, f'profile = "gpu", fp16 = false, mma = "{"sm80" if sm80 else ""}"')))
    assert ("cvt.rn" in source) == sm80
    ctx = cl.Context([devices[0]])
    queue = cl.CommandQueue(ctx)
    a = _inputs(et)
    out = np.full(2 * PAIRS, 0x7E00, np.uint16)  # poisoned: a NaN in both types
    flags = cl.mem_flags.READ_WRITE | cl.mem_flags.COPY_HOST_PTR
    bufs = [cl.Buffer(ctx, flags, hostbuf=x) for x in (a, out)]
    kernel = cl.Kernel(cl.Program(ctx, source).build(), "k")
    kernel.set_args(*bufs)
    cl.enqueue_nd_range_kernel(queue, kernel, (PAIRS,), (PAIRS,))
    cl.enqueue_copy(queue, out, bufs[1])
    queue.finish()
    _check(out.view(DTYPES[et]), a, et)


def test_sm80_prints_the_packed_cvt_and_llvm_declines() -> None:
    for et, kind in (("f16", "f16x2"), ("bf16", "bf16x2")):
        source = emit_opencl(accy.parse_module(_module(et, 'profile = "gpu", fp16 = false, mma = "sm80"')))
        assert f"cvt.rn.{kind}.f32 %0, %1, %2;" in source  # %1 (the upper half) is hi
    with pytest.raises(LLVMEmitError, match="narrow_pair"):
        emit_llvm(accy.parse_module(_module("f16", 'format = "llvm-ir"')))


@pytest.mark.parametrize("t", ["vector<2xf32>", "vector<4xf16>", "vector<2xi16>"])
def test_the_verifier_refuses_other_results(t: str) -> None:
    with pytest.raises(VerifyException, match="vector<2xf16> or vector<2xbf16>"):
        accy.parse_module(
            f"builtin.module {{\n  %x = arith.constant 1.0 : f32\n  %y = accy_kernel.narrow_pair %x, %x : {t}\n}}"
        ).verify()
