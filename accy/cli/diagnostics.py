"""How the command-line tools fail: one clear message, never a traceback.

A tool's body raises `ToolError` (or any of the known error types below) and
`run_tool` turns it into `<tool>: error: <message>` (or the located diagnostic
a parse/verify error already is) on stderr and an exit code. `--traceback`
re-raises instead, for debugging accy itself.

The exit statuses: `BAD_INPUT` for what the user can fix (the input, a
flag's value, a file, an ACCY_* variable), `USAGE_ERROR` for flags argparse
rejects (argparse's own status), `INTERNAL_ERROR` for a failure of accy
itself, `INTERRUPTED` for Ctrl-C.
"""

from __future__ import annotations

import os
import sys
import warnings
from collections.abc import Callable

BAD_INPUT = 1
USAGE_ERROR = 2  # argparse exits with it
INTERNAL_ERROR = 4
INTERRUPTED = 130


class ToolError(Exception):
    """An error the user can fix, reported as one line."""


class ReportedError(ToolError):
    """An error whose text is already the complete report, printed as is."""


class _NotLoaded(Exception):
    """Stands for an error class of a module not imported: nothing is one."""


def _loaded(module: str, name: str) -> type[BaseException]:
    """Class `name` of `module` if that module is imported, else `_NotLoaded`.
    The tools import xDSL and the parser only when they parse (a warm
    `accy-run` never does), and no error of a module not imported exists."""
    found = sys.modules.get(module)
    return getattr(found, name) if found is not None else _NotLoaded


def _source_diagnostic() -> type[BaseException]:
    return _loaded("accy.dialects.parse", "SourceDiagnostic")


def _parse_error() -> type[BaseException]:
    return _loaded("xdsl.utils.exceptions", "ParseError")


def _arg_spec_error() -> type[BaseException]:
    return _loaded("xdsl.utils.exceptions", "ArgSpecParseError")


def _diagnostic_exception() -> type[BaseException]:
    return _loaded("xdsl.utils.exceptions", "DiagnosticException")


def describe(error: BaseException) -> str:
    """The text a user sees for `error`."""
    if isinstance(error, _source_diagnostic()):
        return error.text  # type: ignore[attr-defined]
    if isinstance(error, _parse_error()):
        from accy.dialects.parse import format_diagnostic

        return format_diagnostic(error.span, error.msg)  # type: ignore[attr-defined]
    if isinstance(error, _arg_spec_error()):
        # "Error parsing pass pipeline specification:\n<context>"
        return "invalid pass pipeline: " + str(error).split("\n", 1)[-1].strip()
    if isinstance(error, FileNotFoundError) and error.filename:
        return f"no such file: '{error.filename}'"
    if isinstance(error, UnicodeDecodeError):
        return f"input is not UTF-8 text ({error.reason} at byte {error.start})"
    if isinstance(error, _diagnostic_exception()):
        return str(error).strip()
    return str(error).strip() or type(error).__name__


def run_tool(tool: str, body: Callable[[], int], traceback: bool) -> int:
    """Runs `body`, mapping failures to a message on stderr and an exit
    status (`BAD_INPUT`, or `INTERNAL_ERROR` for an error of accy's own),
    and warnings (an unusable cache folder, say) to `tool: warning: ...`."""

    def show(message: Warning | str, category: type[Warning], *_: object, **__: object) -> None:
        print(f"{tool}: warning: {message}", file=sys.stderr)

    previous, warnings.showwarning = warnings.showwarning, show
    try:
        return body()
    except KeyboardInterrupt:
        return INTERRUPTED
    except SystemExit:
        raise
    except BaseException as e:  # ArgSpecParseError is a BaseException
        if traceback:
            raise
        text = describe(e)
        if isinstance(e, _source_diagnostic() | _parse_error() | ReportedError):
            print(text, file=sys.stderr)
        elif isinstance(e, ToolError | ValueError | KeyError | FileNotFoundError | _diagnostic_exception() | _arg_spec_error() | OSError):
            print(f"{tool}: error: {text}", file=sys.stderr)
        else:
            print(
                f"{tool}: internal error: {type(e).__name__}: {text} (rerun with --traceback for details)",
                file=sys.stderr,
            )
            return INTERNAL_ERROR
        return BAD_INPUT
    finally:
        warnings.showwarning = previous


def wants_traceback(argv: list[str]) -> bool:
    """Whether `--traceback` is on the command line, before argparse has run."""
    return "--traceback" in argv


def stdout_closed() -> int:
    """The reader of stdout closed it (`accy-opt f.mlir | head -1`): it wants
    no more output, so the tool exits 0 without a message, as Unix tools do.
    stdout is pointed at the null device, so that flushing what is still
    buffered (at exit, too) cannot fail again."""
    try:
        fd = sys.stdout.fileno()
    except (OSError, ValueError):  # not a file (a caller's capture): nothing to point elsewhere
        return 0
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, fd)
    finally:
        os.close(devnull)
    return 0
