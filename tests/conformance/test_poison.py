"""The OpenCL device's `poison` option, which the conformance suite relies
on: every buffer the schedule allocates holds NaN (floats) or POISON_BYTE
bytes (integers, i1 masks) before a call's launches, also when the memory
pool hands back a buffer a previous call filled with valid values."""

from __future__ import annotations

import numpy as np
import pytest
from xdsl.dialects import arith, gpu
from xdsl.dialects.builtin import IndexType, ModuleOp

import accy
from accy.dialects.target import CPU_PROFILE
from accy.passes.kernelization.kernelize import KernelizePass
from accy.passes.pass_manager import PassManager
from accy.runtime import opencl as ocl

pytestmark = pytest.mark.skipif(not ocl.opencl_devices(), reason="no OpenCL device")

SRC = """func.func @main(%x: tensor<5xf32>) -> (tensor<5xf32>, tensor<5xi32>, tensor<5xi1>) {
  %e = "accy.exp"(%x) : (tensor<5xf32>) -> tensor<5xf32>
  %i = "accy.cast"(%e) : (tensor<5xf32>) -> tensor<5xi32>
  %z = "accy.constant"() <{value = dense<1.0> : tensor<5xf32>}> : () -> tensor<5xf32>
  %m = "accy.cmp"(%e, %z) <{predicate = "gt"}> : (tensor<5xf32>, tensor<5xf32>) -> tensor<5xi1>
  func.return %e, %i, %m : tensor<5xf32>, tensor<5xi32>, tensor<5xi1>
}"""


def kernelized(covered: int | None = None) -> ModuleOp:
    """SRC as one scalar kernel of one work-item per element; with `covered`,
    its launch is cut down to that many work-items (the rest stay unwritten)."""
    module = accy.parse_module(SRC)
    CPU_PROFILE.replace(vector_width=1).attach(module)
    PassManager([KernelizePass()]).run(module)
    if covered is not None:
        launch = next(op for op in module.walk() if isinstance(op, gpu.LaunchFuncOp))
        launch.gridSizeX.owner.detach()  # type: ignore[union-attr]
        one = arith.ConstantOp.from_int_and_width(1, IndexType())
        size = arith.ConstantOp.from_int_and_width(covered, IndexType())
        block = launch.parent_block()
        assert block is not None
        block.insert_ops_before([one, size], launch)
        launch.operands = [one.result, *launch.operands[1:3], size.result, *launch.operands[4:]]
    return module


def test_unwritten_elements_are_poisoned_even_in_reused_buffers() -> None:
    device = ocl.OpenCLDevice(poison=True)
    x = np.linspace(-2.0, 2.0, 5, dtype=np.float32)
    full = device.load(kernelized(), "main").run([x])
    np.testing.assert_allclose(full[0], np.exp(x), rtol=1e-6)
    created = device.pool.stats.created
    # The cut-down program gets the buffers the full one just released.
    e, i, m = device.load(kernelized(covered=2), "main").run([x])
    assert device.pool.stats.created == created and device.pool.stats.reused >= 3
    np.testing.assert_allclose(e[:2], np.exp(x[:2]), rtol=1e-6)
    assert np.isnan(e[2:]).all()
    np.testing.assert_array_equal(i[:2], np.exp(x[:2]).astype(np.int32))
    assert (i[2:] == np.int32(0x5A5A5A5A)).all()
    np.testing.assert_array_equal(m[:2], np.exp(x[:2]) > 1)
    assert (m.view(np.int8)[2:] == ocl.POISON_BYTE).all()


def test_poison_pattern_per_dtype() -> None:
    assert np.isnan(ocl.poison_pattern(np.dtype(np.float16))).all()
    assert np.isnan(ocl.poison_pattern(np.dtype(np.float64))).all()
    assert ocl.poison_pattern(np.dtype(np.int64))[0] == 0x5A5A5A5A5A5A5A5A
    assert ocl.poison_pattern(np.dtype(np.int8))[0] == 0x5A


def test_poison_defaults_to_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ocl.POISON_ENV, "1")
    assert ocl.OpenCLDevice().poison
    assert not ocl.OpenCLDevice(poison=False).poison
    monkeypatch.setenv(ocl.POISON_ENV, "0")
    assert not ocl.OpenCLDevice().poison
    monkeypatch.delenv(ocl.POISON_ENV)
    assert not ocl.OpenCLDevice().poison
    assert ocl.OpenCLDevice(poison=True).poison
