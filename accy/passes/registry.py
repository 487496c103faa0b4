"""Every pass, analysis, dialect and target accy knows, by name.

Entries are lazy (`module:Class`), so importing the registry costs nothing and
a tool lists what exists without loading every lowering.
"""

from __future__ import annotations

from collections.abc import Callable
from importlib import import_module

from xdsl.context import Context
from xdsl.passes import ModulePass

from accy.passes.pass_manager import Analysis

# name -> "module:Class". Each class documents itself (its docstring's first
# paragraph is what `accy-opt --list-passes` prints).
PASSES: dict[str, str] = {
    "canonicalize": "accy.passes.canonicalize:CanonicalizePass",
    "cse": "xdsl.transforms.common_subexpression_elimination:CommonSubexpressionElimination",
    "dce": "xdsl.transforms.dead_code_elimination:DeadCodeElimination",
    "decompose": "accy.passes.decompose:DecomposePass",
    "print-analysis": "accy.passes.print_analysis:PrintAnalysisPass",
    "test-analysis-cache": "accy.passes.testing:TestAnalysisCachePass",
    "test-rewrite-claiming-preserved": "accy.passes.testing:TestRewriteClaimingPreservedPass",
    "test-fail": "accy.passes.testing:TestFailPass",
    "set-target": "accy.passes.target:SetTargetPass",
    "kernelize": "accy.passes.kernelization.kernelize:KernelizePass",
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
