"""Ops' declarative assembly formats read when an op is first parsed or
printed in that form, not when its class is defined.

xDSL's `irdl_op_definition` parses an op's `assembly_format` string into a
`FormatProgram` as the class is made: loading xDSL's dialects and accy's
parses ~170 formats, about a quarter of the time a cold process spends
importing them (~45 ms of its ~200 ms here), while a program uses a few of
them and a compile printing the generic form none. `install()` wraps
xDSL's `get_accessors_from_op_def` so that an op with a format gets `parse`
and `print` methods that make its program on their first call, once. What
they do is the same; only a format xDSL rejects is reported later: at the
op's first parse or print, with the same `PyRDLOpDefinitionError`
(tests/unit/test_dialect_context.py reads every format of accy's dialects).

It must run before a dialect's classes are made to help them, so the
modules through which accy first loads xDSL's dialects (accy/dialects/
context.py and parse.py, accy/cli/opt.py, and for `accy.jit` and
`accy.numpy` accy/jit.py and accy/frontends/tracing.py) import this one
first; a dialect imported before keeps its eagerly made program, which is
only slower.
"""

from __future__ import annotations

import threading
from typing import Any

from accy.dialects import class_code

class_code.install()  # before xDSL's classes are made: their dataclass methods from the bundle

import xdsl.irdl.operations as _operations  # noqa: E402

_installed = False


def install() -> None:
    """Makes ops defined from now on read their formats lazily (idempotent)."""
    global _installed
    if _installed:
        return
    eager = _operations.get_accessors_from_op_def

    def get_accessors_from_op_def(op_def: _operations.OpDef, custom_verify: Any | None) -> dict[str, Any]:
        text = op_def.assembly_format
        if text is None:
            return eager(op_def, custom_verify)
        # The accessors of an op without a format, then its format's methods.
        op_def.assembly_format = None
        try:
            accessors = eager(op_def, custom_verify)
        finally:
            op_def.assembly_format = text
        program = _LazyProgram(text, op_def)

        @classmethod  # type: ignore[misc]
        def parse_with_format(cls: type[Any], parser: Any) -> Any:
            return program.get().parse(parser, cls)

        def print_with_format(self: Any, printer: Any) -> None:
            return program.get().print(printer, self)

        accessors["parse"] = parse_with_format
        accessors["print"] = print_with_format
        return accessors

    _operations.get_accessors_from_op_def = get_accessors_from_op_def
    _installed = True


class _LazyProgram:
    """An op's `FormatProgram`, made from its format text at the first `get`."""

    def __init__(self, text: str, op_def: _operations.OpDef) -> None:
        self.text = text
        self.op_def = op_def
        self._program: Any = None
        self._lock = threading.Lock()

    def get(self) -> Any:
        if self._program is None:
            with self._lock:
                if self._program is None:
                    self._program = self._make()
        return self._program

    def _make(self) -> Any:
        # As xDSL's get_accessors_from_op_def reports a format it rejects.
        from xdsl.irdl.declarative_assembly_format import FormatProgram
        from xdsl.utils.exceptions import ParseError, PyRDLOpDefinitionError

        try:
            return FormatProgram.from_str(self.text, self.op_def)
        except ParseError as e:
            raise PyRDLOpDefinitionError("Error during the parsing of the assembly format: ", e.args) from e


install()
