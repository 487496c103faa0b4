"""canonicalize: local simplifications of accy tensor programs.

A greedy pattern rewrite (xDSL's `PatternRewriteWalker` over a
`GreedyRewritePatternApplier`), as MLIR's `-canonicalize`: it folds constants,
drops identities, composes chains of shape ops, and erases pure ops whose
results are unused. The identities and compositions are each op's own
patterns (its `HasCanonicalizationPatternsTrait`, written in
`accy/dialects/canonicalization.py`), found on the op by xDSL's
`CanonicalizationRewritePattern`, which runs the stock patterns and folders
of the other dialects (func, arith, ...) in the same walk; constant folding
is this pass's own pattern.

Every rewrite here keeps the program's values bit-for-bit, except two that
follow IEEE semantics as MLIR's folders do not bother to: `x + 0 -> x` turns a
result of `+0.0` for `x = -0.0` into `-0.0`, and constant folding evaluates in
numpy (the reference), whose transcendental functions may differ from a
backend's by an ulp.

Constant folding is the one place where a pass imports something other than
the dialects (docs/architecture.md, "Layering"): it calls the reference
interpreter's `evaluate_op`, so that an op has one semantics, the
reference's, whether it is folded at compile time or run. A second,
folding-only implementation of every op could drift from it;
tests/unit/test_layering.py allows exactly this import.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import ClassVar

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
)
from xdsl.transforms.canonicalize import CanonicalizationRewritePattern
from xdsl.transforms.dead_code_elimination import region_dce

from accy.dialects.accy import ELEMENTWISE_OPS, VIEW_OPS, ConcatOp, ConstantOp, GatherOp
from accy.dialects.canonicalization import constant_of
from accy.dialects.types import elem_of, numel, shape_of
from accy.passes.pass_manager import AccyPass, AnalysisManager, PreservedAnalyses
from accy.reference import dense_to_numpy, evaluate_op, numpy_to_dense

# Constant folding materialises its result as a literal; past this many
# elements the literal would bloat the IR more than the op it replaces.
MAX_FOLDED_ELEMENTS = 1 << 16


# --------------------------------------------------------------------------
# Constant folding (the per-op patterns are on the ops:
# accy/dialects/canonicalization.py)
# --------------------------------------------------------------------------


class FoldConstants(RewritePattern):
    """op(constant, ...) -> constant, for elementwise and view ops (and
    concat and gather) whose operands are all literals, evaluated by the reference
    interpreter; skipped for results over `MAX_FOLDED_ELEMENTS` elements."""

    FOLDABLE = (*ELEMENTWISE_OPS, *VIEW_OPS, ConcatOp, GatherOp)

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /) -> None:
        if not isinstance(op, self.FOLDABLE) or len(op.results) != 1:
            return
        literals = [constant_of(v) for v in op.operands]
        if any(lit is None for lit in literals):
            return
        result_type = op.results[0].type
        if numel(shape_of(result_type)) > MAX_FOLDED_ELEMENTS:
            return
        try:
            # The reference defines every result (x/0, overflow, NaN): folding
            # computes exactly what running the op would.
            (out,) = evaluate_op(op, [dense_to_numpy(lit) for lit in literals])
        except ValueError:
            return  # no reference semantics: leave the op to run time
        rewriter.replace(op, ConstantOp(numpy_to_dense(out, elem_of(result_type))))


#: The patterns of the pass itself; every op's own patterns (its
#: `HasCanonicalizationPatternsTrait`) run through `CanonicalizationRewritePattern`.
ACCY_PATTERNS: tuple[Callable[[], RewritePattern], ...] = (FoldConstants,)


def canonicalize_module(module: ModuleOp, ctx: Context) -> bool:
    """Runs the canonicalization patterns to a fixed point, folding to
    constants of `ctx`'s dialects; True if the IR changed."""
    applier = GreedyRewritePatternApplier(
        [*(p() for p in ACCY_PATTERNS), CanonicalizationRewritePattern()],
        ctx=ctx,
        folding_enabled=True,
        # Erases pure ops with no uses before matching (the dead-code part).
        dce_enabled=True,
    )
    return PatternRewriteWalker(applier, post_walk_func=region_dce).rewrite_module(module)


@dataclass(frozen=True)
class CanonicalizePass(AccyPass):
    """Folds constants, drops identities (x+0, x*1, neg(neg x), no-op casts,
    reshapes, transposes, broadcasts and slices), composes transpose and
    reshape chains, folds selects on literal conditions, and erases unused
    pure ops; also runs xDSL's canonicalization of func/arith."""

    name: ClassVar[str] = "canonicalize"
    version: ClassVar[int] = 1

    def run(self, ctx: Context, module: ModuleOp, am: AnalysisManager) -> PreservedAnalyses:
        return PreservedAnalyses.none() if canonicalize_module(module, ctx) else PreservedAnalyses.all()
