"""Host buffers for devices that run on the CPU itself (the LLVM device):
aligned numpy byte arrays, reused by size across calls.

`SizedPool` is the pool both this `HostMemoryPool` and the OpenCL
`MemoryPool` (memory.py) are: per-size free lists, bounded by `max_free_per_size` buffers of one size and
`max_free_bytes` bytes in all (`$ACCY_POOL_MAX_BYTES`), the buffers released
longest ago dropped first. A buffer is a flat `uint8` array whose data is
aligned to `ALIGN` bytes (a cache line, the widest vector load). Safe to use
from several threads.
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import Generic, TypeVar

import numpy as np

POOL_MAX_BYTES_ENV = "ACCY_POOL_MAX_BYTES"
B = TypeVar("B")
#: The alignment of every host buffer's data.
ALIGN = 64


@dataclass
class PoolStats:
    """Buffers created (allocations), requests served from the free lists,
    and free buffers dropped to stay within the bounds."""

    created: int = 0
    reused: int = 0
    bytes_created: int = 0
    evicted: int = 0


def pool_max_bytes_from_env(default: int) -> int:
    """`$ACCY_POOL_MAX_BYTES` (a byte count; 0 keeps nothing), else `default`."""
    text = os.environ.get(POOL_MAX_BYTES_ENV, "").strip()
    if not text:
        return default
    if not text.isdigit():
        raise ValueError(f"{POOL_MAX_BYTES_ENV}={text!r}: expected a number of bytes")
    return int(text)


def aligned_empty(nbytes: int, align: int = ALIGN) -> np.ndarray:
    """A new flat uint8 array of `nbytes` bytes whose data is `align`-aligned."""
    raw = np.empty(nbytes + align, np.uint8)
    start = -raw.ctypes.data % align
    return raw[start : start + nbytes]


class SizedPool(Generic[B]):
    """Buffers by exact byte size: `acquire(n)` returns a free buffer of n
    bytes or makes one (`_allocate`); `release(b)` makes it available again.
    Free buffers are kept by release number (oldest first) and each size's
    release numbers (oldest first): acquire takes the newest of its size,
    eviction the oldest of all, within `max_free_per_size` buffers of one
    size and `max_free_bytes` bytes in all. Safe to use from several
    threads. Subclasses say how a buffer is made and measured."""

    #: What `_allocate` raises when memory runs out (idle buffers are then dropped and it is tried once more).
    out_of_memory: type[Exception] = MemoryError

    def __init__(self, max_free_bytes: int = 1 << 30, max_free_per_size: int = 16) -> None:
        self.max_free_bytes = max_free_bytes
        self.max_free_per_size = max_free_per_size
        self._free: OrderedDict[int, B] = OrderedDict()
        self._by_size: dict[int, list[int]] = {}
        self._serial = 0
        self._free_bytes = 0
        self._lock = threading.Lock()
        self.stats = PoolStats()

    def _allocate(self, nbytes: int) -> B:
        raise NotImplementedError

    @staticmethod
    def _size_of(buffer: B) -> int:
        raise NotImplementedError

    @property
    def free_bytes(self) -> int:
        """Bytes of the buffers the pool keeps idle."""
        return self._free_bytes

    def __len__(self) -> int:
        return len(self._free)

    def acquire(self, nbytes: int) -> B:
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
            return self._allocate(size)
        except self.out_of_memory:
            self.clear()  # idle buffers may hold the memory this one needs
            return self._allocate(size)

    def release(self, buffer: B) -> None:
        size = self._size_of(buffer)
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
                old_size = self._size_of(old)
                old_serials = self._by_size[old_size]
                old_serials.remove(serial)  # the oldest of its size: first in the list
                if not old_serials:
                    del self._by_size[old_size]
                self._free_bytes -= old_size
                self.stats.evicted += 1

    def clear(self) -> None:
        """Drops every free buffer."""
        with self._lock:
            self._free.clear()
            self._by_size.clear()
            self._free_bytes = 0


class HostMemoryPool(SizedPool[np.ndarray]):
    """Aligned host byte arrays by exact size (see the module docstring)."""

    def _allocate(self, nbytes: int) -> np.ndarray:
        return aligned_empty(nbytes)

    @staticmethod
    def _size_of(buffer: np.ndarray) -> int:
        return buffer.nbytes
