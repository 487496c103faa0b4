"""The dependency direction of docs/architecture.md ("Layering"), checked on
the imports of every module of the package (top-level and inside functions
alike):

- `dialects` import only xDSL, the standard library and each other;
- `reference` imports `dialects` only (and numpy);
- `passes` import `dialects` only, with one accepted departure: canonicalize's
  constant folding calls the reference interpreter (one semantics, not two);
- inside `passes`: pass manager < kernel IR verifiers < analyses <
  transforms < kernelization < registry, so an analysis never imports a
  transform, the verifiers (`passes/kernel_ir/`) never import a lowering;
  and a lowering never imports another lowering;
- `backends` import `dialects` only, never the runtime;
- `frontends` (tracing, ONNX) import `dialects` only: they build IR and
  never run it; `tuning` sits above the runtime and drives it, and nothing
  below the face imports it (the runtime's rule does not list it);
- nothing below `cli` imports `cli`, and nothing that decides how to compile
  (dialects, reference, passes, backends) imports the runtime;
- `env` (the ACCY_* variables, read strictly) imports nothing of accy nor
  any third-party package, so that every layer that reads the environment
  (debug, passes, runtime, tuning) may import it;
- `progress` (the progress line on long work) imports only `env`, so that
  the passes, the runtime and the tuner may report progress.

And what the layering is for, checked on a running interpreter: reading IR
(`import accy.dialects`, `accy-opt` parsing) loads neither the runtime nor
the reference interpreter.
"""

from __future__ import annotations

import ast
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import accy

PACKAGE = Path(accy.__file__).parent
MODULES = sorted(PACKAGE.rglob("*.py"))

#: layer -> the accy packages its modules may import (besides their own).
ALLOWED: dict[str, tuple[str, ...]] = {
    "dialects": ("accy.dialects",),
    "reference": ("accy.dialects", "accy.reference"),
    "passes": ("accy.dialects", "accy.passes", "accy.env", "accy.progress"),
    "backends": ("accy.dialects", "accy.backends"),
    "frontends": ("accy.dialects", "accy.frontends"),
    # The custom-kernel builder writes kernel IR and compiles and runs it.
    "kernel": ("accy.dialects", "accy.reference", "accy.passes", "accy.runtime", "accy.kernel"),
    "runtime": (
        "accy.dialects", "accy.reference", "accy.passes", "accy.backends", "accy.runtime", "accy.debug", "accy.env",
        "accy.progress",
    ),
    # The autotuner compiles candidates, checks them against the reference
    # and times them; it writes plain #accy.target fields.
    "tuning": (
        "accy.dialects", "accy.reference", "accy.passes", "accy.backends", "accy.runtime", "accy.debug", "accy.env",
        "accy.progress", "accy.tuning",
    ),
    "debug": ("accy.env",),
    "progress": ("accy.env",),
    "env": (),
    "cli": ("accy",),
    "api": ("accy",),
}
#: layer -> the third-party packages its modules may import. The dialects
#: stay numpy-free (xDSL does not need numpy): numpy's view of the element
#: types (`numpy_dtype`) is the reference's.
THIRD_PARTY: dict[str, tuple[str, ...] | None] = {
    # ml_dtypes: only inside `types.bfloat16_dtype`, imported on first bf16 use.
    "dialects": ("xdsl", "ml_dtypes"),
    # A frontend reads its format's package; numpy for traced constants
    # (ml_dtypes: numpy's bfloat16 dtype, for bf16).
    "frontends": ("xdsl", "numpy", "ml_dtypes", "onnx"),
    "reference": ("xdsl", "numpy", "ml_dtypes"),
    "debug": (),
    "progress": (),
    "env": (),
}
#: The sub-layers of `passes`, lowest first: a module may import its own
#: sub-layer and those before it.
PASS_LAYERS = ("pass_manager", "kernel_ir", "analyses", "transforms", "kernelization", "registry")
#: (module, imported package or module): the accepted departures, each with
#: its reason in the importing module's docstring.
EXCEPTIONS = {
    ("accy.passes.canonicalize", "accy.reference"),
    ("accy.passes.print_analysis", "accy.passes.registry"),
}
KERNELIZE = "accy.passes.kernelization.kernelize"


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def layer_of(module: str) -> str:
    parts = module.split(".")
    if module in ("accy", "accy.__main__", "accy.jit", "accy.numpy"):  # the package's face: its API, `python -m accy`, accy.jit and accy.numpy
        return "api"
    return "debug" if parts[1] == "debug" else parts[1]


def pass_layer_of(module: str) -> str:
    """The sub-layer of a module of `accy.passes` (every module directly in
    `passes/` but the pass manager and the registry is a transform)."""
    name = module.split(".")[2]
    return name if name in ("pass_manager", "kernel_ir", "analyses", "kernelization", "registry") else "transforms"


def imports_of(path: Path) -> list[str]:
    """Every module `path` imports, absolute, with `from a import b` as `a.b`
    (b may be a module or a name in a)."""
    module = module_name(path)
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found: list[str] = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            found += [f"{base}.{alias.name}" for alias in node.names]
    return found


def within(name: str, package: str) -> bool:
    return name == package or name.startswith(package + ".")


def _package(name: str) -> str:
    """`accy.<layer>` of an imported accy name."""
    return ".".join(name.split(".")[:2])


def _imported_module(name: str) -> str:
    """The accy module an imported name comes from: `a.b.c` names module
    `a.b.c` when that file exists, else name `c` of module `a.b`."""
    parts = name.split(".")
    for n in range(len(parts), 1, -1):
        candidate = PACKAGE.parent.joinpath(*parts[:n])
        if candidate.with_suffix(".py").is_file() or (candidate / "__init__.py").is_file():
            return ".".join(parts[:n])
    return name


def lowering_modules() -> set[str]:
    """The lowerings: the modules the kernelize pass takes a `lower_<kind>`
    from (read from its imports, so a new lowering is checked at once)."""
    path = PACKAGE / "passes" / "kernelization" / "kernelize.py"
    return {
        _imported_module(name)
        for name in imports_of(path)
        if name.rpartition(".")[2].startswith("lower_") and within(name, "accy.passes.kernelization")
    }


@pytest.mark.parametrize("path", MODULES, ids=lambda p: module_name(p))
def test_imports_point_down_the_data_flow(path: Path) -> None:
    module = module_name(path)
    layer = layer_of(module)
    assert layer in ALLOWED, f"{module}: layer '{layer}' has no rule in docs/architecture.md's layering (add one here)"
    allowed = ALLOWED[layer]
    for name in imports_of(path):
        top = name.split(".")[0]
        if top == "accy":
            # `from accy import compile` is `accy.compile`: the API, which only
            # the layers allowed all of `accy` may import.
            ok = any(within(name, p) for p in allowed) or (module, _package(name)) in EXCEPTIONS
            assert ok, f"{module} ({layer}) imports {name}; {layer} may import only {', '.join(allowed) or 'no accy module'}"
        elif top not in sys.stdlib_module_names and THIRD_PARTY.get(layer) is not None:
            assert top in THIRD_PARTY[layer], f"{module} ({layer}) imports {top}; it may import only {THIRD_PARTY[layer]}"


PASS_MODULES = [p for p in MODULES if layer_of(module_name(p)) == "passes"]


@pytest.mark.parametrize("path", PASS_MODULES, ids=lambda p: module_name(p))
def test_passes_import_only_their_own_sub_layer_and_those_below(path: Path) -> None:
    module = module_name(path)
    mine = PASS_LAYERS.index(pass_layer_of(module))
    for name in imports_of(path):
        if not within(name, "accy.passes") or (module, _imported_module(name)) in EXCEPTIONS:
            continue
        theirs = pass_layer_of(name)
        assert PASS_LAYERS.index(theirs) <= mine, (
            f"{module} ({pass_layer_of(module)}) imports {name} ({theirs}); inside passes: {' < '.join(PASS_LAYERS)}"
        )


@pytest.mark.parametrize("path", PASS_MODULES, ids=lambda p: module_name(p))
def test_no_lowering_imports_another_lowering(path: Path) -> None:
    module = module_name(path)
    lowerings = lowering_modules()
    if module not in lowerings:
        return
    for name in imports_of(path):
        other = _imported_module(name)
        assert other == module or other not in lowerings, (
            f"lowering {module} imports lowering {other} ({name}); what two lowerings share belongs in a shared module"
        )


@pytest.mark.parametrize("path", MODULES, ids=lambda p: module_name(p))
def test_nothing_below_the_cli_imports_it_and_no_compiler_stage_imports_the_runtime(path: Path) -> None:
    module = module_name(path)
    layer = layer_of(module)
    for name in imports_of(path):
        if layer not in ("cli", "api"):
            assert not within(name, "accy.cli"), f"{module} imports the cli ({name})"
        if layer in ("dialects", "reference", "passes", "backends", "frontends"):
            assert not within(name, "accy.runtime"), f"{module} imports the runtime ({name}) to decide how to compile"


def test_the_rooms_of_the_next_floors_have_their_rules_before_their_code() -> None:
    """docs/architecture.md's frontends and tuning rooms: a frontend imports
    only the dialects (never the passes, the runtime or the reference), and
    only the face and tuning itself may import tuning."""
    assert ALLOWED["frontends"] == ("accy.dialects", "accy.frontends")
    below_the_face = [layer for layer in ALLOWED if layer not in ("cli", "api", "tuning")]
    for layer in below_the_face:
        assert not any(within("accy.tuning.search", p) for p in ALLOWED[layer]), f"{layer} may import tuning"
    assert within("accy.runtime.executable", "accy.runtime") and "accy.runtime" in ALLOWED["tuning"]
    assert {"frontends", "tuning"} <= {layer_of(module_name(p)) for p in MODULES}  # the rooms exist


def test_the_import_scan_sees_what_it_checks() -> None:
    """The rules above would pass vacuously if the scan found nothing."""
    by_module = {module_name(p): imports_of(p) for p in MODULES}
    assert any(within(n, "accy.reference") for n in by_module["accy.passes.canonicalize"])
    assert "accy.dialects.context.make_context" in by_module["accy.passes.pass_manager"]  # an import inside a function
    assert any(within(n, "accy.backends") for n in by_module["accy.runtime.opencl"])
    assert {"dialects", "reference", "passes", "backends", "runtime", "cli"} <= {layer_of(m) for m in by_module}
    assert set(PASS_LAYERS) == {pass_layer_of(module_name(p)) for p in PASS_MODULES}
    assert {f"accy.passes.kernelization.{k}" for k in ("elementwise", "dot", "reduction", "flash_attention")} <= (
        lowering_modules()
    )
    assert _imported_module("accy.passes.analyses.shape_layout.ShapeLayout") == "accy.passes.analyses.shape_layout"


def _loaded_after(code: str) -> set[str]:
    """The modules a fresh interpreter has loaded after running `code`."""
    script = textwrap.dedent(code) + "\nimport sys\nprint('\\n'.join(sys.modules))\n"
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return set(done.stdout.split())


def _heavy(modules: set[str]) -> set[str]:
    return {
        m
        for m in modules
        if within(m, "accy.runtime") or within(m, "accy.reference") or m.split(".")[0] in ("pyopencl", "numpy")
    }


def test_reading_ir_loads_neither_the_runtime_nor_the_interpreter() -> None:
    loaded = _loaded_after(
        """
        import accy.dialects
        from accy.dialects.parse import parse_module
        module = parse_module('func.func @f(%x: tensor<2xf32>) -> tensor<2xf32> {\\n'
                              '  %e = "accy.exp"(%x) : (tensor<2xf32>) -> tensor<2xf32>\\n'
                              '  func.return %e : tensor<2xf32>\\n}\\n')
        assert module.ops.first is not None
        """
    )
    assert "accy.dialects.parse" in loaded
    assert not _heavy(loaded), f"parsing IR loaded {sorted(_heavy(loaded))}"


@pytest.mark.parametrize(("args", "printed"), [([], "accy.exp %x"), (["-p", "kernelize", "-t", "opencl"], "__kernel")])
def test_accy_opt_needs_no_runtime(args: list[str], printed: str, tmp_path: Path) -> None:
    prog = tmp_path / "prog.mlir"
    prog.write_text(
        'func.func @f(%x: tensor<2xf32>) -> tensor<2xf32> {\n  %e = "accy.exp"(%x) : (tensor<2xf32>) -> tensor<2xf32>\n'
        "  func.return %e : tensor<2xf32>\n}\n"
    )
    loaded = _loaded_after(
        f"""
        import contextlib, io
        import accy.cli.opt
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            assert accy.cli.opt.main([{str(prog)!r}, *{args!r}]) == 0
        assert {printed!r} in out.getvalue(), out.getvalue()
        """
    )
    assert "accy.cli.opt" in loaded
    runtime = {m for m in loaded if within(m, "accy.runtime") or m.split(".")[0] == "pyopencl"}
    assert not runtime, f"accy-opt loaded {sorted(runtime)}"


def test_import_accy_is_lazy() -> None:
    loaded = _loaded_after("import accy")
    assert not _heavy(loaded), f"import accy loaded {sorted(_heavy(loaded))}"
    loaded = _loaded_after("import accy\nassert callable(accy.compile)")
    assert "accy.runtime.executable" in loaded


F32_EXP = (
    'func.func @main(%x: tensor<3xf32>) -> tensor<3xf32> {\n  %e = "accy.exp"(%x) : (tensor<3xf32>) -> tensor<3xf32>\n'
    "  func.return %e : tensor<3xf32>\n}\n"
)


def test_ml_dtypes_only_for_bf16(tmp_path: Path) -> None:
    """ml_dtypes takes over a second to import: only a program with bf16
    values loads it (accy.dialects.types.bfloat16_dtype)."""
    prog = tmp_path / "f32.mlir"
    prog.write_text(F32_EXP)
    f32_run = f"""
        import contextlib, io
        import numpy as np
        import accy, accy.numpy, accy.frontends.tracing, accy.cli.opt
        (got,) = accy.compile({F32_EXP!r}, device="llvm")(np.array([0.0, 1.0, -2.0], np.float32))
        np.testing.assert_allclose(got, np.exp(np.array([0.0, 1.0, -2.0], np.float32)), rtol=1e-5)
        with contextlib.redirect_stdout(io.StringIO()):
            assert accy.cli.opt.main([{str(prog)!r}]) == 0
        """
    loaded = _loaded_after(f32_run)
    assert "accy.backends.llvm.emitter" in loaded and "accy.reference.interpreter" in loaded
    assert "ml_dtypes" not in loaded, "an f32 program imported ml_dtypes"
    bf16_run = """
        import numpy as np
        import accy.numpy as anp
        x = np.array([1.5, -2.0], anp.bfloat16)
        src = x.dtype.name
        assert src == "bfloat16", src
        """
    assert "ml_dtypes" in _loaded_after(bf16_run)
