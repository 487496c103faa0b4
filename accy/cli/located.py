"""Diagnostics about a tool's input, each at its place in the input file.

Every error the user can fix, every warning and remark a pass emits, comes
to `accy-opt` as a `Located`: its severity, its message and its line and
column in the file (none for what has no place in it), and the text printed
for it (`prog.mlir:3:8: error: message`, the source line and a caret). The
same record is what `--verify-diagnostics` compares with the file's
`expected-*` annotations, and re-renders as "unexpected error: ...".

A `Source` is one input (a chunk of a `--split-input-file` input, its lines
counted from the start of the file), and knows how to render at a position.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass

from xdsl.ir import Operation
from xdsl.utils.exceptions import ParseError
from xdsl.utils.lexer import Input, Span

from accy.dialects.parse import SourceDiagnostic, SourceMap, format_diagnostic
from accy.passes.diagnostics import Diagnostic

#: The first line of a rendered diagnostic: `file:line:col: severity: message`.
_LOCATED = re.compile(r"(?P<file>.*?):(?P<line>\d+):(?P<col>\d+): (?P<severity>error|warning|remark|note): (?P<message>.*)")
_UNLOCATED = re.compile(r"(?P<severity>error|warning|remark|note): (?P<message>.*)")


@dataclass(frozen=True)
class Located:
    """One diagnostic: `line`/`col` count from 1 in the whole input file
    (None: it has no place there); `text` is what the tool prints."""

    severity: str
    message: str
    line: int | None
    col: int | None
    text: str
    notes: tuple[Located, ...] = ()
    #: Whether it is a syntax error (xDSL's `--parsing-diagnostics` prints those).
    parse_error: bool = False

    @property
    def is_error(self) -> bool:
        return self.severity == "error"

    def printed(self) -> str:
        """The diagnostic and its notes, as printed."""
        return "\n".join(d.text for d in (self, *self.notes))


@dataclass(frozen=True)
class Source:
    """One input: `text`, named `name` in diagnostics, whose first line is
    line `line_offset + 1` of the file."""

    text: str
    name: str
    line_offset: int = 0

    def span_at(self, line: int, col: int) -> Span:
        """The one-character span at `line`, `col` of the file (both from 1)."""
        lines = self.text.split("\n")
        row = min(max(line - self.line_offset - 1, 0), len(lines) - 1)
        start = sum(len(l) + 1 for l in lines[:row]) + min(col - 1, len(lines[row]))
        return Span(start, start + 1, Input(self.text, self.name))

    def at(self, severity: str, message: str, span: Span | None, notes: tuple[Located, ...] = ()) -> Located:
        """A diagnostic at `span` of this input (None: no place in it)."""
        text = format_diagnostic(span, message, self.line_offset, severity)
        if span is None:
            return Located(severity, message, None, None, text, notes)
        loc = span.get_location()
        return Located(severity, message, loc.line + self.line_offset, loc.col, text, notes)

    def at_line(self, severity: str, message: str, line: int | None, col: int | None) -> Located:
        """A diagnostic at `line`, `col` of the file (None: no place in it)."""
        span = self.span_at(line, col or 1) if line is not None else None
        return self.at(severity, message, span)

    def of_parse_error(self, error: ParseError) -> Located:
        return dataclasses.replace(self.at("error", error.msg, error.span), parse_error=True)

    def of_rendered(self, error: SourceDiagnostic) -> Located:
        """A diagnostic `accy.dialects.parse` rendered already (its first line
        says where and what; the rest is the source line and a caret)."""
        first = error.text.split("\n", 1)[0]
        m = _LOCATED.fullmatch(first)
        if m is not None:
            return Located(m["severity"], m["message"], int(m["line"]), int(m["col"]), error.text)
        m = _UNLOCATED.fullmatch(first)
        severity, message = (m["severity"], m["message"]) if m else ("error", first)
        return Located(severity, message, None, None, error.text)

    def of_op(self, severity: str, message: str, op: Operation | None, source_map: SourceMap | None) -> Located:
        """A diagnostic about `op`, at its (nearest parsed ancestor's) source position."""
        span = source_map.span_of(op) if op is not None and source_map is not None else None
        return self.at(severity, message, span)

    def of_diagnostic(self, diagnostic: Diagnostic, source_map: SourceMap | None) -> Located:
        """A pass's diagnostic (`accy.passes.diagnostics`) with its notes."""
        notes = tuple(self.of_op(n.severity, n.text(), n.op, source_map) for n in diagnostic.notes)
        first = self.of_op(diagnostic.severity, diagnostic.text(), diagnostic.op, source_map)
        return Located(first.severity, first.message, first.line, first.col, first.text, notes)
