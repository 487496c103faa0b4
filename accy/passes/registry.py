"""Every pass and analysis accy knows, by name.

Entries are lazy (`module:Class`), so importing the registry costs nothing and
a tool lists what exists without loading every lowering. The dialects accy
loads are in `accy.dialects.context`.

Named pipelines (`PIPELINES`) are MLIR's registered pass pipelines: a name,
with options of its own, for a sequence of registered passes. A pipeline is
no pass: it is expanded into its passes where pipeline text is read
(`accy-opt -p`) and where a runtime builds it (`Pipeline.passes`), so the pass
manager runs, times, prints, dumps and checks each of its passes, and a
reproducer names the one that failed.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from importlib import import_module
from typing import ClassVar

from xdsl.passes import ModulePass
from xdsl.utils.arg_spec import ArgSpec, ArgSpecConvertible

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


# --------------------------------------------------------------------------
# Named pipelines
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class Pipeline(ArgSpecConvertible):
    """A named pipeline: its dataclass fields are its options (parsed from
    `name{opt=value ...}` as a pass's are), `specs()` the passes it stands
    for, each a registered pass name with its options."""

    name: ClassVar[str]

    def specs(self) -> list[ArgSpec]:
        """Its passes in the order they run, each as a registered name and options."""
        raise NotImplementedError

    def passes(self) -> list[ModulePass]:
        """The passes, made as `accy-opt -p` makes them from their specs."""
        return [get_pass(spec.name).from_pass_spec(spec) for spec in self.specs()]


@dataclass(frozen=True)
class DevicePipeline(Pipeline):
    """What `accy.compile` runs on a kernel device (OpenCL, LLVM):
    loop-invariant-code-motion, widen-accumulation, then kernelize with the
    options strict and verify-bounds (on by default: every compile proves its
    kernels in bounds).

    The runtime builds its passes from here (runtime/device.py), so
    `accy-opt -p accy-device-pipeline` and a compile cannot drift apart.
    """

    name: ClassVar[str] = "accy-device-pipeline"

    strict: bool = False
    verify_bounds: bool = True

    def specs(self) -> list[ArgSpec]:
        kernelize = {"strict": (self.strict,), "verify-bounds": (self.verify_bounds,)}
        return [ArgSpec("loop-invariant-code-motion", {}), ArgSpec("widen-accumulation", {}), ArgSpec("kernelize", kernelize)]


#: name -> pipeline (`accy-opt --list-passes` prints each with its docstring's first paragraph).
PIPELINES: dict[str, type[Pipeline]] = {DevicePipeline.name: DevicePipeline}


def expand(spec: ArgSpec) -> list[ArgSpec]:
    """The pass specs that `spec`, one element of pipeline text, stands for:
    a named pipeline's passes with its options given, any other spec itself.
    A pipeline option it does not have, or a value of the wrong type, raises
    `ValueError`."""
    pipeline = PIPELINES.get(spec.name)
    return [spec] if pipeline is None else pipeline.from_spec(spec).specs()
