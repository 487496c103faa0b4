"""Debug output by environment variable, as tinygrad does it.

`ACCY_DEBUG=1` prints what each compile produced (kernels, kinds, launch
sizes, fallbacks, peak bytes); `2` adds the generated kernel source; `3` adds
the IR after every pass of the compile pipeline. Everything goes to stderr.
"""

from __future__ import annotations

import os
import sys

DEBUG = int(os.environ.get("ACCY_DEBUG", "0") or 0)


def debug(level: int, text: str) -> None:
    if DEBUG >= level:
        sys.stderr.write(text if text.endswith("\n") else text + "\n")
