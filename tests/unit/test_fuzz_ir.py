"""accy's front door on mangled IR: whatever the input, `accy-opt`, `accy-run`
and `accy.parse_module` end in output or one clean diagnostic (exit 0 or 1),
never in a hang, a Python traceback or an internal error.

Inputs are valid programs (tests/programs/*.mlir, plus two inline ones) with
characters or tokens deleted, duplicated or swapped, or cut short; and, one
character at a time, with a quote or bracket deleted, one inserted, or the
text truncated. Each input runs under a time bound (`bounded`): xDSL's own
lexer takes exponential time on an unterminated string literal.
"""

from __future__ import annotations

import random
import re
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from xdsl.dialects.builtin import ModuleOp

import accy
from accy.cli.opt import main
from accy.cli.run import main as run_main

sys.path.insert(0, str(Path(__file__).parents[2] / "tools"))
from time_limit import time_limit  # noqa: E402

#: Seconds one input may take (parse, verify, a short pipeline). Valid inputs
#: take well under a second; the bound only turns a hang into a failure.
TIME_BOUND = 20.0


@contextmanager
def bounded(text: str, seconds: float = TIME_BOUND) -> Iterator[None]:
    """Fails the test, naming the input, when the body runs past `seconds`.
    The tools catch every exception, so expiry is recorded, not only raised."""
    with time_limit(seconds) as limit:
        try:
            yield
        finally:
            assert not limit.expired, f"no result within {seconds} s for input:\n{text}"


INLINE = [
    """\
func.func @main(%x: tensor<4x8xf32>, %g: tensor<8xf32>, %b: tensor<8xf32>) -> tensor<4xf32> {
  %n = "accy.layer_norm"(%x, %g, %b) <{epsilon = 1.0e-05 : f32}> : (tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %e = "accy.exp"(%n) : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %t = "accy.transpose"(%e) <{permutation = array<i64: 1, 0>}> : (tensor<4x8xf32>) -> tensor<8x4xf32>
  %s = "accy.reduce"(%t) <{kind = "max", axes = array<i64: 0>}> : (tensor<8x4xf32>) -> tensor<4xf32>
  func.return %s : tensor<4xf32>
}
""",
    """\
func.func @main(%a: tensor<3xi32>, %m: tensor<3xi1>) -> tensor<3xi32> {
  %c = "accy.constant"() <{value = dense<[1, 2, 3]> : tensor<3xi32>}> : () -> tensor<3xi32>
  %s = "accy.add"(%a, %c) : (tensor<3xi32>, tensor<3xi32>) -> tensor<3xi32>
  %r = "accy.select"(%m, %s, %a) : (tensor<3xi1>, tensor<3xi32>, tensor<3xi32>) -> tensor<3xi32>
  %i = "accy.iterate"(%r) <{count = 2 : i64}> ({
  ^bb0(%v: tensor<3xi32>):
    %d = "accy.mul"(%v, %v) : (tensor<3xi32>, tensor<3xi32>) -> tensor<3xi32>
    "accy.yield"(%d) : (tensor<3xi32>) -> ()
  }) : (tensor<3xi32>) -> tensor<3xi32>
  func.return %i : tensor<3xi32>
}
""",
    """\
func.func @main(%x: tensor<5x3xf32>, %i: tensor<2x4xi64>) -> (tensor<2x4x3xf32>, tensor<5x7xi32>) {
  %r = "accy.relu"(%x) : (tensor<5x3xf32>) -> tensor<5x3xf32>
  %g = "accy.gather"(%r, %i) <{axis = 0 : i64}> : (tensor<5x3xf32>, tensor<2x4xi64>) -> tensor<2x4x3xf32>
  %p = "accy.iota"() <{dimension = 1 : i64}> : () -> tensor<5x7xi32>
  func.return %g, %p : tensor<2x4x3xf32>, tensor<5x7xi32>
}
""",
]

CORPUS_DIR = Path(__file__).parents[1] / "programs"
CORPUS = [p.read_text() for p in sorted(CORPUS_DIR.glob("*.mlir"))][:20] + INLINE

TOKEN = re.compile(r"%\w+|@\w+|\"[^\"]*\"|\w+|\s+|.", re.S)


@st.composite
def mangled(draw: st.DrawFn) -> str:
    text = draw(st.sampled_from(CORPUS))
    tokens = TOKEN.findall(text) if draw(st.booleans()) else list(text)
    for _ in range(draw(st.integers(1, 4))):
        if not tokens:
            break
        i = draw(st.integers(0, len(tokens) - 1))
        match draw(st.sampled_from(["delete", "duplicate", "swap", "truncate", "replace"])):
            case "delete":
                del tokens[i]
            case "duplicate":
                tokens.insert(i, tokens[i])
            case "swap":
                j = draw(st.integers(0, len(tokens) - 1))
                tokens[i], tokens[j] = tokens[j], tokens[i]
            case "truncate":
                del tokens[i:]
            case "replace":
                tokens[i] = draw(st.sampled_from(["0", "-1", "f32", "i1", "%x", "(", ")", "<", ">", "{", "}", ":", ",", "x"]))
    return "".join(tokens)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=mangled(), passes=st.sampled_from(["", "canonicalize,cse"]))
def test_mangled_ir_never_crashes(text: str, passes: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    check_opt(text, passes, tmp_path, capsys)


def check_opt(text: str, passes: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """accy-opt on `text` prints a module or one clean diagnostic, in time."""
    path = tmp_path / "fuzz.mlir"
    path.write_text(text)
    argv = [str(path), "--reproducer-dir", str(tmp_path / "repro")]
    if passes:
        argv += ["-p", passes]
    with bounded(text):
        code = main(argv)
    out, err = capsys.readouterr()
    assert code in (0, 1), (code, err)
    assert "Traceback" not in err and "internal error" not in err, err
    if code == 0:
        assert "builtin.module" in out
    else:
        assert err.strip(), "a failure must say why"
        assert "error: " in err.splitlines()[0]


def check_parse_module(text: str) -> None:
    """accy.parse_module on `text` returns a module or raises SourceDiagnostic, in time."""
    with bounded(text):
        try:
            module = accy.parse_module(text if "\n" in text else text + "\n")
        except accy.SourceDiagnostic as e:
            assert "error: " in str(e).splitlines()[0], str(e)
        else:
            assert isinstance(module, ModuleOp)


#: What character-level mutations delete and insert: quotes and brackets.
DELIMITERS = "\"()<>{}[]"


def character_mutations(seed: int, count: int) -> list[str]:
    """`count` corpus programs, each with one delimiter deleted, one inserted
    at a random place, or cut short at a random character."""
    rng = random.Random(seed)
    out = []
    for _ in range(count):
        text = rng.choice(CORPUS)
        kind = rng.choice(["delete", "insert", "truncate"])
        if kind == "delete":
            spots = [i for i, c in enumerate(text) if c in DELIMITERS]
            i = rng.choice(spots)
            out.append(text[:i] + text[i + 1 :])
        elif kind == "insert":
            i = rng.randrange(len(text) + 1)
            out.append(text[:i] + rng.choice(DELIMITERS) + text[i:])
        else:
            out.append(text[: rng.randrange(len(text))])
    return out


UNTERMINATED = [
    # The reproducer: the op name's closing quote is missing.
    '%0 = "accy.exp(%x) : (tensor<4x8xf32>) -> tensor<4x8xf32>\n',
    'func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {\n  %0 = "accy.exp(%x) : (tensor<4xf32>) -> tensor<4xf32>\n'
    "  func.return %0 : tensor<4xf32>\n}\n",
    '"' + "accy.exp(%x) : (tensor<4x8xf32>) -> tensor<4x8xf32> " * 40,
    '"accy.reduce"(%x) <{kind = "sum, axes = array<i64: 1>}> : (tensor<4x8xf32>) -> tensor<4xf32>\n',
    '"\\q and a bad escape, then a long tail of plain characters that would backtrack"\n',
]


@pytest.mark.parametrize("text", UNTERMINATED)
def test_unterminated_string_is_a_located_error(text: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "bad.mlir"
    path.write_text(text)
    with bounded(text, 5.0):
        code = main([str(path)])
    err = capsys.readouterr().err
    assert code == 1
    first = err.splitlines()[0]
    assert re.match(rf"{re.escape(str(path))}:\d+:\d+: error: unterminated string literal", first), err
    with bounded(text, 5.0):
        code = run_main([str(path)])
    err = capsys.readouterr().err
    assert code == 1 and "unterminated string literal" in err and "internal error" not in err, err
    with bounded(text, 5.0), pytest.raises(accy.SourceDiagnostic, match="unterminated string literal"):
        accy.parse_module(text if "\n" in text else text + "\n")


@pytest.mark.parametrize("seed", range(4))
def test_character_mutations_end_in_time(seed: int, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # 4 x 60 inputs through accy-opt and the Python API, each under the bound.
    for text in character_mutations(seed, 60):
        check_opt(text, "", tmp_path, capsys)
        check_parse_module(text)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=mangled())
def test_accy_run_on_mangled_ir(text: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # accy-run parses, verifies, compiles for the reference device and runs.
    path = tmp_path / "fuzz.mlir"
    path.write_text(text)
    with bounded(text):
        code = run_main([str(path), "--random", "0"])
    out, err = capsys.readouterr()
    assert code in (0, 1), (code, err)
    assert "Traceback" not in err and "internal error" not in err, err
    if code == 1:
        assert "error: " in err.splitlines()[0], err


@pytest.mark.parametrize("text", CORPUS)
def test_corpus_is_valid(text: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # Mangling must start from programs accy-opt accepts.
    path = tmp_path / "ok.mlir"
    path.write_text(text)
    assert main([str(path)]) == 0, capsys.readouterr().err


def test_bounded_fails_a_body_that_swallows_the_time_limit() -> None:
    """As accy-opt's `main` catches every error: a body that catches the
    expiry still fails `bounded`, naming the input; and the SIGALRM handler
    in place before is back after."""
    import signal

    before = signal.getsignal(signal.SIGALRM)
    with pytest.raises(AssertionError, match=r"no result within 0.01 s for input:\n\s*my input"):
        with bounded("my input", 0.01):
            try:
                while True:
                    pass
            except Exception:
                pass
    assert signal.getsignal(signal.SIGALRM) is before
    with bounded("quick", 5.0):  # a body within its bound passes
        pass
