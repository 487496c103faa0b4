"""Results that the kernels write in place in host memory (the LLVM device,
PoCL's results of 1 MiB and more) come from `Device.recycled_results`
(host_memory.py's `RecycledResults`): a result the caller dropped is the
next call's array, one still held (itself, a view of it, a DLPack export
of it) never is. Checked on real devices by where the arrays' data lies
and by their values across interleaved calls."""

from __future__ import annotations

import gc

import numpy as np
import pytest

import accy
from accy.runtime.host_memory import RecycledResults

SHAPE = (512, 1024)  # 2 MiB of float32: PoCL writes results of 1 MiB and more in place
PROGRAM = f"""
func.func @main(%x: tensor<{SHAPE[0]}x{SHAPE[1]}xf32>) -> tensor<{SHAPE[0]}x{SHAPE[1]}xf32> {{
  %e = "accy.exp"(%x) : (tensor<{SHAPE[0]}x{SHAPE[1]}xf32>) -> tensor<{SHAPE[0]}x{SHAPE[1]}xf32>
  func.return %e : tensor<{SHAPE[0]}x{SHAPE[1]}xf32>
}}
"""


@pytest.fixture(scope="module", params=["llvm", "opencl"])
def exe(request: pytest.FixtureRequest) -> accy.Executable:
    if request.param == "opencl":
        pytest.importorskip("pyopencl")
        from accy.runtime import opencl as ocl

        if not ocl.opencl_devices():
            pytest.skip("no OpenCL device")
        device = ocl.OpenCLDevice()
        if not device.host_unified_memory:
            pytest.skip("results are copied to the host on this device")
        return accy.compile(PROGRAM, device=device)
    pytest.importorskip("llvmlite.binding")
    return accy.compile(PROGRAM, device="llvm")


def inputs(seed: int) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(SHAPE, dtype=np.float32)


def test_a_dropped_result_is_the_next_calls(exe: accy.Executable) -> None:
    (first,) = exe(inputs(0))
    where = first.ctypes.data
    del first
    gc.collect()
    x = inputs(1)
    (second,) = exe(x)
    assert second.ctypes.data == where
    np.testing.assert_allclose(second, np.exp(x), rtol=1e-6)


@pytest.mark.parametrize("hold", ["array", "view", "transpose", "dlpack"])
def test_a_held_result_is_never_reused(exe: accy.Executable, hold: str) -> None:
    x0, x1 = inputs(2), inputs(3)
    (first,) = exe(x0)
    want = np.exp(x0)
    kept = {
        "array": lambda a: a,
        "view": lambda a: a[7:9, 100:200],
        "transpose": lambda a: a.T,
        "dlpack": lambda a: np.from_dlpack(a),
    }[hold](first)
    expected = {"array": want, "view": want[7:9, 100:200], "transpose": want.T, "dlpack": want}[hold]
    del first
    gc.collect()
    for seed in range(4):  # more calls than one spare array
        (other,) = exe(inputs(10 + seed))
        assert not np.shares_memory(other, kept)
        del other
    np.testing.assert_allclose(kept, expected, rtol=1e-6)
    (again,) = exe(x1)
    np.testing.assert_allclose(again, np.exp(x1), rtol=1e-6)


def test_many_results_held_at_once_are_all_distinct(exe: accy.Executable) -> None:
    xs = [inputs(20 + i) for i in range(5)]
    outs = [exe(x)[0] for x in xs]
    assert len({o.ctypes.data for o in outs}) == len(outs)
    for x, o in zip(xs, outs, strict=True):
        np.testing.assert_allclose(o, np.exp(x), rtol=1e-6)


def test_the_cache_forgets_what_it_cannot_keep() -> None:
    cache = RecycledResults(max_bytes=3 * 1000, max_arrays=4)
    held = [cache.take(1000) for _ in range(6)]  # all in use: none reused
    assert len({a.ctypes.data for a in held}) == 6
    assert len(cache._raw) == 4  # the oldest two forgotten (their holders keep them)
    del held
    gc.collect()
    cache.take(1000)
    assert sum(r.nbytes for r in cache._raw) <= 3 * (1000 + 64)  # free arrays past max_bytes dropped
