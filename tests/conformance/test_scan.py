"""Scans at the sizes and shapes the GPU profile's tiled scan could get
wrong (accy/passes/kernelization/scan.py): lines of one element, of less
than a vector, of one work-item's share, around a chunk row (T·V) and a
tile (J·T·V), several tiles and a remainder; lines along a non-innermost
axis, batches of lines in 3-D, a line count that is no multiple of the
lines per work-group; every kind, exclusive and reverse, f32 and i32,
prologue and epilogue fused, with views in the kernel; and the CPU
profile's W lines a work-item along a non-innermost axis, with a last block
of fewer lines. Every test runs on both profiles and the LLVM device
(conftest.py).

Most programs set a small `row_threads` and `scan_vectors` in their module
target (8 work-items, 2 vectors of 4: tiles of at most 64 elements), so
that short lines cross every boundary; the CPU profile ignores them. A few
run at the GPU profile's defaults (256 work-items, tiles of 4096)."""

from __future__ import annotations

import numpy as np
import pytest
from check import check, ty
from conftest import GPU_PROFILE

import accy
from accy.backends.opencl.emitter import kernel_funcs
from accy.dialects.kernel import is_stream_store
from accy.passes.kernelization.kernelize import KernelizePass
from accy.passes.pass_manager import PassManager

#: The module target of the small tiles: T <= 8, J = 2 (V = 4 on the GPU profile).
SMALL = "row_threads = 8, scan_vectors = 2"
#: The GPU profile's defaults.
DEFAULT = ""


def values(rng: np.random.Generator, shape, kind: str, et: str) -> np.ndarray:
    """Inputs whose scans stay in range: magnitudes near one for a float
    product (integer products wrap, as numpy's do, in any order)."""
    if et == "i32":
        return rng.integers(-50, 50, shape).astype(np.int32)
    if kind == "prod":
        sign = np.where(rng.random(shape) < 0.5, -1.0, 1.0)
        return (sign * (0.95 + 0.1 * rng.random(shape))).astype(np.float32)
    return rng.standard_normal(shape).astype(np.float32)


def flags(exclusive: bool, reverse: bool) -> str:
    return f"exclusive = {str(exclusive).lower()}, reverse = {str(reverse).lower()}"


def module(target: str, body: str) -> str:
    return f"builtin.module attributes {{accy.target = #accy.target<{target}>}} {{\n{body}}}\n" if target else body


def scan_src(
    shape, axis: int, kind: str = "sum", exclusive: bool = False, reverse: bool = False, et: str = "f32",
    target: str = SMALL,
) -> str:
    """x * y scanned along `axis` (prologue), plus x (epilogue)."""
    t = ty(shape, et)
    return module(target, (
        f"func.func @main(%x: {t}, %y: {t}) -> {t} {{\n"
        f'  %m = "accy.mul"(%x, %y) : ({t}, {t}) -> {t}\n'
        f'  %s = "accy.scan"(%m) <{{kind = "{kind}", axis = {axis} : i64, {flags(exclusive, reverse)}}}> : ({t}) -> {t}\n'
        f'  %r = "accy.add"(%s, %x) : ({t}, {t}) -> {t}\n'
        f"  func.return %r : {t}\n}}\n"
    ))


def run(src: str, shape, kind: str, et: str, device, seed: int = 0) -> None:
    rng = np.random.default_rng(seed)
    ones = np.ones(shape, np.int32 if et == "i32" else np.float32)
    check(src, [values(rng, shape, kind, et), ones if kind == "prod" else values(rng, shape, kind, et)], device)


#: Line lengths around the small tiles' boundaries: 1; below, at and past a
#: vector (4) and a work-item's share (8); around a chunk row of 8
#: work-items (32) and a tile (64); several tiles and a remainder, walked
#: by one work-group; from 8 tiles (512) on, lines split into segments.
SMALL_LENGTHS = [1, 3, 4, 5, 7, 8, 9, 17, 31, 32, 33, 63, 64, 65, 200, 256, 511, 512, 513, 1000]


@pytest.mark.parametrize("n", SMALL_LENGTHS)
@pytest.mark.parametrize("exclusive,reverse", [(False, False), (True, True)])
def test_line_lengths(n: int, exclusive: bool, reverse: bool, device) -> None:
    run(scan_src([3, n], 1, "sum", exclusive, reverse), [3, n], "sum", "f32", device, n)


@pytest.mark.parametrize("n", [1023, 1024, 1025, 4096, 8197])
def test_line_lengths_default_tiles(n: int, device) -> None:
    """At the GPU defaults: a chunk row is 1024 elements, a tile 4096."""
    run(scan_src([2, n], 1, "sum", target=DEFAULT), [2, n], "sum", "f32", device, n)
    run(scan_src([2, n], 1, "max", True, True, target=DEFAULT), [2, n], "max", "f32", device, n)


@pytest.mark.parametrize("kind", ["sum", "prod", "max", "min"])
@pytest.mark.parametrize("et", ["f32", "i32"])
@pytest.mark.parametrize("exclusive,reverse", [(False, False), (True, True)])
@pytest.mark.parametrize("n", [133, 700])
def test_kinds(kind: str, et: str, exclusive: bool, reverse: bool, n: int, device) -> None:
    """7 lines of 133 (2 whole tiles and a remainder of 5, one work-group a
    line) or of 700 (10 whole tiles and 60: 11 segments a line)."""
    run(scan_src([7, n], 1, kind, exclusive, reverse, et), [7, n], kind, et, device)


#: (shape, axis): lines along a non-innermost axis (strided), batches of
#: lines in 3-D, and an innermost axis that is not the last dim.
SHAPES = [
    ([133, 5], 0), ([70, 40], 0), ([3, 70, 5], 1), ([3, 5, 70], 2), ([70, 3, 5], 0), ([4, 70, 1], 1), ([1, 200], 1),
    ([200, 1], 0), ([6, 1, 65], 2), ([9, 3, 32], 1), ([33, 17], 0),
]


@pytest.mark.parametrize("shape,axis", SHAPES, ids=lambda c: "x".join(map(str, c)) if isinstance(c, list) else str(c))
@pytest.mark.parametrize("kind,exclusive,reverse", [("sum", False, True), ("min", True, True), ("prod", True, False)])
def test_axes(shape: list[int], axis: int, kind: str, exclusive: bool, reverse: bool, device) -> None:
    run(scan_src(shape, axis, kind, exclusive, reverse), shape, kind, "f32", device, len(shape) + axis)


@pytest.mark.parametrize("kind", ["sum", "prod", "max", "min"])
def test_int_lines_across(kind: str, device) -> None:
    """i32 along axis 0 of 17 columns: on the CPU profile 16 lines a
    work-item as vectors, then the 17th alone."""
    run(scan_src([33, 17], 0, kind, True, False, "i32"), [33, 17], kind, "i32", device)


@pytest.mark.parametrize("target", [SMALL, DEFAULT], ids=["small", "default"])
def test_views_and_two_outputs(target: str, device) -> None:
    """A transposed input in the prologue (no vector loads), exp and a
    broadcast bias, two results of the epilogue; int scan with a cast."""
    t, tt, b = ty([6, 300]), ty([300, 6]), ty([300])
    ti = ty([6, 300], "i32")
    body = (
        f"func.func @main(%x: {t}, %y: {tt}, %bias: {b}) -> ({t}, {t}, {ti}) {{\n"
        f'  %yt = "accy.transpose"(%y) <{{permutation = array<i64: 1, 0>}}> : ({tt}) -> {t}\n'
        f'  %bb = "accy.broadcast"(%bias) <{{dims = array<i64: 1>}}> : ({b}) -> {t}\n'
        f'  %e = "accy.exp"(%x) : ({t}) -> {t}\n'
        f'  %m = "accy.mul"(%e, %yt) : ({t}, {t}) -> {t}\n'
        f'  %p = "accy.add"(%m, %bb) : ({t}, {t}) -> {t}\n'
        f'  %s = "accy.scan"(%p) <{{kind = "sum", axis = 1 : i64, {flags(True, False)}}}> : ({t}) -> {t}\n'
        f'  %r = "accy.mul"(%s, %x) : ({t}, {t}) -> {t}\n'
        f'  %q = "accy.neg"(%s) : ({t}) -> {t}\n'
        f'  %c = "accy.cast"(%x) : ({t}) -> {ti}\n'
        f'  %ci = "accy.scan"(%c) <{{kind = "max", axis = 1 : i64, {flags(False, True)}}}> : ({ti}) -> {ti}\n'
        f"  func.return %r, %q, %ci : {t}, {t}, {ti}\n}}\n"
    )
    rng = np.random.default_rng(11)
    x = (3 * rng.standard_normal((6, 300))).astype(np.float32)
    inputs = [x, rng.standard_normal((300, 6)).astype(np.float32), rng.standard_normal(300).astype(np.float32)]
    check(module(target, body), inputs, device)


@pytest.mark.parametrize("exclusive,reverse", [(False, False), (True, True)])
def test_many_lines_of_several_tiles(exclusive: bool, reverse: bool, device) -> None:
    """Enough lines that each line's tiles are walked by one work-group,
    the carry passed from tile to tile (fewer lines are split into
    segments, as in the tests above): 600 lines of 3 whole tiles and 8
    elements; along axis 0, 16400 lines of 2 tiles and 4 elements, 32
    lines a work-group."""
    run(scan_src([600, 200], 1, "sum", exclusive, reverse), [600, 200], "sum", "f32", device)
    target = "row_threads = 64, scan_vectors = 1"
    run(scan_src([20, 16400], 0, "max", exclusive, reverse, target=target), [20, 16400], "max", "f32", device)


def test_long_line(device) -> None:
    """One line of 2^17 + 3 at the GPU defaults: 33 tiles in 33 segments."""
    n = (1 << 17) + 3
    run(scan_src([1, n], 1, "sum", target=DEFAULT), [1, n], "sum", "f32", device)


def gpu_kernels(src: str, target: str) -> list:
    mod = accy.parse_module(src)
    fields = dict(GPU_PROFILE.fields())
    fields.update({"row_threads": 8, "scan_vectors": 2} if target == SMALL else {})
    fields.update({"row_threads": 64, "scan_vectors": 1} if target.startswith("row_threads = 64") else {})
    GPU_PROFILE.replace(**fields).attach(mod)
    PassManager([KernelizePass()]).run(mod)
    return kernel_funcs(mod)


@pytest.mark.parametrize(
    "shape,axis,target,kernels,barriers,vectors",
    [
        ([3, 200], 1, SMALL, 1, True, True),  # 4 tiles: one work-group a line
        ([3, 600], 1, SMALL, 2, True, True),  # 10 tiles of 3 lines: segments, a totals launch first
        ([600, 200], 1, SMALL, 1, True, True),
        ([3, 8], 1, SMALL, 1, False, True),  # one work-item's share: no work-group scan
        ([133, 5], 0, SMALL, 2, True, False),
        ([20, 16400], 0, "row_threads = 64, scan_vectors = 1", 1, True, False),
        ([16, 4096], 1, DEFAULT, 1, True, True),
        ([1, 100000], 1, DEFAULT, 2, True, True),
    ],
)
def test_gpu_kernel_shape(
    shape: list[int], axis: int, target: str, kernels: int, barriers: bool, vectors: bool
) -> None:
    """The GPU profile builds the tiled scan (barriers where a line has
    more than one work-item, vector loads along the last dim, a launch of
    segment totals before the scan where lines are split)."""
    funcs = gpu_kernels(scan_src(shape, axis, target=target), target)
    assert len(funcs) == kernels
    names = {op.name for op in funcs[-1].walk()}
    assert ("gpu.barrier" in names) == barriers
    assert ("vector.load" in names) == vectors
    assert "gpu.thread_id" in names


#: Every output streamed, however small (`stream_bytes`, CPU profile only).
STREAM = "stream_bytes = 4"


@pytest.mark.parametrize("n", [1, 3, 16, 17, 32, 1023, 1024])
@pytest.mark.parametrize("kind,exclusive,reverse", [("sum", False, False), ("max", True, False), ("sum", False, True)])
def test_streaming_stores(n: int, kind: str, exclusive: bool, reverse: bool, device) -> None:
    """Along the last dim with streaming stores of whole vectors (a reverse
    walk streams only lines of whole vectors: its vectors start at n mod W),
    the tail stored plainly; 3 lines, each starting at a multiple of W only
    when n is one."""
    run(scan_src([3, n], 1, kind, exclusive, reverse, target=STREAM), [3, n], kind, "f32", device, n)


def test_streaming_stores_are_emitted() -> None:
    """A cumsum of 4 x 32 with `stream_bytes` below its size stores through
    streaming stores on the CPU profile, and only there."""
    src = scan_src([4, 32], 1, target=STREAM)
    mod = accy.parse_module(src)
    PassManager([KernelizePass()]).run(mod)
    stores = [op for f in kernel_funcs(mod) for op in f.walk() if op.name == "vector.store"]
    assert stores and all(is_stream_store(op) for op in stores)
    assert not any(is_stream_store(op) for f in gpu_kernels(src, STREAM) for op in f.walk())
