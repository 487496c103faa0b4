"""The pass manager and the analysis manager.

xDSL has passes and pipelines but no analysis cache; this module adds one with
MLIR's semantics (mlir/include/mlir/Pass/AnalysisManager.h):

- `am.get(A, op)` computes analysis `A` of `op` once and returns the cached
  result until it is invalidated. An analysis may ask for other analyses while
  it is computed; the manager records those edges, and invalidating an
  analysis invalidates every analysis computed from it.
- Every pass returns the analyses it preserved (`PreservedAnalyses.all()`,
  `.none()` or `.of(A, B)`); after the pass everything else is dropped. A plain
  xDSL pass (canonicalize, cse, dce) preserves nothing.
- Passes and analyses have an identity, `name` and `version`: the pair keys
  persistent caches, so changing one means bumping its version.

`PassManager` runs a pipeline over a module with instrumentation: per-pass and
per-analysis time, cache hits and misses, IR printed before/after passes, IR
dumped to a directory, and a checking mode that fingerprints the IR and fails a
pass that claims to preserve analyses but changed the IR.
"""

from __future__ import annotations

import hashlib
import io
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar, TypeVar

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation
from xdsl.passes import ModulePass

from accy.dialects.dense import DensePrinter

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


A = TypeVar("A", bound=Analysis)


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


@dataclass
class AnalysisStats:
    hits: int = 0
    misses: int = 0
    invalidations: int = 0
    seconds: float = 0.0


class AnalysisManager:
    """Caches analyses per (analysis class, op) and tracks which analyses were
    computed from which, so that invalidation is transitive."""

    def __init__(self, trace: Callable[[str], None] | None = None) -> None:
        self._cache: dict[tuple[type[Analysis], int], Analysis] = {}
        self._ops: dict[int, Operation] = {}
        self._dependents: dict[tuple[type[Analysis], int], set[tuple[type[Analysis], int]]] = {}
        self._computing: list[tuple[type[Analysis], int]] = []
        self.stats: dict[str, AnalysisStats] = {}
        self._trace = trace

    def get(self, analysis: type[A], op: Operation) -> A:
        key = (analysis, id(op))
        stats = self.stats.setdefault(analysis.name, AnalysisStats())
        if self._computing:
            self._dependents.setdefault(key, set()).add(self._computing[-1])
        cached = self._cache.get(key)
        if cached is not None:
            stats.hits += 1
            self._note(f"hit {analysis.name}")
            return cached  # type: ignore[return-value]
        stats.misses += 1
        self._note(f"miss {analysis.name}")
        self._computing.append(key)
        start = time.perf_counter()
        try:
            result = analysis(op, self)
        finally:
            stats.seconds += time.perf_counter() - start
            self._computing.pop()
        self._cache[key] = result
        self._ops[id(op)] = op
        return result

    def get_cached(self, analysis: type[A], op: Operation) -> A | None:
        return self._cache.get((analysis, id(op)))  # type: ignore[return-value]

    def cached(self) -> list[type[Analysis]]:
        return [a for a, _ in self._cache]

    def invalidate(self, preserved: PreservedAnalyses) -> None:
        """Drops every analysis not preserved, and everything computed from it."""
        if preserved.everything:
            return
        doomed = [key for key in self._cache if not preserved.preserves(key[0])]
        seen: set[tuple[type[Analysis], int]] = set()
        while doomed:
            key = doomed.pop()
            if key in seen:
                continue
            seen.add(key)
            doomed.extend(self._dependents.get(key, ()))
        for key in seen:
            if self._cache.pop(key, None) is not None:
                self.stats.setdefault(key[0].name, AnalysisStats()).invalidations += 1
                self._note(f"invalidate {key[0].name}")
            self._dependents.pop(key, None)

    def clear(self) -> None:
        self.invalidate(PreservedAnalyses.none())

    def _note(self, event: str) -> None:
        if self._trace is not None:
            self._trace(event)


# --------------------------------------------------------------------------
# Passes
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class AccyPass(ModulePass, Described):
    """An accy pass: an xDSL `ModulePass` that also sees the analysis manager
    and reports what it preserved. Its dataclass fields are its options."""

    name: ClassVar[str] = "accy-pass"
    version: ClassVar[int] = 1

    def run(self, module: ModuleOp, am: AnalysisManager) -> PreservedAnalyses:
        raise NotImplementedError

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        # Outside a PassManager (xDSL's own pipeline): a throwaway cache.
        self.run(op, AnalysisManager())


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
    """A pass failed, raised, or broke its contract. Carries the IR the pass
    was given so that a reproducer can be written."""

    def __init__(self, pass_: ModulePass, message: str, ir_before: str) -> None:
        super().__init__(message)
        self.pass_ = pass_
        self.ir_before = ir_before
        self.message = message


@dataclass
class PassStats:
    name: str
    version: int
    seconds: float = 0.0
    runs: int = 0
    changed: int = 0


@dataclass
class PassManager:
    """Runs a pipeline of passes over a module with one analysis manager.

    `check` fingerprints the IR around every pass: one that changed the IR but
    claims to preserve analyses fails. `print_before`/`print_after` hold pass
    names (or "all"); printed IR goes to `out`. `dump_dir` receives the IR
    after each pass as `NN-<pass>.mlir`.
    """

    passes: Sequence[ModulePass]
    ctx: Context | None = None
    check: bool = False
    print_before: Iterable[str] = ()
    print_after: Iterable[str] = ()
    dump_dir: Path | None = None
    out: Callable[[str], None] = print
    am: AnalysisManager = field(default_factory=AnalysisManager)
    pass_stats: list[PassStats] = field(default_factory=list)

    def run(self, module: ModuleOp) -> None:
        from accy.dialects.context import make_context

        ctx = self.ctx or make_context()
        before, after = set(self.print_before), set(self.print_after)
        if self.dump_dir is not None:
            self.dump_dir.mkdir(parents=True, exist_ok=True)
        # One fingerprint after each pass, which is the next pass's "before".
        fp_before = fingerprint(module)
        for index, p in enumerate(self.passes, 1):
            # The IR a failing pass was given, for its reproducer: a clone
            # (literals are shared, not copied), printed only if it fails.
            snapshot = module.clone()
            if {"all", p.name} & before:
                self.out(f"// -----// IR before {pass_spec(p)} //----- //\n{print_ir(module)}")
            stats = PassStats(*pass_identity(p))
            start = time.perf_counter()
            try:
                if isinstance(p, AccyPass):
                    preserved = p.run(module, self.am)
                else:
                    p.apply(ctx, module)
                    preserved = PreservedAnalyses.none()
                module.verify()
            except PassFailure:
                raise
            except Exception as e:  # a pass that raises is a pass that failed
                message = f"{type(e).__name__}: {e}" if str(e) else type(e).__name__
                raise PassFailure(p, message, print_ir(snapshot)) from e
            stats.seconds = time.perf_counter() - start
            stats.runs = 1
            fp_after = fingerprint(module)
            changed, fp_before = fp_after != fp_before, fp_after
            stats.changed = int(changed)
            self.pass_stats.append(stats)
            if self.check and changed and not preserved.is_none:
                raise PassFailure(
                    p,
                    f"pass '{p.name}' changed the IR but claims to preserve analyses "
                    f"({'all' if preserved.everything else ', '.join(sorted(a.name for a in preserved.kept))})",
                    print_ir(snapshot),
                )
            # A pass that changed nothing keeps every analysis valid.
            self.am.invalidate(PreservedAnalyses.all() if not changed else preserved)
            if {"all", p.name} & after or self.dump_dir is not None:
                ir_after = print_ir(module)
                if {"all", p.name} & after:
                    self.out(f"// -----// IR after {pass_spec(p)} //----- //\n{ir_after}")
                if self.dump_dir is not None:
                    (self.dump_dir / f"{index:02d}-{p.name}.mlir").write_text(ir_after)

    def statistics(self) -> dict[str, object]:
        """Per-pass times and per-analysis cache figures, plus what the cached
        analyses report (kernel counts, peak bytes)."""
        analyses: dict[str, dict[str, int | float]] = {}
        for name, s in self.am.stats.items():
            analyses[name] = {
                "hits": s.hits,
                "misses": s.misses,
                "invalidations": s.invalidations,
                "seconds": round(s.seconds, 6),
            }
        # Figures of an analysis cached for several ops (one per function)
        # are summed: kernels and peak bytes of the whole module.
        for key, result in self.am._cache.items():
            figures = analyses.setdefault(key[0].name, {})
            for k, v in result.statistics().items():
                figures[k] = figures.get(k, 0) + v
        return {
            "passes": [
                {"name": s.name, "version": s.version, "seconds": round(s.seconds, 6), "changed": bool(s.changed)}
                for s in self.pass_stats
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
