"""The canonicalization patterns of the accy ops, as MLIR's per-op
`getCanonicalizationPatterns`.

Each op lists its patterns through a `HasCanonicalizationPatternsTrait` (in
`accy/dialects/accy.py`), so xDSL's `CanonicalizationRewritePattern` (what
the `canonicalize` pass runs) finds them on the op. Every pattern keeps the
program's values bit-for-bit, except `x + 0 -> x`, which turns a result of
`+0.0` for `x = -0.0` into `-0.0` (as MLIR's folders do). Constant folding is
not here: it evaluates ops through the reference interpreter, which only a
pass may import (`accy/passes/canonicalize.py`).
"""

from __future__ import annotations

from xdsl.dialects.builtin import DenseIntOrFPElementsAttr
from xdsl.ir import Operation, SSAValue
from xdsl.pattern_rewriter import PatternRewriter, RewritePattern, op_type_rewrite_pattern

from accy.dialects.accy import (
    AddOp,
    BroadcastOp,
    CastOp,
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
)
from accy.dialects.dense import splat_value
from accy.dialects.types import shape_of


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


def _forward(rewriter: PatternRewriter, op: Operation, value: SSAValue) -> None:
    """Replaces `op`'s single result by an existing value and erases `op`."""
    rewriter.replace(op, [], [value])


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
