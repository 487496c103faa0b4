"""Large results on host-unified OpenCL devices are written in place into the
returned arrays (`HOST_RESULT_MIN_BYTES`): values match numpy, each call
returns fresh arrays, and a value returned twice gives two arrays."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("pyopencl")

from accy.runtime import opencl as ocl  # noqa: E402
from accy.runtime.executable import compile as accy_compile  # noqa: E402

R, C = 257, 1031  # 257 * 1031 * 4 bytes > 1 MiB, odd sizes
PROGRAM = f"""
func.func @main(%x: tensor<{R}x{C}xf32>, %y: tensor<{R}x{C}xf32>) -> (tensor<{R}x{C}xf32>, tensor<{R}xf32>, tensor<{R}x{C}xf32>) {{
  %e = "accy.exp"(%x) : (tensor<{R}x{C}xf32>) -> tensor<{R}x{C}xf32>
  %m = "accy.mul"(%e, %y) : (tensor<{R}x{C}xf32>, tensor<{R}x{C}xf32>) -> tensor<{R}x{C}xf32>
  %s = "accy.reduce"(%m) <{{kind = "sum", axes = array<i64: 1>}}> : (tensor<{R}x{C}xf32>) -> tensor<{R}xf32>
  func.return %m, %s, %m : tensor<{R}x{C}xf32>, tensor<{R}xf32>, tensor<{R}x{C}xf32>
}}
"""


@pytest.fixture(scope="module")
def device():
    if not ocl.opencl_devices():
        pytest.skip("no OpenCL device")
    return ocl.OpenCLDevice()


def test_large_results_match_numpy_and_are_fresh_each_call(device):
    assert R * C * 4 >= ocl.HOST_RESULT_MIN_BYTES
    exe = accy_compile(PROGRAM, device=device)
    rng = np.random.default_rng(3)
    x1, y1, x2, y2 = (rng.standard_normal((R, C)).astype(np.float32) for _ in range(4))
    m1, s1, twice1 = exe(x1, y1)
    kept = m1.copy()
    m2, s2, twice2 = exe(x2, y2)
    for (m, s, twice), (x, y) in (((m1, s1, twice1), (x1, y1)), ((m2, s2, twice2), (x2, y2))):
        want = np.exp(x) * y
        assert m.shape == (R, C) and m.dtype == np.float32 and s.shape == (R,)
        np.testing.assert_allclose(m, want, rtol=1e-6, atol=1e-6)
        np.testing.assert_allclose(s, want.sum(1), rtol=1e-4, atol=1e-3)
        np.testing.assert_array_equal(twice, m)
        assert not np.shares_memory(twice, m)  # a value returned twice is two arrays
    np.testing.assert_array_equal(m1, kept)  # the second call did not write into the first call's result
    assert not np.shares_memory(m1, m2)
    m2[:] = 0  # results are ordinary writable arrays
    m3, _, _ = exe(x2, y2)
    np.testing.assert_allclose(m3, np.exp(x2) * y2, rtol=1e-6, atol=1e-6)
