"""`tune`: the autotuner as a pass, for `accy-opt -p tune`.

    accy-opt prog.mlir -p 'tune{device=llvm budget=30}'   # prints the tuned module

It sets the module's `#accy.target` to what a search of function `fn` on
`device` finds (search.py), and prints one summary line on stderr. The
pass lives here, above the runtime it drives, not in the passes' registry:
the passes never import the tuner (tests/unit/test_layering.py). `accy-opt`
registers it (accy/cli/opt.py), as `accy.register_pass(TunePass)` does for
a pipeline built in Python. Loading the class loads neither the runtime nor
the search: they load when the pass runs.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, replace
from typing import ClassVar

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp

from accy.dialects.target import TARGET_KEY
from accy.passes.pass_manager import AccyPass, AnalysisManager, PreservedAnalyses


@dataclass(frozen=True)
class TunePass(AccyPass):
    """Tunes function `fn` on `device` and writes the fields found into the
    module's `#accy.target` (docs/tuning.md).

    `device`: a device name as accy-run takes (default auto); `fn`: the
    function timed (default main); `budget`: the most seconds the search
    takes (default `ACCY_TUNE_BUDGET`, else 50). A module tuned before on
    the same device takes its result from the tuning cache at once."""

    name: ClassVar[str] = "tune"
    version: ClassVar[int] = 1

    device: str = "auto"
    """The device to tune on (auto, llvm, opencl, opencl:N)."""
    fn: str = "main"
    """The function to tune."""
    budget: int | None = None
    """The most seconds the search takes (default ACCY_TUNE_BUDGET, else 50)."""

    def __post_init__(self) -> None:
        if self.budget is not None and self.budget < 1:
            raise ValueError(f"tune: budget must be a whole number of seconds >= 1; got {self.budget}")

    def run(self, ctx: Context, module: ModuleOp, am: AnalysisManager) -> PreservedAnalyses:
        from accy.env import EnvVarError
        from accy.passes.analyses.bufferization import BufferPlan
        from accy.passes.analyses.outlining import Outlining
        from accy.passes.analyses.schedule import Schedule
        from accy.passes.analyses.shape_layout import ShapeLayout
        from accy.passes.diagnostics import DiagnosticError
        from accy.runtime.device import TargetMismatch
        from accy.runtime.devices import get_device
        from accy.tuning.api import default_budget, tune

        # The user's to fix, each said in one line: a device that is not
        # here (get_device's ValueError), a bad ACCY_TUNE_BUDGET, a target
        # the device cannot compile.
        try:
            device = get_device(self.device)
        except ValueError as e:
            raise DiagnosticError(f"tune: {e}") from None
        try:
            budget = default_budget()
            if self.budget is not None:
                budget = replace(budget, program_s=float(self.budget), kernel_s=min(budget.kernel_s, float(self.budget)))
            result = tune(module, device, self.fn, budget)
        except (EnvVarError, TargetMismatch) as e:
            raise DiagnosticError(f"tune: {e}") from None
        print(f"accy-opt: {result.summary()}", file=sys.stderr)
        new = result.module.attributes.get(TARGET_KEY)
        if new is None or module.attributes.get(TARGET_KEY) == new:
            return PreservedAnalyses.all()
        module.attributes[TARGET_KEY] = new
        # Only the target changed: the analyses read the functions (as set-target's).
        return PreservedAnalyses.of(ShapeLayout, Schedule, Outlining, BufferPlan)
