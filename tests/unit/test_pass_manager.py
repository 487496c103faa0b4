"""The analysis manager's and pass manager's semantics, one by one."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

import pytest
from xdsl.dialects.builtin import ModuleOp, UnitAttr
from xdsl.ir import Operation
from xdsl.parser import Parser

from accy.dialects.context import make_context
from accy.passes.pass_manager import (
    AccyPass,
    Analysis,
    AnalysisManager,
    PassFailure,
    PassManager,
    PreservedAnalyses,
    fingerprint,
    summary,
)
from accy.passes.registry import ANALYSES, PASSES, get_analysis, get_pass, pass_summary
from accy.passes.testing import TestAnalysis, TestDependentAnalysis

PROGRAM = """
func.func @main(%x: tensor<4x8xf32>) -> tensor<4xf32> {
  %e = "accy.exp"(%x) : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %s = "accy.reduce"(%e) <{kind = "sum", axes = array<i64: 1>}> : (tensor<4x8xf32>) -> tensor<4xf32>
  func.return %s : tensor<4xf32>
}
"""


def parse() -> ModuleOp:
    return Parser(make_context(), PROGRAM).parse_module()


class Counted(Analysis):
    """Counts how often it is computed."""

    name = "counted"
    computed = 0

    def __init__(self, op: Operation, am: AnalysisManager) -> None:
        super().__init__(op, am)
        type(self).computed += 1


class Unrelated(Analysis):
    name = "unrelated"


@dataclass(frozen=True)
class Preserving(AccyPass):
    name: ClassVar[str] = "preserving"
    keep: tuple[type[Analysis], ...] | None = None  # None: all
    touch: bool = True

    def run(self, module: ModuleOp, am: AnalysisManager) -> PreservedAnalyses:
        if self.touch:
            module.attributes[f"t{len(module.attributes)}"] = UnitAttr()
        return PreservedAnalyses.all() if self.keep is None else PreservedAnalyses.of(*self.keep)


def test_get_computes_once_and_counts_hits():
    am, m = AnalysisManager(), parse()
    Counted.computed = 0
    a = am.get(Counted, m)
    assert am.get(Counted, m) is a
    assert Counted.computed == 1
    assert (am.stats["counted"].misses, am.stats["counted"].hits) == (1, 1)


def test_analyses_are_per_op():
    am = AnalysisManager()
    m1, m2 = parse(), parse()
    assert am.get(TestAnalysis, m1) is not am.get(TestAnalysis, m2)


def test_invalidate_drops_unpreserved_only():
    am, m = AnalysisManager(), parse()
    a, u = am.get(TestAnalysis, m), am.get(Unrelated, m)
    am.invalidate(PreservedAnalyses.of(Unrelated))
    assert am.get(Unrelated, m) is u
    assert am.get(TestAnalysis, m) is not a
    assert am.stats["test-analysis"].invalidations == 1


def test_invalidation_is_transitive_through_dependencies():
    am, m = AnalysisManager(), parse()
    dep = am.get(TestDependentAnalysis, m)
    # Preserving the dependent alone is not enough: what it was computed from is gone.
    am.invalidate(PreservedAnalyses.of(TestDependentAnalysis))
    assert am.get_cached(TestDependentAnalysis, m) is None
    assert am.get(TestDependentAnalysis, m) is not dep


def test_preserving_the_dependency_keeps_the_dependent_only_if_preserved():
    am, m = AnalysisManager(), parse()
    am.get(TestDependentAnalysis, m)
    am.invalidate(PreservedAnalyses.of(TestAnalysis))
    assert am.get_cached(TestAnalysis, m) is not None
    assert am.get_cached(TestDependentAnalysis, m) is None


def test_preserved_all_keeps_everything():
    am, m = AnalysisManager(), parse()
    a = am.get(TestDependentAnalysis, m)
    am.invalidate(PreservedAnalyses.all())
    assert am.get_cached(TestDependentAnalysis, m) is a


def test_pass_manager_invalidates_after_each_pass():
    m = parse()
    pm = PassManager([Preserving(keep=(Unrelated,))])
    a = pm.am.get(TestAnalysis, m)
    u = pm.am.get(Unrelated, m)
    pm.run(m)
    assert pm.am.get_cached(TestAnalysis, m) is None
    assert pm.am.get_cached(Unrelated, m) is u
    assert a is not pm.am.get(TestAnalysis, m)


def test_a_pass_that_changed_nothing_preserves_all_even_if_it_says_none():
    m = parse()
    pm = PassManager([Preserving(keep=(), touch=False)])
    a = pm.am.get(TestAnalysis, m)
    pm.run(m)
    assert pm.am.get_cached(TestAnalysis, m) is a


def test_plain_xdsl_pass_preserves_nothing_when_it_changes_ir():
    m = parse()
    # dce removes nothing here, so the cache survives ...
    pm = PassManager([get_pass("dce")()])
    a = pm.am.get(TestAnalysis, m)
    pm.run(m)
    assert pm.am.get_cached(TestAnalysis, m) is a
    # ... but an unused op makes dce change the IR, and then nothing is kept.
    m2 = Parser(
        make_context(),
        PROGRAM.replace("  func.return", '  %dead = "accy.neg"(%x) : (tensor<4x8xf32>) -> tensor<4x8xf32>\n  func.return'),
    ).parse_module()
    pm2 = PassManager([get_pass("dce")()])
    pm2.am.get(TestAnalysis, m2)
    pm2.run(m2)
    assert pm2.am.get_cached(TestAnalysis, m2) is None
    assert pm2.pass_stats[0].changed


def test_check_mode_fails_a_pass_that_lies_about_preservation():
    m = parse()
    with pytest.raises(PassFailure, match="claims to preserve"):
        PassManager([Preserving()], check=True).run(m)
    # Without check mode the lie goes unnoticed (the cache is stale): that is
    # what the checking mode exists for.
    PassManager([Preserving()]).run(parse())


def test_a_raising_pass_becomes_a_pass_failure_with_the_input_ir():
    m = parse()
    with pytest.raises(PassFailure) as info:
        PassManager([get_pass("test-fail")()]).run(m)
    assert "deliberate failure" in info.value.message
    assert "accy.reduce" in info.value.ir_before


def test_statistics_report_passes_and_analyses():
    m = parse()
    pm = PassManager([get_pass("test-analysis-cache")(), get_pass("test-analysis-cache")()])
    pm.run(m)
    stats = pm.statistics()
    assert [p["name"] for p in stats["passes"]] == ["test-analysis-cache"] * 2
    assert stats["analyses"]["test-analysis"]["misses"] == 1
    assert stats["analyses"]["test-analysis"]["hits"] >= 2
    assert "test-analysis" in pm.format_statistics()


def test_dump_dir_and_printing(tmp_path):
    m = parse()
    printed: list[str] = []
    pm = PassManager(
        [get_pass("dce")(), get_pass("cse")()], dump_dir=tmp_path, print_after=["cse"], out=printed.append
    )
    pm.run(m)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["01-dce.mlir", "02-cse.mlir"]
    assert "accy.reduce" in (tmp_path / "02-cse.mlir").read_text()
    assert len(printed) == 1 and "IR after cse" in printed[0]


def test_fingerprint_tracks_ir_changes():
    m = parse()
    before = fingerprint(m)
    assert fingerprint(parse()) == before
    m.attributes["x"] = UnitAttr()
    assert fingerprint(m) != before


def test_every_registered_pass_and_analysis_has_an_identity():
    for name in PASSES:
        assert get_pass(name).name == name
    for name in ANALYSES:
        cls = get_analysis(name)
        assert cls.name == name and isinstance(cls.version, int)


LIT = Path(__file__).parents[1] / "lit"


def test_every_pass_and_analysis_is_described_by_its_docstring():
    for name in PASSES:
        text = pass_summary(name)
        assert len(text.split()) >= 5, f"pass {name} has no one-paragraph description: {text!r}"
        cls = get_pass(name)
        if issubclass(cls, AccyPass):
            assert cls.description == text == summary(cls)
    for name in ANALYSES:
        cls = get_analysis(name)
        assert cls.description == summary(cls) and len(cls.description.split()) >= 5, name


def test_every_pass_and_analysis_has_a_lit_test():
    """Each pass is run by a RUN line of tests/lit (so a lit test shows its
    input and output); each analysis is printed by one."""
    runs = "\n".join(
        line for path in LIT.rglob("*.mlir") if "Output" not in path.parts
        for line in path.read_text().splitlines() if "RUN:" in line
    )
    for name in PASSES:
        assert re.search(rf"-p '?([^ ]*[,'])?{re.escape(name)}([{{,' ]|$)", runs, re.M), f"no lit test runs pass {name}"
    checks = "\n".join(p.read_text() for p in LIT.rglob("*.mlir") if "Output" not in p.parts)
    for name in ANALYSES:
        # Printed by print-analysis, or (the test analyses) by test-analysis-cache.
        printed = f"analysis={name}" in runs or re.search(rf"CHECK.*[ ;]{re.escape(name)}: ", checks)
        assert printed, f"no lit test prints analysis {name}"
