"""The devices the tensor-core tests run on: PoCL's GPU profile emulating
the matrix instructions (`mma = "emulate"`), and the first OpenCL device
whose inline-PTX probe runs `mma.sync` (`mma = "sm80"`) or also Hopper's
`wgmma` (`mma = "sm90"`), skipped where there is none."""

from __future__ import annotations

from functools import cache

import pytest
from conftest import GPU_PROFILE, ProfiledDevice

from accy.runtime.opencl import OpenCLDevice, mma_of_device, opencl_devices


@cache
def emulating() -> ProfiledDevice:
    """PoCL on the GPU profile with 64 KiB of local memory: emulated, the
    warps' exchange comes on top of the staged tiles (the dot's
    double-buffered ones take 61 KiB in all, past the profile's 48)."""
    return ProfiledDevice(GPU_PROFILE.replace(local_mem_bytes=65536))


@cache
def emulating_deep() -> ProfiledDevice:
    """`emulating` with 256 KiB of static local memory (`static_local_bytes`,
    as NVIDIA's driver has): the deeper-pipelined tensor-core tiles of
    mma_tiles.CONFIGS, which the H200 runs under its own profile."""
    return ProfiledDevice(GPU_PROFILE.replace(local_mem_bytes=65536, static_local_bytes=262144))


@cache
def nvidia(kind: str = "sm80") -> OpenCLDevice | None:
    """The first OpenCL device with mma.sync ("sm80") or also wgmma ("sm90": `mma_of_device`), if any."""
    for i in range(len(opencl_devices())):
        device = OpenCLDevice(i, poison=True)
        if mma_of_device(device.cl_device) in (kind, "sm90"):
            return device
    return None


def tensor_core_device(kind: str) -> ProfiledDevice | OpenCLDevice:
    """The device of a case of `kind` ("emulate", "emulate-deep", "sm80" or "sm90"), or a skip."""
    if not opencl_devices():
        pytest.skip("no OpenCL device")
    if kind == "emulate":
        return emulating()
    if kind in ("emulate-deep", "emulate-sm90"):
        return emulating_deep()
    device = nvidia(kind)
    if device is None:
        need = "mma.sync (an NVIDIA GPU of compute capability 8 or more)" if kind == "sm80" else "wgmma (compute capability 9.0)"
        pytest.skip(f"no OpenCL device with {need}")
    return device
