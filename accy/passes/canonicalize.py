"""canonicalize: local simplifications of accy tensor programs.

A greedy pattern rewrite (xDSL's `PatternRewriteWalker` over a
`GreedyRewritePatternApplier`), as MLIR's `-canonicalize`: it folds constants,
drops identities, composes chains of shape ops, and erases pure ops whose
results are unused. The stock xDSL canonicalization patterns and folders of the
other dialects (func, arith, ...) run in the same walk.

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

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import ClassVar

from xdsl.context import Context
from xdsl.dialects.builtin import DenseIntOrFPElementsAttr, ModuleOp
from xdsl.ir import Operation, SSAValue
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)
from xdsl.transforms.canonicalize import CanonicalizationRewritePattern
from xdsl.transforms.dead_code_elimination import region_dce

from accy.dialects.accy import (
    ELEMENTWISE_OPS,
    VIEW_OPS,
    AddOp,
    BroadcastOp,
    CastOp,
    ConcatOp,
    ConstantOp,
    DivOp,
    IterateOp,
    MulOp,
    NegOp,
    ReshapeOp,
    SelectOp,
    SliceOp,
    SubOp,
    TransposeOp,
    elem_of,
    shape_of,
)
from accy.dialects.dense import splat_value
from accy.passes.pass_manager import AccyPass, AnalysisManager, PreservedAnalyses
from accy.reference import dense_to_numpy, evaluate_op, numpy_to_dense

# Constant folding materialises its result as a literal; past this many
# elements the literal would bloat the IR more than the op it replaces.
MAX_FOLDED_ELEMENTS = 1 << 16


# --------------------------------------------------------------------------
# Constant helpers
# --------------------------------------------------------------------------


def constant_of(value: SSAValue) -> DenseIntOrFPElementsAttr | None:
    """The literal behind `value` if it is the result of an `accy.constant`."""
    owner = value.owner
    return owner.value if isinstance(owner, ConstantOp) else None


def is_splat_of(value: SSAValue, scalar: float) -> bool:
    """Whether `value` is an `accy.constant` whose every element equals
    `scalar`, or a broadcast of one (how accy writes a literal of any size)."""
    while isinstance(value.owner, BroadcastOp):
        value = value.owner.x
    attr = constant_of(value)
    return attr is not None and splat_value(attr) == scalar


# --------------------------------------------------------------------------
# Patterns
# --------------------------------------------------------------------------


def _forward(rewriter: PatternRewriter, op: Operation, value: SSAValue) -> None:
    """Replaces `op`'s single result by an existing value and erases `op`."""
    rewriter.replace(op, [], [value])


class FoldConstants(RewritePattern):
    """op(constant, ...) -> constant, for elementwise and view ops (and
    concat) whose operands are all literals, evaluated by the reference
    interpreter; skipped for results over `MAX_FOLDED_ELEMENTS` elements."""

    FOLDABLE = (*ELEMENTWISE_OPS, *VIEW_OPS, ConcatOp)

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /) -> None:
        if not isinstance(op, self.FOLDABLE) or len(op.results) != 1:
            return
        literals = [constant_of(v) for v in op.operands]
        if any(lit is None for lit in literals):
            return
        result_type = op.results[0].type
        if math.prod(shape_of(result_type)) > MAX_FOLDED_ELEMENTS:
            return
        try:
            # The reference defines every result (x/0, overflow, NaN): folding
            # computes exactly what running the op would.
            (out,) = evaluate_op(op, [dense_to_numpy(lit) for lit in literals])
        except ValueError:
            return  # no reference semantics: leave the op to run time
        rewriter.replace(op, ConstantOp(numpy_to_dense(out, elem_of(result_type))))


# Binary identities: (op class, operand index of the neutral literal, value).
_NEUTRAL: tuple[tuple[type[Operation], int, float], ...] = (
    (AddOp, 1, 0),
    (AddOp, 0, 0),
    (SubOp, 1, 0),
    (MulOp, 1, 1),
    (MulOp, 0, 1),
    (DivOp, 1, 1),
)


class DropNeutralOperand(RewritePattern):
    """x + 0, 0 + x, x - 0, x * 1, 1 * x, x / 1 -> x (splat literals)."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /) -> None:
        for cls, index, neutral in _NEUTRAL:
            if isinstance(op, cls) and is_splat_of(op.operands[index], neutral):
                _forward(rewriter, op, op.operands[1 - index])
                return


class ComposeTransposes(RewritePattern):
    """transpose(transpose(x, p), q) -> transpose(x, p∘q); an identity
    permutation is dropped."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: TransposeOp, rewriter: PatternRewriter, /) -> None:
        perm = op.permutation.get_values()
        if list(perm) == list(range(len(perm))):
            _forward(rewriter, op, op.x)
            return
        inner = op.x.owner
        if isinstance(inner, TransposeOp):
            inner_perm = inner.permutation.get_values()
            rewriter.replace(op, TransposeOp(inner.x, [inner_perm[p] for p in perm]))


class ComposeReshapes(RewritePattern):
    """reshape(reshape(x)) -> reshape(x); a reshape to the operand's own shape
    is dropped."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: ReshapeOp, rewriter: PatternRewriter, /) -> None:
        if op.x.type == op.result.type:
            _forward(rewriter, op, op.x)
            return
        inner = op.x.owner
        if isinstance(inner, ReshapeOp):
            rewriter.replace(op, ReshapeOp(inner.x, shape_of(op.result)))


class DropIdentityBroadcast(RewritePattern):
    """broadcast(x) with dims 0..r-1 onto x's own shape -> x."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: BroadcastOp, rewriter: PatternRewriter, /) -> None:
        dims = op.dims.get_values()
        if op.x.type == op.result.type and list(dims) == list(range(len(dims))):
            _forward(rewriter, op, op.x)


class DoubleNegation(RewritePattern):
    """neg(neg(x)) -> x."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: NegOp, rewriter: PatternRewriter, /) -> None:
        inner = op.x.owner
        if isinstance(inner, NegOp):
            _forward(rewriter, op, inner.x)


class FoldSelect(RewritePattern):
    """select(splat true, a, b) -> a; select(splat false, a, b) -> b;
    select(c, a, a) -> a."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: SelectOp, rewriter: PatternRewriter, /) -> None:
        if op.lhs == op.rhs:
            _forward(rewriter, op, op.lhs)
            return
        attr = constant_of(op.cond)
        cond = splat_value(attr) if attr is not None else None
        if cond is not None:
            # i1 literals unpack as 0 / 1, or -1 for a signless true.
            _forward(rewriter, op, op.lhs if cond != 0 else op.rhs)


class DropSameTypeSliceOrCast(RewritePattern):
    """slice(x) or cast(x) of x's own type -> x. A cast to the operand's type
    converts nothing; a slice whose result has the operand's shape covers the
    whole tensor (a verified slice keeps n elements of a dim of n only with
    start 0 and stride 1, or when n <= 1)."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /) -> None:
        if isinstance(op, SliceOp | CastOp) and op.x.type == op.result.type:
            _forward(rewriter, op, op.x)


class FoldZeroTripIterate(RewritePattern):
    """accy.iterate with count 0 -> its inits."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: IterateOp, rewriter: PatternRewriter, /) -> None:
        if op.count.value.data == 0:
            rewriter.replace(op, [], list(op.inits))


ACCY_PATTERNS: tuple[Callable[[], RewritePattern], ...] = (
    FoldConstants,
    DropNeutralOperand,
    ComposeTransposes,
    ComposeReshapes,
    DropIdentityBroadcast,
    DropSameTypeSliceOrCast,
    DoubleNegation,
    FoldSelect,
    FoldZeroTripIterate,
)


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
