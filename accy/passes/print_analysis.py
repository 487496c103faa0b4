"""print-analysis: prints an analysis of every function, for lit tests.

It finds the analysis by its registered name, so, alone of the passes below
the registry, it imports the registry (an accepted departure from the layering
inside `passes`; the registry names passes lazily, so there is no cycle)."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import ClassVar

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp

from accy.passes.pass_manager import AccyPass, AnalysisManager, PreservedAnalyses
from accy.passes.registry import ANALYSES, get_analysis


@dataclass(frozen=True)
class PrintAnalysisPass(AccyPass):
    """Prints the named analysis (`shape-layout`, `schedule`, `outlining`,
    `bufferization`, ...) of every func.func to stdout, before the module is
    printed. It asks the analysis manager, so a cached result is reused; it
    changes nothing and preserves all analyses."""

    name: ClassVar[str] = "print-analysis"
    version: ClassVar[int] = 1

    analysis: str = "schedule"
    """The analysis to print, by name (`accy-opt --list-analyses` lists them)."""

    def run(self, ctx: Context, module: ModuleOp, am: AnalysisManager) -> PreservedAnalyses:
        if self.analysis not in ANALYSES:
            raise ValueError(f"print-analysis: unknown analysis '{self.analysis}' (known: {', '.join(ANALYSES)})")
        cls = get_analysis(self.analysis)
        for op in module.walk():
            if isinstance(op, func.FuncOp) and op.body.blocks:
                sys.stdout.write(am.get(cls, op).print())
        sys.stdout.flush()
        return PreservedAnalyses.all()
