"""shape-layout: the shape, element type, size and memory layout of every value.

Every value of a function gets a `ValueInfo`. Its `Layout` says how its
elements would sit in memory if it were read from a buffer:

- a function argument, a block argument, a constant and the result of any op
  that computes (elementwise, dot, reduce, ...) owns contiguous row-major
  storage (`base` is the value itself);
- the result of a view op is a strided view of its operand's base, so that a
  shape op costs no copy where a view will do:
  - `accy.transpose` permutes the strides;
  - `accy.slice` moves the offset and multiplies the strides;
  - `accy.broadcast` gives stride 0 to new dims and to dims of size 1 that grow;
  - `accy.reshape` keeps the base when the operand's strides allow it (always
    for a row-major operand; otherwise as numpy's no-copy reshape decides);
    when they do not, the reshape is a copy and owns contiguous storage.

The layout is what a kernel boundary would see: whether a value is really
stored, and where, is the bufferization's decision (see `BufferPlan`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

from xdsl.dialects.builtin import TensorType
from xdsl.ir import Attribute, Operation, SSAValue

from accy.dialects.accy import BroadcastOp, ReshapeOp, SliceOp, TransposeOp
from accy.dialects.types import elem_of, element_bytes, is_row_major, numel, row_major_strides, shape_of
from accy.passes.analyses import ValueNames, defined_values, func_name, type_str
from accy.passes.pass_manager import Analysis, AnalysisManager


@dataclass(frozen=True)
class Layout:
    """How a value's elements sit in memory: element (i0, i1, ...) lives at
    `offset + sum(ik * strides[k])` elements into `base`'s storage."""

    base: SSAValue
    """The value owning the storage (the value itself when it owns storage)."""
    offset: int
    """In elements, into `base`'s storage."""
    strides: tuple[int, ...]
    """In elements, one per dim of this value (0 for broadcast dims)."""
    shape: tuple[int, ...]
    """The shape of the value this layout describes."""
    value: SSAValue
    """The value this layout describes."""

    @property
    def is_view(self) -> bool:
        """The value reads another value's storage."""
        return self.base is not self.value

    @property
    def row_major(self) -> bool:
        """Dense row-major from `offset` on (it may still be a view)."""
        return is_row_major(self.shape, self.strides)

    @property
    def contiguous(self) -> bool:
        """Row-major dense with offset 0, and `base` is the value itself."""
        return not self.is_view and self.offset == 0 and self.row_major


@dataclass(frozen=True)
class ValueInfo:
    shape: tuple[int, ...]
    element_type: Attribute
    nbytes: int
    layout: Layout


def reshape_strides(
    old_shape: Sequence[int], old_strides: Sequence[int], new_shape: Sequence[int]
) -> tuple[int, ...] | None:
    """The strides that read `new_shape` row-major out of a strided value, or
    None when no strides can (numpy's `_attempt_nocopy_reshape`)."""
    if numel(new_shape) == 0:
        return row_major_strides(new_shape)
    old = [(n, s) for n, s in zip(old_shape, old_strides, strict=True) if n != 1]
    od = [n for n, _ in old]
    os_ = [s for _, s in old]
    new = list(new_shape)
    ns = [0] * len(new)
    oi, oj, ni, nj = 0, 1, 0, 1
    while ni < len(new) and oi < len(od):
        np_, op_ = new[ni], od[oi]
        while np_ != op_:
            if np_ < op_:
                np_ *= new[nj]
                nj += 1
            else:
                op_ *= od[oj]
                oj += 1
        for ok in range(oi, oj - 1):
            if os_[ok] != od[ok + 1] * os_[ok + 1]:
                return None
        ns[nj - 1] = os_[oj - 1]
        for nk in range(nj - 1, ni, -1):
            ns[nk - 1] = ns[nk] * new[nk]
        ni, nj, oi, oj = nj, nj + 1, oj, oj + 1
    # Trailing size-1 dims are never stepped; give them row-major strides.
    rm = row_major_strides(new)
    return tuple(s if n != 1 else r for n, s, r in zip(new, ns, rm, strict=True))


def view_layout(op: Operation, src: Layout, result: SSAValue) -> Layout | None:
    """The layout of a view op's result, reading `src`; None when it is not a
    view (a reshape no strides can express)."""
    shape = shape_of(result)
    if isinstance(op, TransposeOp):
        perm = op.permutation.get_values()
        return Layout(src.base, src.offset, tuple(src.strides[p] for p in perm), shape, result)
    if isinstance(op, SliceOp):
        start, step = op.start.get_values(), op.stride.get_values()
        offset = src.offset + sum(a * s for a, s in zip(start, src.strides, strict=True))
        return Layout(src.base, offset, tuple(s * k for s, k in zip(src.strides, step, strict=True)), shape, result)
    if isinstance(op, BroadcastOp):
        strides = [0] * len(shape)
        for i, d in enumerate(op.dims.get_values()):
            strides[d] = src.strides[i] if src.shape[i] == shape[d] and shape[d] != 1 else 0
        return Layout(src.base, src.offset, tuple(strides), shape, result)
    if isinstance(op, ReshapeOp):
        strides = reshape_strides(src.shape, src.strides, shape)
        return None if strides is None else Layout(src.base, src.offset, strides, shape, result)
    return None


VIEW_OP_TYPES = (TransposeOp, SliceOp, BroadcastOp, ReshapeOp)


class ShapeLayout(Analysis):
    """Shape, element type, size in bytes and layout of every value of a function."""

    name: ClassVar[str] = "shape-layout"
    version: ClassVar[int] = 1

    def __init__(self, op: Operation, am: AnalysisManager) -> None:
        super().__init__(op, am)
        self.infos: dict[SSAValue, ValueInfo] = {}
        for v in defined_values(op):
            if not isinstance(v.type, TensorType):
                continue
            self.infos[v] = self._compute(v)

    def _compute(self, v: SSAValue) -> ValueInfo:
        shape = shape_of(v)
        et = elem_of(v)
        own = Layout(v, 0, row_major_strides(shape), shape, v)
        layout = own
        owner = v.owner
        if isinstance(owner, VIEW_OP_TYPES):
            src = self.infos.get(owner.operands[0])
            if src is not None:
                layout = view_layout(owner, src.layout, v) or own
        return ValueInfo(shape, et, numel(shape) * element_bytes(et), layout)

    def info(self, v: SSAValue) -> ValueInfo:
        try:
            return self.infos[v]
        except KeyError:
            raise ValueError(f"shape-layout knows no tensor value {v} in @{func_name(self.op)}") from None

    def is_view(self, v: SSAValue) -> bool:
        """`v` is a view op result that reads another value's storage."""
        info = self.infos.get(v)
        return info is not None and info.layout.is_view

    def print(self) -> str:
        names = ValueNames(self.op)
        lines = [f"shape-layout @{func_name(self.op)}: {len(self.infos)} values"]
        for v, info in self.infos.items():
            lay = info.layout
            text = f"  {names[v]}: {type_str(info.shape, info.element_type)}, {info.nbytes} bytes, "
            if lay.is_view:
                text += f"view of {names[lay.base]} offset {lay.offset} strides [{', '.join(map(str, lay.strides))}]"
            else:
                text += "contiguous"
            lines.append(text)
        return "\n".join(lines) + "\n"

    def statistics(self) -> dict[str, int | float]:
        return {"values": len(self.infos), "views": sum(i.layout.is_view for i in self.infos.values())}
