"""What `--version` prints, for `accy-opt`, `accy-run` and `python -m accy`:
accy's version and those of what it runs on (xDSL, llvmlite and its LLVM,
numpy, pyopencl), and the OpenCL platforms found, each with its version.

accy's version (`accy.__version__`) is its package metadata's, which is
pyproject.toml's `version` (read from pyproject.toml itself in a source tree
that is not installed): the number is written down once. What the report
needs is imported when it is made, so that importing this module (as both
tools do) costs their start-up nothing: not even importlib.metadata (~70 ms
cold), which only `accy.__version__` and `--version` load.
"""

from __future__ import annotations

import argparse
import threading
from pathlib import Path
from typing import Any

#: How long `--version` waits for the OpenCL driver to list its platforms.
OPENCL_TIMEOUT_S = 10.0
#: What the report says when no OpenCL platform is found.
NO_PLATFORMS = "none"


def accy_version() -> str:
    """accy's version: its installed metadata's, else pyproject.toml's
    beside the package (a source tree on `sys.path`), else `unknown`."""
    from importlib import metadata

    try:
        return metadata.version("accy")
    except metadata.PackageNotFoundError:
        pass
    import tomllib

    pyproject = Path(__file__).resolve().parents[2] / "pyproject.toml"
    try:
        return str(tomllib.loads(pyproject.read_text())["project"]["version"])
    except (OSError, KeyError, tomllib.TOMLDecodeError):
        return "unknown"


def __getattr__(name: str) -> str:
    # `__version__` is looked up when asked for (accy/__init__.py's lazy table names this module).
    if name == "__version__":
        return accy_version()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _installed(name: str) -> str:
    """The version of the installed distribution `name`, or `not installed`."""
    from importlib import metadata

    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return "not installed"


def _llvm() -> str:
    """llvmlite's version and that of the LLVM it is built on."""
    found = _installed("llvmlite")
    try:
        import llvmlite.binding as llvm
    except Exception:  # a broken llvmlite: its metadata still says which
        return found
    return f"{found} (LLVM {'.'.join(map(str, llvm.llvm_version_info))})"


def opencl_platforms(timeout_s: float = OPENCL_TIMEOUT_S) -> str:
    """The OpenCL platforms pyopencl finds, as `name (version)` joined by
    `; `, or `none`. Never raises: no pyopencl, no ICD loader or no
    platform is `none`; a driver that does not answer within `timeout_s`
    is said so (the query runs in a daemon thread, so a hung driver holds
    up neither the report nor the exit)."""
    found: list[str] = []

    def query() -> None:
        try:
            import pyopencl as cl

            found.extend(f"{p.name.strip()} ({p.version.strip()})" for p in cl.get_platforms())
        except Exception:  # no pyopencl or no ICD loader (ImportError), no platform (the loader raises cl.Error)
            pass

    worker = threading.Thread(target=query, name="accy-version-opencl", daemon=True)
    worker.start()
    worker.join(timeout_s)
    if worker.is_alive():
        return f"unknown (the OpenCL driver did not list its platforms within {timeout_s:g} s)"
    return "; ".join(found) or NO_PLATFORMS


def version_report() -> str:
    """The lines `--version` prints (ending in a newline)."""
    lines = {
        "accy": accy_version(),
        "xdsl": _installed("xdsl"),
        "llvmlite": _llvm(),
        "numpy": _installed("numpy"),
        "pyopencl": _installed("pyopencl"),
        "OpenCL platforms": opencl_platforms(),
    }
    return "".join(f"{name}: {value}\n" for name, value in lines.items())


class VersionAction(argparse.Action):
    """`--version` for an argparse parser: prints `version_report()` and exits 0."""

    def __init__(self, option_strings: list[str], dest: str = argparse.SUPPRESS, **kwargs: Any) -> None:
        kwargs.setdefault("help", "print the versions of accy, xDSL, llvmlite, numpy and the OpenCL platforms, and exit")
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, **kwargs)

    def __call__(self, parser: argparse.ArgumentParser, *_: object) -> None:
        print(version_report(), end="")
        parser.exit()


class ReportFormat(str):
    """xDSL's `--version` (`xDSLOptMain.version_format`, which its
    VersionAction prints as `version_format.format(xdsl_version=...)`)
    made accy's report, computed only when printed."""

    def format(self, *args: object, **kwargs: object) -> str:
        return version_report().rstrip("\n")


#: `accy-opt`'s `xDSLOptMain.version_format`.
VERSION_FORMAT = ReportFormat("accy version report")
