"""The bytecode of the methods `dataclasses` writes for xDSL's and accy's
classes, kept beside accy's own bytecode, so a fresh process does not
compile them again.

Why: `@dataclass` makes a class's `__init__`, `__repr__`, `__eq__`,
`__hash__` (and a frozen class's `__setattr__`, `__delattr__`) by writing
their source and `exec`-ing it. xDSL's attributes, constraints and op
definitions are frozen dataclasses, so loading its dialects and accy's
compiles ~1,500 such functions (~900 distinct texts): 120-150 ms of a cold
compile's ~700 (2-core AMD EPYC, the demo MLP on llvm), the largest single
part of what a fresh process spends before its first kernel. Python keeps
a module's bytecode in `__pycache__`; nothing keeps these.

`install()` (before the first load of xDSL: accy/dialects/lazy_formats.py
and the runtime's `__init__` call it) gives the `dataclasses` module an
`exec` of its own: a source text that a dataclass of an `xdsl.` or `accy.`
module makes is compiled once per text (`compile(text, "<string>",
"exec")`, what `exec` of a string does) and kept by its digest; any other
`exec` is the builtin's (no future feature of this module's: `dont_inherit`). The first such call reads the bundle of code
objects an earlier process wrote (`BUNDLE`, in this package's `__pycache__`,
one per bytecode version); at exit a process that compiled new texts
writes the bundle again with them, unless Python writes no bytecode
(`sys.dont_write_bytecode`, `PYTHONDONTWRITEBYTECODE`). The code objects are
those `exec` would have compiled, run with the same globals and locals: the
classes are the same.

The bundle is bytecode, trusted as Python trusts the `.pyc` files beside it:
it is read only if it is a regular file of this user (or root) that no one
else may write, and a bundle that is not a dict of digests to code objects
is ignored. It is not part of accy's compile cache: a cold compile (an
empty `ACCY_CACHE_DIR`) of an installed accy finds it, as it finds the
`.pyc` files.
"""

from __future__ import annotations

import atexit
import builtins
import dataclasses
import hashlib
import marshal
import os
import stat
import sys
import threading
import types
from pathlib import Path
from typing import Any

#: The modules whose dataclasses' methods are kept (made at every start; a
#: user's own classes are left to the builtin `exec`).
PACKAGES = ("xdsl.", "accy.")
#: Where the bundle is: one per bytecode version (a code object is valid
#: only for the Python that wrote it).
BUNDLE = Path(__file__).parent / "__pycache__" / f"dataclass-methods.{sys.implementation.cache_tag}.bin"
#: A bundle past this many texts (xDSL versions come and go) is written
#: again with only the texts its process used.
MAX_TEXTS = 20_000

_lock = threading.Lock()
_codes: dict[bytes, types.CodeType] | None = None  # None: the bundle not read yet
_used: set[bytes] = set()
_compiled = 0  # texts this process compiled (not in the bundle it read)


def install() -> None:
    """Makes `dataclasses` compile the methods of xDSL's and accy's classes
    through the bundle (idempotent)."""
    if getattr(dataclasses, "exec", None) is _exec:
        return
    dataclasses.exec = _exec  # type: ignore[attr-defined]  # a module global, found before the builtin
    atexit.register(_write)


def _exec(source: Any, globals: dict[str, Any] | None = None, locals: Any = None) -> None:
    if isinstance(source, str) and str((globals or {}).get("__name__", "")).startswith(PACKAGES):
        source = _code(source)
    builtins.exec(source, globals, locals)


def _code(source: str) -> types.CodeType:
    global _codes, _compiled
    digest = hashlib.blake2b(source.encode(), digest_size=16).digest()
    with _lock:
        if _codes is None:
            _codes = _read()
        _used.add(digest)
        code = _codes.get(digest)
        if code is None:
            # As `exec` of the text in `dataclasses` (no future features: not this module's annotations).
            code = _codes[digest] = compile(source, "<string>", "exec", dont_inherit=True)
            _compiled += 1
        return code


def _read() -> dict[bytes, types.CodeType]:
    """The bundle an earlier process wrote, or {} (none, not trusted, or not one)."""
    try:
        fd = os.open(BUNDLE, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except OSError:
        return {}
    try:
        info = os.fstat(fd)
        if (
            not stat.S_ISREG(info.st_mode)
            or info.st_uid not in (os.getuid(), 0)
            or info.st_mode & (stat.S_IWGRP | stat.S_IWOTH)
        ):
            return {}
        with os.fdopen(os.dup(fd), "rb") as f:
            codes = marshal.loads(f.read())
    except (OSError, EOFError, ValueError, TypeError):
        return {}
    finally:
        os.close(fd)
    if not isinstance(codes, dict) or not all(
        isinstance(k, bytes) and isinstance(c, types.CodeType) for k, c in codes.items()
    ):
        return {}
    return codes


def _write() -> None:
    """At exit: the bundle with this process's new texts, if it compiled any."""
    with _lock:
        if not _compiled or _codes is None or sys.dont_write_bytecode:
            return
        codes = _codes if len(_codes) <= MAX_TEXTS else {k: _codes[k] for k in _used}
        payload = marshal.dumps(codes)
    temporary = BUNDLE.with_name(f"{BUNDLE.name}.{os.getpid()}.tmp")
    try:
        BUNDLE.parent.mkdir(exist_ok=True)
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o644)
        with os.fdopen(fd, "wb") as f:
            f.write(payload)
        os.replace(temporary, BUNDLE)
    except OSError:  # a folder this user may not write: as Python, go on without
        try:
            temporary.unlink()
        except OSError:
            pass


def stats() -> dict[str, int]:
    """Texts held, used and compiled by this process."""
    with _lock:
        return {"held": len(_codes or {}), "used": len(_used), "compiled": _compiled}
