"""Every pass and analysis accy knows, by name.

Entries are lazy (`module:Class`), so importing the registry costs nothing and
a tool lists what exists without loading every lowering. The dialects accy
loads are in `accy.dialects.context`.
"""

from __future__ import annotations

from collections.abc import Callable
from importlib import import_module

from xdsl.passes import ModulePass

from accy.passes.pass_manager import Analysis, summary

# name -> "module:Class". Each accy class documents itself (its docstring's
# first paragraph is what `accy-opt --list-passes` prints); xDSL's own passes
# are described in `XDSL_PASS_SUMMARIES`.
PASSES: dict[str, str] = {
    "canonicalize": "accy.passes.canonicalize:CanonicalizePass",
    "cse": "xdsl.transforms.common_subexpression_elimination:CommonSubexpressionElimination",
    "dce": "xdsl.transforms.dead_code_elimination:DeadCodeElimination",
    "decompose": "accy.passes.decompose:DecomposePass",
    "inline": "accy.passes.inline:InlinePass",
    "loop-invariant-code-motion": "accy.passes.loop_invariants:LoopInvariantCodeMotionPass",
    "widen-accumulation": "accy.passes.widen_accumulation:WidenAccumulationPass",
    "print-analysis": "accy.passes.print_analysis:PrintAnalysisPass",
    "test-analysis-cache": "accy.passes.testing:TestAnalysisCachePass",
    "test-rewrite-claiming-preserved": "accy.passes.testing:TestRewriteClaimingPreservedPass",
    "test-fail": "accy.passes.testing:TestFailPass",
    "set-target": "accy.passes.target:SetTargetPass",
    "kernelize": "accy.passes.kernelization.kernelize:KernelizePass",
}

#: What the xDSL passes accy registers do (their classes carry no docstring).
XDSL_PASS_SUMMARIES: dict[str, str] = {
    "cse": "xDSL's common-subexpression elimination: an op equal to one that dominates it (same name, operands, "
    "properties, attributes and regions; no effects but reads that no write separates) is erased, and its uses "
    "read the earlier one; ops that are dead already are erased on the way.",
    "dce": "xDSL's dead-code elimination: erases ops without side effects whose results are unused, "
    "innermost first, until none is left.",
}

# The optional tensor passes: any subset in any order must keep results.
TENSOR_PASSES = ("canonicalize", "cse", "dce", "decompose")

ANALYSES: dict[str, str] = {
    "test-analysis": "accy.passes.testing:TestAnalysis",
    "test-dependent-analysis": "accy.passes.testing:TestDependentAnalysis",
    "shape-layout": "accy.passes.analyses.shape_layout:ShapeLayout",
    "schedule": "accy.passes.analyses.schedule:Schedule",
    "outlining": "accy.passes.analyses.outlining:Outlining",
    "bufferization": "accy.passes.analyses.bufferization:BufferPlan",
}


def _load(entry: str) -> type:
    module, cls = entry.split(":")
    return getattr(import_module(module), cls)


def pass_factories() -> dict[str, Callable[[], type[ModulePass]]]:
    return {name: (lambda e=entry: _load(e)) for name, entry in PASSES.items()}


def get_pass(name: str) -> type[ModulePass]:
    return _load(PASSES[name])


def get_analysis(name: str) -> type[Analysis]:
    if name not in ANALYSES:
        raise KeyError(f"unknown analysis '{name}' (known: {', '.join(ANALYSES)})")
    return _load(ANALYSES[name])


def pass_summary(name: str) -> str:
    """The one-paragraph description of pass `name`."""
    return XDSL_PASS_SUMMARIES.get(name) or summary(get_pass(name))
