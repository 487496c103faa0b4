"""Conformance of the kernel lowerings on the OpenCL runtime: every op of
the contract alone and in fused chains, random inputs, odd and round sizes,
both profiles, each program compiled with `accy.compile` and checked against
the reference interpreter with poisoned output buffers. Work items with a
lowering must run without host fallbacks; declined ones (float16 on a target
without it) must still give the right results through the fallback, between
kernels."""

from __future__ import annotations

import numpy as np
import pytest
from check import arr, assert_matches, check, ty
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

SIZES = [1, 3, 17, 127, 1023]
FAST = settings(max_examples=4, deadline=None, suppress_health_check=list(HealthCheck))

UNARY = ["neg", "abs", "exp", "tanh", "sigmoid", "relu", "gelu", "sin", "cos", "erf", "floor", "ceil"]
POSITIVE = ["log", "sqrt", "rsqrt", "reciprocal"]
BINARY = ["add", "sub", "mul", "div", "max", "min"]


def rand(rng: np.random.Generator, shape, dtype="f32", positive: bool = False) -> np.ndarray:
    if dtype == "f32":
        x = rng.standard_normal(shape).astype(np.float32)
        return np.abs(x) + np.float32(0.5) if positive else x
    if dtype == "i32":
        return rng.integers(-50, 50, shape).astype(np.int32)
    return rng.integers(0, 2, shape).astype(bool)


@pytest.mark.parametrize("op", UNARY + POSITIVE)
@pytest.mark.parametrize("n", SIZES)
def test_unary(op: str, n: int, device) -> None:
    t = ty([n, 5])
    src = f'func.func @main(%x: {t}) -> {t} {{\n %y = "accy.{op}"(%x) : ({t}) -> {t}\n func.return %y : {t}\n}}'
    check(src, [rand(np.random.default_rng(n), (n, 5), positive=op in POSITIVE)], device, kernels=1)


@pytest.mark.parametrize("op", BINARY)
@pytest.mark.parametrize("et", ["f32", "i32"])
def test_binary(op: str, et: str, device) -> None:
    rng = np.random.default_rng(1)
    t = ty([17, 19], et)
    a, b = rand(rng, (17, 19), et), rand(rng, (17, 19), et)
    src = f'func.func @main(%a: {t}, %b: {t}) -> {t} {{\n %y = "accy.{op}"(%a, %b) : ({t}, {t}) -> {t}\n func.return %y : {t}\n}}'
    check(src, [a, b], device, kernels=1)


def test_int_pow_and_logic(device) -> None:
    rng = np.random.default_rng(2)
    t, tb = ty([33], "i32"), ty([33], "i1")
    a = rng.integers(-3, 4, 33).astype(np.int32)
    b = rng.integers(-2, 6, 33).astype(np.int32)
    src = f"""func.func @main(%a: {t}, %b: {t}, %m: {tb}) -> ({t}, {tb}, {t}) {{
  %p = "accy.pow"(%a, %b) : ({t}, {t}) -> {t}
  %c = "accy.cmp"(%a, %b) <{{predicate = "lt"}}> : ({t}, {t}) -> {tb}
  %n = "accy.not"(%m) : ({tb}) -> {tb}
  %x = "accy.xor"(%c, %n) : ({tb}, {tb}) -> {tb}
  %s = "accy.select"(%x, %a, %p) : ({tb}, {t}, {t}) -> {t}
  %i = "accy.and"(%a, %b) : ({t}, {t}) -> {t}
  %r = "accy.or"(%s, %i) : ({t}, {t}) -> {t}
  func.return %p, %x, %r : {t}, {tb}, {t}
}}"""
    check(src, [a, b, rng.integers(0, 2, 33).astype(bool)], device, kernels=1)


INT_TYPES = {"i8": np.int8, "i16": np.int16, "i64": np.int64}


@pytest.mark.parametrize("et", sorted(INT_TYPES))
def test_integers_of_every_width(et: str, device) -> None:
    """relu, max and min, max/min reductions along either axis and a max scan
    on char, short and long elements: their constants (relu's 0, a max's
    identity) beside a char are ints in OpenCL C, which made `max(v, 0)`
    ambiguous; odd lengths, values up to the type's edges."""
    rng = np.random.default_rng(4)
    info = np.iinfo(INT_TYPES[et])
    lo, hi = max(int(info.min), -(2**40)), min(int(info.max), 2**40)
    a = rng.integers(lo, hi, (37, 129), endpoint=True).astype(INT_TYPES[et])
    b = rng.integers(lo, hi, (37, 129), endpoint=True).astype(INT_TYPES[et])
    t, rows, cols = ty([37, 129], et), ty([37], et), ty([129], et)
    src = f"""func.func @main(%a: {t}, %b: {t}) -> ({t}, {t}, {rows}, {cols}, {t}) {{
  %r = "accy.relu"(%a) : ({t}) -> {t}
  %m = "accy.max"(%r, %b) : ({t}, {t}) -> {t}
  %n = "accy.min"(%a, %b) : ({t}, {t}) -> {t}
  %x = "accy.reduce"(%a) <{{kind = "max", axes = array<i64: 1>}}> : ({t}) -> {rows}
  %y = "accy.reduce"(%b) <{{kind = "min", axes = array<i64: 0>}}> : ({t}) -> {cols}
  %s = "accy.scan"(%a) <{{kind = "max", axis = 0 : i64}}> : ({t}) -> {t}
  func.return %m, %n, %x, %y, %s : {t}, {t}, {rows}, {cols}, {t}
}}"""
    check(src, [a, b], device)


@pytest.mark.parametrize("pred", ["eq", "ne", "lt", "le", "gt", "ge"])
def test_cmp_select_cast(pred: str, device) -> None:
    rng = np.random.default_rng(3)
    t, tb, ti = ty([9, 7]), ty([9, 7], "i1"), ty([9, 7], "i32")
    a = np.round(rand(rng, (9, 7))).astype(np.float32)
    b = np.round(rand(rng, (9, 7))).astype(np.float32)
    src = f"""func.func @main(%a: {t}, %b: {t}) -> ({t}, {ti}, {t}) {{
  %c = "accy.cmp"(%a, %b) <{{predicate = "{pred}"}}> : ({t}, {t}) -> {tb}
  %s = "accy.select"(%c, %a, %b) : ({tb}, {t}, {t}) -> {t}
  %i = "accy.cast"(%s) : ({t}) -> {ti}
  %f = "accy.cast"(%c) : ({tb}) -> {t}
  func.return %s, %i, %f : {t}, {ti}, {t}
}}"""
    check(src, [a * 3.7, b * 3.7], device, kernels=1)


@pytest.mark.parametrize("n", SIZES)
def test_int_div_edge_cases(n: int, device) -> None:
    """x/0 = 0 and INT_MIN/-1 = INT_MIN, as the reference defines them, in the
    vector lanes and the scalar tail alike."""
    rng = np.random.default_rng(n)
    imin = np.iinfo(np.int32).min
    a = rng.choice(np.array([imin, imin + 1, -7, -1, 0, 1, 7, 2**31 - 1], np.int32), n)
    b = rng.choice(np.array([0, -1, 1, 2, -3, 0], np.int32), n)
    a[0], b[0] = imin, -1
    t = ty([n], "i32")
    src = f'func.func @main(%a: {t}, %b: {t}) -> {t} {{\n %y = "accy.div"(%a, %b) : ({t}, {t}) -> {t}\n func.return %y : {t}\n}}'
    check(src, [a, b], device, kernels=1)


@pytest.mark.parametrize("n", SIZES)
def test_float_to_int_casts_saturate(n: int, device) -> None:
    """float -> i32 truncates toward zero and saturates (NaN -> 0); float ->
    i1 is != 0 (NaN -> true); i1 -> float is 1/0."""
    rng = np.random.default_rng(n)
    special = np.array([np.nan, np.inf, -np.inf, 3e9, -3e9, 2.0**31, -(2.0**31), 2147483520.0,
                        -2147483520.0, 0.0, -0.0, 2.7, -2.7, 1e-30], np.float32)  # fmt: skip
    x = np.where(rng.random(n) < 0.5, rng.choice(special, n), rng.standard_normal(n) * 1e3).astype(np.float32)
    x[0] = np.nan
    t, ti, tb = ty([n]), ty([n], "i32"), ty([n], "i1")
    src = f"""func.func @main(%x: {t}) -> ({ti}, {tb}, {t}) {{
  %i = "accy.cast"(%x) : ({t}) -> {ti}
  %b = "accy.cast"(%x) : ({t}) -> {tb}
  %f = "accy.cast"(%b) : ({tb}) -> {t}
  func.return %i, %b, %f : {ti}, {tb}, {t}
}}"""
    check(src, [x], device)


@given(n=st.sampled_from([1, 3, 17, 127, 1023]), m=st.sampled_from([1, 5, 16]), seed=st.integers(0, 99))
@FAST
def test_fused_chain_with_views(n: int, m: int, seed: int) -> None:
    """exp(x) * broadcast(bias) + transpose(y), sliced input, both profiles."""
    from conftest import all_devices

    rng = np.random.default_rng(seed)
    t = ty([n, m])
    src = f"""func.func @main(%x: {ty([n, m + 2])}, %b: {ty([m])}, %y: {ty([m, n])}) -> {t} {{
  %xs = "accy.slice"(%x) <{{start = {arr([0, 1])}, limit = {arr([n, m + 1])}, stride = {arr([1, 1])}}}> : ({ty([n, m + 2])}) -> {t}
  %e = "accy.exp"(%xs) : ({t}) -> {t}
  %bb = "accy.broadcast"(%b) <{{dims = {arr([1])}}}> : ({ty([m])}) -> {t}
  %p = "accy.mul"(%e, %bb) : ({t}, {t}) -> {t}
  %yt = "accy.transpose"(%y) <{{permutation = {arr([1, 0])}}}> : ({ty([m, n])}) -> {t}
  %r = "accy.add"(%p, %yt) : ({t}, {t}) -> {t}
  func.return %r : {t}
}}"""
    ins = [rand(rng, (n, m + 2)), rand(rng, (m,)), rand(rng, (m, n))]
    for device in all_devices():
        check(src, ins, device, kernels=1)


@pytest.mark.parametrize("kind", ["sum", "prod", "max", "min", "mean"])
@pytest.mark.parametrize("axes", [[1], [0], [0, 2], [2]])
def test_reduce(kind: str, axes: list[int], device) -> None:
    rng = np.random.default_rng(4)
    shape = (3, 17, 37)
    out = [s for d, s in enumerate(shape) if d not in axes]
    x = rand(rng, shape)
    if kind == "prod":
        x = (np.sign(x) * (0.9 + 0.2 * rng.random(shape))).astype(np.float32)
    src = f"""func.func @main(%x: {ty(shape)}) -> {ty(out)} {{
  %a = "accy.abs"(%x) : ({ty(shape)}) -> {ty(shape)}
  %r = "accy.reduce"(%x) <{{kind = "{kind}", axes = {arr(axes)}}}> : ({ty(shape)}) -> {ty(out)}
  %t = "accy.tanh"(%r) : ({ty(out)}) -> {ty(out)}
  func.return %t : {ty(out)}
}}"""
    check(src, [x], device)


@pytest.mark.parametrize("n", [1, 3, 127, 1023])
def test_reduce_fused_prologue_epilogue(n: int, device) -> None:
    rng = np.random.default_rng(n)
    src = f"""func.func @main(%x: {ty([5, n])}, %y: {ty([5])}) -> {ty([5])} {{
  %e = "accy.exp"(%x) : ({ty([5, n])}) -> {ty([5, n])}
  %s = "accy.reduce"(%e) <{{kind = "sum", axes = {arr([1])}}}> : ({ty([5, n])}) -> {ty([5])}
  %l = "accy.log"(%s) : ({ty([5])}) -> {ty([5])}
  %r = "accy.add"(%l, %y) : ({ty([5])}, {ty([5])}) -> {ty([5])}
  func.return %r : {ty([5])}
}}"""
    check(src, [rand(rng, (5, n)), rand(rng, (5,))], device, kernels=1)


@pytest.mark.parametrize("threads", [1, 4, 32, 64])
@pytest.mark.parametrize(("shape", "axes"), [((7, 256), [1]), ((5, 3, 64), [2]), ((9, 17), [0]), ((1, 128), [1]), ((33, 8), [1])])
def test_reduce_several_outputs_a_work_group(threads: int, shape: tuple[int, ...], axes: list[int], device) -> None:
    """`reduce_threads` below a GPU work-group's 256: several outputs share a
    work-group (the last one partly full), each combined apart in local
    memory; on the CPU profile the field changes nothing."""
    rng = np.random.default_rng(threads + len(shape))
    out = [s for d, s in enumerate(shape) if d not in axes]
    src = f"""builtin.module attributes {{accy.target = #accy.target<reduce_threads = {threads}>}} {{
func.func @main(%x: {ty(shape)}) -> ({ty(out)}, {ty(out)}) {{
  %s = "accy.reduce"(%x) <{{kind = "sum", axes = {arr(axes)}}}> : ({ty(shape)}) -> {ty(out)}
  %m = "accy.reduce"(%x) <{{kind = "max", axes = {arr(axes)}}}> : ({ty(shape)}) -> {ty(out)}
  %t = "accy.tanh"(%s) : ({ty(out)}) -> {ty(out)}
  func.return %t, %m : {ty(out)}, {ty(out)}
}}
}}"""
    check(src, [rand(rng, shape)], device, kernels=2)


def test_reduce_int(device) -> None:
    rng = np.random.default_rng(5)
    src = f"""func.func @main(%x: {ty([7, 33], "i32")}) -> ({ty([7], "i32")}, {ty([33], "i32")}) {{
  %s = "accy.reduce"(%x) <{{kind = "sum", axes = {arr([1])}}}> : ({ty([7, 33], "i32")}) -> {ty([7], "i32")}
  %m = "accy.reduce"(%x) <{{kind = "max", axes = {arr([0])}}}> : ({ty([7, 33], "i32")}) -> {ty([33], "i32")}
  func.return %s, %m : {ty([7], "i32")}, {ty([33], "i32")}
}}"""
    check(src, [rand(rng, (7, 33), "i32")], device, kernels=2)


@pytest.mark.parametrize("kind", ["sum", "prod", "max", "min"])
@pytest.mark.parametrize("axis,exclusive,reverse", [(1, False, False), (1, True, False), (0, False, True), (1, True, True)])
def test_scan(kind: str, axis: int, exclusive: bool, reverse: bool, device) -> None:
    rng = np.random.default_rng(6)
    shape = (17, 19)
    x = rand(rng, shape)
    if kind == "prod":
        x = (np.sign(x) * (0.95 + 0.1 * rng.random(shape))).astype(np.float32)
    t = ty(shape)
    flags = f"exclusive = {str(exclusive).lower()}, reverse = {str(reverse).lower()}"
    src = f"""func.func @main(%x: {t}) -> {t} {{
  %n = "accy.neg"(%x) : ({t}) -> {t}
  %s = "accy.scan"(%n) <{{kind = "{kind}", axis = {axis} : i64, {flags}}}> : ({t}) -> {t}
  func.return %s : {t}
}}"""
    check(src, [x], device)


DOTS = [
    # (lhs shape, rhs shape, lhs_batch, rhs_batch, lhs_contract, rhs_contract)
    ((17, 33), (33, 32), [], [], [1], [0]),
    ((3, 7), (7, 1), [], [], [1], [0]),
    ((13, 7), (3, 7), [], [], [1], [1]),
    ((7, 13), (7, 48), [], [], [0], [0]),
    ((2, 5, 9), (2, 9, 16), [0], [0], [2], [1]),
    ((4, 3, 5), (3, 5, 6), [], [], [1, 2], [0, 1]),
    ((127, 1), (1, 1023), [], [], [1], [0]),
]


@pytest.mark.parametrize("case", range(len(DOTS)))
def test_dot_general_with_epilogue(case: int, device) -> None:
    a_shape, b_shape, lb, rb, lc, rc = DOTS[case]
    from accy.dialects.accy import infer_dot_general

    out = list(infer_dot_general(a_shape, b_shape, lb, rb, lc, rc))
    rng = np.random.default_rng(case)
    props = f"lhs_batch = {arr(lb)}, rhs_batch = {arr(rb)}, lhs_contract = {arr(lc)}, rhs_contract = {arr(rc)}"
    src = f"""func.func @main(%a: {ty(a_shape)}, %b: {ty(b_shape)}, %c: {ty(out[-1:])}, %r: {ty(out)}) -> {ty(out)} {{
  %d = "accy.dot_general"(%a, %b) <{{{props}}}> : ({ty(a_shape)}, {ty(b_shape)}) -> {ty(out)}
  %cb = "accy.broadcast"(%c) <{{dims = {arr([len(out) - 1])}}}> : ({ty(out[-1:])}) -> {ty(out)}
  %s = "accy.add"(%d, %cb) : ({ty(out)}, {ty(out)}) -> {ty(out)}
  %g = "accy.gelu"(%s) : ({ty(out)}) -> {ty(out)}
  %y = "accy.add"(%g, %r) : ({ty(out)}, {ty(out)}) -> {ty(out)}
  func.return %y : {ty(out)}
}}"""
    ins = [rand(rng, a_shape), rand(rng, b_shape), rand(rng, out[-1:]), rand(rng, out)]
    check(src, ins, device, kernels=1)


def test_dot_transposed_operand(device) -> None:
    rng = np.random.default_rng(7)
    src = f"""func.func @main(%a: {ty([9, 17])}, %b: {ty([9, 32])}) -> {ty([17, 32])} {{
  %at = "accy.transpose"(%a) <{{permutation = {arr([1, 0])}}}> : ({ty([9, 17])}) -> {ty([17, 9])}
  %d = "accy.dot_general"(%at, %b) <{{lhs_batch = {arr([])}, rhs_batch = {arr([])}, lhs_contract = {arr([1])}, rhs_contract = {arr([0])}}}> : ({ty([17, 9])}, {ty([9, 32])}) -> {ty([17, 32])}
  func.return %d : {ty([17, 32])}
}}"""
    check(src, [rand(rng, (9, 17)), rand(rng, (9, 32))], device, kernels=1)


def test_shape_copies(device) -> None:
    rng = np.random.default_rng(8)
    src = f"""func.func @main(%a: {ty([3, 5])}, %b: {ty([3, 2])}) -> ({ty([3, 7])}, {ty([5, 3])}, {ty([15])}) {{
  %c = "accy.concat"(%a, %b) <{{axis = 1 : i64}}> : ({ty([3, 5])}, {ty([3, 2])}) -> {ty([3, 7])}
  %t = "accy.transpose"(%a) <{{permutation = {arr([1, 0])}}}> : ({ty([3, 5])}) -> {ty([5, 3])}
  %r = "accy.reshape"(%t) : ({ty([5, 3])}) -> {ty([15])}
  func.return %c, %t, %r : {ty([3, 7])}, {ty([5, 3])}, {ty([15])}
}}"""
    check(src, [rand(rng, (3, 5)), rand(rng, (3, 2))], device)


def test_constants(device) -> None:
    t = ty([2, 3])
    src = f"""func.func @main(%x: {t}) -> {t} {{
  %c = "accy.constant"() <{{value = dense<[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]> : {t}}}> : () -> {t}
  %h = "accy.constant"() <{{value = dense<0.5> : {t}}}> : () -> {t}
  %m = "accy.mul"(%x, %c) : ({t}, {t}) -> {t}
  %r = "accy.add"(%m, %h) : ({t}, {t}) -> {t}
  func.return %r : {t}
}}"""
    check(src, [rand(np.random.default_rng(9), (2, 3))], device, kernels=1)


def test_float16_accumulates_in_float32(device) -> None:
    """Float16 dots (long k, a packed one among them), sums along either
    axis, a mean and scans accumulate in float32 and round once, as the
    reference does: summed in float16, 1000 terms drift by ~1% (about ten
    float16 ulp), far past the two ulp allowed here. On a device without
    float16 they are kernels that compute in float32 (the same values)."""
    import accy

    rng = np.random.default_rng(11)
    h = lambda *shape: ty(list(shape), "f16")  # noqa: E731
    dot = "lhs_batch = array<i64>, rhs_batch = array<i64>, lhs_contract = array<i64: 1>, rhs_contract = array<i64: 0>"
    src = f"""func.func @main(%a: {h(9, 1000)}, %b: {h(1000, 16)}, %c: {h(100, 1000)}, %d: {h(1000, 64)}, %x: {h(1001, 7)})
    -> ({h(9, 16)}, {h(100, 64)}, {h(9)}, {h(7)}, {h(1001)}, {h(9, 1000)}, {h(1001, 7)}) {{
  %p = "accy.dot_general"(%a, %b) <{{{dot}}}> : ({h(9, 1000)}, {h(1000, 16)}) -> {h(9, 16)}
  %q = "accy.dot_general"(%c, %d) <{{{dot}}}> : ({h(100, 1000)}, {h(1000, 64)}) -> {h(100, 64)}
  %r = "accy.reduce"(%a) <{{kind = "sum", axes = {arr([1])}}}> : ({h(9, 1000)}) -> {h(9)}
  %s = "accy.reduce"(%x) <{{kind = "sum", axes = {arr([0])}}}> : ({h(1001, 7)}) -> {h(7)}
  %m = "accy.reduce"(%x) <{{kind = "mean", axes = {arr([1])}}}> : ({h(1001, 7)}) -> {h(1001)}
  %u = "accy.scan"(%a) <{{kind = "sum", axis = 1 : i64}}> : ({h(9, 1000)}) -> {h(9, 1000)}
  %v = "accy.scan"(%x) <{{kind = "sum", axis = 0 : i64}}> : ({h(1001, 7)}) -> {h(1001, 7)}
  func.return %p, %q, %r, %s, %m, %u, %v : {h(9, 16)}, {h(100, 64)}, {h(9)}, {h(7)}, {h(1001)}, {h(9, 1000)}, {h(1001, 7)}
}}"""
    src, _ = for_float16(src, device)
    shapes = [(9, 1000), (1000, 16), (100, 1000), (1000, 64), (1001, 7)]
    inputs = [rng.standard_normal(s).astype(np.float16) for s in shapes]
    exe = accy.compile(src, device=device)
    outs = exe(*inputs)
    assert exe.stats.fallbacks == 0
    for got, want in zip(outs, exe.reference_outputs(inputs), strict=True):
        assert_matches(got, want, rtol=2e-3, atol=2e-3)


def for_float16(src: str, device) -> tuple[str, bool]:
    """`src` for a device, and whether it computes float16: on an OpenCL
    driver without cl_khr_fp16 (PoCL) in a module whose target says
    `fp16 = false` (the conformance profiles say fp16 = true)."""
    cl_device = getattr(device, "cl_device", None)
    if cl_device is None or "cl_khr_fp16" in cl_device.extensions.split():
        return src, True
    return f"builtin.module attributes {{accy.target = #accy.target<fp16 = false>}} {{\n{src}\n}}", False


def test_float16_casts_and_math(device) -> None:
    """float64 -> float16 casts, float16 exp and tanh, and a float16 causal
    flash attention (its fmas in float16): on the LLVM device each of these
    once called a compiler-rt routine (double to half) that the JIT cannot
    resolve, a segfault; and the float16 causal mask (-65504, float16's
    lowest) once went unrecognised, so the attention ran on the host."""
    import accy

    rng = np.random.default_rng(12)
    h, q = ty([37], "f16"), ty([2, 33, 16], "f16")
    src = f"""func.func @main(%x: {ty([37], "f64")}, %e: {h}, %q: {q}, %k: {q}, %v: {q}) -> ({h}, {h}, {q}) {{
  %c = "accy.cast"(%x) : ({ty([37], "f64")}) -> {h}
  %p = "accy.exp"(%e) : ({h}) -> {h}
  %t = "accy.tanh"(%p) : ({h}) -> {h}
  %o = "accy.attention"(%q, %k, %v) <{{scale = 0.25 : f32, causal = true}}> : ({q}, {q}, {q}) -> {q}
  func.return %c, %t, %o : {h}, {h}, {q}
}}"""
    src, _ = for_float16(src, device)
    inputs = [rng.standard_normal(37) * 100, rng.standard_normal(37).astype(np.float16),
              *(rng.standard_normal((2, 33, 16)).astype(np.float16) for _ in range(3))]
    exe = accy.compile(src, device=device)
    for got, want in zip(exe(*inputs), exe.reference_outputs(inputs), strict=True):
        assert_matches(got, want, rtol=2e-3, atol=2e-3)
    assert exe.stats.fallbacks == 0  # with fp16 = false: f16 storage, f32 compute


def test_declined_work_item_runs_on_host_between_kernels(device) -> None:
    """A float64 work item on a target without float64, between a row sum
    (read through a reshape) and a scan of what it returns."""
    rng = np.random.default_rng(10)
    t, c, h = ty([4, 17]), ty([4, 1]), ty([4, 1], "f64")
    src = f"""builtin.module attributes {{accy.target = #accy.target<fp64 = false>}} {{
func.func @main(%x: {t}) -> ({c}, {c}) {{
  %r = "accy.reduce"(%x) <{{kind = "sum", axes = {arr([1])}}}> : ({t}) -> {ty([4])}
  %rv = "accy.reshape"(%r) : ({ty([4])}) -> {c}
  %h = "accy.cast"(%rv) : ({c}) -> {h}
  %n = "accy.tanh"(%h) : ({h}) -> {h}
  %f = "accy.cast"(%n) : ({h}) -> {c}
  %s = "accy.scan"(%f) <{{kind = "sum", axis = 0 : i64, exclusive = false, reverse = false}}> : ({c}) -> {c}
  func.return %f, %s : {c}, {c}
}}
}}"""
    import accy.passes.kernelization.kernelize as kz

    remarks: list[str] = []
    saved, kz.remark = kz.remark, remarks.append
    try:
        check(src, [rand(rng, (4, 17))], device, kernels=2, fallbacks=1)
    finally:
        kz.remark = saved
    assert any("main_k1_elementwise (elementwise) runs on the host reference path" in r for r in remarks)


@pytest.mark.slow
@pytest.mark.parametrize("n", [1023, 4096])
def test_big_sizes(n: int, device) -> None:
    rng = np.random.default_rng(n)
    src = f"""func.func @main(%a: {ty([n, 64])}, %b: {ty([64, 64])}) -> ({ty([n, 64])}, {ty([n])}) {{
  %d = "accy.dot_general"(%a, %b) <{{lhs_batch = {arr([])}, rhs_batch = {arr([])}, lhs_contract = {arr([1])}, rhs_contract = {arr([0])}}}> : ({ty([n, 64])}, {ty([64, 64])}) -> {ty([n, 64])}
  %s = "accy.reduce"(%d) <{{kind = "max", axes = {arr([1])}}}> : ({ty([n, 64])}) -> {ty([n])}
  func.return %d, %s : {ty([n, 64])}, {ty([n])}
}}"""
    check(src, [rand(rng, (n, 64)), rand(rng, (64, 64))], device)


@pytest.mark.parametrize(
    ("b", "m", "n", "k"),
    [(1, 3, 17, 300), (1, 64, 100, 1024), (2, 5, 33, 257), (1, 1, 1, 1023), (3, 7, 7, 512)],
)
def test_dot_split_along_k(device, b: int, m: int, n: int, k: int) -> None:
    """Few rows and columns but a long k (an RNN cell's): on the GPU profile
    the k range is split over work-groups and the partial sums added by a
    second launch, which runs the epilogue (bias, tanh)."""
    rng = np.random.default_rng(m * n + k)
    a_t, b_t, o_t = ty([b, m, k]), ty([b, k, n]), ty([b, m, n])
    src = f"""func.func @main(%a: {a_t}, %w: {b_t}, %c: {ty([n])}) -> {o_t} {{
  %e = "accy.tanh"(%a) : ({a_t}) -> {a_t}
  %d = "accy.dot_general"(%e, %w) <{{lhs_batch = {arr([0])}, rhs_batch = {arr([0])}, lhs_contract = {arr([2])}, rhs_contract = {arr([1])}}}> : ({a_t}, {b_t}) -> {o_t}
  %cb = "accy.broadcast"(%c) <{{dims = {arr([2])}}}> : ({ty([n])}) -> {o_t}
  %s = "accy.add"(%d, %cb) : ({o_t}, {o_t}) -> {o_t}
  %r = "accy.tanh"(%s) : ({o_t}) -> {o_t}
  func.return %r : {o_t}
}}"""
    check(src, [rand(rng, (b, m, k)), rand(rng, (b, k, n)), rand(rng, (n,))], device)
