"""`accy-opt --verify-diagnostics`, as mlir-opt's: the input says, in
comments, which diagnostics it expects, and the tool checks that exactly
those were produced (MLIR's `SourceMgrDiagnosticVerifierHandler`,
mlir/lib/IR/Diagnostics.cpp). This is how a verifier, or a pass's refusals,
are tested:

    // expected-error @+1 {{'accy.exp' op result type}}
    %0 = "accy.exp"(%x) : (tensor<3xf32>) -> tensor<4xf32>
    %1 = "accy.neg"(%0) : ...   // expected-remark {{written on its own line}}

An annotation is `expected-<kind>[-re] [@<where>] {{<text>}}` at the end of
a line:

- kind: `error`, `warning`, `remark` or `note` (a note attached to another
  diagnostic is matched on its own, at its own place);
- where: nothing, the annotation's own line; `@+N` / `@-N`, N lines below /
  above it; `@above` / `@below`, the nearest line above / below that is not
  an annotation (several `@below`s stack onto one line); `@unknown`, a
  diagnostic with no place in the input;
- text: the diagnostic's message contains it; with `-re`, each `{{...}}`
  inside it is a regular expression (Python's `re`) and the rest literal.

A diagnostic matches an expectation of its line and kind whose text it
contains (one expectation may match several). Each diagnostic that matches
none is an "unexpected error: ..." at its place (or "'warning' diagnostic
emitted when expecting a 'error'" at an annotation of the same line and text
but another kind); each expectation that matched nothing is "expected error
"..." was not produced" at the annotation. Any of these fails the check
(exit status 1, each listed with its line); when none occurs, nothing about
the diagnostics is printed. With `--split-input-file` each chunk is checked
against its own annotations.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from accy.cli.located import Located, Source

#: MLIR's annotation, with `@unknown` (newer MLIR) and Python's regex syntax.
_ANNOTATION = re.compile(
    r"expected-(?P<kind>error|note|remark|warning)(?P<re>-re)? *"
    r"(?:@(?P<where>[+-][0-9]+|above|below|unknown))? *\{\{(?P<text>.*)\}\}\s*$"
)
#: A comment that starts as an annotation does: one that does not parse is reported, not ignored.
_LOOKS_LIKE = re.compile(r"//\s*(?P<word>expected-(?:error|note|remark|warning))\b")


@dataclass
class Expected:
    """One annotation: the diagnostic it expects (`line` None: one with no
    place), where it is written (`at_line`, `at_col`), whether one matched."""

    severity: str
    line: int | None
    text: str
    pattern: re.Pattern[str]
    at_line: int
    at_col: int
    matched: bool = field(default=False)


def _pattern(text: str, regex: bool) -> re.Pattern[str]:
    if not regex:
        return re.compile(re.escape(text))
    parts = re.split(r"\{\{(.*?)\}\}", text)
    # Odd parts are the {{regex}} pieces; the rest is literal text.
    return re.compile("".join(p if i % 2 else re.escape(p) for i, p in enumerate(parts)))


def expectations(source: Source) -> tuple[list[Expected], list[Located]]:
    """The annotations of `source`, and a diagnostic for each that does not
    parse (an `expected-*` word whose `{{...}}` is missing, a bad regex)."""
    found: list[Expected] = []
    malformed: list[Located] = []
    pending_below: list[Expected] = []
    lines = source.text.split("\n")
    # The number (from 1, in the file) of the last line without an annotation (MLIR: the first line at first).
    last_plain = source.line_offset + 1
    for index, line_text in enumerate(lines):
        number = index + 1 + source.line_offset
        m = _ANNOTATION.search(line_text)
        if m is None:
            looks = _LOOKS_LIKE.search(line_text)
            if looks is not None:
                word = looks["word"]
                malformed.append(
                    source.at_line(
                        "error",
                        f"cannot read this {word} annotation: write {word} {{{{text}}}} at the end of the line, "
                        "optionally with @+N, @-N, @above, @below or @unknown before the braces",
                        number,
                        looks.start("word") + 1,
                    )
                )
            for e in pending_below:
                e.line = number
            pending_below.clear()
            last_plain = number
            continue
        try:
            pattern = _pattern(m["text"], m["re"] is not None)
        except re.error as err:
            malformed.append(source.at_line("error", f"the regular expression of this annotation is invalid: {err}", number, m.start() + 1))
            continue
        where = m["where"]
        target: int | None = number
        if where == "unknown":
            target = None
        elif where == "above":
            target = last_plain
        elif where is not None and where[0] in "+-":
            target = number + int(where)
        e = Expected(m["kind"], target, m["text"], pattern, number, m.start() + 1)
        if where == "below":
            # Dangling (no plain line below): a line no diagnostic is on.
            e.line = len(lines) + source.line_offset + 1
            pending_below.append(e)
        found.append(e)
    return found, malformed


def check(source: Source, produced: list[Located]) -> list[Located]:
    """What is wrong with the diagnostics `produced` for `source`, measured
    against its annotations (module docstring): empty when they agree."""
    expected, problems = expectations(source)
    for d in (x for p in produced for x in (p, *p.notes)):
        on_line = [e for e in expected if e.line == d.line and e.pattern.search(d.message)]
        same = [e for e in on_line if e.severity == d.severity]
        if same:
            chosen = next((e for e in same if not e.matched), same[0])
            chosen.matched = True
            continue
        if on_line:
            near = on_line[0]
            problems.append(
                source.at_line(
                    "error", f"'{d.severity}' diagnostic emitted when expecting a '{near.severity}'", near.at_line, near.at_col
                )
            )
        else:
            problems.append(source.at_line("error", f"unexpected {d.severity}: {d.message}", d.line, d.col))
    for e in expected:
        if not e.matched:
            problems.append(source.at_line("error", f'expected {e.severity} "{e.text}" was not produced', e.at_line, e.at_col))
    return problems
