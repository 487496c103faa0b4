"""Where a kernel reads its values: a symbolic mirror of `Expr.view_coords`.

A lowering pins some values to one computed scalar (a row total, a dot's
accumulator, a reduction's result in its epilogue) and `Expr` hands a pinned
value out at whatever coordinates it is asked for. That is right only where
every read is at the coordinates the scalar was computed for. `reads_of`
walks what a set of roots is computed from, mapping symbolic coordinates
through elementwise ops and views exactly as `Expr` maps real ones, and
reports the coordinates each pinned value is read at; the lowering checks
them and declines (or computes the value per element) where they differ.
The schedule never fuses such reads; this is each lowering's own guard
against a matcher that compared sizes instead of dims.
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.ir import Operation, SSAValue

from accy.dialects import accy

ELEMENTWISE = tuple(accy.ELEMENTWISE_OPS)
VIEWS = tuple(accy.VIEW_OPS)

Coord = tuple[str, int]
"""A symbolic coordinate: ("row", i) the i-th row index, ("col", 0) the index
along the row, ("zero", 0) the constant 0, ("any", 0) anything else."""

ZERO: Coord = ("zero", 0)
ANY: Coord = ("any", 0)
COL: Coord = ("col", 0)


def row_coords(rank: int) -> tuple[Coord, ...]:
    return tuple(("row", i) for i in range(rank))


def _operand_coords(op: Operation, coords: tuple[Coord, ...]) -> list[tuple[SSAValue, tuple[Coord, ...]]]:
    """(operand, coordinates it is read at) when `op`'s result is read at
    `coords`, as `Expr` evaluates it."""
    if isinstance(op, ELEMENTWISE):
        return [(o, coords) for o in op.operands]
    if isinstance(op, accy.ConcatOp):
        axis = op.axis.value.data % len(coords)
        return [(x, (*coords[:axis], ANY, *coords[axis + 1 :])) for x in op.xs]
    if isinstance(op, accy.GatherOp):
        axis, rank = op.norm_axis(), len(accy.shape_of(op.indices))
        return [(op.x, (*coords[:axis], ANY, *coords[axis + rank :])), (op.indices, coords[axis : axis + rank])]
    if isinstance(op, accy.PadOp):
        padded = zip(coords, op.low.get_values(), op.high.get_values(), strict=True)
        return [(op.x, tuple(c if (lo, hi) == (0, 0) else ANY for c, lo, hi in padded)), (op.value, ())]
    if not isinstance(op, VIEWS):
        return []
    src = accy.shape_of(op.operands[0])
    if isinstance(op, accy.TransposeOp):
        out = [ZERO] * len(src)
        for i, p in enumerate(op.permutation.get_values()):
            out[p] = coords[i]
        return [(op.operands[0], tuple(out))]
    if isinstance(op, accy.BroadcastOp):
        return [(op.x, tuple(ZERO if src[i] == 1 else coords[d] for i, d in enumerate(op.dims.get_values())))]
    if isinstance(op, accy.SliceOp):
        plain = [a == 0 and s == 1 for a, s in zip(op.start.get_values(), op.stride.get_values(), strict=True)]
        return [(op.x, tuple(c if keep or c == ZERO and a == 0 else ANY
                             for c, keep, a in zip(coords, plain, op.start.get_values(), strict=True)))]
    # A reshape keeps coordinates apart only where it inserts or drops dims of size 1.
    dst = accy.shape_of(op.results[0])
    kept = [c for c, size in zip(coords, dst, strict=True) if size != 1]
    if [n for n in src if n != 1] != [n for n in dst if n != 1]:
        return [(op.operands[0], (ANY,) * len(src))]
    it = iter(kept)
    return [(op.operands[0], tuple(ZERO if n == 1 else next(it) for n in src))]


def reads_of(
    roots: Sequence[tuple[SSAValue, tuple[Coord, ...]]], producer: dict[SSAValue, Operation],
    aliases: dict[SSAValue, SSAValue], stop: set[SSAValue],
) -> dict[SSAValue, set[tuple[Coord, ...]]]:
    """The symbolic coordinates each `stop` value is read at when the
    `roots` are evaluated at theirs: what a lowering that pins a value (a
    row total, a dot's result) to one scalar must check, since `Expr` hands
    a pinned value out at whatever coordinates it is asked for."""
    out: dict[SSAValue, set[tuple[Coord, ...]]] = {}
    seen: set[tuple[SSAValue, tuple[Coord, ...]]] = set()
    work = list(roots)
    while work:
        v, coords = work.pop()
        if (v, coords) in seen:
            continue
        seen.add((v, coords))
        if v in stop:
            out.setdefault(v, set()).add(coords)
        elif v in aliases:
            work.append((aliases[v], coords))
        elif v in producer:
            work.extend(_operand_coords(producer[v], coords))
    return out


def on_own_row(coords: tuple[Coord, ...], rows: tuple[int, ...], axis: int | None = None) -> bool:
    """`coords` name the row being computed: a row value's coordinates are
    the row indices, a value on the rows' has the index along the row at
    `axis` (the last dim when None) and the row indices around it; a row
    dim of size 1 may be read at 0."""
    if len(coords) == len(rows) + 1:
        at = len(rows) if axis is None else axis
        coords = (*coords[:at], *coords[at + 1 :])
    return len(coords) == len(rows) and all(
        c == ("row", i) or (rows[i] == 1 and c == ZERO) for i, c in enumerate(coords)
    )


def read_elsewhere(
    outputs: Sequence[SSAValue], ops: Sequence[Operation], pinned: SSAValue,
    aliases: dict[SSAValue, SSAValue] | None = None,
) -> bool:
    """Whether the `outputs` of `pinned`'s shape, evaluated at their own
    coordinates, read `pinned` anywhere else (through a view): an epilogue
    that pins an anchor's result to the value computed at those coordinates
    must not."""
    producer = {r: op for op in ops for r in op.results}
    roots = [(o, row_coords(len(accy.shape_of(o)))) for o in outputs if accy.shape_of(o) == accy.shape_of(pinned)]
    reads = reads_of(roots, producer, aliases or {}, {pinned}).get(pinned, set())
    return any(coords != row_coords(len(coords)) for coords in reads)
