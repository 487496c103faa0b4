"""Compiled functions found by their source text, before anything is parsed.

The compile cache (compile_cache.py) keys a function by the module as the
device compiles it, which takes parsing the text, preparing the function
and printing it: most of a warm process's time, and far more than a
lookup. This index sits in front of it. A text that was compiled before
maps to the compile cache's key and to the function's signature
(`TensorSpec`s), so that `accy.compile` of a text it has seen thaws the
payload and builds an `Executable` that parses the text only if asked for
its IR (`Executable.source`, `compare_with_reference`).

The source key holds what the compile key is made from, less the module:
accy's code digest and library versions (`code_fingerprint`), the device's
`source_identity()` (its `cache_identity()` and whatever its profile is
made from), the function, `strict` and the text itself; the module as
compiled is a function of these. Entries are kept in two places:

- on disk, in the `compiled/sources` folder of the disk cache (an entry is a
  small JSON document; the payload stays in `compiled`), so that a new
  process skips xDSL altogether;
- in memory, per device (`RecentCompiles`): the entry and the payload
  bytes, so that compiling the same text again in a process costs a thaw
  (well under a millisecond for small programs) and no disk read. It holds
  bytes only, never a program or an executable: what `accy.compile`
  returns is the caller's, and its device memory and programs go when the
  caller drops it. Bounded by `$ACCY_COMPILE_MEMORY_ENTRIES` entries
  (default 256; 0 turns it off) and `$ACCY_COMPILE_MEMORY_BYTES` bytes
  (default 64 MiB), least recently used dropped first.

Never used for a `ModuleOp` (a module object may change after it is
given), a function with host fallbacks (never in the compile cache), at
`ACCY_DEBUG=3` or while kernel sources are dumped or overridden.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections import OrderedDict
from dataclasses import dataclass

from accy.env import env_int
from accy.runtime.disk_cache import DiskCache
from accy.runtime.signature import TensorSpec

#: The compile cache's own folder holds the index (its entries are not programs).
NAMESPACE = "compiled/sources"
MEMORY_ENTRIES_ENV = "ACCY_COMPILE_MEMORY_ENTRIES"
MEMORY_BYTES_ENV = "ACCY_COMPILE_MEMORY_BYTES"
DEFAULT_MEMORY_ENTRIES = 256
DEFAULT_MEMORY_BYTES = 64 << 20
#: The first bytes of an entry; bumped when its layout changes.
ENTRY_MAGIC = b"ACCYSOURCE1\n"


@dataclass(frozen=True)
class SourceEntry:
    """What a source key leads to: the compile cache's key of the function,
    its name as the module spells it, and its signature. It names its own
    source key (`source_key`): an entry copied over another's is a miss,
    never the other program."""

    source_key: str
    compile_key: str
    fn: str
    inputs: tuple[TensorSpec, ...]
    outputs: tuple[TensorSpec, ...]

    def to_bytes(self) -> bytes | None:
        """The entry as data; None when a type's dtype does not round-trip (bf16)."""
        specs = [[s.to_json() for s in self.inputs], [s.to_json() for s in self.outputs]]
        if any(s is None for side in specs for s in side):
            return None
        doc = {
            "source_key": self.source_key,
            "compile_key": self.compile_key,
            "fn": self.fn,
            "inputs": specs[0],
            "outputs": specs[1],
        }
        return ENTRY_MAGIC + json.dumps(doc).encode()

    @staticmethod
    def from_bytes(data: bytes) -> SourceEntry | None:
        """The entry `to_bytes` wrote; None for anything else (a miss)."""
        try:
            if not data.startswith(ENTRY_MAGIC):
                return None
            doc = json.loads(data[len(ENTRY_MAGIC) :])
            source, key, fn = doc["source_key"], doc["compile_key"], doc["fn"]
            if not all(isinstance(v, str) for v in (source, key, fn)):
                return None
            inputs = tuple(TensorSpec.from_json(s) for s in doc["inputs"])
            outputs = tuple(TensorSpec.from_json(s) for s in doc["outputs"])
            return SourceEntry(source, key, fn, inputs, outputs)
        except Exception:  # anything malformed is a miss: the text is parsed and compiled
            return None


def source_key(device: str, text: str, fn: str, strict: bool) -> str:
    """The key of function `fn` of the program `text` on the device whose
    source identity is `device` (see the module docstring)."""
    from accy.runtime.compile_cache import code_fingerprint

    h = hashlib.sha256()
    for part in (code_fingerprint(), "source", device, fn, str(strict), text):
        h.update(part.encode())
        h.update(b"\0")
    return h.hexdigest()


def memory_bounds() -> tuple[int, int]:
    """(`$ACCY_COMPILE_MEMORY_ENTRIES`, `$ACCY_COMPILE_MEMORY_BYTES`), else the defaults."""
    return (
        env_int(MEMORY_ENTRIES_ENV, DEFAULT_MEMORY_ENTRIES, "entries", minimum=0),
        env_int(MEMORY_BYTES_ENV, DEFAULT_MEMORY_BYTES, "bytes", minimum=0),
    )


class RecentCompiles:
    """A device's recent compiles in memory: (entry, payload bytes) by
    source key, bounded by entries and bytes (see the module docstring)."""

    def __init__(self, max_entries: int | None = None, max_bytes: int | None = None) -> None:
        entries, nbytes = memory_bounds()
        self.max_entries = entries if max_entries is None else max_entries
        self.max_bytes = nbytes if max_bytes is None else max_bytes
        self.nbytes = 0
        self.hits = 0
        self._entries: OrderedDict[str, tuple[SourceEntry, bytes]] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: str) -> tuple[SourceEntry, bytes] | None:
        with self._lock:
            found = self._entries.get(key)
            if found is not None:
                self._entries.move_to_end(key)
                self.hits += 1
            return found

    def put(self, key: str, entry: SourceEntry, payload: bytes) -> None:
        with self._lock:
            old = self._entries.pop(key, None)
            if old is not None:
                self.nbytes -= len(old[1])
            if self.max_entries < 1 or len(payload) > self.max_bytes:
                return
            self._entries[key] = (entry, payload)
            self.nbytes += len(payload)
            while len(self._entries) > self.max_entries or self.nbytes > self.max_bytes:
                _, (_, dropped) = self._entries.popitem(last=False)
                self.nbytes -= len(dropped)

    def __len__(self) -> int:
        return len(self._entries)


def sources_cache() -> DiskCache:
    """A handle on the source index's disk store (found from the environment when first used)."""
    return DiskCache(NAMESPACE)
