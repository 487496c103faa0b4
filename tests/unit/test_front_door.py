"""What users hand accy at its front door, through `accy.compile` and
`accy-run`: rank-0 tensors (0-d arrays, numpy and Python scalars), tensors
and constants with a dimension of 0, programs that call functions, and
programs accy cannot run (a clear, located error, never an internal one).
Every result is compared with the reference interpreter (and, where the
answer is known, with numpy) on the reference and the OpenCL device."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

import accy
from accy.cli.run import main as run_main

DEVICES = ["reference", "opencl"]


def ty(shape: list[int] | tuple[int, ...], et: str = "f32") -> str:
    return "tensor<" + "".join(f"{d}x" for d in shape) + et + ">"


def check_against_reference(src: str, device: str, inputs: list[np.ndarray]) -> tuple[np.ndarray, ...]:
    """Runs `src` on `device` and asserts every output equals the reference's."""
    exe = accy.compile(src, device=device)
    outputs = exe(*inputs)
    expected = accy.reference.run(accy.parse_module(src), "main", *inputs)
    for got, want in zip(outputs, expected, strict=True):
        assert got.shape == want.shape and got.dtype == want.dtype, (got, want)
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    assert all(c.ok for c in exe.compare_with_reference(inputs, outputs))
    return outputs


def run_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = run_main(list(argv))
    out, err = capsys.readouterr()
    assert "Traceback" not in err and "internal error" not in err, err
    return code, out, err


# --------------------------------------------------------------------------
# Rank-0 tensors
# --------------------------------------------------------------------------

RANK0 = """\
func.func @main(%x: tensor<f32>, %y: tensor<5xf32>) -> (tensor<f32>, tensor<5xf32>) {
  %e = "accy.exp"(%x) : (tensor<f32>) -> tensor<f32>
  %s = "accy.reduce"(%y) <{kind = "sum", axes = array<i64: 0>}> : (tensor<5xf32>) -> tensor<f32>
  %a = "accy.add"(%e, %s) : (tensor<f32>, tensor<f32>) -> tensor<f32>
  %b = "accy.broadcast"(%a) <{dims = array<i64>}> : (tensor<f32>) -> tensor<5xf32>
  %m = "accy.mul"(%b, %y) : (tensor<5xf32>, tensor<5xf32>) -> tensor<5xf32>
  func.return %a, %m : tensor<f32>, tensor<5xf32>
}
"""


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize(
    "scalar", [np.array(0.75, np.float32), np.float32(0.75), 0.75], ids=["0-d array", "numpy scalar", "python float"]
)
def test_rank0_arguments(device: str, scalar: object) -> None:
    y = np.random.default_rng(3).standard_normal(5).astype(np.float32)
    exe = accy.compile(RANK0, device=device)
    a, m = exe(scalar, y)
    assert a.shape == () and a.dtype == np.float32 and m.shape == (5,)
    want = np.float32(np.exp(np.float32(0.75)) + y.sum())
    np.testing.assert_allclose(a, want, rtol=1e-5)
    np.testing.assert_allclose(m, want * y, rtol=1e-5)
    check_against_reference(RANK0, device, [np.array(0.75, np.float32), y])


INT_RANK0 = """\
func.func @main(%n: tensor<i32>, %m: tensor<i1>, %v: tensor<3xi32>) -> tensor<3xi32> {
  %b = "accy.broadcast"(%n) <{dims = array<i64>}> : (tensor<i32>) -> tensor<3xi32>
  %s = "accy.add"(%v, %b) : (tensor<3xi32>, tensor<3xi32>) -> tensor<3xi32>
  %c = "accy.broadcast"(%m) <{dims = array<i64>}> : (tensor<i1>) -> tensor<3xi1>
  %r = "accy.select"(%c, %s, %v) : (tensor<3xi1>, tensor<3xi32>, tensor<3xi32>) -> tensor<3xi32>
  func.return %r : tensor<3xi32>
}
"""


@pytest.mark.parametrize("device", DEVICES)
def test_python_int_and_bool_for_rank0_integers(device: str) -> None:
    exe = accy.compile(INT_RANK0, device=device)
    v = np.array([1, -2, 3], np.int32)
    np.testing.assert_array_equal(exe(7, True, v)[0], v + 7)
    np.testing.assert_array_equal(exe(7, False, v)[0], v)
    np.testing.assert_array_equal(exe(np.int32(-4), np.bool_(True), v)[0], v - 4)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ((1.5, True), r"argument #0 of @main expects tensor<i32> \(int32, shape \(\)\), got float"),
        ((2**31, True), r"argument #0 of @main expects tensor<i32>: 2147483648 is out of the range of int32"),
        ((1, 1), r"argument #1 of @main expects tensor<i1> \(bool, shape \(\)\), got int"),
        ((np.float32(1), True), r"argument #0 of @main expects tensor<i32> \(int32, shape \(\)\), got float32 array"),
    ],
)
def test_scalars_that_do_not_fit_are_refused(args: tuple[object, object], message: str) -> None:
    exe = accy.compile(INT_RANK0)
    with pytest.raises(ValueError, match=message):
        exe(*args, np.zeros(3, np.int32))


def test_python_scalars_only_for_rank0() -> None:
    exe = accy.compile(RANK0)
    with pytest.raises(ValueError, match=r"argument #1 of @main expects tensor<5xf32>.*got float \(pass a numpy array\)"):
        exe(1.0, 2.0)
    with pytest.raises(ValueError, match=r"argument #0 of @main expects tensor<f32>: 1e\+40 overflows float32"):
        exe(1e40, np.zeros(5, np.float32))


@pytest.mark.parametrize("device", DEVICES)
def test_rank0_through_accy_run(device: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    prog = tmp_path / "r0.mlir"
    prog.write_text(RANK0)
    y = np.arange(5, dtype=np.float32) - 2.5
    np.savez(tmp_path / "in.npz", arg0=np.float32(-1.0), arg1=y)
    code, out, err = run_cli(
        capsys, str(prog), "--device", device, "--inputs", str(tmp_path / "in.npz"), "--out", str(tmp_path / "o.npz")
    )
    assert code == 0, err
    with np.load(tmp_path / "o.npz") as result:
        assert result["out0"].shape == ()
        np.testing.assert_allclose(result["out0"], np.exp(np.float32(-1.0)) + y.sum(), rtol=1e-5)
    code, out, err = run_cli(capsys, str(prog), "--device", device, "--random", "4", "--check")
    assert code == 0 and out.count(": ok") == 2, (out, err)


# --------------------------------------------------------------------------
# A dimension of 0
# --------------------------------------------------------------------------


def _program(args: list[tuple[str, list[int]]], body: str, results: list[tuple[str, list[int]]]) -> str:
    sig = ", ".join(f"%{n}: {ty(s)}" for n, s in args)
    outs = ", ".join(ty(s) for _, s in results)
    names = ", ".join(f"%{n}" for n, _ in results)
    return f"func.func @main({sig}) -> ({outs}) {{\n{body}\n  func.return {names} : {outs}\n}}\n"


def _unary(op: str, shape: list[int], out: list[int], props: str = "") -> str:
    props = f" <{{{props}}}>" if props else ""
    return _program([("x", shape)], f'  %r = "{op}"(%x){props} : ({ty(shape)}) -> {ty(out)}', [("r", out)])


EMPTY: dict[str, str] = {
    "elementwise 0x4": _program(
        [("x", [0, 4]), ("y", [0, 4])],
        f'  %e = "accy.exp"(%x) : ({ty([0, 4])}) -> {ty([0, 4])}\n'
        f'  %r = "accy.add"(%e, %y) : ({ty([0, 4])}, {ty([0, 4])}) -> {ty([0, 4])}',
        [("r", [0, 4])],
    ),
    "empty constant 3x0": _program(
        [("x", [3, 0])],
        f'  %c = "accy.constant"() <{{value = dense<> : {ty([3, 0])}}}> : () -> {ty([3, 0])}\n'
        f'  %r = "accy.mul"(%x, %c) : ({ty([3, 0])}, {ty([3, 0])}) -> {ty([3, 0])}',
        [("r", [3, 0]), ("c", [3, 0])],
    ),
    "splat constant 2x0x3": _program(
        [("x", [2, 0, 3])],
        f'  %c = "accy.constant"() <{{value = dense<2.0> : {ty([2, 0, 3])}}}> : () -> {ty([2, 0, 3])}\n'
        f'  %r = "accy.sub"(%x, %c) : ({ty([2, 0, 3])}, {ty([2, 0, 3])}) -> {ty([2, 0, 3])}',
        [("r", [2, 0, 3])],
    ),
    "sum over an empty axis": _unary("accy.reduce", [3, 0], [3], 'kind = "sum", axes = array<i64: 1>'),
    "max over an empty axis": _unary("accy.reduce", [0, 5], [5], 'kind = "max", axes = array<i64: 0>'),
    "prod of nothing": _unary("accy.reduce", [2, 0], [], 'kind = "prod", axes = array<i64: 0, 1>'),
    "min, empty rows": _unary("accy.reduce", [0, 7], [0], 'kind = "min", axes = array<i64: 1>'),
    "scan 4x0": _unary("accy.scan", [4, 0], [4, 0], 'kind = "sum", axis = 1 : i64, exclusive = false, reverse = false'),
    "softmax over an empty axis": _unary("accy.softmax", [3, 0], [3, 0], "axis = 1 : i64"),
    "log_softmax of no rows": _unary("accy.log_softmax", [0, 6], [0, 6], "axis = 1 : i64"),
    "transpose 0x3": _unary("accy.transpose", [0, 3], [3, 0], "permutation = array<i64: 1, 0>"),
    "reshape 0x6": _unary("accy.reshape", [0, 6], [3, 0, 2]),
    "slice to nothing": _unary(
        "accy.slice", [4, 5], [0, 5], "start = array<i64: 2, 0>, limit = array<i64: 2, 5>, stride = array<i64: 1, 1>"
    ),
    "broadcast to 0x3": _unary("accy.broadcast", [3], [0, 3], "dims = array<i64: 1>"),
    "dot, empty contraction": _program(
        [("a", [3, 0]), ("b", [0, 5])],
        '  %r = "accy.dot_general"(%a, %b) <{lhs_batch = array<i64>, rhs_batch = array<i64>, '
        f"lhs_contract = array<i64: 1>, rhs_contract = array<i64: 0>}}> : ({ty([3, 0])}, {ty([0, 5])}) -> {ty([3, 5])}",
        [("r", [3, 5])],
    ),
    "dot, no rows": _program(
        [("a", [0, 4]), ("b", [4, 3])],
        '  %r = "accy.dot_general"(%a, %b) <{lhs_batch = array<i64>, rhs_batch = array<i64>, '
        f"lhs_contract = array<i64: 1>, rhs_contract = array<i64: 0>}}> : ({ty([0, 4])}, {ty([4, 3])}) -> {ty([0, 3])}",
        [("r", [0, 3])],
    ),
    "concat with an empty piece": _program(
        [("x", [0, 5]), ("y", [3, 5])],
        f'  %r = "accy.concat"(%x, %y) <{{axis = 0 : i64}}> : ({ty([0, 5])}, {ty([3, 5])}) -> {ty([3, 5])}',
        [("r", [3, 5])],
    ),
    "layer_norm of no rows": _program(
        [("x", [0, 8]), ("g", [8]), ("b", [8])],
        '  %r = "accy.layer_norm"(%x, %g, %b) <{epsilon = 1.0e-05 : f32}> : '
        f"({ty([0, 8])}, {ty([8])}, {ty([8])}) -> {ty([0, 8])}",
        [("r", [0, 8])],
    ),
    "attention, no queries": _program(
        [("q", [0, 4]), ("k", [3, 4]), ("v", [3, 4])],
        '  %r = "accy.attention"(%q, %k, %v) <{scale = 0.5 : f32, causal = false}> : '
        f"({ty([0, 4])}, {ty([3, 4])}, {ty([3, 4])}) -> {ty([0, 4])}",
        [("r", [0, 4])],
    ),
}

#: Results numpy knows for some of them: reductions of nothing are identities.
KNOWN = {
    "sum over an empty axis": lambda x: np.zeros(3, np.float32),
    "max over an empty axis": lambda x: np.full(5, -np.inf, np.float32),
    "prod of nothing": lambda x: np.float32(1.0),
}


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("name", list(EMPTY))
def test_zero_size_tensors(name: str, device: str) -> None:
    src = EMPTY[name]
    exe = accy.compile(src, device=device)
    inputs = exe.random_inputs(5)
    outputs = check_against_reference(src, device, inputs)
    if name in KNOWN:
        np.testing.assert_array_equal(outputs[0], KNOWN[name](*inputs))
    if name == "dot, empty contraction":
        np.testing.assert_array_equal(outputs[0], np.zeros((3, 5), np.float32))


def test_zero_size_through_accy_run_check(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    prog = tmp_path / "empty.mlir"
    prog.write_text(EMPTY["empty constant 3x0"])
    code, out, err = run_cli(capsys, str(prog), "--device", "opencl", "--check")
    assert code == 0 and out.count(": ok") == 2, (out, err)
    assert "array([], shape=(3, 0), dtype=float32)" in out


# --------------------------------------------------------------------------
# func.call
# --------------------------------------------------------------------------

CALLS = """\
func.func @helper(%x: tensor<3x5xf32>, %y: tensor<3x5xf32>) -> tensor<3x5xf32> {
  %a = "accy.exp"(%x) : (tensor<3x5xf32>) -> tensor<3x5xf32>
  %r = "accy.iterate"(%a) <{count = 2 : i64}> ({
  ^bb0(%v: tensor<3x5xf32>):
    %d = "accy.mul"(%v, %y) : (tensor<3x5xf32>, tensor<3x5xf32>) -> tensor<3x5xf32>
    "accy.yield"(%d) : (tensor<3x5xf32>) -> ()
  }) : (tensor<3x5xf32>) -> tensor<3x5xf32>
  func.return %r : tensor<3x5xf32>
}
func.func @norm(%x: tensor<3x5xf32>) -> tensor<3x5xf32> {
  %s = "accy.softmax"(%x) <{axis = 1 : i64}> : (tensor<3x5xf32>) -> tensor<3x5xf32>
  %h = func.call @helper(%s, %x) : (tensor<3x5xf32>, tensor<3x5xf32>) -> tensor<3x5xf32>
  func.return %h : tensor<3x5xf32>
}
func.func @main(%x: tensor<3x5xf32>) -> (tensor<3x5xf32>, tensor<3xf32>) {
  %a = func.call @norm(%x) : (tensor<3x5xf32>) -> tensor<3x5xf32>
  %n = "accy.neg"(%a) : (tensor<3x5xf32>) -> tensor<3x5xf32>
  %b = func.call @helper(%n, %a) : (tensor<3x5xf32>, tensor<3x5xf32>) -> tensor<3x5xf32>
  %s = "accy.reduce"(%b) <{kind = "sum", axes = array<i64: 1>}> : (tensor<3x5xf32>) -> tensor<3xf32>
  func.return %b, %s : tensor<3x5xf32>, tensor<3xf32>
}
func.func @unused(%x: tensor<2xf32>) -> tensor<2xf32> {
  %a = func.call @unused(%x) : (tensor<2xf32>) -> tensor<2xf32>
  func.return %a : tensor<2xf32>
}
"""


@pytest.mark.parametrize("device", DEVICES)
def test_calls_run_inlined(device: str) -> None:
    x = np.random.default_rng(8).standard_normal((3, 5)).astype(np.float32)
    b, s = check_against_reference(CALLS, device, [x])
    # By hand: helper(x, y) = exp(x) * y * y.
    e = np.exp(x - x.max(axis=1, keepdims=True))
    norm = e / e.sum(axis=1, keepdims=True)
    a = np.exp(norm) * x * x
    want = np.exp(-a) * a * a
    np.testing.assert_allclose(b, want, rtol=1e-4)
    np.testing.assert_allclose(s, want.sum(axis=1), rtol=1e-4)
    # (The recursion in @unused does not matter: accy runs @main and what it calls.)


CANNOT_RUN = {
    "recursion": (
        CALLS + 'func.func @r(%x: tensor<2xf32>) -> tensor<2xf32> {\n  %a = func.call @unused(%x) : (tensor<2xf32>) -> '
        "tensor<2xf32>\n  func.return %a : tensor<2xf32>\n}\n",
        "r",
        r"23:3: error: 'func.call' op recursive call \(@unused -> @unused\): accy cannot run recursion",
    ),
    "declared only": (
        "func.func private @ext(tensor<2xf32>) -> tensor<2xf32>\n"
        "func.func @main(%x: tensor<2xf32>) -> tensor<2xf32> {\n"
        "  %a = func.call @ext(%x) : (tensor<2xf32>) -> tensor<2xf32>\n  func.return %a : tensor<2xf32>\n}\n",
        "main",
        r"1:1: error: 'func.func' op @ext is only declared: accy needs the body of every function it runs",
    ),
    "an op accy cannot run": (
        "func.func @main(%y: tensor<4xf32>) -> tensor<4xf32> {\n  %c = arith.constant dense<1.0> : tensor<4xf32>\n"
        '  %a = "accy.add"(%y, %c) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>\n  func.return %a : tensor<4xf32>\n}\n',
        "main",
        r"2:3: error: 'arith.constant' op accy cannot run this op",
    ),
    "a scalar result": (
        "func.func @main(%y: tensor<4xf32>) -> f32 {\n  %c = arith.constant 1.0 : f32\n  func.return %c : f32\n}\n",
        "main",
        r"1:1: error: 'func.func' op result #0 of @main has type f32; accy runs functions over tensors",
    ),
}


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("case", list(CANNOT_RUN))
def test_what_accy_cannot_run_is_a_located_error(
    case: str, device: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    src, fn, message = CANNOT_RUN[case]
    prog = tmp_path / "prog.mlir"
    prog.write_text(src)
    code, out, err = run_cli(capsys, str(prog), "--fn", fn, "--device", device)
    assert code == 1 and out == ""
    assert err.startswith(str(prog) + ":"), err
    assert re.search(message, err.splitlines()[0]), err
    with pytest.raises(accy.SourceDiagnostic, match=message):
        accy.compile(prog, device=device, fn=fn)


# --------------------------------------------------------------------------
# The verifier, through the Python API and accy-run (lit covers accy-opt)
# --------------------------------------------------------------------------

UNVERIFIABLE = {
    "use before definition": (
        "func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {\n"
        '  %a = "accy.exp"(%b) : (tensor<4xf32>) -> tensor<4xf32>\n'
        '  %b = "accy.exp"(%x) : (tensor<4xf32>) -> tensor<4xf32>\n'
        "  func.return %a : tensor<4xf32>\n}\n",
        "2:3: error: 'accy.exp' op operand #0 (%b) is used before it is defined (at line 3, column 3)",
    ),
    "self-use": (
        "func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {\n"
        '  %a = "accy.add"(%a, %x) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>\n'
        "  func.return %a : tensor<4xf32>\n}\n",
        "2:3: error: 'accy.add' op operand #0 (%a) is the op's own result",
    ),
    "non-tensor argument": (
        "func.func @main(%s: f32, %x: tensor<4xf32>) -> tensor<4xf32> {\n"
        '  %a = "accy.exp"(%x) : (tensor<4xf32>) -> tensor<4xf32>\n'
        "  func.return %a : tensor<4xf32>\n}\n",
        "1:1: error: 'func.func' op argument #0 (%s) of @main has type f32; accy functions take tensors",
    ),
    "kernel_call to a missing symbol": (
        "func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {\n"
        '  %a = "accy.kernel_call"(%x) <{callee = @kernels::@absent}> : (tensor<4xf32>) -> tensor<4xf32>\n'
        "  func.return %a : tensor<4xf32>\n}\n",
        "2:3: error: 'accy.kernel_call' op callee @kernels::@absent is not defined in the module",
    ),
    "negative epsilon": (
        "func.func @main(%x: tensor<2x4xf32>, %g: tensor<4xf32>) -> tensor<2x4xf32> {\n"
        '  %r = "accy.layer_norm"(%x, %g, %g) <{epsilon = -0.5 : f32}> : '
        "(tensor<2x4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<2x4xf32>\n"
        "  func.return %r : tensor<2x4xf32>\n}\n",
        "2:3: error: 'accy.layer_norm' op epsilon must be a finite number >= 0, got -0.5",
    ),
}


@pytest.mark.parametrize("case", list(UNVERIFIABLE))
def test_verifier_errors_are_located(case: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src, message = UNVERIFIABLE[case]
    prog = tmp_path / "prog.mlir"
    prog.write_text(src)
    with pytest.raises(accy.SourceDiagnostic) as info:
        accy.parse_module(prog)
    assert str(info.value).startswith(f"{prog}:{message}"), str(info.value)
    for device in DEVICES:
        code, out, err = run_cli(capsys, str(prog), "--device", device)
        assert code == 1 and err.startswith(f"{prog}:{message}"), err


# --------------------------------------------------------------------------
# float16 (and float64) where the device cannot compute in them
# --------------------------------------------------------------------------

HALF = """\
func.func @main(%x: tensor<5x7xf16>) -> tensor<5x7xf16> {
  %e = "accy.exp"(%x) : (tensor<5x7xf16>) -> tensor<5x7xf16>
  %a = "accy.add"(%e, %x) : (tensor<5x7xf16>, tensor<5x7xf16>) -> tensor<5x7xf16>
  func.return %a : tensor<5x7xf16>
}
"""

FAST_HALF = f'builtin.module attributes {{accy.target = #accy.target<profile = "cpu", math = "fast">}} {{\n{HALF}}}\n'


def opencl_extensions() -> set[str]:
    from accy.runtime.devices import get_device

    return set(get_device("opencl").cl_device.extensions.split())  # type: ignore[attr-defined]


def test_profile_says_which_float_types_the_device_computes_in() -> None:
    from accy.runtime.devices import get_device

    profile = get_device("opencl").target_profile()  # type: ignore[attr-defined]
    assert profile.fp16 == ("cl_khr_fp16" in opencl_extensions())
    assert profile.fp64 == ("cl_khr_fp64" in opencl_extensions())


def test_float16_runs_on_any_device(capsys: pytest.CaptureFixture[str]) -> None:
    x = np.random.default_rng(2).standard_normal((5, 7)).astype(np.float16)
    exe = accy.compile(HALF, device="opencl")
    err = capsys.readouterr().err
    (got,) = exe(x)
    (want,) = accy.reference.run(accy.parse_module(HALF), "main", x)
    np.testing.assert_allclose(got.astype(np.float32), want.astype(np.float32), rtol=1e-2, atol=1e-3)
    # A kernel either way: without cl_khr_fp16, f16 is stored in 16 bits and
    # computed in f32, each op rounded once, as the reference does.
    assert exe.stats.kernels == 1 and exe.stats.fallbacks == 0, err
    if "cl_khr_fp16" not in opencl_extensions():
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize(("source", "flags", "why"), [(HALF, ["--strict"], "strict kernelization"), (FAST_HALF, [], "the fast math tier")])
def test_float16_without_the_extension_under_strict_or_fast(
    source: str, flags: list[str], why: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Strict kernelization and the fast tier allow no host fallback: f16
    runs as a kernel whether or not the device has cl_khr_fp16 (strict or fast)."""
    prog = tmp_path / "half.mlir"
    prog.write_text(source)
    code, out, err = run_cli(capsys, str(prog), "--device", "opencl", "--check", *flags)
    assert code == 0 and ": ok" in out, err
