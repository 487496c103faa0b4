"""accy/cli/process.py: a tool's process ends without freeing its objects,
yet does everything of an interpreter's exit that anyone can observe."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def run_program(body: str) -> subprocess.CompletedProcess[str]:
    """A fresh Python running `run_as_program(main)`, `main` defined by `body`."""
    script = "from accy.cli.process import run_as_program\n" + textwrap.dedent(body) + "\nrun_as_program(main)\n"
    return subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)


def test_status_output_atexit_threads_and_finalizers() -> None:
    done = run_program(
        """
        import atexit, gc, threading, weakref
        from accy.cli.process import GC_THRESHOLD

        class Thing:
            pass

        def main():
            kept = Thing()
            weakref.finalize(kept, print, "finalizer ran")
            main.kept = kept  # alive until exit: its finalizer runs at exit
            atexit.register(print, "atexit ran")
            gate = threading.Event()
            # A non-daemon thread still working when main returns is waited for.
            threading.Thread(target=lambda: (gate.wait(), print("thread done"))).start()
            threading.Timer(0.2, gate.set).start()
            print("x" * 200_000)  # far past the pipe's and the buffer's sizes
            print("threshold", gc.get_threshold()[0] == GC_THRESHOLD)
            return 3
        """
    )
    assert done.returncode == 3, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "x" * 200_000
    assert lines[1:] == ["threshold True", "thread done", "atexit ran", "finalizer ran"], lines[1:]
    assert done.stderr == ""


@pytest.mark.parametrize(
    ("code", "status", "stderr"),
    [("None", 0, ""), ("2", 2, ""), ("'a message'", 1, "a message\n")],
)
def test_system_exit_gives_the_status_sys_exit_would(code: str, status: int, stderr: str) -> None:
    done = run_program(f"def main():\n    print('before')\n    raise SystemExit({code})\n")
    assert (done.returncode, done.stdout, done.stderr) == (status, "before\n", stderr)


def test_a_main_returning_none_is_status_0() -> None:
    done = run_program("def main():\n    print('ok')\n")
    assert (done.returncode, done.stdout) == (0, "ok\n")


@pytest.mark.parametrize("tool", ["run", "opt"])
def test_the_tools_run_as_programs(tool: str, tmp_path: Path) -> None:
    """`python -m accy.cli.run|opt` (as the console scripts) print all their
    output, and give their statuses: 0, a bad input 1, a usage error 2."""
    program = ROOT / "examples" / "demo.mlir"
    argv = [str(program), "--device", "reference", "--stats"] if tool == "run" else [str(program)]
    done = subprocess.run([sys.executable, "-m", f"accy.cli.{tool}", *argv], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    last = done.stdout.strip().splitlines()[-1]
    assert last.startswith('{"device": "reference"') if tool == "run" else last == "}"
    missing = subprocess.run(
        [sys.executable, "-m", f"accy.cli.{tool}", str(tmp_path / "absent.mlir")], capture_output=True, text=True, timeout=120
    )
    assert missing.returncode == 1 and "no such file" in missing.stderr, missing.stderr
    usage = subprocess.run([sys.executable, "-m", f"accy.cli.{tool}", "--no-such-flag"], capture_output=True, text=True, timeout=120)
    assert usage.returncode == 2 and "usage:" in usage.stderr, usage.stderr


def test_a_profiler_still_writes_its_report(tmp_path: Path) -> None:
    """`python -m cProfile -o F -m accy.cli.run ...`: cProfile writes F after
    the program, so under a profiler the process exits as usual."""
    report = tmp_path / "run.prof"
    done = subprocess.run(
        [sys.executable, "-m", "cProfile", "-o", str(report), "-m", "accy.cli.run", "--help"],
        capture_output=True, text=True, timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert "usage: accy-run" in done.stdout
    assert report.stat().st_size > 0
