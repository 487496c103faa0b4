"""The ACCY_* environment variables, parsed strictly (accy/env.py): each
takes only its documented values, an unset or blank one its default, and
anything else is one error naming the variable, the value and the values it
takes: a ValueError from Python, one line and exit status 1 from accy-run
and accy-opt. docs/environment.md's table names every variable accy reads,
and no module but accy/env.py reads one."""

from __future__ import annotations

import ast
import io
import os
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from xdsl.dialects.builtin import ModuleOp

import accy
from accy.env import EnvVarError, env_choice, env_flag, env_int, env_level, env_path

PACKAGE = Path(accy.__file__).parent
DOCS = PACKAGE.parent / "docs" / "environment.md"
VAR = "ACCY_TEST_SETTING"

PROGRAM = """\
func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %e = "accy.exp"(%x) : (tensor<4xf32>) -> tensor<4xf32>
  func.return %e : tensor<4xf32>
}
"""


# -- the parsers -------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "expected"),
    [("1", True), ("true", True), ("YES", True), (" On ", True), ("0", False), ("False", False), ("no", False),
     ("OFF", False)],
)
def test_flag_words(monkeypatch: pytest.MonkeyPatch, value: str, expected: bool) -> None:
    monkeypatch.setenv(VAR, value)
    assert env_flag(VAR) is expected


@pytest.mark.parametrize("value", ["", "  "])
def test_empty_is_unset(monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    monkeypatch.setenv(VAR, value)
    assert env_flag(VAR) is False and env_flag(VAR, default=True) is True
    assert env_int(VAR, 7, "things") == 7 and env_choice(VAR, ("a", "b"), "a") == "a" and env_level(VAR, 3, "x") == 0
    assert env_path(VAR) is None
    monkeypatch.delenv(VAR)
    assert env_flag(VAR) is False and env_path(VAR) is None


@pytest.mark.parametrize("value", ["2", "maybe", "y", "enabled", "1.0", "tru e"])
def test_flag_rejects_anything_else(monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    monkeypatch.setenv(VAR, value)
    with pytest.raises(EnvVarError) as info:
        env_flag(VAR)
    assert str(info.value) == (
        f"{VAR}={value!r}: expected 1/0, true/false, yes/no or on/off (any case; empty means unset)"
    )
    assert isinstance(info.value, ValueError)


@pytest.mark.parametrize(("value", "expected"), [("1", 1), ("64", 64), (" 8 ", 8), ("007", 7)])
def test_whole_numbers(monkeypatch: pytest.MonkeyPatch, value: str, expected: int) -> None:
    monkeypatch.setenv(VAR, value)
    assert env_int(VAR, 3, "programs") == expected


@pytest.mark.parametrize("value", ["0", "-1", "+2", "3.0", "1e3", "lots", "0x10", "\u0663", "1 2"])
def test_whole_numbers_reject_anything_else(monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    monkeypatch.setenv(VAR, value)
    with pytest.raises(EnvVarError, match=rf"^{VAR}={re.escape(repr(value.strip()))}: expected a number of programs >= 1$"):
        env_int(VAR, 3, "programs")


def test_choices_take_any_case(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(VAR, "Always")
    assert env_choice(VAR, ("auto", "always", "never"), "auto") == "always"
    monkeypatch.setenv(VAR, "sometimes")
    with pytest.raises(EnvVarError, match=rf"^{VAR}='sometimes': expected one of auto, always, never$"):
        env_choice(VAR, ("auto", "always", "never"), "auto")


@pytest.mark.parametrize(("value", "expected"), [("0", 0), ("3", 3), ("yes", 1), ("off", 0), ("TRUE", 1)])
def test_levels(monkeypatch: pytest.MonkeyPatch, value: str, expected: int) -> None:
    monkeypatch.setenv(VAR, value)
    assert env_level(VAR, 3, "a debug level") == expected


@pytest.mark.parametrize("value", ["4", "-1", "verbose", "2.5"])
def test_levels_reject_anything_else(monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    monkeypatch.setenv(VAR, value)
    with pytest.raises(EnvVarError) as info:
        env_level(VAR, 3, "a debug level")
    assert str(info.value) == (
        f"{VAR}={value!r} is not a debug level: expected 0, 1, 2 or 3 "
        "(or a yes/no word, 1/0, true/false, yes/no or on/off, which mean 1/0)"
    )


def test_paths_keep_their_text(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(VAR, " /tmp/a b ")
    assert env_path(VAR) == " /tmp/a b "


# -- every reader of accy -------------------------------------------------------


def _readers() -> dict[str, Callable[[], object]]:
    """Each ACCY_* variable -> the function of accy that reads it."""
    from accy.debug import debug_level
    from accy.passes.kernel_ir.bounds import bounds_requested_by_env
    from accy.progress import progress_enabled
    from accy.runtime.device import max_programs_from_env
    from accy.runtime.host_memory import memory_limit_from_env, pool_max_buffers_from_env, pool_max_bytes_from_env
    from accy.runtime.llvm import threads_from_env
    from accy.runtime.llvm_worker import worker_mode
    from accy.runtime.schedule import poison_from_env

    return {
        "ACCY_DEBUG": debug_level,
        "ACCY_POISON": lambda: poison_from_env(None),
        "ACCY_VERIFY_BOUNDS": bounds_requested_by_env,
        "ACCY_PROGRAM_CACHE_SIZE": max_programs_from_env,
        "ACCY_THREADS": threads_from_env,
        "ACCY_LLVM_WORKER": worker_mode,
        "ACCY_MEMORY_LIMIT": lambda: memory_limit_from_env(None),
        "ACCY_POOL_MAX_BYTES": lambda: pool_max_bytes_from_env(0),
        "ACCY_POOL_MAX_BUFFERS": pool_max_buffers_from_env,
        "ACCY_PROGRESS": lambda: progress_enabled(io.StringIO()),
    }


@pytest.mark.parametrize("name", list(_readers()))
def test_every_reader_refuses_a_value_outside_its_set(monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    monkeypatch.setenv(name, "bogus")
    with pytest.raises(EnvVarError, match=rf"^{name}='bogus'( is not [a-z ]+)?: expected "):
        _readers()[name]()


@pytest.mark.parametrize(
    ("name", "value", "expected"),
    [
        # The issue: ACCY_POISON=false turned poisoning on.
        ("ACCY_POISON", "false", False),
        ("ACCY_POISON", "ON", True),
        ("ACCY_POISON", "", False),
        ("ACCY_VERIFY_BOUNDS", "no", False),
        ("ACCY_VERIFY_BOUNDS", "yes", True),
        ("ACCY_PROGRAM_CACHE_SIZE", "", 128),
        ("ACCY_PROGRAM_CACHE_SIZE", "32", 32),
        ("ACCY_THREADS", "3", 3),
        ("ACCY_THREADS", "", os.cpu_count() or 1),
        ("ACCY_LLVM_WORKER", "", "auto"),
        ("ACCY_LLVM_WORKER", "NEVER", "never"),
        ("ACCY_MEMORY_LIMIT", "2GiB", 2 << 30),
        ("ACCY_MEMORY_LIMIT", "", None),
        ("ACCY_DEBUG", "on", 1),
        ("ACCY_PROGRESS", "", False),  # unset: a terminal's, and a StringIO is none
        ("ACCY_PROGRESS", "TRUE", True),
        ("ACCY_PROGRESS", "off", False),
    ],
)
def test_readers_take_their_values(monkeypatch: pytest.MonkeyPatch, name: str, value: str, expected: object) -> None:
    monkeypatch.setenv(name, value)
    assert _readers()[name]() == expected


@pytest.mark.parametrize("value", ["off", "NONE", "0", "false", "No"])
def test_cache_dir_off_words(monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    from accy.runtime.disk_cache import cache_root

    monkeypatch.setenv("ACCY_CACHE_DIR", value)
    assert cache_root() is None


def test_a_bad_setting_inside_a_pass_is_not_the_pass_failing(monkeypatch: pytest.MonkeyPatch) -> None:
    """kernelize reads ACCY_VERIFY_BOUNDS while it runs: the error is the
    environment's, raised as it is, never a PassFailure with a reproducer."""
    from accy.dialects.parse import parse_module
    from accy.passes.pass_manager import PassManager
    from accy.passes.registry import get_pass

    module = parse_module(PROGRAM)
    assert isinstance(module, ModuleOp)
    monkeypatch.setenv("ACCY_VERIFY_BOUNDS", "maybe")
    with pytest.raises(EnvVarError, match=r"^ACCY_VERIFY_BOUNDS='maybe': expected 1/0"):
        PassManager([get_pass("kernelize")()]).run(module)


# -- from the command line ---------------------------------------------------------


def _tool(tool: str, argv: list[str], env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", f"accy.cli.{tool}", *argv],
        capture_output=True,
        text=True,
        env={**os.environ, **env},
        cwd=cwd,
        timeout=300,
    )


@pytest.mark.parametrize(
    ("name", "value", "device"),
    [("ACCY_POISON", "maybe", "llvm"), ("ACCY_THREADS", "0", "llvm"), ("ACCY_PROGRAM_CACHE_SIZE", "lots", "llvm"),
     ("ACCY_VERIFY_BOUNDS", "sometimes", "llvm"), ("ACCY_DEBUG", "9", "llvm"), ("ACCY_MEMORY_LIMIT", "1e9x", "llvm")],
)
def test_accy_run_says_a_bad_setting_in_one_line(tmp_path: Path, name: str, value: str, device: str) -> None:
    prog = tmp_path / "p.mlir"
    prog.write_text(PROGRAM)
    done = _tool("run", [str(prog), "--device", device], {name: value, "ACCY_CACHE_DIR": "off"}, tmp_path)
    assert done.returncode == 1, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"accy-run: error: {name}={value!r}"), done.stderr
    assert "Traceback" not in done.stderr and "internal error" not in done.stderr


def test_accy_opt_says_a_bad_setting_in_one_line_and_leaves_no_reproducer(tmp_path: Path) -> None:
    prog = tmp_path / "p.mlir"
    prog.write_text(PROGRAM)
    done = _tool("opt", [str(prog), "-p", "kernelize"], {"ACCY_VERIFY_BOUNDS": "maybe"}, tmp_path)
    assert done.returncode == 1, done.stderr
    assert done.stderr.strip().splitlines() == [
        "accy-opt: error: ACCY_VERIFY_BOUNDS='maybe': expected 1/0, true/false, yes/no or on/off "
        "(any case; empty means unset)"
    ]
    assert not list(tmp_path.glob("accy-repro-*")) and done.stdout == ""


def test_poison_false_is_off_on_a_device() -> None:
    """A device made with ACCY_POISON=false does not poison (it used to)."""
    env = {**os.environ, "ACCY_POISON": "false"}
    code = "from accy.runtime.llvm import LLVMDevice; print(LLVMDevice().poison)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "False"


# -- one table, one reader ------------------------------------------------------------


def _names_in_code() -> set[str]:
    """Every ACCY_* name a module of accy spells as a string."""
    return {
        node.value
        for path in PACKAGE.rglob("*.py")
        for node in ast.walk(ast.parse(path.read_text(), str(path)))
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and re.fullmatch(r"ACCY_[A-Z_]+", node.value)
    }


def _names_in_docs() -> list[str]:
    return re.findall(r"^\| `(ACCY_[A-Z_]+)` \|", DOCS.read_text(), re.MULTILINE)


def test_the_docs_table_names_every_variable_accy_reads_once() -> None:
    in_docs = _names_in_docs()
    assert len(in_docs) == len(set(in_docs)), in_docs
    assert set(in_docs) == _names_in_code()
    assert set(_readers()) <= set(in_docs)


def test_the_readme_links_the_table() -> None:
    assert "(docs/environment.md)" in (PACKAGE.parent / "README.md").read_text()


def _environment_reads(path: Path) -> list[tuple[int, str]]:
    """(line, variable) of each read of `os.environ` / `os.getenv` in `path`
    whose key is an ACCY_* name, spelled out or through a module constant."""
    tree = ast.parse(path.read_text(), str(path))
    constants = {
        target.id: node.value.value
        for node in tree.body
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)
        for target in node.targets
        if isinstance(target, ast.Name)
    }

    def key_of(node: ast.expr) -> str | None:
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            return node.value
        return constants.get(node.id) if isinstance(node, ast.Name) else None

    def is_environ(node: ast.expr) -> bool:
        return isinstance(node, ast.Attribute) and node.attr == "environ"

    reads = []
    for node in ast.walk(tree):
        key = None
        if isinstance(node, ast.Call) and node.args:
            func = node.func
            if isinstance(func, ast.Attribute) and (
                (func.attr in ("get", "pop") and is_environ(func.value)) or func.attr == "getenv"
            ):
                key = key_of(node.args[0])
        elif isinstance(node, ast.Subscript) and is_environ(node.value):
            key = key_of(node.slice)
        if key is not None and key.startswith("ACCY_"):
            reads.append((node.lineno, key))
    return reads


def test_no_module_but_env_reads_an_accy_variable() -> None:
    env_module = PACKAGE / "env.py"
    stray = {
        f"{path.relative_to(PACKAGE.parent)}:{line} reads {key}"
        for path in PACKAGE.rglob("*.py")
        if path != env_module
        for line, key in _environment_reads(path)
    }
    assert not stray, sorted(stray)


def test_the_scan_sees_a_read(tmp_path: Path) -> None:
    """The check above would pass vacuously if the scan found nothing."""
    sample = tmp_path / "sample.py"
    sample.write_text('import os\nNAME = "ACCY_X"\na = os.environ.get(NAME)\nb = os.environ["ACCY_Y"]\nc = os.getenv("HOME")\n')
    assert _environment_reads(sample) == [(3, "ACCY_X"), (4, "ACCY_Y")]
