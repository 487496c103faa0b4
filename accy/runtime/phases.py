"""Where a compile's time goes: seconds by phase, for `accy-run --stats`.

`accy.compile` collects (`collecting`) while the parts it runs time
themselves (`phase`): `parse` (the text parsed and the function prepared,
xDSL's dialects loaded by the first parse included), `passes` (the device
pipeline: kernelize and the rest), `codegen` (the kernels' LLVM IR or
OpenCL C printed) and `build` (the device makes its artifact: the LLVM JIT
optimises, generates and loads object code; OpenCL builds or loads the
program binary; a program from the compile cache pays only this). Outside
a collection a phase costs one context-variable read.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

PHASES = ("parse", "passes", "codegen", "build")

_current: ContextVar[dict[str, float] | None] = ContextVar("accy_compile_phases", default=None)


@contextmanager
def collecting() -> Iterator[dict[str, float]]:
    """Seconds by phase of what runs inside, in a dict filled as phases end."""
    seconds = dict.fromkeys(PHASES, 0.0)
    token = _current.set(seconds)
    try:
        yield seconds
    finally:
        _current.reset(token)


@contextmanager
def phase(name: str) -> Iterator[None]:
    """Counts the time inside toward phase `name` of the current collection."""
    seconds = _current.get()
    if seconds is None:
        yield
        return
    start = time.perf_counter()
    try:
        yield
    finally:
        seconds[name] = seconds.get(name, 0.0) + time.perf_counter() - start
