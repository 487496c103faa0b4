"""outlining: the kernel each work item becomes.

For each work item of the schedule, in schedule order, an `OutlinedKernel`:
its kind and ops (from the item), the values it reads from outside and the
values it must store, and a stable name `{func}_k{index}_{kind}`.

- inputs: function arguments, constants (`accy.constant` results) and other
  kernels' outputs, in the order the kernel's ops first read them. Views are
  never inputs: they are ops inside the kernel, reading their base.
- outputs: values computed inside that are returned or read by a kernel that
  does not compute them itself (a recomputed value is never an output, nor
  is a view the kernel only reads through: `WorkItem.read_through`).

Invariants (checked; a violation is a scheduling bug, reported as an
internal error naming the kernel): every kernel has an output, except a
kernel_call (run for its effects); every returned value that an op computes
is the output of exactly one kernel.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import ClassVar

from xdsl.ir import Operation, SSAValue

from accy.passes.analyses import ValueNames, external_operands, func_name, returned_values
from accy.passes.analyses.names import safe_symbol
from accy.passes.analyses.schedule import RowFacts, Schedule
from accy.passes.pass_manager import Analysis, AnalysisManager


@dataclass
class OutlinedKernel:
    name: str
    """Stable: f"{func_name}_k{index}_{kind}", made an identifier of bounded
    length by `safe_symbol` (names.py) when it is not one."""
    kind: str
    ops: list[Operation]
    inputs: list[SSAValue]
    """Values from outside, in first-use order."""
    outputs: list[SSAValue]
    """Values used after the kernel or returned."""
    anchor: Operation | None = None
    facts: RowFacts | None = None
    """The work item's pattern facts (see `WorkItem.facts`)."""


class Outlining(Analysis):
    """One kernel per work item: kind, ops, inputs, outputs, stable name."""

    name: ClassVar[str] = "outlining"
    version: ClassVar[int] = 1

    def __init__(self, op: Operation, am: AnalysisManager) -> None:
        super().__init__(op, am)
        schedule = am.get(Schedule, op)
        fname = func_name(op)
        returned = returned_values(op)
        members = [set(item.ops) for item in schedule.items]
        # Which kernels read a value that they do not compute themselves.
        read_from_outside: dict[SSAValue, list[int]] = {}
        inputs: list[list[SSAValue]] = []
        for k, item in enumerate(schedule.items):
            ins: dict[SSAValue, None] = {}
            for inner in item.ops:
                for v in external_operands(inner):
                    owner = v.owner
                    if isinstance(owner, Operation) and owner in members[k]:
                        continue
                    ins.setdefault(v)
            inputs.append(list(ins))
            for v in ins:
                read_from_outside.setdefault(v, []).append(k)
        self.kernels: list[OutlinedKernel] = []
        stored: set[SSAValue] = set()
        for k, item in enumerate(schedule.items):
            outs = []
            for inner in item.ops:
                if inner in item.read_through:
                    continue
                for r in inner.results:
                    if r in stored:
                        continue  # computed by an earlier kernel too (recomputed)
                    if r in returned or any(j != k for j in read_from_outside.get(r, ())):
                        outs.append(r)
                        stored.add(r)
            self.kernels.append(
                OutlinedKernel(
                    safe_symbol(f"{fname}_k{k}_{item.kind}"), item.kind, list(item.ops), inputs[k], outs, item.anchor, item.facts
                )
            )
        _check(op, self.kernels, returned)

    def print(self) -> str:
        names = ValueNames(self.op)
        lines = [f"outlining @{func_name(self.op)}: {len(self.kernels)} kernels"]
        for kern in self.kernels:
            lines.append(f"  kernel {kern.name}: ins({names.join(kern.inputs)}) outs({names.join(kern.outputs)})")
            lines.append(f"    ops: {', '.join(o.name for o in kern.ops)}")
        return "\n".join(lines) + "\n"

    def statistics(self) -> dict[str, int | float]:
        return {"kernels": len(self.kernels)}


class OutliningError(ValueError):
    """The schedule's items break an outlining invariant: a compiler bug,
    never one of the user's program."""


def _check(fn: Operation, kernels: list[OutlinedKernel], returned: Iterable[SSAValue]) -> None:
    """The invariants of the module docstring."""
    producers: dict[SSAValue, list[str]] = {}
    for kern in kernels:
        if not kern.outputs and kern.kind != "kernel_call":
            ops = ", ".join(op.name for op in kern.ops)
            raise OutliningError(f"outlining: kernel {kern.name} ({ops}) stores no value (a scheduling bug)")
        for v in kern.outputs:
            producers.setdefault(v, []).append(kern.name)
    computed = {r for kern in kernels for op in kern.ops for r in op.results}
    for v in returned:
        if v in computed and len(producers.get(v, ())) != 1:
            makers = ", ".join(producers.get(v, ())) or "no kernel"
            raise OutliningError(f"outlining: returned value {ValueNames(fn)[v]} is stored by {makers}, not by exactly one kernel")
