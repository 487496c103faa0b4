"""Measure accy's LLVM vector math (accy/backends/llvm/vector_math.py) against
float64 numpy (math.erf / math.erfc for erf and gelu) and print a table of
max errors per function and tier, beside the bounds recorded in
``vector_math.ERROR_BOUNDS``.

    python tools/llvm_math_accuracy.py [--points N]

Each function is JIT-compiled (llvmlite MCJIT, host CPU, -O3) as a loop
mapping an array 16 lanes at a time with a scalar tail. The helpers here
(``compile_functions``, ``inputs``, ``measure``) are also what
tests/unit/test_llvm_vector_math.py uses.
"""

from __future__ import annotations

import argparse
import ctypes
import math
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import llvmlite.binding as llvm  # noqa: E402
from llvmlite import ir  # noqa: E402

from accy.backends.llvm import vector_math as vm  # noqa: E402

F32 = np.float32
_initialized = False


def _target_machine() -> llvm.TargetMachine:
    return llvm.Target.from_default_triple().create_target_machine(
        cpu=llvm.get_host_cpu_name(), features=llvm.get_host_cpu_features().flatten(), opt=3, jit=True
    )


class Compiled:
    """A JIT-compiled module of map functions; keeps its engine alive."""

    def __init__(self, module: ir.Module, names: dict[tuple[str, str], str]) -> None:
        global _initialized
        if not _initialized:
            llvm.initialize_native_target()
            llvm.initialize_native_asmprinter()
            _initialized = True
        mod = llvm.parse_assembly(str(module))
        mod.verify()
        pb = llvm.create_pass_builder(_target_machine(), llvm.create_pipeline_tuning_options(speed_level=3))
        pb.getModulePassManager().run(mod, pb)
        mod.verify()
        self.engine = llvm.create_mcjit_compiler(mod, _target_machine())  # takes ownership of a fresh TM
        self.engine.finalize_object()
        proto = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64)
        self.fns = {key: proto(self.engine.get_function_address(sym)) for key, sym in names.items()}

    def __call__(self, key: tuple[str, str], x: np.ndarray) -> np.ndarray:
        x = np.ascontiguousarray(x, dtype=F32)
        out = np.empty_like(x)
        self.fns[key](x.ctypes.data, out.ctypes.data, x.size)
        return out


def compile_functions(keys: list[tuple[str, str]], width: int = 16) -> Compiled:
    """One module with a map function per (name, tier), JIT-compiled."""
    module = ir.Module(name="vector_math_test")
    module.triple = llvm.get_process_triple()
    names = {}
    for name, tier in keys:
        sym = f"map_{name}_{tier}_{width}"
        vm.emit_map_function(module, sym, name, tier, width)
        names[(name, tier)] = sym
    return Compiled(module, names)


# ---------------------------------------------------------------------------
# references

_erf = np.frompyfunc(math.erf, 1, 1)
_erfc = np.frompyfunc(math.erfc, 1, 1)


def reference(name: str, x: np.ndarray) -> np.ndarray:
    """name(x) in float64 (x: float32 array), NaN where undefined."""
    d = x.astype(np.float64)
    with np.errstate(all="ignore"):
        if name == "exp":
            return np.exp(d)
        if name == "log":
            return np.log(d)
        if name == "tanh":
            return np.tanh(d)
        if name == "sigmoid":
            e = np.exp(-np.abs(d))
            return np.where(d >= 0, 1.0 / (1.0 + e), e / (1.0 + e))
        if name == "erf":
            return _erf(d).astype(np.float64)
        if name == "gelu":
            g = 0.5 * d * _erfc(-d / math.sqrt(2.0)).astype(np.float64)
            return np.where(d == -np.inf, -0.0, g)
        if name == "sin":
            return np.sin(d)
        if name == "cos":
            return np.cos(d)
    raise ValueError(name)


SPECIALS = np.array(
    [
        0.0,
        -0.0,
        np.inf,
        -np.inf,
        np.nan,
        1e-45,
        -1e-45,
        1e-40,
        -1e-40,
        1.1754944e-38,
        -1.1754944e-38,
        1e-30,
        -1e-30,
        1.0,
        -1.0,
        3.4028235e38,
        -3.4028235e38,
        88.72283,
        88.722839,
        89.0,
        -87.33654,
        -87.33655,
        -103.0,
        -103.97,
        -104.0,
        -150.0,
        1e5,
        -1e5,
        1e6,
        1e20,
        -1e20,
        0.5,
        2.0,
        math.pi,
        -math.pi,
        math.pi / 2,
        0.625,
        -0.625,
        0.927734375,
    ],
    dtype=F32,
)


def _random_floats(n: int, rng: np.random.Generator, positive: bool = False) -> np.ndarray:
    """Random bit patterns over all finite float32 (log-uniform magnitudes)."""
    b = rng.integers(0, 0x7F800000, size=n, dtype=np.uint32)
    x = b.view(F32)
    if not positive:
        x = x * rng.choice(np.array([-1, 1], dtype=F32), size=n)
    return x


#: name -> the interval of the dense sweep.
DOMAINS: dict[str, tuple[float, float]] = {
    "exp": (-104.0, 89.0),
    "log": (0.0, 4.0),
    "tanh": (-10.0, 10.0),
    "sigmoid": (-110.0, 30.0),
    "erf": (-5.0, 5.0),
    "gelu": (-12.0, 12.0),
    "sin": (-1e5, 1e5),
    "cos": (-1e5, 1e5),
}


def inputs(name: str, points: int, seed: int = 0) -> np.ndarray:
    """The sweep for name: `points` evenly spaced over its domain, a finer
    sweep near 0 (and near 1 for log), random floats of all magnitudes, and
    the special values."""
    rng = np.random.default_rng(seed)
    lo, hi = DOMAINS[name]
    parts = [np.linspace(lo, hi, points, dtype=np.float64).astype(F32)]
    parts.append(np.linspace(-1.0, 1.0, points // 8, dtype=np.float64).astype(F32))
    parts.append(_random_floats(points // 8, rng, positive=name == "log"))
    if name == "log":
        parts.append(np.linspace(0.5, 2.0, points // 4, dtype=np.float64).astype(F32))
        parts.append(np.abs(parts[0]))
    if name in ("sin", "cos"):
        parts.append(np.linspace(-10.0, 10.0, points // 4, dtype=np.float64).astype(F32))
    parts.append(SPECIALS)
    return np.concatenate(parts)


def ulp_errors(y: np.ndarray, ref: np.ndarray) -> np.ndarray:
    """|y - ref| in float32 ulps of the reference (inf where y is NaN and ref
    is not, or the reverse; 0 where both are NaN or the same infinity;
    a float32 infinity counts as 2^128 against a finite value)."""
    r32 = ref.astype(F32)
    yd = y.astype(np.float64)
    spacing = np.spacing(np.abs(r32)).astype(np.float64)
    spacing = np.where(np.isfinite(r32), spacing, 2.0**104)
    big = 2.0**128
    yd = np.where(np.isinf(yd), np.sign(yd) * big, yd)
    refc = np.where(np.isinf(ref), np.sign(ref) * big, ref)
    with np.errstate(invalid="ignore"):
        err = np.abs(yd - refc) / spacing
    err = np.where(np.isnan(ref) & np.isnan(y), 0.0, err)
    err = np.where(np.isnan(ref) != np.isnan(y), np.inf, err)
    same = (y.astype(np.float64) == ref) | ((y == r32) & np.isinf(r32))
    return np.where(same, 0.0, err)


def measure(name: str, tier: str, x: np.ndarray, y: np.ndarray) -> dict[str, float]:
    """Max errors of y = name_tier(x) against the reference, over the bound's
    domains: 'ulp' (over ulp_domain, or domain), 'abs' (over domain), and
    'special' (count of wrong NaN/inf/signed-zero results over all x)."""
    bound = vm.ERROR_BOUNDS.get((name, tier))
    ref = reference(name, x)
    dom = bound.domain if bound else (-math.inf, math.inf)
    udom = (bound.ulp_domain or bound.domain) if bound else dom
    finite_x = np.isfinite(x)
    out: dict[str, float] = {}
    in_u = finite_x & (x >= udom[0]) & (x <= udom[1])
    out["ulp"] = float(ulp_errors(y[in_u], ref[in_u]).max())
    in_d = finite_x & (x >= dom[0]) & (x <= dom[1])
    with np.errstate(invalid="ignore"):
        out["abs"] = float(np.nanmax(np.abs(y[in_d].astype(np.float64) - ref[in_d])))
    # special values: NaN where the reference is NaN, infinities exact, signed zeros at +-0
    special = ~np.isfinite(ref) | ~finite_x
    if name in ("sin", "cos") and tier == "fast":
        special &= ~finite_x  # fast trig is unspecified beyond its domain
    ok = (np.isnan(ref) & np.isnan(y)) | (y.astype(np.float64) == ref) | (np.isinf(y) & (ref.astype(F32) == y))
    zeros = x == 0
    sign_ok = ~zeros | (np.signbit(y) == np.signbit(ref)) | np.isnan(ref)
    out["special"] = float(np.count_nonzero(special & ~ok) + np.count_nonzero(~sign_ok))
    return out


def measure_all(
    points: int = 1_000_000, keys: list[tuple[str, str]] | None = None
) -> dict[tuple[str, str], dict[str, float]]:
    keys = keys or [(n, t) for n in vm.FUNCTIONS for t in vm.TIERS]
    compiled = compile_functions(keys)
    results: dict[tuple[str, str], dict[str, float]] = {}
    xs: dict[str, np.ndarray] = {}
    for key in keys:
        name = key[0]
        if name not in xs:
            xs[name] = inputs(name, points)
        results[key] = measure(name, key[1], xs[name], compiled(key, xs[name]))
    return results


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--points", type=int, default=1_000_000)
    args = ap.parse_args(argv)
    res = measure_all(args.points)
    print(
        f"{'function':9} {'tier':6} {'max ulp':>10} {'bound':>7} {'max abs':>10} {'bound':>9} {'special':>7}  ulp domain / abs domain"
    )
    for (name, tier), r in res.items():
        b = vm.ERROR_BOUNDS.get((name, tier))
        bu = f"{b.ulp:g}" if b and b.ulp is not None else "-"
        ba = f"{b.abs:.2e}" if b and b.abs is not None else "-"
        dom = f"{b.ulp_domain or b.domain} / {b.domain}" if b else str(DOMAINS[name])
        libm = " (libm lanes beyond 1e5)" if b and b.libm else ""
        print(
            f"{name:9} {tier:6} {r['ulp']:10.3f} {bu:>7} {r['abs']:10.3e} {ba:>9} {int(r['special']):7d}  {dom}{libm}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
