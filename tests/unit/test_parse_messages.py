"""Parse errors xDSL words badly are one clear, located message (issue 19):
`Expected suffix identifier after {first_char}` (an unfilled placeholder),
`Expected ':'function type signature expected` (two messages glued),
`error:  in block definition` (nothing said) and `NotImplementedError:`
with no text for `array<f80>`."""

from __future__ import annotations

from pathlib import Path

import pytest

import accy
from accy.cli.opt import main as accy_opt

HEAD = "func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {\n"
TAIL = "  func.return %e : tensor<4xf32>\n}\n"
EXP = '  %e = "accy.exp"(%x) : (tensor<4xf32>) -> tensor<4xf32>\n'


def _op(text: str) -> str:
    return HEAD + f"  {text}\n" + TAIL


CASES = [
    (_op('%e = "accy.exp"(% ) : (tensor<4xf32>) -> tensor<4xf32>'), "2:19", "expected a name after '%' (a value, as in %x"),
    (_op('%e = "accy.exp"(%x) {a = # } : (tensor<4xf32>) -> tensor<4xf32>'), "2:28", "expected a name after '#'"),
    (_op('%e = "accy.exp"(%x) : (! ) -> tensor<4xf32>'), "2:26", "expected a name after '!'"),
    (HEAD + "  ^ \n" + TAIL, "2:3", "expected a name after '^' (a block label, as in ^bb0)"),
    (_op('%e = "accy.exp"(%x) -> tensor<4xf32>'), "2:23", "Expected ':' before the op's function type, as in `: ("),
    (_op('%e = "accy.exp"(%x) {} tensor<4xf32>'), "2:26", "Expected ':' before the op's function type"),
    (HEAD + EXP + TAIL.replace("}", "  42\n}"), "4:3", "expected an operation or a block label (as in ^bb0:) here, got '42'"),
    (HEAD + "  42\n}\n", "2:3", "expected an operation or a block label (as in ^bb0:) here, got '42'"),
    (
        _op('%e = "accy.exp"(%x) {a = array<f80: 1.0>} : (tensor<4xf32>) -> tensor<4xf32>'),
        "2:",
        "xDSL cannot store values of type f80 (it has no byte layout for it): use f16, bf16, f32 or f64",
    ),
    (_op('%e = "accy.exp"(%x) {a = array<f80>} : (tensor<4xf32>) -> tensor<4xf32>'), "2:", "xDSL cannot store values of type f80"),
    (
        _op('%e = "accy.exp"(%x) {a = dense<1.0> : tensor<2xf80>} : (tensor<4xf32>) -> tensor<4xf32>'),
        "2:41",
        "accy reads no dense literal of element type f80 (use f16, bf16, f32 or f64)",
    ),
    # Issue 21: a token named as written, not by the lexer's kind (L_SQUARE).
    (HEAD.replace("(%x: tensor<4xf32>)", "(%x: tensor<4[f32>)") + EXP + TAIL, "1:29", "Expected 'x' in shape delimiter, got '['"),
    # Issue 21: nothing to read, or a stray token, said so ("Could not parse entire input!").
    ("", "1:1", "the input holds no operation (it is empty or only comments)"),
    ("// a comment\n", "1:1", "the input holds no operation (it is empty or only comments)"),
    (HEAD + EXP + TAIL + "}\n", "5:1", "expected an operation here, got '}'"),
    # Issue 21: an implicit broadcast, in the user's words (not "expected from variable 'T'").
    (
        HEAD.replace("(%x: tensor<4xf32>)", "(%x: tensor<4xf32>, %y: tensor<1xf32>)")
        + '  %e = "accy.mul"(%x, %y) : (tensor<4xf32>, tensor<1xf32>) -> tensor<4xf32>\n'
        + TAIL,
        "2:3",
        "'accy.mul' op operand 'rhs' has type tensor<1xf32>, but operand 'lhs' has type tensor<4xf32>: 'lhs', 'rhs' "
        "and 'result' of 'accy.mul' must have one type (accy does not broadcast implicitly",
    ),
]


@pytest.mark.parametrize(("text", "where", "message"), CASES)
def test_message_is_clear_and_located(text: str, where: str, message: str) -> None:
    with pytest.raises(accy.SourceDiagnostic) as e:
        accy.parse_module(text)
    first = str(e.value).splitlines()[0]
    assert first.startswith(f"<input>:{where}") and f"error: {message}" in first, first
    assert "{first_char}" not in first
    assert "error:  " not in first and "NotImplementedError" not in first


def test_through_accy_opt_one_line_no_traceback(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "bad.mlir"
    path.write_text(HEAD + "  42\n}\n")
    assert accy_opt([str(path)]) == 1
    out, err = capsys.readouterr()
    assert out == "" and "Traceback" not in err and err.count("error:") == 1
    assert err.startswith(f"{path}:2:3: error: expected an operation or a block label")
