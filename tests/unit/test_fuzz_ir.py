"""accy-opt on mangled IR: whatever the input, it ends in output or one clean
diagnostic (exit 0 or 1), never in a Python traceback or an internal error.

Inputs are valid programs (tests/programs/*.mlir, plus two inline ones) with
characters or tokens deleted, duplicated or swapped, or cut short.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from accy.cli.opt import main

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
    path = tmp_path / "fuzz.mlir"
    path.write_text(text)
    argv = [str(path), "--reproducer-dir", str(tmp_path / "repro")]
    if passes:
        argv += ["-p", passes]
    code = main(argv)
    out, err = capsys.readouterr()
    assert code in (0, 1), (code, err)
    assert "Traceback" not in err and "internal error" not in err, err
    if code == 0:
        assert "builtin.module" in out
    else:
        assert err.strip(), "a failure must say why"
        assert "error: " in err.splitlines()[0]


@pytest.mark.parametrize("text", CORPUS)
def test_corpus_is_valid(text: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # Mangling must start from programs accy-opt accepts.
    path = tmp_path / "ok.mlir"
    path.write_text(text)
    assert main([str(path)]) == 0, capsys.readouterr().err
