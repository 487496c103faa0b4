"""`accy.sin`/`accy.cos` are exact in every lane of a vector (issue 19):
PoCL's float2..float16 sin/cos go wrong in *every* lane once one lane's
magnitude reaches 2^23 or is inf (sin(1e-10) came out 0.0134), so the
OpenCL emitter computes such vectors lane by lane. Results are compared
with numpy's float64 sin/cos rounded, within 2 ulp (scalar PoCL and the
LLVM device's own range reduction are within that)."""

from __future__ import annotations

import numpy as np
import pytest
from check import ty

import accy
from accy.runtime.device import Device

REPRODUCER = np.array(
    [1e-10, 1.0, np.inf, 1e10, np.nan, -np.inf, 3.0, -1e-10, 1e20, 0.5, -2.0, 1e5, 7.0, -1e10, 1e-30, 100.0],
    np.float32,
)


def _ulps(got: np.ndarray, x: np.ndarray, fn: str) -> float:
    """The largest error of `got` in ulps of the correctly rounded result
    (NaN where numpy gives NaN must be NaN)."""
    with np.errstate(invalid="ignore"):
        want = getattr(np, fn)(x.astype(np.float64))
    nan = np.isnan(want)
    assert np.array_equal(np.isnan(got), nan)
    ulp = np.spacing(np.abs(want[~nan]).astype(np.float32)).astype(np.float64)
    err = np.abs(got[~nan].astype(np.float64) - want[~nan]) / ulp
    return float(err.max(initial=0.0))


def _trig(n: int) -> str:
    t = ty([n])
    return f"""
func.func @main(%x: {t}) -> ({t}, {t}) {{
  %s = "accy.sin"(%x) : ({t}) -> {t}
  %c = "accy.cos"(%x) : ({t}) -> {t}
  func.return %s, %c : {t}, {t}
}}"""


@pytest.mark.parametrize("n", [16, 17, 64, 1000])
def test_small_lanes_beside_huge_ones(device: Device, n: int) -> None:
    x = np.resize(REPRODUCER, n)
    s, c = accy.compile(_trig(n), device=device)(x)
    assert _ulps(np.asarray(s), x, "sin") <= 2
    assert _ulps(np.asarray(c), x, "cos") <= 2


def test_every_magnitude(device: Device) -> None:
    """Random signs and magnitudes from 1e-40 (denormal) to 1e38, one huge
    lane in most vectors, and -0.0."""
    rng = np.random.default_rng(19)
    n = 4099
    x = (rng.choice([-1.0, 1.0], n) * np.exp(rng.uniform(-92, 88, n))).astype(np.float32)
    x[::7] = -0.0
    s, c = accy.compile(_trig(n), device=device)(x)
    assert _ulps(np.asarray(s), x, "sin") <= 2
    assert _ulps(np.asarray(c), x, "cos") <= 2
