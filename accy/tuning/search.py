"""The search: set fields, compile, check against the reference, time.

    result = tune(module, device="llvm")          # a TuneResult
    result.module                                  # the module, #accy.target fields set
    result.fields, result.speedup, result.trials

For a function of a module on a kernel device (LLVM, OpenCL):

1. The kinds of kernel the function makes are read from its kernelized form
   (each `gpu.func`'s `accy.kind`); each kind with a space (space.py) is
   searched in `space.KINDS` order, the fields found for one kept while the
   next is searched (coordinate descent: the fields are the module's, shared
   by its kernels, so every candidate is timed as the whole function).
2. The module as given (its fields, the device's defaults for the rest) is
   the first candidate, the *incumbent*.
3. Each candidate: its fields set on a copy of the module, compiled for the
   device, run once on random inputs (seed 0) with every buffer poisoned
   (NaN, or a sentinel byte: an element no kernel writes shows; the
   device's `poison` is on for that call, for any thread that shares the
   device) and compared
   with the reference interpreter's results on the same inputs. A candidate
   that fails to compile or differs is rejected, never chosen. The others are
   timed: one warm-up call, then calls until `Timing.min_runs` are done and
   `Timing.seconds` have passed (at most `Timing.max_runs`); the median counts.
4. A kind's fastest candidate replaces the incumbent only if its median is
   faster by `MARGIN` (5%), and only once it is confirmed: it and the
   incumbent are timed again, interleaved (ABAB..., `CONFIRM_PAIRS`
   pairs), and the median of the pairs' ratios must still say it is faster
   by the margin (on a shared, noisy machine one lucky median must not win,
   and the two calls of a pair see the same load). When it is not
   confirmed, the next fastest past the margin is tried (`CHALLENGERS` in
   all). So a tuned function is never slower than the untuned one, within
   the noise the confirmation leaves.
5. The budget (`Budget`): a kind's candidates stop when its seconds (or its
   count of candidates) are spent, the search when the program's seconds
   are; a candidate that started finishes, and so do the confirmations.
   The module as given is always timed.

The result is written into the module's `#accy.target`: its profile and
every field the searched spaces cover (the device's values for those not
changed), over the fields the module already set, so the tuned module is
plain `.mlir` that compiles to the tuned kernels on any machine. The result
is kept in the tuning store (store.py), keyed by the module's text, the
function, the device's identity and the budget: a second tune of the same
module on the same device is a lookup.

Progress: a `Bar` (accy/progress.py) with `leave=True` shows the kind, the
candidate and the best median so far, on a terminal (or with
`ACCY_PROGRESS=1`), once the search is past a second.
"""

from __future__ import annotations

import os
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from xdsl.dialects import gpu
from xdsl.dialects.builtin import ModuleOp, StringAttr

from accy.dialects.parse import parse_module, verify_module
from accy.dialects.target import TARGET_KEY, TargetAttr, TargetProfile, target_fields
from accy.progress import Bar
from accy.reference.constants import is_float_dtype
from accy.runtime.array import Array, device_put
from accy.runtime.device import Device, KernelDevice
from accy.runtime.devices import get_device
from accy.runtime.executable import TOLERANCES, Executable, prepare_function
from accy.tuning import space as spaces
from accy.tuning import store

#: A candidate must be this much faster (a fraction of the incumbent's median) to replace it.
MARGIN = 0.05
#: Calls of the incumbent and the challenger, in turn, that confirm a challenger (at least).
CONFIRM_PAIRS = 11
#: A kind's fastest candidates past the margin that are timed again, until one is confirmed.
CHALLENGERS = 2


@dataclass(frozen=True)
class Budget:
    """How long a search may take: `program_s` seconds in all, `kernel_s`
    for the candidates of one kind, and at most `kernel_candidates`
    candidates a kind (None: as many as its space has), the default one
    included. Defaults meet issue 24's <= 60 s a workload on a CPU."""

    program_s: float = 50.0
    kernel_s: float = 20.0
    kernel_candidates: int | None = None

    def key(self) -> str:
        return f"{self.program_s:g}/{self.kernel_s:g}/{self.kernel_candidates}"


@dataclass(frozen=True)
class Timing:
    """How one candidate is timed: a warm-up call, then at least `min_runs`
    calls and until `seconds` have passed, at most `max_runs`."""

    min_runs: int = 5
    max_runs: int = 40
    seconds: float = 0.4


@dataclass
class Trial:
    """One candidate: its kind, the fields it set, and what came of it:
    `status` "ok" (timed: `ms` is its median), "wrong" (its results differ
    from the reference), "failed" (it did not compile or run: `detail`),
    "same" (its kernels are those of a candidate timed before: not timed
    again, `ms` is that one's), and for a kind's fastest candidate timed
    again beside the incumbent, "confirmed" (`ms`: its median then) or
    "unconfirmed"."""

    kind: str
    fields: spaces.Candidate
    status: str
    ms: float | None = None
    detail: str = ""

    def as_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "fields": self.fields, "status": self.status, "ms": self.ms, "detail": self.detail}

    @staticmethod
    def from_json(data: dict[str, Any]) -> Trial:
        return Trial(data["kind"], dict(data["fields"]), data["status"], data.get("ms"), data.get("detail", ""))


@dataclass
class TuneResult:
    """What a search found: `module`, the module with `fields` written into
    its `#accy.target`; the untuned and tuned medians (ms); every trial;
    whether it came from the store; the seconds the search took."""

    module: ModuleOp
    fields: dict[str, Any]
    kinds: list[str]
    baseline_ms: float | None
    best_ms: float | None
    trials: list[Trial] = field(default_factory=list)
    cached: bool = False
    seconds: float = 0.0

    @property
    def speedup(self) -> float:
        """Untuned median over tuned median (1.0 when nothing was timed)."""
        if not self.baseline_ms or not self.best_ms:
            return 1.0
        return self.baseline_ms / self.best_ms

    def summary(self) -> str:
        """One line: what was tuned, how much faster, how long it took."""
        if not self.kinds:
            return "tune: no kernel to tune"
        tried = sum(t.status not in ("confirmed", "unconfirmed") for t in self.trials)
        where = "from the tuning cache" if self.cached else f"{tried} candidates in {self.seconds:.1f} s"
        times = ""
        if self.baseline_ms is not None and self.best_ms is not None:
            times = f": {self.baseline_ms:.3f} ms -> {self.best_ms:.3f} ms ({self.speedup:.2f}x)"
        return f"tune {', '.join(self.kinds)}{times}, {where}"


#: Compiles a module's function for a device (a seam for tests: `accy.compile`'s own steps by default).
CompileFn = Callable[[ModuleOp, Device, str], Executable]


def compile_candidate(module: ModuleOp, device: Device, fn: str) -> Executable:
    return Executable(module, fn, device)


def tune(
    module_or_text: ModuleOp | str | os.PathLike[str],
    device: str | Device = "auto",
    fn: str = "main",
    budget: Budget | None = None,
    *,
    timing: Timing | None = None,
    space: spaces.Spaces | None = None,
    use_cache: bool = True,
    compile: CompileFn = compile_candidate,
    clock: Callable[[], float] = time.perf_counter,
) -> TuneResult:
    """Tunes function `fn` of a module (a `ModuleOp`, not modified, or
    `.mlir` text or a path) on `device` (see the module docstring).
    `space` replaces the device profile's spaces (kind -> candidates);
    `use_cache=False` searches even when the store has a result, and keeps
    none; `compile` and `clock` are seams for tests."""
    budget = budget or Budget()
    timing = timing or Timing()
    if isinstance(module_or_text, ModuleOp):
        given = module_or_text.clone()
        verify_module(given)
    else:
        given = parse_module(module_or_text)
    target = get_device(device) if isinstance(device, str) else device
    prepared = given.clone()
    prepare_function(prepared, fn)
    if not isinstance(target, KernelDevice):
        # The reference device runs no kernels: nothing to tune.
        return TuneResult(given, {}, [], None, None)
    base = target.profile_for(prepared)
    chosen_space = space if space is not None else spaces.spaces_for(base.profile)
    key = store.key(prepared, fn, target, f"{budget.key()}|{_space_text(chosen_space, base)}")
    if use_cache:
        found = store.load(key)
        if found is not None:
            fields, kinds, baseline, best, trials = found
            return TuneResult(_with_fields(given, fields), fields, kinds, baseline, best, trials, cached=True)
    search = _Search(prepared, fn, target, base, budget, timing, compile, clock)
    result = search.run(chosen_space)
    result.module = _with_fields(given, result.fields)
    if use_cache:
        store.save(key, result)
    return result


def _space_text(space: spaces.Spaces, base: TargetProfile) -> str:
    """The candidates of `space` for `base`, as text (part of the store's key)."""
    return ";".join(f"{kind}:{spaces.candidates(plan, base)}" for kind, plan in space.items())


def _with_fields(module: ModuleOp, fields: dict[str, Any]) -> ModuleOp:
    """A copy of `module` whose target also sets `fields`."""
    out = module.clone()
    if fields:
        out.attributes[TARGET_KEY] = TargetAttr.from_fields({**target_fields(module), **fields})
    return out


def kernel_kinds(module: ModuleOp, profile: TargetProfile) -> list[str]:
    """The kinds of kernel `module`'s function makes under `profile`, in
    first-use order (kernelized on a copy; `shape` counted as elementwise)."""
    from accy.passes.pass_manager import PassManager
    from accy.passes.registry import DevicePipeline

    copy = module.clone()
    profile.attach(copy)
    PassManager(DevicePipeline(verify_bounds=False).passes()).run(copy)
    kinds: list[str] = []
    for op in copy.walk():
        if isinstance(op, gpu.FuncOp):
            kind = op.attributes.get("accy.kind")
            if isinstance(kind, StringAttr):
                name = spaces.ALIASES.get(kind.data, kind.data)
                if name not in kinds:
                    kinds.append(name)
    return kinds


class _Search:
    """One search (the module docstring's steps)."""

    def __init__(
        self, module: ModuleOp, fn: str, device: KernelDevice, base: TargetProfile, budget: Budget, timing: Timing,
        compile: CompileFn, clock: Callable[[], float],
    ) -> None:
        self.module, self.fn, self.device, self.base = module, fn, device, base
        self.budget, self.timing, self.compile, self.clock = budget, timing, compile, clock
        self.given = target_fields(module)
        self.trials: list[Trial] = []
        self.inputs: list[np.ndarray] = []
        self.expected: tuple[np.ndarray, ...] = ()
        #: Kernel sources already timed -> their median: a candidate whose
        #: fields give the same kernels (a field its kernels do not read) is not timed again.
        self.seen: dict[str, float] = {}

    def run(self, space: spaces.Spaces) -> TuneResult:
        start = self.clock()
        present = kernel_kinds(self.module, self.base)
        kinds = [k for k in spaces.KINDS if k in present and k in space] + [
            k for k in space if k in present and k not in spaces.KINDS
        ]
        if not kinds:
            return TuneResult(self.module, {}, [], None, None, seconds=self.clock() - start)
        plans = {kind: space[kind] for kind in kinds}
        total = 1 + sum(len(spaces.candidates(plan, self.base)) - 1 for plan in plans.values())
        incumbent: spaces.Candidate = {}
        with Bar(f"tune @{self.fn} on {self.device.name}", total=total, unit="candidates", leave=True) as bar:
            # The module as given: it compiles, or the tune fails as its compile would.
            base_exe = self.compile(self._candidate(incumbent), self.device, self.fn)
            self.inputs = base_exe.random_inputs(0)
            self.expected = base_exe.reference_outputs(self.inputs)
            baseline = self._evaluate(base_exe, kinds[0], incumbent)
            if baseline is None:
                raise ValueError(f"tune: @{self.fn} as given does not match the reference on {self.device.name}")
            best = baseline
            bar.update(postfix=self._postfix(kinds[0], None, best))
            for kind in kinds:
                kind_start = self.clock()
                options = spaces.candidates(plans[kind], self.base.replace(**incumbent))
                timed: list[tuple[float, spaces.Candidate]] = []
                for count, fields in enumerate(options[1:], start=2):
                    spent = self.clock()
                    if spent - start > self.budget.program_s or spent - kind_start > self.budget.kernel_s:
                        break
                    if self.budget.kernel_candidates is not None and count > self.budget.kernel_candidates:
                        break
                    trial_fields = {**incumbent, **fields}
                    exe = self._build(trial_fields, kind)
                    ms = None if exe is None else self._evaluate(exe, kind, trial_fields)
                    if ms is not None:
                        timed.append((ms, trial_fields))
                    bar.update(postfix=self._postfix(kind, fields, best))
                # The fastest few past the margin, fastest first, until one is confirmed.
                ahead = sorted((t for t in timed if t[0] < best * (1 - MARGIN)), key=lambda t: t[0])
                for _, challenger in ahead[:CHALLENGERS]:
                    confirmed = self._confirm(incumbent, challenger, kind)
                    verdict = "confirmed" if confirmed is not None else "unconfirmed"
                    self.trials.append(Trial(kind, challenger, verdict, confirmed, "timed again, interleaved with the incumbent"))
                    if confirmed is not None:
                        incumbent, best = challenger, confirmed
                        break
                bar.set_postfix(self._postfix(kind, None, best))
        fields = {"profile": self.base.profile} | self._searched(plans) | incumbent
        return TuneResult(self.module, fields, kinds, baseline, best, self.trials, seconds=self.clock() - start)

    def _searched(self, plans: dict[str, Callable[[TargetProfile], list[spaces.Candidate]]]) -> spaces.Candidate:
        """Every field the spaces cover, at the device's (or the module's) value."""
        names = {name for plan in plans.values() for c in plan(self.base) for name in c}
        return {name: getattr(self.base, name) for name in sorted(names)}

    def _postfix(self, kind: str, fields: spaces.Candidate | None, best: float) -> str:
        shown = "" if fields is None else " " + " ".join(f"{k}={v}" for k, v in fields.items())
        return f"{kind}{shown}; best so far {best:.3f} ms"

    def _candidate(self, fields: spaces.Candidate) -> ModuleOp:
        """A copy of the module whose target sets `fields` (over the module's own)."""
        candidate = self.module.clone()
        candidate.attributes[TARGET_KEY] = TargetAttr.from_fields({**self.given, "profile": self.base.profile, **fields})
        return candidate

    def _build(self, fields: spaces.Candidate, kind: str) -> Executable | None:
        """The function compiled with `fields` set; None (a failed trial) when it does not compile."""
        try:
            return self.compile(self._candidate(fields), self.device, self.fn)
        except Exception as e:  # a candidate that does not compile is rejected, whatever the reason
            self.trials.append(Trial(kind, fields, "failed", detail=f"{type(e).__name__}: {e}"))
            return None

    def _evaluate(self, exe: Executable, kind: str, fields: spaces.Candidate) -> float | None:
        """Checks `exe` against the reference, then times it; its median in
        ms, or None (a rejected trial)."""
        # The kernels and their launches (a work-group size shows only in the launches).
        source = exe.program.source and exe.program.source + "\n" + exe.program.describe()
        if source and source in self.seen:
            self.trials.append(Trial(kind, fields, "same", self.seen[source], "the same kernels as a candidate timed before"))
            return None
        try:
            problem = self._check(exe)
            if problem is not None:
                self.trials.append(Trial(kind, fields, "wrong", detail=problem))
                return None
            ms = statistics.median(self._times(exe, self._arguments(exe))) * 1e3
        except Exception as e:
            self.trials.append(Trial(kind, fields, "failed", detail=f"{type(e).__name__}: {e}"))
            return None
        self.trials.append(Trial(kind, fields, "ok", ms))
        if source:
            self.seen[source] = ms
        return ms

    def _check(self, exe: Executable) -> str | None:
        """Why `exe`'s results on the tuning inputs differ from the
        reference's (every buffer poisoned for the call), or None."""
        device = exe.device
        before = getattr(device, "poison", None)
        if before is not None:
            device.poison = True  # type: ignore[attr-defined]
        try:
            got = exe(*self.inputs)
        finally:
            if before is not None:
                device.poison = before  # type: ignore[attr-defined]
        for i, (out, want) in enumerate(zip(got, self.expected, strict=True)):
            problem = differs(np.asarray(out), want)
            if problem is not None:
                return f"result #{i} {problem}"
        return None

    def _arguments(self, exe: Executable) -> list[Array]:
        return [device_put(x, exe.device) for x in self.inputs]

    def _times(self, exe: Executable, args: Sequence[Array]) -> list[float]:
        """Seconds per call: a warm-up call, then as `Timing` says."""
        _call(exe, args)
        t = self.timing
        times: list[float] = []
        started = time.perf_counter()
        while len(times) < t.max_runs and (len(times) < t.min_runs or time.perf_counter() - started < t.seconds):
            times.append(_timed_call(exe, args))
        return times

    def _confirm(self, incumbent: spaces.Candidate, challenger: spaces.Candidate, kind: str) -> float | None:
        """The challenger's median when, timed interleaved with the
        incumbent, it is still faster by the margin; else None."""
        a, b = self._build(incumbent, kind), self._build(challenger, kind)
        if a is None or b is None:
            return None
        args_a, args_b = self._arguments(a), self._arguments(b)
        _call(a, args_a)
        _call(b, args_b)
        pairs = [(_timed_call(a, args_a), _timed_call(b, args_b)) for _ in range(max(self.timing.min_runs, CONFIRM_PAIRS))]
        # The median of the pairs' ratios: a pair's two calls see the same load.
        ratio = statistics.median(tb / ta for ta, tb in pairs)
        return statistics.median(tb for _, tb in pairs) * 1e3 if ratio < 1 - MARGIN else None


def differs(got: np.ndarray, want: np.ndarray) -> str | None:
    """How `got` differs from the reference's `want`, or None when it is
    close: each element within `TOLERANCES` (NaN where `want` has NaN, the
    same infinities; integers and i1 exactly), or, for floats, within that
    relative tolerance of the largest finite |want| (a long float32 sum, a
    cumsum of 4096 elements, drifts past an elementwise bound where it
    crosses zero, untuned as well as tuned; an unwritten or wrong element is
    far past either bound). Computed in the arrays' own precision (f32 for
    narrower floats): `Comparison` takes seconds on 2^24 elements."""
    if got.shape != want.shape or got.dtype != want.dtype:
        return f"is {got.dtype}{list(got.shape)}, the reference's {want.dtype}{list(want.shape)}"
    if not is_float_dtype(want.dtype):
        wrong = int(np.count_nonzero(got != want))
        return None if wrong == 0 else f"differs from the reference in {wrong} of {want.size} elements"
    rtol, atol = TOLERANCES.get(want.dtype, (1e-3, 1e-4))
    if want.dtype.itemsize < 4 or want.dtype.kind != "f":
        got, want = got.astype(np.float32), want.astype(np.float32)
    with np.errstate(invalid="ignore", over="ignore"):
        diff = np.abs(got - want)
        bad = ~(diff <= atol + rtol * np.abs(want))  # NaN differences are bad
        if not bad.any():
            return None
        g, w = got[bad], want[bad]
        same = (g == w) | (np.isnan(g) & np.isnan(w))  # equal infinities, NaN where the reference has NaN
        worst = float(np.max(np.where(same, 0, np.nan_to_num(diff[bad], nan=np.inf))))
        if worst == 0:
            return None
        finite = np.abs(want[np.isfinite(want)])
        scale = float(finite.max()) if finite.size else 0.0
    if worst <= rtol * scale:
        return None
    return f"differs from the reference: max abs err {worst:.3e} (the largest |reference| is {scale:.3e})"


def _timed_call(exe: Executable, args: Sequence[Array]) -> float:
    t0 = time.perf_counter()
    _call(exe, args)
    return time.perf_counter() - t0


def _call(exe: Executable, args: Sequence[Array]) -> None:
    """One call whose results stay on the device, waited for."""
    for out in exe(*args, to_host=False):
        if isinstance(out, Array):
            out.block_until_ready()
