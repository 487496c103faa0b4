"""The dependency direction of docs/architecture.md ("Layering"), checked on
the imports of every module of the package (top-level and inside functions
alike):

- `dialects` import only xDSL, the standard library and each other;
- `reference` imports `dialects` only (and numpy);
- `passes` import `dialects` only, with one accepted departure: canonicalize's
  constant folding calls the reference interpreter (one semantics, not two);
- `backends` import `dialects` only, never the runtime;
- nothing below `cli` imports `cli`, and nothing that decides how to compile
  (dialects, reference, passes, backends) imports the runtime.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

import accy

PACKAGE = Path(accy.__file__).parent
MODULES = sorted(PACKAGE.rglob("*.py"))

#: layer -> the accy packages its modules may import (besides their own).
ALLOWED: dict[str, tuple[str, ...]] = {
    "dialects": ("accy.dialects",),
    "reference": ("accy.dialects", "accy.reference"),
    "passes": ("accy.dialects", "accy.passes"),
    "backends": ("accy.dialects", "accy.backends"),
    "frontends": ("accy.dialects", "accy.frontends"),
    "runtime": ("accy.dialects", "accy.reference", "accy.passes", "accy.backends", "accy.runtime", "accy.debug"),
    "debug": (),
    "cli": ("accy",),
    "api": ("accy",),
}
#: layer -> the third-party packages its modules may import.
THIRD_PARTY: dict[str, tuple[str, ...] | None] = {
    "dialects": ("xdsl",),
    "reference": ("xdsl", "numpy"),
    "debug": (),
}
#: (module, imported package): the accepted departures, each with its reason
#: in the importing module's docstring.
EXCEPTIONS = {("accy.passes.canonicalize", "accy.reference")}


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def layer_of(module: str) -> str:
    parts = module.split(".")
    if module == "accy":
        return "api"
    return "debug" if parts[1] == "debug" else parts[1]


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


@pytest.mark.parametrize("path", MODULES, ids=lambda p: module_name(p))
def test_nothing_below_the_cli_imports_it_and_no_compiler_stage_imports_the_runtime(path: Path) -> None:
    module = module_name(path)
    layer = layer_of(module)
    for name in imports_of(path):
        if layer not in ("cli", "api"):
            assert not within(name, "accy.cli"), f"{module} imports the cli ({name})"
        if layer in ("dialects", "reference", "passes", "backends", "frontends"):
            assert not within(name, "accy.runtime"), f"{module} imports the runtime ({name}) to decide how to compile"


def test_the_import_scan_sees_what_it_checks() -> None:
    """The rules above would pass vacuously if the scan found nothing."""
    by_module = {module_name(p): imports_of(p) for p in MODULES}
    assert any(within(n, "accy.reference") for n in by_module["accy.passes.canonicalize"])
    assert "accy.passes.registry.make_context" in by_module["accy.passes.pass_manager"]  # an import inside a function
    assert any(within(n, "accy.backends") for n in by_module["accy.runtime.opencl"])
    assert {"dialects", "reference", "passes", "backends", "runtime", "cli"} <= {layer_of(m) for m in by_module}
