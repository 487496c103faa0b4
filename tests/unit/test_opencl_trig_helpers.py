"""f32 vector sin/cos are printed as one out-of-line helper a function and
width (`accy_sin_float16`, ...), defined once before the kernels and called
at each use: inlined, each use was the vector built-in plus W scalar ones,
and PoCL took a minute to build 200 chained sins of float16 (issue 19's
sweep). Built and run on the first OpenCL device (PoCL here), exact in every
lane beside huge ones."""

from __future__ import annotations

import re

import numpy as np
import pytest
from test_opencl_emitter import _context, parse, run_kernel

from accy.backends.opencl.emitter import emit_opencl

cl = pytest.importorskip("pyopencl")

N = 48  # elements a buffer: 3 float16s, 16 float3s


@pytest.fixture(scope="module")
def ctx():
    return _context()


def _chain(fns: list[str], width: int, name: str) -> str:
    """A kernel applying `fns` in turn to a vector<width x f32> of buffer 0, into buffer 1."""
    body = [f"%x0 = vector.load %a[%base] : memref<{N}xf32>, vector<{width}xf32>"]
    for i, fn in enumerate(fns):
        body.append(f"%x{i + 1} = math.{fn} %x{i} : vector<{width}xf32>")
    body.append(f"vector.store %x{len(fns)}, %b[%base] : memref<{N}xf32>, vector<{width}xf32>")
    lines = "\n      ".join(body)
    return f"""
    "gpu.func"() <{{function_type = (memref<{N}xf32>, memref<{N}xf32>) -> (), kernel}}> ({{
    ^bb0(%a: memref<{N}xf32>, %b: memref<{N}xf32>):
      %gid = "gpu.global_id"() <{{dimension = #gpu<dim x>}}> : () -> index
      %w = arith.constant {width} : index
      %base = arith.muli %gid, %w : index
      {lines}
      "gpu.return"() : () -> ()
    }}) {{sym_name = "{name}"}} : () -> ()"""


def _module(*kernels: str) -> str:
    return f"""builtin.module attributes {{gpu.container_module}} {{
  "gpu.module"() <{{sym_name = "kernels"}}> ({{{"".join(kernels)}
  }}) : () -> ()
}}"""


def test_each_use_is_one_call_of_a_helper_defined_once_before_the_kernels() -> None:
    uses = 200
    fns = ["sin", "cos"] * (uses // 2)
    source = emit_opencl(parse(_module(_chain(fns, 16, "k16"), _chain(["sin"] * 5, 3, "k3"))))
    helpers = re.findall(r"^float(\d+) (accy_\w+)\(float\1 x\) \{$", source, re.M)
    assert sorted(name for _, name in helpers) == ["accy_cos_float16", "accy_sin_float16", "accy_sin_float3"]
    first_kernel = source.index("__kernel")
    for _, name in helpers:
        assert source.index(name) < first_kernel  # defined before any use: valid C on every compiler
    assert source.count("accy_sin_float16(") == 1 + uses // 2
    assert source.count("accy_cos_float16(") == 1 + uses // 2
    assert source.count("accy_sin_float3(") == 1 + 5
    # The scalar per-lane calls live only in the helpers: 16 + 16 + 3 of them.
    assert len(re.findall(r"\b(?:sin|cos)\(x\.s[0-9a-f]\)", source)) == 35
    assert len(re.findall(r"\.s[0-9a-f]\)", source)) == 35


def test_f64_and_f16_vectors_call_the_built_in() -> None:
    f64 = _chain(["sin"], 4, "k").replace("f32", "f64")
    source = emit_opencl(parse(_module(f64)))
    assert "accy_" not in source
    assert re.search(r"double4 v\d+ = sin\(v\d+\);", source)


@pytest.mark.parametrize("width", [2, 3, 4, 8, 16])
def test_helpers_run_exact_beside_huge_lanes(ctx, width: int) -> None:
    """Two kernels share the helpers (one definition each in the program);
    a huge or infinite lane sits in most vectors beside small ones."""
    n = N // width * width
    x = np.resize(np.array([1e-10, 1.0, np.inf, 1e10, -3.0, 1e20, 0.5, -1e-10, 100.0], np.float32), N)
    source = emit_opencl(parse(_module(_chain(["sin", "cos"], width, "ka"), _chain(["cos"], width, "kb"))))
    assert source.count(f"float{width} accy_cos_float{width}(float{width} x) {{") == 1
    with np.errstate(invalid="ignore"):
        want_a = np.cos(np.sin(x[:n].astype(np.float64)))
        want_b = np.cos(x[:n].astype(np.float64))
    for name, want in (("ka", want_a), ("kb", want_b)):
        _, got = run_kernel(ctx, source, name, [x, np.zeros(N, np.float32)], (N // width,))
        got = got[:n].astype(np.float64)
        assert np.array_equal(np.isnan(got), np.isnan(want))
        ok = ~np.isnan(want)
        assert np.allclose(got[ok], want[ok], rtol=1e-6, atol=1e-7), (name, got, want)
