"""ACCY_DEBUG=N prints what a compile produced, on stderr."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

PROGRAM = """
func.func @main(%x: tensor<3x17xf32>) -> tensor<3xf32> {
  %e = "accy.exp"(%x) : (tensor<3x17xf32>) -> tensor<3x17xf32>
  %s = "accy.reduce"(%e) <{kind = "max", axes = array<i64: 1>}> : (tensor<3x17xf32>) -> tensor<3xf32>
  func.return %s : tensor<3xf32>
}
"""


@pytest.mark.parametrize("level", [0, 1, 2, 3])
def test_debug_levels(tmp_path: Path, level: int):
    src = tmp_path / "p.mlir"
    src.write_text(PROGRAM)
    env = dict(os.environ, ACCY_DEBUG=str(level))
    run = subprocess.run(
        [sys.executable, "-m", "accy.cli.run", str(src), "--device", "opencl", "--random", "1", "--check"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert run.returncode == 0, run.stderr
    err = run.stderr
    assert ("1 kernel(s), 0 fallback(s)" in err) == (level >= 1)
    assert ("main_k0_reduction (reduction) global" in err) == (level >= 1)
    assert ("__kernel void main_k0_reduction" in err) == (level >= 2)
    assert ("IR after kernelize" in err) == (level >= 3)
