"""Host buffers for devices that run on the CPU itself (the LLVM device):
aligned numpy byte arrays, reused by size across calls.

`HostMemoryPool` is the host twin of the OpenCL `MemoryPool` (memory.py):
per-size free lists, bounded by `max_free_per_size` buffers of one size and
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

import numpy as np

POOL_MAX_BYTES_ENV = "ACCY_POOL_MAX_BYTES"
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


class HostMemoryPool:
    """Aligned host byte arrays by exact size (see the module docstring)."""

    def __init__(self, max_free_bytes: int = 1 << 30, max_free_per_size: int = 16) -> None:
        self.max_free_bytes = max_free_bytes
        self.max_free_per_size = max_free_per_size
        self._free: OrderedDict[int, np.ndarray] = OrderedDict()
        self._by_size: dict[int, list[int]] = {}
        self._serial = 0
        self._free_bytes = 0
        self._lock = threading.Lock()
        self.stats = PoolStats()

    @property
    def free_bytes(self) -> int:
        return self._free_bytes

    def __len__(self) -> int:
        return len(self._free)

    def acquire(self, nbytes: int) -> np.ndarray:
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
            return aligned_empty(size)
        except MemoryError:
            self.clear()  # idle buffers may hold the memory this one needs
            return aligned_empty(size)

    def release(self, buffer: np.ndarray) -> None:
        size = buffer.nbytes
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
                old_serials = self._by_size[old.nbytes]
                old_serials.remove(serial)
                if not old_serials:
                    del self._by_size[old.nbytes]
                self._free_bytes -= old.nbytes
                self.stats.evicted += 1

    def clear(self) -> None:
        with self._lock:
            self._free.clear()
            self._by_size.clear()
            self._free_bytes = 0
