"""The OpenCL C backend: hand-written kernel IR, printed, built and run on the
first OpenCL device (PoCL here) with pyopencl, compared with numpy."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from xdsl.parser import Parser

from accy.backends.opencl.emitter import OpenCLEmitError, emit_opencl, float_literal
from accy.dialects.context import make_context

cl = pytest.importorskip("pyopencl")

LIT = Path(__file__).parents[1] / "lit" / "opencl"


def _context():
    from accy.runtime.opencl import opencl_devices

    # Through the runtime, so that PoCL starts with accy's private cache folder
    # (test_opencl_runtime checks that folder in the same process).
    devices = opencl_devices()
    if not devices:
        pytest.skip("no OpenCL device")
    return cl.Context([devices[0]])


@pytest.fixture(scope="module")
def ctx():
    return _context()


def parse(text: str):
    module = Parser(make_context(), text).parse_module()
    module.verify()
    return module


def run_kernel(ctx, source: str, name: str, arrays: list[np.ndarray], global_size, local_size=None):
    """Runs kernel `name` over copies of `arrays` (one per argument); returns them after the run."""
    program = cl.Program(ctx, source).build()
    queue = cl.CommandQueue(ctx)
    flags = cl.mem_flags.READ_WRITE | cl.mem_flags.COPY_HOST_PTR
    bufs = [cl.Buffer(ctx, flags, hostbuf=np.ascontiguousarray(a)) for a in arrays]
    kernel = cl.Kernel(program, name)
    kernel.set_args(*bufs)
    cl.enqueue_nd_range_kernel(queue, kernel, global_size, local_size)
    out = [np.empty_like(a) for a in arrays]
    for host, buf in zip(out, bufs, strict=True):
        cl.enqueue_copy(queue, host, buf)
    queue.finish()
    return out


@pytest.fixture(scope="module")
def kernels_mlir():
    return parse((LIT / "kernels.mlir").read_text())


def test_vectorized_elementwise_runs(ctx, kernels_mlir):
    rng = np.random.default_rng(0)
    a, b = (rng.standard_normal(64).astype(np.float32) for _ in range(2))
    _, _, c = run_kernel(ctx, emit_opencl(kernels_mlir), "main_k0_elementwise", [a, b, np.zeros(64, np.float32)], (4,))
    np.testing.assert_allclose(c, np.exp(a) * b + 0.5, rtol=1e-5, atol=1e-6)


def test_loop_with_iter_args_runs(ctx, kernels_mlir):
    rng = np.random.default_rng(1)
    a = rng.standard_normal(51).astype(np.float32)
    _, out = run_kernel(ctx, emit_opencl(kernels_mlir), "main_k1_reduction", [a, np.zeros(3, np.float32)], (3,))
    rows = a.reshape(3, 17)
    # The kernel starts its max at 0.0, so the max is max(0, row max).
    np.testing.assert_allclose(out, rows.sum(1) + np.maximum(rows.max(1), 0), rtol=1e-5, atol=1e-5)


def test_local_memory_and_barrier_run(ctx, kernels_mlir):
    rng = np.random.default_rng(2)
    a = rng.standard_normal(32).astype(np.float32)
    _, out = run_kernel(ctx, emit_opencl(kernels_mlir), "main_k2_local", [a, np.zeros(32, np.float32)], (32,), (32,))
    np.testing.assert_array_equal(out, np.abs(a[::-1]))


def test_masks_casts_private_arrays_and_swapped_iter_args_run(ctx):
    module = parse((LIT / "types.mlir").read_text())
    rng = np.random.default_rng(3)
    a = rng.standard_normal(8) * 10
    _, mask, out = run_kernel(
        ctx, emit_opencl(module), "main_k0_mixed", [a, np.zeros(8, np.int8), np.zeros(4, np.int32)], (1,)
    )
    x2, y1 = a[2], a[5]
    assert mask[1] == int(x2 < y1) and mask[0] == 0
    t = int(np.trunc(min(x2, y1) if x2 < y1 else y1))
    fib = 8  # (1, 1) -> (1, 2) -> (2, 3) -> (3, 5) -> (5, 8)
    if t != 0:
        assert out[0] == int(fib / t)


ELEMENTWISE = """
builtin.module attributes {{gpu.container_module}} {{
  "gpu.module"() <{{sym_name = "kernels"}}> ({{
    "gpu.func"() <{{function_type = (memref<{n}xf32>, memref<{n}xf32>, memref<{n}xf32>, memref<{n}xi8>) -> (), kernel}}> ({{
    ^bb0(%a: memref<{n}xf32>, %b: memref<{n}xf32>, %out: memref<{n}xf32>, %neg: memref<{n}xi8>):
      %i = "gpu.global_id"() <{{dimension = #gpu<dim x>}}> : () -> index
      %x = memref.load %a[%i] : memref<{n}xf32>
      %y = memref.load %b[%i] : memref<{n}xf32>
      %t = math.tanh %x : f32
      %e = math.erf %y : f32
      %ax = math.absf %x : f32
      %p = math.powf %ax, %y : f32
      %f = math.fma %t, %e, %p : f32
      %s = math.sqrt %ax : f32
      %r = math.rsqrt %ax : f32
      %sr = arith.mulf %s, %r : f32
      %fl = math.floor %y : f32
      %cl = math.ceil %y : f32
      %d = arith.subf %cl, %fl : f32
      %g = arith.addf %f, %d : f32
      %h = arith.addf %g, %sr : f32
      %mn = arith.minimumf %x, %y : f32
      %o = arith.addf %h, %mn : f32
      memref.store %o, %out[%i] : memref<{n}xf32>
      %zero = arith.constant 0.0 : f32
      %lt = arith.cmpf olt, %x, %zero : f32
      %m = arith.extui %lt : i1 to i8
      memref.store %m, %neg[%i] : memref<{n}xi8>
      "gpu.return"() : () -> ()
    }}) {{sym_name = "main_k0_math", accy.kind = "elementwise"}} : () -> ()
  }}) : () -> ()
}}
"""


@pytest.mark.parametrize("n", [1, 3, 17])
def test_math_builtins_at_odd_sizes(ctx, n):
    module = parse(ELEMENTWISE.format(n=n))
    rng = np.random.default_rng(n)
    a = rng.standard_normal(n).astype(np.float32)
    b = rng.standard_normal(n).astype(np.float32)
    _, _, out, neg = run_kernel(
        ctx, emit_opencl(module), "main_k0_math", [a, b, np.zeros(n, np.float32), np.zeros(n, np.int8)], (n,)
    )
    erf = np.vectorize(math.erf)(b.astype(np.float64))
    ax = np.abs(a.astype(np.float64))
    want = (
        np.tanh(a) * erf + ax**b + (np.ceil(b) - np.floor(b)) + np.sqrt(ax) / np.sqrt(ax) + np.minimum(a, b)
    )
    np.testing.assert_allclose(out, want, rtol=1e-4, atol=1e-5)
    np.testing.assert_array_equal(neg, (a < 0).astype(np.int8))


def test_maximumf_propagates_nan(ctx):
    text = """
builtin.module attributes {gpu.container_module} {
  "gpu.module"() <{sym_name = "kernels"}> ({
    "gpu.func"() <{function_type = (memref<32xf32>, memref<32xf32>, memref<2xf32>) -> (), kernel}> ({
    ^bb0(%a: memref<32xf32>, %b: memref<32xf32>, %out: memref<2xf32>):
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c16 = arith.constant 16 : index
      %x = vector.load %a[%c0] : memref<32xf32>, vector<16xf32>
      %y = vector.load %a[%c16] : memref<32xf32>, vector<16xf32>
      %m = arith.maximumf %x, %y : vector<16xf32>
      vector.store %m, %b[%c0] : memref<32xf32>, vector<16xf32>
      %r = vector.reduction <maximumf>, %m : vector<16xf32> into f32
      memref.store %r, %out[%c0] : memref<2xf32>
      %s = vector.reduction <add>, %x : vector<16xf32> into f32
      memref.store %s, %out[%c1] : memref<2xf32>
      "gpu.return"() : () -> ()
    }) {sym_name = "k"} : () -> ()
  }) : () -> ()
}
"""
    rng = np.random.default_rng(4)
    a = rng.standard_normal(32).astype(np.float32)
    a[20] = np.nan
    _, b, out = run_kernel(ctx, emit_opencl(parse(text)), "k", [a, np.zeros(32, np.float32), np.zeros(2, np.float32)], (1,))
    np.testing.assert_array_equal(b[:16], np.maximum(a[:16], a[16:]))  # NaN at lane 4
    assert np.isnan(out[0])
    np.testing.assert_allclose(out[1], a[:16].sum(), rtol=1e-5)


def test_unsupported_op_is_declined_by_name():
    text = """
builtin.module {
  "gpu.module"() <{sym_name = "kernels"}> ({
    "gpu.func"() <{function_type = (memref<4xf32>) -> (), kernel}> ({
    ^bb0(%a: memref<4xf32>):
      %c0 = arith.constant 0 : index
      %x = memref.load %a[%c0] : memref<4xf32>
      %y = math.ctlz %c0 : index
      "gpu.return"() : () -> ()
    }) {sym_name = "k"} : () -> ()
  }) : () -> ()
}
"""
    with pytest.raises(OpenCLEmitError, match=r"kernel @k: cannot emit 'math.ctlz'"):
        emit_opencl(parse(text))


@pytest.mark.parametrize(
    ("value", "text"),
    [(1.0, "1.0f"), (0.1, "0.1f"), (-2.5, "(-2.5f)"), (1e20, "1e+20f"), (float("inf"), "INFINITY"), (float("nan"), "NAN")],
)
def test_float_literals_are_valid_c(value, text):
    from xdsl.dialects.builtin import f32

    assert float_literal(value, f32) == text


# numpy semantics of every arith comparison predicate (ordered ones are false on NaN).
FLOAT_SEMANTICS = {
    "false": lambda a, b: np.zeros_like(a, bool),
    "oeq": np.equal, "ogt": np.greater, "oge": np.greater_equal, "olt": np.less, "ole": np.less_equal,
    "one": lambda a, b: (a < b) | (a > b),
    "ord": lambda a, b: ~(np.isnan(a) | np.isnan(b)),
    "ueq": lambda a, b: ~((a < b) | (a > b)),
    "ugt": lambda a, b: ~(a <= b), "uge": lambda a, b: ~(a < b),
    "ult": lambda a, b: ~(a >= b), "ule": lambda a, b: ~(a > b),
    "une": np.not_equal,
    "uno": lambda a, b: np.isnan(a) | np.isnan(b),
    "true": lambda a, b: np.ones_like(a, bool),
}  # fmt: skip
INT_SEMANTICS = {
    "eq": np.equal, "ne": np.not_equal, "slt": np.less, "sle": np.less_equal, "sgt": np.greater,
    "sge": np.greater_equal,
    "ult": lambda a, b: a.view(np.uint32) < b.view(np.uint32),
    "ule": lambda a, b: a.view(np.uint32) <= b.view(np.uint32),
    "ugt": lambda a, b: a.view(np.uint32) > b.view(np.uint32),
    "uge": lambda a, b: a.view(np.uint32) >= b.view(np.uint32),
}  # fmt: skip


def _comparison_kernel(op: str, elem: str, predicates: list[str], n: int) -> str:
    body = []
    for k, pred in enumerate(predicates):
        body.append(f"      %c{k} = arith.constant {k * n} : index")
        body.append(f"      %j{k} = arith.addi %i, %c{k} : index")
        body.append(f"      %r{k} = arith.{op} {pred}, %x, %y : {elem}")
        body.append(f"      %m{k} = arith.extui %r{k} : i1 to i8")
        body.append(f"      memref.store %m{k}, %out[%j{k}] : memref<{n * len(predicates)}xi8>")
    m = n * len(predicates)
    return f"""
builtin.module {{
  "gpu.module"() <{{sym_name = "kernels"}}> ({{
    "gpu.func"() <{{function_type = (memref<{n}x{elem}>, memref<{n}x{elem}>, memref<{m}xi8>) -> (), kernel}}> ({{
    ^bb0(%a: memref<{n}x{elem}>, %b: memref<{n}x{elem}>, %out: memref<{m}xi8>):
      %i = "gpu.global_id"() <{{dimension = #gpu<dim x>}}> : () -> index
      %x = memref.load %a[%i] : memref<{n}x{elem}>
      %y = memref.load %b[%i] : memref<{n}x{elem}>
{chr(10).join(body)}
      "gpu.return"() : () -> ()
    }}) {{sym_name = "k"}} : () -> ()
  }}) : () -> ()
}}
"""


@pytest.mark.parametrize(
    ("op", "elem", "semantics", "a", "b"),
    [
        ("cmpf", "f32", FLOAT_SEMANTICS, [1.0, 1.0, 2.0, np.nan, 0.0, np.nan, -0.0], [1.0, 2.0, 1.0, 1.0, np.nan, np.nan, 0.0]),
        ("cmpi", "i32", INT_SEMANTICS, [1, 1, 2, -1, 3, -5, 0], [1, 2, 1, 3, -1, -5, -7]),
    ],
)
def test_every_comparison_predicate_runs_as_arith_defines_it(ctx, op, elem, semantics, a, b):
    dtype = np.float32 if elem == "f32" else np.int32
    a, b = np.array(a, dtype), np.array(b, dtype)
    n, predicates = len(a), list(semantics)
    source = emit_opencl(parse(_comparison_kernel(op, elem, predicates, n)))
    _, _, out = run_kernel(ctx, source, "k", [a, b, np.zeros(n * len(predicates), np.int8)], (n,))
    for k, pred in enumerate(predicates):
        np.testing.assert_array_equal(out[k * n : (k + 1) * n], semantics[pred](a, b).astype(np.int8), err_msg=pred)


def test_a_target_format_other_than_opencl_c_is_refused(kernels_mlir):
    from accy.dialects.target import TargetAttr

    kernels_mlir.attributes["accy.target"] = TargetAttr.from_fields({"format": "llvm-ir"})
    try:
        with pytest.raises(OpenCLEmitError, match=r"target asks for format 'llvm-ir', but this backend prints 'opencl-c'"):
            emit_opencl(kernels_mlir)
    finally:
        del kernels_mlir.attributes["accy.target"]
    assert "__kernel" in emit_opencl(kernels_mlir)
