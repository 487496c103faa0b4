"""Command-line tools: `accy-opt` (accy.cli.opt) and `accy-run` (accy.cli.run)."""

import time

#: When the tools' package began to load, before a tool's own imports:
#: `accy-run --stats`'s import_s counts from here.
STARTED = time.perf_counter()
