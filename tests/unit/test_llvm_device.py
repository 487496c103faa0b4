"""The LLVM CPU device (accy/runtime/llvm.py): every corpus program and a few
odd-sized ones through `accy.compile(..., device=...)` with poisoned buffers,
compared with the reference interpreter; `accy-run --device llvm --check
--stats`; object code reused from the disk cache by a second process (the
`jit_cached` stat, not a time); four threads calling one executable; the host
fallback; in-place inputs and fresh results; the target checks."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("llvmlite.binding")

from templates import EXP_MUL_SUM, check  # noqa: E402

import accy  # noqa: E402
from accy.runtime import llvm as llvm_runtime  # noqa: E402
from accy.runtime.devices import get_device  # noqa: E402
from accy.runtime.disk_cache import DiskCache  # noqa: E402
from accy.runtime.llvm import LLVMDevice, TargetMismatch, host_vector_width  # noqa: E402

ROOT = Path(__file__).parents[1]
PROGRAMS = sorted((ROOT / "programs").glob("*.mlir"))


@pytest.fixture(scope="module")
def device(tmp_path_factory: pytest.TempPathFactory) -> LLVMDevice:
    """A poisoning device whose object cache is private to this module."""
    cache = DiskCache(llvm_runtime.OBJECT_CACHE_NAMESPACE, tmp_path_factory.mktemp("accy-cache"))
    return LLVMDevice(poison=True, object_cache=cache)


@pytest.mark.parametrize("path", PROGRAMS, ids=lambda p: p.stem)
def test_corpus_program_matches_reference(device: LLVMDevice, path: Path) -> None:
    exe = accy.compile(path, device=device)
    check(exe, seed=1)
    assert exe.stats.kernels + exe.stats.fallbacks > 0


SOFTMAX = """
func.func @main(%x: tensor<{r}x{c}xf32>) -> tensor<{r}x{c}xf32> {{
  %0 = "accy.softmax"(%x) <{{axis = -1 : i64}}> : (tensor<{r}x{c}xf32>) -> tensor<{r}x{c}xf32>
  func.return %0 : tensor<{r}x{c}xf32>
}}
"""
LONG_SUM = """
func.func @main(%x: tensor<{n}xf32>) -> tensor<f32> {{
  %s = "accy.reduce"(%x) <{{kind = "sum", axes = array<i64: 0>}}> : (tensor<{n}xf32>) -> tensor<f32>
  func.return %s : tensor<f32>
}}
"""


@pytest.mark.parametrize(
    "text",
    [
        EXP_MUL_SUM.format(r=37, c=1001),  # 37k elements: launches split over the threads
        EXP_MUL_SUM.format(r=1, c=3),
        SOFTMAX.format(r=7, c=333),
        SOFTMAX.format(r=513, c=129),
        LONG_SUM.format(n=100003),
    ],
    ids=["exp_mul_sum_37x1001", "exp_mul_sum_1x3", "softmax_7x333", "softmax_513x129", "sum_100003"],
)
def test_odd_sizes_match_reference(device: LLVMDevice, text: str) -> None:
    check(accy.compile(text, device=device), seed=2)


def test_results_are_fresh_and_inputs_used_in_place(device: LLVMDevice) -> None:
    exe = accy.compile(EXP_MUL_SUM.format(r=37, c=1001), device=device)
    inputs = exe.random_inputs(3)
    first = [a.copy() for a in exe(*inputs)]
    kept = exe(*inputs)
    assert exe.program.in_place == [True, True]  # type: ignore[attr-defined]
    again = exe(*[a + 1 for a in inputs])  # another call must not overwrite the arrays of the last
    for a, b in zip(first, kept, strict=True):
        np.testing.assert_array_equal(a, b)
    assert not np.array_equal(again[1], kept[1])
    # An input that is not aligned is copied, and still right.
    raw = np.zeros(inputs[0].nbytes + 1, np.uint8)
    x = raw[1:].view(np.float32).reshape(inputs[0].shape)
    x[...] = inputs[0]
    assert not x.flags.aligned
    got = exe(x, inputs[1])
    np.testing.assert_array_equal(got[1], first[1])
    assert exe.program.in_place == [False, True]  # type: ignore[attr-defined]


def test_fallback_runs_on_the_reference_path(device: LLVMDevice) -> None:
    exe = accy.compile(ROOT / "programs" / "fallback.mlir", device=device)
    check(exe, seed=4)
    assert exe.stats.fallbacks >= 1


def test_profile_records_every_launch(device: LLVMDevice) -> None:
    exe = accy.compile(ROOT / "programs" / "mlp.mlir", device=device)
    exe(*exe.random_inputs(0), profile=True)
    assert len(exe.stats.profile) == exe.stats.kernels > 0
    assert all(p.seconds >= 0 and p.global_size[0] > 0 for p in exe.stats.profile)


def test_poison_fills_allocated_buffers(device: LLVMDevice, monkeypatch: pytest.MonkeyPatch) -> None:
    """With poisoning on, a result no kernel writes is NaN (the launches are skipped here)."""
    exe = accy.compile(SOFTMAX.format(r=7, c=333), device=device)
    check(exe)
    monkeypatch.setattr(device, "launch", lambda *args: None)
    (out,) = exe(*exe.random_inputs(0))
    assert np.isnan(out).all()


def test_threads_share_one_executable(device: LLVMDevice) -> None:
    exe = accy.compile(EXP_MUL_SUM.format(r=37, c=1001), device=device)
    cases = [exe.random_inputs(seed) for seed in range(4)]
    expected = [exe.reference_outputs(inputs) for inputs in cases]
    errors: list[str] = []

    def worker(k: int) -> None:
        for call in range(50):
            got = exe(*cases[k], profile=call % 7 == 0)
            for i, (g, w) in enumerate(zip(got, expected[k], strict=True)):
                if not np.allclose(g, w, rtol=1e-4, atol=1e-4):
                    errors.append(f"thread {k} call {call} result {i}")

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(4)]
    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-5)
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        sys.setswitchinterval(old)
    assert not errors, errors[:5]


def _accy_run(path: Path, cache: Path) -> dict[str, object]:
    env = dict(os.environ, ACCY_CACHE_DIR=str(cache), ACCY_POISON="1")
    run = subprocess.run(
        [sys.executable, "-m", "accy.cli.run", str(path), "--device", "llvm", "--check", "--stats"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert run.returncode == 0, run.stderr
    return json.loads(run.stdout.strip().splitlines()[-1])


def test_accy_run_and_a_second_process_loads_objects_from_disk(tmp_path: Path) -> None:
    path = ROOT / "programs" / "mlp.mlir"
    cold = _accy_run(path, tmp_path)
    assert cold["device"] == "llvm" and cold["check_ok"] is True and cold["kernels"] == 2
    assert cold["jit_cached"] is False and cold["jit_s"] > 0  # type: ignore[operator]
    assert list((tmp_path / llvm_runtime.OBJECT_CACHE_NAMESPACE).glob("*/*.bin"))
    assert cold["compile_cached"] is False
    assert set(cold["jit_kernels"]) and all(s > 0 for s in cold["jit_kernels"].values())  # type: ignore[union-attr]
    warm = _accy_run(path, tmp_path)
    assert warm["check_ok"] is True
    assert warm["jit_cached"] is True
    # The second process took the whole compiled function from the compile cache.
    assert warm["compile_cached"] is True and set(warm["jit_kernels"]) == set(cold["jit_kernels"])  # type: ignore[arg-type]
    assert list((tmp_path / "compiled").glob("*/*.bin"))


def test_in_process_jit_cache_counts(tmp_path: Path) -> None:
    cache = DiskCache(llvm_runtime.OBJECT_CACHE_NAMESPACE, tmp_path)
    first = LLVMDevice(object_cache=cache)
    exe = accy.compile(ROOT / "programs" / "mlp.mlir", device=first)
    kernels = len(exe.program.jits)  # type: ignore[attr-defined]  # one LLVM module (and engine) per kernel
    assert kernels == 2 and set(exe.program.jit_kernels) == set(exe.program.sources)  # type: ignore[attr-defined]
    accy.compile(ROOT / "programs" / "mlp.mlir", device=first)
    assert (first.jit.stats.compiled, first.jit.stats.loaded, first.jit.stats.reused) == (kernels, 0, kernels)
    second = LLVMDevice(object_cache=DiskCache(llvm_runtime.OBJECT_CACHE_NAMESPACE, tmp_path))
    check(accy.compile(ROOT / "programs" / "mlp.mlir", device=second))
    assert (second.jit.stats.compiled, second.jit.stats.loaded) == (0, kernels)


def test_target_checks(device: LLVMDevice) -> None:
    profile = device.target_profile()
    assert profile.format == "llvm-ir" and profile.profile == "cpu" and profile.fp16 and profile.fp64
    assert profile.vector_width == host_vector_width(llvm_runtime.host_target().features)
    assert host_vector_width("+avx2,-avx512f") == 8 and host_vector_width("+sse2") == 4
    assert host_vector_width("+avx512f,+avx2") == 16
    text = SOFTMAX.format(r=3, c=5)
    with pytest.raises(TargetMismatch, match="format 'opencl-c'"):
        accy.compile('module attributes {accy.target = #accy.target<format = "opencl-c">} {' + text + "}", device=device)
    with pytest.raises(TargetMismatch, match="profile 'gpu'"):
        accy.compile('module attributes {accy.target = #accy.target<profile = "gpu">} {' + text + "}", device=device)


def test_device_by_name() -> None:
    assert get_device("llvm").name == "llvm"
    with pytest.raises(ValueError, match="llvm"):
        get_device("no-such-device")
    with pytest.raises(ValueError, match="one LLVM device"):
        get_device("llvm:1")


class _RecordingLLVM:
    """Stands for llvmlite.binding in `_load_libm`: records what it loads, refusing `refused`."""

    def __init__(self, refused: set[str]) -> None:
        self.refused = refused
        self.loaded: list[str] = []

    def load_library_permanently(self, path: str) -> None:
        self.loaded.append(path)
        if path in self.refused:
            raise RuntimeError(f"cannot load {path}")


def test_libm_by_its_soname_else_where_find_library_says(monkeypatch: pytest.MonkeyPatch) -> None:
    searched: list[str] = []
    monkeypatch.setattr(llvm_runtime.ctypes.util, "find_library", lambda name: searched.append(name) or "/lib/libm-x.so")
    found = _RecordingLLVM(set())
    llvm_runtime._load_libm(found)
    assert found.loaded == [llvm_runtime.LIBM_SONAME] and searched == []  # no ldconfig run
    fallback = _RecordingLLVM({llvm_runtime.LIBM_SONAME})
    llvm_runtime._load_libm(fallback)
    assert fallback.loaded == [llvm_runtime.LIBM_SONAME, "/lib/libm-x.so"] and searched == ["m"]
    neither = _RecordingLLVM({llvm_runtime.LIBM_SONAME, "/lib/libm-x.so"})
    llvm_runtime._load_libm(neither)  # no error: libm is in the process anyway
    assert neither.loaded == [llvm_runtime.LIBM_SONAME, "/lib/libm-x.so"]


_LIBM_CHILD = """
import os, sys
import numpy as np
import accy
text = '''func.func @main(%x: tensor<7x5xf64>) -> tensor<7x5xf64> {
  %t = "accy.tanh"(%x) : (tensor<7x5xf64>) -> tensor<7x5xf64>
  func.return %t : tensor<7x5xf64>
}'''
exe = accy.compile(text, device="llvm")
assert any('declare double @"tanh"' in source for source in exe.program.sources.values()), "no call of libm's tanh"
x = np.random.default_rng(3).standard_normal((7, 5)) * 4
(y,) = exe(x)
np.testing.assert_allclose(y, np.tanh(x), rtol=1e-12, atol=0)
print("ok")
"""


def test_a_new_process_calls_libm_from_a_kernel() -> None:
    """The JIT resolves libm's `tanh` (f64 tanh has no LLVM intrinsic) in a fresh process."""
    env = {**os.environ, "ACCY_CACHE_DIR": "off"}
    done = subprocess.run([sys.executable, "-c", _LIBM_CHILD], capture_output=True, text=True, timeout=300, env=env)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok"
