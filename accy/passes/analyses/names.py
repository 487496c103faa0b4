"""Names made from the user's function names: kernel symbols and file names.

A function may be named anything MLIR can quote (`@"../../x"`, `@"/etc/x"`,
a name of 245 characters), and its name becomes the names of its kernels
(`{func}_k{index}_{kind}`, then `_init`/`_body` for `accy.iterate` and
suffixes of staged kernels) and of the files of `ACCY_DUMP_DIR` and
`ACCY_OVERRIDE_DIR`. `safe_symbol` makes such a name an identifier every
driver and file system takes: characters other than [A-Za-z0-9_] become
`_`, and a name that had any, or was longer than `SYMBOL_LIMIT` (it is cut
there), gets `_` and 8 hex digits of a hash of the whole name, so two
different names stay two names. A name that is already an identifier of at
most `SYMBOL_LIMIT` characters is kept as it is.

The limit leaves room under the 255 characters past which PoCL aborts (and
under file systems' 255-byte names) for the suffixes added after (each
nesting level of `accy.iterate` is shortened again, so 15 of them stay
short too).
"""

from __future__ import annotations

import hashlib
import re

#: The most characters of a kernel name before its staging suffixes.
SYMBOL_LIMIT = 160
_HASH_DIGITS = 8
_UNSAFE = re.compile(r"[^A-Za-z0-9_]")


def safe_symbol(name: str, limit: int = SYMBOL_LIMIT) -> str:
    """`name` as an identifier of at most `limit` characters (module docstring)."""
    if len(name) <= limit and re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
        return name
    digest = hashlib.sha256(name.encode()).hexdigest()[:_HASH_DIGITS]
    stem = _UNSAFE.sub("_", name)
    if not stem or stem[0].isdigit():
        stem = "_" + stem
    return f"{stem[: limit - _HASH_DIGITS - 1]}_{digest}"
