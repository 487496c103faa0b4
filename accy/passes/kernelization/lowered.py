"""What a lowering produces: a `LoweredKernel` (a kernel function and how to
launch it, possibly after a first stage over `Scratch` buffers), or a
`Decline` saying why it cannot lower a work item (the work item then runs
on the host reference path, with that reason as the remark).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from xdsl.dialects import gpu
from xdsl.ir import Attribute, SSAValue

from accy.passes.analyses.bufferization import Buffer


class Decline(Exception):
    """A lowering cannot (or may not, under the math tier) lower a kernel; the
    message is the reason the remark shows."""


@dataclass(eq=False)
class Scratch:
    """A buffer of `size` elements of `element_type` that a lowering keeps
    between the launches of one work item (a split reduction's partial
    results): the host schedule allocates it before them and frees it after."""

    element_type: Attribute
    size: int


@dataclass
class LoweredKernel:
    """A kernel function plus how to launch it: `grid` work-groups of `block`
    work-items per dimension, over `buffers` (the kernel's arguments, in
    order; `values` holds a value stored in each, or the `Scratch` buffer
    the argument is). `before` runs first (a first stage over the same
    scratch buffers). An `existing` kernel is already in the module (the
    callee of an `accy.kernel_call`): it is launched as it is, not tidied
    or added again."""

    func: gpu.FuncOp
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    buffers: list[Buffer]
    values: list[SSAValue | Scratch] = field(default_factory=list)
    before: LoweredKernel | None = None
    existing: bool = False
