"""compute-half-in-f32: f16 and bf16 ops compute in f32 where the target has
no native arithmetic for them; their tensors stay 16 bits in memory.

bf16 always (no accy backend computes in it), f16 when the target says
`fp16 = false` (an OpenCL device without cl_khr_fp16, such as NVIDIA's):
each op that computes on such a type (arithmetic, math, compares,
reductions, scans, dots, softmax, layer norm, attention, conv, pool, iota)
reads its 16-bit operands through an `accy.cast` to f32 and its 16-bit
results are cast back. The casts fuse into the op's kernel, so a kernel
loads 16 bits, widens them exactly, computes in f32 and rounds to nearest
even once per op result on the way back (the reference's semantics: one
rounding per op, docs/op-contract.md). A chain of ops keeps those
roundings (cast-back then cast-again is not folded): the answer is the
reference's, not a more precise one.

Ops that only move elements (reshape, transpose, broadcast, slice, concat,
gather, select, constants) are left alone: their kernels load and store the
16 bits as they are. A cast to or from a 16-bit type goes through f32 (f16
and bf16 widen to f32 exactly; a cast to bf16 rounds from f32, as the
reference does), except f64 -> f16, which the backends round directly.
After this pass, the only ops on a 16-bit type the target cannot compute
in are storage ops and casts with f32 (or f64 -> f16) on the other side:
kernelization declines any other (a visible host fallback, never a wrong
kernel).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from xdsl.context import Context
from xdsl.dialects.builtin import BFloat16Type, Float16Type, Float32Type, Float64Type, ModuleOp, TensorType
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.rewriter import InsertPoint, Rewriter

from accy.dialects import accy as A
from accy.dialects.target import TargetProfile
from accy.passes.pass_manager import AccyPass, AnalysisManager, PreservedAnalyses

#: Ops that move elements without computing on them.
STORAGE_OPS: tuple[type[Operation], ...] = (
    A.ConstantOp, A.ReshapeOp, A.TransposeOp, A.BroadcastOp, A.SliceOp, A.ConcatOp, A.GatherOp, A.SelectOp,
)  # fmt: skip
#: Ops this pass never rewrites: regions and calls keep their own types.
_OPAQUE: tuple[type[Operation], ...] = (A.IterateOp, A.YieldOp, A.KernelCallOp)


def narrow_types(profile: TargetProfile) -> tuple[type[Attribute], ...]:
    """The 16-bit float types `profile` cannot compute in: bf16 always, f16
    when `fp16` is false."""
    return (BFloat16Type,) if profile.fp16 else (BFloat16Type, Float16Type)


def _elem(v: SSAValue | Attribute) -> Attribute | None:
    t = v.type if isinstance(v, SSAValue) else v
    return t.element_type if isinstance(t, TensorType) else None


def _with_elem(t: Attribute, e: Attribute) -> TensorType:
    assert isinstance(t, TensorType)
    return TensorType(e, t.get_shape())


def _cast_before(x: SSAValue, e: Attribute, op: Operation) -> SSAValue:
    cast = A.CastOp(x, e)
    Rewriter.insert_op(cast, InsertPoint.before(op))
    return cast.result


def _rewrite_cast(op: A.CastOp, narrow: tuple[type[Attribute], ...]) -> bool:
    src, dst = _elem(op.operands[0]), _elem(op.results[0])
    f32 = Float32Type()
    if isinstance(src, narrow) and not isinstance(dst, Float32Type):
        # widen exactly, then convert from f32
        wide = _cast_before(op.operands[0], f32, op)
        Rewriter.replace_op(op, A.CastOp(wide, dst))
        return True
    direct = isinstance(src, Float32Type) or (isinstance(dst, Float16Type) and isinstance(src, Float64Type))
    if isinstance(dst, narrow) and not direct:
        wide = _cast_before(op.operands[0], f32, op)
        Rewriter.replace_op(op, A.CastOp(wide, dst))
        return True
    return False


def _rewrite(op: Operation, narrow: tuple[type[Attribute], ...]) -> bool:
    """`op` as casts to f32 / `op` in f32 / casts back; False when nothing of it is narrow."""
    if not any(isinstance(_elem(v), narrow) for v in (*op.operands, *op.results)):
        return False
    f32 = Float32Type()
    operands = [_cast_before(x, f32, op) if isinstance(_elem(x), narrow) else x for x in op.operands]
    result_types = [_with_elem(r.type, f32) if isinstance(_elem(r), narrow) else r.type for r in op.results]
    wide = type(op).create(
        operands=operands, result_types=result_types, properties=dict(op.properties), attributes=dict(op.attributes)
    )
    Rewriter.insert_op(wide, InsertPoint.before(op))
    new_results: list[SSAValue] = []
    for old, new in zip(op.results, wide.results, strict=True):
        if new.type == old.type:
            new_results.append(new)
            continue
        narrow_cast = A.CastOp(new, _elem(old))
        Rewriter.insert_op(narrow_cast, InsertPoint.before(op))
        new_results.append(narrow_cast.result)
    Rewriter.replace_op(op, [], new_results)
    return True


@dataclass(frozen=True)
class ComputeHalfInF32Pass(AccyPass):
    """Rewrites every op that computes on bf16, or on f16 where the target
    has `fp16 = false`, as casts to f32, the op in f32, and casts back."""

    name: ClassVar[str] = "compute-half-in-f32"
    version: ClassVar[int] = 1

    def run(self, ctx: Context, module: ModuleOp, am: AnalysisManager) -> PreservedAnalyses:
        return PreservedAnalyses.none() if run_on(module) else PreservedAnalyses.all()


def run_on(module: ModuleOp) -> bool:
    """Applies the rewrite to `module` for its own target; whether it changed."""
    narrow = narrow_types(TargetProfile.of_module(module))
    changed = False
    for op in list(module.walk()):
        if op.parent is None or isinstance(op, STORAGE_OPS + _OPAQUE) or not op.name.startswith("accy."):
            continue
        if isinstance(op.parent_op(), A.IterateOp):
            continue
        if isinstance(op, A.CastOp):
            changed |= _rewrite_cast(op, narrow)
        else:
            changed |= _rewrite(op, narrow)
    return changed
