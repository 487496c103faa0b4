"""A splat literal costs what a scalar costs, whatever its shape (issue 19):
xDSL's parse expanded `dense<1.0> : tensor<4000x4000xf32>` into 16M Python
floats (1.35 GB, 5.6 s) and a 20000x20000 one was killed by the OOM killer.
accy's parser stores a splat as its one element (accy.dialects.dense)."""

from __future__ import annotations

import io
import time
import tracemalloc

import numpy as np
import pytest

import accy
from accy.dialects.dense import DensePrinter, splat_value
from accy.passes.registry import get_pass
from accy.reference import dense_to_numpy
from accy.reference.constants import dense_view


def _splat_program(shape: tuple[int, ...], literal: str = "dense<1.0>") -> str:
    t = f"tensor<{'x'.join(map(str, shape))}xf32>"
    return (
        f"func.func @main() -> {t} {{\n"
        f'  %c = "accy.constant"() <{{value = {literal} : {t}}}> : () -> {t}\n'
        f"  func.return %c : {t}\n}}"
    )


@pytest.mark.parametrize("literal", ["dense<1.0>", "dense<0xFF800000>", 'dense<"0x0000803F">'])
def test_huge_splat_parses_prints_and_canonicalizes_in_small_memory(literal: str) -> None:
    accy.parse_module(_splat_program((2, 2)))  # the context and dialects, once
    tracemalloc.start()
    start = time.perf_counter()
    try:
        module = accy.parse_module(_splat_program((20000, 20000), literal))
        accy.PassManager([get_pass("canonicalize")(), get_pass("cse")()]).run(module)
        text = io.StringIO()
        DensePrinter(stream=text).print_op(module)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    seconds = time.perf_counter() - start
    (op,) = [op for op in module.walk() if op.name == "accy.constant"]
    assert len(op.value.data.data) == 4  # one element stored
    assert "tensor<20000x20000xf32>" in text.getvalue() and "dense<" in text.getvalue()
    assert peak < 16 * 2**20, f"{peak / 2**20:.0f} MB"
    assert seconds < 5.0  # generous for a loaded machine: it was minutes (or OOM)


def test_splat_reads_as_its_value_everywhere() -> None:
    module = accy.parse_module(_splat_program((3, 5), "dense<2.5>"))
    (op,) = [op for op in module.walk() if op.name == "accy.constant"]
    assert splat_value(op.value) == 2.5
    view = dense_view(op.value)
    assert view.shape == (3, 5) and not view.flags.writeable
    full = dense_to_numpy(op.value)
    assert full.flags.writeable and np.array_equal(full, np.full((3, 5), 2.5, np.float32))
    empty = accy.parse_module(_splat_program((0, 5), "dense<2.5>"))
    (op,) = [op for op in empty.walk() if op.name == "accy.constant"]
    assert dense_to_numpy(op.value).shape == (0, 5)


def test_huge_splat_reference_run_is_a_broadcast() -> None:
    """The reference interpreter reads a splat as a broadcast view: the row
    maxima of a 4000x4000 splat take a few KB, not the 64 MB literal."""
    n = 4000
    t = f"tensor<{n}x{n}xf32>"
    src = f"""
func.func @main() -> tensor<{n}xf32> {{
  %c = "accy.constant"() <{{value = dense<1.5> : {t}}}> : () -> {t}
  %y = "accy.reduce"(%c) <{{kind = "max", axes = array<i64: 1>}}> : ({t}) -> tensor<{n}xf32>
  func.return %y : tensor<{n}xf32>
}}"""
    exe = accy.compile(src, device="reference")
    tracemalloc.start()
    try:
        (y,) = exe()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    np.testing.assert_array_equal(y, np.full(n, 1.5, np.float32))
    assert peak < 8 * 2**20, f"{peak / 2**20:.0f} MB"


@pytest.mark.parametrize("device", ["llvm", "opencl"])
def test_huge_splat_added_to_an_input_runs(device: str) -> None:
    n = 4000
    t = f"tensor<{n}x{n}xf32>"
    src = f"""
func.func @main(%x: {t}) -> {t} {{
  %c = "accy.constant"() <{{value = dense<0xFF800000> : {t}}}> : () -> {t}
  %h = "accy.constant"() <{{value = dense<0.5> : {t}}}> : () -> {t}
  %m = "accy.max"(%x, %c) : ({t}, {t}) -> {t}
  %y = "accy.add"(%m, %h) : ({t}, {t}) -> {t}
  func.return %y : {t}
}}"""
    x = np.random.default_rng(1).standard_normal((n, n)).astype(np.float32)
    tracemalloc.start()
    try:
        exe = accy.compile(src, device=device)
        _, compile_peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    (y,) = exe(x)
    assert exe.stats.fallbacks == 0 and exe.stats.kernels == 1
    np.testing.assert_array_equal(np.asarray(y), x + np.float32(0.5))
    assert compile_peak < 32 * 2**20, f"compiling took {compile_peak / 2**20:.0f} MB"
