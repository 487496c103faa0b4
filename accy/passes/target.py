"""`set-target`: attaches or changes the module's target profile (`accy.target`)."""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import ClassVar

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp

from accy.dialects.target import DEFAULTS, PROFILES, TargetProfile
from accy.passes.analyses.bufferization import BufferPlan
from accy.passes.analyses.outlining import Outlining
from accy.passes.analyses.schedule import Schedule
from accy.passes.analyses.shape_layout import ShapeLayout
from accy.passes.pass_manager import AccyPass, AnalysisManager, PreservedAnalyses


@dataclass(frozen=True)
class SetTargetPass(AccyPass):
    """Sets the module's target profile (`accy.target`).

    `profile` ("cpu" or "gpu") starts from that profile's defaults; without it
    the module's current profile (CPU when it has none) is kept and only the
    given fields change, e.g. `set-target{profile=gpu math=fast}` or
    `set-target{vector_width=8}` or `set-target{fp16=false}`. Changing the
    target invalidates every analysis (they may read it)."""

    name: ClassVar[str] = "set-target"
    version: ClassVar[int] = 2

    profile: str | None = None
    format: str | None = None
    math: str | None = None
    vector_width: int | None = None
    max_work_group_size: int | None = None
    local_mem_bytes: int | None = None
    compute_units: int | None = None
    cheap_barriers: bool | None = None
    fp16: bool | None = None
    fp64: bool | None = None

    def __post_init__(self) -> None:
        # Validate at construction, so a bad pipeline string fails before any pass runs.
        self.target_for(TargetProfile())

    def target_for(self, current: TargetProfile) -> TargetProfile:
        """The profile this pass attaches to a module whose profile is `current`."""
        if self.profile is not None and self.profile not in PROFILES:
            raise ValueError(f"set-target: profile must be one of {', '.join(PROFILES)}; got '{self.profile}'")
        base = DEFAULTS[self.profile] if self.profile is not None else current
        changes = {
            f.name: getattr(self, f.name)
            for f in fields(TargetProfile)
            if f.name != "profile" and getattr(self, f.name, None) is not None
        }
        try:
            return base.replace(**changes)
        except ValueError as e:
            raise ValueError(f"set-target: {e}") from None

    def run(self, ctx: Context, module: ModuleOp, am: AnalysisManager) -> PreservedAnalyses:
        current = TargetProfile.of_module(module)
        new = self.target_for(current)
        if "accy.target" in module.attributes and new == current:
            return PreservedAnalyses.all()
        new.attach(module)
        # The analyses are of functions and read their bodies, never the
        # module's target (what a target changes is decided by the lowerings
        # that read it): only the attribute changed, so all of them stay valid.
        # An analysis that comes to read the target leaves this list;
        # tests/lit/analysis-cache/set-target.mlir checks it with --check-preserved.
        return PreservedAnalyses.of(ShapeLayout, Schedule, Outlining, BufferPlan)
