"""The analysis manager's and pass manager's semantics, one by one."""

from __future__ import annotations

import gc
import re
import weakref
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

import pytest
from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp, UnitAttr
from xdsl.ir import Operation
from xdsl.parser import Parser
from xdsl.passes import ModulePass

from accy.dialects.context import make_context
from accy.passes.pass_manager import (
    AccyPass,
    Analysis,
    AnalysisManager,
    PassFailure,
    PassInstrumentation,
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

    def run(self, ctx: Context, module: ModuleOp, am: AnalysisManager) -> PreservedAnalyses:
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


def test_an_accy_pass_is_taken_at_its_word():
    # As in MLIR, the manager does not look at the IR to second-guess a pass:
    # one that says "none" loses the cache even if it changed nothing (accy's
    # passes say "all" when they changed nothing).
    m = parse()
    pm = PassManager([Preserving(keep=(), touch=False)])
    pm.am.get(TestAnalysis, m)
    pm.run(m)
    assert pm.am.get_cached(TestAnalysis, m) is None


def test_a_dropped_analysis_does_not_keep_its_op_alive():
    am, m = AnalysisManager(), parse()
    am.get(TestDependentAnalysis, m)
    alive = weakref.ref(m)
    am.clear()
    del m
    gc.collect()
    assert alive() is None
    assert am.is_empty()


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
    assert pm2.statistics()["passes"][0]["changed"]  # type: ignore[index]


@dataclass(frozen=True)
class AddsAnOp(AccyPass):
    """Adds an empty module to the module (one more op), claiming to keep all."""

    name: ClassVar[str] = "adds-an-op"

    def run(self, ctx: Context, module: ModuleOp, am: AnalysisManager) -> PreservedAnalyses:
        module.body.block.add_op(ModuleOp([]))
        return PreservedAnalyses.all()


def test_check_mode_fails_a_pass_whose_preserved_analysis_is_stale():
    m = parse()
    pm = PassManager([AddsAnOp()], check=True)
    pm.am.get(TestAnalysis, m)
    with pytest.raises(PassFailure, match=r"claims to preserve analyses \(all\), but 'test-analysis' of 'builtin.module'"):
        pm.run(m)
    # Without check mode the lie goes unnoticed (the cache is stale): that is
    # what the checking mode exists for.
    m2 = parse()
    pm2 = PassManager([AddsAnOp()])
    stale = pm2.am.get(TestAnalysis, m2)
    pm2.run(m2)
    assert pm2.am.get(TestAnalysis, m2) is stale


def test_check_mode_accepts_a_true_claim_after_a_change():
    # The attribute changes the IR, not the op count: preserving the count is
    # right, and the dependent (not preserved) is dropped, so nothing is stale.
    m = parse()
    pm = PassManager([Preserving(keep=(TestAnalysis,))], check=True)
    count = pm.am.get(TestDependentAnalysis, m)
    pm.run(m)
    assert pm.am.get_cached(TestDependentAnalysis, m) is None
    assert pm.am.get(TestDependentAnalysis, m).doubled == count.doubled


def test_a_raising_pass_becomes_a_pass_failure_with_the_input_ir():
    m = parse()
    with pytest.raises(PassFailure) as info:
        PassManager([Preserving(), get_pass("test-fail")()], reproducer=True).run(m)
    assert "deliberate failure" in info.value.message
    assert info.value.ir_before is not None
    assert "accy.reduce" in info.value.ir_before and "t0" in info.value.ir_before
    # Without a reproducer the input is neither kept nor printed.
    with pytest.raises(PassFailure) as info:
        PassManager([get_pass("test-fail")()]).run(parse())
    assert info.value.ir_before is None


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


# --------------------------------------------------------------------------
# Instrumentation and the context
# --------------------------------------------------------------------------


class Recorder(PassInstrumentation):
    """Records every hook it sees, in order."""

    def __init__(self, tag: str = "") -> None:
        self.events: list[str] = []
        self.tag = tag

    def _note(self, event: str) -> None:
        self.events.append(f"{self.tag}{event}")

    def run_before_pipeline(self, module: ModuleOp, am: AnalysisManager) -> None:
        self._note("before-pipeline")

    def run_after_pipeline(self, module: ModuleOp) -> None:
        self._note("after-pipeline")

    def run_before_pass(self, pass_: ModulePass, module: ModuleOp) -> None:
        self._note(f"before {pass_.name}")

    def run_after_pass(self, pass_: ModulePass, module: ModuleOp, preserved: PreservedAnalyses) -> None:
        self._note(f"after {pass_.name} ({preserved.describe()})")

    def run_after_pass_failed(self, pass_: ModulePass, module: ModuleOp, failure: PassFailure) -> None:
        self._note(f"failed {pass_.name}")

    def run_before_analysis(self, analysis: type[Analysis], op: Operation) -> None:
        self._note(f"before {analysis.name}")

    def run_after_analysis(self, analysis: type[Analysis], op: Operation) -> None:
        self._note(f"after {analysis.name}")


def test_instruments_see_passes_and_analyses_in_order():
    rec = Recorder()
    pm = PassManager([get_pass("test-analysis-cache")(), get_pass("test-analysis-cache")()], instruments=[rec])
    pm.run(parse())
    assert rec.events == [
        "before-pipeline",
        "before test-analysis-cache",
        # The dependent analysis asks for the base while it is computed: nested.
        "before test-dependent-analysis",
        "before test-analysis",
        "after test-analysis",
        "after test-dependent-analysis",
        "after test-analysis-cache (all)",
        # Cache hits are not computations: no analysis hooks.
        "before test-analysis-cache",
        "after test-analysis-cache (all)",
        "after-pipeline",
    ]


def test_after_hooks_run_in_reverse_and_failures_are_reported():
    first, second = Recorder("1:"), Recorder("2:")
    with pytest.raises(PassFailure):
        PassManager([get_pass("test-fail")()], instruments=[first, second]).run(parse())
    assert first.events == ["1:before-pipeline", "1:before test-fail", "1:failed test-fail"]
    assert second.events == ["2:before-pipeline", "2:before test-fail", "2:failed test-fail"]
    both: list[str] = []
    first.events = second.events = both
    PassManager([get_pass("dce")()], instruments=[first, second]).run(parse())
    assert both == [
        "1:before-pipeline",
        "2:before-pipeline",
        "1:before dce",
        "2:before dce",
        "2:after dce (none)",
        "1:after dce (none)",
        "2:after-pipeline",
        "1:after-pipeline",
    ]


SEEN_CONTEXTS: list[Context] = []


@dataclass(frozen=True)
class SeesContext(AccyPass):
    name: ClassVar[str] = "sees-context"

    def run(self, ctx: Context, module: ModuleOp, am: AnalysisManager) -> PreservedAnalyses:
        SEEN_CONTEXTS.append(ctx)
        return PreservedAnalyses.all()


def test_every_pass_is_given_the_pass_managers_context():
    ctx = make_context()
    SEEN_CONTEXTS.clear()
    PassManager([SeesContext(), get_pass("canonicalize")(), SeesContext()], ctx=ctx).run(parse())
    assert SEEN_CONTEXTS == [ctx, ctx] and all(c is ctx for c in SEEN_CONTEXTS)
    # Without one, a fresh context, the same for the whole pipeline.
    SEEN_CONTEXTS.clear()
    PassManager([SeesContext(), SeesContext()]).run(parse())
    assert SEEN_CONTEXTS[0] is SEEN_CONTEXTS[1] and SEEN_CONTEXTS[0] is not ctx


class Slow(Analysis):
    """Spends measurable time, then asks for a slower analysis."""

    name = "slow"

    def __init__(self, op: Operation, am: AnalysisManager) -> None:
        super().__init__(op, am)
        _spin(0.02)
        am.get(Slower, op)


class Slower(Analysis):
    name = "slower"

    def __init__(self, op: Operation, am: AnalysisManager) -> None:
        super().__init__(op, am)
        _spin(0.06)


def _spin(seconds: float) -> None:
    import time

    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


@dataclass(frozen=True)
class AsksSlow(AccyPass):
    name: ClassVar[str] = "asks-slow"

    def run(self, ctx: Context, module: ModuleOp, am: AnalysisManager) -> PreservedAnalyses:
        am.get(Slow, module)
        return PreservedAnalyses.all()


def test_analysis_time_excludes_the_analyses_it_asked_for():
    pm = PassManager([AsksSlow()])
    pm.run(parse())
    analyses = pm.statistics()["analyses"]
    slow, slower = analyses["slow"]["seconds"], analyses["slower"]["seconds"]  # type: ignore[index]
    assert 0.06 <= slower < 0.2
    assert 0.02 <= slow < 0.05, f"slow counted {slow}s: its own 0.02 s, not the 0.06 s of what it asked for"


def test_without_instruments_the_module_is_never_printed_cloned_or_fingerprinted(monkeypatch):
    import accy.passes.pass_manager as pm_module

    calls: list[str] = []
    real_print, real_fingerprint, real_clone = pm_module.print_ir, pm_module.fingerprint, ModuleOp.clone
    monkeypatch.setattr(pm_module, "print_ir", lambda m: calls.append("print") or real_print(m))
    monkeypatch.setattr(pm_module, "fingerprint", lambda m: calls.append("fingerprint") or real_fingerprint(m))
    monkeypatch.setattr(ModuleOp, "clone", lambda self, *a, **k: calls.append("clone") or real_clone(self, *a, **k))
    m = parse()
    # The compile path (kernelize) and plain xDSL passes on an empty cache.
    PassManager([get_pass("canonicalize")(), get_pass("cse")(), get_pass("kernelize")()]).run(m)
    assert calls == []
    # Each instrument pays for what it does.
    PassManager([get_pass("cse")()], reproducer=True).run(m)
    assert calls == ["clone"]
    calls.clear()
    PassManager([get_pass("cse")()], print_after=["all"], out=lambda _: None).run(m)
    assert calls == ["print"]
