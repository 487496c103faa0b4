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

The pool is also the device's memory account (`SizedPool`): it counts the
buffers in use by holder (calls, accy.Arrays, executables' constants), is
bounded by `limit` (`$ACCY_MEMORY_LIMIT`, default the device's global
memory) and raises `DeviceMemoryError` for a buffer that does not fit.

Releasing a buffer while kernels that use it are still queued is safe when
everything that may reuse it is enqueued on the same in-order queue:
whatever is enqueued next with it runs after them. The pool is safe to use
from several threads.
"""

from __future__ import annotations

import pyopencl as cl

from accy.runtime.host_memory import MEMORY_LIMIT_ENV as MEMORY_LIMIT_ENV

# Shared with the host pool (and re-exported: callers import them from here).
from accy.runtime.host_memory import POOL_MAX_BYTES_ENV as POOL_MAX_BYTES_ENV
from accy.runtime.host_memory import PoolStats as PoolStats
from accy.runtime.host_memory import SizedPool
from accy.runtime.host_memory import memory_limit_from_env as memory_limit_from_env
from accy.runtime.host_memory import pool_max_bytes_from_env as pool_max_bytes_from_env


class MemoryPool(SizedPool["cl.Buffer"]):
    """Device buffers by exact byte size (`SizedPool`; see the module docstring)."""

    out_of_memory = cl.MemoryError

    def __init__(
        self,
        context: cl.Context,
        max_free_bytes: int = 1 << 30,
        max_free_per_size: int = 16,
        limit: int | None = None,
        name: str = "opencl",
    ) -> None:
        super().__init__(max_free_bytes, max_free_per_size, limit, name)
        self.context = context

    def _allocate(self, nbytes: int) -> cl.Buffer:
        return cl.Buffer(self.context, cl.mem_flags.READ_WRITE, size=nbytes)

    @staticmethod
    def _size_of(buffer: cl.Buffer) -> int:
        return buffer.size
