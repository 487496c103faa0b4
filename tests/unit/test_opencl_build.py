"""An OpenCL program is complete when `accy.compile` returns (issue 24): its
cl.Program is built and its kernels exist before the first call, and on
PoCL every kernel's work-group function is compiled with the build, so the
first launch compiles nothing (program_cache.py). `accy-run --stats` then
counts the whole compile in `build_s`, and `first_launch_s` is the call.

The PoCL checks run in a fresh process whose environment lacks
`POCL_WORK_GROUP_SPECIALIZATION`, so what they see is accy's own setting.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("pyopencl")

from accy.runtime import opencl as ocl  # noqa: E402

pytestmark = pytest.mark.skipif(not ocl.opencl_devices(), reason="no OpenCL device")

ROOT = Path(__file__).resolve().parents[2]
TIMEOUT = 300

# Three kernels of odd sizes (an elementwise chain, a row reduction, a dot)
# on both profiles; prints, per profile, whether the program was built with
# its kernels before the first call, the work-group functions in PoCL's
# private cache folder before and after the first call, and the check of
# the (poisoned) results against the reference interpreter.
CHILD = r"""
import json, os, sys
import pyopencl as cl
import accy
from accy.dialects.target import CPU_PROFILE, GPU_PROFILE
from accy.runtime.opencl import OpenCLDevice

SRC = '''
func.func @main(%x: tensor<7x19xf32>, %w: tensor<19x5xf32>) -> (tensor<7xf32>, tensor<7x5xf32>) {
  %e = "accy.exp"(%x) : (tensor<7x19xf32>) -> tensor<7x19xf32>
  %t = "accy.tanh"(%e) : (tensor<7x19xf32>) -> tensor<7x19xf32>
  %s = "accy.reduce"(%t) <{kind = "sum", axes = array<i64: 1>}> : (tensor<7x19xf32>) -> tensor<7xf32>
  %d = "accy.dot_general"(%x, %w) <{lhs_contract = array<i64: 1>, rhs_contract = array<i64: 0>, lhs_batch = array<i64>, rhs_batch = array<i64>}> : (tensor<7x19xf32>, tensor<19x5xf32>) -> tensor<7x5xf32>
  func.return %s, %d : tensor<7xf32>, tensor<7x5xf32>
}
'''

CL_BUILD_SUCCESS = 0  # CL_PROGRAM_BUILD_STATUS of a built program (pyopencl names no constant for it)

class Profiled(OpenCLDevice):
    def __init__(self, profile):
        super().__init__(poison=True)
        self.profile = profile

    def target_profile(self, math_tier="exact"):
        return self.profile.replace(math=math_tier)

def work_group_functions(folder):
    # PoCL's cache: <program hash>/<kernel name>/<work-group function variant>/
    found = set()
    for dirpath, dirnames, _ in os.walk(folder):
        parts = os.path.relpath(dirpath, folder).split(os.sep)
        if len(parts) == 4:
            found.add((parts[2], parts[3]))
    return sorted(found)

report = {}
for name, profile in (("cpu", CPU_PROFILE), ("gpu", GPU_PROFILE)):
    device = Profiled(profile)
    exe = accy.compile(SRC, device=device)
    built = exe.program.built
    status = built.program.get_build_info(device.cl_device, cl.program_build_info.STATUS)
    launched = sorted({s.name for s in exe.program.schedule.steps if hasattr(s, "kernel")})
    before = work_group_functions(device.pocl_cache_dir)
    inputs = exe.random_inputs(3)
    outputs = exe(*inputs)
    after = work_group_functions(device.pocl_cache_dir)
    report[name] = {
        "built": status == CL_BUILD_SUCCESS,
        "kernels": sorted(built.kernels),
        "launched": launched,
        "before": before,
        "after": after,
        "ok": all(c.ok for c in exe.compare_with_reference(inputs, outputs)),
        "pocl": "Portable Computing Language" in device.description,
    }
report["specialization"] = os.environ.get("POCL_WORK_GROUP_SPECIALIZATION")  # as accy set it
print(json.dumps(report))
"""


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("POCL_WORK_GROUP_SPECIALIZATION", "ACCY_DEBUG")}
    return {**env, **extra}


def test_program_is_built_with_its_kernels_before_the_first_call(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-c", CHILD], env=_env(ACCY_CACHE_DIR=str(tmp_path / "cache")),
        capture_output=True, text=True, timeout=TIMEOUT,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    for profile in ("cpu", "gpu"):
        r = report[profile]
        assert r["ok"], profile
        assert r["built"], profile
        assert r["launched"] and set(r["launched"]) <= set(r["kernels"]), (profile, r)
        if r["pocl"]:
            # Every kernel's work-group function exists before the call, and the call compiled none.
            assert report["specialization"] == "0"
            assert {kernel for kernel, _ in r["before"]} >= set(r["launched"]), (profile, r)
            assert r["after"] == r["before"], (profile, r)


PROGRAM = ROOT / "tests" / "programs" / "softmax_named.mlir"


def _stats(cache: Path) -> dict[str, float]:
    proc = subprocess.run(
        [sys.executable, "-m", "accy.cli.run", str(PROGRAM), "--device", "opencl", "--stats", "--quiet", "--check"],
        env=_env(ACCY_CACHE_DIR=str(cache)), capture_output=True, text=True, timeout=TIMEOUT,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_stats_count_the_whole_build_in_the_compile(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    for label, cached in (("cold", False), ("warm", True)):
        stats = _stats(cache)
        assert stats["check_ok"] and stats["compile_cached"] is cached, (label, stats)
        # The first call is the only one: first_launch_s is it, nothing else.
        assert stats["first_launch_s"] == stats["run_s"], (label, stats)
        # compile_s is the device's prepare: the passes, the sources, the build (parse comes before it).
        inside = stats["passes_s"] + stats["codegen_s"] + stats["build_s"]
        assert stats["build_s"] > 0 and stats["compile_s"] >= inside - 1e-5, (label, stats)
        if cached:
            assert stats["parse_s"] == stats["passes_s"] == stats["codegen_s"] == 0.0, stats
        else:
            assert stats["parse_s"] > 0 and stats["passes_s"] > 0 and stats["codegen_s"] > 0, stats
