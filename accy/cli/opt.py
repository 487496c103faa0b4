"""`accy-opt`: parse `.mlir`, run a pass pipeline, print the result.

It is xDSL's `xDSLOptMain` with accy's dialects, passes and targets, and with
the pipeline run by accy's `PassManager` (so analyses are cached across the
passes of a pipeline), plus MLIR-style instrumentation:

    accy-opt prog.mlir -p canonicalize,cse --print-ir-after=cse --time-passes
    accy-opt prog.mlir -p 'builtin.module(func.func(canonicalize),cse)'
    accy-opt prog.mlir -p kernelize --ir-dump-dir /tmp/dumps --check-preserved
    accy-opt prog.mlir -p my-pass --load-pass my_package.passes:MyPass
    accy-opt invalid.mlir --split-input-file --verify-diagnostics
    cat prog.mlir | accy-opt - -p cse
    accy-opt --list-passes                # --help: every pass with its options

What goes wrong is said once, at its place in the input, with an exit status
that says whose it is (docs/cli.md): a program that does not parse or verify,
or that a pass refuses (`registry.INPUT_ERRORS`: an element type accy does
not run, a call it cannot inline, a pass's `DiagnosticError`), is the user's
(status 1, no reproducer); so are a bad pipeline, option or plugin. A pass
that crashes, or breaks its contract, is accy's (status 4): it leaves a
reproducer (`accy-repro-N.mlir`, the IR that pass was given) and the command
that replays it. `--verify-diagnostics` checks the input's `expected-*`
annotations instead of printing (accy/cli/verify_diagnostics.py).
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import textwrap
from collections.abc import Callable, Iterable, Iterator, Sequence
from importlib import import_module
from io import BytesIO
from pathlib import Path
from typing import IO, NoReturn

# First: the ops of xDSL's dialects imported below then read their formats lazily.
import accy.dialects.lazy_formats  # noqa: F401

# isort: split
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass
from xdsl.universe import Universe
from xdsl.utils.exceptions import ParseError, ShrinkException
from xdsl.xdsl_opt_main import xDSLOptMain

from accy.cli.diagnostics import (
    BAD_INPUT,
    INTERNAL_ERROR,
    ToolError,
    run_tool,
    stdout_closed,
    wants_traceback,
)
from accy.cli.located import Located, Source
from accy.cli.process import run_as_program
from accy.cli.verify_diagnostics import check
from accy.cli.version import VERSION_FORMAT
from accy.dialects.context import make_context
from accy.dialects.parse import SourceDiagnostic, SourceMap, parse_text, verify_module
from accy.passes import registry
from accy.passes.diagnostics import Diagnostic, DiagnosticError, collecting
from accy.passes.options import options_of
from accy.passes.pass_manager import PassFailure, PassManager, pass_spec, summary, write_file
from accy.progress import quieted

TOOL = "accy-opt"
OPENCL_TARGET = "accy.backends.opencl.target"
LLVM_TARGET = "accy.backends.llvm.target"
#: The frontend of ONNX models (`accy-opt model.onnx`, `-f onnx`), loaded when one is read.
ONNX_FRONTEND = "accy.frontends.onnx"
KERNELIZE = "accy.passes.kernelization.kernelize"
#: The autotuner's pass (accy/tuning/tune_pass.py), which accy-opt registers: the passes' registry must not import the tuner.
TUNE_PASS = "tune"


def register_tuner() -> None:
    """Registers the `tune` pass (accy/tuning/tune_pass.py) beside accy's
    passes, once; its module loads neither the runtime nor the search. The
    entry points are read first, so a broken one is the `PluginError` it
    always was; a pass of that name from elsewhere keeps the name."""
    from accy.tuning.tune_pass import TunePass

    if TUNE_PASS not in registry.pass_names():
        registry.register_pass(TunePass, "accy-opt (accy/tuning)")


#: The input file name that reads standard input (as no file name does).
STDIN = "-"
#: How diagnostics name standard input (as MLIR does).
STDIN_NAME = "<stdin>"
SPLIT_MARKER = "// -----"

#: accy-opt's exit statuses (docs/cli.md lists them with accy-run's).
EXIT_STATUSES: dict[int, str] = {
    0: "success: the output is printed; with --verify-diagnostics, the diagnostics are the expected ones",
    BAD_INPUT: "bad input: a program that does not parse or verify, or that a pass refuses; a bad pipeline, "
    "pass option or --load-pass; with --verify-diagnostics, a diagnostic missing or unexpected",
    2: "usage error: a flag argparse rejects (unknown, or missing its value)",
    INTERNAL_ERROR: "internal error: a pass crashed or broke its contract (a bug: a reproducer is left), "
    "or accy failed otherwise (rerun with --traceback)",
    130: "interrupted (Ctrl-C)",
}


def _names(text: str | None) -> list[str]:
    return [n.strip() for n in (text or "").split(",") if n.strip()]


class _InputRefused(Exception):
    """A chunk's input is wrong (it does not parse or verify, or a pass
    refuses it): its diagnostics, located."""

    def __init__(self, diagnostics: list[Located], error: BaseException) -> None:
        super().__init__("\n".join(d.text for d in diagnostics))
        self.diagnostics = diagnostics
        #: What was raised (re-raised with --traceback).
        self.error = error


class _PassCrashed(Exception):
    """A pass failed as a bug would: the report (with its reproducer) to print."""


class AccyOptMain(xDSLOptMain):
    """xDSL's opt driver, wired to accy's registry and pass manager."""

    passes: tuple[ModulePass, ...]
    #: The input's bytes when a frontend imports them (an ONNX model).
    _model: bytes = b""
    #: `--version`: accy's report (accy/cli/version.py), not xDSL's "xdsl-opt built from xdsl version ...".
    version_format = VERSION_FORMAT

    def __init__(self, args: Sequence[str]) -> None:
        self._argv = list(args)
        super().__init__(description=__doc__.split("\n\n", 1)[0], args=self._argv)

    # -- registration --------------------------------------------------

    def register_all_dialects(self) -> None:
        self.ctx = make_context()
        # Other xDSL dialects stay available, loaded only when the input uses them.
        known = set(self.ctx.registered_dialect_names)
        for name, factory in Universe.get_multiverse().all_dialects.items():
            if name not in known:
                self.ctx.register_dialect(name, factory)

    def register_all_passes(self) -> None:
        # The passes come from accy's registry (`setup_pipeline`), where those
        # of other packages and of --load-pass are registered as well.
        pass

    def register_all_targets(self) -> None:
        from xdsl.targets import get_all_targets

        self.available_targets["mlir"] = get_all_targets()["mlir"]
        # Loaded only when asked for, as xDSL's own targets are.
        self.available_targets["opencl"] = lambda: import_module(OPENCL_TARGET).OpenCLTarget
        self.available_targets["llvm"] = lambda: import_module(LLVM_TARGET).LLVMTarget

    def register_all_frontends(self) -> None:
        super().register_all_frontends()
        self.available_frontends["onnx"] = lambda: import_module(ONNX_FRONTEND).OnnxFrontend

    def _model_frontend(self) -> str | None:
        """"onnx" when the input is an ONNX model (`-f onnx`, or a file named
        *.onnx): bytes a frontend imports, not MLIR text. None otherwise."""
        path = self.args.input_file
        name = self.args.frontend or (Path(path).suffix[1:] if path not in (None, STDIN) else "")
        return "onnx" if name == "onnx" else None

    def register_all_arguments(self, arg_parser: argparse.ArgumentParser) -> None:
        super().register_all_arguments(arg_parser)
        _reword(arg_parser)
        add = arg_parser.add_argument
        add("--print-ir-before", metavar="NAMES", default="", help="print the IR before these passes (comma-separated) to stderr")
        add("--print-ir-after", metavar="NAMES", default="", help="print the IR after these passes (comma-separated) to stderr")
        add("--print-ir-after-all", action="store_true", help="print the IR after every pass to stderr")
        add("--analysis-stats", action="store_true", help="print pass times and analysis cache figures to stderr")
        add("--check-preserved", action="store_true", help="recompute every analysis a pass preserves and fail the pass if one differs from the cached result")
        add("--ir-dump-dir", metavar="DIR", help="write the IR after each pass to DIR/NN-<pass>.mlir")
        add("--reproducer-dir", metavar="DIR", default=".", help="where a crashing pass leaves accy-repro-N.mlir (default: cwd)")
        add("--load-pass", metavar="MODULE:CLASS", action="append", default=[], help="register the pass class MODULE:CLASS (importable from PYTHONPATH) for -p, as an installed package's `accy.passes` entry point is; repeatable")
        add("--list-passes", action="store_true", help="list the passes (and named pipelines) and exit")
        add("--list-analyses", action="store_true", help="list the analyses and exit")
        add("--traceback", action="store_true", help="show Python tracebacks (for debugging accy)")
        add("--quiet", action="store_true", help="no progress line on stderr (drawn on a terminal when a pipeline runs past a second)")
        add("--verify-bounds", action="store_true", help="after the pipeline, prove every load and store of every kernel in bounds under its launches (an error names each access that is not)")
        arg_parser.prog = TOOL  # not the script's file name (`python -m accy.cli.opt`)
        arg_parser.formatter_class = argparse.RawDescriptionHelpFormatter
        if any(a in ("-h", "--help") for a in self._argv):
            # Listing every pass loads every pass: only for --help.
            arg_parser.epilog = _help_epilog(_loaded_from(self._argv))

    # -- pipeline ------------------------------------------------------

    def setup_pipeline(self) -> None:
        if TUNE_PASS in self.args.passes:  # no pipeline without the word names the pass
            register_tuner()
        for entry in self.args.load_pass:
            registry.load_pass(entry)
        self.passes = tuple(registry.passes_from_text(self.args.passes))
        known = {"all", *registry.PASSES, *(p.name for p in self.passes)}
        for flag in ("print_ir_before", "print_ir_after"):
            unknown = [n for n in _names(getattr(self.args, flag)) if n not in known]
            if unknown:
                option = "--" + flag.replace("_", "-")
                raise ToolError(f"{option}: no pass is named '{unknown[0]}' (`accy-opt --list-passes` lists them)")

    def prepare_output(self) -> IO[str]:
        if self.args.output_file is None:
            return sys.stdout
        try:
            return open(self.args.output_file, "w")
        except OSError as e:
            raise ToolError(f"cannot write '{self.args.output_file}': {e.strerror or e}") from None

    # -- running -------------------------------------------------------

    def run(self) -> int:  # type: ignore[override]
        with quieted(self.args.quiet):
            return self._run()

    def _run(self) -> int:
        if self.args.list_passes or self.args.list_analyses:
            print(self._listing(), end="")
            return 0
        sources = self._sources()
        status = 0
        output = self.prepare_output()
        try:
            for index, source in enumerate(sources):
                if index > 0:
                    output.write(SPLIT_MARKER + "\n")
                status = max(status, self._run_chunk(index + 1, source, output))
                output.flush()
        except _PassCrashed as crash:
            print(crash, file=sys.stderr)
            return INTERNAL_ERROR
        except ShrinkException:
            assert self.args.shrink
            print("Success, can shrink")  # shrinkray's interestingness test, as xdsl-opt says it
            return 0
        finally:
            if output is not sys.stdout:
                output.close()
        if self.args.shrink:
            print("Failure, can't shrink")
            return 1
        return status

    def _sources(self) -> list[Source]:
        """The input (a file, or standard input for `-` or none), split into
        its chunks with `--split-input-file`."""
        path = self.args.input_file
        if path in (None, STDIN):
            data, name = sys.stdin.buffer.read(), STDIN_NAME
        else:
            if Path(path).is_dir():
                raise ToolError(f"'{path}' is a directory, not an .mlir file")
            try:
                data = Path(path).read_bytes()
            except FileNotFoundError:
                raise ToolError(f"no such file: '{path}'") from None
            except OSError as e:
                raise ToolError(f"cannot read '{path}': {e.strerror or e}") from None
            name = path
        if self._model_frontend() is not None:
            self._model = data  # imported by _parse: no text, no chunks
            return [Source("", name)]
        text = data.decode("utf-8")
        if not self.args.split_input_file:
            return [Source(text, name)]
        sources, offset = [], 0
        for chunk in text.split(SPLIT_MARKER):
            sources.append(Source(chunk, name, offset))
            offset += chunk.count("\n")
        return sources

    def _run_chunk(self, number: int, source: Source, output: IO[str]) -> int:
        """Parses, verifies, transforms and prints one chunk; its status. Its
        diagnostics are printed to stderr, or checked (--verify-diagnostics)."""
        verifying = self.args.verify_diagnostics
        heard: list[Located] = []
        source_map: SourceMap | None = None

        def hear(diagnostic: Diagnostic) -> None:
            located = source.of_diagnostic(diagnostic, source_map)
            if verifying:
                heard.append(located)
            else:
                print(located.printed(), file=sys.stderr)

        refused: list[Located] = []
        printed = ""
        with collecting(hear), _kernelize_remarks(hear, verifying):
            try:
                module, source_map = self._parse(source)
                self._transform(number, module, source, source_map)
                printed = self.output_resulting_program(module)
            except _InputRefused as e:
                if self.args.traceback and not verifying:
                    raise e.error from None
                refused = e.diagnostics
        if verifying:
            problems = check(source, [*heard, *refused])
            for problem in problems:
                print(problem.text, file=sys.stderr)
            if not refused:
                output.write(printed)
            return BAD_INPUT if problems else 0
        if not refused:
            output.write(printed)
            return 0
        if self.args.parsing_diagnostics and refused[0].parse_error:
            print(refused[0].text)  # xDSL's form: the parse error as output, status 0
            return 0
        for d in refused:
            print(d.printed(), file=sys.stderr)
        return BAD_INPUT

    def _parse(self, source: Source) -> tuple[ModuleOp, SourceMap]:
        frontend = self._model_frontend()
        if frontend is not None:
            return self._import(frontend, source), SourceMap()
        try:
            module, source_map = parse_text(self.ctx, source.text, source.name)
        except ParseError as e:
            raise _InputRefused([source.of_parse_error(e)], e) from None
        source_map.line_offset = source.line_offset
        if not self.args.disable_verify:
            try:
                verify_module(module, source_map)
            except SourceDiagnostic as e:
                raise _InputRefused([source.of_rendered(e)], e) from None
        return module, source_map

    def _import(self, frontend: str, source: Source) -> ModuleOp:
        """The module a frontend makes of the input's bytes; what it refuses
        (an op, attribute or dtype it does not import) is the user's error."""
        try:
            reader = self.available_frontends[frontend]()()  # type: ignore[call-arg]
        except ModuleNotFoundError as e:
            raise ToolError(f"reading an ONNX model needs the {e.name} package: pip install 'accy[onnx]'") from None
        try:
            return reader.parse(self.ctx, BytesIO(self._model), source.name)
        except ValueError as e:  # OnnxImportError, or a model that does not parse
            message = str(e).strip() or type(e).__name__
            raise _InputRefused([Located("error", message, None, None, f"{source.name}: error: {message}")], e) from None

    def _transform(self, number: int, module: ModuleOp, source: Source, source_map: SourceMap) -> None:
        """The pipeline, then `--verify-bounds`, over one chunk's module."""
        if self.passes:
            manager = self._manager(number)
            try:
                manager.run(module)
            except PassFailure as failure:
                cause = failure.__cause__
                if cause is None or not registry.is_input_error(cause):
                    raise _PassCrashed(self._report_failure(failure)) from failure
                raise _InputRefused(_located(cause, source, source_map), cause) from None
            if self.args.time_passes or self.args.analysis_stats:
                print(manager.format_statistics(), file=sys.stderr, end="")
        if self.args.verify_bounds:
            from accy.passes.kernel_ir.bounds import OutOfBoundsError, verify_module_bounds

            try:
                verify_module_bounds(module)
            except OutOfBoundsError as e:
                raise _InputRefused(_located(e, source, source_map), e) from None

    def _manager(self, number: int) -> PassManager:
        # xDSL's --print-between-passes means the same as --print-ir-after-all.
        every = self.args.print_ir_after_all or self.args.print_between_passes
        dump = self.args.ir_dump_dir
        if dump is not None and number > 1:
            dump = Path(dump) / f"chunk-{number}"
        return PassManager(
            self.passes,
            ctx=self.ctx,
            check=self.args.check_preserved,
            print_before=_names(self.args.print_ir_before),
            print_after=["all"] if every else _names(self.args.print_ir_after),
            dump_dir=Path(dump) if dump is not None else None,
            # A failing pass always leaves a reproducer: keep each pass's input.
            reproducer=True,
            out=lambda text: print(text, file=sys.stderr, end=""),
        )

    def _listing(self) -> str:
        lines = []
        if self.args.list_passes:
            register_tuner()
            names = registry.pass_names()
            lines += _table("Passes:", names, registry.get_pass, _described)
            # A pipeline has no version: each of its passes has its own.
            lines.append("Pipelines:")
            lines += [f"  {name:<32} {summary(pipeline)}" for name, pipeline in registry.PIPELINES.items()]
        if self.args.list_analyses:
            lines += _table("Analyses:", registry.ANALYSES, registry.get_analysis, lambda n: registry.get_analysis(n).description)
        return "\n".join(lines) + "\n"

    def _report_failure(self, failure: PassFailure) -> str:
        spec = pass_spec(failure.pass_)
        directory = Path(self.args.reproducer_dir)
        directory.mkdir(parents=True, exist_ok=True)
        flags = " --check-preserved" if self.args.check_preserved else ""
        flags += "".join(f" --load-pass {entry}" for entry in self.args.load_pass)
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


def _located(error: BaseException, source: Source, source_map: SourceMap | None) -> list[Located]:
    """The diagnostics of a pass's user error (`registry.INPUT_ERRORS`), each
    at its op's source position where it names one."""
    if isinstance(error, DiagnosticError):
        return [source.of_diagnostic(error.diagnostic, source_map)]
    problems = getattr(error, "problems", None)  # OutOfBoundsError: one per access not proved
    if problems is not None:
        return [source.of_op("error", p.message, p.op, source_map) for p in problems]
    op = getattr(error, "op", None)
    message = str(error).strip() or type(error).__name__
    if op is not None and not message.startswith(f"'{op.name}'"):
        message = f"'{op.name}' op {message}"
    return [source.of_op("error", message, op, source_map)]


@contextlib.contextmanager
def _kernelize_remarks(hear: Callable[[Diagnostic], None], verifying: bool) -> Iterator[None]:
    """Under --verify-diagnostics, kernelize's remarks (a work item run on the
    host reference path) are diagnostics to check, with no place in the input
    (`expected-remark @unknown {{...}}`); otherwise they print as they always do."""
    kernelize = sys.modules.get(KERNELIZE) if verifying else None
    if kernelize is None:
        yield
        return
    saved = kernelize.remark
    kernelize.remark = lambda text: hear(Diagnostic("remark", text))
    try:
        yield
    finally:
        kernelize.remark = saved


def _described(name: str) -> str:
    origin = registry.pass_origin(name)
    text = registry.pass_summary(name)
    return f"{text} [{origin}]" if origin else text


def _table(title: str, names: Iterable[str], load: Callable[[str], type], describe: Callable[[str], str]) -> list[str]:
    """`title`, then a line per name: its version and description."""
    lines = [title]
    for name in names:
        version = getattr(load(name), "version", 0)
        lines.append(f"  {name:<32} v{version}  {describe(name)}".rstrip())
    return lines


# --------------------------------------------------------------------------
# --help
# --------------------------------------------------------------------------

#: xDSL's arguments in accy-opt's words (None: hidden, it does nothing here).
_HELP: dict[str, str | None] = {
    "input_file": f"the .mlir file (or ONNX model, *.onnx) to read ('{STDIN}', or none: standard input)",
    "frontend": None,  # MLIR text, or an ONNX model for a file named *.onnx (-f onnx works, unlisted)
    "no_implicit_module": None,  # accy's parser always reads top-level ops into a module
    "disable_verify": "do not verify the input after parsing (the pass manager still verifies what each pass produces)",
    "allow_unregistered_dialect": "accept ops of dialects neither accy nor xDSL knows (kept as unregistered ops)",
    "target": "what to print: mlir (default), opencl (the kernels as OpenCL C), llvm (their LLVM IR, CPU profile)",
    "output_file": "write the output to this file instead of stdout",
    "passes": "the pass pipeline: passes separated by ',', options in braces, e.g. canonicalize,kernelize{strict=true}; "
    "MLIR's nesting builtin.module(func.func(canonicalize),cse) is read too (accy's passes run on the module); "
    "the passes, pipelines and options are listed below",
    "print_between_passes": "the same as --print-ir-after-all (xDSL's name)",
    "time_passes": "print each pass's time and the analysis cache figures to stderr",
    "verify_diagnostics": "check the diagnostics against the input's // expected-error {{...}} (-warning, -remark, "
    "-note; @+N, @-N, @above, @below, @unknown) annotations, as mlir-opt does: exit 1 listing each one missing or "
    "unexpected, 0 printing nothing of them when all match",
    "parsing_diagnostics": "print a parse error to stdout and exit 0 (xDSL's form; --verify-diagnostics checks "
    "expected errors as MLIR does)",
    "split_input_file": f"split the input at '{SPLIT_MARKER}' and process (and check) each chunk on its own; "
    "diagnostics keep the file's line numbers",
    "print_op_generic": 'print every op in the generic form, "accy.exp"(%%x) : (tensor<4xf32>) -> tensor<4xf32>',
    "print_no_properties": "print properties as attributes (for readers older than MLIR's properties)",
    "print_debuginfo": "print each op's location (accy's parser attaches none)",
    "syntax_highlight": "color the printed IR, for a terminal",
    "shrink": "for shrinkray: exit 0 when a pass raises xDSL's ShrinkException, 1 otherwise",
}


def _reword(parser: argparse.ArgumentParser) -> None:
    """xDSL's arguments, described as accy-opt runs them (`_HELP`)."""
    for action in parser._actions:
        if action.dest in _HELP:
            text = _HELP[action.dest]
            action.help = argparse.SUPPRESS if text is None else text


def _loaded_from(argv: Sequence[str]) -> list[str]:
    """The --load-pass values on a command line argparse has not read yet."""
    found = []
    for i, arg in enumerate(argv):
        if arg == "--load-pass" and i + 1 < len(argv):
            found.append(argv[i + 1])
        elif arg.startswith("--load-pass="):
            found.append(arg.split("=", 1)[1])
    return found


def _help_epilog(load: Sequence[str]) -> str:
    """Every pass and named pipeline with its options, then the exit statuses."""
    for entry in load:
        registry.load_pass(entry)
    width = 100
    lines = ["passes (-p name{option=value ...}, an option written with - or _; each: type = default, what it does):"]
    # A plugin that does not load is said where it would be listed: --help still helps.
    try:
        register_tuner()
    except registry.PluginError as e:
        lines.append(f"  (a pass from elsewhere is not registered: {e})")
        register_tuner()  # the entry points are read now
    names = registry.pass_names()
    for name in names:
        origin = registry.pass_origin(name)
        try:
            cls = registry.get_pass(name)
        except registry.PluginError as e:
            lines.append(f"  {name}  [{origin}]")
            lines += _wrapped(f"(cannot be loaded: {e})", width, "      ")
            continue
        lines.append(f"  {name} v{getattr(cls, 'version', 0)}" + (f"  [{origin}]" if origin else ""))
        lines += _wrapped(registry.pass_summary(name), width, "      ")
        lines += _option_lines(cls, width)
    lines += ["", "named pipelines (-p name{option=value ...}; each stands for the passes it names):"]
    for name, pipeline in registry.PIPELINES.items():
        lines.append(f"  {name}")
        lines += _wrapped(summary(pipeline), width, "      ")
        lines += _option_lines(pipeline, width)
    lines += ["", "analyses (-p 'print-analysis{analysis=NAME}' prints one):"]
    lines += [f"  {name:<24} {registry.get_analysis(name).description}" for name in registry.ANALYSES]
    lines += ["", "exit status:"]
    for status, meaning in EXIT_STATUSES.items():
        lines += _wrapped(meaning, width, " " * 8, f"  {status:<6}")
    return "\n".join(lines) + "\n"


def _option_lines(cls: type, width: int) -> list[str]:
    """`name: type = default  what it does`, a line (or more) per option."""
    lines = []
    for o in options_of(cls):
        head = f"      {o.name}: {o.type} = {o.default}"
        lines += _wrapped(o.description or "(undocumented)", width, " " * 10, f"{head}  ")
    return lines


def _wrapped(text: str, width: int, indent: str, first: str | None = None) -> list[str]:
    return textwrap.wrap(text, width, initial_indent=first if first is not None else indent, subsequent_indent=indent)


def main(argv: Sequence[str] | None = None) -> int:
    """The `accy-opt` entry point; returns the exit status (docs/cli.md)."""
    args = list(sys.argv[1:] if argv is None else argv)

    def body() -> int:
        try:
            status = AccyOptMain(args).run()
            sys.stdout.flush()  # a reader gone shows here rather than at exit
        except BrokenPipeError:  # `accy-opt f.mlir | head`: the reader wants no more
            return stdout_closed()
        return status

    return run_tool(TOOL, body, wants_traceback(args))


def program() -> NoReturn:
    """The `accy-opt` program (its console script and `python -m accy.cli.opt`): `main()` on
    `sys.argv` in a process that ends without freeing its objects (accy/cli/process.py)."""
    run_as_program(main)


if __name__ == "__main__":
    program()
