"""The fenced code blocks of a markdown page, for tests that run a page's
examples (tests/unit/test_docs_run.py).

A block is what lies between a fence line (three backticks and an info
string: its first word is the block's language) and the closing fence.
Blocks come in the order the page gives them, each with the line of its
opening fence, so a failure names the page and the line.

A block whose first line is a comment `# file: NAME` (`// file: NAME` in
MLIR) is part of a file the reader writes: `write_files` concatenates the
blocks of each file in page order into a folder.

A `console` block shows a terminal: lines starting with `$ ` are commands,
the lines after each, until the next command, what it prints (`commands`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

_FENCE = re.compile(r"^(\s*)```(.*)$")
_FILE = re.compile(r"^\s*(?:#|//)\s*file:\s*(\S+)\s*$")


@dataclass(frozen=True)
class Block:
    """One fenced code block of a page."""

    page: Path
    line: int
    """The 1-based line of the opening fence."""
    language: str
    """The info string's first word ('' when it has none)."""
    text: str
    """The block's lines, the fence's indentation removed, newline-terminated."""

    @property
    def file(self) -> str | None:
        """The file this block is part of (its first line `# file: NAME`), or None."""
        first = self.text.split("\n", 1)[0]
        match = _FILE.match(first)
        return match.group(1) if match else None

    @property
    def where(self) -> str:
        return f"{self.page}:{self.line}"

    def code(self) -> object:
        """The block compiled as Python, its line numbers the page's (a
        traceback shows the page's line), with no `__future__` feature of
        this module's: as a reader's interpreter runs it."""
        return compile("\n" * self.line + self.text, str(self.page), "exec", dont_inherit=True)


def blocks(page: Path, language: str | None = None) -> list[Block]:
    """The fenced blocks of `page` in order; only those of `language` when given.
    A fence left open is an error (the page renders wrongly too)."""
    found: list[Block] = []
    lines = page.read_text().splitlines()
    i = 0
    while i < len(lines):
        match = _FENCE.match(lines[i])
        if match is None:
            i += 1
            continue
        indent, info = match.group(1), match.group(2).strip()
        start = i
        body: list[str] = []
        i += 1
        while i < len(lines) and lines[i].strip() != "```":
            body.append(lines[i][len(indent) :] if lines[i].startswith(indent) else lines[i])
            i += 1
        if i == len(lines):
            raise ValueError(f"{page}:{start + 1}: code block never closed")
        found.append(Block(page, start + 1, info.split()[0] if info else "", "".join(f"{b}\n" for b in body)))
        i += 1
    return [b for b in found if language is None or b.language == language]


def write_files(page_blocks: list[Block], folder: Path) -> dict[str, Path]:
    """Writes every file the blocks make up (each file's blocks in order) into
    `folder`; returns them by name."""
    texts: dict[str, str] = {}
    for block in page_blocks:
        if block.file is not None:
            texts[block.file] = texts.get(block.file, "") + block.text
    written = {}
    for name, text in texts.items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        written[name] = path
    return written


def commands(block: Block) -> list[tuple[str, str | None]]:
    """The commands of a shell block, each with what it prints: a `console`
    block's output lines (None for an `sh` block, which shows none). Blank
    lines and comments of an `sh` block are not commands; a line ending in
    `\\` continues on the next."""
    out: list[tuple[str, str | None]] = []
    if block.language == "console":
        for line in block.text.splitlines():
            if line.startswith("$ "):
                out.append((line[2:], ""))
            elif out:
                out[-1] = (out[-1][0], f"{out[-1][1]}{line}\n")
            elif line.strip():
                raise ValueError(f"{block.where}: console block output before any `$ ` command")
        return out
    pending = ""
    for line in block.text.splitlines():
        if not pending and (not line.strip() or line.lstrip().startswith("#")):
            continue
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        out.append((pending + line, None))
        pending = ""
    return out
