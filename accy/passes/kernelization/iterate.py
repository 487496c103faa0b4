"""iterate: an `accy.iterate` work item as two tensor functions.

An iterate is no kernel but a loop of kernels: the kernelize pass lowers its
body like any function and launches it `count` times from the host schedule
(kernelize.py, `scf.for`). This module cuts the work item into the two
functions the pass lowers:

- the prologue `@<item>_init(bases...) -> (inits...)`: the loop's initial
  values as whole tensors. An init that is a view or a literal is computed
  here (a copy kernel, a filled buffer); one that is already a whole buffer
  is returned as it is;
- the body `@<item>_body(carried..., bases...) -> (yielded...)`: one trip.

Both take the bases of what they read from outside: values whose whole
buffer holds them (see `Source`). Views of a base and literals are cloned in
front of their readers, so that inside the body a transposed weight stays
index math and a splat stays a literal, as they would be at the top level.
Loop-invariant work has left the body before (loop_invariants.py).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from xdsl.dialects import func
from xdsl.ir import Block, Operation, Region, SSAValue

from accy.dialects.accy import IterateOp, YieldOp
from accy.passes.analyses import defined_inside

#: Where a value read from outside comes from: its base (None for a literal)
#: and the ops that lead from the base to it (views; first the constant of a literal).
Source = Callable[[SSAValue], tuple[SSAValue | None, list[Operation]]]


@dataclass
class IterateFunctions:
    loop: IterateOp
    bases: list[SSAValue]
    """Outer values, in the functions' argument order (after the body's carried values)."""
    prologue: func.FuncOp
    body: func.FuncOp

    @property
    def count(self) -> int:
        return self.loop.count.value.data


def iterate_functions(loop: IterateOp, name: str, source: Source) -> IterateFunctions:
    """The prologue and body of `loop` (module docstring), named after the work item `name`."""
    captured = _captured(loop)
    bases: list[SSAValue] = []
    for v in [*loop.inits, *captured]:
        base, _ = source(v)
        if base is not None and base not in bases:
            bases.append(base)

    entry, mapping = _entry([], bases, list(loop.inits), source)
    prologue = _function(f"{name}_init", entry, [mapping[v] for v in loop.inits])

    block = loop.body.block
    entry, mapping = _entry(list(block.args), bases, captured, source)
    for op in block.ops:
        if isinstance(op, YieldOp):
            body = _function(f"{name}_body", entry, [mapping[v] for v in op.values])
            break
        clone = op.clone(value_mapper=mapping)
        mapping.update(zip(op.results, clone.results, strict=True))
        entry.add_op(clone)
    return IterateFunctions(loop, bases, prologue, body)


def _captured(loop: IterateOp) -> list[SSAValue]:
    """Values the body reads from outside the loop, in first-use order."""
    seen: dict[SSAValue, None] = {}
    for op in loop.body.walk():
        for v in op.operands:
            if not defined_inside(v, loop):
                seen.setdefault(v)
    return list(seen)


def _entry(
    carried: list[SSAValue], bases: list[SSAValue], reads: list[SSAValue], source: Source
) -> tuple[Block, dict[SSAValue, SSAValue]]:
    """The entry block of a function of (carried..., bases...) that rebuilds
    `reads` from the bases (their views and literals cloned), and the map
    from outer values to the block's."""
    values = [*carried, *bases]
    block = Block(arg_types=[v.type for v in values])
    for arg, v in zip(block.args, values, strict=True):
        arg.name_hint = v.name_hint
    mapping: dict[SSAValue, SSAValue] = dict(zip(values, block.args, strict=True))
    for v in reads:
        for op in source(v)[1]:
            if op.results[0] not in mapping:
                clone = op.clone(value_mapper=mapping)
                mapping.update(zip(op.results, clone.results, strict=True))
                block.add_op(clone)
    return block, mapping


def _function(name: str, block: Block, results: list[SSAValue]) -> func.FuncOp:
    block.add_op(func.ReturnOp(*results))
    return func.FuncOp(name, ([a.type for a in block.args], [v.type for v in results]), Region(block))
