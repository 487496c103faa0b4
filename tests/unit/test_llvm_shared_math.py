"""The LLVM backend's shared math functions (`emitter.SHARED_MATH_SITES`):
a kernel computing one vector_math function of one type at many sites (a
register tile's unrolled epilogue) calls one internal function of its
module, with the same results bit for bit as the inlined operations; fewer
sites stay inlined."""

from __future__ import annotations

import re

import numpy as np
import pytest

import accy
from accy.backends.llvm import emitter

#: x·w then an elementwise function: the dot's register tile (several rows a
#: work-item) computes it once per row of the tile.
PROGRAM = """func.func @main(%x: tensor<ROWSxKxf32>, %w: tensor<KxNxf32>) -> tensor<ROWSxNxf32> {
  %d = "accy.dot_general"(%x, %w) <{lhs_batch = array<i64>, rhs_batch = array<i64>, lhs_contract = array<i64: 1>, rhs_contract = array<i64: 0>}> : (tensor<ROWSxKxf32>, tensor<KxNxf32>) -> tensor<ROWSxNxf32>
  %y = "accy.FN"(%d) : (tensor<ROWSxNxf32>) -> tensor<ROWSxNxf32>
  func.return %y : tensor<ROWSxNxf32>
}"""


def _program(fn: str, rows: int, k: int, n: int) -> str:
    return PROGRAM.replace("ROWS", str(rows)).replace("FN", fn).replace("K", str(k)).replace("N", str(n))


def _run(program: str, x: np.ndarray, w: np.ndarray) -> tuple[np.ndarray, str]:
    exe = accy.compile(program, device="llvm")
    (got,) = exe(x, w)
    assert exe.stats.fallbacks == 0
    return got, "\n".join(exe.program.sources.values())


@pytest.mark.parametrize("fn", ["erf", "exp", "tanh", "sigmoid", "gelu"])
@pytest.mark.parametrize(("rows", "k", "n"), [(8, 32, 64), (13, 32, 64), (9, 40, 80)])
def test_many_sites_call_one_function_with_the_inlined_results(fn: str, rows: int, k: int, n: int, monkeypatch) -> None:
    monkeypatch.setenv("ACCY_CACHE_DIR", "off")
    rng = np.random.default_rng(rows)
    x = rng.standard_normal((rows, k)).astype(np.float32)
    w = (rng.standard_normal((k, n)) / 2).astype(np.float32)
    program = _program(fn, rows, k, n)
    shared, source = _run(program, x, w)
    definitions = re.findall(r"define internal [^@]*@\"?accy\.\w+\.\w+\.f32x\d+", source)
    calls = re.findall(r"call [^@]*@\"?accy\.\w+\.\w+\.f32x\d+", source)
    assert len(definitions) >= 1 and len(calls) >= emitter.SHARED_MATH_SITES, (definitions, len(calls))
    monkeypatch.setattr(emitter, "SHARED_MATH_SITES", 10**9)
    inlined, source = _run(program, x, w)
    assert "accy." + ("erf" if fn == "gelu" else fn) not in re.findall(r"@\"?(accy\.\w+)", source)
    np.testing.assert_array_equal(shared.view(np.uint32), inlined.view(np.uint32))
    (expected,) = accy.compile(program, device="reference")(x, w)
    np.testing.assert_allclose(shared, expected, rtol=1e-5, atol=1e-6)


def test_a_site_or_two_stay_inlined(monkeypatch) -> None:
    """An elementwise kernel's loop computes exp at one site: no function of its own."""
    monkeypatch.setenv("ACCY_CACHE_DIR", "off")
    program = """func.func @main(%x: tensor<1000xf32>) -> tensor<1000xf32> {
  %y = "accy.exp"(%x) : (tensor<1000xf32>) -> tensor<1000xf32>
  func.return %y : tensor<1000xf32>
}"""
    x = np.linspace(-20, 20, 1000, dtype=np.float32)
    exe = accy.compile(program, device="llvm")
    (got,) = exe(x)
    assert "define internal" not in "\n".join(exe.program.sources.values())
    np.testing.assert_allclose(got, np.exp(x), rtol=2e-6)
