"""Debug output by environment variable, as tinygrad does it.

`ACCY_DEBUG=1` prints what each compile produced (kernels, kinds, launch
sizes, fallbacks, peak bytes); `2` adds the generated kernel source; `3` adds
the IR after every pass of the compile pipeline. Everything goes to stderr.
`yes`/`true`/`on` mean 1 and `no`/`false`/`off` (or empty) mean 0.

The variable is read when debug output is asked for, not at import: a value
that is neither a level nor a yes/no word is an error then, naming the
variable, and `import accy` never fails because of it.
"""

from __future__ import annotations

import os
import sys

_WORDS = {"yes": 1, "true": 1, "on": 1, "no": 0, "false": 0, "off": 0, "": 0}


def debug_level() -> int:
    """The level `ACCY_DEBUG` asks for (0 when unset); ValueError naming the
    variable for a value that is neither an integer nor a yes/no word."""
    text = os.environ.get("ACCY_DEBUG")
    if not text:  # the common case, on every call of an executable: no more work than this
        return 0
    text = text.strip()
    if text.lower() in _WORDS:
        return _WORDS[text.lower()]
    try:
        return int(text)
    except ValueError:
        raise ValueError(f"ACCY_DEBUG={text!r} is not a debug level: use 0-3 (or yes/no, which mean 1/0)") from None


def debug(level: int, text: str) -> None:
    """Writes `text` to stderr when `ACCY_DEBUG` is at least `level`."""
    if debug_level() >= level:
        sys.stderr.write(text if text.endswith("\n") else text + "\n")
