"""Reading `.mlir` text into a verified module, with located diagnostics.

xDSL's parser reports parse errors at a source position, but its verifier
reports an op by printing the whole module around it. Users of `accy-opt`,
`accy-run` and `accy.parse_module` get one MLIR-style diagnostic instead:

    prog.mlir:3:8: error: 'accy.exp' op result type ... does not match ...
      %e = "accy.exp"(%x) : (tensor<4x8xf32>) -> tensor<4x9xf32>
           ^

To do that the parser records where each op started (`SourceMap`), and
`verify_module` verifies ops innermost first (as MLIR and xDSL do) so the
first failing op is known.
"""

from __future__ import annotations

import dataclasses
import math
import os
import re
import weakref
from typing import Any

# First: the ops of xDSL's dialects imported below then read their formats lazily.
import accy.dialects.lazy_formats  # noqa: F401

# isort: split
from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import (
    AnyFloat,
    BytesAttr,
    DenseIntOrFPElementsAttr,
    IntegerType,
    ModuleOp,
    TensorType,
)
from xdsl.ir import Attribute, Block, BlockArgument, Operation, OpResult, SSAValue
from xdsl.parser import Parser, UnresolvedOperand
from xdsl.parser.generic_parser import ParserState
from xdsl.utils.exceptions import ParseError, VerifyException
from xdsl.utils.lexer import Input, Position, Span
from xdsl.utils.mlir_lexer import MLIRLexer, MLIRToken, MLIRTokenKind

from accy.dialects.context import make_context
from accy.dialects.dense import element_bytes_of, splat_literal
from accy.dialects.host import SIGNATURE_ATTR
from accy.dialects.source_text import read_source
from accy.dialects.types import FLOAT_TYPES


class SourceDiagnostic(VerifyException, ValueError):
    """A parse or verify error rendered as one located diagnostic. It is a
    `VerifyException` so that `--verify-diagnostics` treats it as xDSL would,
    and a `ValueError` for callers of the Python API."""

    def __init__(self, text: str) -> None:
        super().__init__(text)
        self.text = text

    def __str__(self) -> str:
        return self.text


def format_diagnostic(span: Span | None, message: str, line_offset: int = 0, severity: str = "error") -> str:
    """`file:line:col: error: message` (or `warning`, `remark`, `note`),
    then the source line with a caret."""
    if span is None:
        return f"{severity}: {message}"
    span = dataclasses.replace(span, line_offset=span.line_offset + line_offset)
    loc = span.get_location()
    context = span.print_with_context().rstrip("\n").split("\n")
    # print_with_context's first line is the location; keep the source lines
    # and carets that follow it.
    lines = [f"{loc}: {severity}: {message}", *context[1:]]
    if not "".join(context[1:-1]).strip():
        # At the end of the input there is no source line worth showing.
        lines = lines[:1]
    return "\n".join(lines)


@dataclasses.dataclass
class SourceMap:
    """Where each parsed op started in its source text."""

    # Weak keys: `_SOURCE_MAPS` holds this map as long as its module lives,
    # and an op keeps its module alive (parent links); strong keys would keep
    # every parsed module, so every compile, for the life of the process.
    spans: weakref.WeakKeyDictionary[Operation, Span] = dataclasses.field(default_factory=weakref.WeakKeyDictionary)
    line_offset: int = 0

    def span_of(self, op: Operation) -> Span | None:
        # An op created by a pass has no span: use its nearest parsed ancestor.
        current: Operation | None = op
        while current is not None:
            if current in self.spans:
                return self.spans[current]
            current = current.parent_op()
        return None


# What a name after each MLIR sigil names, for the lexer's error.
_PREFIXED_NAMES = {
    "%": "a value, as in %x or %0",
    "^": "a block label, as in ^bb0",
    "#": "an attribute alias, as in #map",
    "!": "a type alias or dialect type, as in !llvm.ptr",
}


class _AtTokenError(ParseError):
    """A parse error about the token it points at (an unexpected token),
    reported there, not moved to the end of the line before."""


class _LinearLexer(MLIRLexer):
    """xDSL's MLIR lexer with a string-literal pattern that runs in linear time.

    xDSL 0.75 matches a string literal with `"(?:[^"...]+|escape)*"`: a `+`
    inside a `*`, which backtracks exponentially when the closing quote is
    missing (`%0 = "accy.exp(%x) : ...` never returns). The same language
    with possessive quantifiers cannot backtrack: the two alternatives start
    with different characters, so there is only ever one way to match.
    """

    _unescaped_characters_regex = re.compile(r'"(?:[^"\\\n\v\f]++|\\(?:["nt\\]|[0-9A-Fa-f]{2}))*+"')

    def _lex_prefixed_ident(self, start_pos: int) -> MLIRToken:
        try:
            return super()._lex_prefixed_ident(start_pos)
        except ParseError as e:
            # xDSL's message leaves its placeholder unfilled ("after {first_char}").
            prefix = self.input.at(start_pos)
            raise ParseError(e.span, f"expected a name after '{prefix}' ({_PREFIXED_NAMES.get(prefix, 'a name')})") from None

    def _lex_string_literal(self, start_pos: int) -> MLIRToken:
        try:
            return super()._lex_string_literal(start_pos)
        except ParseError as e:
            # xDSL says "End of file reached" even when the line just ends.
            raise ParseError(
                e.span,
                "unterminated string literal: no closing '\"' on this line "
                "(or an escape other than \\n \\t \\\\ \\\" \\XX)",
            ) from None


class _RecordingParser(Parser):
    """A parser (on the linear lexer) that remembers the span of each op's
    first token."""

    def __init__(self, ctx: Context, text: str, name: str, source_map: SourceMap) -> None:
        # xDSL's Parser builds its own lexer, which lexes the first token at
        # once: give it no text, then lex the real text with `_LinearLexer`.
        super().__init__(ctx, "", name)
        self._parser_state = ParserState(_LinearLexer(Input(text, name)))
        self._source_map = source_map
        self.first_forward_use: dict[str, Span] = {}
        self._previous_end: Position | None = None

    def parse_operation(self) -> Operation:
        start = self._current_token.span
        op = super().parse_operation()
        self._source_map.spans[op] = start
        return op

    def _consume_token(self, expected_kind: MLIRTokenKind | None = None) -> MLIRToken:
        token = super()._consume_token(expected_kind)
        self._previous_end = token.span.end
        return token

    def parse_punctuation(self, punctuation: Any, context_msg: str = "") -> Any:
        # xDSL's context messages start with a space (" in dense attribute");
        # one that does not was glued on ("Expected ':'function type ...").
        if context_msg == "function type signature expected":
            context_msg = " before the op's function type, as in `: (tensor<4xf32>) -> tensor<4xf32>`"
        elif context_msg and not context_msg.startswith(" "):
            context_msg = f" ({context_msg})"
        return super().parse_punctuation(punctuation, context_msg)

    def _parse_token(self, expected_kind: Any, error_msg: str) -> Any:
        if error_msg == " in block definition" and self._current_token.kind != expected_kind:
            # xDSL's whole message would be " in block definition".
            token = self._current_token
            got = "the end of the input" if token.kind == MLIRTokenKind.EOF else f"'{token.text}'"
            raise _AtTokenError(
                token.span, f"expected an operation or a block label (as in ^bb0:) here, got {got}"
            )
        return super()._parse_token(expected_kind, error_msg)

    def error_before_new_line(self, e: ParseError) -> ParseError:
        """`e` as MLIR reports it: an error at a token that starts a new
        line (or at the end of the input) is put just after the token
        before it, on the line that lacks something (a `,`, a type)."""
        current = self._current_token.span
        previous = self._previous_end
        if (
            isinstance(e, _AtTokenError)
            or previous is None
            or e.span.start != current.start
            or "\n" not in current.input.content[previous : current.start]
        ):
            return e
        return ParseError(Span(previous, previous + 1, current.input), e.msg)

    def parse_dense_int_or_fp_elements_attr(self, type: Any) -> DenseIntOrFPElementsAttr:
        """`dense<...>` as MLIR reads it, for integer and float elements
        (complex and index ones are left to xDSL): a hexadecimal float
        element is its bits (`dense<0xFF800000> : tensor<4xf32>` is -inf,
        what the printer writes), and a splat is stored as one element
        whatever its shape (`splat_literal`). Errors are at the element."""
        start = self._current_token.span.start
        self.parse_punctuation("<", " in dense attribute")
        hex_string: str | None = None
        elements: list[Any] = []
        shape: list[int] | None = None
        if self.parse_optional_punctuation(">") is None:
            if (hex_string := self.parse_optional_str_literal()) is None:
                try:
                    elements, shape = self._parse_tensor_literal()
                except ParseError as e:
                    raise _named_float_error(e) from None
            self.parse_punctuation(">", " in dense attribute")
        type_span = self._current_token.span
        if type is None:
            self.parse_punctuation(":", " in dense attribute")
            type_span = self._current_token.span
            type = self._parse_dense_literal_type()
        element_type = type.element_type
        if not isinstance(element_type, IntegerType | AnyFloat):
            self._resume_from(start)
            return super().parse_dense_int_or_fp_elements_attr(type)
        if isinstance(element_type, AnyFloat) and not isinstance(element_type, FLOAT_TYPES):
            self.raise_error(
                f"accy reads no dense literal of element type {element_type} (use f16, bf16, f32 or f64)", type_span
            )
        count = math.prod(type.get_shape())
        size = element_type.compile_time_size
        if hex_string is not None:
            try:
                data = bytes.fromhex(hex_string[2:]) if hex_string[:2] in ("0x", "0X") else None
            except ValueError:
                data = None
            if data is None:
                self.raise_error('a dense literal string is the hexadecimal bytes of its elements: "0x..."')
            if len(data) == size:
                return splat_literal(type, data)
            if len(data) != count * size:
                self.raise_error(
                    f"the dense literal's {len(data)} bytes are not {count} elements of {element_type}"
                )
            return DenseIntOrFPElementsAttr(type, BytesAttr(data))
        if not elements:
            if count:
                self.raise_error(f"a dense literal of {type} needs {count} elements, got none")
            return DenseIntOrFPElementsAttr(type, BytesAttr(b""))
        if shape and shape != list(type.get_shape()):
            self.raise_error(f"the dense literal's shape {shape} is not the shape {list(type.get_shape())} of its type")
        stored: list[bytes] = []
        for element in elements:
            hexadecimal = element.span.text.lstrip("-")[:2] in ("0x", "0X")
            # xDSL converts a float element to float first, bits and all.
            value = element.value if hexadecimal else element.to_type(self, element_type)
            try:
                stored.append(element_bytes_of(value, element_type, hexadecimal))
            except ValueError as e:
                self.raise_error(str(e), element.span)
        if not shape:
            return splat_literal(type, stored[0])
        return DenseIntOrFPElementsAttr(type, BytesAttr(b"".join(stored)))

    def resolve_operand(self, operand: UnresolvedOperand, type: Attribute) -> SSAValue:
        # The first use of a value not defined yet: where to point should it never be.
        if operand.operand_name not in self.ssa_values:
            self.first_forward_use.setdefault(operand.operand_name, operand.span)
        return super().resolve_operand(operand, type)

    def undefined_value_error(self) -> ParseError | None:
        """xDSL reports values used but never defined at the end of the
        input: the same error at the first use of the first of them."""
        for name in self.forward_ssa_references:
            if name in self.first_forward_use:
                return ParseError(self.first_forward_use[name], f"value %{name} is used but never defined")
        return None


def _named_float_error(e: ParseError) -> ParseError:
    """`e`, or, where it stopped at `inf` or `nan` (which MLIR does not
    read either), an error that names the hexadecimal form to write."""
    rest = e.span.input.content[e.span.start : e.span.start + 5].lstrip("-")
    word = re.match(r"[A-Za-z_]\w*", rest)
    if word is None or word.group(0).lower() not in ("inf", "nan", "infinity"):
        return e
    return ParseError(
        e.span,
        f"'{word.group(0)}' is not a float literal: write the value's bits in hexadecimal, as MLIR prints "
        "them (f32: 0x7F800000 is inf, 0xFF800000 -inf, 0x7FC00000 NaN; f16: 0x7C00, 0xFC00, 0x7E00; "
        "bf16: 0x7F80, 0xFF80, 0x7FC0)",
    )


def parse_text(ctx: Context, text: str, name: str = "<input>", line_offset: int = 0) -> tuple[ModuleOp, SourceMap]:
    """Parses `text` (not verified), recording op positions. Raises xDSL's
    `ParseError` (whose span is exact) on a syntax error."""
    source_map = SourceMap(line_offset=line_offset)
    # Lexing the first token may already fail (an unterminated string).
    parser = _RecordingParser(ctx, text, name, source_map)
    try:
        module = parser.parse_module()
    except ParseError as e:
        if e.msg == "Could not parse entire input!":
            raise _no_operation_error(parser) from None
        undefined = parser.undefined_value_error() if "used but not defined" in e.msg else None
        raise (undefined or parser.error_before_new_line(_named_token(e))) from None
    except RecursionError:
        # xDSL's parser recurses on nesting (regions, attributes, types).
        raise ParseError(parser._current_token.span, "input is nested too deeply to parse") from None
    except Exception as e:
        # Some malformed input makes xDSL raise a plain exception (e.g.
        # NotImplementedError for `array<i664: 1>`, one with no text for
        # `array<f80>`): report it where the parser stopped, as a parse error.
        raise ParseError(parser._current_token.span, str(e) or _unsupported(e)) from e
    return module, source_map


def _named_token(e: ParseError) -> ParseError:
    """`e`, or where xDSL names the token it got by the lexer's kind
    ("Expected 'x' in shape delimiter, got L_SQUARE"), with the token as written."""
    m = re.search(r"got ([A-Z_]+)!?$", e.msg)
    if m is None or m[1] not in MLIRTokenKind.__members__:
        return e
    got = "the end of the input" if m[1] == "EOF" else f"'{e.span.text}'"
    return ParseError(e.span, f"{e.msg[: m.start()]}got {got}")


def _no_operation_error(parser: _RecordingParser) -> ParseError:
    """What xDSL calls "Could not parse entire input!": the input holds no
    operation at all, or what stands where one should is not one."""
    token = parser._current_token
    if token.kind == MLIRTokenKind.EOF and not parser._source_map.spans:
        return ParseError(
            Span(0, 0, token.span.input),
            "the input holds no operation (it is empty or only comments): write a module or a func.func",
        )
    got = "the end of the input" if token.kind == MLIRTokenKind.EOF else f"'{token.text}'"
    return _AtTokenError(token.span, f"expected an operation here, got {got}")


def _unsupported(e: Exception) -> str:
    """What an exception xDSL raised with no message was about: the type
    whose method raised it (f80's byte layout, say), if one did."""
    frame_self = None
    tb = e.__traceback__
    while tb is not None:
        candidate = tb.tb_frame.f_locals.get("self")
        if isinstance(candidate, Attribute):
            frame_self = candidate
        tb = tb.tb_next
    if frame_self is not None:
        return f"xDSL cannot store values of type {frame_self} (it has no byte layout for it): use f16, bf16, f32 or f64"
    return f"this construct is not supported by the parser ({type(e).__name__})"


class _Dominance:
    """Whether each operand of an op is defined where the op can see it.

    xDSL's parser accepts a use before the definition in the same block (it
    resolves forward references) and its verifier does not check dominance:
    `%a = "accy.add"(%a, %x)` would reach the passes, which recurse on the
    cycle. Within a block a value must be defined by an earlier op; a nested
    op may use values of the blocks around it. Across the blocks of one
    region (a CFG, never written in accy programs) dominance is not checked.
    """

    def __init__(self, source_map: SourceMap | None) -> None:
        self._positions: dict[Block, dict[Operation, int]] = {}
        self._source_map = source_map

    def _position(self, op: Operation) -> int:
        block = op.parent_block()
        assert block is not None
        if block not in self._positions:
            self._positions[block] = {o: i for i, o in enumerate(block.ops)}
        return self._positions[block][op]

    def check(self, op: Operation) -> None:
        """Raises VerifyException for the first operand of `op` it cannot see."""
        for i, value in enumerate(op.operands):
            problem = self._problem(op, value)
            if problem is not None:
                name = f"%{value.name_hint}" if value.name_hint else "a value"
                raise VerifyException(f"operand #{i} ({name}) {problem}")

    def _problem(self, user: Operation, value: SSAValue) -> str | None:
        if isinstance(value, BlockArgument):
            home, definer = value.block, None
        elif isinstance(value, OpResult):
            home, definer = value.op.parent_block(), value.op
        else:
            return None
        current: Operation | None = user
        while current is not None:
            block = current.parent_block()
            if block is home:
                if definer is None:
                    return None
                if definer is user:
                    return "is the op's own result"
                if definer is current:
                    return "is a result of the op that contains this use"
                if self._position(definer) < self._position(current):
                    return None
                return f"is used before it is defined{self._where(definer)}"
            if block is not None and home is not None and block.parent is not None and block.parent is home.parent:
                return None
            current = current.parent_op()
        return "is defined in a region that does not enclose this use"

    def _where(self, op: Operation) -> str:
        span = self._source_map.spans.get(op) if self._source_map is not None else None
        if span is None:
            return ""
        offset = self._source_map.line_offset  # type: ignore[union-attr]
        loc = dataclasses.replace(span, line_offset=span.line_offset + offset).get_location()
        return f" (at line {loc.line}, column {loc.col})"


def _check_signature(op: Operation) -> None:
    """A tensor program (a `func.func` that holds accy ops and is not yet
    kernelized) takes and returns tensors only: that is what accy can pass
    in and out."""
    if not isinstance(op, func.FuncOp) or SIGNATURE_ATTR in op.attributes or op.is_declaration:
        return
    if not any(inner.dialect_name() == "accy" for inner in op.walk()):
        return
    args = op.body.block.args
    for i, t in enumerate(op.function_type.inputs.data):
        if not isinstance(t, TensorType):
            name = f" (%{args[i].name_hint})" if i < len(args) and args[i].name_hint else ""
            raise VerifyException(
                f"argument #{i}{name} of @{op.sym_name.data} has type {t}; accy functions take "
                f"tensors (write tensor<{t}> for a scalar)"
            )
    for i, t in enumerate(op.function_type.outputs.data):
        if not isinstance(t, TensorType):
            raise VerifyException(f"result #{i} of @{op.sym_name.data} has type {t}; accy functions return tensors")


def verify_module(module: ModuleOp, source_map: SourceMap | None = None) -> None:
    """Verifies `module`; raises `SourceDiagnostic` naming the first op (innermost
    first) that does not verify, at its source position when known.

    Besides each op's own verifier: every operand is defined before its use
    (`_Dominance`), and tensor programs have tensor signatures."""
    failing: list[Operation] = []
    dominance = _Dominance(source_map)

    def visit(op: Operation) -> None:
        for region in op.regions:
            for block in region.blocks:
                for child in block.ops:
                    visit(child)
        failing.append(op)
        dominance.check(op)
        op.verify(verify_nested_ops=False)
        _check_signature(op)

    try:
        visit(module)
    except Exception as e:
        op = failing[-1]
        message = " ".join(line.strip() for line in str(e).splitlines() if line.strip())
        if not isinstance(e, VerifyException):
            # A verifier that crashed on odd IR still names the op it was given.
            message = f"{type(e).__name__}: {message}"
        prefix = "Operation does not verify: "
        if message.startswith(prefix):
            message = message[len(prefix) :]
        for name in (f"'{op.name}' op ", f"'{op.name}' ", f"{op.name}: "):
            # The op's own verifier may already name it; say it once.
            if message.startswith(name):
                message = message[len(name) :]
                break
        raise diagnostic_at(op, _one_type_message(op, message), source_map) from None


#: xDSL's words for values that break a shared type constraint (`T` of `lhs`, `rhs`, `result`).
_VARIABLE_MISMATCH = re.compile(
    r"(?P<kind>operand|result) '(?P<name>\w+)' at position \d+ does not verify: "
    r"attribute (?P<want>.+) expected from variable '(?P<var>\w+)', but got (?P<got>.+)"
)


def _one_type_message(op: Operation, message: str) -> str:
    """`message`, or where xDSL says a value breaks a type variable ("attribute
    tensor<8xf32> expected from variable 'T', but got tensor<1xf32>"), what the
    user wrote wrong: which operands and results must have one type, which one
    differs, and (an implicit broadcast or conversion) what to write instead."""
    m = _VARIABLE_MISMATCH.fullmatch(message)
    definition = getattr(type(op), "get_irdl_definition", None)
    if m is None or definition is None:
        return message
    irdl = definition()
    shared = [
        (kind, name)
        for kind, defs in (("operand", irdl.operands), ("result", irdl.results))
        for name, d in defs
        if m["var"] in d.constr.variables()
    ]
    failing = (m["kind"], m["name"])
    if failing not in shared:
        return message
    earlier = [f"{kind} '{name}'" for kind, name in shared[: shared.index(failing)]]
    names = [f"'{name}'" for _, name in shared]
    every = f"{', '.join(names[:-1])} and {names[-1]}"
    verb = "has" if len(earlier) == 1 else "have"
    text = (
        f"{m['kind']} '{m['name']}' has type {m['got']}, but {' and '.join(earlier)} {verb} type {m['want']}: "
        f"{every} of '{op.name}' must have one type"
    )
    want, got = (_parse_tensor_type(t) for t in (m["want"], m["got"]))
    if m["kind"] == "operand" and want is not None and got is not None:
        if want[1] == got[1] and want[0] != got[0]:
            text += " (accy does not broadcast implicitly: make the shapes equal with accy.broadcast)"
        elif want[0] == got[0] and want[1] != got[1]:
            text += " (accy does not convert element types implicitly: use accy.cast)"
    return text


def _parse_tensor_type(text: str) -> tuple[str, str] | None:
    """(shape, element type) of `tensor<4x8xf32>` as text; None for another type."""
    m = re.fullmatch(r"tensor<((?:[0-9?]+x)*)(\w+)>", text)
    return (m[1], m[2]) if m else None


def parse_module(text_or_path: str | os.PathLike[str], ctx: Context | None = None, verify: bool = True) -> ModuleOp:
    """Parses and verifies a module from `.mlir` text or a path to a file.

    A `str` is taken as a path when it names an existing file or ends in
    `.mlir` (a missing file is then an error), and as IR text otherwise.
    Errors raise `SourceDiagnostic` (a `VerifyException`) with one located
    message; a missing file raises `FileNotFoundError`.
    """
    if ctx is None:
        ctx = make_context()
    text, name = read_source(text_or_path)
    try:
        module, source_map = parse_text(ctx, text, name)
    except ParseError as e:
        raise SourceDiagnostic(format_diagnostic(e.span, e.msg)) from None
    if verify:
        verify_module(module, source_map)
    _SOURCE_MAPS[module] = source_map
    return module


# Where the ops of each module `parse_module` returned came from, for the
# diagnostics of later stages (`accy.compile`); forgotten with the module.
_SOURCE_MAPS: weakref.WeakKeyDictionary[ModuleOp, SourceMap] = weakref.WeakKeyDictionary()


def source_map_of(module: ModuleOp) -> SourceMap | None:
    """The `SourceMap` of a module `parse_module` returned, if it has one."""
    return _SOURCE_MAPS.get(module)


def diagnostic_at(op: Operation, message: str, source_map: SourceMap | None) -> SourceDiagnostic:
    """`'<op name>' op <message>`, at `op`'s source position when known."""
    span = source_map.span_of(op) if source_map is not None else None
    offset = source_map.line_offset if source_map is not None else 0
    return SourceDiagnostic(format_diagnostic(span, f"'{op.name}' op {message}", offset))
