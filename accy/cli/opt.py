"""`accy-opt`: parse `.mlir`, run a pass pipeline, print the result.

It is xDSL's `xDSLOptMain` with accy's dialects, passes and targets, and with
the pipeline run by accy's `PassManager` (so analyses are cached across the
passes of a pipeline), plus MLIR-style instrumentation:

    accy-opt prog.mlir -p canonicalize,cse --print-ir-after=cse --time-passes
    accy-opt prog.mlir -p kernelize --ir-dump-dir /tmp/dumps --check-preserved
    accy-opt --list-passes

A pass that fails leaves a reproducer (`accy-repro-N.mlir`, the IR that pass
was given) and the command that replays it.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Iterable, Sequence
from importlib import import_module
from pathlib import Path
from typing import IO

from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass
from xdsl.universe import Universe
from xdsl.utils.arg_spec import ArgSpec, parse_pipeline
from xdsl.xdsl_opt_main import xDSLOptMain

from accy.cli.diagnostics import ReportedError, ToolError, run_tool, wants_traceback
from accy.cli.version import VERSION_FORMAT
from accy.dialects.context import make_context
from accy.dialects.parse import parse_text, verify_module
from accy.passes import registry
from accy.passes.pass_manager import PassFailure, PassManager, pass_spec, summary, write_file

TOOL = "accy-opt"
OPENCL_TARGET = "accy.backends.opencl.target"
LLVM_TARGET = "accy.backends.llvm.target"


def _names(text: str | None) -> list[str]:
    return [n.strip() for n in (text or "").split(",") if n.strip()]


class AccyOptMain(xDSLOptMain):
    """xDSL's opt driver, wired to accy's registry and pass manager."""

    passes: tuple[ModulePass, ...]
    #: `--version`: accy's report (accy/cli/version.py), not xDSL's "xdsl-opt built from xdsl version ...".
    version_format = VERSION_FORMAT

    def __init__(self, args: Sequence[str] | None = None) -> None:
        super().__init__(description="accy modular optimizer driver", args=args)

    # -- registration --------------------------------------------------

    def register_all_dialects(self) -> None:
        self.ctx = make_context()
        # Other xDSL dialects stay available, loaded only when the input uses them.
        known = set(self.ctx.registered_dialect_names)
        for name, factory in Universe.get_multiverse().all_dialects.items():
            if name not in known:
                self.ctx.register_dialect(name, factory)

    def register_all_passes(self) -> None:
        for name, factory in registry.pass_factories().items():
            self.register_pass(name, factory)

    def register_all_targets(self) -> None:
        from xdsl.targets import get_all_targets

        self.available_targets["mlir"] = get_all_targets()["mlir"]
        # Loaded only when asked for, as xDSL's own targets are.
        self.available_targets["opencl"] = lambda: import_module(OPENCL_TARGET).OpenCLTarget
        self.available_targets["llvm"] = lambda: import_module(LLVM_TARGET).LLVMTarget

    def register_all_arguments(self, arg_parser: argparse.ArgumentParser) -> None:
        super().register_all_arguments(arg_parser)
        add = arg_parser.add_argument
        add("--print-ir-before", metavar="NAMES", default="", help="print the IR before these passes (comma-separated) to stderr")
        add("--print-ir-after", metavar="NAMES", default="", help="print the IR after these passes (comma-separated) to stderr")
        add("--print-ir-after-all", action="store_true", help="print the IR after every pass to stderr")
        add("--analysis-stats", action="store_true", help="print pass times and analysis cache figures to stderr")
        add("--check-preserved", action="store_true", help="recompute every analysis a pass preserves and fail the pass if one differs from the cached result")
        add("--ir-dump-dir", metavar="DIR", help="write the IR after each pass to DIR/NN-<pass>.mlir")
        add("--reproducer-dir", metavar="DIR", default=".", help="where a failing pass leaves accy-repro-N.mlir (default: cwd)")
        add("--list-passes", action="store_true", help="list the passes and exit")
        add("--list-analyses", action="store_true", help="list the analyses and exit")
        add("--traceback", action="store_true", help="show Python tracebacks (for debugging accy)")
        add("--verify-bounds", action="store_true", help="after the pipeline, prove every load and store of every kernel in bounds under its launches (an error names each access that is not)")

    # -- pipeline ------------------------------------------------------

    def setup_pipeline(self) -> None:
        self.passes = tuple(self._make_pass(s) for spec in parse_pipeline(self.args.passes) for s in self._expand(spec))

    def _expand(self, spec: ArgSpec) -> list[ArgSpec]:
        try:
            return registry.expand(spec)
        except ValueError as e:
            raise ToolError(f"invalid options for pipeline '{spec.name}': {e}") from e

    def _make_pass(self, spec: ArgSpec) -> ModulePass:
        if spec.name not in self.available_passes:
            raise ToolError(f"unknown pass '{spec.name}' (accy-opt --list-passes lists them)")
        cls = self.available_passes[spec.name]()
        try:
            return cls.from_pass_spec(spec)
        except Exception as e:  # each pass validates its options its own way
            raise ToolError(f"invalid options for pass '{spec.name}': {e}") from e

    # -- running -------------------------------------------------------

    def run(self) -> int:  # type: ignore[override]
        if self.args.list_passes or self.args.list_analyses:
            print(self._listing(), end="")
            return 0
        self._chunk = 0
        super().run()
        return 0

    def _listing(self) -> str:
        lines = []
        if self.args.list_passes:
            lines += _table("Passes:", registry.PASSES, registry.get_pass, registry.pass_summary)
            # A pipeline has no version: each of its passes has its own.
            lines.append("Pipelines:")
            lines += [f"  {name:<32} {summary(pipeline)}" for name, pipeline in registry.PIPELINES.items()]
        if self.args.list_analyses:
            lines += _table("Analyses:", registry.ANALYSES, registry.get_analysis, lambda n: registry.get_analysis(n).description)
        return "\n".join(lines) + "\n"

    def parse_chunk(self, chunk: IO[bytes], file_extension: str, start_offset: int = 0) -> ModuleOp | None:
        text = chunk.read().decode("utf-8")
        module, source_map = parse_text(self.ctx, text, self.get_input_name())
        source_map.line_offset = start_offset
        if not self.args.disable_verify:
            verify_module(module, source_map)
        return module

    def apply_passes(self, prog: ModuleOp) -> None:
        self._chunk += 1
        self._run_pipeline(prog)
        if self.args.verify_bounds:
            from accy.passes.kernel_ir.bounds import OutOfBoundsError, verify_module_bounds

            try:
                verify_module_bounds(prog)
            except OutOfBoundsError as e:
                raise ReportedError("\n".join(f"error: {p.message}" for p in e.problems)) from e

    def _run_pipeline(self, prog: ModuleOp) -> None:
        if not self.passes:
            return
        # xDSL's --print-between-passes means the same as --print-ir-after-all.
        every = self.args.print_ir_after_all or self.args.print_between_passes
        after = ["all"] if every else _names(self.args.print_ir_after)
        dump = self.args.ir_dump_dir
        if dump is not None and self._chunk > 1:
            dump = Path(dump) / f"chunk-{self._chunk}"
        manager = PassManager(
            self.passes,
            ctx=self.ctx,
            check=self.args.check_preserved,
            print_before=_names(self.args.print_ir_before),
            print_after=after,
            dump_dir=Path(dump) if dump is not None else None,
            # A failing pass always leaves a reproducer: keep each pass's input.
            reproducer=True,
            out=lambda text: print(text, file=sys.stderr, end=""),
        )
        try:
            manager.run(prog)
        except PassFailure as failure:
            raise ReportedError(self._report_failure(failure)) from failure
        if self.args.time_passes or self.args.analysis_stats:
            print(manager.format_statistics(), file=sys.stderr, end="")

    def _report_failure(self, failure: PassFailure) -> str:
        spec = pass_spec(failure.pass_)
        directory = Path(self.args.reproducer_dir)
        directory.mkdir(parents=True, exist_ok=True)
        flags = " --check-preserved" if self.args.check_preserved else ""
        n = 1
        while True:  # the first free name; created O_EXCL|O_NOFOLLOW: a planted link (dangling too) is skipped
            path = directory / f"accy-repro-{n}.mlir"
            command = f"accy-opt {path} -p '{spec}'{flags}"
            try:
                write_file(path, f"// accy-opt reproducer: {command}\n{failure.ir_before}", exclusive=True)
                break
            except FileExistsError:
                n += 1
        return (
            f"error: pass '{failure.pass_.name}' failed: {failure.message}\n"
            f"note: the IR the pass was given is in {path}\n"
            f"note: reproduce with: {command}"
        )


def _table(title: str, names: Iterable[str], load: Callable[[str], type], describe: Callable[[str], str]) -> list[str]:
    """`title`, then a line per name: its version and description."""
    lines = [title]
    for name in names:
        version = getattr(load(name), "version", 0)
        lines.append(f"  {name:<32} v{version}  {describe(name)}".rstrip())
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    """The `accy-opt` entry point; returns the exit code."""
    args = list(sys.argv[1:] if argv is None else argv)

    def body() -> int:
        return AccyOptMain(args).run()

    return run_tool(TOOL, body, wants_traceback(args))


if __name__ == "__main__":
    sys.exit(main())
