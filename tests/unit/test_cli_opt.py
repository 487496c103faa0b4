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
    """MLIR's --verify-diagnostics (issue 21; it was xDSL's: print the error,
    exit 0): an error no annotation expects fails the check, at its line."""
    path = tmp_path / "split.mlir"
    path.write_text(PROGRAM + "// -----\n" + INVALID)
    code, out, err = run_opt(capsys, str(path), "--split-input-file", "--verify-diagnostics")
    assert code == 1
    chunks = out.split("// -----")
    assert "accy.reduce" in chunks[0] and chunks[1].strip() == ""
    # The error's line counts from the start of the whole file.
    line = PROGRAM.count("\n") + 1 + 3
    assert f"{path}:{line}:3: error: unexpected error: 'accy.exp' op" in err
    # Expected where it is, it passes, and nothing of it is printed.
    annotated = INVALID.replace("  %f =", "  // expected-error @+1 {{'accy.exp' op result 'result' has type tensor<4xf32>}}\n  %f =")
    path.write_text(PROGRAM + "// -----\n" + annotated)
    code, out, err = run_opt(capsys, str(path), "--split-input-file", "--verify-diagnostics")
    assert (code, err) == (0, "") and "accy.reduce" in out


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
    assert code == 4  # a pass that crashes is an internal error (issue 21: distinct exit statuses)
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
    assert code == 4 and "pass 'test-fail' failed" in err


def test_check_preserved_catches_lying_pass(prog: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = [str(prog), "-p", "test-rewrite-claiming-preserved", "--reproducer-dir", str(tmp_path)]
    code, _, _ = run_opt(capsys, *argv)
    assert code == 0
    code, out, err = run_opt(capsys, *argv, "--check-preserved")
    assert code == 4 and out == ""  # a pass that breaks its contract: internal, as a crash
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


# --------------------------------------------------------------------------
# The command line as an MLIR engineer expects it (issue 21)
# --------------------------------------------------------------------------


def test_dash_reads_standard_input(prog: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    import io

    for argv in (["-"], []):
        monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(INVALID.encode())))
        code, out, err = run_opt(capsys, *argv)
        assert code == 1 and out == ""
        assert err.startswith("<stdin>:3:3: error: 'accy.exp' op"), err
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(PROGRAM.encode())))
    code, out, _ = run_opt(capsys, "-", "-p", "canonicalize")
    assert code == 0 and "accy.reduce" in out and "accy.neg" not in out


@pytest.mark.parametrize(
    "pipeline",
    ["builtin.module(func.func(canonicalize),cse)", "builtin.module(canonicalize, cse)", "any(canonicalize),func.func(cse)"],
)
def test_mlir_nested_pipelines_are_flattened(prog: Path, capsys: pytest.CaptureFixture[str], pipeline: str) -> None:
    code, out, err = run_opt(capsys, str(prog), "-p", pipeline, "--print-ir-after-all")
    assert code == 0, err
    assert "accy.neg" not in out
    assert re.findall(r"IR after (\S+) //", err) == ["canonicalize", "cse"]


@pytest.mark.parametrize(
    ("pipeline", "message"),
    [
        ("gpu.module(cse)", "accy-opt: error: invalid pass pipeline: '(' after 'gpu.module' at column 11: accy reads the anchors builtin.module, func.func, any"),
        ("builtin.module(cse", "accy-opt: error: invalid pass pipeline: the 'builtin.module(' is never closed with ')' ('builtin.module(cse')"),
        ("cse)", "accy-opt: error: invalid pass pipeline: ')' at column 4 closes no '('"),
        ("cse dce", "accy-opt: error: invalid pass pipeline: expected a comma or pass arguments here (column 4 of 'cse dce')"),
        ("builtin.module(cse,dce{x)", "accy-opt: error: invalid pass pipeline: the '{' at column 23 is never closed with '}'"),
        ("canonicalise", "accy-opt: error: unknown pass 'canonicalise' (`accy-opt --list-passes` lists them; did you mean 'canonicalize'?)"),
    ],
)
def test_bad_nesting_is_one_line(prog: Path, capsys: pytest.CaptureFixture[str], pipeline: str, message: str) -> None:
    code, out, err = run_opt(capsys, str(prog), "-p", pipeline)
    assert code == 1 and out == ""
    assert err.startswith(message) and len(err.strip().splitlines()) == 1, err


@pytest.mark.parametrize(
    ("pipeline", "message"),
    [
        ("kernelize{strict=3}", "invalid options for pass 'kernelize': option 'strict' takes a bool (true or false), got 3"),
        ("kernelize{nope=1}", "invalid options for pass 'kernelize': there is no option 'nope' (options: strict, verify-bounds)"),
        ("cse{bogus=1}", "invalid options for pass 'cse': there is no option 'bogus' (it takes no options)"),
        ("set-target{vector_width=true}", "invalid options for pass 'set-target': option 'vector_width' takes an int, got true"),
        ("set-target{profile=xx}", "invalid options for pass 'set-target': set-target: target profile must be one of cpu, gpu; got 'xx'"),
        ("decompose{ops=1,2}", "invalid options for pass 'decompose': option 'ops' takes a list of string (comma-separated), got 1,2"),
    ],
)
def test_bad_pass_option_names_the_pass_and_the_option(
    prog: Path, capsys: pytest.CaptureFixture[str], pipeline: str, message: str
) -> None:
    code, out, err = run_opt(capsys, str(prog), "-p", pipeline)
    assert code == 1 and out == ""
    assert err.strip() == f"accy-opt: error: {message}"


@pytest.mark.parametrize("text", ["", "\n  \n", "// only a comment\n"])
def test_an_empty_input_says_so(tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str) -> None:
    path = tmp_path / "empty.mlir"
    path.write_text(text)
    code, out, err = run_opt(capsys, str(path))
    assert code == 1 and out == ""
    assert err.startswith(f"{path}:1:1: error: the input holds no operation (it is empty or only comments)"), err
    assert "Could not parse entire input" not in err


def test_an_implicit_broadcast_says_what_is_wrong(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "broadcast.mlir"
    path.write_text(
        "func.func @main(%x: tensor<8xf32>, %y: tensor<1xf32>) -> tensor<8xf32> {\n"
        '  %e = "accy.add"(%x, %y) : (tensor<8xf32>, tensor<1xf32>) -> tensor<8xf32>\n'
        "  func.return %e : tensor<8xf32>\n}\n"
    )
    code, _, err = run_opt(capsys, str(path))
    assert code == 1
    first = err.splitlines()[0]
    assert first == (
        f"{path}:2:3: error: 'accy.add' op operand 'rhs' has type tensor<1xf32>, but operand 'lhs' has type "
        "tensor<8xf32>: 'lhs', 'rhs' and 'result' of 'accy.add' must have one type (accy does not broadcast "
        "implicitly: make the shapes equal with accy.broadcast)"
    )
    assert "variable" not in err


def test_kernelize_refusing_the_input_is_the_users_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """tensor<8xi7> under -p kernelize: located, exit status 1, no reproducer
    (it said "pass 'kernelize' failed: ElementTypeError" and wrote one)."""
    path = tmp_path / "i7.mlir"
    path.write_text(
        "func.func @main(%x: tensor<8xi7>) -> tensor<8xi7> {\n"
        '  %e = "accy.neg"(%x) : (tensor<8xi7>) -> tensor<8xi7>\n'
        "  func.return %e : tensor<8xi7>\n}\n"
    )
    code, out, err = run_opt(capsys, str(path), "-p", "kernelize", "--reproducer-dir", str(tmp_path))
    assert code == 1 and out == ""
    assert err.startswith(f"{path}:1:1: error: 'func.func' op argument #0 of @main has type tensor<8xi7>: accy runs no element type i7")
    assert "failed" not in err and "reproduce" not in err and not list(tmp_path.glob("accy-repro-*"))


def test_help_lists_every_pass_pipeline_and_option(capsys: pytest.CaptureFixture[str]) -> None:
    from accy.passes.options import options_of
    from accy.passes.registry import PASSES, PIPELINES, get_pass

    code, out, _ = run_opt(capsys, "--help")
    assert code == 0
    epilog = out.split("\npasses (", 1)[1]
    for name in PASSES:
        assert re.search(rf"^  {re.escape(name)} v\d+", epilog, re.M), name
        for option in options_of(get_pass(name)):
            # Name, type and default, and what it means (every accy option says).
            assert f"      {option.name}: {option.type} = {option.default}  {option.description[:30]}" in epilog, option
            assert option.description, f"option {option.name} of {name} has no attribute docstring"
    for name in PIPELINES:
        assert f"\n  {name}\n" in epilog
    assert "      strict: bool = false  Fail where" in epilog
    assert "exit status:" in epilog and "  4     internal error" in epilog
    # xDSL's flags say what they do in accy-opt; those that do nothing here are not shown.
    assert "Delimited list of passes" not in out and "--frontend" not in out and "--no-implicit-module" not in out
    flowing = " ".join(out.split())
    assert "check the diagnostics against the input's // expected- error {{...}}" in flowing
    assert out.startswith("usage: accy-opt ")


def test_a_closed_pipe_exits_quietly(prog: Path) -> None:
    exe = str(Path(sys.executable).parent / "accy-opt")
    big = prog.parent / "big.mlir"
    body = "".join(f'  %e{i} = "accy.exp"(%x) : (tensor<4xf32>) -> tensor<4xf32>\n' for i in range(3000))
    big.write_text(f"func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {{\n{body}  func.return %x : tensor<4xf32>\n}}\n")
    shell = f"set -o pipefail; {exe} {big} | head -1"
    done = subprocess.run(["bash", "-c", shell], capture_output=True, text=True, check=False)
    assert done.returncode == 0 and done.stdout == "builtin.module {\n" and done.stderr == "", done.stderr


def test_output_and_print_flags_name_what_is_wrong(prog: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run_opt(capsys, str(prog), "-o", str(tmp_path / "no-such-dir" / "out.mlir"))
    assert code == 1 and err.strip() == f"accy-opt: error: cannot write '{tmp_path / 'no-such-dir' / 'out.mlir'}': No such file or directory"
    code, _, err = run_opt(capsys, str(prog), "-p", "cse", "--print-ir-after=csee")
    assert code == 1 and err.strip() == "accy-opt: error: --print-ir-after: no pass is named 'csee' (`accy-opt --list-passes` lists them)"
    code, _, err = run_opt(capsys, str(tmp_path))
    assert code == 1 and err.strip() == f"accy-opt: error: '{tmp_path}' is a directory, not an .mlir file"


def test_docs_cli_md_lists_the_exit_statuses() -> None:
    """docs/cli.md's table has a row per status of either tool, and says
    which tool does not use one."""
    from accy.cli import opt
    from accy.cli import run as accy_run

    text = (Path(__file__).parents[2] / "docs" / "cli.md").read_text()
    rows = {int(m[1]): m[2] for m in re.finditer(r"^\| (\d+) \| (.*) \|$", text, re.M)}
    assert set(rows) == set(opt.EXIT_STATUSES) | set(accy_run.EXIT_STATUSES)
    for status, row in rows.items():
        assert ("(not used)" in row) == (status not in opt.EXIT_STATUSES), status
