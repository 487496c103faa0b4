"""The kinds of work item (accy/passes/analyses/kinds.py) against what reads
them: every kind that declares a lowering has it in kernelize's
`LOWERINGS`, every lowering belongs to a kind, and the schedule tags only
declared kinds, in its code and on a corpus that reaches every kind."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

from xdsl.dialects import func

from accy.dialects.parse import parse_module
from accy.passes.analyses import kinds, schedule
from accy.passes.analyses.kinds import KINDS
from accy.passes.analyses.schedule import Schedule
from accy.passes.kernelization.kernelize import LOWERINGS
from accy.passes.pass_manager import AnalysisManager

ROOT = Path(__file__).resolve().parent.parent.parent
#: The fuser's own tag for a view that must be copied: it becomes `shape`
#: or `elementwise` before a work item is made.
COPY = "copy"


def test_every_kind_has_the_lowering_it_declares() -> None:
    for name, kind in KINDS.items():
        if kind.lowering is None:
            assert name not in LOWERINGS, f"{name} declares no lowering, but LOWERINGS gives it one"
            continue
        assert name in LOWERINGS, f"{name} declares lowering {kind.lowering}, which LOWERINGS lacks"
        lower = LOWERINGS[name]
        assert f"{lower.__module__}.{lower.__name__}" == f"accy.passes.kernelization.{kind.lowering}", name


def test_every_lowering_has_a_kind() -> None:
    assert set(LOWERINGS) <= set(KINDS)


def test_names_are_the_keys() -> None:
    assert all(name == kind.name for name, kind in KINDS.items())
    declared = [v for v in vars(kinds).values() if isinstance(v, kinds.Kind)]
    assert sorted(k.name for k in declared) == sorted(KINDS), "a Kind declared but not in KINDS (or twice)"


def test_seeds_start_one_kind_each() -> None:
    seeds = [cls for kind in KINDS.values() for cls in kind.seeds]
    assert len(seeds) == len(set(seeds))


def _tag_literals(tree: ast.AST) -> Iterator[tuple[int, str]]:
    """Every string the schedule module gives a group's tag or an item's kind,
    or compares one with: `x.tag = "..."`, `kind = ...`, `x.tag == "..."`,
    `x.tag in (...)`, `self._new(ops, "...", anchor)`, `_initial_tag`'s returns."""

    def strings(node: ast.AST) -> Iterator[tuple[int, str]]:
        for n in ast.walk(node):
            if isinstance(n, ast.Constant) and isinstance(n.value, str):
                yield n.lineno, n.value

    def is_tag(node: ast.AST) -> bool:
        return (isinstance(node, ast.Attribute) and node.attr in ("tag", "kind")) or (
            isinstance(node, ast.Name) and node.id == "kind"
        )

    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and any(
            is_tag(t) or (isinstance(t, ast.Tuple) and any(is_tag(e) for e in t.elts)) for t in node.targets
        ):
            yield from strings(node.value)
        elif isinstance(node, ast.Compare) and any(is_tag(n) for n in (node.left, *node.comparators)):
            for n in (node.left, *node.comparators):
                yield from strings(n)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "_new":
            yield from strings(node.args[1])
        elif isinstance(node, ast.FunctionDef) and node.name == "_initial_tag":
            for ret in (n for n in ast.walk(node) if isinstance(n, ast.Return) and n.value is not None):
                yield from strings(ret.value)


def test_the_schedule_code_tags_only_declared_kinds() -> None:
    tree = ast.parse(Path(schedule.__file__).read_text())
    found = list(_tag_literals(tree))
    assert len(found) > 10, "the walk found (almost) no tags: it no longer matches schedule.py"
    stray = [(line, s) for line, s in found if s not in KINDS and s != COPY]
    assert not stray, f"schedule.py tags with undeclared kinds (line, tag): {stray}"


def _corpus() -> Iterator[tuple[str, str]]:
    """Programs that, between them, reach every kind: tests/programs,
    examples, and the inputs of the analyses and kernelize lit tests."""
    for path in [*sorted((ROOT / "tests/programs").glob("*.mlir")), *sorted((ROOT / "examples").glob("*.mlir"))]:
        yield path.name, path.read_text()
    for folder in ("analyses", "kernelize"):
        for path in sorted((ROOT / "tests/lit" / folder).glob("*.mlir")):
            for i, chunk in enumerate(path.read_text().split("// -----")):
                yield f"{path.name}#{i}", chunk


def test_the_schedule_tags_only_declared_kinds_and_reaches_every_kind() -> None:
    seen: set[str] = set()
    scheduled = 0
    for name, text in _corpus():
        try:
            module = parse_module(text)
            am = AnalysisManager()
            items = [
                item
                for f in module.ops
                if isinstance(f, func.FuncOp) and not f.is_declaration
                for item in am.get(Schedule, f).items
            ]
        except Exception:  # noqa: BLE001 (lit inputs that are meant to fail, kernel IR the schedule refuses)
            continue
        scheduled += 1
        for item in items:
            assert item.kind in KINDS, f"{name}: a work item of undeclared kind '{item.kind}'"
            seen.add(item.kind)
    assert scheduled > 30
    assert seen == set(KINDS), f"no program of the corpus makes {sorted(set(KINDS) - seen)}"
