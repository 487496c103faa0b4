"""accy/progress.py: the progress line on long work (docs/environment.md's
ACCY_PROGRESS, the CLIs' --quiet)."""

from __future__ import annotations

import io
import re
from pathlib import Path

import pytest

import accy.progress as progress
from accy.cli.opt import main as opt_main
from accy.env import EnvVarError
from accy.progress import Bar, progress_enabled, quieted

PROGRAM = Path(__file__).parents[1] / "programs"


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.fixture
def at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """Draws from the first item on, every time (no delay, no interval)."""
    monkeypatch.setattr(progress, "DELAY", 0.0)
    monkeypatch.setattr(progress, "INTERVAL", 0.0)


def test_forced_on_shows_the_counts_and_clears_the_line(monkeypatch: pytest.MonkeyPatch, at_once: None) -> None:
    monkeypatch.setenv("ACCY_PROGRESS", "1")
    out = io.StringIO()  # not a terminal: forced on anyway
    with Bar("kernelize", 40, "kernels", stream=out) as bar:
        for _ in range(40):
            bar.update()
    text = out.getvalue()
    counts = [int(part.split()[1].split("/")[0]) for part in text.split("\r") if part.startswith("kernelize")]
    assert counts[0] == 1 and counts == sorted(set(counts)) and counts[-1] <= 40, text  # the clock read ever more rarely
    assert "\rkernelize 1/40 kernels [0.0 s]" in text
    width = max(len(line) for line in text.split("\r"))
    assert text.endswith("\r" + " " * width + "\r")  # cleared, nothing left behind


def test_a_leaving_bar_ends_with_its_last_state_and_a_newline(monkeypatch: pytest.MonkeyPatch, at_once: None) -> None:
    monkeypatch.setenv("ACCY_PROGRESS", "yes")
    out = io.StringIO()
    with Bar("tune", 3, "candidates", leave=True, stream=out) as bar:
        for ms in (3.0, 2.0, 2.5):
            bar.update(postfix=f"best so far {min(ms, 2.0):.1f} ms")
    last = out.getvalue().split("\r")[-1]
    assert last.startswith("tune 3/3 candidates (best so far 2.0 ms) [") and last.endswith("\n")


def test_nested_bars_share_one_line(monkeypatch: pytest.MonkeyPatch, at_once: None) -> None:
    monkeypatch.setenv("ACCY_PROGRESS", "1")
    out = io.StringIO()
    with Bar("passes", 2, "passes", stream=out) as outer:
        outer.set_postfix("kernelize")
        with Bar("kernelize", 5, "kernels", stream=out) as inner:
            inner.update(3)
    assert "passes 0/2 passes (kernelize) | kernelize 3/5 kernels [" in out.getvalue()


def test_off_when_not_a_terminal_and_with_progress_0(monkeypatch: pytest.MonkeyPatch, at_once: None) -> None:
    monkeypatch.delenv("ACCY_PROGRESS", raising=False)
    for stream, env in ((io.StringIO(), None), (Terminal(), "0"), (Terminal(), "off")):
        if env is not None:
            monkeypatch.setenv("ACCY_PROGRESS", env)
        with Bar("kernelize", 4, "kernels", stream=stream) as bar:
            bar.update(4)
        assert stream.getvalue() == "", env
    monkeypatch.delenv("ACCY_PROGRESS")
    assert progress_enabled(Terminal()) and not progress_enabled(io.StringIO())


def test_quiet_wins_over_the_variable(monkeypatch: pytest.MonkeyPatch, at_once: None) -> None:
    monkeypatch.setenv("ACCY_PROGRESS", "1")
    out = Terminal()
    with quieted():
        with Bar("kernelize", 4, "kernels", stream=out) as bar:
            bar.update(4)
    assert out.getvalue() == "" and progress_enabled(out)  # and quiet ends with its block


def test_progress_is_parsed_strictly(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ACCY_PROGRESS", "maybe")
    with pytest.raises(EnvVarError, match=r"ACCY_PROGRESS='maybe': expected 1/0, true/false"):
        Bar("x", 1)
    monkeypatch.setenv("ACCY_PROGRESS", "  ")
    assert progress_enabled(Terminal())  # blank is unset


def test_a_short_compile_prints_nothing(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """Forced on, with the real one-second delay: a small pipeline is done
    before anything is drawn."""
    monkeypatch.setenv("ACCY_PROGRESS", "1")
    path = sorted(PROGRAM.glob("*.mlir"))[0]
    assert opt_main([str(path), "-p", "accy-device-pipeline"]) == 0
    assert capsys.readouterr().err == ""


def test_a_compile_reports_passes_and_kernels_and_quiet_silences_it(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], at_once: None
) -> None:
    monkeypatch.setenv("ACCY_PROGRESS", "1")
    path = sorted(PROGRAM.glob("*.mlir"))[0]
    assert opt_main([str(path), "-p", "accy-device-pipeline"]) == 0
    err = capsys.readouterr().err
    assert re.search(r"\rpipeline \d+/\d+ passes \(kernelize\) \| kernelize \d+/\d+ kernels \[", err), err
    assert err.endswith("\r")  # the line cleared
    assert opt_main([str(path), "-p", "accy-device-pipeline", "--quiet"]) == 0
    assert capsys.readouterr().err == ""


def test_accy_run_reports_its_compile_and_quiet_silences_it(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], at_once: None
) -> None:
    from accy.cli.run import main as run_main

    monkeypatch.setenv("ACCY_PROGRESS", "1")
    monkeypatch.setenv("ACCY_CACHE_DIR", "off")  # a compile, not a cache hit
    path = str(sorted(PROGRAM.glob("*.mlir"))[0])
    assert run_main([path, "--device", "llvm"]) == 0
    err = capsys.readouterr().err
    assert "\rcompile @main on llvm | pipeline 0/" in err and "(build) [" in err and err.endswith("\r"), err
    assert run_main([path, "--device", "llvm", "--quiet"]) == 0
    assert capsys.readouterr().err == ""
