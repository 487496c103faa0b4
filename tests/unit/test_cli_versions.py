"""Versions as a user asks for them: `accy.__version__` (pyproject's, from
the package metadata), `accy-run --version` and `accy-opt --version` (one
report: accy, xDSL, llvmlite, numpy, pyopencl, the OpenCL platforms, 'none'
without any, and never a crash or a hang for want of OpenCL), and `python
-m accy` (a short usage naming the two tools)."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
import tomllib
import types
from importlib import metadata
from pathlib import Path

import pytest

import accy
from accy.cli import version

ROOT = Path(accy.__file__).parent.parent
#: A folder of no OpenCL vendors: the ICD loader then finds no platform.
NO_VENDORS_ENV = "OCL_ICD_VENDORS"


def _python(*argv: str, env: dict[str, str] | None = None, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, *argv], capture_output=True, text=True, env={**os.environ, **(env or {})}, timeout=timeout
    )


def test_version_is_pyprojects_from_the_metadata() -> None:
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    assert accy.__version__ == metadata.version("accy") == pyproject


def test_the_version_is_written_once() -> None:
    """No second copy of the number in the package's source."""
    number = accy.__version__
    copies = [p for p in (ROOT / "accy").rglob("*.py") if f'"{number}"' in p.read_text() or f"'{number}'" in p.read_text()]
    assert not copies, copies


def test_import_accy_does_not_read_the_version() -> None:
    done = _python("-c", "import sys, accy; print('importlib.metadata' in sys.modules, 'accy.cli.version' in sys.modules)")
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["False", "False"]


def test_report_names_each_part() -> None:
    lines = version.version_report().splitlines()
    assert [line.split(":")[0] for line in lines] == ["accy", "xdsl", "llvmlite", "numpy", "pyopencl", "OpenCL platforms"]
    assert lines[0] == f"accy: {accy.__version__}"
    assert lines[1] == f"xdsl: {metadata.version('xdsl')}"
    assert lines[2].startswith(f"llvmlite: {metadata.version('llvmlite')} (LLVM ")
    assert lines[3] == f"numpy: {metadata.version('numpy')}"


@pytest.mark.parametrize("tool", ["run", "opt"])
def test_both_tools_print_the_report(tool: str) -> None:
    done = _python("-m", f"accy.cli.{tool}", "--version")
    assert done.returncode == 0, done.stderr
    assert done.stdout == version.version_report()
    assert "xdsl-opt built from" not in done.stdout and done.stderr == ""


def test_opencl_platforms_with_their_versions() -> None:
    try:
        import pyopencl as cl

        platforms = cl.get_platforms()
    except Exception as e:  # no OpenCL here: the 'none' tests below cover it
        pytest.skip(f"no OpenCL platform: {e}")
    line = version.version_report().splitlines()[-1]
    for p in platforms:
        assert f"{p.name.strip()} ({p.version.strip()})" in line


@pytest.mark.parametrize("tool", ["run", "opt"])
def test_no_opencl_platform_is_none(tool: str, tmp_path: Path) -> None:
    done = _python("-m", f"accy.cli.{tool}", "--version", env={NO_VENDORS_ENV: str(tmp_path)})
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1] == "OpenCL platforms: none"


def test_no_pyopencl_is_none() -> None:
    code = "import sys; sys.modules['pyopencl'] = None\nfrom accy.cli.run import main\nmain(['--version'])"
    done = _python("-c", code)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1] == "OpenCL platforms: none" and "Traceback" not in done.stderr


def test_a_driver_that_does_not_answer_does_not_hang_the_report(monkeypatch: pytest.MonkeyPatch) -> None:
    release = threading.Event()
    hung = types.ModuleType("pyopencl")
    hung.get_platforms = lambda: release.wait(30)  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "pyopencl", hung)
    try:
        start = time.perf_counter()
        said = version.opencl_platforms(timeout_s=0.2)
        assert time.perf_counter() - start < 5
    finally:
        release.set()
    assert said == "unknown (the OpenCL driver did not list its platforms within 0.2 s)"


def test_python_dash_m_accy_names_the_tools() -> None:
    done = _python("-m", "accy")
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert out.startswith("usage: python -m accy") and "--version" in out
    for tool in ("accy-opt", "accy-run"):
        assert f"  {tool}  " in out, out
    assert "pass pipeline" in out and "for a device and run it" in out


def test_python_dash_m_accy_version() -> None:
    done = _python("-m", "accy", "--version")
    assert done.returncode == 0, done.stderr
    assert done.stdout == version.version_report()


def test_python_dash_m_accy_usage_error() -> None:
    done = _python("-m", "accy", "--no-such-flag")
    assert done.returncode == 2 and "unrecognized arguments: --no-such-flag" in done.stderr
