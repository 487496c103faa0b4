"""The search space: per kind of kernel and per profile, the `#accy.target`
fields its lowering reads and the values worth trying.

A space is a short list of candidates, each a dict of fields (a handful to
a few dozen per kind, so that a program tunes within its budget). The
values of the module as given (the device's defaults, or what the module
sets) are always the first candidate, timed before any other: a search keeps
them unless another candidate is faster by a margin (search.py).

What each lowering reads (grep `profile.` in `accy/passes/kernelization/`;
docs/tuning.md has the table):

| kind | cpu | gpu |
|---|---|---|
| dot_general | `dot_rows` x `dot_vectors` (register tile), `vector_width` | `dot_rows`, `dot_tile`, `mma` |
| row_pipeline | `vector_width`, `group_size` | `row_threads`, `row_segment` |
| flash_attention | `query_rows`, `key_tile`, `vector_width` | `query_rows`, `key_tile`, `attention_lanes` |
| scan | `vector_width`, `group_size`, `stream_bytes` | `row_threads`, `scan_vectors`, `vector_width` |
| reduction | `reduce_chunk`, `vector_width`, `group_size` | `reduce_threads`, `reduce_chunk` |
| elementwise (and shape) | `vector_width`, `group_size` | `group_size`, `vector_width` |

The fields are the module's, not a kernel's: two kernels of a program that
read one field (every CPU kernel reads `vector_width`) share its value, so
a search times the whole program, never one kernel alone.

`SPACE_VERSION` is part of the tuning cache's key (store.py): bump it when
a space changes, so that results found in the old space are searched again.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping

from accy.dialects.target import TargetProfile
from accy.passes.kernelization.register_tiles import ACCUMULATORS, DEFAULT_ACCUMULATORS

SPACE_VERSION = 5  # 2: row_segment; 3: the GPU scan's vector_width; 4: stream_bytes only for scans; 5: attention_lanes, sm80 on sm90

#: One candidate: the fields it sets (the others keep their current values).
Candidate = dict[str, int | str]

#: The kinds that have a space, in the order a search visits them: the
#: heavy kernels first, whose fields (a dot's tile) matter most.
KINDS = ("dot_general", "flash_attention", "row_pipeline", "scan", "reduction", "elementwise")
#: Kinds tuned as another: a shape kernel (a copy) is lowered as an elementwise one.
ALIASES = {"shape": "elementwise"}

#: No streaming stores at all (a threshold no output reaches).
NO_STREAMING = 1 << 62


def _product(**axes: tuple[int, ...]) -> list[Candidate]:
    names = list(axes)
    return [dict(zip(names, values, strict=True)) for values in itertools.product(*axes.values())]


def _widths(profile: TargetProfile) -> tuple[int, ...]:
    """Vector widths to try: the device's and the halves below it, down to 4."""
    widths = [profile.vector_width]
    while widths[-1] > 4:
        widths.append(widths[-1] // 2)
    return tuple(widths)


def _streaming(profile: TargetProfile) -> tuple[int, ...]:
    """Streaming-store thresholds: the current one and never."""
    return (profile.stream_bytes, NO_STREAMING)


# -- CPU ---------------------------------------------------------------------------------


def _cpu_dot(p: TargetProfile) -> list[Candidate]:
    # Register tiles within the accumulator budget of the vector width
    # (register_tiles.tile_shape clamps a larger one: it would be the same
    # kernel), at least half of it used; the fullest tiles first, so that a
    # budget that cuts the list short has tried the likeliest.
    found = []
    for width in _widths(p)[:2]:
        budget = ACCUMULATORS.get(width, DEFAULT_ACCUMULATORS)
        tiles = [(r, v) for r, v in itertools.product((4, 6, 8, 12, 16), (1, 2, 3, 4)) if budget // 2 <= r * v <= budget]
        for rows, vectors in sorted(tiles, key=lambda t: (-t[0] * t[1], abs(t[0] - 4 * t[1]))):
            found.append({"vector_width": width, "dot_rows": rows, "dot_vectors": vectors})
    return found


def _cpu_row_pipeline(p: TargetProfile) -> list[Candidate]:
    # A work-item a row: the work-group size is how rows are dealt out to the threads.
    return _product(vector_width=_widths(p)[:2], group_size=(p.group_size, 8))


def _cpu_flash_attention(p: TargetProfile) -> list[Candidate]:
    return _product(query_rows=(1, 2, 4, 8), key_tile=(16, 32, 64, 128))


def _cpu_scan(p: TargetProfile) -> list[Candidate]:
    return _product(vector_width=_widths(p), group_size=(8, 64), stream_bytes=_streaming(p))


def _cpu_reduction(p: TargetProfile) -> list[Candidate]:
    return _product(reduce_chunk=(64, 256, 1024), vector_width=_widths(p)[:2], group_size=(p.group_size, 8))


def _cpu_elementwise(p: TargetProfile) -> list[Candidate]:
    return _product(vector_width=_widths(p), group_size=(16, 64, 256))


# -- GPU ---------------------------------------------------------------------------------


def _gpu_dot(p: TargetProfile) -> list[Candidate]:
    # With the tensor cores (`mma`, set by the device where its driver runs
    # them), the SIMT register tiles too: small or odd products may prefer
    # them; on Hopper the warp tiles of mma.sync too (the warpgroup tiles'
    # 128 x 256 blocks, and TF32's packing launch, may lose on small ones).
    simt: list[Candidate] = [{"mma": ""}] if p.mma else []
    warp: list[Candidate] = [{"mma": "sm80"}] if p.mma == "sm90" else []
    return _product(dot_rows=(4, 8), dot_tile=(8, 16)) + simt + warp


def _gpu_row_pipeline(p: TargetProfile) -> list[Candidate]:
    # Short rows (row_pipeline.py's `row_segments`) read `row_segment` too;
    # not crossed with `row_threads`, which a long row alone reads.
    return _product(row_threads=(64, 128, 256, 512, 1024)) + _product(row_segment=(8, 16))


def _gpu_flash_attention(p: TargetProfile) -> list[Candidate]:
    # The vector layout (`attention_lanes = 4`: f32 tiles read 16 bytes at a
    # time) at the blocks it takes: a work-item's 4 rows and keys whole vectors.
    vectors = _product(attention_lanes=(4,), query_rows=(32, 64, 128), key_tile=(32, 64))
    return _product(query_rows=(16, 32, 64, 128), key_tile=(16, 32, 64)) + vectors


#: The GPU scan's widths of a work-item's vectors, beside the device's (4 floats on NVIDIA: one 128-bit load).
GPU_SCAN_WIDTHS = (2, 8)


def _gpu_scan(p: TargetProfile) -> list[Candidate]:
    # A work-item's share of a tile is `scan_vectors` vectors of
    # `vector_width` elements (scan.py's `_plan`): the width is searched
    # too, not crossed with the rest (the tile's length is their product).
    widths = [{"vector_width": w} for w in GPU_SCAN_WIDTHS if w != p.vector_width]
    return _product(row_threads=(128, 256, 512, 1024), scan_vectors=(1, 2, 4)) + widths


def _gpu_reduction(p: TargetProfile) -> list[Candidate]:
    return _product(reduce_threads=(64, 128, 256, 512, 1024), reduce_chunk=(64, 256))


def _gpu_elementwise(p: TargetProfile) -> list[Candidate]:
    return _product(group_size=(64, 128, 256, 512, 1024), vector_width=(1, 2, 4))


#: (profile, kind) -> the candidates for a complete profile of that kind.
SPACES: dict[tuple[str, str], Callable[[TargetProfile], list[Candidate]]] = {
    ("cpu", "dot_general"): _cpu_dot,
    ("cpu", "row_pipeline"): _cpu_row_pipeline,
    ("cpu", "flash_attention"): _cpu_flash_attention,
    ("cpu", "scan"): _cpu_scan,
    ("cpu", "reduction"): _cpu_reduction,
    ("cpu", "elementwise"): _cpu_elementwise,
    ("gpu", "dot_general"): _gpu_dot,
    ("gpu", "row_pipeline"): _gpu_row_pipeline,
    ("gpu", "flash_attention"): _gpu_flash_attention,
    ("gpu", "scan"): _gpu_scan,
    ("gpu", "reduction"): _gpu_reduction,
    ("gpu", "elementwise"): _gpu_elementwise,
}

#: A space a search is given: kind -> candidates for a complete profile.
Spaces = Mapping[str, Callable[[TargetProfile], list[Candidate]]]


def spaces_for(profile: str) -> dict[str, Callable[[TargetProfile], list[Candidate]]]:
    """The spaces of one profile ("cpu" or "gpu"), by kind."""
    return {kind: SPACES[(profile, kind)] for kind in KINDS}


def candidates(space: Callable[[TargetProfile], list[Candidate]], current: TargetProfile) -> list[Candidate]:
    """`space`'s candidates for `current`, the current values first and each
    distinct setting once (a candidate equal to the current values on its
    fields is the current one)."""
    found = space(current)
    names = sorted({name for c in found for name in c})
    first = {name: getattr(current, name) for name in names}
    seen = {tuple(sorted(first.items()))}
    out = [first]
    for c in found:
        full = {**first, **c}
        key = tuple(sorted(full.items()))
        if key not in seen:
            seen.add(key)
            out.append(full)
    return out
