"""Progress on long work, in the manner of tqdm: one line on stderr, redrawn
in place (`\\r`), such as

    compile @main on llvm | pipeline 6/9 passes (kernelize) | kernelize 12/40 kernels [1.4 s]

- **When.** Only when stderr is a terminal; never when it is a file or a
  pipe, under `accy-opt --quiet`/`accy-run --quiet` (`set_quiet`), or with
  `ACCY_PROGRESS=0`. `ACCY_PROGRESS=1` draws it anyway (for tests and
  logs). The variable is a yes/no word, parsed strictly (accy/env.py).
- **Only long work.** Nothing is drawn before the outermost open bar is
  `DELAY` (1 s) old, so a short compile prints nothing; after that the line
  is redrawn at most every `INTERVAL` (0.1 s).
- **Nesting.** A bar opened while another is open (kernelize's inside the
  pass pipeline's, inside a compile's) joins the same line, after its
  parents; closing it gives the line back to them.
- **Ending.** Closing the outermost bar ends the line: with a newline when
  the bar `leave`s its last state (the autotuner's "best so far"), else by
  clearing it (a compile's progress leaves nothing behind).
- **Cost.** `update()` adds to a count and compares it with the next count
  at which to read the clock; the clock is read every `every` items, a
  stride that doubles while reads come faster than 10 ms apart. A bar
  that is off never reads the clock. Callers report per work item (a pass,
  a kernel, a candidate), never per op.

The autotuner's use:

    with Bar("tune", total=len(candidates), unit="candidates") as bar:
        for c in candidates:
            ...
            bar.update(postfix=f"best so far {best:.3f} ms")

This module imports only `accy.env`, so every layer may report progress.
"""

from __future__ import annotations

import shutil
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from types import TracebackType
from typing import TextIO

from accy.env import env_optional_flag

#: The variable that forces the line on (1) or off (0); unset: on a terminal.
ENV_VAR = "ACCY_PROGRESS"
#: Seconds the outermost bar must have been open before anything is drawn.
DELAY = 1.0
#: Seconds between two redraws of the line.
INTERVAL = 0.1
#: Clock reads closer than this make the stride between reads double.
_FAST = 0.01

_quiet = False


class _Line(threading.local):
    """The open bars of this thread (outermost first) and their line's state."""

    def __init__(self) -> None:
        self.bars: list[Bar] = []
        self.width = 0  # characters of the line last drawn; 0: none drawn
        self.drawn_at = 0.0


_line = _Line()


def set_quiet(quiet: bool = True) -> None:
    """Silences every bar from now on (`--quiet`), whatever `ACCY_PROGRESS` says."""
    global _quiet
    _quiet = quiet


@contextmanager
def quieted(quiet: bool = True) -> Iterator[None]:
    """`set_quiet(quiet)` for the block (a CLI's `--quiet`), then as before."""
    before = _quiet
    set_quiet(quiet or before)
    try:
        yield
    finally:
        set_quiet(before)


def progress_enabled(stream: TextIO) -> bool:
    """Whether a bar on `stream` draws: not when quiet, else as `ACCY_PROGRESS`
    says, else when `stream` is a terminal. Raises `EnvVarError` for a value
    of `ACCY_PROGRESS` that is not a yes/no word."""
    forced = env_optional_flag(ENV_VAR)
    if _quiet:
        return False
    if forced is not None:
        return forced
    isatty = getattr(stream, "isatty", None)
    return bool(isatty is not None and isatty())


class Bar:
    """One piece of long work: `label`, a `count` of `total` (None: unknown)
    `unit`s done, and a free-text `postfix`. A context manager; `close()`
    ends it. `stream` is stderr unless given; `leave`: see the module's
    docstring."""

    def __init__(
        self, label: str, total: int | None = None, unit: str = "", *, leave: bool = False,
        stream: TextIO | None = None,
    ) -> None:
        self.label, self.total, self.unit, self.leave = label, total, unit, leave
        self.count = 0
        self.postfix = ""
        self.stream = stream if stream is not None else sys.stderr
        self.on = progress_enabled(self.stream)
        self._every = 1
        self._next: float = 1 if self.on else float("inf")
        self._checked = self.start = time.perf_counter() if self.on else 0.0
        self._closed = False
        if self.on:
            _line.bars.append(self)

    def __enter__(self) -> Bar:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None) -> None:
        self.close()

    def update(self, n: int = 1, postfix: str | None = None) -> None:
        """`n` more units done; `postfix`, when given, replaces the free text."""
        self.count += n
        if postfix is not None:
            self.postfix = postfix
        if self.count >= self._next:
            self._tick()

    def set_postfix(self, postfix: str) -> None:
        """Replaces the free text (a phase's name, "best so far ...") and
        reads the clock: a phase may be long without any update."""
        self.postfix = postfix
        if self.on:
            self._tick()

    def text(self) -> str:
        """This bar's part of the line: `label count/total unit (postfix)`."""
        parts = [self.label]
        if self.total is not None:
            parts.append(f"{self.count}/{self.total}")
        elif self.count:
            parts.append(str(self.count))
        if self.unit and (self.total is not None or self.count):
            parts.append(self.unit)
        if self.postfix:
            parts.append(f"({self.postfix})")
        return " ".join(parts)

    def _tick(self) -> None:
        now = time.perf_counter()
        if now - self._checked < _FAST:
            self._every *= 2
        self._checked = now
        self._next = self.count + self._every
        bars = _line.bars
        if not bars or now - bars[0].start < DELAY or now - _line.drawn_at < INTERVAL:
            return
        self._draw(now)

    def _draw(self, now: float) -> None:
        bars = _line.bars
        text = " | ".join(b.text() for b in bars) + f" [{now - bars[0].start:.1f} s]"
        limit = shutil.get_terminal_size((100, 24)).columns - 1
        text = text[-limit:] if len(text) > limit else text
        self.stream.write("\r" + text.ljust(_line.width))
        self.stream.flush()
        _line.width, _line.drawn_at = len(text), now

    def close(self) -> None:
        """Ends the bar; the outermost one ends the line (see the module's docstring)."""
        if self._closed or not self.on:
            return
        self._closed = True
        bars = _line.bars
        outermost = bars and bars[0] is self
        if _line.width and outermost:
            if self.leave:
                self._draw(time.perf_counter())
                self.stream.write("\n")
            else:
                self.stream.write("\r" + " " * _line.width + "\r")
            self.stream.flush()
            _line.width = 0
        if self in bars:
            bars.remove(self)
        if outermost:
            _line.drawn_at = 0.0
