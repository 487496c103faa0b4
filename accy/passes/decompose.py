"""decompose: rewrites the named compound ops into accy primitives.

`accy.softmax`, `accy.log_softmax`, `accy.layer_norm` and `accy.attention`
become reductions (`accy.reduce` with axes), `accy.broadcast` back to the
operand's shape, and elementwise ops, in the numerically stable forms the
named ops promise:

    softmax(x)     = e / bcast(sum(e)),  e = exp(x - bcast(max(x)))
    log_softmax(x) = d - bcast(log(sum(exp(d)))),  d = x - bcast(max(x))
    layer_norm(x)  = c * bcast(rsqrt(mean(c * c) + eps)) * bcast(gamma) + bcast(beta),
                     c = x - bcast(mean(x))   (over the last dim)
    attention      = softmax(mask(scale * q·kᵀ)) · v

Attention's products are `accy.dot_general`s with the leading dims as batch
dims. The causal mask compares two index literals broadcast to the score
shape, `cmp gt (key index, query index)`, and selects the element type's
lowest finite value there: key 0 is never masked, so every row keeps a finite
maximum and the softmax never divides by zero. Literals are `accy.constant`s:
a scalar (the scale, epsilon, the masked score) is a rank-0 literal
broadcast to the shape it is used at, so a decomposition costs the same at
any size; the causal mask's two index vectors hold one element per index.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
from xdsl.context import Context
from xdsl.dialects.builtin import BytesAttr, DenseIntOrFPElementsAttr, ModuleOp, i32
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
)

from accy.dialects.accy import (
    AddOp,
    AttentionOp,
    BroadcastOp,
    CmpOp,
    ConstantOp,
    DivOp,
    DotGeneralOp,
    ExpOp,
    LayerNormOp,
    LogOp,
    LogSoftmaxOp,
    MulOp,
    ReduceOp,
    RsqrtOp,
    SelectOp,
    SoftmaxOp,
    SubOp,
    elem_of,
    shape_of,
    tensor,
)
from accy.passes.analyses.attention import lowest
from accy.passes.pass_manager import AccyPass, AnalysisManager, PreservedAnalyses

DECOMPOSABLE: dict[str, type[Operation]] = {
    "softmax": SoftmaxOp,
    "log_softmax": LogSoftmaxOp,
    "layer_norm": LayerNormOp,
    "attention": AttentionOp,
}


class _Emitter:
    """Collects the new ops of one decomposition, in order."""

    def __init__(self) -> None:
        self.ops: list[Operation] = []

    def __call__(self, op: Operation) -> SSAValue:
        self.ops.append(op)
        return op.results[0]

    def splat(self, value: float, shape: Sequence[int], element_type: Attribute) -> SSAValue:
        """`value` at every element of `shape`: a rank-0 literal broadcast, so
        it costs one element whatever the shape (xDSL stores a splat literal
        expanded)."""
        scalar = self(ConstantOp(DenseIntOrFPElementsAttr.from_list(tensor([], element_type), [value])))
        return self(BroadcastOp(scalar, [], shape))

    def broadcast_back(self, reduced: SSAValue, shape: Sequence[int], axis: int) -> SSAValue:
        """Broadcasts a value reduced over `axis` back to `shape`."""
        dims = [d for d in range(len(shape)) if d != axis]
        return self(BroadcastOp(reduced, dims, shape))

    def reduce_back(self, x: SSAValue, kind: str, axis: int) -> SSAValue:
        """reduce(x, kind, axis), broadcast back to x's shape."""
        return self.broadcast_back(self(ReduceOp(x, kind, [axis])), shape_of(x), axis)

    def softmax(self, x: SSAValue, axis: int, log: bool = False) -> SSAValue:
        axis %= len(shape_of(x))
        shifted = self(SubOp(x, self.reduce_back(x, "max", axis)))
        e = self(ExpOp(shifted))
        total = self(ReduceOp(e, "sum", [axis]))
        if log:
            return self(SubOp(shifted, self.broadcast_back(self(LogOp(total)), shape_of(x), axis)))
        return self(DivOp(e, self.broadcast_back(total, shape_of(x), axis)))

    def layer_norm(self, x: SSAValue, gamma: SSAValue, beta: SSAValue, epsilon: float) -> SSAValue:
        shape, et = shape_of(x), elem_of(x)
        last = len(shape) - 1
        centred = self(SubOp(x, self.reduce_back(x, "mean", last)))
        var = self(ReduceOp(self(MulOp(centred, centred)), "mean", [last]))
        inv_std = self(RsqrtOp(self(AddOp(var, self.splat(epsilon, shape_of(var), et)))))
        normed = self(MulOp(centred, self.broadcast_back(inv_std, shape, last)))
        scaled = self(MulOp(normed, self(BroadcastOp(gamma, [last], shape))))
        return self(AddOp(scaled, self(BroadcastOp(beta, [last], shape))))

    def attention(self, q: SSAValue, k: SSAValue, v: SSAValue, scale: float, causal: bool) -> SSAValue:
        rank, et = len(shape_of(q)), elem_of(q)
        batch = list(range(rank - 2))
        scores = self(DotGeneralOp(q, k, batch, batch, [rank - 1], [rank - 1]))
        shape = shape_of(scores)
        scores = self(MulOp(scores, self.splat(scale, shape, et)))
        if causal:
            mask = self(CmpOp("gt", self._index(shape, rank - 1), self._index(shape, rank - 2)))
            scores = self(SelectOp(mask, self.splat(lowest(et), shape, et), scores))
        probs = self.softmax(scores, rank - 1)
        return self(DotGeneralOp(probs, v, batch, batch, [rank - 1], [rank - 2]))

    def _index(self, shape: Sequence[int], dim: int) -> SSAValue:
        """The index along `dim` at every element of `shape` (an i32 iota)."""
        # Packed by numpy: one C loop over the dim, no Python int per element.
        data = np.arange(shape[dim], dtype="<i4").tobytes()
        iota = DenseIntOrFPElementsAttr(tensor([shape[dim]], i32), BytesAttr(data))
        return self(BroadcastOp(self(ConstantOp(iota)), [dim], shape))


def decompose(op: Operation) -> tuple[list[Operation], SSAValue] | None:
    """The primitive ops replacing a named op and the value replacing its
    result, or None if `op` has no decomposition."""
    emit = _Emitter()
    if isinstance(op, SoftmaxOp | LogSoftmaxOp):
        out = emit.softmax(op.x, op.axis.value.data, log=isinstance(op, LogSoftmaxOp))
    elif isinstance(op, LayerNormOp):
        out = emit.layer_norm(op.x, op.gamma, op.beta, op.epsilon.value.data)
    elif isinstance(op, AttentionOp):
        out = emit.attention(op.q, op.k, op.v, op.scale.value.data, op.causal.value.data)
    else:
        return None
    return emit.ops, out


@dataclass
class DecomposeNamedOps(RewritePattern):
    """Replaces each named op of `kinds` by its primitive form."""

    kinds: tuple[type[Operation], ...]

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /) -> None:
        if not isinstance(op, self.kinds):
            return
        replacement = decompose(op)
        if replacement is not None:
            ops, out = replacement
            rewriter.replace(op, ops, [out])


@dataclass(frozen=True)
class DecomposePass(AccyPass):
    """Rewrites accy.softmax, accy.log_softmax, accy.layer_norm and
    accy.attention into reductions, broadcasts, elementwise ops and
    dot_generals (numerically stable forms). Option `ops` limits it to the
    listed ones (softmax, log_softmax, layer_norm, attention)."""

    name: ClassVar[str] = "decompose"
    version: ClassVar[int] = 2

    ops: tuple[str, ...] = ()
    """The ops to decompose, of softmax, log_softmax, layer_norm, attention (empty: all of them)."""

    def __post_init__(self) -> None:
        unknown = [o for o in self.ops if o not in DECOMPOSABLE]
        if unknown:
            raise ValueError(f"decompose: unknown op(s) {', '.join(unknown)} (known: {', '.join(DECOMPOSABLE)})")

    def run(self, ctx: Context, module: ModuleOp, am: AnalysisManager) -> PreservedAnalyses:
        kinds = tuple(DECOMPOSABLE[o] for o in (self.ops or DECOMPOSABLE))
        # No DCE here: removing dead ops is canonicalize's and dce's job.
        applier = GreedyRewritePatternApplier([DecomposeNamedOps(kinds)], dce_enabled=False)
        changed = PatternRewriteWalker(applier, apply_recursively=False).rewrite_module(module)
        return PreservedAnalyses.none() if changed else PreservedAnalyses.all()
