"""The public Python API: accy.parse_module, accy.compile, Executable."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from xdsl.dialects.builtin import ModuleOp

import accy
from accy.runtime.device import Device, Program, RunStats
from accy.runtime.executable import Comparison

# y = relu(x @ w) summed over rows, for odd sizes 3x17 @ 17x5.
MLP = """\
func.func @main(%x: tensor<3x17xf32>, %w: tensor<17x5xf32>) -> (tensor<3x5xf32>, tensor<5xf32>) {
  %h = "accy.dot_general"(%x, %w) <{lhs_batch = array<i64>, rhs_batch = array<i64>, lhs_contract = array<i64: 1>, rhs_contract = array<i64: 0>}> : (tensor<3x17xf32>, tensor<17x5xf32>) -> tensor<3x5xf32>
  %r = "accy.relu"(%h) : (tensor<3x5xf32>) -> tensor<3x5xf32>
  %s = "accy.reduce"(%r) <{kind = "sum", axes = array<i64: 0>}> : (tensor<3x5xf32>) -> tensor<5xf32>
  func.return %r, %s : tensor<3x5xf32>, tensor<5xf32>
}
"""


def inputs(seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    return rng.standard_normal((3, 17)).astype(np.float32), rng.standard_normal((17, 5)).astype(np.float32)


def expected(x: np.ndarray, w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    r = np.maximum(x @ w, 0)
    return r, r.sum(axis=0)


@pytest.mark.parametrize("source", ["text", "path", "pathlike", "module"])
def test_compile_any_source_and_run(source: str, tmp_path: Path) -> None:
    path = tmp_path / "mlp.mlir"
    path.write_text(MLP)
    given = {"text": MLP, "path": str(path), "pathlike": path, "module": accy.parse_module(MLP)}[source]
    exe = accy.compile(given, device="reference")
    x, w = inputs(1)
    r, s = exe(x, w)
    want_r, want_s = expected(x, w)
    np.testing.assert_allclose(r, want_r, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(s, want_s, rtol=1e-5, atol=1e-5)
    assert r.dtype == np.float32 and s.shape == (5,)
    assert exe.compile_s >= 0.0
    assert exe.stats.kernels == 0 and exe.stats.fallbacks == 0
    assert exe.stats.peak_bytes >= x.nbytes + w.nbytes + r.nbytes + s.nbytes


def test_parse_module_returns_verified_module() -> None:
    module = accy.parse_module(MLP)
    assert isinstance(module, ModuleOp)
    assert accy.reference.interpreter.find_function(module, "main").sym_name.data == "main"


def test_parse_module_errors_are_located(tmp_path: Path) -> None:
    path = tmp_path / "bad.mlir"
    path.write_text(MLP.replace("axes = array<i64: 0>", "axes = array<i64: 7>"))
    with pytest.raises(accy.SourceDiagnostic, match=rf"^{path}:4:3: error: 'accy.reduce' op"):
        accy.parse_module(path)
    with pytest.raises(ValueError, match=r"^<input>:1:\d+: error: "):
        accy.parse_module("func.func @f(")
    with pytest.raises(FileNotFoundError, match="no such file"):
        accy.parse_module(str(tmp_path / "absent.mlir"))


def test_compile_leaves_callers_module_alone() -> None:
    module = accy.parse_module(MLP)
    before = str(module)
    exe = accy.compile(module)
    assert exe.module is not module
    assert str(module) == before


@pytest.mark.parametrize("device", ["reference", "opencl"])
def test_executable_function_is_the_function_as_written(device: str) -> None:
    """Compiling for OpenCL replaces the function with a host schedule;
    `exe.function` is still the tensor function, attached to `exe.source`."""
    exe = accy.compile(MLP, device=device)
    assert exe.function.parent_op() is exe.source
    assert [op.name for op in exe.function.body.ops] == ["accy.dot_general", "accy.relu", "accy.reduce", "func.return"]
    exe.function.verify()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (lambda x, w: (x,), r"@main takes 2 argument\(s\) \(tensor<3x17xf32>, tensor<17x5xf32>\), got 1"),
        (lambda x, w: (x.astype(np.float64), w), r"argument #0 of @main expects tensor<3x17xf32>.*got float64 array of shape \(3, 17\)"),
        (lambda x, w: (x, w[:16]), r"argument #1 of @main expects tensor<17x5xf32>.*got float32 array of shape \(16, 5\)"),
        (lambda x, w: (x.tolist(), w), r"argument #0 of @main expects tensor<3x17xf32> .*, got list \(pass a numpy array\)"),
    ],
)
def test_bad_arguments_name_the_argument(args, message: str) -> None:
    exe = accy.compile(MLP)
    with pytest.raises(ValueError, match=message):
        exe(*args(*inputs()))


def test_non_contiguous_arrays_are_accepted() -> None:
    exe = accy.compile(MLP)
    x, w = inputs(2)
    x_f = np.asfortranarray(x)
    w_strided = np.repeat(w, 2, axis=1)[:, ::2]
    assert not x_f.flags.c_contiguous and not w_strided.flags.c_contiguous
    r, _ = exe(x_f, w_strided)
    np.testing.assert_allclose(r, expected(x, w)[0], rtol=1e-5, atol=1e-5)


def test_function_selection_and_missing_function() -> None:
    text = MLP + 'func.func @neg(%a: tensor<1xf32>) -> tensor<1xf32> {\n  %n = "accy.neg"(%a) : (tensor<1xf32>) -> tensor<1xf32>\n  func.return %n : tensor<1xf32>\n}\n'
    (n,) = accy.compile(text, fn="neg")(np.array([2.5], np.float32))
    assert n.tolist() == [-2.5]
    with pytest.raises(ValueError, match=r"no function @nope \(functions: @main, @neg\)"):
        accy.compile(text, fn="nope")


def test_unknown_device_lists_known_ones() -> None:
    with pytest.raises(ValueError, match=r"unknown device 'tpu' \(known: auto, reference, opencl, llvm"):
        accy.compile(MLP, device="tpu")
    with pytest.raises(ValueError, match=r"bad device index"):
        accy.get_device("opencl:x")


def test_unavailable_device_says_why(monkeypatch) -> None:
    import accy.runtime.devices as devices
    import accy.runtime.opencl as ocl

    monkeypatch.setattr(ocl, "opencl_devices", lambda: [])
    monkeypatch.setattr(devices, "_instances", {})
    with pytest.raises(ValueError, match=r"^device 'opencl' is not available: no OpenCL platform found"):
        accy.get_device("opencl")


class _CountingDevice(Device):
    """A device that negates nothing and counts: checks the Executable's
    contract with devices (checked, contiguous inputs; stats passed through)."""

    name = "counting"

    def prepare(self, module: ModuleOp, fn: str, strict: bool = False) -> Program:
        device = self

        class _Program(Program):
            stats = RunStats()

            def run(self, inputs: list[np.ndarray], profile: bool = False, to_host: bool = True) -> list[np.ndarray]:
                device.seen = inputs
                self.stats = RunStats(kernels=len(inputs), peak_bytes=1, fallbacks=int(strict))
                return list(accy.reference.interpreter.run(module, fn, *inputs))

        return _Program()


def test_device_instance_and_stats_passthrough() -> None:
    device = _CountingDevice()
    exe = accy.compile(MLP, device=device, strict=True)
    x, w = inputs(3)
    exe(np.asfortranarray(x), w)
    assert all(a.flags.c_contiguous for a in device.seen)
    assert (exe.stats.kernels, exe.stats.peak_bytes, exe.stats.fallbacks) == (2, 1, 1)


def test_compare_with_reference_and_random_inputs() -> None:
    exe = accy.compile(MLP)
    args = exe.random_inputs(seed=5)
    assert [a.shape for a in args] == [(3, 17), (17, 5)] and all(a.dtype == np.float32 for a in args)
    outs = exe(*args)
    assert all(c.ok and c.max_abs == 0.0 for c in exe.compare_with_reference(args, outs))
    off = (outs[0] + 1e-2, outs[1])
    first = exe.compare_with_reference(args, off)[0]
    assert not first.ok and first.max_abs == pytest.approx(1e-2, rel=1e-3)


def test_comparison_tolerances() -> None:
    e = np.array([1.0, 0.0, np.nan, np.inf], np.float32)
    assert Comparison.of(e.copy(), e).ok
    close = Comparison.of(np.array([1.0005, 5e-5, np.nan, np.inf], np.float32), e)
    assert close.ok and close.max_rel == pytest.approx(5e-4, rel=1e-2)
    far = Comparison.of(np.array([1.01, 0.0, np.nan, np.inf], np.float32), e)
    assert not far.ok
    assert not Comparison.of(np.array([1, 2], np.int32), np.array([1, 3], np.int32)).ok
    assert not Comparison.of(np.zeros(3, np.float32), np.zeros(4, np.float32)).ok


def test_best_device_is_an_opencl_gpu_else_llvm_else_reference(monkeypatch: pytest.MonkeyPatch) -> None:
    from accy.runtime import devices
    from accy.runtime.opencl import opencl_devices

    has_gpu = any(d.type & devices._CL_DEVICE_TYPE_GPU for d in opencl_devices())
    device, note = devices.best_device()
    assert (device.name.startswith("opencl") if has_gpu else device.name == "llvm") and note is None
    assert devices.get_device("auto") is device
    # Without a working LLVM device either: the reference, saying why.
    monkeypatch.setitem(devices.DEVICES, "llvm", "accy.runtime.no_such_module:Nothing")
    monkeypatch.setattr(devices, "_instances", {})
    if not has_gpu:
        device, note = devices.best_device()
        assert device.name == "reference"
        assert note is not None and "no OpenCL GPU" in note and "device 'llvm' is not available" in note


def test_compile_without_a_device_runs_on_the_best_one() -> None:
    from accy.runtime.devices import best_device

    src = """func.func @main(%x: tensor<3x5xf32>) -> tensor<3xf32> {
  %e = "accy.exp"(%x) : (tensor<3x5xf32>) -> tensor<3x5xf32>
  %s = "accy.reduce"(%e) <{kind = "sum", axes = array<i64: 1>}> : (tensor<3x5xf32>) -> tensor<3xf32>
  func.return %s : tensor<3xf32>
}"""
    exe = accy.compile(src)
    assert exe.device is best_device()[0] and exe.device.name != "reference"
    x = np.random.default_rng(0).standard_normal((3, 5)).astype(np.float32)
    (got,) = exe(x)
    np.testing.assert_allclose(got, np.exp(x).sum(axis=1), rtol=1e-5)


def test_demo_runs_and_matches_reference() -> None:
    import subprocess
    import sys

    demo = Path(__file__).parents[2] / "examples" / "demo.py"
    done = subprocess.run([sys.executable, str(demo)], capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    assert "rows sum to 1: True" in done.stdout
    assert ": ok" in done.stdout.splitlines()[-1]
