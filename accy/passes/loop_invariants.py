"""loop-invariant-code-motion: work of an `accy.iterate` body that does not
depend on the carried values moves out of the loop.

MLIR's `loop-invariant-code-motion` for accy's one loop. An op of an
iterate's body is invariant when every value it reads (its operands and what
its regions read from outside) is defined outside the iterate, or by an op
already hoisted; it then moves, in body order, to just before the iterate,
so it runs once instead of `count` times. Only ops free of effects move
(`accy.kernel_call` stays: it runs for its effects on every trip).
Innermost iterates go first, so work invariant in two nested loops leaves
both. Moving a pure op out of a loop that runs zero times computes a value
nobody reads: results are the same.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.traits import is_side_effect_free

from accy.dialects.accy import IterateOp, YieldOp
from accy.passes.analyses import defined_inside, external_operands
from accy.passes.pass_manager import AccyPass, AnalysisManager, PreservedAnalyses


def hoist_invariants(loop: IterateOp) -> int:
    """Moves the invariant ops of `loop`'s body before it; how many moved."""
    moved = 0
    for op in list(loop.body.block.ops):
        if isinstance(op, YieldOp) or not is_side_effect_free(op):
            continue
        reads = external_operands(op)
        if any(defined_inside(v, loop) for v in reads):
            continue
        op.detach()
        parent = loop.parent_block()
        assert parent is not None
        parent.insert_op_before(op, loop)
        moved += 1
    return moved


@dataclass(frozen=True)
class LoopInvariantCodeMotionPass(AccyPass):
    """Moves the ops of `accy.iterate` bodies that read no carried value (nor
    any value computed from one) out of the loop, innermost loops first, so
    that they run once per call instead of once per trip."""

    name: ClassVar[str] = "loop-invariant-code-motion"
    version: ClassVar[int] = 1

    def run(self, ctx: Context, module: ModuleOp, am: AnalysisManager) -> PreservedAnalyses:
        # A post-order walk: an inner loop is done before the loop around it.
        loops = [op for op in module.walk(region_first=True) if isinstance(op, IterateOp)]
        moved = sum(hoist_invariants(loop) for loop in loops)
        return PreservedAnalyses.all() if moved == 0 else PreservedAnalyses.none()
