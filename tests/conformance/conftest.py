"""Shared fixtures of the conformance suite: the OpenCL runtime (PoCL here)
under both target profiles, with poisoned buffers.

`device` is an `OpenCLDevice(poison=True)` that kernelizes for the CPU
profile or for the GPU profile (work-group kernels with local memory and
barriers, which PoCL runs too), so every test runs each program through
`accy.compile(..., device=device)` as a user would, and each also runs on
the LLVM device (`LLVMDevice(poison=True)`, param `llvm`): three runs of
every program, all against the reference interpreter."""

from __future__ import annotations

import sys
from functools import cache
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from accy.dialects.target import CPU_PROFILE, GPU_PROFILE, TargetProfile  # noqa: E402
from accy.runtime.device import Device  # noqa: E402
from accy.runtime.opencl import OpenCLDevice, opencl_devices  # noqa: E402

PROFILES = {"cpu": CPU_PROFILE, "gpu": GPU_PROFILE}


class ProfiledDevice(OpenCLDevice):
    """The first OpenCL device, kernelizing for a given target profile
    instead of its own (the math tier still comes from the module)."""

    def __init__(self, profile: TargetProfile) -> None:
        super().__init__(poison=True)
        self.profile = profile
        self.name = f"opencl ({profile.profile} profile)"

    def target_profile(self, math_tier: str = "exact") -> TargetProfile:
        return self.profile.replace(math=math_tier)


@cache
def profiled_device(name: str) -> ProfiledDevice:
    """One device per profile for the whole session (contexts and built
    programs are worth keeping)."""
    return ProfiledDevice(PROFILES[name])


def all_devices() -> list[Device]:
    """Both OpenCL profiles and the LLVM device."""
    return [*(profiled_device(name) for name in sorted(PROFILES)), llvm_device()]


@cache
def llvm_device() -> Device:
    """The LLVM device, poisoning, for the whole session."""
    from accy.runtime.llvm import LLVMDevice

    return LLVMDevice(poison=True)


def device_params(metafunc: pytest.Metafunc) -> list[str]:
    """Every `device` test runs on both OpenCL profiles and on the LLVM device."""
    return [*sorted(PROFILES), "llvm"]


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "device" in metafunc.fixturenames:
        metafunc.parametrize("device", device_params(metafunc), indirect=True)


@pytest.fixture
def device(request: pytest.FixtureRequest) -> Device:
    """Each test runs with the CPU profile and with the GPU profile (and on
    the LLVM device)."""
    if request.param == "llvm":
        return llvm_device()
    if not opencl_devices():
        pytest.skip("no OpenCL device")
    return profiled_device(request.param)
