"""PoCL's worker threads: pinned one to a core while a call moves much data.

PoCL runs a kernel's work-groups on a pool of worker threads, one per
compute unit. Unpinned, Linux at times wakes both of a 2-core machine's
workers onto the calling thread's core and leaves them there for many calls
in a row: a memory-bound kernel then takes twice as long (softmax rows
4096^2: 8.0 ms against 4.1; exp(a)*b+c over 2^22 floats: 1.7 against 1.1).
Pinned, a tiny call pays instead: its worker must wake on the other,
idle core, which in a VM costs more than the kernel (a 16-float call
15-25 us more than unpinned). So the workers are pinned while a call
whose arguments and buffers come to at least `PIN_MIN_BYTES` runs, and
unpinned for smaller calls; a program knows which it is
(`wants_pinned`), and switching costs a system call per worker.

PoCL pins its thread i to CPU i itself when `POCL_AFFINITY=1` is set as it
initialises (`pocl_environment` sets it for accy's first
`cl.get_platforms()`), and aborts the process when that fails: accy asks
for it only when this process may run on every CPU and PoCL's thread count
is not set above the CPU count (`can_pin`). The workers are then the
threads PoCL's initialisation started with one CPU each (`Workers.found`);
a user's `POCL_AFFINITY`, either way, is left to PoCL.
"""

from __future__ import annotations

import os
import threading

#: Calls whose arguments and buffers come to at least this many bytes run
#: with the workers pinned (see the module docstring).
PIN_MIN_BYTES = 1 << 20


def can_pin() -> bool:
    """Whether PoCL's thread i can be pinned to CPU i for every thread it
    starts: every CPU is allowed to this process, and neither
    POCL_MAX_PTHREAD_COUNT nor POCL_CPU_MAX_CU_COUNT asks for more threads
    than there are CPUs."""
    cpus = os.cpu_count() or 1
    try:
        if os.sched_getaffinity(0) != set(range(cpus)):
            return False
    except (AttributeError, OSError):  # no affinity masks here (not Linux)
        return False
    for name in ("POCL_MAX_PTHREAD_COUNT", "POCL_CPU_MAX_CU_COUNT"):
        value = os.environ.get(name, "").strip()
        if value and (not value.isdigit() or int(value) > cpus):
            return False
    return True


def thread_ids() -> set[int]:
    """The ids of this process's threads (empty where /proc is not)."""
    try:
        return {int(name) for name in os.listdir("/proc/self/task")}
    except OSError:
        return set()


class Workers:
    """PoCL's pinned worker threads (thread id -> its CPU), switched
    between pinned and free (every CPU of the process) by `pin`."""

    def __init__(self, cpus: dict[int, int]) -> None:
        self.cpus = cpus
        self.everywhere = os.sched_getaffinity(0)
        self.pinned = True
        self._lock = threading.Lock()

    @classmethod
    def found(cls, before: set[int]) -> Workers | None:
        """The threads started since `before` (PoCL's initialisation) that
        are pinned to one CPU each; None when there are none."""
        cpus = {}
        for tid in thread_ids() - before:
            try:
                mask = os.sched_getaffinity(tid)
            except OSError:  # the thread is gone
                continue
            if len(mask) == 1:
                cpus[tid] = next(iter(mask))
        return cls(cpus) if cpus else None

    def pin(self, pinned: bool) -> None:
        """Pins each worker to its CPU, or frees it. A worker that cannot be
        moved (gone, or the process's CPUs changed) ends the switching:
        they stay as they are from then on."""
        if pinned == self.pinned:
            return
        with self._lock:
            if pinned == self.pinned or not self.cpus:
                return
            try:
                for tid, cpu in self.cpus.items():
                    os.sched_setaffinity(tid, {cpu} if pinned else self.everywhere)
            except OSError:
                self.cpus = {}
                return
            self.pinned = pinned


def wants_pinned(nbytes: int) -> bool:
    """Whether a call whose arguments and buffers come to `nbytes` runs with the workers pinned."""
    return nbytes >= PIN_MIN_BYTES
