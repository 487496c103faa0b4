"""The text of a program as `parse_module` and `accy.compile` read it.

Kept apart from the parser (parse.py) and free of xDSL, so that a compile
whose result is in the compile cache reads its program without loading
xDSL's dialects (accy/runtime/source_cache.py).
"""

from __future__ import annotations

import os
from pathlib import Path


def read_source(text_or_path: str | os.PathLike[str]) -> tuple[str, str]:
    """The program's text and the name diagnostics give it: a path (an
    `os.PathLike`, or a one-line str naming a file or ending in `.mlir`) is
    read, and named as given; any other str is the text itself, named
    `<input>`. FileNotFoundError for a path that is no file."""
    if isinstance(text_or_path, os.PathLike) or (
        "\n" not in text_or_path and (text_or_path.endswith(".mlir") or os.path.isfile(text_or_path))
    ):
        path = Path(text_or_path)
        if not path.is_file():
            raise FileNotFoundError(f"no such file: '{path}'")
        return path.read_text(), str(path)
    return str(text_or_path), "<input>"
