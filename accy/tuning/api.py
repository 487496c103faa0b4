"""The tuner at accy's face: `accy.compile(..., tune=True)` and `accy.tune`.

    exe = accy.compile("prog.mlir", device="llvm", tune=True)   # tuned, then compiled
    result = accy.tune("prog.mlir", device="llvm")              # a TuneResult (search.py)
    print(result.module)                                         # the tuned module: plain .mlir

Tuning is off unless asked for: `tune=True`, or `ACCY_TUNE=1` in the
environment (a yes/no word, read strictly by accy/env.py) when `tune` is
not given. `ACCY_TUNE_BUDGET` (whole seconds) bounds a program's search
(default `Budget.program_s`). The runtime never imports this module: a tuned
module is plain `.mlir` that any compile takes as it is.
"""

from __future__ import annotations

import os
from dataclasses import replace
from typing import TYPE_CHECKING

from accy.env import env_flag, env_int
from accy.runtime.devices import get_device
from accy.runtime.executable import Executable
from accy.runtime.executable import compile as compile_untuned

if TYPE_CHECKING:
    # The search loads xDSL and the lowerings: only when a tune runs, so
    # that reaching accy.compile costs no more than the runtime's compile
    # (whose warm path loads no xDSL).
    from xdsl.dialects.builtin import ModuleOp

    from accy.runtime.device import Device
    from accy.tuning.search import Budget, TuneResult

TUNE_ENV = "ACCY_TUNE"
BUDGET_ENV = "ACCY_TUNE_BUDGET"


def tune_requested(tune: bool | None) -> bool:
    """`tune` when given, else what `ACCY_TUNE` says (off when unset)."""
    return env_flag(TUNE_ENV) if tune is None else tune


def default_budget() -> Budget:
    """`Budget()`, its program's seconds from `ACCY_TUNE_BUDGET` when set
    (and a kind's seconds at most those)."""
    from accy.tuning.search import Budget

    budget = Budget()
    seconds = env_int(BUDGET_ENV, None, "seconds")
    if seconds is None:
        return budget
    return replace(budget, program_s=float(seconds), kernel_s=min(budget.kernel_s, float(seconds)))


def tune(
    module_or_path: ModuleOp | str | os.PathLike[str], device: str | Device = "auto", fn: str = "main",
    budget: Budget | None = None,
) -> TuneResult:
    """Tunes function `fn` of a module (a `ModuleOp`, not modified, `.mlir`
    text or a path) on `device`; the result's `module` is the tuned module
    (search.py's module docstring says how)."""
    return _tuned(module_or_path, device, fn, budget)


def _tuned(
    module_or_path: ModuleOp | str | os.PathLike[str], device: str | Device, fn: str, budget: Budget | None
) -> TuneResult:
    from accy.tuning.search import tune as search

    return search(module_or_path, device, fn, budget or default_budget())


def compile(
    module_or_path: ModuleOp | str | os.PathLike[str],
    device: str | Device = "auto",
    fn: str = "main",
    strict: bool = False,
    to_host: bool = True,
    tune: bool | None = None,
    budget: Budget | None = None,
) -> Executable:
    """Compiles function `fn` of a module for `device`, as
    `accy.runtime.executable.compile` does (its docstring says how), tuned
    first when `tune` is True (or, when `tune` is None, when `ACCY_TUNE` is
    on): the module compiled is the tuned one, and a module tuned before on
    this device takes its fields from the tuning store at once. `budget`
    bounds the search (default: `default_budget()`)."""
    if not tune_requested(tune):
        return compile_untuned(module_or_path, device, fn, strict, to_host)
    target = get_device(device) if isinstance(device, str) else device
    tuned = _tuned(module_or_path, target, fn, budget)
    return compile_untuned(tuned.module, target, fn, strict, to_host)
