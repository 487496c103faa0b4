"""`kernelize` refuses an element type accy does not run (`i7`, `ui8`, `i128`)
with one error naming the function, the op or argument and the type, as
`accy.compile` does, not a VerifyException from a vector cast it built."""

from __future__ import annotations

from pathlib import Path

import pytest

import accy
from accy.cli.opt import main as accy_opt

CASES = {
    "argument": ("i7", "i8", "argument #0 of @main", "i7"),
    "op-result": ("f32", "i7", "'accy.cast' (result #0) in @main", "i7"),
    "unsigned": ("ui8", "i32", "argument #0 of @main", "ui8"),
    "signed": ("si32", "i32", "argument #0 of @main", "si32"),
    "signed-result": ("f32", "si8", "'accy.cast' (result #0) in @main", "si8"),
    "wide": ("f32", "i128", "'accy.cast' (result #0) in @main", "i128"),
}


def cast_src(src_type: str, dst_type: str) -> str:
    return (
        f"func.func @main(%a: tensor<64x{src_type}>) -> tensor<64x{dst_type}> {{\n"
        f'  %c = "accy.cast"(%a) : (tensor<64x{src_type}>) -> tensor<64x{dst_type}>\n'
        f"  func.return %c : tensor<64x{dst_type}>\n}}\n"
    )


@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
def test_accy_opt_kernelize_names_the_type(case, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src_type, dst_type, where, bad = case
    path = tmp_path / "prog.mlir"
    path.write_text(cast_src(src_type, dst_type))
    rc = accy_opt([str(path), "-p", "kernelize", "--reproducer-dir", str(tmp_path)])
    err = capsys.readouterr().err
    assert rc == 1
    # One diagnostic, at the op or function (issue 21: located, as the user's error).
    errors = [line for line in err.splitlines() if "error:" in line]
    assert len(errors) == 1, err
    assert where in errors[0] and f"accy runs no element type {bad}" in errors[0], err
    assert errors[0].startswith(f"{path}:"), err
    assert "VerifyException" not in err and "Traceback" not in err
    assert "failed" not in err and not list(tmp_path.glob("accy-repro-*")), "reported as if kernelize had crashed"


def test_compile_refuses_the_same_type() -> None:
    """accy.compile's check (before any pass) says the same words."""
    with pytest.raises(accy.SourceDiagnostic, match="accy runs no element type i7"):
        accy.compile(cast_src("i7", "i8"), device="llvm")


@pytest.mark.parametrize("device", ["llvm", "opencl", "reference"])
def test_compile_refuses_a_signed_integer(device: str) -> None:
    """`si32` is not `i32`: every device refuses it at compile, at the function
    (the llvm device used to fail at run with "no buffer of element type si32")."""
    with pytest.raises(accy.SourceDiagnostic, match="accy runs no element type si32") as info:
        accy.compile(cast_src("si32", "i32"), device=device)
    assert str(info.value).startswith("<input>:1:1: error:"), info.value
