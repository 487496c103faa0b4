"""What a pass says about the program it was given, as MLIR's
`op->emitError()`, `emitWarning()`, `emitRemark()` and their notes.

- `raise DiagnosticError(message, op, notes)`: the program is wrong, not the
  pass (an element type accy does not run, a call it cannot inline). The
  pass fails as the user's error: `accy-opt` reports it at `op`'s source
  position, exits with status 1 and writes no reproducer, and
  `--verify-diagnostics` matches it against `expected-error` (each note
  against `expected-note`).
- `emit_warning(op, message)`, `emit_remark(op, message)`: the pass goes on.

Who hears a warning or remark: the innermost `collecting(handler)` block
(`accy-opt` locates and prints them, or checks them), else standard error as
`warning: 'op.name' op message`.

A message is about `op`, and is printed after the op's name, as MLIR does:
`prog.mlir:3:8: error: 'accy.cast' op accy runs no element type i7`.
"""

from __future__ import annotations

import contextlib
import contextvars
import sys
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Literal

from xdsl.ir import Operation

Severity = Literal["error", "warning", "remark", "note"]
SEVERITIES: tuple[Severity, ...] = ("error", "warning", "remark", "note")


@dataclass(frozen=True)
class Diagnostic:
    """One diagnostic: its severity, its message, the op it is about (None:
    no place in the program) and the notes attached to it."""

    severity: Severity
    message: str
    op: Operation | None = None
    notes: tuple[Diagnostic, ...] = ()

    def text(self) -> str:
        """The message after the op's name, as a diagnostic prints it."""
        return f"'{self.op.name}' op {self.message}" if self.op is not None else self.message


def note(message: str, op: Operation | None = None) -> Diagnostic:
    """A note, to attach to an error, warning or remark."""
    return Diagnostic("note", message, op)


class DiagnosticError(ValueError):
    """The pass refuses its input: the user's error (module docstring), at `op`."""

    def __init__(self, message: str, op: Operation | None = None, notes: Iterable[Diagnostic] = ()) -> None:
        self.diagnostic = Diagnostic("error", message, op, tuple(notes))
        super().__init__(self.diagnostic.text())


Handler = Callable[[Diagnostic], None]
_handlers: contextvars.ContextVar[tuple[Handler, ...]] = contextvars.ContextVar("accy_diagnostic_handlers", default=())


def emit(diagnostic: Diagnostic) -> None:
    """Hands `diagnostic` to the innermost handler (standard error if none)."""
    handlers = _handlers.get()
    if handlers:
        handlers[-1](diagnostic)
        return
    for d in (diagnostic, *diagnostic.notes):
        print(f"{d.severity}: {d.text()}", file=sys.stderr)


def emit_warning(op: Operation | None, message: str, notes: Iterable[Diagnostic] = ()) -> None:
    """A warning about `op`; the pass goes on."""
    emit(Diagnostic("warning", message, op, tuple(notes)))


def emit_remark(op: Operation | None, message: str, notes: Iterable[Diagnostic] = ()) -> None:
    """A remark about `op` (what a pass did, or chose not to do); the pass goes on."""
    emit(Diagnostic("remark", message, op, tuple(notes)))


@contextlib.contextmanager
def collecting(handler: Handler) -> Iterator[None]:
    """Within the block, warnings and remarks go to `handler` (in this thread
    and context only)."""
    token = _handlers.set((*_handlers.get(), handler))
    try:
        yield
    finally:
        _handlers.reset(token)
