"""The tuning store: what a search found, in the `tuning` namespace of
accy's disk cache (accy/runtime/disk_cache.py: checksummed, atomic, bounded
with the rest of the cache; `ACCY_CACHE_DIR=off` turns it off).

An entry is JSON (never pickled code): the fields written into the module's
target, the kinds searched, the untuned and tuned medians and every trial.
Its key is a digest of what the result depends on: accy's code and the
versions of xDSL and llvmlite (the compile cache's fingerprint), the space's
version and its candidates, the budget, the device (its class and
`cache_identity()`: the host CPU for LLVM, platform, device and driver for
OpenCL), the function and the module's text as prepared for it (its target
included). A store entry that does not decode is a miss: the search runs
again and writes it anew.
"""

from __future__ import annotations

import hashlib
import io
import json
from typing import TYPE_CHECKING, Any

from xdsl.dialects.builtin import ModuleOp

from accy.dialects.dense import DensePrinter
from accy.dialects.target import TargetAttr
from accy.runtime.compile_cache import code_fingerprint
from accy.runtime.device import KernelDevice
from accy.runtime.disk_cache import DiskCache
from accy.tuning.space import SPACE_VERSION

if TYPE_CHECKING:
    from accy.tuning.search import Trial, TuneResult

NAMESPACE = "tuning"

_store = DiskCache(NAMESPACE)


def key(module: ModuleOp, fn: str, device: KernelDevice, search: str) -> str:
    """The store's key of tuning `fn` of `module` on `device`; `search`
    states the budget and the candidates."""
    text = io.StringIO()
    DensePrinter(stream=text, print_generic_format=True).print_op(module)
    identity = f"{type(device).__name__}:{device.cache_identity() or device.name}"
    h = hashlib.sha256()
    for part in (code_fingerprint(), f"space{SPACE_VERSION}", search, identity, fn, text.getvalue()):
        h.update(part.encode())
        h.update(b"\0")
    return h.hexdigest()


def save(key: str, result: TuneResult) -> bool:
    """Keeps `result` under `key`; False when the disk cache is off or unwritable."""
    data = {
        "fields": result.fields, "kinds": result.kinds, "baseline_ms": result.baseline_ms, "best_ms": result.best_ms,
        "trials": [t.as_json() for t in result.trials],
    }
    return _store.put(key, json.dumps(data, sort_keys=True).encode())


def load(key: str) -> tuple[dict[str, Any], list[str], float | None, float | None, list[Trial]] | None:
    """(fields, kinds, baseline ms, best ms, trials) kept under `key`, or None."""
    from accy.tuning.search import Trial

    payload = _store.get(key)
    if payload is None:
        return None
    try:
        data = json.loads(payload)
        fields = dict(data["fields"])
        TargetAttr.from_fields(fields)  # fields a target takes, or a miss
        trials = [Trial.from_json(t) for t in data["trials"]]
        return fields, list(data["kinds"]), data["baseline_ms"], data["best_ms"], trials
    except (ValueError, KeyError, TypeError):
        _store.discard(key)
        return None
