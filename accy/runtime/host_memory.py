"""Host buffers for devices that run on the CPU itself (the LLVM device):
aligned numpy byte arrays, reused by size across calls.

`SizedPool` is the pool both this `HostMemoryPool` and the OpenCL
`MemoryPool` (memory.py) are: per-size free lists, bounded by `max_free_per_size` buffers of one size,
`max_free_buffers` buffers (`$ACCY_POOL_MAX_BUFFERS`) and
`max_free_bytes` bytes in all (`$ACCY_POOL_MAX_BYTES`), the buffers released
longest ago dropped first, and the device's memory account: buffers in use
by holder, a `limit` on in use plus cached (`$ACCY_MEMORY_LIMIT`), and
`DeviceMemoryError` for a buffer past it. A buffer is a flat `uint8` array whose data is
aligned to `ALIGN` bytes (a cache line, the widest vector load). Safe to use
from several threads.
"""

from __future__ import annotations

import math
import os
import re
import sys
import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import Generic, TypeVar

import numpy as np

from accy.env import env_int, env_value

POOL_MAX_BYTES_ENV = "ACCY_POOL_MAX_BYTES"
POOL_MAX_BUFFERS_ENV = "ACCY_POOL_MAX_BUFFERS"
#: Idle buffers a pool keeps at most, whatever their bytes. Distinct programs
#: (a tracer's retraces, a tuner's candidates) leave buffers of sizes of
#: their own; bounded by bytes alone, thousands of small ones stay, and each
#: costs the driver host memory besides its bytes (NVIDIA's OpenCL: ~30 KiB
#: of RSS a program, issue 25).
MAX_FREE_BUFFERS = 1024
MEMORY_LIMIT_ENV = "ACCY_MEMORY_LIMIT"
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


#: Who holds a buffer the pool handed out (the `holder` of `SizedPool.acquire`).
CALL = "call"  # a call of a program, until it returns
ARRAY = "array"  # an accy.Array, until it is dropped
CONSTANT = "constant"  # a program's constant, until its Executable is dropped
_HOLDERS = {CALL: "calls running now", ARRAY: "accy.Arrays", CONSTANT: "executables' constants"}
_PURPOSE = {CALL: "a call", ARRAY: "an accy.Array", CONSTANT: "an executable's constant"}


def format_bytes(n: int) -> str:
    """`n` bytes as people read them: "4,194,304 bytes (4.0 MiB)"."""
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if n >= 1 << shift:
            return f"{n:,} bytes ({n / (1 << shift):.1f} {unit})"
    return f"{n:,} bytes"


@dataclass(frozen=True)
class MemoryReport:
    """What a device's pool holds: `limit` (None: unbounded), the bytes in
    use by each holder (`held`: "call", "array", "constant" -> bytes;
    `buffers`: the same -> count) and the idle bytes kept for reuse
    (`cached`)."""

    limit: int | None
    held: dict[str, int]
    buffers: dict[str, int]
    cached: int

    @property
    def in_use(self) -> int:
        """Bytes handed out and not yet returned."""
        return sum(self.held.values())

    def __str__(self) -> str:
        parts = [f"{_HOLDERS[h]}: {format_bytes(self.held.get(h, 0))} in {self.buffers.get(h, 0)} buffer(s)" for h in _HOLDERS]
        limit = "no limit" if self.limit is None else f"limit {format_bytes(self.limit)}"
        return f"{format_bytes(self.in_use)} in use ({'; '.join(parts)}), {format_bytes(self.cached)} cached, {limit}"


class DeviceMemoryError(MemoryError):
    """A buffer does not fit in a device's memory: past the pool's limit
    (`Device.memory_limit`), or refused by the driver. `requested` is the
    buffer's size in bytes, `report` what the pool held then."""

    def __init__(self, message: str, requested: int, report: MemoryReport) -> None:
        super().__init__(message)
        self.requested = requested
        self.report = report


class DeviceMemoryWarning(UserWarning):
    """A program compiled for a device whose memory its buffers cannot fit in
    (`accy.compile` warns; calling it raises `DeviceMemoryError`)."""


#: Size suffixes `parse_bytes` takes (lower case): decimal units as disks and
#: networks count, binary ones as memory does; a bare K/M/G/T is decimal, as
#: in Kubernetes quantities (512M = 512,000,000 bytes).
_UNITS = {
    "": 1, "b": 1,
    "k": 10**3, "kb": 10**3, "m": 10**6, "mb": 10**6, "g": 10**9, "gb": 10**9, "t": 10**12, "tb": 10**12,
    "ki": 1 << 10, "kib": 1 << 10, "mi": 1 << 20, "mib": 1 << 20, "gi": 1 << 30, "gib": 1 << 30, "ti": 1 << 40, "tib": 1 << 40,
}
_SIZE = re.compile(r"(?P<number>(?:\d+\.?\d*|\.\d+)(?:e[+-]?\d+)?)\s*(?P<unit>[a-z]*)")


def parse_bytes(text: str) -> int | None:
    """A byte count as people write one: `4096`, `1e9`, `1.5GB`, `512M`,
    `2GiB` (see `_UNITS`; case does not matter); None when `text` is not one.
    A fraction of a byte is dropped."""
    match = _SIZE.fullmatch(text.strip().lower())
    if match is None or match["unit"] not in _UNITS:
        return None
    value = float(match["number"]) * _UNITS[match["unit"]]
    if not math.isfinite(value):
        return None
    # Plain integers stay exact (floats lose digits past 2**53).
    return int(match["number"]) * _UNITS[match["unit"]] if match["number"].isdigit() else int(value)


def pool_max_bytes_from_env(default: int) -> int:
    """`$ACCY_POOL_MAX_BYTES` (bytes, as `parse_bytes` reads them; 0 keeps nothing), else `default`."""
    return _bytes_from_env(POOL_MAX_BYTES_ENV, default)


def pool_max_buffers_from_env(default: int = MAX_FREE_BUFFERS) -> int:
    """`$ACCY_POOL_MAX_BUFFERS` (a whole number; 0 keeps none), else `default`."""
    return env_int(POOL_MAX_BUFFERS_ENV, default, "idle buffers", minimum=0)


def memory_limit_from_env(default: int | None) -> int | None:
    """`$ACCY_MEMORY_LIMIT` (bytes, as `parse_bytes` reads them), else `default`."""
    return _bytes_from_env(MEMORY_LIMIT_ENV, default)


def _bytes_from_env(name: str, default: int | None) -> int | None:
    return env_value(name, parse_bytes, "a number of bytes, such as 4096, 1e9, 512M, 1GB or 1GiB", default)


def physical_memory() -> int | None:
    """The host's physical memory in bytes (None where the OS does not say)."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, ValueError, OSError):
        return None


def aligned_empty(nbytes: int, align: int = ALIGN) -> np.ndarray:
    """A new flat uint8 array of `nbytes` bytes whose data is `align`-aligned."""
    return _aligned_part(np.empty(nbytes + align, np.uint8), nbytes, align)


class RecycledResults:
    """Host arrays that calls return as numpy results, taken back once
    nothing refers to them any more: a new array's pages are faulted in by
    the kernel that writes them (2.7 ms for 64 MiB here, as long as a
    softmax of that size), a recycled one's are not. A result's views of
    every kind keep its raw array referenced (numpy views point at the array
    that owns the data), so an array is reused only when its reference count
    says that nothing outside this cache holds it (CPython's count: the
    cache is per device and takes a lock). At most `max_arrays` arrays are
    kept, and free ones beyond `max_bytes` are dropped, the oldest first."""

    def __init__(self, max_bytes: int, max_arrays: int = 64) -> None:
        self.max_bytes, self.max_arrays = max_bytes, max_arrays
        self._raw: list[np.ndarray] = []  # oldest first
        self._lock = threading.Lock()

    def take(self, nbytes: int, align: int = ALIGN) -> np.ndarray:
        """A flat uint8 array of `nbytes` bytes whose data is `align`-aligned,
        one nobody holds any more if there is one of that size."""
        with self._lock:
            for i in range(len(self._raw)):
                if self._raw[i].nbytes == nbytes + align and self._free(i):
                    self._raw.append(self._raw.pop(i))  # the newest now
                    break
            else:
                self._raw.append(np.empty(nbytes + align, np.uint8))
            self._trim()
            return _aligned_part(self._raw[-1], nbytes, align)

    def _free(self, i: int) -> bool:
        """Whether only this cache refers to array i (its list and getrefcount's argument)."""
        return sys.getrefcount(self._raw[i]) <= 2

    def _trim(self) -> None:
        while len(self._raw) > self.max_arrays:
            self._raw.pop(0)  # forgotten, not freed: whoever holds it keeps it
        held = sum(raw.nbytes for raw in self._raw)
        i = 0
        while held > self.max_bytes and i < len(self._raw) - 1:
            if self._free(i):
                held -= self._raw.pop(i).nbytes
            else:
                i += 1


def _aligned_part(raw: np.ndarray, nbytes: int, align: int) -> np.ndarray:
    start = -raw.ctypes.data % align
    return raw[start : start + nbytes]


class SizedPool(Generic[B]):
    """Buffers by exact byte size: `acquire(n)` returns a free buffer of n
    bytes or makes one (`_allocate`); `release(b)` makes it available again.
    Free buffers are kept by release number (oldest first) and each size's
    release numbers (oldest first): acquire takes the newest of its size,
    eviction the oldest of all, within `max_free_per_size` buffers of one
    size, `max_free_buffers` buffers and `max_free_bytes` bytes in all. Safe to use from several
    threads. Subclasses say how a buffer is made and measured.

    The pool is also the device's memory account. Every buffer handed out
    is counted under its holder (`CALL`, `ARRAY`, `CONSTANT`) until it comes
    back (`release`: kept for reuse; `discard`: forgotten, e.g. host memory
    that numpy views still use). `limit` bounds the bytes in use plus the
    bytes cached: an `acquire` past it first drops idle buffers, then raises
    `DeviceMemoryError` naming the request, the limit and what is held; so
    does an allocation the driver refuses even after the idle buffers went,
    and a buffer larger than `max_buffer_bytes` (the largest one the device
    makes, CL_DEVICE_MAX_MEM_ALLOC_SIZE on OpenCL), which is refused before
    the driver sees it. `report()` says what is held now."""

    #: What `_allocate` raises when memory runs out (idle buffers are then dropped and it is tried once more).
    out_of_memory: tuple[type[Exception], ...] = (MemoryError,)

    def __init__(
        self,
        max_free_bytes: int = 1 << 30,
        max_free_per_size: int = 16,
        limit: int | None = None,
        name: str = "device",
        max_buffer_bytes: int | None = None,
    ) -> None:
        self.max_free_bytes = max_free_bytes
        self.max_free_per_size = max_free_per_size
        self.max_free_buffers = pool_max_buffers_from_env()
        #: The largest buffer the device makes (None: no bound but the limit's).
        self.max_buffer_bytes = max_buffer_bytes
        #: The device's name, for error messages.
        self.name = name
        self._limit = limit
        self._free: OrderedDict[int, B] = OrderedDict()
        self._by_size: dict[int, list[int]] = {}
        self._serial = 0
        self._free_bytes = 0
        self._held: dict[str, int] = dict.fromkeys(_HOLDERS, 0)
        self._count: dict[str, int] = dict.fromkeys(_HOLDERS, 0)
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

    @property
    def in_use_bytes(self) -> int:
        """Bytes handed out and not yet returned, whoever holds them."""
        return sum(self._held.values())

    @property
    def limit(self) -> int | None:
        """The most bytes in use plus cached (None: no bound but the driver's)."""
        return self._limit

    @limit.setter
    def limit(self, value: int | None) -> None:
        if value is not None and (not isinstance(value, int) or value < 0):
            raise ValueError(f"a memory limit is a number of bytes or None, got {value!r}")
        with self._lock:
            self._limit = value
            if value is not None:
                self._evict_to(value - self.in_use_bytes)

    def report(self) -> MemoryReport:
        """What the pool holds now (see `MemoryReport`)."""
        with self._lock:
            return MemoryReport(self._limit, dict(self._held), dict(self._count), self._free_bytes)

    def __len__(self) -> int:
        return len(self._free)

    def acquire(self, nbytes: int, holder: str = CALL) -> B:
        """A buffer of `nbytes` bytes (at least 1), counted under `holder`."""
        size = max(1, nbytes)
        self.check_size(size, holder)
        with self._lock:
            serials = self._by_size.get(size)
            if serials:
                buffer = self._free.pop(serials.pop())
                if not serials:
                    del self._by_size[size]
                self._free_bytes -= size
                self.stats.reused += 1
                self._hold(holder, size, 1)
                return buffer
            if self._limit is not None and self.in_use_bytes + size > self._limit:
                raise self._error(size, holder, "does not fit")
            if self._limit is not None:
                self._evict_to(self._limit - self.in_use_bytes - size)
            self.stats.created += 1
            self.stats.bytes_created += size
            self._hold(holder, size, 1)  # reserved now: other threads see it
        try:
            try:
                return self._allocate(size)
            except self.out_of_memory:
                self.clear()  # idle buffers may hold the memory this one needs
                return self._allocate(size)
        except self.out_of_memory:
            with self._lock:
                self._hold(holder, -size, -1)
                raise self._error(size, holder, "was refused by the driver") from None
        except BaseException:
            with self._lock:
                self._hold(holder, -size, -1)
            raise

    def check_size(self, nbytes: int, holder: str = CALL) -> None:
        """Refuses (`DeviceMemoryError`) a buffer of `nbytes` bytes larger than
        the device makes; also for buffers made outside the pool (host memory
        an OpenCL buffer wraps), which the driver refuses the same way."""
        if self.max_buffer_bytes is not None and nbytes > self.max_buffer_bytes:
            with self._lock:
                raise self._error(nbytes, holder, f"is larger than the largest buffer the device makes ({format_bytes(self.max_buffer_bytes)})")

    def out_of_memory_error(self, nbytes: int, holder: str = CALL) -> DeviceMemoryError:
        """The error for host memory of `nbytes` bytes for a buffer made
        outside the pool that could not be allocated."""
        with self._lock:
            return self._error(nbytes, holder, "could not be allocated in host memory")

    def release(self, buffer: B, holder: str = CALL) -> None:
        """Gives `buffer` back (counted under `holder` until now); kept for reuse within the bounds."""
        size = self._size_of(buffer)
        with self._lock:
            self._hold(holder, -size, -1)
            serials = self._by_size.get(size, [])
            room = self.max_free_bytes if self._limit is None else min(self.max_free_bytes, self._limit - self.in_use_bytes)
            if len(serials) >= self.max_free_per_size or size > room:
                self.stats.evicted += 1
                return
            self._serial += 1
            serials.append(self._serial)
            self._by_size[size] = serials
            self._free[self._serial] = buffer
            self._free_bytes += size
            self._evict_to(room)

    def discard(self, buffer: B, holder: str = CALL) -> None:
        """Stops counting `buffer` (held by `holder`) without keeping it."""
        with self._lock:
            self._hold(holder, -self._size_of(buffer), -1)

    def rehold(self, buffer: B, old: str, new: str) -> None:
        """Counts `buffer` under holder `new` instead of `old` (a call's result handed to an accy.Array)."""
        size = self._size_of(buffer)
        with self._lock:
            self._hold(old, -size, -1)
            self._hold(new, size, 1)

    def clear(self) -> None:
        """Drops every free buffer."""
        with self._lock:
            self._free.clear()
            self._by_size.clear()
            self._free_bytes = 0

    def _hold(self, holder: str, size: int, count: int) -> None:
        self._held[holder] += size
        self._count[holder] += count

    def _evict_to(self, room: int) -> None:
        """Drops the oldest idle buffers until they take at most `room` bytes
        and number at most `max_free_buffers` (lock held)."""
        while self._free and (self._free_bytes > max(0, room) or len(self._free) > self.max_free_buffers):
            serial, old = self._free.popitem(last=False)
            old_size = self._size_of(old)
            old_serials = self._by_size[old_size]
            old_serials.remove(serial)  # the oldest of its size: first in the list
            if not old_serials:
                del self._by_size[old_size]
            self._free_bytes -= old_size
            self.stats.evicted += 1

    def _error(self, size: int, holder: str, what: str) -> DeviceMemoryError:
        """The error for a buffer of `size` bytes for `holder` that `what` (lock held)."""
        report = MemoryReport(self._limit, dict(self._held), dict(self._count), self._free_bytes)
        return DeviceMemoryError(
            f"device '{self.name}' is out of memory: a buffer of {format_bytes(size)} for {_PURPOSE[holder]} {what}; "
            f"{report}. Drop accy.Arrays (and Executables) you no longer need, or raise the device's "
            f"memory_limit (${MEMORY_LIMIT_ENV})",
            size,
            report,
        )


class HostMemoryPool(SizedPool[np.ndarray]):
    """Aligned host byte arrays by exact size (see the module docstring)."""

    def _allocate(self, nbytes: int) -> np.ndarray:
        return aligned_empty(nbytes)

    @staticmethod
    def _size_of(buffer: np.ndarray) -> int:
        return buffer.nbytes
