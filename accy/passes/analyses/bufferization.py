"""bufferization: a buffer for every stored value, reuse, and the peak bytes.

Over the kernels of the outlining, in order (kernel k runs at step k):

- Every function argument, every constant a kernel reads or the function
  returns, and every kernel output has storage. Arguments and constants live
  from step -1 (before the first kernel); a value lives until the last kernel
  that reads it, or until step len(kernels) when the function returns it.
- A splat constant that is not returned is stored as ONE element, read with
  all strides 0 (a broadcast): filling its buffer writes that element only.
- Views cost no copy: a view op inside a kernel whose layout base is stored
  gets a `BufferRef` into the base's buffer with the layout's offset and
  strides.
- In place: an output of an elementwise kernel takes the buffer of an input
  that dies in that kernel when both have the same shape and size, the input
  is read only directly by elementwise ops (each output element then depends
  on the input element it overwrites and no other), and no view inside the
  kernel reads from what was computed there. Argument and constant buffers
  are never overwritten (the caller and the program cache own them).
- Liveness: an output otherwise takes a freed buffer (one whose last reader
  ran before this kernel) of the same size, else the smallest freed buffer
  that is large enough, else a new buffer.
- `peak_bytes` is the largest sum of the sizes of the buffers live at one
  step, kernels' inputs and outputs included.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from xdsl.dialects import func
from xdsl.ir import Operation, SSAValue

from accy.dialects.accy import ELEMENTWISE_OPS, ConstantOp
from accy.dialects.dense import splat_value
from accy.dialects.types import element_bytes, row_major_strides
from accy.passes.analyses import ValueNames, defined_values, func_name, returned_values
from accy.passes.analyses.outlining import OutlinedKernel, Outlining
from accy.passes.analyses.shape_layout import VIEW_OP_TYPES, ShapeLayout
from accy.passes.pass_manager import Analysis, AnalysisManager


@dataclass
class Buffer:
    """One allocation of the plan; `id` is its index in `BufferPlan.buffers`."""

    id: int
    nbytes: int
    first_use: int
    """Kernel index that writes it first (-1 for function inputs / constants)."""
    last_use: int
    """Last kernel index that reads it (len(kernels) for function results)."""
    owned: bool = True
    """False for argument and constant buffers, which are never reused."""


@dataclass(frozen=True)
class BufferRef:
    """Where a value lives: element (i0, i1, ...) is at
    `offset + sum(ik * strides[k])` elements into buffer `buffer`."""

    buffer: int
    offset: int
    shape: tuple[int, ...]
    strides: tuple[int, ...]


class BufferPlan(Analysis):
    """Buffers for the values that cross kernel boundaries, with reuse."""

    name: ClassVar[str] = "bufferization"
    version: ClassVar[int] = 1

    def __init__(self, op: Operation, am: AnalysisManager) -> None:
        super().__init__(op, am)
        self.layout = am.get(ShapeLayout, op)
        self.kernels: list[OutlinedKernel] = am.get(Outlining, op).kernels
        self.buffers: list[Buffer] = []
        self.refs: dict[SSAValue, BufferRef] = {}
        self._plan()
        self.peak_bytes: int = self._peak()

    def buffer_of(self, v: SSAValue) -> Buffer:
        """The buffer `v` lives in (KeyError when the plan stores no `v`)."""
        return self.buffers[self.refs[v].buffer]

    # -- planning -----------------------------------------------------------

    def _plan(self) -> None:
        end = len(self.kernels)
        returned = returned_values(self.op)
        last: dict[SSAValue, int] = {}
        for k, kern in enumerate(self.kernels):
            for v in kern.inputs:
                last[v] = k
        for v in returned:
            last[v] = end

        fn = self.op
        assert isinstance(fn, func.FuncOp)
        for arg in fn.args:
            self._fixed(arg, last.get(arg, -1))
        constants = [v for v in last if isinstance(v.owner, ConstantOp)]
        for c in sorted(constants, key=self._order().__getitem__):
            self._fixed(c, last[c], splat=c not in returned and splat_value(c.owner.value) is not None)

        for k, kern in enumerate(self.kernels):
            taken: set[int] = set()
            for out in kern.outputs:
                nbytes = self.layout.info(out).nbytes
                buf = self._in_place(kern, k, out, taken) or self._reuse(k, nbytes, taken)
                if buf is None:
                    buf = self._add(nbytes, k, last.get(out, k))
                buf.last_use = max(buf.last_use, last.get(out, k))
                taken.add(buf.id)
                shape = self.layout.info(out).shape
                self.refs[out] = BufferRef(buf.id, 0, shape, row_major_strides(shape))
            for inner in kern.ops:
                if isinstance(inner, VIEW_OP_TYPES):
                    self._view_ref(inner.results[0])

    def _add(self, nbytes: int, first: int, last: int, owned: bool = True) -> Buffer:
        buf = Buffer(len(self.buffers), nbytes, first, last, owned)
        self.buffers.append(buf)
        return buf

    def _fixed(self, v: SSAValue, last: int, splat: bool = False) -> None:
        info = self.layout.info(v)
        nbytes = element_bytes(info.element_type) if splat else info.nbytes
        buf = self._add(nbytes, -1, last, owned=False)
        strides = (0,) * len(info.shape) if splat else row_major_strides(info.shape)
        self.refs[v] = BufferRef(buf.id, 0, info.shape, strides)

    def _view_ref(self, v: SSAValue) -> None:
        lay = self.layout.info(v).layout
        base = self.refs.get(lay.base)
        if not lay.is_view or base is None or v in self.refs:
            return
        if base.strides and all(s == 0 for s in base.strides) and base.shape:  # a splat constant
            self.refs[v] = BufferRef(base.buffer, 0, lay.shape, (0,) * len(lay.shape))
        else:
            self.refs[v] = BufferRef(base.buffer, base.offset + lay.offset, lay.shape, lay.strides)

    def _in_place(self, kern: OutlinedKernel, k: int, out: SSAValue, taken: set[int]) -> Buffer | None:
        if kern.kind != "elementwise" or not isinstance(out.owner, ELEMENTWISE_OPS):
            return None
        inside = set(kern.ops)
        for inner in kern.ops:
            if isinstance(inner, VIEW_OP_TYPES):
                base = self.layout.info(inner.results[0]).layout.base
                if isinstance(base.owner, Operation) and base.owner in inside or not self.layout.is_view(inner.results[0]):
                    return None  # a view of a computed value reads other indices
            elif not isinstance(inner, ELEMENTWISE_OPS):
                return None
        out_info = self.layout.info(out)
        for v in kern.inputs:
            ref = self.refs.get(v)
            if ref is None:
                continue
            buf = self.buffers[ref.buffer]
            if not buf.owned or buf.id in taken or buf.last_use != k or buf.nbytes != out_info.nbytes:
                continue
            if self.layout.info(v).shape != out_info.shape:
                continue
            if all(isinstance(u.operation, ELEMENTWISE_OPS) for u in v.uses if u.operation in inside):
                return buf
        return None

    def _reuse(self, k: int, nbytes: int, taken: set[int]) -> Buffer | None:
        free = [b for b in self.buffers if b.owned and b.last_use < k and b.id not in taken and b.nbytes >= nbytes]
        if not free:
            return None
        return min(free, key=lambda b: (b.nbytes != nbytes, b.nbytes, b.id))

    def _peak(self) -> int:
        steps = range(-1, len(self.kernels) + 1)
        return max((sum(b.nbytes for b in self.buffers if b.first_use <= s <= b.last_use) for s in steps), default=0)

    def _order(self) -> dict[SSAValue, int]:
        return {v: i for i, v in enumerate(defined_values(self.op))}

    # -- output ---------------------------------------------------------------

    def print(self) -> str:
        names = ValueNames(self.op)
        lines = [f"bufferization @{func_name(self.op)}: {len(self.buffers)} buffers, peak {self.peak_bytes} bytes"]
        for b in self.buffers:
            owner = "" if b.owned else " (input)"
            lines.append(f"  buffer {b.id}: {b.nbytes} bytes, live {b.first_use}..{b.last_use}{owner}")
        order = self._order()
        for v, ref in sorted(self.refs.items(), key=lambda item: order[item[0]]):
            text = f"  {names[v]} -> buffer {ref.buffer}"
            if ref.offset or ref.strides != row_major_strides(ref.shape):
                text += f" offset {ref.offset} strides [{', '.join(map(str, ref.strides))}]"
            lines.append(text)
        return "\n".join(lines) + "\n"

    def statistics(self) -> dict[str, int | float]:
        return {"peak_bytes": self.peak_bytes, "buffers": len(self.buffers)}
