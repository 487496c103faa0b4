"""The `reference` device: runs functions with the numpy reference
interpreter (`accy.reference.run`). It compiles nothing and launches no
kernels; it is the oracle other devices are checked against, and the device
that works everywhere."""

from __future__ import annotations

import numpy as np
from xdsl.dialects.builtin import ModuleOp

from accy.reference.interpreter import run as reference_run
from accy.runtime.device import Device, Program, RunStats


class ReferenceProgram(Program):
    """Function `fn` of `module`, interpreted on each call."""

    def __init__(self, module: ModuleOp, fn: str) -> None:
        self.module = module
        self.fn = fn
        self.stats = RunStats()

    def run(self, inputs: list[np.ndarray], profile: bool = False) -> list[np.ndarray]:
        outputs = list(reference_run(self.module, self.fn, *inputs))
        # Everything lives on the host at once: inputs and outputs are the peak
        # (intermediates come and go inside numpy and are not planned).
        self.stats = RunStats(peak_bytes=sum(a.nbytes for a in (*inputs, *outputs)))
        return outputs


class ReferenceDevice(Device):
    name = "reference"

    def prepare(self, module: ModuleOp, fn: str, strict: bool = False) -> Program:
        # `strict` forbids host fallbacks in kernel devices; here the host is
        # the whole device, which is the point of it.
        return ReferenceProgram(module, fn)
