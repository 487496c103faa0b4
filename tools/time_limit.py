"""A wall-clock bound on a block of code, for the tools and the tests that
run inputs which might hang (onnx_node_tests.py, tests/unit/test_fuzz_ir.py).

    with time_limit(20.0) as limit:
        run(something)
    if limit.expired: ...

The bound is SIGALRM's interval timer (`signal.setitimer`), so it holds only
in the main thread and only where the platform has SIGALRM; elsewhere, and
for `seconds <= 0`, the block runs unbounded. When the time passes,
`TimeLimitExceeded` is raised wherever the block is; `limit.expired` says so
afterwards even when the block caught the exception (as accy-opt's `main`
catches every error and prints it).
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass


class TimeLimitExceeded(Exception):
    """A block ran past its `time_limit`."""


@dataclass
class Limit:
    """What `time_limit` yields: its bound, and whether the block ran past it."""

    seconds: float
    expired: bool = False


@contextmanager
def time_limit(seconds: float) -> Iterator[Limit]:
    """Raises `TimeLimitExceeded` in the block once `seconds` have passed (see
    the module's docstring); the previous SIGALRM handler is restored after."""
    limit = Limit(seconds)
    if seconds <= 0 or not hasattr(signal, "SIGALRM") or threading.current_thread() is not threading.main_thread():
        yield limit
        return

    def ring(signum: int, frame: object) -> None:
        limit.expired = True
        raise TimeLimitExceeded(f"took longer than {seconds:g} s")

    previous = signal.signal(signal.SIGALRM, ring)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield limit
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
