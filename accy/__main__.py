"""`python -m accy`: what accy's command-line tools are, and `--version`."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from accy.cli.version import VersionAction

#: accy's command-line tools: what each does, and an example.
TOOLS = {
    "accy-opt": ("parse .mlir, run a pass pipeline on it, print the result", "accy-opt prog.mlir -p canonicalize,kernelize"),
    "accy-run": ("compile a function of an .mlir file for a device and run it", "accy-run prog.mlir --device llvm --check"),
}


def _parser() -> argparse.ArgumentParser:
    tools = "".join(f"  {name}  {what}\n              {example}\n" for name, (what, example) in TOOLS.items())
    p = argparse.ArgumentParser(
        prog="python -m accy",
        description="accy: a pass-managed tensor compiler toolkit on xDSL.",
        epilog=f"its tools (each takes --help and --version; accy-opt --list-passes lists the passes):\n{tools}",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--version", action=VersionAction)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    """Prints the usage (and exits 0), or the versions for `--version`."""
    parser = _parser()
    parser.parse_args(argv)
    parser.print_help()
    return 0


if __name__ == "__main__":
    sys.exit(main())
