"""`accy.cmp` on `i1` orders false < true, as numpy orders bools (issue 19):
kernel IR once compared i1 signed, where `true` is -1, and inverted lt, le,
gt and ge on the LLVM device and on OpenCL's vector path. Every predicate,
at sizes below, at and past a vector width, on every device; also a
compare of masks feeding a select of masks and a reduction's prologue."""

from __future__ import annotations

import numpy as np
import pytest
from check import check, ty

from accy.runtime.device import Device

PREDICATES = ("eq", "ne", "lt", "le", "gt", "ge")


def _masks(shape: tuple[int, ...], seed: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    a, b = (rng.integers(0, 2, shape).astype(bool) for _ in range(2))
    # Every pair of (a, b) at the front, whatever the draw.
    flat_a, flat_b = a.reshape(-1), b.reshape(-1)
    pairs = [(False, False), (True, False), (False, True), (True, True)]
    for i, (x, y) in enumerate(pairs[: flat_a.size]):
        flat_a[i], flat_b[i] = x, y
    return [a, b]


@pytest.mark.parametrize("n", [1, 3, 16, 17, 32, 1023])
def test_every_predicate_on_masks(device: Device, n: int) -> None:
    t = ty([n], "i1")
    lines = [f'  %{p} = "accy.cmp"(%a, %b) <{{predicate = "{p}"}}> : ({t}, {t}) -> {t}' for p in PREDICATES]
    results = ", ".join(f"%{p}" for p in PREDICATES)
    src = (
        f"func.func @main(%a: {t}, %b: {t}) -> ({', '.join([t] * len(PREDICATES))}) {{\n"
        + "\n".join(lines)
        + f"\n  func.return {results} : {', '.join([t] * len(PREDICATES))}\n}}"
    )
    check(src, _masks((n,), n), device)


@pytest.mark.parametrize("n", [3, 33])
def test_mask_compare_feeds_select_and_reduction(device: Device, n: int) -> None:
    t, tf, row = ty([4, n], "i1"), ty([4, n]), ty([4])
    src = f"""
func.func @main(%a: {t}, %b: {t}) -> ({t}, {row}) {{
  %lt = "accy.cmp"(%a, %b) <{{predicate = "lt"}}> : ({t}, {t}) -> {t}
  %ge = "accy.cmp"(%a, %b) <{{predicate = "ge"}}> : ({t}, {t}) -> {t}
  %s = "accy.select"(%lt, %ge, %a) : ({t}, {t}, {t}) -> {t}
  %f = "accy.cast"(%lt) : ({t}) -> {tf}
  %r = "accy.reduce"(%f) <{{kind = "sum", axes = array<i64: 1>}}> : ({tf}) -> {row}
  func.return %s, %r : {t}, {row}
}}"""
    check(src, _masks((4, n), n), device)
