"""Long programs: nothing in the compiler recurses on program length (about
330 fused elementwise ops used to end in RecursionError). Chains of ~2000
ops, fused into kernels of at most `MAX_FUSED_OPS` ops, alone, around a
row pipeline, and through long chains of views, each checked against the reference interpreter on random
inputs of odd sizes, on both target profiles."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np
import pytest
from check import check, ty

from accy.passes.analyses.schedule import MAX_FUSED_OPS

sys.path.insert(0, str(Path(__file__).parents[2] / "tools"))
from compile_cost import elementwise_chain, row_pipeline_chain  # noqa: E402

LENGTH = 2000


def _inputs(shape: tuple[int, ...], n: int, seed: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(shape).astype(np.float32) for _ in range(n)]


def test_long_elementwise_chain(device) -> None:
    """2001 elementwise ops over 17x33: kernels of `MAX_FUSED_OPS` ops, one after the other."""
    kernels = math.ceil((LENGTH + 1) / MAX_FUSED_OPS)
    check(elementwise_chain(LENGTH, (17, 33)), _inputs((17, 33), 2, 0), device, kernels=kernels)


def test_long_chain_through_a_row_pipeline(device) -> None:
    """1000 elementwise ops, a softmax over rows of 31, 1000 more: a
    row-pipeline kernel with elementwise kernels around it (at most
    `MAX_FUSED_OPS` ops each)."""
    check(row_pipeline_chain(LENGTH, (5, 31)), _inputs((5, 31), 2, 1), device)


@pytest.mark.parametrize("returned", [False, True])
def test_long_chain_of_views(device, returned: bool) -> None:
    """x * 2 through 1000 transposes (views), added to y or returned as
    they are (a value returned through a chain of views)."""
    n, m = 7, 9
    a, b = ty([n, m]), ty([m, n])
    lines = [f'%v0 = "accy.add"(%x, %x) : ({a}, {a}) -> {a}']
    for i in range(1, 1001):
        src, dst = (a, b) if i % 2 else (b, a)
        lines.append(f'%v{i} = "accy.transpose"(%v{i - 1}) <{{permutation = array<i64: 1, 0>}}> : ({src}) -> {dst}')
    if returned:
        lines.append(f"func.return %v1000 : {a}")
    else:
        lines.append(f'%r = "accy.add"(%v1000, %y) : ({a}, {a}) -> {a}')
        lines.append(f"func.return %r : {a}")
    body = "\n  ".join(lines)
    src = f"func.func @main(%x: {a}, %y: {a}) -> {a} {{\n  {body}\n}}"
    check(src, _inputs((n, m), 2, 2), device)
