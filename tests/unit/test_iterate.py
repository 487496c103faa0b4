"""`accy.iterate` as a loop of kernels (kernelize's `_iterate`, the runtime's
`Loop` and `Copy` steps), on PoCL and the LLVM device with poisoned
buffers, against the reference interpreter, with `strict` (no work item on
the host path) unless a test says otherwise.

Drawn to catch what a ping-pong of buffers can confuse: even and odd trip
counts (which of the two buffers holds the result), 0 and 1 trips, carried
values that swap places or come back unchanged, an outer value or one value
yielded for two carried values, carried values of two dtypes and of
different sizes, inits that are views, literals or the same value twice,
results read by later kernels and returned, nested loops and loops whose
invariant work is hoisted, device arrays in and out, and stats that count
the body's kernels once and its launches once per trip."""

from __future__ import annotations

import numpy as np
import pytest

import accy
from accy.runtime.disk_cache import DiskCache


@pytest.fixture(scope="module", params=["opencl", "llvm"])
def device(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory):
    if request.param == "opencl":
        pytest.importorskip("pyopencl")
        from accy.runtime import opencl as ocl

        if not ocl.opencl_devices():
            pytest.skip("no OpenCL device")
        return ocl.OpenCLDevice(poison=True)
    pytest.importorskip("llvmlite.binding")
    from accy.runtime import llvm as llvm_runtime

    cache = DiskCache(llvm_runtime.OBJECT_CACHE_NAMESPACE, tmp_path_factory.mktemp("accy-cache"))
    return llvm_runtime.LLVMDevice(poison=True, object_cache=cache)


def ty(shape: tuple[int, ...], et: str = "f32") -> str:
    return f"tensor<{'x'.join(map(str, shape))}{'x' if shape else ''}{et}>"


DOT = "lhs_batch = array<i64>, rhs_batch = array<i64>, lhs_contract = array<i64: 1>, rhs_contract = array<i64: 0>"


def run(src: str, device, seed: int = 0, strict: bool = True, **kwargs: object) -> accy.Executable:
    """Compiles and calls `src`, checks every result against the reference; the executable."""
    exe = accy.compile(src, device=device, strict=strict)
    inputs = exe.random_inputs(seed)
    outs = exe(*inputs, **kwargs)
    for got, want in zip(outs, exe.reference_outputs(inputs), strict=True):
        got = np.asarray(got)
        assert got.shape == want.shape and got.dtype == want.dtype
        if want.dtype.kind == "f":
            np.testing.assert_allclose(got, want, rtol=2e-5, atol=2e-5)
        else:
            np.testing.assert_array_equal(got, want)
    return exe


def rnn(batch: int, hidden: int, count: int, init: str = "arg") -> str:
    """h = tanh(h·W + x·U + b) `count` times; x·U is loop-invariant."""
    h, w, b = ty((batch, hidden)), ty((hidden, hidden)), ty((hidden,))
    start = {
        "arg": "%h0",
        "zeros": "%z",
        "transposed": "%ht",
    }[init]
    return f"""
func.func @main(%h0: {h}, %w: {ty((hidden, hidden))}, %x: {h}, %u: {w}, %b: {b}) -> ({h}, {h}) {{
  %z = "accy.constant"() <{{value = dense<0.0> : {h}}}> : () -> {h}
  %ht = "accy.transpose"(%h0) <{{permutation = array<i64: 1, 0>}}> : ({h}) -> {ty((hidden, batch))}
  %bb = "accy.broadcast"(%b) <{{dims = array<i64: 1>}}> : ({b}) -> {h}
  %r = "accy.iterate"({start}) <{{count = {count} : i64}}> ({{
  ^bb0(%hi: {h}):
    %m = "accy.dot_general"(%hi, %w) <{{{DOT}}}> : ({h}, {w}) -> {h}
    %xu = "accy.dot_general"(%x, %u) <{{{DOT}}}> : ({h}, {w}) -> {h}
    %s = "accy.add"(%m, %xu) : ({h}, {h}) -> {h}
    %s2 = "accy.add"(%s, %bb) : ({h}, {h}) -> {h}
    %t = "accy.tanh"(%s2) : ({h}) -> {h}
    "accy.yield"(%t) : ({h}) -> ()
  }}) : ({h}) -> {h}
  %n = "accy.neg"(%r) : ({h}) -> {h}
  func.return %r, %n : {h}, {h}
}}"""


@pytest.mark.parametrize("count", [0, 1, 2, 5])
@pytest.mark.parametrize(("batch", "hidden"), [(3, 17), (4, 4), (1, 33)])
def test_rnn_cell(device, batch: int, hidden: int, count: int) -> None:
    exe = run(rnn(batch, hidden, count), device, seed=count)
    # Outside the loop: x·U (hoisted) and the negation; inside: one kernel
    # (dot, + x·U, + bias, tanh) launched once a trip.
    loops = [step for step in exe.program.schedule.steps if type(step).__name__ == "Loop"]  # type: ignore[attr-defined]
    assert len(loops) == 1 and loops[0].count == count
    assert exe.stats.kernels == 3 and exe.stats.launches == 2 + count and exe.stats.fallbacks == 0


@pytest.mark.parametrize("init", ["zeros", "transposed"])
def test_rnn_initial_state(device, init: str) -> None:
    src = rnn(4, 4, 3, init) if init == "transposed" else rnn(4, 8, 3, init)
    run(src, device, seed=1)


SWAP = """
func.func @main(%a0: tensor<5xf32>, %b0: tensor<5xf32>, %c0: tensor<1xi32>) -> (tensor<5xf32>, tensor<5xf32>, tensor<1xi32>) {{
  %a, %b, %c = "accy.iterate"(%a0, %b0, %c0) <{{count = {count} : i64}}> ({{
  ^bb0(%x: tensor<5xf32>, %y: tensor<5xf32>, %n: tensor<1xi32>):
    %one = "accy.constant"() <{{value = dense<1> : tensor<1xi32>}}> : () -> tensor<1xi32>
    %m = "accy.add"(%n, %one) : (tensor<1xi32>, tensor<1xi32>) -> tensor<1xi32>
    %t = "accy.tanh"(%x) : (tensor<5xf32>) -> tensor<5xf32>
    "accy.yield"(%y, %t, %m) : (tensor<5xf32>, tensor<5xf32>, tensor<1xi32>) -> ()
  }}) : (tensor<5xf32>, tensor<5xf32>, tensor<1xi32>) -> (tensor<5xf32>, tensor<5xf32>, tensor<1xi32>)
  func.return %a, %b, %c : tensor<5xf32>, tensor<5xf32>, tensor<1xi32>
}}"""


@pytest.mark.parametrize("count", [0, 1, 2, 3, 4])
def test_carried_values_that_swap_places(device, count: int) -> None:
    """(a, b) -> (b, tanh(a)), and an i32 trip counter beside them."""
    run(SWAP.format(count=count), device, seed=count)


YIELDS = """
func.func @main(%x: tensor<6xf32>, %y: tensor<6xf32>) -> (tensor<6xf32>, tensor<6xf32>, tensor<6xf32>, tensor<6xf32>) {
  %r:4 = "accy.iterate"(%x, %x, %y, %x) <{count = 3 : i64}> ({
  ^bb0(%a: tensor<6xf32>, %b: tensor<6xf32>, %c: tensor<6xf32>, %d: tensor<6xf32>):
    %e = "accy.exp"(%a) : (tensor<6xf32>) -> tensor<6xf32>
    %f = "accy.tanh"(%e) : (tensor<6xf32>) -> tensor<6xf32>
    %c2 = "accy.constant"() <{value = dense<[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]> : tensor<6xf32>}> : () -> tensor<6xf32>
    %g = "accy.mul"(%b, %c2) : (tensor<6xf32>, tensor<6xf32>) -> tensor<6xf32>
    "accy.yield"(%f, %g, %c2, %f) : (tensor<6xf32>, tensor<6xf32>, tensor<6xf32>, tensor<6xf32>) -> ()
  }) : (tensor<6xf32>, tensor<6xf32>, tensor<6xf32>, tensor<6xf32>) -> (tensor<6xf32>, tensor<6xf32>, tensor<6xf32>, tensor<6xf32>)
  func.return %r#0, %r#1, %r#2, %r#3 : tensor<6xf32>, tensor<6xf32>, tensor<6xf32>, tensor<6xf32>
}"""

UNCHANGED = """
func.func @main(%x: tensor<3x4xf32>, %y: tensor<3x4xf32>) -> (tensor<3x4xf32>, tensor<3x4xf32>, tensor<3x4xf32>) {
  %r:3 = "accy.iterate"(%x, %y, %x) <{count = 2 : i64}> ({
  ^bb0(%a: tensor<3x4xf32>, %b: tensor<3x4xf32>, %c: tensor<3x4xf32>):
    %s = "accy.add"(%a, %c) : (tensor<3x4xf32>, tensor<3x4xf32>) -> tensor<3x4xf32>
    "accy.yield"(%a, %y, %s) : (tensor<3x4xf32>, tensor<3x4xf32>, tensor<3x4xf32>) -> ()
  }) : (tensor<3x4xf32>, tensor<3x4xf32>, tensor<3x4xf32>) -> (tensor<3x4xf32>, tensor<3x4xf32>, tensor<3x4xf32>)
  func.return %r#0, %r#1, %r#2 : tensor<3x4xf32>, tensor<3x4xf32>, tensor<3x4xf32>
}"""


@pytest.mark.parametrize("src", [YIELDS, UNCHANGED], ids=["literal_and_twice", "unchanged_and_outer"])
def test_yields_without_a_buffer_of_their_own(device, src: str) -> None:
    run(src, device, seed=2)


# The body's plan lets its yielded value reuse a larger buffer (the dot's
# 8x8 output, dead by then): the two buffers of the carried 8-vector are
# sized for the larger of the two.
SHARED_BUFFER = """
func.func @main(%v: tensor<8xf32>) -> tensor<8xf32> {
  %r = "accy.iterate"(%v) <{count = 3 : i64}> ({
  ^bb0(%a: tensor<8xf32>):
    %c = "accy.reshape"(%a) : (tensor<8xf32>) -> tensor<8x1xf32>
    %rr = "accy.reshape"(%a) : (tensor<8xf32>) -> tensor<1x8xf32>
    %o = "accy.dot_general"(%c, %rr) <{lhs_batch = array<i64>, rhs_batch = array<i64>, lhs_contract = array<i64: 1>, rhs_contract = array<i64: 0>}> : (tensor<8x1xf32>, tensor<1x8xf32>) -> tensor<8x8xf32>
    %t = "accy.tanh"(%o) : (tensor<8x8xf32>) -> tensor<8x8xf32>
    %s = "accy.reduce"(%t) <{kind = "max", axes = array<i64: 0>}> : (tensor<8x8xf32>) -> tensor<8xf32>
    %n = "accy.scan"(%s) <{kind = "sum", axis = 0 : i64, exclusive = false, reverse = false}> : (tensor<8xf32>) -> tensor<8xf32>
    %q = "accy.tanh"(%n) : (tensor<8xf32>) -> tensor<8xf32>
    "accy.yield"(%q) : (tensor<8xf32>) -> ()
  }) : (tensor<8xf32>) -> tensor<8xf32>
  func.return %r : tensor<8xf32>
}"""


def test_carried_value_in_a_larger_shared_buffer(device) -> None:
    run(SHARED_BUFFER, device, seed=3)


INITS = """
func.func @main(%x: tensor<4x6xf32>, %y: tensor<6x4xf32>) -> (tensor<4x6xf32>, tensor<4x6xf32>, tensor<4x6xf32>, tensor<4x6xf32>) {
  %yt = "accy.transpose"(%y) <{permutation = array<i64: 1, 0>}> : (tensor<6x4xf32>) -> tensor<4x6xf32>
  %z = "accy.constant"() <{value = dense<0.25> : tensor<4x6xf32>}> : () -> tensor<4x6xf32>
  %r:4 = "accy.iterate"(%yt, %z, %x, %x) <{count = 3 : i64}> ({
  ^bb0(%a: tensor<4x6xf32>, %b: tensor<4x6xf32>, %c: tensor<4x6xf32>, %d: tensor<4x6xf32>):
    %s = "accy.add"(%a, %b) : (tensor<4x6xf32>, tensor<4x6xf32>) -> tensor<4x6xf32>
    %t = "accy.tanh"(%s) : (tensor<4x6xf32>) -> tensor<4x6xf32>
    %u = "accy.mul"(%c, %yt) : (tensor<4x6xf32>, tensor<4x6xf32>) -> tensor<4x6xf32>
    %w = "accy.sin"(%u) : (tensor<4x6xf32>) -> tensor<4x6xf32>
    %q = "accy.cos"(%d) : (tensor<4x6xf32>) -> tensor<4x6xf32>
    "accy.yield"(%t, %s, %w, %q) : (tensor<4x6xf32>, tensor<4x6xf32>, tensor<4x6xf32>, tensor<4x6xf32>) -> ()
  }) : (tensor<4x6xf32>, tensor<4x6xf32>, tensor<4x6xf32>, tensor<4x6xf32>) -> (tensor<4x6xf32>, tensor<4x6xf32>, tensor<4x6xf32>, tensor<4x6xf32>)
  %e = "accy.exp"(%r#0) : (tensor<4x6xf32>) -> tensor<4x6xf32>
  func.return %e, %r#1, %r#2, %r#3 : tensor<4x6xf32>, tensor<4x6xf32>, tensor<4x6xf32>, tensor<4x6xf32>
}"""


def test_inits_that_are_views_literals_or_the_same_value(device) -> None:
    """A transposed argument, a splat literal, one argument carried twice;
    a result read by a later kernel."""
    run(INITS, device, seed=4)


NESTED = """
func.func @main(%x: tensor<3x5xf32>, %w: tensor<5x5xf32>) -> tensor<3x5xf32> {{
  %r = "accy.iterate"(%x) <{{count = {outer} : i64}}> ({{
  ^bb0(%a: tensor<3x5xf32>):
    %wt = "accy.transpose"(%w) <{{permutation = array<i64: 1, 0>}}> : (tensor<5x5xf32>) -> tensor<5x5xf32>
    %i = "accy.iterate"(%a) <{{count = {inner} : i64}}> ({{
    ^bb1(%b: tensor<3x5xf32>):
      %m = "accy.dot_general"(%b, %wt) <{{{dot}}}> : (tensor<3x5xf32>, tensor<5x5xf32>) -> tensor<3x5xf32>
      %t = "accy.tanh"(%m) : (tensor<3x5xf32>) -> tensor<3x5xf32>
      "accy.yield"(%t) : (tensor<3x5xf32>) -> ()
    }}) : (tensor<3x5xf32>) -> tensor<3x5xf32>
    %s = "accy.softmax"(%i) <{{axis = 1 : i64}}> : (tensor<3x5xf32>) -> tensor<3x5xf32>
    %n = "accy.add"(%s, %a) : (tensor<3x5xf32>, tensor<3x5xf32>) -> tensor<3x5xf32>
    "accy.yield"(%n) : (tensor<3x5xf32>) -> ()
  }}) : (tensor<3x5xf32>) -> tensor<3x5xf32>
  func.return %r : tensor<3x5xf32>
}}"""


@pytest.mark.parametrize(("outer", "inner"), [(2, 3), (3, 2), (1, 0), (0, 4)])
def test_nested_iterate(device, outer: int, inner: int) -> None:
    exe = run(NESTED.format(outer=outer, inner=inner, dot=DOT), device, seed=outer * 10 + inner)
    assert exe.stats.launches == outer * (inner * 1 + 1)  # the inner body's kernel, then the softmax's


def test_a_body_work_item_on_the_host_path(device) -> None:
    """A float16 work item in the body on a target without float16: a
    fallback inside the loop, once a trip."""
    src = """builtin.module attributes {accy.target = #accy.target<fp16 = false>} {
func.func @main(%x: tensor<3x4xf32>) -> tensor<3x4xf32> {
  %r = "accy.iterate"(%x) <{count = 3 : i64}> ({
  ^bb0(%a: tensor<3x4xf32>):
    %e = "accy.tanh"(%a) : (tensor<3x4xf32>) -> tensor<3x4xf32>
    %s = "accy.reduce"(%e) <{kind = "sum", axes = array<i64: 1>}> : (tensor<3x4xf32>) -> tensor<3xf32>
    %h = "accy.cast"(%s) : (tensor<3xf32>) -> tensor<3xf16>
    %c = "accy.cos"(%h) : (tensor<3xf16>) -> tensor<3xf16>
    %f = "accy.cast"(%c) : (tensor<3xf16>) -> tensor<3xf32>
    %b = "accy.broadcast"(%f) <{dims = array<i64: 0>}> : (tensor<3xf32>) -> tensor<3x4xf32>
    %m = "accy.mul"(%e, %b) : (tensor<3x4xf32>, tensor<3x4xf32>) -> tensor<3x4xf32>
    "accy.yield"(%m) : (tensor<3x4xf32>) -> ()
  }) : (tensor<3x4xf32>) -> tensor<3x4xf32>
  func.return %r : tensor<3x4xf32>
}
}"""
    exe = accy.compile(src, device=device)
    x = np.random.default_rng(5).standard_normal((3, 4)).astype(np.float32)
    (got,) = exe(x)
    (want,) = exe.reference_outputs([x])
    np.testing.assert_allclose(got, want, rtol=2e-3, atol=2e-3)
    assert exe.stats.fallbacks == 1


def test_device_arrays_in_and_out(device) -> None:
    """A chain of calls of a loop on accy.Arrays moves nothing through the host."""
    exe = accy.compile(rnn(3, 17, 4), device=device, strict=True)
    inputs = exe.random_inputs(6)
    arrays = [accy.device_put(a, device) for a in inputs]
    first = exe(*arrays, to_host=False)
    assert exe.stats.uploads == 0 and exe.stats.downloads == 0
    # The loop's result fed back in as the next call's initial state.
    second = exe(first[0], *arrays[1:], to_host=False)
    want = exe.reference_outputs([exe.reference_outputs(inputs)[0], *inputs[1:]])
    np.testing.assert_allclose(second[0].numpy(), want[0], rtol=2e-5, atol=2e-5)
    np.testing.assert_allclose(second[1].numpy(), want[1], rtol=2e-5, atol=2e-5)


def test_cli_check_and_strict(tmp_path, capsys) -> None:
    from accy.cli.run import main

    prog = tmp_path / "rnn.mlir"
    prog.write_text(rnn(5, 9, 6, "zeros"))
    code = main([str(prog), "--device", "llvm", "--check", "--strict", "--stats"])
    out = capsys.readouterr().out
    assert code == 0 and out.count(": ok") == 2, out
    assert '"fallbacks": 0' in out and '"kernels": 3' in out and '"launches": 8' in out
