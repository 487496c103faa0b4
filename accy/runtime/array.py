"""Device arrays: `accy.Array`, a tensor that lives in a device's memory.

    x = accy.device_put(np.ones((64, 128), np.float32), exe.device)
    (h,) = exe1(x, to_host=False)        # an accy.Array: stays on the device
    (y,) = exe2(h)                        # h's buffer is exe2's argument: no copy
    h.numpy(), np.asarray(h), np.from_dlpack(h)   # the values on the host

An `Array` owns one buffer of its device's pool (runtime/device.py) and
gives it back when it is dropped (`__del__`), so the pool's report
(`Device.memory_report()`) shows what live Arrays hold. Its values never
change: a kernel that writes its argument gets a copy of the Array's buffer.
An Array passed to an executable of its own device is used in place; one of
another device is read to the host and copied there.

On host-memory devices (LLVM, reference) `numpy()` is a read-only view of
the Array's buffer, no copy; once such a view (or a DLPack export) exists,
the buffer is no longer reused by the pool after the Array is dropped (numpy
keeps the memory alive for the view). Elsewhere (OpenCL) `numpy()` reads the
buffer into a fresh array. A CPU Array (PoCL's CPU device, LLVM, reference)
speaks DLPack: `np.from_dlpack(a)` works, zero-copy on host-memory devices.

A call whose inputs are all Arrays and whose results stay on the device
(`to_host=False`) returns once its kernels are queued (OpenCL): its
results carry the call's marker event, `block_until_ready()` waits for it,
and `numpy()` (and anything else reading the buffer, another call
included) is queued behind it on the device's in-order queue. So a chain of
calls on Arrays runs without a host synchronisation between them. Other
calls complete before they return.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from accy.runtime.host_memory import ARRAY, CALL

if TYPE_CHECKING:
    from accy.runtime.device import Device
    from accy.runtime.results import ResultLayout

#: DLPack's device types (dlpack.h: DLDeviceType).
DLPACK_CPU = 1
DLPACK_OPENCL = 4


class Array:
    """A tensor in `device`'s memory, of `shape` and `dtype` (numpy's; bool
    for i1). Made by `accy.device_put` and by calls with `to_host=False`,
    not by hand. Immutable; see the module docstring."""

    __slots__ = (
        "__weakref__", "_base", "_buffer", "_give_back", "_ready", "_keep", "device", "dtype", "nbytes", "shape",
    )

    def __init__(self, device: Device, buffer: Any, shape: tuple[int, ...], dtype: np.dtype, base: Array | None = None) -> None:
        """Takes `buffer`, a buffer of `device.pool` counted under ARRAY,
        which it gives back when dropped; or, with `base`, views the buffer
        of `base` (kept alive) under another shape."""
        shape = tuple(int(n) for n in shape)
        dtype = np.dtype(dtype)
        self._init(device, buffer, shape, dtype, math.prod(shape) * dtype.itemsize, base)

    @classmethod
    def _result(cls, device: Device, buffer: Any, layout: ResultLayout) -> Array:
        """A call's result, owning `buffer`: its shape and dtype as the
        program worked them out once (results.py), not converted again."""
        array = cls.__new__(cls)
        array._init(device, buffer, layout.shape, layout.dtype, layout.nbytes, None)
        return array

    def _init(self, device: Device, buffer: Any, shape: tuple[int, ...], dtype: np.dtype, nbytes: int, base: Array | None) -> None:
        self.device = device
        self.shape = shape
        self.dtype = dtype
        self.nbytes = nbytes
        self._buffer = buffer
        self._base = base
        self._ready: Any = None  # the marker event of the call computing it (asynchronous calls)
        self._keep: Any = None  # host memory that call's queued copies read
        # What gives the buffer back when the Array is dropped (`__del__`); None for a view of a base.
        self._give_back: Callable[[Any, str], None] | None = device.pool.release if base is None else None

    @staticmethod
    def from_host(device: Device, host: np.ndarray) -> Array:
        """A new Array on `device` holding a copy of `host`."""
        flat = np.ascontiguousarray(host).reshape(-1)
        buffer = device.pool.acquire(flat.nbytes, ARRAY)
        try:
            if flat.nbytes:
                device.write_buffer(buffer, flat)
        except BaseException:
            device.pool.release(buffer, ARRAY)
            raise
        return Array(device, buffer, host.shape, host.dtype)

    @property
    def buffer(self) -> Any:
        """The device buffer (a `cl.Buffer`, or a flat uint8 numpy array on
        host-memory devices); its first `nbytes` bytes are the values, row-major
        (i1 as one byte, 0 or 1). Valid while the Array lives."""
        return self._buffer

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    def pending(self, ready: Any, keep: Any) -> None:
        """The Array is computed by queued work that ends with event `ready`
        (reading host memory `keep` until then)."""
        self._ready, self._keep = ready, keep

    def block_until_ready(self) -> Array:
        """Waits until the Array's values are computed (the call that made it
        may still run: the module docstring); returns it."""
        root = self._root()
        if root._ready is not None:
            root._ready.wait()
            root._ready = root._keep = None
        return self

    def numpy(self) -> np.ndarray:
        """The values as a numpy array: a read-only view on host-memory
        devices (no copy), a fresh array elsewhere."""
        return self._values(export=True)

    def _values(self, export: bool) -> np.ndarray:
        """The values; `export`: the view may outlive this call (the buffer
        then leaves the pool's reuse, see the module docstring)."""
        self.block_until_ready()
        view = self.device.host_view(self._buffer)
        if view is None:
            out = np.empty(self.shape, self.dtype)
            if out.nbytes:
                self.device.read_buffer(self._buffer, out)
            return out
        if export:
            self._root()._export()
        out = view[: self.nbytes].view(self.dtype).reshape(self.shape)
        out.flags.writeable = False
        return out

    def _root(self) -> Array:
        return self if self._base is None else self._base

    def _export(self) -> None:
        """Host views of the buffer exist: when dropped, the Array stops
        counting it without handing it to the pool for reuse."""
        if self._give_back is not None:
            self._give_back = self.device.pool.discard

    def __del__(self, holder: str = ARRAY) -> None:
        # A method, not a weakref.finalize per Array: that costs ~2 us a call
        # result (dispatch cost, docs/performance.md). `holder` is bound at
        # definition, so a drop during interpreter shutdown needs no globals;
        # giving back is bookkeeping in the pool, never a driver call.
        give_back, self._give_back = self._give_back, None
        if give_back is not None:
            give_back(self._buffer, holder)

    def __array__(self, dtype: Any = None, copy: bool | None = None) -> np.ndarray:
        """numpy's protocol: `np.asarray(a)` is `a.numpy()`; `copy=True`
        always copies; `copy=False` is refused where a copy is needed."""
        host = self.device.host_view(self._buffer) is not None
        converts = dtype is not None and np.dtype(dtype) != self.dtype
        if copy is False and (not host or converts):
            raise ValueError(f"{self._describe()} cannot be viewed by numpy without a copy (it is not in host memory, or the dtype differs)")
        if converts:
            return self._values(export=False).astype(dtype)
        if copy and host:
            return self._values(export=False).copy()
        return self.numpy()

    def __dlpack_device__(self) -> tuple[int, int]:
        if self.device.cpu:
            return (DLPACK_CPU, 0)
        return (DLPACK_OPENCL, int(getattr(self.device, "index", 0)))

    def __dlpack__(
        self, *, stream: Any = None, max_version: tuple[int, int] | None = None, dl_device: Any = None, copy: bool | None = None
    ) -> Any:
        """The values as a DLPack capsule, for CPU arrays (numpy's export of
        `numpy()`: zero-copy and read-only on host-memory devices, a copy
        on PoCL's CPU device). BufferError for other devices, or for
        `copy=False` where a copy is needed."""
        if not self.device.cpu:
            raise BufferError(f"{self._describe()} is not in host memory: DLPack exports CPU arrays only; use .numpy()")
        host = self.device.host_view(self._buffer) is not None
        if copy is False and not host:
            raise BufferError(f"{self._describe()} is not host memory itself: exporting it needs a copy")
        return self.numpy().__dlpack__(
            stream=stream, max_version=max_version, dl_device=dl_device, copy=copy if host else None
        )

    def reshape(self, *shape: int | tuple[int, ...]) -> Array:
        """The same values (row-major) under another shape, sharing the
        buffer (no copy); one dimension may be -1."""
        dims = list(shape[0] if len(shape) == 1 and isinstance(shape[0], tuple | list) else shape)
        if dims.count(-1) > 1 or any(not isinstance(n, int | np.integer) or n < -1 for n in dims):
            raise ValueError(f"cannot reshape {self._describe()} to {tuple(dims)}")
        if -1 in dims:
            known = math.prod(n for n in dims if n != -1)
            if known == 0 or self.size % known:
                raise ValueError(f"cannot reshape {self._describe()} to {tuple(dims)}")
            dims[dims.index(-1)] = self.size // known
        if math.prod(dims) != self.size:
            raise ValueError(f"cannot reshape {self._describe()} ({self.size} elements) to {tuple(dims)}")
        return Array(self.device, self._buffer, tuple(int(n) for n in dims), self.dtype, base=self._root())

    def _describe(self) -> str:
        return f"accy.Array of {self.dtype} and shape {self.shape} on device '{self.device.name}'"

    def __repr__(self) -> str:
        values = np.array2string(self._values(export=False), separator=", ", prefix="accy.Array(")
        return f"accy.Array({values}, shape={self.shape}, dtype={self.dtype}, device='{self.device.name}')"


def device_put(value: object, device: str | Device = "auto") -> Array:
    """`value` (a numpy array, anything `np.asarray` takes, or an `Array`)
    as an `Array` on `device` (a name as `accy.compile` takes, or a
    `Device`): a copy of a host array; an Array of that device as it is;
    an Array of another device copied through the host."""
    from accy.runtime.devices import get_device

    target = get_device(device) if isinstance(device, str) else device
    if isinstance(value, Array):
        if value.device is target:
            return value
        value = value._values(export=False)  # copied into `target` below
    host = np.asarray(value)
    if host.dtype.kind not in "biuf" and not is_bfloat16_dtype(host.dtype):
        raise TypeError(f"accy.device_put takes numeric or bool arrays, got an array of {host.dtype}")
    return Array.from_host(target, host)


def is_bfloat16_dtype(dtype: np.dtype) -> bool:
    """Whether `dtype` is ml_dtypes' bfloat16 (numpy has no kind for it)."""
    from accy.dialects.types import is_bfloat16  # loads xDSL: only for a dtype outside numpy's kinds

    return is_bfloat16(dtype)


def result_arrays(
    device: Device, layouts: list[ResultLayout], bufs: list[Any], take: Callable[[int], Any | None], copy: Callable[[Any, Any, int], None]
) -> list[Array]:
    """A call's results (`layouts`, results.py) as Arrays that own their
    buffers: a result buffer the call owns (`take(slot)` gives it up, or
    returns None: not the call's, or already given) becomes the Array's; any
    other (an input, a constant, a slot returned twice) is copied
    (`copy(dst, src, nbytes)`) into a new pool buffer."""
    pool = device.pool
    arrays = []
    for layout in layouts:
        buffer = take(layout.slot)
        if buffer is None:
            buffer = pool.acquire(layout.nbytes, ARRAY)
            if layout.nbytes:
                copy(buffer, bufs[layout.slot], layout.nbytes)
        else:
            pool.rehold(buffer, CALL, ARRAY)
        arrays.append(Array._result(device, buffer, layout))
    return arrays
