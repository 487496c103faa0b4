"""Shared fixtures of the conformance suite: both target profiles, and a
checker that kernelizes a program, runs it on OpenCL (PoCL here) with
poisoned buffers and compares every output with the reference interpreter."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from accy.dialects.target import CPU_PROFILE, GPU_PROFILE  # noqa: E402

PROFILES = {"cpu": CPU_PROFILE, "gpu": GPU_PROFILE}


@pytest.fixture(params=sorted(PROFILES))
def profile(request: pytest.FixtureRequest):
    """Each test runs with the CPU profile and with the GPU profile (whose
    work-group kernels run on PoCL too)."""
    return PROFILES[request.param]
