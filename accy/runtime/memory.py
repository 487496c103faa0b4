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

On a device whose memory is the host's (PoCL's CPU device, `host_backed`),
a buffer is made over host memory accy allocates (an aligned numpy array,
`USE_HOST_PTR`): PoCL allocates a buffer's memory only when a command first
uses it and aborts the process when that allocation fails (an assertion in
`pocl_create_migration_commands`), while numpy's failure is a `MemoryError`
the pool turns into `DeviceMemoryError`. A buffer larger than the device's
CL_DEVICE_MAX_MEM_ALLOC_SIZE is refused by the pool before the driver sees
it (`max_buffer_bytes`).

Releasing a buffer while kernels that use it are still queued is safe when
everything that may reuse it is enqueued on the same in-order queue:
whatever is enqueued next with it runs after them. The pool is safe to use
from several threads.
"""

from __future__ import annotations

import pyopencl as cl

from accy.runtime.host_memory import ALIGN, SizedPool, aligned_empty
from accy.runtime.host_memory import MEMORY_LIMIT_ENV as MEMORY_LIMIT_ENV

# Shared with the host pool (and re-exported: callers import them from here).
from accy.runtime.host_memory import POOL_MAX_BYTES_ENV as POOL_MAX_BYTES_ENV
from accy.runtime.host_memory import PoolStats as PoolStats
from accy.runtime.host_memory import memory_limit_from_env as memory_limit_from_env
from accy.runtime.host_memory import pool_max_bytes_from_env as pool_max_bytes_from_env


class MemoryPool(SizedPool["cl.Buffer"]):
    """Device buffers by exact byte size (`SizedPool`; see the module docstring)."""

    # The driver's refusal, or numpy's for the host memory of a host-backed buffer.
    out_of_memory = (cl.MemoryError, MemoryError)

    def __init__(
        self,
        context: cl.Context,
        max_free_bytes: int = 1 << 30,
        max_free_per_size: int = 16,
        limit: int | None = None,
        name: str = "opencl",
        max_buffer_bytes: int | None = None,
        host_backed: bool = False,
        align: int = ALIGN,
    ) -> None:
        super().__init__(max_free_bytes, max_free_per_size, limit, name, max_buffer_bytes)
        self.context = context
        #: Buffers are made over host memory aligned to `align` bytes (see the module docstring).
        self.host_backed = host_backed
        self.align = align

    def _allocate(self, nbytes: int) -> cl.Buffer:
        if self.host_backed:
            # The buffer keeps its host array alive (pyopencl's `hostbuf`).
            flags = cl.mem_flags.READ_WRITE | cl.mem_flags.USE_HOST_PTR
            return cl.Buffer(self.context, flags, hostbuf=aligned_empty(nbytes, self.align))
        return cl.Buffer(self.context, cl.mem_flags.READ_WRITE, size=nbytes)

    @staticmethod
    def _size_of(buffer: cl.Buffer) -> int:
        return buffer.size
