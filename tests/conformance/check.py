"""`check(src, inputs, profile)`: kernelize, run with poisoned buffers,
compare with `accy.reference.run` within a stated tolerance."""

from __future__ import annotations

import numpy as np
from harness import kernelize, run_schedule
from xdsl.parser import Parser

from accy.passes.registry import make_context
from accy.reference.interpreter import run

#: float32 results may differ from numpy's by reassociation (reductions, dots)
#: and by the device's libm (exp, erf, tanh: a few ulp).
RTOL, ATOL = 2e-4, 2e-5


def check(src: str, inputs: list[np.ndarray], profile, kernels: int | None = None, fallbacks: int = 0) -> None:
    ref = run(Parser(make_context(), src).parse_module(), "main", *inputs)
    module = kernelize(Parser(make_context(), src).parse_module(), profile)
    outs, stats = run_schedule(module, inputs)
    assert stats.fallbacks == fallbacks
    if kernels is not None:
        assert stats.kernels == kernels
    for r, o in zip(ref, outs, strict=True):
        assert o.shape == r.shape and o.dtype == r.dtype
        if r.dtype.kind == "f":
            np.testing.assert_allclose(o, r, rtol=RTOL, atol=ATOL * max(1.0, float(np.abs(r[np.isfinite(r)]).max(initial=0))))
        else:
            np.testing.assert_array_equal(o, r)


def ty(shape, et: str = "f32") -> str:
    return f"tensor<{'x'.join(map(str, shape))}{'x' if shape else ''}{et}>"


def arr(values) -> str:
    return f"array<i64{': ' if values else ''}{', '.join(map(str, values))}>"
