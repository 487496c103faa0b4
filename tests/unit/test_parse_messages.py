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
        "xDSL cannot store values of type f80 (it has no byte layout for it): use f16, f32 or f64",
    ),
    (_op('%e = "accy.exp"(%x) {a = array<f80>} : (tensor<4xf32>) -> tensor<4xf32>'), "2:", "xDSL cannot store values of type f80"),
    (
        _op('%e = "accy.exp"(%x) {a = dense<1.0> : tensor<2xf80>} : (tensor<4xf32>) -> tensor<4xf32>'),
        "2:41",
        "accy reads no dense literal of element type f80 (use f16, f32 or f64)",
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
