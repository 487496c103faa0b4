"""The analyses that decide what becomes a kernel and where every byte lives.

    shape-layout ─► schedule ─► outlining ─► bufferization

Each is an `Analysis` of a `func.func`, computed through the analysis manager
(`am.get(Schedule, func_op)`), so results are cached and dropped when a pass
changes the IR. This module holds what they share: stable printed names for
SSA values, and walks over a function's body.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from xdsl.dialects import func
from xdsl.ir import Operation, SSAValue


class ValueNames:
    """Stable printed names of the values of one function: `%hint` where the
    value has a name hint (`%hint_1`, `%hint_2` for repeats, as xDSL prints),
    else `%N` numbered in definition order."""

    def __init__(self, fn: Operation) -> None:
        self._names: dict[SSAValue, str] = {}
        used: dict[str, int] = {}
        counter = 0
        for v in defined_values(fn):
            hint = v.name_hint
            if hint is None:
                self._names[v] = f"%{counter}"
                counter += 1
                continue
            n = used.get(hint, 0)
            used[hint] = n + 1
            self._names[v] = f"%{hint}" if n == 0 else f"%{hint}_{n}"

    def __getitem__(self, v: SSAValue) -> str:
        return self._names.get(v, "%?")

    def join(self, values: Iterable[SSAValue]) -> str:
        return ", ".join(self[v] for v in values)


def defined_values(fn: Operation) -> Iterable[SSAValue]:
    for region in fn.regions:
        for block in region.blocks:
            yield from block.args
            for op in block.ops:
                yield from op.results
                yield from defined_values(op)


def func_name(fn: Operation) -> str:
    return fn.sym_name.data if isinstance(fn, func.FuncOp) else fn.name


def body_ops(fn: Operation) -> list[Operation]:
    """The top-level ops of a function's body, in program order."""
    if isinstance(fn, func.FuncOp):
        return list(fn.body.block.ops) if fn.body.blocks else []
    raise ValueError(f"the analyses run on func.func ops, not '{fn.name}'")


def returned_values(fn: Operation) -> set[SSAValue]:
    """The values the function's `func.return` returns."""
    return {v for op in body_ops(fn) if isinstance(op, func.ReturnOp) for v in op.operands}


def external_operands(op: Operation) -> list[SSAValue]:
    """Operands of `op` and values its regions read from outside it, in
    first-use order."""
    seen: dict[SSAValue, None] = dict.fromkeys(op.operands)
    for inner in op.walk():
        for v in inner.operands:
            if not defined_inside(v, op):
                seen.setdefault(v)
    return list(seen)


def defined_inside(v: SSAValue, ancestor: Operation) -> bool:
    """Whether `v` is a result or block argument of `ancestor` or of an op nested in it."""
    op = v.owner if isinstance(v.owner, Operation) else v.owner.parent_op()
    while op is not None:
        if op is ancestor:
            return True
        op = op.parent_op()
    return False


def type_str(shape: Sequence[int], element_type: object) -> str:
    """`64x128xf32` (`f32` for rank 0), as in a tensor type."""
    return "".join(f"{d}x" for d in shape) + str(element_type)
