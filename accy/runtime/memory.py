"""A pool of OpenCL device buffers, reused by size across calls.

Allocating a `cl.Buffer` costs a driver call (and, on a GPU, device memory
bookkeeping); a program runs the same buffer plan on every call, so the
buffers of one call are exactly the ones the next call asks for. The pool
keeps released buffers in per-size free lists and hands them out again.

The free lists are bounded: at most `max_free_per_size` buffers of one size
and `max_free_bytes` bytes in all (`$ACCY_POOL_MAX_BYTES`, default a quarter
of the device's global memory). Past that, the buffers released longest ago
are dropped (the driver frees them once nothing references them). Buffers in
use by a call are not counted: the bound is on what the pool keeps idle.

Releasing a buffer while kernels that use it are still queued is safe when
everything that may reuse it is enqueued on the same in-order queue:
whatever is enqueued next with it runs after them. The pool is safe to use
from several threads.
"""

from __future__ import annotations

import threading
from collections import OrderedDict

import pyopencl as cl

# Shared with the host pool (and re-exported: callers import them from here).
from accy.runtime.host_memory import POOL_MAX_BYTES_ENV as POOL_MAX_BYTES_ENV
from accy.runtime.host_memory import PoolStats as PoolStats
from accy.runtime.host_memory import pool_max_bytes_from_env as pool_max_bytes_from_env


class MemoryPool:
    """Device buffers by exact byte size. `acquire(n)` returns a free buffer of
    n bytes or makes one; `release(b)` makes it available again, within the
    bounds (see the module docstring)."""

    def __init__(self, context: cl.Context, max_free_bytes: int = 1 << 30, max_free_per_size: int = 16) -> None:
        self.context = context
        self.max_free_bytes = max_free_bytes
        self.max_free_per_size = max_free_per_size
        # Every free buffer by release number (oldest first), and the release
        # numbers of each size (oldest first): acquire takes the newest of its
        # size, eviction the oldest of all.
        self._free: OrderedDict[int, cl.Buffer] = OrderedDict()
        self._by_size: dict[int, list[int]] = {}
        self._serial = 0
        self._free_bytes = 0
        self._lock = threading.Lock()
        self.stats = PoolStats()

    @property
    def free_bytes(self) -> int:
        """Bytes of the buffers the pool keeps idle."""
        return self._free_bytes

    def __len__(self) -> int:
        return len(self._free)

    def acquire(self, nbytes: int) -> cl.Buffer:
        size = max(1, nbytes)
        with self._lock:
            serials = self._by_size.get(size)
            if serials:
                buffer = self._free.pop(serials.pop())
                if not serials:
                    del self._by_size[size]
                self._free_bytes -= size
                self.stats.reused += 1
                return buffer
            self.stats.created += 1
            self.stats.bytes_created += size
        try:
            return cl.Buffer(self.context, cl.mem_flags.READ_WRITE, size=size)
        except cl.MemoryError:
            # Idle buffers may hold the memory this one needs.
            self.clear()
            return cl.Buffer(self.context, cl.mem_flags.READ_WRITE, size=size)

    def release(self, buffer: cl.Buffer) -> None:
        size = buffer.size
        with self._lock:
            serials = self._by_size.get(size, [])
            if len(serials) >= self.max_free_per_size or size > self.max_free_bytes:
                self.stats.evicted += 1
                return
            self._serial += 1
            serials.append(self._serial)
            self._by_size[size] = serials
            self._free[self._serial] = buffer
            self._free_bytes += size
            while self._free_bytes > self.max_free_bytes:
                serial, old = self._free.popitem(last=False)
                old_serials = self._by_size[old.size]
                old_serials.remove(serial)  # the oldest of its size: first in the list
                if not old_serials:
                    del self._by_size[old.size]
                self._free_bytes -= old.size
                self.stats.evicted += 1

    def clear(self) -> None:
        """Drops every free buffer (the driver frees them once unreferenced)."""
        with self._lock:
            self._free.clear()
            self._by_size.clear()
            self._free_bytes = 0
