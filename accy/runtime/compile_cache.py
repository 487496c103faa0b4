"""Compiled functions across processes: what `KernelDevice.prepare` made of a
function, kept on disk so that a second process skips kernelize and the
backend and goes straight to the device's own artifact cache.

An entry is keyed by everything the result depends on:

- accy's code: a digest of every source file of the `accy` package (taken
  once per process) and the versions of xDSL and llvmlite, so that any
  change to the compiler is a miss, never a stale program;
- the device: its class and `cache_identity()` (the LLVM device: the host's
  triple, CPU name and features);
- the module as the device compiles it: printed in generic form after
  `prepare_function` and with the complete target profile attached (large
  literals print as hex, so this stays cheap), the function's name and
  `strict`.

The payload is the device's (`KernelDevice.freeze` / `thaw`): the LLVM
device writes its host schedule and its kernels' LLVM IR, and `thaw` gets
the object code from its JIT cache. A program with host fallbacks is never
kept (a fallback holds tensor IR, and its kernelize printed remarks the user
must see on every compile). Entries live in the `compiled` namespace of the
disk cache (disk_cache.py: checksummed, atomic; `ACCY_CACHE_DIR=off` turns
it off). A payload that does not thaw (written by another Python, say) is a
miss: the function is compiled again and the entry rewritten.

This is where a persistent cache of tuned programs (an autotuner's results)
belongs: in the key, the tuning it was compiled with is already part of the
profile.
"""

from __future__ import annotations

import hashlib
import io
import threading
from importlib import metadata
from pathlib import Path

from xdsl.dialects.builtin import ModuleOp
from xdsl.printer import Printer

from accy.runtime.disk_cache import DiskCache

NAMESPACE = "compiled"

_fingerprint: str | None = None
_fingerprint_lock = threading.Lock()


def code_fingerprint() -> str:
    """A digest of accy's source files and of the versions of the libraries
    that shape its output (taken once per process)."""
    global _fingerprint
    with _fingerprint_lock:
        if _fingerprint is None:
            h = hashlib.sha256(source_digest(Path(__file__).resolve().parent.parent).encode())
            for dist in ("xdsl", "llvmlite"):
                try:
                    h.update(f"{dist}={metadata.version(dist)}\0".encode())
                except metadata.PackageNotFoundError:
                    h.update(f"{dist}=none\0".encode())
            _fingerprint = h.hexdigest()
        return _fingerprint


def source_digest(package: Path) -> str:
    """A digest of the names and contents of the `.py` files under `package`."""
    h = hashlib.sha256()
    for path in sorted(package.rglob("*.py")):
        h.update(str(path.relative_to(package)).encode() + b"\0")
        h.update(path.read_bytes())
        h.update(b"\0")
    return h.hexdigest()


def compile_key(device: str, module: ModuleOp, fn: str, strict: bool) -> str:
    """The key of function `fn` of `module` (prepared, profile attached) on
    the device whose identity is `device`."""
    text = io.StringIO()
    Printer(stream=text, print_generic_format=True).print_op(module)
    h = hashlib.sha256()
    for part in (code_fingerprint(), device, fn, str(strict), text.getvalue()):
        h.update(part.encode())
        h.update(b"\0")
    return h.hexdigest()


def compiled_cache() -> DiskCache:
    """A handle on the disk cache of compiled functions (its folder is found
    from the environment when first used)."""
    return DiskCache(NAMESPACE)
