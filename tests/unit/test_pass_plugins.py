"""Passes from anywhere (issue 21): a package's `accy.passes` entry point,
`accy-opt --load-pass module:Class` and `accy.register_pass(cls)` make a pass
that is listed, takes options from pipeline text, runs under the pass
manager with cached analyses and instrumentation, and declares what it
preserves; a bad plugin is one clear error.

The end-to-end cases install a real separate package: a tiny one written
into `tmp_path`, with a `.dist-info` whose entry_points.txt declares its
passes (what pip writes), put on PYTHONPATH for a subprocess.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

import pytest

import accy
from accy.passes import registry
from accy.passes.pass_manager import AccyPass, AnalysisManager, PreservedAnalyses
from accy.passes.registry import PluginError

ACCY_OPT = str(Path(sys.executable).parent / "accy-opt")

PLUGIN = '''\
"""A pass package of its own: accy is a dependency, nothing more."""
from dataclasses import dataclass
from typing import ClassVar

from xdsl.dialects import func
from xdsl.dialects.builtin import IntegerAttr, UnitAttr, i64
from xdsl.passes import ModulePass

from accy.passes.diagnostics import DiagnosticError, emit_remark
from accy.passes.pass_manager import AccyPass, PreservedAnalyses
from accy.passes.testing import TestAnalysis


@dataclass(frozen=True)
class TagFunctionsPass(AccyPass):
    """Tags every function with `demo.factor`, a remark at each."""

    name: ClassVar[str] = "demo-tag"
    version: ClassVar[int] = 3

    factor: int = 2
    """The number written on each function."""
    refuse: bool = False
    """Refuse the input (a user's error at the first function)."""

    def run(self, ctx, module, am):
        funcs = [op for op in module.walk() if isinstance(op, func.FuncOp)]
        if self.refuse:
            raise DiagnosticError("demo-tag refuses this function", funcs[0])
        for f in funcs:
            f.attributes["demo.factor"] = IntegerAttr(self.factor, i64)
            emit_remark(f, f"tagged with {self.factor}")
        # Attributes only: the op count (test-analysis) is still right.
        return PreservedAnalyses.of(TestAnalysis)


@dataclass(frozen=True)
class PlainXdslPass(ModulePass):
    """An xDSL pass, as written for xdsl-opt: it counts as preserving nothing."""

    name: ClassVar[str] = "demo-plain"

    def apply(self, ctx, op):
        op.attributes["demo.plain"] = UnitAttr()


@dataclass(frozen=True)
class CrashingPass(AccyPass):
    """Crashes, as a buggy pass would."""

    name: ClassVar[str] = "demo-crash"

    def run(self, ctx, module, am):
        raise ZeroDivisionError("a bug in the plugin")


@dataclass(frozen=True)
class NamedLikeCse(ModulePass):
    """Claims accy's name cse."""

    name: ClassVar[str] = "cse"

    def apply(self, ctx, op):
        pass


def not_a_pass():
    return 1
'''

ENTRY_POINTS = """\
[accy.passes]
demo-tag = demo_accy_plugin:TagFunctionsPass
demo-plain = demo_accy_plugin:PlainXdslPass
demo-crash = demo_accy_plugin:CrashingPass
"""

PROGRAM = """\
func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %e = "accy.exp"(%x) : (tensor<4xf32>) -> tensor<4xf32>
  func.return %e : tensor<4xf32>
}
"""


def _install(site: Path, name: str = "demo_accy_plugin", entry_points: str | None = ENTRY_POINTS) -> Path:
    """Writes package `name` (PLUGIN) under `site`, with a dist-info declaring `entry_points`."""
    package = site / name
    package.mkdir(parents=True)
    (package / "__init__.py").write_text(PLUGIN)
    if entry_points is not None:
        dist = site / f"{name}-0.1.dist-info"
        dist.mkdir()
        (dist / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name.replace('_', '-')}\nVersion: 0.1\n")
        (dist / "entry_points.txt").write_text(entry_points)
    return site


@pytest.fixture
def site(tmp_path: Path) -> Path:
    return _install(tmp_path / "site")


@pytest.fixture
def prog(tmp_path: Path) -> Path:
    path = tmp_path / "prog.mlir"
    path.write_text(PROGRAM)
    return path


def run(site: Path, *argv: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(site), os.environ.get("PYTHONPATH")]))}
    return subprocess.run([ACCY_OPT, *argv], capture_output=True, text=True, env=env, cwd=cwd, timeout=300, check=False)


def test_an_entry_point_pass_runs_with_its_options(site: Path, prog: Path) -> None:
    done = run(site, str(prog), "-p", "demo-tag{factor=3}")
    assert done.returncode == 0, done.stderr
    assert "demo.factor = 3 : i64" in done.stdout
    # Its remark, located at the function.
    assert done.stderr.startswith(f"{prog}:1:1: remark: 'func.func' op tagged with 3"), done.stderr


def test_an_entry_point_pass_is_listed_and_its_options_shown(site: Path) -> None:
    listed = run(site, "--list-passes")
    assert listed.returncode == 0, listed.stderr
    line = next(line for line in listed.stdout.splitlines() if line.split()[:1] == ["demo-tag"])
    assert "v3" in line and "Tags every function" in line
    assert "entry point 'demo-tag' of package 'demo-accy-plugin'" in line
    helped = run(site, "--help")
    assert helped.returncode == 0, helped.stderr
    assert "  demo-tag v3" in helped.stdout
    assert "factor: int = 2  The number written on each function." in helped.stdout
    assert "refuse: bool = false  Refuse the input" in helped.stdout


def test_a_plugin_pass_has_cached_analyses_and_declares_what_it_preserves(site: Path, prog: Path) -> None:
    pipeline = "test-analysis-cache,demo-tag,test-analysis-cache"
    done = run(site, str(prog), "-p", pipeline, "--check-preserved", "--time-passes")
    assert done.returncode == 0, done.stderr
    caches = [line for line in done.stdout.splitlines() if line.startswith("// cache:")]
    # The op count it preserved is a hit; the analysis computed from it was dropped and recomputed.
    assert "test-analysis: hits=3 misses=1 invalidations=0" in caches[1]  # computed once, never dropped
    assert "test-dependent-analysis: hits=0 misses=2 invalidations=1" in caches[1]
    # Timed and named as accy's own passes are.
    assert "demo-tag v3:" in done.stderr and "(changed IR)" in done.stderr


def test_a_plain_xdsl_plugin_pass_runs_under_the_pass_manager(site: Path, prog: Path) -> None:
    done = run(site, str(prog), "-p", "demo-plain", "--print-ir-after=demo-plain")
    assert done.returncode == 0, done.stderr
    assert "demo.plain" in done.stdout and "// -----// IR after demo-plain //----- //" in done.stderr


def test_a_plugin_pass_nests_as_mlir_writes_it(site: Path, prog: Path) -> None:
    done = run(site, str(prog), "-p", "builtin.module(func.func(demo-tag{factor=5}),cse)")
    assert done.returncode == 0, done.stderr
    assert "demo.factor = 5 : i64" in done.stdout


def test_a_plugin_error_is_the_users_and_a_plugin_crash_is_internal(site: Path, prog: Path, tmp_path: Path) -> None:
    refused = run(site, str(prog), "-p", "demo-tag{refuse=true}", cwd=tmp_path)
    assert refused.returncode == 1
    assert refused.stderr.startswith(f"{prog}:1:1: error: 'func.func' op demo-tag refuses this function")
    assert "Traceback" not in refused.stderr and not list(tmp_path.glob("accy-repro-*"))
    crashed = run(site, str(prog), "-p", "demo-crash", cwd=tmp_path)
    assert crashed.returncode == 4
    assert crashed.stderr.startswith("error: pass 'demo-crash' failed: ZeroDivisionError: a bug in the plugin")
    assert (tmp_path / "accy-repro-1.mlir").exists()


def test_a_bad_plugin_option_is_one_line(site: Path, prog: Path) -> None:
    done = run(site, str(prog), "-p", "demo-tag{factor=many}")
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr.strip() == (
        "accy-opt: error: invalid options for pass 'demo-tag': option 'factor' takes an int, got \"many\""
    )


def test_load_pass_registers_a_class_from_pythonpath(tmp_path: Path, prog: Path) -> None:
    site = _install(tmp_path / "loose", name="loose_passes", entry_points=None)
    done = run(site, str(prog), "-p", "demo-tag{factor=7}", "--load-pass", "loose_passes:TagFunctionsPass")
    assert done.returncode == 0, done.stderr
    assert "demo.factor = 7 : i64" in done.stdout
    listed = run(site, "--list-passes", "--load-pass", "loose_passes:TagFunctionsPass", "--load-pass=loose_passes:PlainXdslPass")
    assert "--load-pass loose_passes:TagFunctionsPass" in listed.stdout and "  demo-plain " in listed.stdout
    # Without it, the pass is unknown.
    missing = run(site, str(prog), "-p", "demo-tag")
    assert missing.returncode == 1 and "unknown pass 'demo-tag'" in missing.stderr


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ("no_such_module:Pass", "--load-pass no_such_module:Pass: no module named 'no_such_module'"),
        ("loose_passes:Missing", "--load-pass loose_passes:Missing: module 'loose_passes' has no attribute 'Missing'"),
        ("loose_passes:not_a_pass", "--load-pass loose_passes:not_a_pass: <function not_a_pass"),
        ("loose_passes", "--load-pass loose_passes: 'loose_passes' is not module:Class"),
        ("loose_passes:NamedLikeCse", "--load-pass loose_passes:NamedLikeCse: pass name 'cse' is taken by accy's own pass"),
    ],
)
def test_a_bad_load_pass_is_one_clear_error(tmp_path: Path, prog: Path, entry: str, message: str) -> None:
    site = _install(tmp_path / "loose", name="loose_passes", entry_points=None)
    done = run(site, str(prog), "--load-pass", entry)
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr.startswith(f"accy-opt: error: {message}"), done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and "Traceback" not in done.stderr


def test_an_entry_point_that_clashes_or_lies_is_one_clear_error(tmp_path: Path, prog: Path) -> None:
    site = _install(
        tmp_path / "site",
        entry_points="[accy.passes]\ncse = demo_accy_plugin:NamedLikeCse\nwrong-name = demo_accy_plugin:PlainXdslPass\n",
    )
    listed = run(site, "--list-passes")
    assert listed.returncode == 1
    assert listed.stderr.strip() == (
        "accy-opt: error: entry point 'cse' of package 'demo-accy-plugin' (accy.passes): pass name 'cse' is taken by accy's own pass"
    )
    # accy's own passes do not read the entry points: a broken one does not stop them, nor --help.
    assert run(site, str(prog), "-p", "cse").returncode == 0
    helped = run(site, "--help")
    assert helped.returncode == 0 and "(a pass from elsewhere is not registered: entry point 'cse'" in helped.stdout
    site = _install(tmp_path / "other", entry_points="[accy.passes]\nwrong-name = demo_accy_plugin:PlainXdslPass\n")
    done = run(site, str(prog), "-p", "wrong-name")
    assert done.returncode == 1
    assert "names pass 'wrong-name', but demo_accy_plugin:PlainXdslPass's name is 'demo-plain'" in done.stderr
    helped = run(site, "--help")
    assert helped.returncode == 0 and "  wrong-name  [entry point 'wrong-name'" in helped.stdout
    assert "(cannot be loaded: entry point 'wrong-name'" in helped.stdout


def test_an_entry_point_pass_from_python(site: Path) -> None:
    """The same package, from Python: the registry reads its entry points."""
    code = textwrap.dedent(f"""
        import accy
        from accy.passes.registry import passes_from_text
        module = accy.parse_module({PROGRAM!r})
        accy.PassManager(passes_from_text("demo-tag{{factor=4}},canonicalize")).run(module)
        print(module.body.block.first_op.attributes["demo.factor"])
    """)
    env = {**os.environ, "PYTHONPATH": str(site)}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "4 : i64"
    assert "remark: 'func.func' op tagged with 4" in done.stderr  # no handler: standard error


@pytest.fixture
def clean_registry(monkeypatch: pytest.MonkeyPatch) -> None:
    """What a test registers is forgotten after it."""
    monkeypatch.setattr(registry, "_REGISTERED", dict(registry._REGISTERED))


def test_register_pass_from_python(clean_registry: None) -> None:
    @accy.register_pass
    @dataclass(frozen=True)
    class CountPass(AccyPass):
        """Counts the ops of the module, into a module attribute."""

        name: ClassVar[str] = "test-plugin-count"
        offset: int = 0
        """Added to the count."""

        def run(self, ctx, module, am: AnalysisManager) -> PreservedAnalyses:  # type: ignore[no-untyped-def]
            from xdsl.dialects.builtin import IntAttr

            module.attributes["count"] = IntAttr(sum(1 for _ in module.walk()) + self.offset)
            return PreservedAnalyses.none()

    assert "test-plugin-count" in registry.pass_names()
    assert registry.get_pass("test-plugin-count") is CountPass
    module = accy.parse_module(PROGRAM)
    accy.PassManager(registry.passes_from_text("test-plugin-count{offset=10}")).run(module)
    assert module.attributes["count"].data == 4 + 10  # type: ignore[attr-defined]
    # Registering it again is no error; another class under its name is.
    accy.register_pass(CountPass)
    with pytest.raises(PluginError, match="pass name 'test-plugin-count' is taken by the pass of accy.register_pass"):

        @accy.register_pass
        @dataclass(frozen=True)
        class Impostor(CountPass):
            """Another class, the same name."""

    with pytest.raises(PluginError, match="not a pass"):
        accy.register_pass(int)  # type: ignore[arg-type]


DOCS = Path(__file__).parents[2] / "docs" / "cli.md"


def test_the_pass_of_docs_cli_md_runs_as_written(tmp_path: Path, prog: Path) -> None:
    """docs/cli.md's Python blocks run: its pass, loaded by --load-pass, tags,
    remarks and refuses as the page says; its pipeline-text example runs."""
    import re

    blocks = re.findall(r"```python\n(.*?)```", DOCS.read_text(), re.S)
    the_pass = next(b for b in blocks if "class TagFunctionsPass" in b)
    (tmp_path / "doc_passes.py").write_text(the_pass)
    done = run(tmp_path, str(prog), "-p", "tag-functions", "--load-pass", "doc_passes:TagFunctionsPass")
    assert done.returncode == 0, done.stderr
    assert "tag.items = 1 : i64" in done.stdout and "remark: 'func.func' op 1 work items" in done.stderr
    refused = run(tmp_path, str(prog), "-p", "tag-functions{limit=0}", "--load-pass", "doc_passes:TagFunctionsPass")
    assert refused.returncode == 1
    assert refused.stderr.startswith(f"{prog}:1:1: error: 'func.func' op 1 work items, more than limit=0")
    usage = next(b for b in blocks if "passes_from_text(" in b)
    (tmp_path / "prog.mlir").write_text(PROGRAM)
    code = f"import os; os.chdir({str(tmp_path)!r})\n" + usage
    ran = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, check=False)
    assert ran.returncode == 0, ran.stderr
