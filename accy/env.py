"""The environment variables accy reads, each parsed strictly.

Every `ACCY_*` variable is read through this module; docs/environment.md
lists them all, with the values each takes and its default. An unset or
blank variable takes its default. Any other value outside the ones a
variable takes is an `EnvVarError`, a `ValueError` whose one-line message
names the variable, the value and the values it takes (`accy-run` and
`accy-opt` print it as their one error line); no value is ever guessed at,
so `ACCY_POISON=false` is off and `ACCY_POISON=maybe` an error.

A variable is read when its setting is used, not at import: `import accy`
never fails because of one, and a test may set one between two calls.

This module imports nothing of accy, so that every layer may read the
environment through it (tests/unit/test_layering.py).
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")
D = TypeVar("D")

#: The words a yes/no variable takes (any case) for on and for off.
TRUE_WORDS = ("1", "true", "yes", "on")
FALSE_WORDS = ("0", "false", "no", "off")
#: How an error message states the values a yes/no variable takes.
FLAG_WORDS = "1/0, true/false, yes/no or on/off"
FLAG_VALUES = f"{FLAG_WORDS} (any case; empty means unset)"

_WHOLE_NUMBER = re.compile(r"[0-9]+")


class EnvVarError(ValueError):
    """An environment variable accy reads holds a value outside the ones it
    takes; the message names the variable, the value and those values."""


def invalid(name: str, text: str, expected: str, what: str | None = None) -> EnvVarError:
    """The error for `$name` holding `text`: `NAME='text': expected ...`, or
    `NAME='text' is not <what>: expected ...` when `what` names the kind of value."""
    said = f" is not {what}" if what else ""
    return EnvVarError(f"{name}={text!r}{said}: expected {expected}")


def env_text(name: str) -> str | None:
    """`$name` stripped of surrounding white space; None when it is unset or blank."""
    value = os.environ.get(name)
    if not value:  # the common case, on hot paths (every call reads ACCY_DEBUG): no more work than this
        return None
    return value.strip() or None


def env_path(name: str) -> str | None:
    """`$name` as set (a path keeps its spaces); None when it is unset or blank."""
    value = os.environ.get(name)
    return value if value and value.strip() else None


def env_value(name: str, parse: Callable[[str], T | None], expected: str, default: D) -> T | D:
    """`parse($name)`, or `default` when the variable is unset or blank;
    `EnvVarError` (saying it expected `expected`) where `parse` returns None."""
    text = env_text(name)
    if text is None:
        return default
    value = parse(text)
    if value is None:
        raise invalid(name, text, expected)
    return value


def parse_flag(text: str) -> bool | None:
    """True or False for one of the yes/no words (any case), else None."""
    word = text.strip().lower()
    if word in TRUE_WORDS:
        return True
    if word in FALSE_WORDS:
        return False
    return None


def env_flag(name: str, default: bool = False) -> bool:
    """A yes/no variable: `TRUE_WORDS` are on, `FALSE_WORDS` off (any case)."""
    return env_value(name, parse_flag, FLAG_VALUES, default)


def env_int(name: str, default: D, what: str, minimum: int = 1) -> int | D:
    """A whole number of `what` (written in decimal digits), at least `minimum`."""

    def parse(text: str) -> int | None:
        return int(text) if _WHOLE_NUMBER.fullmatch(text) and int(text) >= minimum else None

    return env_value(name, parse, f"a number of {what} >= {minimum}", default)


def env_choice(name: str, choices: tuple[str, ...], default: str) -> str:
    """One of `choices` (lower case; the variable's case does not matter)."""
    return env_value(name, lambda text: text.lower() if text.lower() in choices else None,
                     f"one of {', '.join(choices)}", default)


def env_level(name: str, top: int, what: str) -> int:
    """A level 0..`top` (0 when unset), or a yes/no word: on is 1, off 0."""
    text = env_text(name)
    if text is None:
        return 0
    if _WHOLE_NUMBER.fullmatch(text) and int(text) <= top:
        return int(text)
    flag = parse_flag(text)
    if flag is None:
        levels = ", ".join(str(n) for n in range(top)) + f" or {top}"
        raise invalid(name, text, f"{levels} (or a yes/no word, {FLAG_WORDS}, which mean 1/0)", what)
    return int(flag)


def env_optional_flag(name: str) -> bool | None:
    """A yes/no variable whose unset (or blank) means "decide yourself": True,
    False, or None when unset (`ACCY_PROGRESS`: on a terminal only)."""
    return env_value(name, parse_flag, FLAG_VALUES, None)
