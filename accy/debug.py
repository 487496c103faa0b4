"""Debug output by environment variable, as tinygrad does it.

`ACCY_DEBUG=1` prints what each compile produced (kernels, kinds, launch
sizes, fallbacks, peak bytes); `2` adds the generated kernel source; `3` adds
the IR after every pass of the compile pipeline. Everything goes to stderr.
`yes`/`true`/`on` mean 1 and `no`/`false`/`off` (or empty) mean 0; any
other value, a level past 3 included, is an error (accy/env.py).

The variable is read when debug output is asked for, not at import: a value
that is neither a level nor a yes/no word is an error then, naming the
variable, and `import accy` never fails because of it.
"""

from __future__ import annotations

import sys

from accy.env import env_level

DEBUG_ENV = "ACCY_DEBUG"
#: The highest level: the IR after every pass.
TOP_LEVEL = 3


def debug_level() -> int:
    """The level `ACCY_DEBUG` asks for (0 when unset); ValueError naming the
    variable for a value that is neither a level 0-3 nor a yes/no word."""
    return env_level(DEBUG_ENV, TOP_LEVEL, "a debug level")


def debug(level: int, text: str) -> None:
    """Writes `text` to stderr when `ACCY_DEBUG` is at least `level`."""
    if debug_level() >= level:
        sys.stderr.write(text if text.endswith("\n") else text + "\n")
