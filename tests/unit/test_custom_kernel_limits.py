"""A hand-written kernel's resources are checked before it runs (issue 19):
1 GiB of local memory or 2^40 work-groups passed `compile()` and aborted
PoCL, and the LLVM device ran 2^40 groups for ever. Now `compile()` refuses
a launch of more than 2^32 work-items on every device, and building for
LLVM or OpenCL refuses local memory or a work-group size past the
device's limits, each with one message; kernels within them still run."""

from __future__ import annotations

import numpy as np
import pytest

import accy
from accy.kernel import Kernel, KernelError, MemScope
from accy.reference.kernel_interpreter import KernelRuntimeError

DEVICES = ["reference", "llvm", "opencl"]


def _device(name: str) -> str:
    if name == "opencl":
        from accy.runtime.opencl import opencl_devices

        if not opencl_devices():
            pytest.skip("no OpenCL device")
    return name


def _local_kernel(device: str, elements: int, items: int = 4) -> Kernel:
    """Each work-item writes its slot of a LOCAL buffer, then reads it back."""
    k = Kernel(device, name="big_local")
    out = k.define(np.float32, MemScope.GLOBAL, size=items)
    loc = k.define(np.float32, MemScope.LOCAL, size=elements)
    i = k.local_index(0, items)
    k.store(loc, k.cast(i, np.float32), i)
    k.barrier()
    k.store(out, k.load(loc, i), i)
    return k


def _groups_kernel(device: str, groups: int) -> Kernel:
    k = Kernel(device, name="many_groups")
    out = k.define(np.float32, MemScope.GLOBAL, size=1)
    g = k.group_index(0, groups)
    with k.if_(k.eq(g, 0)):
        k.store(out, 1.0, g)
    return k


@pytest.mark.parametrize("device", DEVICES)
def test_a_launch_of_2_to_the_40_work_groups_is_refused(device: str) -> None:
    with pytest.raises(KernelError, match=r"launches 1099511627776 work-items .*at most 4294967296"):
        _groups_kernel(_device(device), 2**40).compile()


@pytest.mark.parametrize("device", DEVICES)
def test_a_launch_within_the_limit_runs(device: str) -> None:
    (out,) = _groups_kernel(_device(device), 1000).compile().forward([], [1])
    assert out.tolist() == [1.0]


@pytest.mark.parametrize("device", ["llvm", "opencl"])
def test_a_gigabyte_of_local_memory_is_refused(device: str) -> None:
    with pytest.raises(KernelError, match=r"uses 1073741824 bytes of local memory per work-group; the device has \d+"):
        _local_kernel(_device(device), 2**28).compile()


@pytest.mark.parametrize("device", DEVICES)
def test_local_memory_within_the_limit_runs(device: str) -> None:
    (out,) = _local_kernel(_device(device), 1000, items=5).compile().forward([], [5])
    assert out.tolist() == [0.0, 1.0, 2.0, 3.0, 4.0]


def test_a_work_group_past_the_device_limit_is_refused() -> None:
    device = accy.get_device("llvm")
    limit = device.target_profile().max_work_group_size
    with pytest.raises(KernelError, match=f"work-groups of {limit * 2} work-items; the device runs at most {limit}"):
        _local_kernel("llvm", limit * 2, items=limit * 2).compile()


def test_the_kernel_interpreter_refuses_a_launch_past_the_limit() -> None:
    """An `accy.kernel_call` run on the host reference path, not through compile()."""
    from accy.reference.kernel_interpreter import run_kernel

    k = _groups_kernel("reference", 4)
    with pytest.raises(KernelRuntimeError, match="a launch of 1099511627776 work-items"):
        run_kernel(k.kb.func, [np.zeros(1, np.float32)], [2**40], [1])


def _private_kernel(device: str, elements: int, items: int) -> Kernel:
    """Each work-item fills a PRIVATE buffer of `elements` floats with its id
    and writes the buffer's last element: every element is touched."""
    k = Kernel(device, name="big_private")
    out = k.define(np.float32, MemScope.GLOBAL, size=items)
    mine = k.define(np.float32, MemScope.PRIVATE, size=elements)
    i = k.local_index(0, items)
    with k.loop(0, elements) as j:
        k.store(mine, k.cast(i, np.float32), j)
    k.store(out, k.load(mine, elements - 1), i)
    return k


@pytest.mark.parametrize("device", DEVICES)
def test_private_memory_past_a_mebibyte_a_work_group_is_refused(device: str) -> None:
    # 64 MiB of one work-item's private memory crashed the LLVM device and
    # PoCL (SIGSEGV: it lives on a thread's stack); 16 work-items of 128 KiB
    # each are 2 MiB a work-group.
    with pytest.raises(KernelError, match=r"67108864 bytes of private memory per work-item.*at most 1048576"):
        _private_kernel(_device(device), 1 << 24, 1).compile()
    with pytest.raises(KernelError, match=r"131072 bytes of private memory per work-item, 2097152 per work-group of 16"):
        _private_kernel(_device(device), 1 << 15, 16).compile()
    with pytest.raises(KernelError, match=r"private memory"):
        _private_kernel(_device(device), (1 << 18) + 1, 1).compile()


@pytest.mark.parametrize("device", DEVICES)
def test_private_memory_within_the_limit_runs(device: str) -> None:
    (out,) = _private_kernel(_device(device), 1 << 15, 8).compile().forward([], [8])  # 1 MiB a work-group
    assert out.tolist() == list(range(8))
