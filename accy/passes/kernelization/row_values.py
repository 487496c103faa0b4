"""Row-shaped values shared by the row-pipeline and flash-attention
lowerings: named ops expanded into their primitives for the duration of a
lowering (`expanded`, `pin_aliases`), accesses for broadcasts of kernel
inputs (`broadcast_accesses`), the cone of values a computation needs
(`walk_cone`) and the dims a value varies along (`varying_dims`).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager

import numpy as np
from xdsl.ir import Operation, SSAValue

from accy.dialects import accy
from accy.dialects.dense import splat_value
from accy.passes.decompose import decompose
from accy.passes.kernelization.evaluate import Expr, literal_elements, postorder, vectorizable
from accy.passes.kernelization.kernel_builder import ELEMENTWISE, Access, KernelBuilder

# --------------------------------------------------------------------------
# Named ops -> primitives
# --------------------------------------------------------------------------


@contextmanager
def expanded(ops: Sequence[Operation]) -> Iterator[tuple[list[Operation], dict[SSAValue, SSAValue]]]:
    """The item's ops with every named op that has a decomposition (softmax,
    log_softmax, layer_norm, attention) replaced by its primitive ops, and
    the map from each named result to the value that replaces it. The new
    ops are detached and read the original values; they are erased on exit
    so that the tensor program keeps no extra uses."""
    out: list[Operation] = []
    aliases: dict[SSAValue, SSAValue] = {}
    created: list[Operation] = []
    try:
        for op in ops:
            parts = decompose(op)
            if parts is None:
                out.append(op)
                continue
            new, value = parts
            created.extend(new)
            out.extend(new)
            aliases[op.results[0]] = value
        yield out, aliases
    finally:
        for op in reversed(created):
            op.erase(safe_erase=False)


def pin_aliases(expr: Expr, aliases: dict[SSAValue, SSAValue]) -> None:
    """Named results evaluate as the value of their decomposition."""
    for named, value in aliases.items():
        expr.alias(named, value)


def broadcast_accesses(kb: KernelBuilder, ops: Sequence[Operation]) -> dict[SSAValue, Access]:
    """Accesses for broadcasts of kernel inputs that the buffer plan does not
    place (those of an expanded named op, e.g. layer_norm's gamma): a
    broadcast is strides, so it loads W lanes like any input."""
    out: dict[SSAValue, Access] = {}
    for op in ops:
        if not isinstance(op, accy.BroadcastOp) or op.result in kb.access:
            continue
        src = out.get(op.x) or (kb.access.get(op.x) if op.x.owner not in ops else None)
        if src is None:
            continue
        src_shape = accy.shape_of(op.x)
        strides = [0] * len(accy.shape_of(op.result))
        for i, d in enumerate(op.dims.get_values()):
            strides[d] = src.strides[i] if src_shape[i] != 1 else 0
        out[op.result] = Access(src.arg, src.offset, tuple(strides), src.element_type)
    return out


def walk_cone(
    kb: KernelBuilder, producer: dict[SSAValue, Operation], aliases: dict[SSAValue, SSAValue],
    values: Sequence[SSAValue], record: set[SSAValue], leaves: set[SSAValue],
) -> tuple[list[SSAValue], bool]:
    """Walks what `values` are computed from, up to kernel inputs, `leaves`
    (values loaded or pinned) and `record` values (not walked into; the ones
    met are returned). Also says whether every op met computes W lanes at a
    time (`vectorizable`)."""
    met: dict[SSAValue, None] = {}
    ok = True
    seen: set[SSAValue] = set()
    stack = list(values)
    while stack:
        v = stack.pop()
        if v in seen:
            continue
        seen.add(v)
        if v in aliases:
            stack.append(aliases[v])
        elif v in record:
            met[v] = None
        elif v not in leaves and v not in kb.view_leaves and v in producer:
            op = producer[v]
            if not (isinstance(op, accy.ConstantOp) or vectorizable([op], kb)):
                ok = False
            stack.extend(op.operands)
    return list(met), ok


def varying_dims(
    v: SSAValue, producer: dict[SSAValue, Operation], aliases: dict[SSAValue, SSAValue],
    memo: dict[SSAValue, frozenset[int]],
) -> frozenset[int]:
    """The dims of `v` along which its value may change (a sound
    over-approximation): a value from outside varies along every dim of
    size > 1, a constant along those it is not constant on; views move the
    dims of their operand, elementwise ops join their operands', reductions
    drop the reduced ones."""

    def operands(x: SSAValue) -> Sequence[SSAValue]:
        if x in aliases:
            return [aliases[x]]
        op = producer.get(x)
        return () if op is None or isinstance(op, accy.ConstantOp) else op.operands

    # Operands first, without recursing (chains are as long as the program).
    for x in postorder([v], operands, memo):
        memo[x] = _varying_dims_of(x, producer, aliases, memo)
    return memo[v]


def _varying_dims_of(
    v: SSAValue, producer: dict[SSAValue, Operation], aliases: dict[SSAValue, SSAValue],
    memo: dict[SSAValue, frozenset[int]],
) -> frozenset[int]:
    """`varying_dims` of `v` from those of its operands, in `memo`."""
    shape = accy.shape_of(v)
    every = frozenset(d for d, size in enumerate(shape) if size > 1)
    op = producer.get(v)
    if op is None and isinstance(v.owner, accy.ConstantOp):
        op = v.owner
    out = every
    if v in aliases:
        out = memo[aliases[v]]
    elif isinstance(op, accy.ConstantOp):
        if splat_value(op.value) is not None or not every:
            out = frozenset()
        else:  # read from the literal's bytes, never as a list of Python numbers
            values = literal_elements(op.value).reshape(shape)
            out = frozenset(d for d in every if not np.all(values == values.take([0], axis=d)))
    elif op is not None:
        src = [memo[o] for o in op.operands]
        if isinstance(op, ELEMENTWISE):
            out = frozenset().union(*src)
        elif isinstance(op, accy.ReduceOp):
            kept = [d for d in range(len(accy.shape_of(op.x))) if d not in op.norm_axes()]
            out = frozenset(i for i, d in enumerate(kept) if d in src[0])
        elif isinstance(op, accy.BroadcastOp):
            out = frozenset(d for i, d in enumerate(op.dims.get_values()) if i in src[0])
        elif isinstance(op, accy.TransposeOp):
            out = frozenset(i for i, p in enumerate(op.permutation.get_values()) if p in src[0])
        elif isinstance(op, accy.SliceOp):
            out = src[0]
        elif isinstance(op, accy.ReshapeOp) and not src[0]:
            out = frozenset()
        elif isinstance(op, accy.ReshapeOp):
            # Only a reshape that inserts or drops dims of size 1 keeps the others apart.
            old = [d for d, size in enumerate(accy.shape_of(op.x)) if size > 1]
            new = [d for d, size in enumerate(shape) if size > 1]
            if [accy.shape_of(op.x)[d] for d in old] == [shape[d] for d in new]:
                out = frozenset(n for o, n in zip(old, new, strict=True) if o in src[0])
    return out & every
