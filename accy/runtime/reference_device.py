"""The `reference` device: runs functions with the numpy reference
interpreter (`accy.reference.run`). It compiles nothing and launches no
kernels; it is the oracle other devices are checked against, and the device
that works everywhere. Its memory is the host's (`HostMemory`): an
`accy.Array` here is a pool buffer the interpreter reads in place."""

from __future__ import annotations

from typing import Any

from xdsl.dialects.builtin import ModuleOp

from accy.reference.interpreter import run as reference_run
from accy.runtime.array import Array
from accy.runtime.device import Device, HostMemory, Program, RunStats


class ReferenceProgram(Program):
    """Function `fn` of `module`, interpreted on each call."""

    def __init__(self, device: ReferenceDevice, module: ModuleOp, fn: str) -> None:
        self.device = device
        self.module = module
        self.fn = fn
        self.stats = RunStats()

    def run(self, inputs: list[Any], profile: bool = False, to_host: bool = True) -> list[Any]:
        arrays = [a._values(export=False) if isinstance(a, Array) else a for a in inputs]
        outputs = list(reference_run(self.module, self.fn, *arrays))
        # Everything lives on the host at once: inputs and outputs are the peak
        # (intermediates come and go inside numpy and are not planned).
        self.stats = RunStats(peak_bytes=sum(a.nbytes for a in (*arrays, *outputs)))
        if to_host:
            return outputs
        return [Array.from_host(self.device, a) for a in outputs]


class ReferenceDevice(HostMemory, Device):
    """The reference interpreter. `pool_max_bytes` and `memory_limit` bound
    the pool that holds its `accy.Array`s (see `HostMemory.make_pool`)."""

    name = "reference"

    def __init__(self, pool_max_bytes: int | None = None, memory_limit: int | None = None) -> None:
        self.pool = self.make_pool(pool_max_bytes, memory_limit)

    def prepare(self, module: ModuleOp, fn: str, strict: bool = False) -> Program:
        # `strict` forbids host fallbacks in kernel devices; here the host is
        # the whole device, which is the point of it.
        return ReferenceProgram(self, module, fn)
