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

`accy.conv` and `accy.pool` (no kind of kernel takes a pool: `kernelize`
decomposes it first; a conv is lowered directly, kernelization/conv.py)
become the padded input (one `accy.pad`, mode
constant), one strided slice of it per tap of the window, and then

    conv    = dot_general(weight [G, M/G, T, C/G] broadcast over N,
                          taps stacked [N, T, G, C/G, y...])
              (im2col as slices, batched over N and the groups): [N, G, M/G, y...],
              reshaped to [N, M, y...] (one group: no group dim, [N, M, y...])
    pool    = max or sum of the taps (max pads with -inf or the integer
              type's lowest); average divides by each window's count of
              input elements (a literal over the spatial dims) or, with
              count_include_pad, by the window's size
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
from xdsl.context import Context
from xdsl.dialects.builtin import BytesAttr, DenseIntOrFPElementsAttr, IntegerType, ModuleOp, i32
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
    ConcatOp,
    ConstantOp,
    ConvOp,
    DivOp,
    DotGeneralOp,
    ExpOp,
    LayerNormOp,
    LogOp,
    LogSoftmaxOp,
    MaxOp,
    MulOp,
    PadOp,
    PoolOp,
    ReduceOp,
    ReshapeOp,
    RsqrtOp,
    SelectOp,
    SliceOp,
    SoftmaxOp,
    SubOp,
    TransposeOp,
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
    "conv": ConvOp,
    "pool": PoolOp,
}

#: The ops no kind of kernel takes: kernelize decomposes them first (a
#: conv is a kind of its own, lowered as an implicit product).
DECOMPOSED_BY_KERNELIZE: tuple[type[Operation], ...] = (PoolOp,)


def lowest_value(element_type: Attribute) -> float:
    """The value a max pool pads with: -inf, or an integer type's lowest."""
    if isinstance(element_type, IntegerType):
        return -(1 << (element_type.width.data - 1))
    return -math.inf


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

    # -- windows: accy.conv and accy.pool ----------------------------------

    def pad_spatial(self, x: SSAValue, low: Sequence[int], high: Sequence[int], value: float) -> SSAValue:
        """x [N, C, spatial...] with `value` before/after each spatial dim: one
        `accy.pad` in mode constant (an elementwise-kind op, so it fuses into
        whatever reads it), or x itself when nothing is padded."""
        if not any(low) and not any(high):
            return x
        et = elem_of(x)
        fill = self(ConstantOp(DenseIntOrFPElementsAttr.from_list(
            tensor([], et), [int(value) if isinstance(et, IntegerType) else value]
        )))
        return self(PadOp(x, fill, [0, 0, *low], [0, 0, *high]))

    def taps(
        self, xp: SSAValue, window: Sequence[int], strides: Sequence[int], dilations: Sequence[int], out: Sequence[int]
    ) -> list[SSAValue]:
        """For each tap of the window (row-major), the strided slice of the
        padded xp [N, C, spatial...] it reads at every output position."""
        shape = shape_of(xp)
        found = []
        for tap in itertools.product(*(range(k) for k in window)):
            start = [0, 0, *(t * d for t, d in zip(tap, dilations, strict=True))]
            limit = [*shape[:2], *(t * d + (o - 1) * s + 1 for t, d, o, s in zip(tap, dilations, out, strides, strict=True))]
            found.append(self(SliceOp(xp, start, limit, [1, 1, *strides])))
        return found

    def conv(self, op: ConvOp) -> SSAValue:
        """im2col as slices: the taps' slices of the padded input stacked
        [N, T, G, C/G, y...] and contracted with the weights [G, M/G, T, C/G]
        (broadcast over N) in one dot_general batched over N and the groups,
        whose result [N, G, M/G, y...] is the conv's [N, M, y...] by a
        reshape (no transpose); with one group, no group dim at all."""
        g = op.geometry()
        N, C, *_ = shape_of(op.input)
        M, Cg, *kernel = shape_of(op.weight)
        out = shape_of(op.result)[2:]
        sp, G = len(kernel), op.groups.value.data
        xp = self.pad_spatial(op.input, g["pads_low"], g["pads_high"], 0.0)
        slices = self.taps(xp, kernel, g["strides"], g["dilations"], out)
        T = len(slices)
        columns = [self(ReshapeOp(t, (N, 1, C, *out))) for t in slices]
        stacked = columns[0] if T == 1 else self(ConcatOp(columns, 1))  # [N, T, C, y...]
        wt = self(TransposeOp(op.weight, (0, *range(2, 2 + sp), 1)))  # [M, k..., C/G]
        if G == 1:  # no group dim: the dot's result is the conv's, with no reshape to copy it
            wb = self(BroadcastOp(self(ReshapeOp(wt, (M, T, C))), (1, 2, 3), (N, M, T, C)))
            return self(DotGeneralOp(wb, stacked, (0,), (0,), (2, 3), (1, 2)))
        cols = self(ReshapeOp(stacked, (N, T, G, Cg, *out)))
        wb = self(BroadcastOp(self(ReshapeOp(wt, (G, M // G, T, Cg))), (1, 2, 3, 4), (N, G, M // G, T, Cg)))
        r = self(DotGeneralOp(wb, cols, (0, 1), (0, 2), (3, 4), (1, 3)))  # [N, G, M/G, y...]
        return self(ReshapeOp(r, (N, M, *out)))

    def pool(self, op: PoolOp) -> SSAValue:
        """The taps' slices of the padded input combined elementwise (max or
        add), an average divided by each window's count (a literal over the
        spatial dims, broadcast over N and C)."""
        g = op.geometry()
        x, kind = op.x, op.kind.data
        shape, et = shape_of(x), elem_of(x)
        out = shape_of(op.result)
        window = op.window.get_values()
        fill = lowest_value(et) if kind == "max" else 0.0
        taps = self.taps(self.pad_spatial(x, g["pads_low"], g["pads_high"], fill), window, g["strides"], g["dilations"], out[2:])
        combine = MaxOp if kind == "max" else AddOp
        acc = taps[0]
        for t in taps[1:]:
            acc = self(combine(acc, t))
        if kind != "average":
            return acc
        if op.count_include_pad.value:
            return self(DivOp(acc, self.splat(float(len(taps)), out, et)))
        inside = np.pad(np.ones(shape[2:]), list(zip(g["pads_low"], g["pads_high"], strict=True)))
        count = np.zeros(out[2:])
        for tap in itertools.product(*(range(k) for k in window)):
            index = tuple(
                slice(t * d, t * d + (o - 1) * s + 1, s)
                for t, d, o, s in zip(tap, g["dilations"], out[2:], g["strides"], strict=True)
            )
            count += inside[index]
        literal = self(ConstantOp(DenseIntOrFPElementsAttr.from_list(tensor(out[2:], et), count.ravel().tolist())))
        return self(DivOp(acc, self(BroadcastOp(literal, list(range(2, len(out))), out))))

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
    elif isinstance(op, ConvOp):
        out = emit.conv(op)
    elif isinstance(op, PoolOp):
        out = emit.pool(op)
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
    """Rewrites accy.softmax, accy.log_softmax, accy.layer_norm,
    accy.attention, accy.conv and accy.pool into reductions, broadcasts,
    slices, elementwise ops and dot_generals (numerically stable forms).
    Option `ops` limits it to the listed ones (softmax, log_softmax,
    layer_norm, attention, conv, pool)."""

    name: ClassVar[str] = "decompose"
    version: ClassVar[int] = 4  # 3: conv and pool; 4: their pads are accy.pad

    ops: tuple[str, ...] = ()
    """The ops to decompose, of softmax, log_softmax, layer_norm, attention, conv, pool (empty: all of them)."""

    def __post_init__(self) -> None:
        unknown = [o for o in self.ops if o not in DECOMPOSABLE]
        if unknown:
            raise ValueError(f"decompose: unknown op(s) {', '.join(unknown)} (known: {', '.join(DECOMPOSABLE)})")

    def run(self, ctx: Context, module: ModuleOp, am: AnalysisManager) -> PreservedAnalyses:
        kinds = tuple(DECOMPOSABLE[o] for o in (self.ops or DECOMPOSABLE))
        return PreservedAnalyses.none() if decompose_ops(module, kinds) else PreservedAnalyses.all()


def decompose_ops(module: ModuleOp, kinds: tuple[type[Operation], ...]) -> bool:
    """Replaces every op of `kinds` in `module` by its primitive form; whether
    anything changed."""
    # No DCE here: removing dead ops is canonicalize's and dce's job.
    applier = GreedyRewritePatternApplier([DecomposeNamedOps(kinds)], dce_enabled=False)
    return PatternRewriteWalker(applier, apply_recursively=False).rewrite_module(module)
