"""What a device is to the runtime: something that prepares a function of a
module into a `Program`, which runs numpy arrays to numpy arrays.

`accy.compile` checks the caller's arrays against the function's signature
before a `Program` sees them, so programs may assume shapes and dtypes match.
Devices are looked up by name (`reference`, `opencl`, `opencl:N`) in
`accy.runtime.devices.get_device`.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field

import numpy as np
from xdsl.dialects.builtin import ModuleOp


@dataclass
class LaunchProfile:
    """One kernel launch as `--profile` shows it."""

    name: str
    kind: str
    global_size: tuple[int, ...]
    local_size: tuple[int, ...] | None
    seconds: float


@dataclass
class RunStats:
    """Figures of the last call: kernel launches, the plan's peak device bytes
    (inputs and outputs included), and work items run on the host reference
    path instead of a kernel."""

    kernels: int = 0
    peak_bytes: int = 0
    fallbacks: int = 0
    profile: list[LaunchProfile] = field(default_factory=list)


class Program(ABC):
    """A compiled function, ready to run."""

    stats: RunStats

    @abstractmethod
    def run(self, inputs: list[np.ndarray], profile: bool = False) -> list[np.ndarray]:
        """Runs on arrays already checked against the signature."""


class Device(ABC):
    """Where programs run; `name` is the one `get_device` knows it by."""

    name: str

    @abstractmethod
    def prepare(self, module: ModuleOp, fn: str, strict: bool = False) -> Program:
        """Compiles function `fn` of `module` (which it may transform)."""
