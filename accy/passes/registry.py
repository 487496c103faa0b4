"""Every pass and analysis accy knows, by name, and the dialects it loads.

Entries are lazy (`module:Class`), so importing the registry costs nothing and
a tool lists what exists without loading every lowering.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cache
from importlib import import_module

from xdsl.context import Context
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


def make_context() -> Context:
    """A context with every dialect accy reads or writes."""
    from xdsl.dialects.arith import Arith
    from xdsl.dialects.builtin import Builtin
    from xdsl.dialects.func import Func
    from xdsl.dialects.gpu import GPU
    from xdsl.dialects.math import Math
    from xdsl.dialects.memref import MemRef
    from xdsl.dialects.scf import Scf
    from xdsl.dialects.vector import Vector

    from accy.dialects.accy import Accy
    from accy.dialects.host import AccyHost
    from accy.dialects.kernel import AccyKernel

    ctx = Context()
    for d in (Builtin, Func, Arith, Math, MemRef, Scf, Vector, GPU, Accy, AccyHost, AccyKernel):
        ctx.load_dialect(d)
    return ctx


@cache
def shared_context() -> Context:
    """One `make_context()` per process, for the pattern rewrites that need a
    context only to build the constants they fold to (canonicalize,
    `simplify_kernel`); nobody loads dialects into it."""
    return make_context()
