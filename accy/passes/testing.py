"""Passes and analyses that exist to test the pass manager (MLIR's `test-*`).

- `TestAnalysis` counts the ops of a module; `TestDependentAnalysis` is
  computed from it, so invalidating the first drops the second.
- `test-analysis-cache` asks for both and prints the answers and the
  manager's hit/miss/invalidation figures so far: lit tests FileCheck them.
- `test-rewrite-claiming-preserved` computes `TestAnalysis`, adds an op to
  the module and claims to preserve all analyses: `--check-preserved`,
  recomputing the op count, must catch it.
- `test-fail` raises, to test failure reporting and reproducers.
- `test-diagnostics` emits the diagnostics the input asks for, to test how
  they are located, printed and checked (`--verify-diagnostics`).
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import ClassVar

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp, UnitAttr
from xdsl.ir import Operation

from accy.passes.diagnostics import Diagnostic, DiagnosticError, emit, note
from accy.passes.pass_manager import AccyPass, Analysis, AnalysisManager, PreservedAnalyses


class TestAnalysis(Analysis):
    """Counts the operations nested in the op (the op itself excluded)."""

    __test__ = False  # not a pytest class
    name: ClassVar[str] = "test-analysis"
    version: ClassVar[int] = 1

    def __init__(self, op: Operation, am: AnalysisManager) -> None:
        super().__init__(op, am)
        self.op_count = sum(1 for _ in op.walk()) - 1

    def print(self) -> str:
        return f"test-analysis: {self.op_count} ops\n"

    def statistics(self) -> dict[str, int | float]:
        return {"ops": self.op_count}


class TestDependentAnalysis(Analysis):
    """Twice the op count of `TestAnalysis`: exists to depend on it."""

    __test__ = False
    name: ClassVar[str] = "test-dependent-analysis"
    version: ClassVar[int] = 1

    def __init__(self, op: Operation, am: AnalysisManager) -> None:
        super().__init__(op, am)
        self.doubled = 2 * am.get(TestAnalysis, op).op_count

    def print(self) -> str:
        return f"test-dependent-analysis: {self.doubled}\n"


@dataclass(frozen=True)
class TestAnalysisCachePass(AccyPass):
    """Prints test analyses and the cache figures; preserves what it is told.

    `preserve` is "all", "none" or "test-analysis" (keep only that one), and
    `touch` adds a unit attribute to the module so that the IR changes."""

    name: ClassVar[str] = "test-analysis-cache"
    version: ClassVar[int] = 1
    preserve: str = "all"
    """What to report preserved: all, none or test-analysis."""
    touch: bool = False
    """Add a unit attribute to the module, so that the IR changes."""

    def run(self, ctx: Context, module: ModuleOp, am: AnalysisManager) -> PreservedAnalyses:
        dep = am.get(TestDependentAnalysis, module)
        base = am.get(TestAnalysis, module)
        figures = ", ".join(
            f"{name}: hits={s.hits} misses={s.misses} invalidations={s.invalidations}"
            for name, s in sorted(am.stats.items())
        )
        sys.stdout.write(f"// {base.print().strip()}; {dep.print().strip()}\n// cache: {figures}\n")
        if self.touch:
            count = len([k for k in module.attributes if k.startswith("test.touched")])
            module.attributes[f"test.touched{count}"] = UnitAttr()
        if self.preserve == "all":
            return PreservedAnalyses.all()
        if self.preserve == "test-analysis":
            return PreservedAnalyses.of(TestAnalysis)
        if self.preserve == "none":
            return PreservedAnalyses.none()
        raise ValueError(f"preserve must be all, none or test-analysis, got '{self.preserve}'")


@dataclass(frozen=True)
class TestRewriteClaimingPreservedPass(AccyPass):
    """Adds an op (an empty module) after counting the ops, yet claims to
    preserve every analysis, the stale op count included."""

    name: ClassVar[str] = "test-rewrite-claiming-preserved"
    version: ClassVar[int] = 1

    def run(self, ctx: Context, module: ModuleOp, am: AnalysisManager) -> PreservedAnalyses:
        am.get(TestAnalysis, module)
        module.body.block.add_op(ModuleOp([]))
        return PreservedAnalyses.all()


@dataclass(frozen=True)
class TestFailPass(AccyPass):
    """Raises an error, as a buggy pass would."""

    name: ClassVar[str] = "test-fail"
    version: ClassVar[int] = 1
    message: str = "deliberate failure"
    """The text of the error it raises."""

    def run(self, ctx: Context, module: ModuleOp, am: AnalysisManager) -> PreservedAnalyses:
        raise RuntimeError(self.message)


#: The attributes `test-diagnostics` reads, and the severity each asks for.
DIAGNOSE = {"test.error": "error", "test.warning": "warning", "test.remark": "remark", "test.note": "note"}


@dataclass(frozen=True)
class TestDiagnosticsPass(AccyPass):
    """Emits the diagnostics its input asks for: at each op with a string
    attribute `test.warning` or `test.remark`, that diagnostic; `test.note`
    attaches a note at its op to the diagnostic of the op before it; the
    first `test.error` fails the pass as the user's error (DiagnosticError),
    after the warnings and remarks before it. Changes nothing."""

    name: ClassVar[str] = "test-diagnostics"
    version: ClassVar[int] = 1

    def run(self, ctx: Context, module: ModuleOp, am: AnalysisManager) -> PreservedAnalyses:
        made: list[Diagnostic] = []
        for op in module.walk():
            for key, severity in DIAGNOSE.items():
                attr = op.attributes.get(key)
                text = getattr(attr, "data", None)
                if not isinstance(text, str):
                    continue
                if severity == "note" and made:
                    last = made[-1]
                    made[-1] = Diagnostic(last.severity, last.message, last.op, (*last.notes, note(text, op)))
                elif severity != "note":
                    made.append(Diagnostic(severity, text, op))  # type: ignore[arg-type]
        for d in made:
            if d.severity == "error":
                raise DiagnosticError(d.message, d.op, d.notes)
            emit(d)
        return PreservedAnalyses.all()
