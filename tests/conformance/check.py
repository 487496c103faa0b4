"""`check(src, inputs, device)`: compiles `src`'s @main for `device` with
`accy.compile`, runs it on `inputs` (outputs poisoned before the launches)
and compares every output with the reference interpreter within a stated
tolerance; also the run's kernel and host-fallback counts."""

from __future__ import annotations

import numpy as np

import accy
from accy.runtime.device import Device

#: float32 results may differ from numpy's by reassociation (reductions, dots)
#: and by the device's libm (exp, erf, tanh: a few ulp).
RTOL, ATOL = 2e-4, 2e-5


def check(src: str, inputs: list[np.ndarray], device: Device, kernels: int | None = None, fallbacks: int = 0) -> None:
    exe = accy.compile(src, device=device)
    outs = exe(*inputs)
    assert exe.stats.fallbacks == fallbacks
    if kernels is not None:
        assert exe.stats.kernels == kernels
    for got, want in zip(outs, exe.reference_outputs(inputs), strict=True):
        assert_matches(got, want)


def assert_matches(got: np.ndarray, want: np.ndarray, rtol: float = RTOL, atol: float = ATOL) -> None:
    """Floats within rtol/atol, atol scaled by the largest finite expected
    magnitude (NaN where the reference has NaN); integers
    and i1 exactly, i1 compared as its stored bytes (a poisoned byte is
    neither 0 nor 1)."""
    assert got.shape == want.shape and got.dtype == want.dtype
    if want.dtype.kind == "f":
        finite = np.abs(want[np.isfinite(want)])
        scaled = atol * max(1.0, float(finite.max(initial=0)))
        np.testing.assert_allclose(got, want, rtol=rtol, atol=scaled)
    elif want.dtype == np.bool_:
        np.testing.assert_array_equal(got.view(np.int8), want.astype(np.int8))
    else:
        np.testing.assert_array_equal(got, want)


def ty(shape, et: str = "f32") -> str:
    return f"tensor<{'x'.join(map(str, shape))}{'x' if shape else ''}{et}>"


def arr(values) -> str:
    return f"array<i64{': ' if values else ''}{', '.join(map(str, values))}>"
