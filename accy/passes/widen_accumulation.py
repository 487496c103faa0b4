"""widen-accumulation: float16 and bfloat16 dots, sums, products, means,
scans of them, convolutions, sum and average pools and attention accumulate in float32 (bfloat16 keeps 8 bits of
mantissa: it needs this even more than float16).

A float16 accumulator loses about one bit per doubling of the terms it
adds (a sum of 1000 standard normals is off by ~1% in f16, by 0.05% summed
in f32 and rounded once), so accy's reference accumulates them in float32,
as numpy's sum and matmul and torch do (docs/op-contract.md). This pass
makes the kernels do the same: each such op reads its float16 operands
through an `accy.cast` to f32, runs in f32, and its result is cast back to
f16. The casts fuse into the op's kernel (loads widened, the store
narrowed), so no f32 tensor reaches memory. A named attention holds two
dots (q·kᵀ over D, the weights·v over Sk) and a softmax's row sum, so it is
widened whole: q, k and v are cast, the attention runs in f32 (its flash
kernel then keeps the scores, the row sum and the accumulator in f32) and
only the result is narrowed, as the reference computes it (its matmuls of
f16 operands accumulate in f32). A conv and a sum or average pool are
widened too: the reference accumulates them in f32, and the kernels
`kernelize` makes of them after this pass (a conv's register tiles, a
pool's adds of taps) accumulate in the type they are given.
Max, min, max pools, softmax and layer norm are left as they are.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from xdsl.context import Context
from xdsl.dialects.builtin import Float32Type, ModuleOp, TensorType
from xdsl.ir import Operation
from xdsl.rewriter import InsertPoint, Rewriter

from accy.dialects.accy import AttentionOp, CastOp, ConvOp, DotGeneralOp, PoolOp, ReduceOp, ScanOp
from accy.dialects.types import is_half
from accy.passes.pass_manager import AccyPass, AnalysisManager, PreservedAnalyses

#: Reduction and scan kinds that add or multiply (and so accumulate rounding).
ACCUMULATING_KINDS = frozenset({"sum", "prod", "mean"})
#: Pool kinds that add.
POOL_ACCUMULATING_KINDS = frozenset({"sum", "average"})


def accumulates_in_f16(op: Operation) -> bool:
    """Whether `op` is a dot, an attention, a conv, or a sum, product, mean
    or scan of them (a sum or average pool), with a float16 or bfloat16 result."""
    if not isinstance(op, DotGeneralOp | AttentionOp | ConvOp | PoolOp | ReduceOp | ScanOp):
        return False
    if isinstance(op, ReduceOp | ScanOp) and op.kind.data not in ACCUMULATING_KINDS:
        return False
    if isinstance(op, PoolOp) and op.kind.data not in POOL_ACCUMULATING_KINDS:
        return False
    t = op.results[0].type
    return isinstance(t, TensorType) and is_half(t.element_type)


def widen(op: Operation) -> None:
    """Rewrites `op` as cast(op'(cast(x, f32)...), f16 or bf16)."""
    f32 = Float32Type()
    wide_operands = []
    for x in op.operands:
        cast = CastOp(x, f32)
        Rewriter.insert_op(cast, InsertPoint.before(op))
        wide_operands.append(cast.result)
    result_type = op.results[0].type
    assert isinstance(result_type, TensorType)
    wide = type(op).create(
        operands=wide_operands,
        result_types=[TensorType(f32, result_type.get_shape())],
        properties=dict(op.properties),
        attributes=dict(op.attributes),
    )
    narrow = CastOp(wide.results[0], result_type.element_type)
    Rewriter.replace_op(op, [wide, narrow], [narrow.result])


@dataclass(frozen=True)
class WidenAccumulationPass(AccyPass):
    """Float16 and bfloat16 `accy.dot_general`s, `accy.attention`s and
    `accy.conv`s, `accy.reduce`s and `accy.scan`s of kind sum, prod or mean,
    and `accy.pool`s of kind sum or average, run in float32 between casts,
    so that their kernels accumulate in float32 as the reference does."""

    name: ClassVar[str] = "widen-accumulation"
    version: ClassVar[int] = 4  # 4: conv, sum and average pools

    def run(self, ctx: Context, module: ModuleOp, am: AnalysisManager) -> PreservedAnalyses:
        ops = [op for op in module.walk() if accumulates_in_f16(op)]
        for op in ops:
            widen(op)
        return PreservedAnalyses.all() if not ops else PreservedAnalyses.none()
