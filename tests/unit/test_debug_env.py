"""ACCY_DEBUG=N prints what a compile produced, on stderr."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from accy.debug import debug_level

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
    # (on a GPU the kernel states its work-group size: __kernel __attribute__((...)) void ...)
    assert ("void main_k0_reduction(" in err) == (level >= 2)
    assert ("IR after kernelize" in err) == (level >= 3)


@pytest.mark.parametrize(
    ("value", "level"), [("", 0), ("0", 0), ("2", 2), (" 3 ", 3), ("yes", 1), ("TRUE", 1), ("on", 1), ("no", 0)]
)
def test_debug_level_reads_numbers_and_yes_no(monkeypatch: pytest.MonkeyPatch, value: str, level: int) -> None:
    monkeypatch.setenv("ACCY_DEBUG", value)
    assert debug_level() == level


def _run(tmp_path: Path, value: str) -> subprocess.CompletedProcess[str]:
    src = tmp_path / "p.mlir"
    src.write_text(PROGRAM)
    return subprocess.run(
        [sys.executable, "-m", "accy.cli.run", str(src), "--device", "opencl", "--random", "1"],
        capture_output=True,
        text=True,
        env=dict(os.environ, ACCY_DEBUG=value),
        timeout=120,
    )


def test_debug_yes_is_level_one(tmp_path: Path) -> None:
    run = _run(tmp_path, "yes")
    assert run.returncode == 0, run.stderr
    assert "1 kernel(s), 0 fallback(s)" in run.stderr
    assert "__kernel " not in run.stderr


def test_a_bad_debug_value_is_one_clear_error_when_used(tmp_path: Path) -> None:
    imported = subprocess.run(
        [sys.executable, "-c", "import accy, accy.debug, accy.runtime.opencl"],
        capture_output=True,
        text=True,
        env=dict(os.environ, ACCY_DEBUG="verbose"),
        timeout=120,
    )
    assert imported.returncode == 0, imported.stderr
    run = _run(tmp_path, "verbose")
    assert run.returncode == 1
    assert "ACCY_DEBUG='verbose' is not a debug level" in run.stderr
    assert "Traceback" not in run.stderr and len(run.stderr.strip().splitlines()) == 1, run.stderr
