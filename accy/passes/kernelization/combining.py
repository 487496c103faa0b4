"""Combining values in kernels, for the lowerings that reduce or scan.

- `combine` and `identity`: the binary operation of a reduction or scan kind
  (`sum`, `mean`, `prod`, `max`, `min`) on scalars or lane-wise on vectors,
  and its neutral element (max/min propagate NaN, as the reference does);
- `combine_all` and `identities`: the same on a reduction's accumulator as a
  list of values, which for `argmax`/`argmin` is the pair (value, position):
  the greater (lesser) value wins, a NaN beats a number, and on a tie the
  smaller position, so any order of combining gives the first extreme;
- `vector_total`: the lanes of one vector combined (`vector.reduction`);
- `vector_prefix`, `shifted_lanes`, `last_lane`, `reversed_lanes`: the
  inclusive scan of one vector's lanes (log2 W shuffles), lanes moved up
  (the exclusive scan), the last lane in every lane (a scan's carry), the
  lanes reversed;
- `work_group_tree` / `work_group_total` / `work_group_combine`: the shares
  of the work-items of a work-group combined by a tree in local memory, with
  barriers (`work_group_size` picks the work-group, `pow2_at_most` the
  power of two);
- `work_group_scan`: the prefixes of the shares of the work-items of a
  segment of a work-group, by Hillis-Steele steps in local memory
  (`scan_scratch_size` sizes its local array);
- `place`: full coordinates from the reduced and the kept dims'.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from xdsl.dialects import arith, memref, vector
from xdsl.dialects.builtin import DenseArrayBase, IntegerType, VectorType, i64
from xdsl.ir import Attribute, Operation, SSAValue

from accy.dialects import accy
from accy.dialects.target import TargetProfile
from accy.passes.kernelization.kernel_builder import KernelBuilder, cmp, element_type_of

_COMBINE: dict[str, tuple[type[Operation], type[Operation]]] = {
    "sum": (arith.AddfOp, arith.AddiOp),
    "mean": (arith.AddfOp, arith.AddiOp),
    "prod": (arith.MulfOp, arith.MuliOp),
    "max": (arith.MaximumfOp, arith.MaxSIOp),
    "min": (arith.MinimumfOp, arith.MinSIOp),
}


def combine(kb: KernelBuilder, kind: str, a: SSAValue, b: SSAValue) -> SSAValue:
    """a (+ * max min) b for reduction/scan `kind` (max/min propagate NaN, as numpy)."""
    f, i = _COMBINE[kind]
    return kb.val((f if accy.is_float(element_type_of(a.type)) else i)(a, b))


def identity(kind: str, t: Attribute) -> float | int:
    """The neutral element of `kind` for element type `t`."""
    et = element_type_of(t)
    if kind in ("sum", "mean"):
        return 0
    if kind == "prod":
        return 1
    if accy.is_float(et):
        return -math.inf if kind == "max" else math.inf
    bits = et.width.data
    return -(2 ** (bits - 1)) if kind == "max" else 2 ** (bits - 1) - 1


def identities(kind: str, t: Attribute, index_type: Attribute | None = None) -> list[float | int]:
    """The neutral accumulator of `kind` for element type `t` (`combine_all`):
    for `argmax`/`argmin` the identity of max/min at the last position that
    `index_type` holds, which every element beats or ties at a smaller one."""
    if kind not in accy.ARG_KINDS:
        return [identity(kind, t)]
    assert isinstance(index_type, IntegerType)
    return [identity(kind[3:], t), 2 ** (index_type.width.data - 1) - 1]


def combine_all(kb: KernelBuilder, kind: str, a: Sequence[SSAValue], b: Sequence[SSAValue]) -> list[SSAValue]:
    """Accumulators `a` and `b` combined (`combine` of their one value, or
    for `argmax`/`argmin` the winning (value, position) pair: see the
    module docstring)."""
    if kind not in accy.ARG_KINDS:
        return [combine(kb, kind, a[0], b[0])]
    (va, ia), (vb, ib) = a, b
    integer = not accy.is_float(element_type_of(va.type))
    beats = cmp(kb, "gt" if kind == "argmax" else "lt", vb, va, integer)
    ties = cmp(kb, "eq", vb, va, integer)
    if not integer:
        # x != x is true for NaN only, x == x for numbers only.
        nan_a, nan_b, number_a = cmp(kb, "ne", va, va, False), cmp(kb, "ne", vb, vb, False), cmp(kb, "eq", va, va, False)
        beats = kb.val(arith.OrIOp(beats, kb.val(arith.AndIOp(nan_b, number_a))))
        ties = kb.val(arith.OrIOp(ties, kb.val(arith.AndIOp(nan_a, nan_b))))
    earlier = kb.val(arith.CmpiOp(ib, ia, "slt"))
    take_b = kb.val(arith.OrIOp(beats, kb.val(arith.AndIOp(ties, earlier))))
    return [kb.select(take_b, vb, va), kb.select(take_b, ib, ia)]


def vector_total(kb: KernelBuilder, kind: str, v: SSAValue) -> SSAValue:
    """Combines the lanes of vector `v` (vector.reduction)."""
    et = element_type_of(v.type)
    name = {"sum": "add", "mean": "add", "prod": "mul", "max": "maximumf", "min": "minimumf"}[kind]
    op = vector.ReductionOp.create(
        operands=[v],
        result_types=[et],
        properties={"kind": vector.CombiningKindAttr(vector.CombiningKindFlag(name)),
                    "fastmath": arith.FastMathFlagsAttr("none")},
    )
    return kb.val(op)


def _shuffle(kb: KernelBuilder, a: SSAValue, b: SSAValue, lanes: Sequence[int]) -> SSAValue:
    """Lanes of a (0..W-1) and b (W..2W-1) picked by `lanes`."""
    assert isinstance(a.type, VectorType)
    return kb.val(vector.ShuffleOp(a, b, DenseArrayBase.from_list(i64, list(lanes)), result_type=a.type))


def vector_prefix(kb: KernelBuilder, kind: str, v: SSAValue) -> SSAValue:
    """The inclusive scan of `v`'s lanes by `kind` (Hillis-Steele: lane i
    combines lane i-k for k = 1, 2, 4, ...)."""
    assert isinstance(v.type, VectorType)
    k = 1
    while k < v.type.get_shape()[0]:
        v = combine(kb, kind, v, shifted_lanes(kb, kind, v, k))
        k *= 2
    return v


def shifted_lanes(kb: KernelBuilder, kind: str, v: SSAValue, k: int) -> SSAValue:
    """`v`'s lanes moved up by k, the identity of `kind` shifted in (of an
    inclusive scan, k = 1 gives the exclusive one)."""
    assert isinstance(v.type, VectorType)
    w = v.type.get_shape()[0]
    ident = kb.const(identity(kind, v.type), v.type)
    return _shuffle(kb, v, ident, [w + i if i < k else i - k for i in range(w)])


def last_lane(kb: KernelBuilder, v: SSAValue) -> SSAValue:
    """`v`'s last lane in every lane."""
    assert isinstance(v.type, VectorType)
    w = v.type.get_shape()[0]
    return _shuffle(kb, v, v, [w - 1] * w)


def reversed_lanes(kb: KernelBuilder, v: SSAValue) -> SSAValue:
    """`v`'s lanes in reverse order."""
    assert isinstance(v.type, VectorType)
    w = v.type.get_shape()[0]
    return _shuffle(kb, v, v, list(reversed(range(w))))


def pow2_at_most(n: int) -> int:
    """The largest power of two at most n (1 for n < 2)."""
    return 1 << (n.bit_length() - 1) if n > 1 else 1


def work_group_size(n: int, cap: int, profile: TargetProfile) -> int:
    """The largest power of two work-items at most `cap`, the device's
    work-group limit and `n` (the work to share; at least 1)."""
    return pow2_at_most(min(cap, profile.max_work_group_size, max(n, 1)))


def work_group_tree(
    kb: KernelBuilder, kind: str, share: SSAValue | Sequence[SSAValue], scratch: SSAValue | Sequence[SSAValue],
    tid: SSAValue, size: int, segment: int | None = None,
) -> None:
    """Combines the `size` shares of a work-group (`share` of work-item `tid`;
    `size` a power of two) by a tree in the local array `scratch`: after the
    last barrier its element 0 holds the total (`work_group_total`), for
    every work-item to read. With `segment` (a power of two dividing
    `size`), each run of `segment` work-items is combined apart: element
    `s·segment` holds the total of run s. A share of several values (an
    `argmax` accumulator, `combine_all`) takes one local array per value."""
    shares = [share] if isinstance(share, SSAValue) else list(share)
    arrays = [scratch] if isinstance(scratch, SSAValue) else list(scratch)
    for v, array in zip(shares, arrays, strict=True):
        kb.op(memref.StoreOp.get(v, array, [tid]))
    kb.barrier()
    span = size if segment is None else segment
    # Work-item tid is lane `lane` of the run starting at `base` (written so
    # that the bounds verifier sees base + lane + half < size under lane < half).
    base, lane = (None, tid) if span == size else (segment_start(kb, tid, span), kb.rem(tid, span))
    half = span // 2
    while half >= 1:

        def fold(half: int = half) -> list[SSAValue]:
            at = lane if base is None else kb.add(base, lane)
            a = [kb.val(memref.LoadOp.get(array, [at])) for array in arrays]
            there = kb.add(at, half)
            b = [kb.val(memref.LoadOp.get(array, [there])) for array in arrays]
            for v, array in zip(combine_all(kb, kind, a, b), arrays, strict=True):
                kb.op(memref.StoreOp.get(v, array, [at]))
            return []

        kb.if_(kb.lt(lane, half), fold)
        kb.barrier()
        half //= 2


def segment_start(kb: KernelBuilder, tid: SSAValue, segment: int) -> SSAValue:
    """The first work-item of tid's run of `segment` work-items."""
    return kb.mul(kb.div(tid, segment), segment)


def work_group_total(kb: KernelBuilder, scratch: SSAValue) -> SSAValue:
    """The total `work_group_tree` left in `scratch`."""
    return kb.val(memref.LoadOp.get(scratch, [kb.idx(0)]))


def work_group_combine(
    kb: KernelBuilder, kind: str, share: SSAValue, scratch: SSAValue, tid: SSAValue, size: int
) -> SSAValue:
    """Combines the shares of a work-group (`work_group_tree`) and gives
    every work-item the total. `scratch` keeps the total afterwards: reusing
    it needs a barrier first."""
    work_group_tree(kb, kind, share, scratch, tid, size)
    return work_group_total(kb, scratch)


def _scan_steps(size: int) -> int:
    return size.bit_length() - 1


def scan_scratch_size(size: int, series: int, group: int) -> int:
    """Elements of the local array `work_group_scan` needs for `series`
    values per work-item over segments of `size` work-items in a work-group
    of `group` (0 when a segment is one work-item: nothing to share)."""
    steps = _scan_steps(size)
    if steps == 0:
        return 0
    return (2 if steps % 2 else 3) * series * group


def work_group_scan(
    kb: KernelBuilder, kind: str, shares: Sequence[SSAValue], scratch: SSAValue | None,
    lid: SSAValue, first: SSAValue, pos: SSAValue, size: int, stride: int, group: int,
) -> tuple[list[SSAValue], list[SSAValue]]:
    """Scans across a segment of a work-group: `size` work-items (a power of
    two) at positions `pos` 0..size-1, `stride` local ids apart from the
    segment's `first` local id (lid = first + pos·stride, given apart so
    that every local-memory index is first plus a non-negative offset, which
    the bounds verifier proves), each
    holding one share of every series in `shares`. Returns, per series, the
    shares of the positions before `pos` combined (the identity at 0) and
    the segment's total. Every work-item of the work-group (`group` of them,
    local id `lid`) must call it, all with the same segment shape.

    Hillis-Steele: log2(size) steps, step k combining the value 2^k
    positions back, one barrier per step. Steps write alternating regions of
    `scratch` (`scan_scratch_size` elements) and the first write goes to a
    region the last step does not, so a second call may follow at once: a
    work-item still reading the last region of one call is not overwritten
    before every work-item passed the first barrier of the next."""
    steps = _scan_steps(size)
    et = shares[0].type
    if steps == 0:
        return [kb.const(identity(kind, et), et) for _ in shares], list(shares)
    assert scratch is not None
    count = len(shares)

    def slot(region: int, j: int, at: SSAValue) -> SSAValue:
        return kb.add(at, (region * count + j) * group)

    def store_all(region: int, values: Sequence[SSAValue]) -> None:
        for j, v in enumerate(values):
            kb.op(memref.StoreOp.get(v, scratch, [slot(region, j, lid)]))
        kb.barrier()

    def load(region: int, j: int, at: SSAValue) -> SSAValue:
        return kb.val(memref.LoadOp.get(scratch, [slot(region, j, at)]))

    region = 0 if steps % 2 else 2
    values = list(shares)
    store_all(region, values)
    for k in range(steps):
        back, prev, region = 1 << k, region, (k + 1) % 2

        def fold(back: int = back, prev: int = prev, values: list[SSAValue] = values) -> list[SSAValue]:
            at = kb.add(first, kb.mul(kb.sub(pos, back), stride))
            return [combine(kb, kind, load(prev, j, at), v) for j, v in enumerate(values)]

        values = kb.if_(kb.lt(back - 1, pos), fold, lambda values=values: values, [et] * count)
        store_all(region, values)
    last = kb.add(first, (size - 1) * stride)
    totals = [load(region, j, last) for j in range(count)]
    before = kb.if_(
        kb.lt(0, pos),
        lambda: [load(region, j, kb.add(first, kb.mul(kb.sub(pos, 1), stride))) for j in range(count)],
        lambda: [kb.const(identity(kind, et), et) for _ in range(count)],
        [et] * count,
    )
    return before, totals


def place(rank: int, axes: Sequence[int], reduced: Sequence[SSAValue], kept: Sequence[SSAValue]) -> list[SSAValue]:
    """Full coordinates from the reduced dims' and the kept dims' coordinates."""
    out: list[SSAValue] = []
    ri, ki = iter(reduced), iter(kept)
    for d in range(rank):
        out.append(next(ri) if d in axes else next(ki))
    return out
