"""accy.jit keeps a bounded number of signatures (docs/tracing.md): the
least recently called is dropped with its executable and traced again when
it comes back; results stay right throughout; the bound is settable by
argument and by $ACCY_JIT_CACHE_SIZE, parsed strictly."""

from __future__ import annotations

import gc
import weakref

import numpy as np
import pytest

import accy
import accy.numpy as anp
from accy.env import EnvVarError


def f(x: np.ndarray) -> np.ndarray:
    return anp.exp(x) * 2.0 + x


def test_least_recently_called_is_dropped_and_retraced() -> None:
    fn = accy.jit(f, device="llvm", cache_size=2)
    rng = np.random.default_rng(0)
    xs = {n: rng.standard_normal(n).astype(np.float32) for n in (3, 5, 7)}
    for n in (3, 5):
        np.testing.assert_allclose(fn(xs[n]), np.exp(xs[n]) * 2 + xs[n], rtol=1e-5)
    exe3 = weakref.ref(fn.lower(xs[3]).compile())
    fn(xs[3])  # 3 is now the most recent: 5 goes when 7 comes
    np.testing.assert_allclose(fn(xs[7]), np.exp(xs[7]) * 2 + xs[7], rtol=1e-5)
    assert fn.cache_size() == 2 and fn.trace_count == 3
    fn(xs[3])
    assert fn.trace_count == 3  # kept
    np.testing.assert_allclose(fn(xs[5]), np.exp(xs[5]) * 2 + xs[5], rtol=1e-5)
    assert fn.trace_count == 4 and fn.cache_size() == 2  # 5 traced again; 7 dropped
    fn(xs[5])
    fn(xs[7])  # drops 3
    gc.collect()
    assert exe3() is None  # the dropped signature's executable is given back


def test_many_shapes_stay_bounded() -> None:
    fn = accy.jit(f, device="reference", cache_size=4)
    for n in range(1, 40):
        x = np.full(n, 0.5, np.float32)
        np.testing.assert_allclose(fn(x), np.exp(x) * 2 + x, rtol=1e-6)
        assert fn.cache_size() == min(n, 4)
    assert fn.trace_count == 39


def test_the_bound_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ACCY_JIT_CACHE_SIZE", "3")
    assert accy.jit(f).max_signatures == 3
    assert accy.jit(f, cache_size=9).max_signatures == 9  # the argument wins
    monkeypatch.delenv("ACCY_JIT_CACHE_SIZE")
    assert accy.jit(f).max_signatures == 64
    for bad in ("0", "many", "-2"):
        monkeypatch.setenv("ACCY_JIT_CACHE_SIZE", bad)
        with pytest.raises(EnvVarError, match="ACCY_JIT_CACHE_SIZE"):
            accy.jit(f)
    monkeypatch.delenv("ACCY_JIT_CACHE_SIZE")
    for bad in (0, -1, 2.5, True):
        with pytest.raises(ValueError, match="cache_size is a number of signatures >= 1"):
            accy.jit(f, cache_size=bad)  # type: ignore[arg-type]
