"""accy-opt as a user runs it: outputs, diagnostics and exit codes.

Most cases call `main(argv)` in-process (fast); a few run the installed
console script to check the entry point itself.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from accy.cli.opt import main

PROGRAM = """\
func.func @main(%x: tensor<3x17xf32>) -> tensor<3xf32> {
  %e = "accy.exp"(%x) : (tensor<3x17xf32>) -> tensor<3x17xf32>
  %n = "accy.neg"(%e) : (tensor<3x17xf32>) -> tensor<3x17xf32>
  %m = "accy.neg"(%n) : (tensor<3x17xf32>) -> tensor<3x17xf32>
  %s = "accy.reduce"(%m) <{kind = "sum", axes = array<i64: 1>}> : (tensor<3x17xf32>) -> tensor<3xf32>
  func.return %s : tensor<3xf32>
}
"""

# Line 3, column 3: the op whose result type is wrong.
INVALID = """\
func.func @main(%x: tensor<3xf32>) -> tensor<3xf32> {
  %e = "accy.exp"(%x) : (tensor<3xf32>) -> tensor<3xf32>
  %f = "accy.exp"(%e) : (tensor<3xf32>) -> tensor<4xf32>
  func.return %e : tensor<3xf32>
}
"""

SYNTAX_ERROR = """\
func.func @main(%x: tensor<3xf32>) -> tensor<3xf32> {
  %e = "accy.exp"(%x) : (tensor<3xf32>) ->
}
"""


@pytest.fixture
def prog(tmp_path: Path) -> Path:
    path = tmp_path / "prog.mlir"
    path.write_text(PROGRAM)
    return path


def run_opt(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    try:
        code = main(list(argv))
    except SystemExit as e:  # argparse
        code = int(e.code or 0)
    out, err = capsys.readouterr()
    return code, out, err


def test_roundtrip_prints_module(prog: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_opt(capsys, str(prog))
    assert code == 0 and err == ""
    assert "func.func @main" in out and "accy.reduce" in out


def test_print_op_generic(prog: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_opt(capsys, str(prog), "--print-op-generic")
    assert code == 0
    assert '"accy.exp"(%x)' in out and '"builtin.module"' in out


def test_canonicalize_pipeline_runs_through_pass_manager(prog: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_opt(capsys, str(prog), "-p", "canonicalize")
    assert code == 0
    assert "accy.neg" not in out  # neg(neg x) folded
    assert "accy.exp" in out


def test_verify_error_is_located_and_clean(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "bad.mlir"
    path.write_text(INVALID)
    code, out, err = run_opt(capsys, str(path))
    assert code == 1 and out == ""
    first = err.splitlines()[0]
    assert first.startswith(f"{path}:3:3: error: 'accy.exp' op")
    assert "Traceback" not in err
    assert err.count("error:") == 1


def test_parse_error_is_located_and_clean(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "syntax.mlir"
    path.write_text(SYNTAX_ERROR)
    code, out, err = run_opt(capsys, str(path))
    assert code == 1 and out == ""
    # At the end of the line that lacks the type (as MLIR does), not at the next line's first token.
    assert re.match(rf"{re.escape(str(path))}:2:43: error: type expected", err)
    assert "Traceback" not in err


def test_split_input_file_verify_diagnostics(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "split.mlir"
    path.write_text(PROGRAM + "// -----\n" + INVALID)
    code, out, _ = run_opt(capsys, str(path), "--split-input-file", "--verify-diagnostics")
    assert code == 0
    chunks = out.split("// -----")
    assert "accy.reduce" in chunks[0]
    # The error's line counts from the start of the whole file.
    line = PROGRAM.count("\n") + 1 + 3
    assert f"{path}:{line}:3: error: 'accy.exp' op" in chunks[1]


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["-p", "no-such-pass"], "accy-opt: error: unknown pass 'no-such-pass'"),
        (["-p", "cse{bogus=1}"], "accy-opt: error: invalid options for pass 'cse'"),
        (["-p", "cse{"], "accy-opt: error: invalid pass pipeline"),
    ],
)
def test_bad_pipeline_is_one_line(prog: Path, capsys: pytest.CaptureFixture[str], argv: list[str], message: str) -> None:
    code, out, err = run_opt(capsys, str(prog), *argv)
    assert code == 1 and out == ""
    assert err.startswith(message)
    assert "Traceback" not in err


def test_missing_input_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run_opt(capsys, str(tmp_path / "absent.mlir"))
    assert code == 1
    assert err.strip() == f"accy-opt: error: no such file: '{tmp_path / 'absent.mlir'}'"


def test_unknown_option_is_argparse_error(prog: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run_opt(capsys, str(prog), "--no-such-flag")
    assert code == 2 and "unrecognized arguments: --no-such-flag" in err


def test_list_passes_shows_name_version_summary(capsys: pytest.CaptureFixture[str]) -> None:
    from accy.passes.registry import PASSES

    code, out, _ = run_opt(capsys, "--list-passes")
    assert code == 0
    for name in PASSES:
        assert re.search(rf"^  {re.escape(name)} ", out, re.M), name
    assert re.search(r"^  test-fail\s+v1\s+\S", out, re.M)


def test_list_analyses(capsys: pytest.CaptureFixture[str]) -> None:
    from accy.passes.registry import ANALYSES

    code, out, _ = run_opt(capsys, "--list-analyses")
    assert code == 0 and out.startswith("Analyses:")
    assert all(f"  {name} " in out for name in ANALYSES)


def test_print_ir_before_and_after_go_to_stderr(prog: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_opt(capsys, str(prog), "-p", "canonicalize,cse", "--print-ir-before=canonicalize", "--print-ir-after=cse")
    assert code == 0
    assert "// -----// IR before canonicalize //----- //" in err
    assert "// -----// IR after cse //----- //" in err
    assert "IR after canonicalize" not in err
    before = err.split("IR before canonicalize")[1].split("// -----//")[0]
    assert before.count("accy.neg") == 2
    assert "IR " not in out


def test_print_ir_after_all(prog: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run_opt(capsys, str(prog), "-p", "cse,dce", "--print-ir-after-all")
    assert code == 0
    assert "IR after cse" in err and "IR after dce" in err


def test_time_passes_and_analysis_stats(prog: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for flag in ("--time-passes", "--analysis-stats"):
        code, out, err = run_opt(capsys, str(prog), "-p", "cse,test-analysis-cache", flag)
        assert code == 0
        assert "accy pass statistics" in err
        assert re.search(r"cse v\d+: [\d.]+ ms", err)
        assert "test-analysis:" in err
        assert "statistics" not in out


def test_ir_dump_dir_writes_one_file_per_pass(prog: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    dump = tmp_path / "dumps"
    code, out, _ = run_opt(capsys, str(prog), "-p", "canonicalize,cse", "--ir-dump-dir", str(dump))
    assert code == 0
    files = sorted(p.name for p in dump.iterdir())
    assert files == ["01-canonicalize.mlir", "02-cse.mlir"]
    assert "accy.neg" not in (dump / "01-canonicalize.mlir").read_text()
    assert (dump / "02-cse.mlir").read_text().strip() == out.strip()


def test_failing_pass_leaves_reproducer(prog: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    repro_dir = tmp_path / "repro"
    code, out, err = run_opt(capsys, str(prog), "-p", "canonicalize,test-fail", "--reproducer-dir", str(repro_dir))
    assert code == 1
    assert out == ""  # never the IR as if it had succeeded
    assert err.startswith("error: pass 'test-fail' failed: ")
    repro = repro_dir / "accy-repro-1.mlir"
    text = repro.read_text()
    command = f"accy-opt {repro} -p 'test-fail'"
    assert text.startswith(f"// accy-opt reproducer: {command}\n")
    assert command in err
    assert "accy.neg" not in text  # the IR test-fail was given: after canonicalize
    # A second failure does not overwrite the first reproducer.
    run_opt(capsys, str(prog), "-p", "test-fail", "--reproducer-dir", str(repro_dir))
    assert (repro_dir / "accy-repro-2.mlir").exists()
    # The reproducer replays the failure.
    code, _, err = run_opt(capsys, str(repro), "-p", "test-fail", "--reproducer-dir", str(repro_dir))
    assert code == 1 and "pass 'test-fail' failed" in err


def test_check_preserved_catches_lying_pass(prog: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = [str(prog), "-p", "test-rewrite-claiming-preserved", "--reproducer-dir", str(tmp_path)]
    code, _, _ = run_opt(capsys, *argv)
    assert code == 0
    code, out, err = run_opt(capsys, *argv, "--check-preserved")
    assert code == 1 and out == ""
    assert "claims to preserve analyses (all), but 'test-analysis' of 'builtin.module'" in err
    assert "--check-preserved" in (tmp_path / "accy-repro-1.mlir").read_text().splitlines()[0]


def test_traceback_flag_reraises(tmp_path: Path) -> None:
    path = tmp_path / "bad.mlir"
    path.write_text(INVALID)
    with pytest.raises(ValueError):
        main([str(path), "--traceback"])


def test_console_script(prog: Path, tmp_path: Path) -> None:
    # The script installed next to the interpreter running the tests.
    exe = str(Path(sys.executable).parent / "accy-opt")
    ok = subprocess.run([exe, str(prog), "-p", "canonicalize"], capture_output=True, text=True, check=False)
    assert ok.returncode == 0 and "accy.reduce" in ok.stdout and "accy.neg" not in ok.stdout
    bad = tmp_path / "bad.mlir"
    bad.write_text(INVALID)
    failed = subprocess.run([exe, str(bad)], capture_output=True, text=True, check=False)
    assert failed.returncode == 1 and failed.stdout == ""
    assert f"{bad}:3:3: error:" in failed.stderr and "Traceback" not in failed.stderr
