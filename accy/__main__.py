"""`python -m accy`: what accy's command-line tools are, and `--version`."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from accy.cli.version import VersionAction

#: accy's command-line tools: what each does, and an example.
TOOLS = {
    "accy-opt": (
        "parse .mlir, run a pass pipeline on it, print the result",
        "accy-opt prog.mlir -p canonicalize,kernelize",
    ),
    "accy-run": (
        "compile a function of an .mlir file for a device and run it",
        "accy-run prog.mlir --device llvm --check",
    ),
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
    sub = p.add_subparsers(dest="command", metavar="cache {info,clear}")
    cache = sub.add_parser("cache", help="show (info) or empty (clear) the disk cache ($ACCY_CACHE_DIR)")
    cache.add_argument("action", choices=("info", "clear"))
    return p


def main(argv: Sequence[str] | None = None) -> int:
    """Prints the usage (and exits 0), the versions for `--version`, or
    what `cache info` / `cache clear` say of the disk cache."""
    parser = _parser()
    args = parser.parse_args(argv)
    if args.command == "cache":
        return _cache(args.action)
    parser.print_help()
    return 0


def _cache(action: str) -> int:
    from accy.runtime import disk_cache

    root = disk_cache.cache_root()
    if root is None:
        print(f"the disk cache is off (${disk_cache.CACHE_DIR_ENV})")
        return 0
    if action == "clear":
        n = disk_cache.clear(root) if root.is_dir() else 0
        print(f"removed {n} entries from {root}")
        return 0
    used = disk_cache.usage(root) if root.is_dir() else {}
    total = sum(b for _, b in used.values())
    print(
        f"{root}: {sum(n for n, _ in used.values())} entries, {total:,} bytes "
        f"(bound {disk_cache.max_bytes():,}, ${disk_cache.MAX_BYTES_ENV})"
    )
    for name, (n, b) in sorted(used.items()):
        print(f"  {name}/: {n} entries, {b:,} bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
