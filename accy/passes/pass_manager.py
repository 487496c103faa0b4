"""The pass manager, the analysis manager and the pass instrumentation.

xDSL has passes and pipelines but no analysis cache; this module adds one with
MLIR's semantics (mlir/include/mlir/Pass/AnalysisManager.h):

- `am.get(A, op)` computes analysis `A` of `op` once and returns the cached
  result until it is invalidated. An analysis may ask for other analyses while
  it is computed; the manager records those edges, and invalidating an
  analysis invalidates every analysis computed from it.
- Every pass returns the analyses it preserved (`PreservedAnalyses.all()`,
  `.none()` or `.of(A, B)`); after the pass everything else is dropped. The
  pass's word is trusted, as in MLIR: a pass that changed nothing says
  `all()`. A plain xDSL pass (cse, dce) cannot say: it preserves nothing,
  unless analyses are cached and a fingerprint of the module shows that it
  changed nothing.
- Passes and analyses have an identity, `name` and `version`: the pair keys
  persistent caches, so changing one means bumping its version.

`PassManager` hands its `Context` to every pass and runs the pipeline under
instruments (`PassInstrumentation`, MLIR's hooks before and after each pass and
each analysis): timing and statistics, IR printed before/after passes, IR
dumped to a directory, a snapshot of each pass's input for reproducers, and a
checking mode that recomputes every analysis a pass claims to preserve. Only
the instruments asked for run, so a pipeline without them (`accy.compile`)
never prints, clones or fingerprints the module.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import os
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar, TypeVar

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation
from xdsl.passes import ModulePass

from accy.dialects.dense import DensePrinter
from accy.env import EnvVarError
from accy.progress import Bar

# --------------------------------------------------------------------------
# Analyses
# --------------------------------------------------------------------------


def summary(cls: type) -> str:
    """The first paragraph of `cls`'s docstring, on one line."""
    paragraph = (cls.__doc__ or "").strip().split("\n\n", 1)[0]
    return " ".join(paragraph.split())


class Described:
    """A pass or analysis: its `description` (what `accy-opt --list-passes`
    and `--list-analyses` print) is the first paragraph of its docstring,
    so the two cannot drift apart."""

    description: ClassVar[str] = ""

    def __init_subclass__(cls, **kwargs: object) -> None:
        super().__init_subclass__(**kwargs)
        cls.description = summary(cls)


class Analysis(Described):
    """Base of accy analyses. Subclasses set `name` and `version`, and compute
    themselves in `__init__(op, am)`, asking `am` for the analyses they need."""

    name: ClassVar[str] = "analysis"
    version: ClassVar[int] = 1

    def __init__(self, op: Operation, am: AnalysisManager) -> None:
        self.op = op

    def print(self) -> str:
        """Stable text for `print-analysis` and lit tests."""
        return f"{self.name}: no printer\n"

    def statistics(self) -> dict[str, int | float]:
        """Figures reported in the analysis statistics (kernels, peak bytes, ...)."""
        return {}

    def equals(self, other: Analysis) -> bool:
        """Whether `other` (the same analysis of the same op) says the same:
        how the checking mode compares a preserved analysis with its
        recomputation. By default the printed texts are compared, so an
        analysis whose `print()` leaves out something it answers overrides
        this."""
        return self.print() == other.print()


A = TypeVar("A", bound=Analysis)
#: A cache entry's key: the analysis and the op itself (ops hash by identity,
#: and holding the op keeps it alive while its analysis is cached, so the key
#: cannot be confused with a later op, as an `id()` could).
_Key = tuple[type[Analysis], Operation]


@dataclass(frozen=True)
class PreservedAnalyses:
    """What a pass kept valid: all analyses, none, or the listed classes."""

    everything: bool = False
    kept: frozenset[type[Analysis]] = frozenset()

    @staticmethod
    def all() -> PreservedAnalyses:
        return PreservedAnalyses(everything=True)

    @staticmethod
    def none() -> PreservedAnalyses:
        return PreservedAnalyses()

    @staticmethod
    def of(*analyses: type[Analysis]) -> PreservedAnalyses:
        return PreservedAnalyses(kept=frozenset(analyses))

    def preserves(self, analysis: type[Analysis]) -> bool:
        return self.everything or analysis in self.kept

    @property
    def is_none(self) -> bool:
        return not self.everything and not self.kept

    def describe(self) -> str:
        return "all" if self.everything else ", ".join(sorted(a.name for a in self.kept)) or "none"


@dataclass
class AnalysisStats:
    """The cache's figures for one analysis."""

    hits: int = 0
    misses: int = 0
    invalidations: int = 0


class AnalysisManager:
    """Caches analyses per (analysis class, op) and tracks which analyses were
    computed from which, so that invalidation is transitive.

    `instruments` see every computation (not cache hits) through
    `run_before_analysis`/`run_after_analysis`; the `PassManager` sets them
    while it runs."""

    def __init__(self, instruments: Sequence[PassInstrumentation] = ()) -> None:
        self._cache: dict[_Key, Analysis] = {}
        # key -> the keys computed from it. Only cached keys have an entry, and
        # dropping a key drops it from the others' sets: the map never holds
        # more than the cache does.
        self._dependents: dict[_Key, set[_Key]] = {}
        self._computing: list[_Key] = []
        self.stats: dict[str, AnalysisStats] = {}
        self.instruments: Sequence[PassInstrumentation] = instruments

    def get(self, analysis: type[A], op: Operation) -> A:
        key: _Key = (analysis, op)
        stats = self.stats.setdefault(analysis.name, AnalysisStats())
        result = self._cache.get(key)
        if result is not None:
            stats.hits += 1
        else:
            stats.misses += 1
            result = self._compute(key)
        if self._computing:
            self._dependents[key].add(self._computing[-1])
        return result  # type: ignore[return-value]

    def _compute(self, key: _Key) -> Analysis:
        analysis, op = key
        for instrument in self.instruments:
            instrument.run_before_analysis(analysis, op)
        self._computing.append(key)
        try:
            result = analysis(op, self)
        finally:
            self._computing.pop()
            # Also after a raising analysis, so that instruments stay balanced.
            for instrument in reversed(self.instruments):
                instrument.run_after_analysis(analysis, op)
        self._cache[key] = result
        self._dependents[key] = set()
        return result

    def get_cached(self, analysis: type[A], op: Operation) -> A | None:
        return self._cache.get((analysis, op))  # type: ignore[return-value]

    def cached(self) -> list[type[Analysis]]:
        return [a for a, _ in self._cache]

    def is_empty(self) -> bool:
        return not self._cache

    def entries(self) -> Iterator[tuple[type[Analysis], Operation, Analysis]]:
        """Every cached result with its analysis and op."""
        for (analysis, op), result in list(self._cache.items()):
            yield analysis, op, result

    def invalidate(self, preserved: PreservedAnalyses) -> None:
        """Drops every analysis not preserved, and everything computed from it."""
        if preserved.everything:
            return
        doomed = [key for key in self._cache if not preserved.preserves(key[0])]
        seen: set[_Key] = set()
        while doomed:
            key = doomed.pop()
            if key not in seen:
                seen.add(key)
                doomed.extend(self._dependents.get(key, ()))
        for key in seen:
            del self._cache[key]
            del self._dependents[key]
            self.stats.setdefault(key[0].name, AnalysisStats()).invalidations += 1
        if seen:
            for dependents in self._dependents.values():
                dependents -= seen

    def clear(self) -> None:
        self.invalidate(PreservedAnalyses.none())


# --------------------------------------------------------------------------
# Passes
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class AccyPass(ModulePass, Described):
    """An accy pass: an xDSL `ModulePass` that also sees the analysis manager
    and reports what it preserved. Its dataclass fields are its options."""

    name: ClassVar[str] = "accy-pass"
    version: ClassVar[int] = 1

    def run(self, ctx: Context, module: ModuleOp, am: AnalysisManager) -> PreservedAnalyses:
        """Transforms `module` (building IR in `ctx`'s dialects) and returns
        the analyses still valid: `all()` when it changed nothing."""
        raise NotImplementedError

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        # Outside a PassManager (xDSL's own pipeline): a throwaway cache.
        self.run(ctx, op, AnalysisManager())


def pass_identity(p: ModulePass) -> tuple[str, int]:
    return (p.name, getattr(p, "version", 0))


def pass_spec(p: ModulePass) -> str:
    """The pipeline text that recreates `p` with its options."""
    return str(p.pipeline_pass_spec())


def fingerprint(module: ModuleOp) -> str:
    """A hash of the module's generic text: equal iff the IR is equal."""
    out = io.StringIO()
    # Large literals enter as a hash of their bytes: a fingerprint costs the
    # program's size, not its data's (and never unpacks a literal).
    DensePrinter(stream=out, print_generic_format=True, digest=True).print_op(module)
    return hashlib.sha256(out.getvalue().encode()).hexdigest()


def print_ir(module: ModuleOp) -> str:
    out = io.StringIO()
    DensePrinter(stream=out).print_op(module)
    return out.getvalue() + "\n"


class PassFailure(Exception):
    """A pass failed, raised, or broke its contract. `ir_before` is the IR the
    pass was given when the pass manager kept it (`reproducer=True`), for a
    reproducer; None otherwise."""

    def __init__(self, pass_: ModulePass, message: str, ir_before: str | None = None) -> None:
        super().__init__(message)
        self.pass_ = pass_
        self.ir_before = ir_before
        self.message = message


# --------------------------------------------------------------------------
# Instrumentation
# --------------------------------------------------------------------------


class PassInstrumentation:
    """Hooks around a pipeline, its passes and the analyses they compute, as
    MLIR's `PassInstrumentation`. Every hook does nothing by default.

    Before-hooks run in the order the instruments were given, after-hooks in
    the reverse order, so that an instrument's after-hook sees what it saw
    before. `run_after_pass` runs once the module is verified and the
    analyses not preserved are dropped; it may raise a `PassFailure`, which
    fails the pass. `run_after_pass_failed` may add to the failure (its IR).
    The analysis hooks surround each computation (cache hits are not
    computations), nested when an analysis asks for another."""

    def run_before_pipeline(self, module: ModuleOp, am: AnalysisManager) -> None: ...

    def run_after_pipeline(self, module: ModuleOp) -> None: ...

    def run_before_pass(self, pass_: ModulePass, module: ModuleOp) -> None: ...

    def run_after_pass(self, pass_: ModulePass, module: ModuleOp, preserved: PreservedAnalyses) -> None: ...

    def run_after_pass_failed(self, pass_: ModulePass, module: ModuleOp, failure: PassFailure) -> None: ...

    def run_before_analysis(self, analysis: type[Analysis], op: Operation) -> None: ...

    def run_after_analysis(self, analysis: type[Analysis], op: Operation) -> None: ...


@dataclass
class PassStats:
    name: str
    version: int
    seconds: float = 0.0
    changed: bool = False


class PassTiming(PassInstrumentation):
    """Per-pass time (the pass and the verification of its result) and
    per-analysis time. An analysis's time excludes the analyses it asked for,
    which are counted as theirs. `changed` is whether the pass did not
    preserve all analyses, which a pass reports exactly when it changed the
    IR (a plain xDSL pass: see `PassManager`)."""

    def __init__(self) -> None:
        self.passes: list[PassStats] = []
        self.analysis_seconds: dict[str, float] = {}
        self._start = 0.0
        # One [start, seconds of the analyses it asked for] per analysis being computed.
        self._stack: list[list[float]] = []

    def run_before_pass(self, pass_: ModulePass, module: ModuleOp) -> None:
        self._start = time.perf_counter()

    def run_after_pass(self, pass_: ModulePass, module: ModuleOp, preserved: PreservedAnalyses) -> None:
        seconds = time.perf_counter() - self._start
        self.passes.append(PassStats(*pass_identity(pass_), seconds=seconds, changed=not preserved.everything))

    def run_before_analysis(self, analysis: type[Analysis], op: Operation) -> None:
        self._stack.append([time.perf_counter(), 0.0])

    def run_after_analysis(self, analysis: type[Analysis], op: Operation) -> None:
        start, inner = self._stack.pop()
        total = time.perf_counter() - start
        self.analysis_seconds[analysis.name] = self.analysis_seconds.get(analysis.name, 0.0) + total - inner
        if self._stack:
            self._stack[-1][1] += total


@dataclass
class IRPrinting(PassInstrumentation):
    """Prints the IR before the passes named in `before` and after those in
    `after` ("all": every pass) to `out`, MLIR's banner first."""

    before: frozenset[str]
    after: frozenset[str]
    out: Callable[[str], None]

    def run_before_pass(self, pass_: ModulePass, module: ModuleOp) -> None:
        if {"all", pass_.name} & self.before:
            self.out(f"// -----// IR before {pass_spec(pass_)} //----- //\n{print_ir(module)}")

    def run_after_pass(self, pass_: ModulePass, module: ModuleOp, preserved: PreservedAnalyses) -> None:
        if {"all", pass_.name} & self.after:
            self.out(f"// -----// IR after {pass_spec(pass_)} //----- //\n{print_ir(module)}")


def write_file(path: Path, text: str, exclusive: bool = False) -> None:
    """Writes `text` to `path` (mode 0600) without ever following a link
    there: a dump folder may be shared, and a link planted at a predictable
    name (a dangling one too) must not make accy overwrite the file it
    names. `exclusive`: `path` must be new (`FileExistsError` when anything,
    a link included, has its name); else a temporary file in the same folder
    is renamed over it, which replaces a link instead of writing through it."""
    if exclusive:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(text)
        return
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name[:32]}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


@dataclass
class IRDump(PassInstrumentation):
    """Writes the IR after the pipeline's N-th pass to `directory/NN-<pass>.mlir`."""

    directory: Path
    _index: int = 0

    def run_before_pipeline(self, module: ModuleOp, am: AnalysisManager) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        self._index = 0

    def run_before_pass(self, pass_: ModulePass, module: ModuleOp) -> None:
        self._index += 1

    def run_after_pass(self, pass_: ModulePass, module: ModuleOp, preserved: PreservedAnalyses) -> None:
        write_file(self.directory / f"{self._index:02d}-{pass_.name}.mlir", print_ir(module))


class Reproducer(PassInstrumentation):
    """Keeps the IR each pass is given (a clone: literals are shared, not
    copied), printed only if the pass fails, into `PassFailure.ir_before`."""

    def __init__(self) -> None:
        self._input: ModuleOp | None = None

    def run_before_pass(self, pass_: ModulePass, module: ModuleOp) -> None:
        self._input = module.clone()

    def run_after_pass_failed(self, pass_: ModulePass, module: ModuleOp, failure: PassFailure) -> None:
        if failure.ir_before is None and self._input is not None:
            failure.ir_before = print_ir(self._input)


class CheckPreserved(PassInstrumentation):
    """The checking mode: after each pass, every analysis still cached (what
    the pass preserved, and what it computed and kept) is recomputed from
    scratch and compared with the cached result (`Analysis.equals`); a
    difference fails the pass. A claim about an analysis nobody asked for
    costs nothing and risks nothing, so it is not checked."""

    def __init__(self) -> None:
        self._am: AnalysisManager | None = None

    def run_before_pipeline(self, module: ModuleOp, am: AnalysisManager) -> None:
        self._am = am

    def run_after_pass(self, pass_: ModulePass, module: ModuleOp, preserved: PreservedAnalyses) -> None:
        assert self._am is not None
        for analysis, op, cached in self._am.entries():
            # An op the pass erased is never asked about again.
            if not _inside(op, module):
                continue
            if not cached.equals(analysis(op, AnalysisManager())):
                raise PassFailure(
                    pass_,
                    f"pass '{pass_.name}' claims to preserve analyses ({preserved.describe()}), but "
                    f"'{analysis.name}' of {_describe(op)}, recomputed after the pass, differs from the cached result",
                )


def _inside(op: Operation, module: ModuleOp) -> bool:
    node: Operation | None = op
    while node is not None and node is not module:
        node = node.parent_op()
    return node is module


def _describe(op: Operation) -> str:
    sym = op.attributes.get("sym_name") or op.properties.get("sym_name")
    return f"@{sym.data}" if sym is not None else f"'{op.name}'"  # type: ignore[union-attr]


# --------------------------------------------------------------------------
# The pass manager
# --------------------------------------------------------------------------


@dataclass
class PassManager:
    """Runs a pipeline of passes over a module with one analysis manager,
    handing every pass `ctx` (a fresh `make_context()` if None).

    The options install the standard instruments: `check` the checking mode
    (`CheckPreserved`); `print_before`/`print_after` (pass names or "all")
    print the IR to `out`; `dump_dir` receives the IR after each pass as
    `NN-<pass>.mlir`; `reproducer` keeps the IR each pass is given, for the
    `PassFailure` of a pass that fails. `instruments` are added after those.
    Times are always kept (two clock reads per pass and per analysis
    computed) for `statistics()`.
    """

    passes: Sequence[ModulePass]
    ctx: Context | None = None
    check: bool = False
    print_before: Iterable[str] = ()
    print_after: Iterable[str] = ()
    dump_dir: Path | None = None
    reproducer: bool = False
    out: Callable[[str], None] = print
    instruments: Sequence[PassInstrumentation] = ()
    am: AnalysisManager = field(default_factory=AnalysisManager)
    timing: PassTiming = field(default_factory=PassTiming, init=False)

    def _instruments(self) -> list[PassInstrumentation]:
        chosen: list[PassInstrumentation] = []
        if self.reproducer:
            chosen.append(Reproducer())
        before, after = frozenset(self.print_before), frozenset(self.print_after)
        if before or after:
            chosen.append(IRPrinting(before, after, self.out))
        if self.dump_dir is not None:
            chosen.append(IRDump(self.dump_dir))
        if self.check:
            chosen.append(CheckPreserved())
        # Timing last: its clock starts after the other instruments' before-
        # hooks and stops before their after-hooks.
        return [*chosen, *self.instruments, self.timing]

    def run(self, module: ModuleOp) -> None:
        from accy.dialects.context import make_context

        ctx = self.ctx if self.ctx is not None else make_context()
        instruments = self._instruments()
        self.am.instruments = instruments
        try:
            for instrument in instruments:
                instrument.run_before_pipeline(module, self.am)
            # One clock read per pass at most (accy/progress.py): drawn only past a second.
            with Bar("pipeline", len(self.passes), "passes") as bar:
                for p in self.passes:
                    bar.set_postfix(p.name)
                    self._run_pass(p, ctx, module, instruments)
                    bar.update()
            for instrument in reversed(instruments):
                instrument.run_after_pipeline(module)
        finally:
            self.am.instruments = ()

    def _run_pass(self, p: ModulePass, ctx: Context, module: ModuleOp, instruments: list[PassInstrumentation]) -> None:
        for instrument in instruments:
            instrument.run_before_pass(p, module)
        try:
            preserved = self._apply(p, ctx, module)
            module.verify()
            self.am.invalidate(preserved)
            for instrument in reversed(instruments):
                instrument.run_after_pass(p, module, preserved)
        except EnvVarError:
            raise  # the environment's setting is wrong, not the pass: no failure, no reproducer
        except Exception as e:  # a pass that raises is a pass that failed
            failure = e if isinstance(e, PassFailure) else PassFailure(p, _message(e))
            for instrument in reversed(instruments):
                instrument.run_after_pass_failed(p, module, failure)
            if failure is e:
                raise
            raise failure from e

    def _apply(self, p: ModulePass, ctx: Context, module: ModuleOp) -> PreservedAnalyses:
        if isinstance(p, AccyPass):
            return p.run(ctx, module, self.am)
        # A plain xDSL pass does not say whether it changed anything. Only when
        # analyses are cached is the answer worth a fingerprint on each side.
        before = None if self.am.is_empty() else fingerprint(module)
        p.apply(ctx, module)
        unchanged = before is not None and fingerprint(module) == before
        return PreservedAnalyses.all() if unchanged else PreservedAnalyses.none()

    def statistics(self) -> dict[str, object]:
        """Per-pass times and per-analysis cache figures and times, plus what
        the cached analyses report (kernel counts, peak bytes)."""
        analyses: dict[str, dict[str, int | float]] = {}
        for name, s in self.am.stats.items():
            analyses[name] = {
                "hits": s.hits,
                "misses": s.misses,
                "invalidations": s.invalidations,
                "seconds": round(self.timing.analysis_seconds.get(name, 0.0), 6),
            }
        # Figures of an analysis cached for several ops (one per function)
        # are summed: kernels and peak bytes of the whole module.
        for analysis, _, result in self.am.entries():
            figures = analyses.setdefault(analysis.name, {})
            for k, v in result.statistics().items():
                figures[k] = figures.get(k, 0) + v
        return {
            "passes": [
                {"name": s.name, "version": s.version, "seconds": round(s.seconds, 6), "changed": s.changed}
                for s in self.timing.passes
            ],
            "analyses": analyses,
        }

    def format_statistics(self) -> str:
        stats = self.statistics()
        lines = ["===- accy pass statistics -===", "pass timing:"]
        for p in stats["passes"]:  # type: ignore[union-attr]
            lines.append(f"  {p['name']} v{p['version']}: {p['seconds'] * 1e3:.3f} ms{' (changed IR)' if p['changed'] else ''}")
        lines.append("analyses:")
        for name, figures in sorted(stats["analyses"].items()):  # type: ignore[union-attr]
            lines.append(f"  {name}: " + ", ".join(f"{k}={v}" for k, v in figures.items()))
        return "\n".join(lines) + "\n"


def _message(e: Exception) -> str:
    return f"{type(e).__name__}: {e}" if str(e) else type(e).__name__
