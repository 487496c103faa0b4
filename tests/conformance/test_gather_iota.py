"""accy.gather and accy.iota against the reference interpreter on every
device: odd and degenerate sizes (0, 1, primes, non-square), every index
type, every axis (negative ones too), indices that count from the end and
ones outside [-d, d) down to the type's extremes (clamped: a kernel never
reads out of bounds), gathers fused with their elementwise producers and
consumers, and iota in every element type (one kernel, never a host
fallback)."""

from __future__ import annotations

import numpy as np
import pytest
from check import check, ty
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from program_gen import programs
from test_kernels import for_float16
from test_random_programs import check_program

DTYPES = {"f32": np.float32, "i32": np.int32, "i1": np.bool_, "f16": np.float16, "f64": np.float64}


def values(rng: np.random.Generator, shape: tuple[int, ...], et: str) -> np.ndarray:
    if et == "i1":
        return rng.random(shape) < 0.5
    if et.startswith("i"):
        return rng.integers(-1000, 1000, shape).astype(DTYPES[et])
    return rng.standard_normal(shape).astype(DTYPES[et])


def indices(rng: np.random.Generator, shape: tuple[int, ...], d: int, it: str) -> np.ndarray:
    """Indices in [-2d, 2d) (in range, from the end, and beyond both ends),
    and the index type's extremes where there is room for them."""
    dt = np.int32 if it == "i32" else np.int64
    out = rng.integers(-2 * max(d, 1), 2 * max(d, 1), shape).astype(dt)
    flat = out.reshape(-1)
    if flat.size >= 4:
        flat[:2] = [np.iinfo(dt).min, np.iinfo(dt).max]
    return out


def gather_src(xs: tuple[int, ...], ishape: tuple[int, ...], axis: int, et: str, it: str) -> str:
    ax = axis % len(xs)
    rs = (*xs[:ax], *ishape, *xs[ax + 1 :])
    return f"""func.func @main(%x: {ty(xs, et)}, %i: {ty(ishape, it)}) -> {ty(rs, et)} {{
  %g = "accy.gather"(%x, %i) <{{axis = {axis} : i64}}> : ({ty(xs, et)}, {ty(ishape, it)}) -> {ty(rs, et)}
  func.return %g : {ty(rs, et)}
}}"""


GATHERS = [
    ((7,), (3,), 0),
    ((1,), (5,), 0),
    ((1,), (), 0),
    ((5, 3), (2, 5), 0),
    ((5, 3), (17,), -1),
    ((5, 3), (), 1),
    ((2, 13, 3), (4, 1), 1),
    ((4, 1, 6), (3,), -3),
    ((3, 4), (0,), 1),
    ((0, 4), (0, 2), 0),
    ((0, 4), (3,), 1),
    ((31, 2), (1, 1, 29), 0),
]


@pytest.mark.parametrize("it", ["i32", "i64"])
@pytest.mark.parametrize("case", GATHERS, ids=str)
def test_gather(case, it: str, device) -> None:
    xs, ishape, axis = case
    rng = np.random.default_rng(len(xs) * 31 + len(ishape))
    d = xs[axis % len(xs)]
    check(gather_src(xs, ishape, axis, "f32", it), [values(rng, xs, "f32"), indices(rng, ishape, d, it)], device)


@pytest.mark.parametrize("et", ["i32", "i1", "f64"])
def test_gather_element_types(et: str, device) -> None:
    rng = np.random.default_rng(3)
    xs, ishape = (6, 5), (7,)
    check(gather_src(xs, ishape, 1, et, "i64"), [values(rng, xs, et), indices(rng, ishape, 5, "i64")], device)


def test_gather_every_index_of_a_prime_axis(device) -> None:
    """Every index in [-2d, 2d) of an axis of 13: each wraps or clamps as the
    contract states, in one kernel."""
    rng = np.random.default_rng(5)
    idx = np.arange(-26, 26, dtype=np.int32)
    check(gather_src((13, 3), (52,), 0, "f32", "i32"), [values(rng, (13, 3), "f32"), idx], device, kernels=1)


def test_gather_fuses_with_producers_and_consumers(device) -> None:
    """relu of the table, indices computed by an add, exp of the result:
    one kernel, and nothing but the result stored."""
    src = f"""func.func @main(%x: {ty((11, 4))}, %i: {ty((3, 2), 'i32')}) -> {ty((3, 2, 4))} {{
  %r = "accy.relu"(%x) : ({ty((11, 4))}) -> {ty((11, 4))}
  %j = "accy.add"(%i, %i) : ({ty((3, 2), 'i32')}, {ty((3, 2), 'i32')}) -> {ty((3, 2), 'i32')}
  %g = "accy.gather"(%r, %j) <{{axis = 0 : i64}}> : ({ty((11, 4))}, {ty((3, 2), 'i32')}) -> {ty((3, 2, 4))}
  %e = "accy.exp"(%g) : ({ty((3, 2, 4))}) -> {ty((3, 2, 4))}
  func.return %e : {ty((3, 2, 4))}
}}"""
    rng = np.random.default_rng(7)
    check(src, [values(rng, (11, 4), "f32"), rng.integers(-11, 11, (3, 2)).astype(np.int32)], device, kernels=1)


def test_gather_of_a_view_and_of_a_gather(device) -> None:
    """A gather reading a transposed table, gathered again along the other
    axis (the table read through the view's strides, both gathers in one kernel)."""
    src = f"""func.func @main(%x: {ty((5, 7))}, %i: {ty((4,), 'i64')}, %k: {ty((3,), 'i32')}) -> {ty((3, 4))} {{
  %t = "accy.transpose"(%x) <{{permutation = array<i64: 1, 0>}}> : ({ty((5, 7))}) -> {ty((7, 5))}
  %g = "accy.gather"(%t, %i) <{{axis = 1 : i64}}> : ({ty((7, 5))}, {ty((4,), 'i64')}) -> {ty((7, 4))}
  %h = "accy.gather"(%g, %k) <{{axis = 0 : i64}}> : ({ty((7, 4))}, {ty((3,), 'i32')}) -> {ty((3, 4))}
  func.return %h : {ty((3, 4))}
}}"""
    rng = np.random.default_rng(9)
    args = [values(rng, (5, 7), "f32"), indices(rng, (4,), 5, "i64"), indices(rng, (3,), 7, "i32")]
    check(src, args, device, kernels=1)


def iota_src(shape: tuple[int, ...], dim: int, et: str) -> str:
    return f"""func.func @main() -> {ty(shape, et)} {{
  %p = "accy.iota"() <{{dimension = {dim} : i64}}> : () -> {ty(shape, et)}
  func.return %p : {ty(shape, et)}
}}"""


IOTAS = [((1,), 0), ((7,), 0), ((3, 5), 1), ((3, 5), -2), ((2, 0), 1), ((4, 1, 3), 1), ((2, 3, 17), 2)]


@pytest.mark.parametrize("et", ["i32", "i64", "f32"])
@pytest.mark.parametrize("case", IOTAS, ids=str)
def test_iota(case, et: str, device) -> None:
    shape, dim = case
    check(iota_src(shape, dim, et), [], device)


@pytest.mark.parametrize("et", ["f16", "f64", "i8", "i16"])
def test_iota_other_element_types(et: str, device) -> None:
    """f16 rounds past 2048, i8 and i16 wrap (as a cast from i64 does). f16
    on a driver without cl_khr_fp16 (the module's target says fp16 = false)
    is a kernel too: stored in 16 bits, computed in f32."""
    src = for_float16(iota_src((3, 2100), 1, et), device)[0] if et == "f16" else iota_src((3, 2100), 1, et)
    check(src, [], device, fallbacks=0)
    if et == "f16":  # the same without half arithmetic, on every device
        check(f"builtin.module attributes {{accy.target = #accy.target<fp16 = false>}} {{\n{iota_src((3, 2100), 1, et)}\n}}", [], device)


def test_range_as_iota_times_delta_plus_start(device) -> None:
    """ONNX Range(start, limit, delta) as the importer writes it: one kernel."""
    n = 13
    src = f"""func.func @main(%s: {ty(())}, %d: {ty(())}) -> {ty((n,))} {{
  %p = "accy.iota"() <{{dimension = 0 : i64}}> : () -> {ty((n,))}
  %sb = "accy.broadcast"(%s) <{{dims = array<i64>}}> : ({ty(())}) -> {ty((n,))}
  %db = "accy.broadcast"(%d) <{{dims = array<i64>}}> : ({ty(())}) -> {ty((n,))}
  %m = "accy.mul"(%p, %db) : ({ty((n,))}, {ty((n,))}) -> {ty((n,))}
  %r = "accy.add"(%m, %sb) : ({ty((n,))}, {ty((n,))}) -> {ty((n,))}
  func.return %r : {ty((n,))}
}}"""
    check(src, [np.float32(1.5).reshape(()), np.float32(-0.25).reshape(())], device, kernels=1)


#: What random programs around gathers and iotas are made of: their
#: producers and consumers, views between them, and a reduction after.
GATHER_PROGRAM_OPS = ("gather", "iota", "unary", "binary", "cast", "cmp", "select", "broadcast", "transpose", "slice",
                      "reduce")


@settings(max_examples=40, derandomize=True, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(program=programs(ops=GATHER_PROGRAM_OPS, min_ops=3, max_ops=8), seed=st.integers(0, 2**16))
def test_random_programs_of_gathers(program, seed: int, device) -> None:
    """The fuzzer's gathers (indices from the program or literals) and iotas
    among the ops that feed and read them, against the reference."""
    check_program(program, seed, device)
