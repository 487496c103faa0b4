"""The attention matcher: softmax(S(q·kᵀ)) · v between two dot_generals.

One matcher, two callers. The schedule calls it before fusing a row
pipeline with the dots around it into one flash-attention item, and stores
the `AttentionMatch` in the item's facts; what does not match stays the
kernels it would otherwise be (a row pipeline and two dots), never a
flash-attention item that its lowering then declines. The flash-attention
lowering calls it once more on the primitive form of a named
`accy.attention` (whose decomposition exists only while it lowers).

What matches, between `qk` [*B, Sq, Sk] and `pv` (probs · v, contracting
Sk): probs is a named `accy.softmax` along the last dim, or
exp(s - max s) / sum(exp(s - max s)) written with primitives (max and sum
along the last dim, each brought back onto the scores along the rows: the
`dims`, not the sizes, are checked, through `reads`); the score s is any
elementwise work on q·kᵀ read at its own (query, key); a causal mask
written as the decompose pass writes it, select(iota_k > iota_q, lowest,
s), is recognised so that the lowering skips masked keys.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from xdsl.dialects.builtin import Float16Type, Float64Type
from xdsl.ir import Attribute, Operation, SSAValue

from accy.dialects import accy
from accy.dialects.dense import splat_value, storage_format
from accy.passes.analyses.reads import COL, on_own_row, reads_of, row_coords

#: A masked score at or below this is a mask (the decompose pass writes the
#: lowest float), or at the lowest finite value of a type that cannot hold
#: it (float16's -65504).
MASKED = -1e30


@dataclass(frozen=True)
class AttentionMatch:
    """What the flash-attention lowering needs of a matched attention."""

    qk: accy.DotGeneralOp
    pv: accy.DotGeneralOp
    score: SSAValue
    """The score, unmasked: computed per (query, key) from q·kᵀ."""
    causal: bool
    """Keys past the query are masked (and skipped)."""


class NoMatch(Exception):
    """Why the work between two dots is not an attention's softmax."""


def match_attention(
    ops: Sequence[Operation], qk: accy.DotGeneralOp, pv: accy.DotGeneralOp,
    aliases: dict[SSAValue, SSAValue] | None = None,
) -> AttentionMatch:
    """Matches softmax(S(q·kᵀ)) · v in `ops` (the module docstring);
    `aliases` maps named results to their decomposition where named ops
    were expanded. Raises `NoMatch` with the reason otherwise."""
    return _Matcher(ops, qk, aliases or {}).match(pv)


class _Matcher:
    def __init__(self, ops: Sequence[Operation], qk: accy.DotGeneralOp, aliases: dict[SSAValue, SSAValue]) -> None:
        self.producer = {r: op for op in ops for r in op.results}
        self.aliases, self.qk = aliases, qk
        *rows, _ = accy.shape_of(qk.result)
        self.rows = tuple(rows)
        self.full = (*row_coords(len(self.rows)), COL)

    def resolved(self, v: SSAValue) -> SSAValue:
        """`v`, or the value of its decomposition if an expanded named op computes it."""
        while v in self.aliases:
            v = self.aliases[v]
        return v

    def op(self, v: SSAValue, cls: type, what: str) -> Operation:
        op = self.producer.get(self.resolved(v))
        if not isinstance(op, cls):
            raise NoMatch(f"the work between the two dots is not a softmax (no {what})")
        return op

    def match(self, pv: accy.DotGeneralOp) -> AttentionMatch:
        if not accy.is_float(accy.elem_of(self.qk.result)):
            raise NoMatch(f"attention over {accy.elem_of(self.qk.result)} is not a float attention")
        score = self.softmax_score(pv.lhs)
        # Every score is q·kᵀ at its own (query, key): the lowering hands the
        # dot it computed for that pair to the score's elementwise work.
        if any(c != self.full for c in self.reads([score], {self.qk.result}).get(self.qk.result, ())):
            raise NoMatch("the scores read q·kᵀ at other coordinates than their own (through a view)")
        causal, score = self.causal_mask(score)
        return AttentionMatch(self.qk, pv, score, causal)

    def reads(self, roots: list[SSAValue], stop: set[SSAValue]) -> dict[SSAValue, set[tuple[tuple[str, int], ...]]]:
        return reads_of([(r, self.full) for r in roots], self.producer, self.aliases, stop)

    def softmax_score(self, probs: SSAValue) -> SSAValue:
        """The score s of probs = softmax(s) along the last dim."""
        last = (len(accy.shape_of(probs)) - 1,)
        named = probs.owner
        if isinstance(named, accy.SoftmaxOp) and named.axis.value.data % len(accy.shape_of(probs)) == last[0]:
            return named.x
        div = self.op(probs, accy.DivOp, "division by the row sum")
        total = self.op(_under_views(div.rhs), accy.ReduceOp, "row sum")
        exp = self.op(div.lhs, accy.ExpOp, "exp")
        sub = self.op(exp.x, accy.SubOp, "subtracted row max")
        peak = self.op(_under_views(sub.rhs), accy.ReduceOp, "row max")
        same = self.resolved
        if (
            total.kind.data != "sum"
            or same(total.x) is not same(div.lhs)
            or peak.kind.data != "max"
            or same(peak.x) is not same(sub.lhs)
            or total.norm_axes() != last
            or peak.norm_axes() != last
        ):
            raise NoMatch("the work between the two dots is not a softmax (exp(s - max s) / sum)")
        # The online softmax stands for the row max and sum: each must come
        # back onto the scores along the rows, not along another dim of the
        # same size.
        reads = self.reads([probs], {peak.result, total.result})
        if any(not on_own_row(c, self.rows) for red in (peak, total) for c in reads.get(red.result, ())):
            raise NoMatch("the softmax's row max or sum comes back onto the scores along another dim than the key")
        return sub.lhs

    def causal_mask(self, score: SSAValue) -> tuple[bool, SSAValue]:
        """(True, unmasked score) for select(iota_k > iota_q, lowest, s)."""
        sel = self.producer.get(self.resolved(score))
        if not isinstance(sel, accy.SelectOp):
            return False, score
        rank = len(accy.shape_of(score))
        cond = self.producer.get(sel.cond) or sel.cond.owner
        if not (
            isinstance(cond, accy.CmpOp)
            and cond.predicate.data == "gt"
            and _iota_along(cond.lhs, rank - 1)
            and _iota_along(cond.rhs, rank - 2)
            and _splat_at_most(sel.lhs, max(MASKED, lowest(accy.elem_of(score))))
        ):
            return False, score
        return True, sel.rhs


def _under_views(v: SSAValue) -> SSAValue:
    """The value under a chain of broadcasts and reshapes (where they map
    coordinates is checked separately, by `reads`)."""
    while isinstance(v.owner, accy.BroadcastOp | accy.ReshapeOp):
        v = v.owner.operands[0]
    return v


def _iota_along(v: SSAValue, dim: int) -> bool:
    """`v` is a broadcast along `dim` of the constant 0, 1, 2, ..."""
    op = v.owner
    if not isinstance(op, accy.BroadcastOp) or tuple(op.dims.get_values()) != (dim,):
        return False
    const = op.x.owner
    if not isinstance(const, accy.ConstantOp):
        return False
    values = np.frombuffer(const.value.data.data, dtype=np.dtype(storage_format(const.value)))  # bytes, no list
    # A splat is stored as one element (accy.dialects.dense): dense<0> of 8 elements is no iota.
    return values.size == math.prod(const.value.get_shape()) and bool(np.array_equal(values, np.arange(values.size)))


def lowest(element_type: Attribute) -> float:
    """The lowest finite value of a float element type (float32's for
    another): the masked score the decompose pass writes."""
    if isinstance(element_type, Float16Type):
        return float(np.finfo(np.float16).min)
    if isinstance(element_type, Float64Type):
        return float(np.finfo(np.float64).min)
    return float(np.finfo(np.float32).min)


def _splat_at_most(v: SSAValue, bound: float) -> bool:
    """`v` is a splat constant <= bound."""
    op = v.owner
    if isinstance(op, accy.BroadcastOp):
        op = op.x.owner
    if not isinstance(op, accy.ConstantOp):
        return False
    value = splat_value(op.value)
    return value is not None and float(value) <= bound
