"""Kernel sources on disk, for debugging: `ACCY_DUMP_DIR` and `ACCY_OVERRIDE_DIR`.

Every source a device builds (the OpenCL C program of a function, the LLVM
IR of each kernel) has a stable file name: what it holds, then a hash of the
generated text (`main-3f2a9c01b4de.cl`, `main_k0_elementwise-9b1e....ll`),
so a name always means the same generated source.

- `ACCY_DUMP_DIR=DIR` writes each source into DIR under that name as the
  device builds it (a temporary file renamed over the name: a link planted
  there is replaced, never written through).
- `ACCY_OVERRIDE_DIR=DIR` makes the device build DIR/<name> instead of the
  generated source when that file exists, with an `AccyOverrideWarning`
  naming it: dump, edit, copy the file there, and run again. The file must
  be a regular file of the user (not a link) in a folder that neither group
  nor others can write.

While either is set, the compile cache (compile_cache.py) is not used, so
every kernel is generated (and dumped, or overridden) afresh.
"""

from __future__ import annotations

import hashlib
import os
import stat
import warnings
from pathlib import Path

from accy.env import env_path
from accy.runtime.disk_cache import check_trusted

# The passes' helpers (which load xDSL) are imported only when a folder is set.

DUMP_ENV = "ACCY_DUMP_DIR"
OVERRIDE_ENV = "ACCY_OVERRIDE_DIR"


class AccyOverrideWarning(UserWarning):
    """A kernel source from `ACCY_OVERRIDE_DIR` replaced the generated one."""


def source_name(stem: str, extension: str, text: str) -> str:
    """The stable file name of generated source `text`. `stem` (a function's
    name: `@"../../x"` is one) is made a plain identifier first, so the
    name never leaves its folder."""
    from accy.passes.analyses.names import safe_symbol

    return f"{safe_symbol(stem)}-{hashlib.sha256(text.encode()).hexdigest()[:12]}.{extension}"


def dumping_or_overriding() -> bool:
    """Whether `ACCY_DUMP_DIR` or `ACCY_OVERRIDE_DIR` is set."""
    return bool(env_path(DUMP_ENV) or env_path(OVERRIDE_ENV))


def kernel_source(stem: str, extension: str, text: str) -> str:
    """The source to build for generated `text`: written to `ACCY_DUMP_DIR`,
    replaced by the file of the same name in `ACCY_OVERRIDE_DIR` if there is one."""
    dump, override = env_path(DUMP_ENV), env_path(OVERRIDE_ENV)
    if not dump and not override:
        return text
    from accy.passes.pass_manager import write_file

    name = source_name(stem, extension, text)
    if dump:
        path = Path(dump) / name
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            write_file(path, text)  # a link planted at the name is replaced, not followed
        except OSError as e:
            raise ValueError(f"{DUMP_ENV}={dump}: cannot write {path}: {e.strerror or e}") from None
    if override:
        path = Path(override) / name
        replacement = _read_override(path)
        if replacement is not None:
            warnings.warn(
                f"accy: building {path} instead of the generated source ({OVERRIDE_ENV})",
                AccyOverrideWarning,
                stacklevel=2,
            )
            return replacement
    return text


def _read_override(path: Path) -> str | None:
    """The text of override file `path`, None when there is none. What
    accy builds must be the user's: a link, a file of another user or a
    folder others can write is refused (ValueError naming it)."""
    try:
        check_trusted(path.parent, os.stat(path.parent))
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except FileNotFoundError:
        return None
    except OSError as e:
        raise ValueError(f"{OVERRIDE_ENV}: not reading {path}: {e.strerror or e}") from None
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode) or info.st_uid != os.geteuid():
        os.close(fd)
        raise ValueError(f"{OVERRIDE_ENV}: not reading {path}: it is not a regular file of this user")
    with os.fdopen(fd) as f:
        return f.read()
