"""accy-run as a user runs it: results checked against numpy, stats, and
every error a user can make (one line, exit 1, no traceback)."""

from __future__ import annotations

import io
import json
import os
import re
import subprocess
import sys
import zipfile
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from accy.cli.run import main
from accy.runtime.devices import get_device

# Odd sizes on purpose: 3 rows of 17.
SOFTMAX_SUM = """\
func.func @main(%x: tensor<3x17xf32>, %y: tensor<3x17xf32>) -> (tensor<3x17xf32>, tensor<3xf32>) {
  %s = "accy.softmax"(%x) <{axis = 1 : i64}> : (tensor<3x17xf32>) -> tensor<3x17xf32>
  %a = "accy.add"(%s, %y) : (tensor<3x17xf32>, tensor<3x17xf32>) -> tensor<3x17xf32>
  %r = "accy.reduce"(%y) <{kind = "sum", axes = array<i64: 1>}> : (tensor<3x17xf32>) -> tensor<3xf32>
  func.return %a, %r : tensor<3x17xf32>, tensor<3xf32>
}
func.func @twice(%x: tensor<1xi32>) -> tensor<1xi32> {
  %a = "accy.add"(%x, %x) : (tensor<1xi32>, tensor<1xi32>) -> tensor<1xi32>
  func.return %a : tensor<1xi32>
}
func.func @mask(%m: tensor<5xi1>) -> tensor<5xi1> {
  %n = "accy.not"(%m) : (tensor<5xi1>) -> tensor<5xi1>
  func.return %n : tensor<5xi1>
}
"""


def softmax(x: np.ndarray) -> np.ndarray:
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


@pytest.fixture
def prog(tmp_path: Path) -> Path:
    path = tmp_path / "prog.mlir"
    path.write_text(SOFTMAX_SUM)
    return path


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    try:
        code = main(list(argv))
    except SystemExit as e:
        code = int(e.code or 0)
    out, err = capsys.readouterr()
    return code, out, err


def test_inputs_and_out_npz_match_numpy(prog: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rng = np.random.default_rng(1)
    x = rng.standard_normal((3, 17)).astype(np.float32)
    y = rng.standard_normal((3, 17)).astype(np.float32)
    np.savez(tmp_path / "in.npz", arg0=x, arg1=y)
    code, out, err = run(capsys, str(prog), "--inputs", str(tmp_path / "in.npz"), "--out", str(tmp_path / "out.npz"))
    assert code == 0 and out == "" and err == ""
    result = np.load(tmp_path / "out.npz")
    assert sorted(result.files) == ["out0", "out1"]
    np.testing.assert_allclose(result["out0"], softmax(x) + y, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(result["out1"], y.sum(axis=1), rtol=1e-5, atol=1e-5)
    assert result["out0"].dtype == np.float32


def test_random_inputs_printed(prog: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, str(prog), "--random", "7")
    assert code == 0
    assert "out0: tensor<3x17xf32>" in out and "out1: tensor<3xf32>" in out
    assert "..." in out  # 51 elements: numpy's repr is truncated
    # Same seed, same output; another seed, another output.
    assert run(capsys, str(prog), "--random", "7")[1] == out
    assert run(capsys, str(prog), "--random", "8")[1] != out


def test_random_integers_and_masks(prog: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for fn, dtype in (("twice", np.int32), ("mask", np.bool_)):
        out_path = tmp_path / f"{fn}.npz"
        code, _, _ = run(capsys, str(prog), "--fn", fn, "--random", "3", "--out", str(out_path))
        assert code == 0
        value = np.load(out_path)["out0"]
        assert value.dtype == dtype
    assert np.all(np.abs(np.load(tmp_path / "twice.npz")["out0"]) <= 10)


def test_stats_is_one_json_line(prog: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, str(prog), "--stats", "--check", "--device", "reference")
    assert code == 0
    stats = json.loads(out.strip().splitlines()[-1])
    for key in ("device", "kernels", "peak_bytes", "compile_s", "run_s", "fallbacks"):
        assert key in stats
    assert stats["device"] == "reference"
    # Inputs and outputs at least: 2 * 51 + 51 + 3 floats.
    assert stats["peak_bytes"] >= (2 * 51 + 51 + 3) * 4
    assert stats["check_ok"] is True and stats["max_abs_err"] == 0.0
    assert "check out0: max abs err" in out and "check out1" in out


def test_profile(prog: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, str(prog), "--profile", "--device", "reference")
    assert code == 0
    assert "profile: 0 launch(es)" in out  # the reference device launches no kernels


def error_of(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    code, out, err = run(capsys, *argv)
    assert code == 1, (out, err)
    assert "Traceback" not in err
    return err.strip()


def test_missing_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert error_of(capsys, str(tmp_path / "no.mlir")) == f"accy-run: error: no such file: '{tmp_path / 'no.mlir'}'"


def test_verify_error_is_located(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "bad.mlir"
    path.write_text(SOFTMAX_SUM.replace("axes = array<i64: 1>", "axes = array<i64: 5>"))
    err = error_of(capsys, str(path))
    assert err.startswith(f"{path}:4:3: error: 'accy.reduce' op")
    assert len(err.splitlines()) == 3  # message, source line, caret


def test_parse_error_is_located(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "bad.mlir"
    path.write_text('func.func @main(%x: tensor<3xf32>) -> tensor<3xf32> {\n  %y = "accy.bogus"(%x) : (tensor<3xf32>) -> tensor<3xf32>\n}\n')
    err = error_of(capsys, str(path))
    assert err.startswith(f"{path}:2:20: error: Operation accy.bogus is not registered")
    # A value used but never defined: at its first use (xDSL reports the end of the input).
    path.write_text(
        "func.func @main(%x: tensor<3xf32>) -> tensor<3xf32> {\n  %a = \"accy.exp\"(%z) : (tensor<3xf32>) -> tensor<3xf32>\n"
        "  func.return %y : tensor<3xf32>\n}\n"
    )
    err = error_of(capsys, str(path))
    assert err.splitlines()[0] == f"{path}:2:19: error: value %z is used but never defined"
    assert err.splitlines()[2] == " " * 18 + "^^"


def test_element_type_accy_does_not_run_is_located(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # The verifiers accept any integer type; compiling one accy cannot run is an error at the op.
    path = tmp_path / "i7.mlir"
    path.write_text('func.func @main(%x: tensor<4xf32>) -> tensor<4xi7> {\n  %y = "accy.cast"(%x) : (tensor<4xf32>) -> tensor<4xi7>\n  func.return %y : tensor<4xi7>\n}\n')
    for device in ("llvm", "reference"):
        err = error_of(capsys, str(path), "--device", device)
        assert err.splitlines()[0] == f"{path}:2:3: error: 'accy.cast' op accy runs no element type i7 (only f16, bf16, f32, f64, i1, i8, i16, i32, i64)"


def test_missing_function(prog: Path, capsys: pytest.CaptureFixture[str]) -> None:
    err = error_of(capsys, str(prog), "--fn", "nope")
    assert err == "accy-run: error: the module has no function @nope (functions: @main, @twice, @mask)"


def test_npz_missing_key(prog: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    np.savez(tmp_path / "in.npz", arg0=np.zeros((3, 17), np.float32))
    err = error_of(capsys, str(prog), "--inputs", str(tmp_path / "in.npz"))
    assert err.startswith("accy-run: error: ") and "has no key arg1" in err and "arg0, arg1" in err


@pytest.mark.parametrize(
    ("arg1", "expected"),
    [
        (np.zeros((3, 17), np.float64), "got float64 array of shape (3, 17)"),
        (np.zeros((3, 16), np.float32), "got float32 array of shape (3, 16)"),
        (np.zeros((17, 3), np.float32).T, None),  # non-contiguous but exact: accepted
    ],
)
def test_npz_wrong_dtype_or_shape(
    prog: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], arg1: np.ndarray, expected: str | None
) -> None:
    np.savez(tmp_path / "in.npz", arg0=np.zeros((3, 17), np.float32), arg1=arg1)
    argv = [str(prog), "--inputs", str(tmp_path / "in.npz")]
    if expected is None:
        assert run(capsys, *argv)[0] == 0
        return
    err = error_of(capsys, *argv)
    assert err.startswith("accy-run: error: argument #1 of @main expects tensor<3x17xf32>")
    assert expected in err


def _truncated_npz(path: Path) -> None:
    np.savez(path, arg0=np.zeros((3, 17), np.float32), arg1=np.ones((3, 17), np.float32))
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


def _damaged_member(path: Path) -> None:
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("arg0.npy", b"\x93NUMPY not really an array")
        z.writestr("arg1.npy", b"")


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda p: p.write_bytes(b""), "is empty, not an .npz archive"),
        (lambda p: p.write_text("not a zip"), "is not an .npz file"),
        (lambda p: p.write_bytes(bytes(range(256)) * 4), "is not an .npz file"),
        (lambda p: p.write_bytes(b"PK\x03\x04" + b"\x00" * 40), "cannot read"),
        (_truncated_npz, "cannot read"),
        (_damaged_member, "cannot read"),
        (lambda p: np.save(p.open("wb"), np.zeros(3, np.float32)), "is a single .npy array"),
        (lambda p: np.savez(p, arg0=np.array([1, "a"], dtype=object)), "holds an object array"),
        (lambda p: p.mkdir(), "is a directory"),
    ],
)
def test_bad_npz_is_a_clear_error(
    prog: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], make: Callable[[Path], object], message: str
) -> None:
    path = tmp_path / "in.npz"
    make(path)
    err = error_of(capsys, str(prog), "--inputs", str(path))
    assert err.startswith("accy-run: error: ") and str(path) in err and message in err, err
    assert len(err.splitlines()) == 1 and "internal error" not in err


def test_out_names_exactly_the_file_written(prog: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # np.savez would append ".npz" to a name without it; accy-run writes what it was told.
    target = tmp_path / "results"
    code, out, err = run(capsys, str(prog), "--out", str(target))
    assert code == 0 and out == "" and err == ""
    assert not (tmp_path / "results.npz").exists()
    with np.load(target) as result:
        assert sorted(result.files) == ["out0", "out1"] and result["out0"].shape == (3, 17)


def test_out_directory_is_an_error(prog: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = tmp_path / "outdir"
    folder.mkdir()
    err = error_of(capsys, str(prog), "--out", str(folder))
    assert err == f"accy-run: error: --out '{folder}' is a directory; name the .npz file to write"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["outdir", "prog.mlir"]  # no outdir.npz beside it
    err = error_of(capsys, str(prog), "--out", str(tmp_path / "absent" / "o.npz"))
    assert err == f"accy-run: error: --out '{tmp_path / 'absent' / 'o.npz'}': no such directory '{tmp_path / 'absent'}'"


def test_unknown_and_unavailable_devices(prog: Path, capsys: pytest.CaptureFixture[str]) -> None:
    err = error_of(capsys, str(prog), "--device", "tpu")
    assert err.startswith("accy-run: error: unknown device 'tpu' (known: auto, reference, opencl, llvm")


def test_console_script(prog: Path) -> None:
    exe = str(Path(sys.executable).parent / "accy-run")
    done = subprocess.run([exe, str(prog), "--stats"], capture_output=True, text=True, check=False)
    assert done.returncode == 0
    assert json.loads(done.stdout.strip().splitlines()[-1])["device"] == get_device("auto").name
    failed = subprocess.run([exe, str(prog), "--fn", "absent"], capture_output=True, text=True, check=False)
    assert failed.returncode == 1 and failed.stderr.startswith("accy-run: error: the module has no function @absent")


def test_unusable_cache_folder_is_one_warning_line(prog: Path, tmp_path: Path) -> None:
    """The run goes on without the disk cache; the warning reads like accy-run's errors."""
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    exe = str(Path(sys.executable).parent / "accy-run")
    env = {**os.environ, "ACCY_CACHE_DIR": str(blocker / "cache")}
    done = subprocess.run([exe, str(prog), "--device", "opencl", "--check"], capture_output=True, text=True,
                          check=False, env=env)
    assert done.returncode == 0, done.stderr
    warnings = [line for line in done.stderr.splitlines() if "warning" in line]
    assert len(warnings) == 1 and warnings[0].startswith(f"accy-run: warning: the accy cache folder {blocker / 'cache'}")


def test_opencl_device_checks_against_reference(prog: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from accy.runtime.devices import get_device

    try:
        get_device("opencl")
    except ValueError as e:
        pytest.skip(str(e))
    code, out, err = run(capsys, str(prog), "--device", "opencl", "--check", "--stats", "--profile")
    assert code == 0, err
    stats = json.loads(out.strip().splitlines()[-1])
    assert stats["device"] == "opencl" and stats["check_ok"] is True
    assert stats["kernels"] >= 1 and stats["compile_s"] > 0
    assert stats["max_abs_err"] < 1e-4
    launches = int(re.search(r"profile: (\d+) launch", out).group(1))
    assert launches == stats["kernels"]


@pytest.mark.parametrize("device", ["opencl", "llvm", "reference"])
def test_stats_counts_transfers(prog: Path, device: str, capsys: pytest.CaptureFixture[str]) -> None:
    """--stats carries RunStats' transfer counters. On PoCL the inputs (read
    only, aligned) are used in place and both results are read back; the
    LLVM and reference devices hand their result arrays over as they are."""
    try:
        get_device(device)
    except (ValueError, RuntimeError) as e:
        pytest.skip(str(e))
    code, out, err = run(capsys, str(prog), "--device", device, "--stats")
    assert code == 0, err
    stats = json.loads(out.strip().splitlines()[-1])
    moved = {key: stats[key] for key in ("uploads", "upload_bytes", "downloads", "download_bytes")}
    if device == "opencl" and get_device(device).host_unified_memory:  # type: ignore[attr-defined]
        assert moved == {"uploads": 0, "upload_bytes": 0, "downloads": 2, "download_bytes": (3 * 17 + 3) * 4}
    elif device == "opencl":
        assert moved == {"uploads": 2, "upload_bytes": 2 * 3 * 17 * 4, "downloads": 2, "download_bytes": (3 * 17 + 3) * 4}
    else:
        assert moved == {"uploads": 0, "upload_bytes": 0, "downloads": 0, "download_bytes": 0}


# -- standard input, a closed pipe, exit statuses ---------------------------------


def test_dash_reads_the_program_from_stdin(
    prog: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from_file = run(capsys, str(prog), "--device", "reference", "--random", "2")
    monkeypatch.setattr(sys, "stdin", io.StringIO(SOFTMAX_SUM))
    from_stdin = run(capsys, "-", "--device", "reference", "--random", "2")
    assert from_stdin == from_file and from_file[0] == 0


def test_stdin_errors_are_located(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(sys, "stdin", io.StringIO(SOFTMAX_SUM.replace("axes = array<i64: 1>", "axes = array<i64: 5>")))
    err = error_of(capsys, "-", "--device", "reference")
    assert err.startswith("<input>:4:3: error: 'accy.reduce' op"), err


def test_dash_from_a_shell_pipe(prog: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "accy.cli.run", "-", "--device", "reference", "--fn", "twice"],
        input=prog.read_text(), capture_output=True, text=True, timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("out0: tensor<1xi32>")


@pytest.mark.parametrize(
    ("argv", "unbuffered"),
    [
        (["{prog}", "--device", "reference", "--profile", "--stats"], False),
        # Unbuffered, the first print meets the closed pipe inside the run, not at the last flush.
        (["{prog}", "--device", "reference", "--profile", "--stats"], True),
        (["--help"], False),
    ],
)
def test_a_closed_pipe_exits_quietly(prog: Path, argv: list[str], unbuffered: bool) -> None:
    """`accy-run f.mlir | head -1`: the reader is gone, so accy-run stops
    with status 0 and says nothing (no 'Broken pipe', no traceback)."""
    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader has gone before the first write
    try:
        env = {**os.environ, **({"PYTHONUNBUFFERED": "1"} if unbuffered else {})}
        done = subprocess.run(
            [sys.executable, "-m", "accy.cli.run", *(a.format(prog=prog) for a in argv)],
            stdout=write_end, stderr=subprocess.PIPE, text=True, env=env, timeout=120,
        )
    finally:
        os.close(write_end)
    assert done.returncode == 0 and done.stderr == "", done.stderr


def test_check_mismatch_is_status_3(
    prog: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from accy.cli.run import CHECK_FAILED
    from accy.runtime.executable import Executable

    reference = Executable.reference_outputs
    monkeypatch.setattr(Executable, "reference_outputs", lambda self, inputs: [o + 1 for o in reference(self, inputs)])
    code, out, err = run(capsys, str(prog), "--device", "reference", "--check")
    assert code == CHECK_FAILED == 3
    assert "MISMATCH" in out
    assert err.strip() == "accy-run: error: results differ from the reference interpreter beyond tolerance"


@pytest.mark.parametrize("argv", [["--random", "lots"], ["--no-such-flag"], [], ["--inputs", "a.npz", "--random", "1"]])
def test_usage_errors_are_status_2(prog: Path, argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, *([str(prog)] if argv else []), *argv)
    assert code == 2 and "usage: accy-run" in err, err


def test_an_internal_error_is_status_4(
    prog: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import accy.cli.run as cli_run

    def broken(*_: object) -> None:
        raise AssertionError("an invariant of accy's")

    monkeypatch.setattr(cli_run, "_print_outputs", broken)
    code, _, err = run(capsys, str(prog), "--device", "reference")
    assert code == 4
    assert err.strip() == (
        "accy-run: internal error: AssertionError: an invariant of accy's (rerun with --traceback for details)"
    )


def test_exit_statuses_are_documented_once_in_the_readme_and_in_help(capsys: pytest.CaptureFixture[str]) -> None:
    from accy.cli.run import EXIT_STATUSES

    readme = (Path(__file__).parents[2] / "README.md").read_text()
    section = readme.split("\n## accy-run\n", 1)[1].split("\n## ", 1)[0]
    rows = re.findall(r"^\| (\d+) \| (.+) \|$", section, re.MULTILINE)
    assert {int(status): meaning.replace("\\|", "|") for status, meaning in rows} == EXIT_STATUSES
    code, out, _ = run(capsys, "--help")
    assert code == 0
    epilog = " ".join(out.split("exit status:", 1)[1].split())
    for status, meaning in EXIT_STATUSES.items():
        assert f"{status} {meaning}" in epilog, (status, epilog)
