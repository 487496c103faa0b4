"""Kernel sources on disk, for debugging: `ACCY_DUMP_DIR` and `ACCY_OVERRIDE_DIR`.

Every source a device builds (the OpenCL C program of a function, the LLVM
IR of each kernel) has a stable file name: what it holds, then a hash of the
generated text (`main-3f2a9c01b4de.cl`, `main_k0_elementwise-9b1e....ll`),
so a name always means the same generated source.

- `ACCY_DUMP_DIR=DIR` writes each source into DIR under that name as the
  device builds it.
- `ACCY_OVERRIDE_DIR=DIR` makes the device build DIR/<name> instead of the
  generated source when that file exists, with an `AccyOverrideWarning`
  naming it: dump, edit, copy the file there, and run again.

While either is set, the compile cache (compile_cache.py) is not used, so
every kernel is generated (and dumped, or overridden) afresh.
"""

from __future__ import annotations

import hashlib
import os
import warnings
from pathlib import Path

DUMP_ENV = "ACCY_DUMP_DIR"
OVERRIDE_ENV = "ACCY_OVERRIDE_DIR"


class AccyOverrideWarning(UserWarning):
    """A kernel source from `ACCY_OVERRIDE_DIR` replaced the generated one."""


def source_name(stem: str, extension: str, text: str) -> str:
    """The stable file name of generated source `text`."""
    return f"{stem}-{hashlib.sha256(text.encode()).hexdigest()[:12]}.{extension}"


def dumping_or_overriding() -> bool:
    """Whether `ACCY_DUMP_DIR` or `ACCY_OVERRIDE_DIR` is set."""
    return bool(os.environ.get(DUMP_ENV) or os.environ.get(OVERRIDE_ENV))


def kernel_source(stem: str, extension: str, text: str) -> str:
    """The source to build for generated `text`: written to `ACCY_DUMP_DIR`,
    replaced by the file of the same name in `ACCY_OVERRIDE_DIR` if there is one."""
    dump, override = os.environ.get(DUMP_ENV), os.environ.get(OVERRIDE_ENV)
    if not dump and not override:
        return text
    name = source_name(stem, extension, text)
    if dump:
        path = Path(dump) / name
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
        except OSError as e:
            raise ValueError(f"{DUMP_ENV}={dump}: cannot write {path}: {e.strerror or e}") from None
    if override:
        path = Path(override) / name
        if path.is_file():
            warnings.warn(
                f"accy: building {path} instead of the generated source ({OVERRIDE_ENV})",
                AccyOverrideWarning,
                stacklevel=2,
            )
            return path.read_text()
    return text
