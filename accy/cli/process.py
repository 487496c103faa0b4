"""The process a command-line tool runs in: short-lived, so it is run as one.

`run_as_program(main)` is what the console scripts (`accy-run`, `accy-opt`)
and `python -m accy.cli.run|opt` call; `main()` itself stays an ordinary
function that returns an exit status (the tests call it in process). Two
things differ from a plain `sys.exit(main())`, both only for the time a
fresh process takes (issue 24's latency to a first result):

- The cyclic garbage collector's young generation collects after
  `GC_THRESHOLD` allocations instead of Python's 700: nearly all that a
  tool's process allocates (modules, xDSL's dialect classes, IR) lives to
  its end, and a cold compile of the demo MLP collected ~170 times,
  rescanning it (40-45 ms of a ~700 ms process; 11 times and 15-30 ms at
  this threshold). The older generations keep Python's ratios, so garbage
  cycles are still collected, only in larger batches. mypy raises its
  threshold for the same reason.
- The process ends without freeing its objects (`exit_now`): what an
  interpreter's exit does that anyone can observe is done (non-daemon
  threads joined, `atexit` handlers and `weakref.finalize` callbacks run,
  stdout and stderr flushed), then `os._exit`. Freeing every module and
  object one by one took 30-60 ms after a compile; the operating system
  takes the memory back at once (clang's `-disable-free`, mypy's
  `hard_exit`). Not under a profiler or tracer, which reports after that.
"""

from __future__ import annotations

import atexit
import gc
import os
import sys
import threading
from collections.abc import Callable
from typing import NoReturn

#: The young generation's threshold in a tool's process (Python's default is 700).
GC_THRESHOLD = 20_000
#: The exit status Python gives a process whose stdout cannot be flushed at exit.
FLUSH_FAILED = 120


def run_as_program(main: Callable[[], int | None]) -> NoReturn:
    """Runs `main` as the process's program (see the module docstring) and
    ends the process with its status; a `SystemExit` out of `main` (argparse's
    `--help` or usage error) gives its status as `sys.exit` would."""
    _, older, oldest = gc.get_threshold()
    gc.set_threshold(GC_THRESHOLD, older, oldest)
    try:
        status = main()
    except SystemExit as e:
        status = _status_of(e.code)
    else:
        status = _status_of(status)
    exit_now(status)


def exit_now(status: int) -> NoReturn:
    """Ends the process with `status` as the interpreter's exit would,
    less freeing its objects: non-daemon threads are joined (and a
    `ThreadPoolExecutor`'s workers told to stop, as at exit), `atexit`
    handlers run, stdout and stderr are flushed (a stdout that cannot be
    makes the status `FLUSH_FAILED`, as Python does), then `os._exit`.
    Under a profiler or tracer (cProfile, trace, coverage), which writes its
    report after the program ends, the process exits as usual instead."""
    if sys.getprofile() is not None or sys.gettrace() is not None:
        sys.exit(status)
    # What Py_FinalizeEx calls first: joins non-daemon threads after running
    # the hooks `threading._register_atexit` took (concurrent.futures' among them).
    shutdown = getattr(threading, "_shutdown", None)
    if shutdown is not None:
        shutdown()
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            if stream is not None:
                stream.flush()
        except (OSError, ValueError):  # a reader gone, or a stream closed
            if stream is sys.stdout and status == 0:
                status = FLUSH_FAILED
    os._exit(status)


def _status_of(code: object) -> int:
    """The exit status `sys.exit(code)` gives: None is 0, an integer itself,
    anything else is printed to stderr and gives 1."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    print(code, file=sys.stderr)
    return 1
