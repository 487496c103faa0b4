"""A pool of OpenCL device buffers, reused by size across calls.

Allocating a `cl.Buffer` costs a driver call (and, on a GPU, device memory
bookkeeping); a program runs the same buffer plan on every call, so the
buffers of one call are exactly the ones the next call asks for. The pool
keeps released buffers in per-size free lists and hands them out again.

Releasing a buffer while kernels that use it are still queued is safe on an
in-order queue: whatever is enqueued next with it runs after them.
"""

from __future__ import annotations

from dataclasses import dataclass

import pyopencl as cl


@dataclass
class PoolStats:
    """Buffers created (driver allocations) and requests served from the free lists."""

    created: int = 0
    reused: int = 0
    bytes_created: int = 0


class MemoryPool:
    """Device buffers by exact byte size. `acquire(n)` returns a free buffer of
    n bytes or makes one; `release(b)` makes it available again."""

    def __init__(self, context: cl.Context, max_free_per_size: int = 16) -> None:
        self.context = context
        self.max_free_per_size = max_free_per_size
        self._free: dict[int, list[cl.Buffer]] = {}
        self.stats = PoolStats()

    def acquire(self, nbytes: int) -> cl.Buffer:
        size = max(1, nbytes)
        free = self._free.get(size)
        if free:
            self.stats.reused += 1
            return free.pop()
        self.stats.created += 1
        self.stats.bytes_created += size
        return cl.Buffer(self.context, cl.mem_flags.READ_WRITE, size=size)

    def release(self, buffer: cl.Buffer) -> None:
        free = self._free.setdefault(buffer.size, [])
        if len(free) < self.max_free_per_size:
            free.append(buffer)

    def clear(self) -> None:
        """Drops every free buffer (the driver frees them once unreferenced)."""
        self._free.clear()
