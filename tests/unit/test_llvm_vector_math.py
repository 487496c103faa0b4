"""accy.backends.llvm.vector_math, JIT-compiled with llvmlite MCJIT (host CPU,
-O3) and run on dense sweeps plus special values; every measured error must
stay within the bound recorded in ``vector_math.ERROR_BOUNDS`` (the bounds
the docstrings quote)."""

from __future__ import annotations

import ctypes
import re
import sys
from pathlib import Path

import numpy as np
import pytest
from llvmlite import ir

from accy.backends.llvm import vector_math as vm

sys.path.insert(0, str(Path(__file__).parents[2] / "tools"))
import llvm_math_accuracy as acc  # noqa: E402

KEYS = [(n, t) for n in vm.FUNCTIONS for t in vm.TIERS]
POINTS = 400_000


@pytest.fixture(scope="module")
def compiled() -> acc.Compiled:
    return acc.compile_functions(KEYS)


@pytest.fixture(scope="module")
def sweeps() -> dict[str, np.ndarray]:
    return {name: acc.inputs(name, POINTS) for name in vm.FUNCTIONS}


def test_every_function_and_tier_has_a_bound() -> None:
    assert set(vm.ERROR_BOUNDS) == set(KEYS)


@pytest.mark.parametrize("key", KEYS, ids=[f"{n}-{t}" for n, t in KEYS])
def test_measured_error_within_documented_bound(key, compiled, sweeps) -> None:
    name, tier = key
    x = sweeps[name]
    with np.errstate(all="ignore"):
        got = acc.measure(name, tier, x, compiled(key, x))
    bound = vm.ERROR_BOUNDS[key]
    assert got["special"] == 0, f"{name}/{tier}: wrong NaN, infinity or signed zero"
    if bound.ulp is not None:
        assert got["ulp"] <= bound.ulp, f"{name}/{tier}: {got['ulp']:.3f} ulp > {bound.ulp}"
    if bound.abs is not None:
        assert got["abs"] <= bound.abs, f"{name}/{tier}: abs {got['abs']:.3g} > {bound.abs}"


_IMPL = {"sin": "_sincos", "cos": "_sincos"}


@pytest.mark.parametrize("key", KEYS, ids=[f"{n}-{t}" for n, t in KEYS])
def test_docstring_quotes_the_bound(key) -> None:
    name, tier = key
    doc = getattr(vm, _IMPL.get(name, f"_{name}")).__doc__
    bound = vm.ERROR_BOUNDS[key]
    quoted = {float(v) for v in re.findall(r"bound\s+([0-9.e+-]+[0-9])", doc)}
    assert bound.ulp in quoted, f"{name}/{tier}: the docstring quotes {quoted}, the table {bound.ulp} ulp"
    if bound.abs is not None:
        assert bound.abs in quoted, f"{name}/{tier}: the docstring quotes {quoted}, the table abs {bound.abs}"


def test_special_values_exactly(compiled) -> None:
    nan, inf = np.nan, np.inf
    cases = {
        "exp": ([0.0, -0.0, inf, -inf, nan, 100.0, -200.0], [1.0, 1.0, inf, 0.0, nan, inf, 0.0]),
        "log": ([0.0, -0.0, -1.0, inf, -inf, nan, 1.0], [-inf, -inf, nan, inf, nan, nan, 0.0]),
        "tanh": ([0.0, -0.0, inf, -inf, nan, 50.0], [0.0, -0.0, 1.0, -1.0, nan, 1.0]),
        "sigmoid": ([0.0, inf, -inf, nan, -200.0], [0.5, 1.0, 0.0, nan, 0.0]),
        "erf": ([0.0, -0.0, inf, -inf, nan, 10.0], [0.0, -0.0, 1.0, -1.0, nan, 1.0]),
        "gelu": ([0.0, -0.0, inf, -inf, nan], [0.0, -0.0, inf, -0.0, nan]),
        "sin": ([0.0, -0.0, inf, -inf, nan], [0.0, -0.0, nan, nan, nan]),
        "cos": ([0.0, -0.0, inf, -inf, nan], [1.0, 1.0, nan, nan, nan]),
    }
    for name, tier in KEYS:
        xs, want = (np.array(v, dtype=np.float32) for v in cases[name])
        for x in (xs, np.resize(xs, 32)):  # scalar tail and vector lanes
            got = compiled((name, tier), x)
            w = np.resize(want, x.size)
            same = (got == w) & (np.signbit(got) == np.signbit(w)) | (np.isnan(got) & np.isnan(w))
            assert same.all(), f"{name}/{tier}: {x[~same]} -> {got[~same]}, want {w[~same]}"


def _scalar_only(compiled: acc.Compiled, key: tuple[str, str], x: np.ndarray) -> np.ndarray:
    """Run x through the scalar tail only: calls on 15 elements at a time."""
    x = np.ascontiguousarray(x, dtype=np.float32)
    out = np.empty_like(x)
    fn, step = compiled.fns[key], 15
    for i in range(0, x.size, step):
        n = min(step, x.size - i)
        fn(x.ctypes.data + 4 * i, out.ctypes.data + 4 * i, n)
    return out


def test_vector_and_scalar_forms_agree_bit_for_bit(compiled) -> None:
    rng = np.random.default_rng(1)
    x = np.concatenate(
        [
            np.linspace(-120.0, 120.0, 3000, dtype=np.float32),
            rng.integers(0, 2**32, size=3000, dtype=np.uint64).astype(np.uint32).view(np.float32),  # NaNs too
            acc.SPECIALS,
        ]
    )
    x = x[: x.size // 240 * 240]  # a multiple of 16 and 15: all lanes vector in one, scalar in the other
    narrow = acc.compile_functions(KEYS, width=4)
    for key in KEYS:
        vec = compiled(key, x)
        sca = _scalar_only(compiled, key, x)
        np.testing.assert_array_equal(vec.view(np.uint32), sca.view(np.uint32), err_msg=f"{key} width 16")
        np.testing.assert_array_equal(narrow(key, x).view(np.uint32), sca.view(np.uint32), err_msg=f"{key} width 4")


def test_only_exact_trig_calls_libm() -> None:
    for name, tier in KEYS:
        module = ir.Module()
        vm.emit_map_function(module, "f", name, tier, 16)
        external = {f.name for f in module.functions if f.is_declaration and not f.name.startswith("llvm.")}
        assert external == ({f"{name}f"} if (name in ("sin", "cos") and tier == "exact") else set()), (name, tier)


def test_libm_lanes_are_mixed_with_polynomial_lanes(compiled) -> None:
    # one vector holding small and huge arguments: each lane is right
    x = np.array([0.5, 3e5, -2.0, 1e30, 7.0, -4e8, 1e-3, 123456.0] * 2, dtype=np.float32)
    for name, ref in (("sin", np.sin), ("cos", np.cos)):
        got = compiled((name, "exact"), x)
        err = acc.ulp_errors(got, ref(x.astype(np.float64)))
        assert err.max() <= vm.ERROR_BOUNDS[(name, "exact")].ulp


def test_rejects_unknown_names_tiers_and_types() -> None:
    module = ir.Module()
    fn = ir.Function(module, ir.FunctionType(ir.VoidType(), [ir.FloatType(), ir.DoubleType()]), name="g")
    b = ir.IRBuilder(fn.append_basic_block())
    with pytest.raises(ValueError):
        vm.emit(b, "expm1", fn.args[0], "fast")
    with pytest.raises(ValueError):
        vm.emit(b, "exp", fn.args[0], "medium")
    with pytest.raises(TypeError):
        vm.emit(b, "exp", fn.args[1], "fast")


def test_ctypes_types_are_what_the_harness_assumes() -> None:
    assert ctypes.sizeof(ctypes.c_float) == 4
