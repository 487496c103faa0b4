"""Memory stays flat over many calls and compiles (issue 11): after warm-up,
more calls leave a device's pool exactly as they found it (bytes and
buffers held by each holder, bytes cached, buffers created), with numpy and
accy.Array inputs, results to the host or on the device; dropped
executables give their constants back, and nothing keeps a dropped
executable's modules alive. Resident memory over 10,000 calls and 1,000
compiles is measured by tools/bench/memory.py, not here (it is not
deterministic)."""

from __future__ import annotations

import gc
import weakref
from collections.abc import Callable

import numpy as np
import pytest

import accy
from accy.dialects.parse import parse_module
from accy.runtime.device import Device
from accy.runtime.host_memory import CONSTANT

# A non-splat constant: a buffer of its own (a pool buffer on OpenCL).
PROGRAM = """
func.func @main(%x: tensor<16xf32>, %y: tensor<16xf32>) -> tensor<16xf32> {
  %c = "accy.constant"() <{value = dense<[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0, 12.0, 13.0, 14.0, 15.0, 16.0]> : tensor<16xf32>}> : () -> tensor<16xf32>
  %m = "accy.mul"(%y, %c) : (tensor<16xf32>, tensor<16xf32>) -> tensor<16xf32>
  %z = "accy.add"(%x, %m) : (tensor<16xf32>, tensor<16xf32>) -> tensor<16xf32>
  func.return %z : tensor<16xf32>
}
"""
CONSTANT_VALUES = np.arange(1, 17, dtype=np.float32)


def fresh_device(name: str) -> Device:
    """A device of its own, so that no other test's arrays are in its pool."""
    if name == "opencl":
        from accy.runtime import opencl

        if not opencl.opencl_devices():
            pytest.skip("no OpenCL device")
        return opencl.OpenCLDevice()
    if name == "llvm":
        pytest.importorskip("llvmlite")
        from accy.runtime.llvm import LLVMDevice

        return LLVMDevice()
    from accy.runtime.reference_device import ReferenceDevice

    return ReferenceDevice()


def pool_state(device: Device) -> tuple[object, ...]:
    """Everything the pool counts: held bytes and buffers by holder, bytes and buffers cached, buffers created."""
    gc.collect()
    report = device.memory_report()
    pool = device.pool
    return report.held, report.buffers, report.cached, len(pool), pool.stats.created, pool.stats.bytes_created


@pytest.mark.parametrize("to_host", [True, False], ids=["to_host", "on_device"])
@pytest.mark.parametrize("inputs", ["numpy", "arrays"])
@pytest.mark.parametrize("name", ["opencl", "llvm", "reference"])
def test_pool_is_the_same_after_call_100_and_call_1000(name: str, inputs: str, to_host: bool) -> None:
    device = fresh_device(name)
    exe = accy.compile(PROGRAM, device=device)
    x = np.linspace(-2.0, 2.0, 16, dtype=np.float32)
    y = np.linspace(3.0, -1.0, 16, dtype=np.float32)
    args = [x, y] if inputs == "numpy" else [accy.device_put(x, device), accy.device_put(y, device)]

    def calls(n: int) -> None:
        for _ in range(n):
            (result,) = exe(*args, to_host=to_host)
        # A copy: a host view of an Array's buffer would take it out of the pool's reuse.
        np.testing.assert_allclose(np.array(result, copy=True), x + y * CONSTANT_VALUES, rtol=1e-6)

    calls(100)
    after_100 = pool_state(device)
    calls(900)
    assert pool_state(device) == after_100


@pytest.mark.parametrize("name", ["opencl", "llvm", "reference"])
def test_dropped_executables_give_everything_back(name: str) -> None:
    """Constants held in the pool come back when their executable goes; the
    executable, its program and both its modules are freed."""
    device = fresh_device(name)
    x = np.ones(16, np.float32)
    accy.compile(PROGRAM, device=device)(x, x)  # the kernels built once
    before = pool_state(device)
    exes = [accy.compile(PROGRAM, device=device) for _ in range(5)]
    for exe in exes:
        (z,) = exe(x, x)
        np.testing.assert_allclose(z, 1 + CONSTANT_VALUES)
    held = device.memory_report().held[CONSTANT]
    if name == "opencl":  # a constant buffer per executable (a program each)
        assert held == 5 * CONSTANT_VALUES.nbytes
    refs: list[Callable[[], object]] = [
        weakref.ref(o) for exe in exes for o in (exe, exe.program, exe.module, exe.source)
    ]
    del exes, exe
    gc.collect()
    assert [r for r in refs if r() is not None] == []
    held_after, buffers_after = pool_state(device)[:2]
    assert (held_after, buffers_after) == before[:2]


def test_a_parsed_module_is_freed_when_dropped() -> None:
    """The source map kept for diagnostics does not keep its module alive."""
    module = parse_module(PROGRAM)
    ref = weakref.ref(module)
    del module
    gc.collect()
    assert ref() is None
