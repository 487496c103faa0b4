"""The options of a pass (or named pipeline), as a user reads and writes them.

A pass is a frozen dataclass whose fields are its options (xDSL's
`ArgSpecConvertible`: `kernelize{strict=true verify-bounds=false}`). What an
option means is its attribute docstring, the string written on the line after
the field, the convention xDSL and Sphinx read:

    strict: bool = False
    \"\"\"Fail where a work item would run on the host reference path.\"\"\"

`options_of` lists them (name as written in pipeline text, type, default,
that description) for `accy-opt --help`; `from_spec` makes the pass from its
pipeline text, and says which option is wrong, and how, when one is.
"""

from __future__ import annotations

import ast
import dataclasses
import functools
import inspect
import textwrap
import types
import typing
from dataclasses import dataclass
from typing import Any, TypeVar

from xdsl.utils.arg_spec import ArgSpec, ArgSpecConvertible
from xdsl.utils.hints import isa

C = TypeVar("C", bound=ArgSpecConvertible)


class OptionError(ValueError):
    """Pipeline text gives a pass an option it lacks, or a value of the wrong kind."""


@dataclass(frozen=True)
class OptionInfo:
    """One option: `name` as written in pipeline text (`verify-bounds`), its
    type and default in the same words, and the first line of what it means."""

    name: str
    type: str
    default: str
    description: str


def spelled(field: str) -> str:
    """How pipeline text writes the option of dataclass field `field`."""
    return field.replace("_", "-")


def _fields(cls: type) -> list[dataclasses.Field[Any]]:
    return [f for f in dataclasses.fields(cls) if f.init and f.name != "name"]


def options_of(cls: type) -> list[OptionInfo]:
    """The options of the pass or pipeline class `cls`, in field order."""
    hints = typing.get_type_hints(cls)
    docs = field_docs(cls)
    return [
        OptionInfo(spelled(f.name), type_name(hints[f.name]), _default_text(f), docs.get(f.name, ""))
        for f in _fields(cls)
    ]


def type_name(hint: Any) -> str:
    """`hint` in the words of pipeline text: `bool`, `int`, `string`, and
    `list of int` for a tuple (written `a=1,2,3`); an optional is its type."""
    if hint is bool:
        return "bool"
    if hint in (int, float):
        return hint.__name__
    if hint is str:
        return "string"
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        named = [type_name(a) for a in args if a is not type(None)]
        return " or ".join(dict.fromkeys(named))
    if origin is tuple:
        return f"list of {type_name(args[0])}" if args else "list"
    return getattr(hint, "__name__", str(hint))


def value_text(value: Any) -> str:
    """`value` as pipeline text writes it (`true`, `1,2`, `cpu`)."""
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, tuple):
        return ",".join(value_text(v) for v in value) if value else "(empty)"
    return "unset" if value is None else str(value)


def _default_text(f: dataclasses.Field[Any]) -> str:
    if f.default is not dataclasses.MISSING:
        return value_text(f.default)
    if f.default_factory is not dataclasses.MISSING:
        return value_text(f.default_factory())
    return "required"


@functools.cache
def field_docs(cls: type) -> dict[str, str]:
    """Field name -> the first line of its attribute docstring, over `cls`
    and the dataclasses it derives from (a subclass's own wins). Empty for a
    class whose source cannot be read."""
    docs: dict[str, str] = {}
    for klass in reversed(cls.__mro__):
        if not dataclasses.is_dataclass(klass) or klass.__module__ == "builtins":
            continue
        try:
            source = textwrap.dedent(inspect.getsource(klass))
        except (OSError, TypeError):
            continue
        body = ast.parse(source).body
        if not body or not isinstance(body[0], ast.ClassDef):
            continue
        statements = body[0].body
        for stmt, following in zip(statements, statements[1:], strict=False):
            if (
                isinstance(stmt, ast.AnnAssign)
                and isinstance(stmt.target, ast.Name)
                and isinstance(following, ast.Expr)
                and isinstance(following.value, ast.Constant)
                and isinstance(following.value.value, str)
            ):
                docs[stmt.target.id] = _first_line(following.value.value)
    return docs


def _first_line(doc: str) -> str:
    paragraph = inspect.cleandoc(doc).split("\n\n", 1)[0]
    return " ".join(paragraph.split())


def from_spec(cls: type[C], spec: ArgSpec) -> C:
    """`cls` made from `spec` (`name{opt=value ...}`). Raises `OptionError`
    naming the option that `cls` lacks, or whose value is of the wrong type;
    a value the class itself refuses (its `__post_init__`) raises its error."""
    fields = {f.name: f for f in _fields(cls)}
    hints = typing.get_type_hints(cls)
    # Keys as the user wrote them (`vector_width` or `vector-width`), in messages.
    for written, value in spec.parameters.items():
        key = written.replace("-", "_")
        if key not in fields:
            takes = f"options: {', '.join(spelled(n) for n in fields)}" if fields else "it takes no options"
            raise OptionError(f"there is no option '{written}' ({takes})")
        if not _accepts(hints[key], value):
            raise OptionError(f"option '{written}' takes {_kind(hints[key])}, got {_given_text(value)}")
    given = spec.normalize_parameter_names().parameters
    missing = [spelled(n) for n, f in fields.items() if n not in given and _default_text(f) == "required"]
    if missing:
        raise OptionError(f"option '{missing[0]}' is required")
    return cls.from_spec(spec)


def _accepts(hint: Any, value: tuple[Any, ...]) -> bool:
    """Whether xDSL's conversion takes `value` (the values after `=`) for a field of type `hint`."""
    if not value:
        origin = typing.get_origin(hint)
        return origin in (typing.Union, types.UnionType) and type(None) in typing.get_args(hint) or isa(value, hint)
    if any(isinstance(v, bool) for v in value) and "bool" not in type_name(hint):
        return False  # isa(True, int) holds, but `n=true` is a mistake
    return (len(value) == 1 and isa(value[0], hint)) or isa(value, hint)


def _kind(hint: Any) -> str:
    name = type_name(hint)
    if name == "bool":
        return "a bool (true or false)"
    if name.startswith("list of"):
        return f"a {name} (comma-separated)"
    return f"an {name}" if name[0] in "aeiou" else f"a {name}"


def _given_text(value: tuple[Any, ...]) -> str:
    if not value:
        return "no value"
    return ",".join(f'"{v}"' if isinstance(v, str) else value_text(v) for v in value)
