"""Compiled functions across processes: what `KernelDevice.prepare` made of a
function, kept on disk so that a second process skips kernelize and the
backend and goes straight to the device's own artifact cache.

An entry is keyed by everything the result depends on:

- accy's code: a digest of every source file of the `accy` package (taken
  once per process) and the versions of xDSL and llvmlite, so that any
  change to the compiler is a miss, never a stale program;
- the device: its class and `cache_identity()` (the LLVM device: the host's
  triple, CPU name and features; the OpenCL device: platform name and
  version, device name and version, driver version and pyopencl's version);
- the module as the device compiles it: printed in generic form after
  `prepare_function` and with the complete target profile attached (large
  literals print as hex, so this stays cheap), the function's name and
  `strict`.

The payload is the device's (`KernelDevice.freeze` / `thaw`), after a line
naming its key (`KernelDevice.prepare` refuses an entry of another key, as
when a file is copied over another): the LLVM device writes its host
schedule and its kernels' LLVM IR, and `thaw` gets the object code from its
JIT cache; the OpenCL device writes its host schedule, the OpenCL C source
and build options, and `thaw` gets the binary from the program cache
(program_cache.py: a verified disk binary, so a second process builds
nothing). It is data, never a pickle (unpickling
runs whatever the bytes say): `pack_schedule` writes a JSON document of the
schedule's steps (only the step types of schedule.py and the device's own
launch step, fields of ints, strings, lists, dtypes and tensor types), the
device's texts (kernel sources: `extra`'s string values) as raw UTF-8 after
it (JSON-decoding a 166 KB LLVM IR string took ~0.4 ms, most of a
same-process recompile; decoding the bytes ~0.03 ms) and the raw bytes of
its constants; `unpack_schedule` reads them back with
`allow_pickle`-free numpy views, refusing object dtypes. A program with host fallbacks is never
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

import dataclasses
import hashlib
import io
import json
import os
import sys
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from accy.runtime.disk_cache import DiskCache
from accy.runtime.schedule import Alloc, Constant, Copy, Free, Loop, Schedule
from accy.runtime.signature import TensorSpec

if TYPE_CHECKING:
    from xdsl.dialects.builtin import ModuleOp

# Thawing imports no xDSL (a tensor type is thawed as a TensorSpec): a
# process whose functions all come from the cache never loads the dialects.

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
                h.update(f"{dist}={installed_version(dist)}\0".encode())
            _fingerprint = h.hexdigest()
        return _fingerprint


def installed_version(dist: str) -> str:
    """The installed version of distribution `dist` (whose top-level package
    has its name), "none" when it is not installed. Read from the name of
    its `.dist-info` folder beside the package where there is exactly one
    (importlib.metadata costs a warm process tens of milliseconds to
    import), else from importlib.metadata."""
    from importlib.util import find_spec

    spec = find_spec(dist)
    if spec is not None and spec.origin:
        found = list(Path(spec.origin).parent.parent.glob(f"{dist}-*.dist-info"))
        if len(found) == 1:
            return found[0].name[len(dist) + 1 : -len(".dist-info")]
    from importlib import metadata

    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return "none"


def source_digest(package: Path) -> str:
    """A digest of the names and contents of the `.py` files under `package`.
    Walked by `os.scandir` and read by `os.read`: 2.5 ms for accy's 126
    files, against 10 ms through pathlib's rglob and read_bytes, in every
    process that looks up the cache."""
    h = hashlib.sha256()
    for name, path in sorted(_python_files(str(package), "")):
        h.update(name.encode() + b"\0")
        fd = os.open(path, os.O_RDONLY)
        try:
            while chunk := os.read(fd, 1 << 20):
                h.update(chunk)
        finally:
            os.close(fd)
        h.update(b"\0")
    return h.hexdigest()


def _python_files(folder: str, prefix: str) -> list[tuple[str, str]]:
    """(name relative to the package, path) of every `.py` file under `folder`."""
    found = []
    with os.scandir(folder) as entries:
        for entry in entries:
            if entry.is_dir(follow_symlinks=False):
                if entry.name != "__pycache__":
                    found += _python_files(entry.path, f"{prefix}{entry.name}/")
            elif entry.name.endswith(".py"):
                found.append((prefix + entry.name, entry.path))
    return found


def compile_key(device: str, module: ModuleOp, fn: str, strict: bool) -> str:
    """The key of function `fn` of `module` (prepared, profile attached) on
    the device whose identity is `device`."""
    from accy.dialects.dense import DensePrinter

    text = io.StringIO()
    # DensePrinter: a large literal prints from its bytes (xDSL's printer
    # unpacks every element, a million-element splat included).
    DensePrinter(stream=text, print_generic_format=True).print_op(module)
    h = hashlib.sha256()
    for part in (code_fingerprint(), device, fn, str(strict), text.getvalue()):
        h.update(part.encode())
        h.update(b"\0")
    return h.hexdigest()


def compiled_cache() -> DiskCache:
    """A handle on the disk cache of compiled functions (its folder is found
    from the environment when first used)."""
    return DiskCache(NAMESPACE)


# --------------------------------------------------------------------------
# Payloads: a schedule as data (see the module docstring)
# --------------------------------------------------------------------------

#: The first bytes of a packed schedule; bumped when its layout changes.
PAYLOAD_MAGIC = b"ACCYSCHED3\n"
_LENGTH_BYTES = 8
_STEP_TYPES: tuple[type, ...] = (Alloc, Free, Constant, Copy, Loop)


class _Packer:
    def __init__(self, step_types: dict[str, type]) -> None:
        self.names = {cls: name for name, cls in step_types.items()}
        self.arrays: list[np.ndarray] = []

    def value(self, v: Any) -> Any:
        if v is None or isinstance(v, bool | int | str):
            return v
        if isinstance(v, list):
            return [self.value(x) for x in v]
        if isinstance(v, np.dtype):
            if v.hasobject:
                raise TypeError("an object dtype")
            return {"dtype": v.str}
        if isinstance(v, np.ndarray):
            self.arrays.append(np.ascontiguousarray(v))
            return {"array": len(self.arrays) - 1, "dtype": self.value(v.dtype), "shape": list(v.shape)}
        if isinstance(v, TensorSpec):
            return {"spec": v.to_json()}
        if _is_tensor_type(v):
            spec = TensorSpec.of(v).to_json()
            # A dtype numpy does not name (bf16) keeps the type's text alone, parsed when thawed.
            return {"spec": spec} if spec is not None else {"type": str(v)}
        if type(v) in self.names:
            fields = {f.name: self.value(getattr(v, f.name)) for f in dataclasses.fields(v)}
            return {"step": self.names[type(v)], "fields": fields}
        raise TypeError(f"{type(v).__name__} is not kept in the compile cache")


class _Unpacker:
    def __init__(self, step_types: dict[str, type], blobs: memoryview, arrays: list[dict[str, Any]]) -> None:
        self.step_types = step_types
        self.blobs = blobs
        self.offsets = [0]
        for meta in arrays:
            self.offsets.append(self.offsets[-1] + int(meta["nbytes"]))
        if self.offsets[-1] != len(blobs):
            raise ValueError("the arrays do not fill the payload")

    def value(self, v: Any) -> Any:
        if v is None or isinstance(v, bool | int | str):
            return v
        if isinstance(v, list):
            return [self.value(x) for x in v]
        if not isinstance(v, dict):
            raise ValueError(f"unexpected {type(v).__name__}")
        if "dtype" in v and len(v) == 1:
            dtype = np.dtype(v["dtype"])
            if dtype.hasobject:
                raise ValueError("an object dtype")
            return dtype
        if "array" in v:
            i, dtype, shape = int(v["array"]), self.value(v["dtype"]), [int(n) for n in v["shape"]]
            raw = self.blobs[self.offsets[i] : self.offsets[i + 1]]
            return np.frombuffer(raw, dtype).reshape(shape).copy()
        if "spec" in v:
            return TensorSpec.from_json(v["spec"])
        if "type" in v:
            return _parse_tensor_type(v["type"])
        if "step" in v:
            cls = self.step_types[v["step"]]
            fields = {f.name for f in dataclasses.fields(cls)}
            given = v["fields"]
            if set(given) != fields:
                raise ValueError(f"fields of {v['step']}")
            return cls(**{name: self.value(x) for name, x in given.items()})
        raise ValueError(f"unexpected {sorted(v)}")


def _is_tensor_type(v: Any) -> bool:
    """Whether `v` is an xDSL TensorType (never, while xDSL is not loaded)."""
    builtin = sys.modules.get("xdsl.dialects.builtin")
    return builtin is not None and isinstance(v, builtin.TensorType)


def _parse_tensor_type(text: str) -> Any:
    from xdsl.context import Context
    from xdsl.dialects.builtin import TensorType
    from xdsl.parser import Parser

    t = Parser(Context(), text).parse_attribute()
    if not isinstance(t, TensorType):
        raise ValueError(f"{text} is not a tensor type")
    return t


def pack_schedule(schedule: Schedule, extra: dict[str, Any], launch_type: type) -> bytes:
    """`schedule` (steps of schedule.py's types and `launch_type`) and
    `extra` (JSON data by name: the kernels' sources, say; its string values
    are kept as raw text) as a payload; TypeError for a schedule holding
    anything else (a fallback)."""
    step_types = {cls.__name__: cls for cls in (*_STEP_TYPES, launch_type)}
    packer = _Packer(step_types)
    fields = {f.name: packer.value(getattr(schedule, f.name)) for f in dataclasses.fields(schedule)}
    arrays = [{"nbytes": a.nbytes} for a in packer.arrays]
    texts = {name: v.encode() for name, v in extra.items() if isinstance(v, str)}
    data = {name: v for name, v in extra.items() if not isinstance(v, str)}
    doc = json.dumps(
        {
            "schedule": fields,
            "extra": data,
            "texts": [[name, len(t)] for name, t in texts.items()],
            "arrays": arrays,
        }
    ).encode()
    parts = [PAYLOAD_MAGIC, len(doc).to_bytes(_LENGTH_BYTES, "little"), doc, *texts.values()]
    parts += [a.tobytes() for a in packer.arrays]
    return b"".join(parts)


def unpack_schedule(payload: bytes, launch_type: type) -> tuple[Schedule, Any] | None:
    """The schedule and `extra` that `pack_schedule` wrote; None for a
    payload that is not one (another format, damaged, hand-made)."""
    try:
        if not payload.startswith(PAYLOAD_MAGIC):
            return None
        start = len(PAYLOAD_MAGIC) + _LENGTH_BYTES
        length = int.from_bytes(payload[len(PAYLOAD_MAGIC) : start], "little")
        doc = json.loads(payload[start : start + length])
        offset = start + length
        extra: dict[str, Any] = {}
        for name, nbytes in doc["texts"]:
            if not isinstance(name, str) or not isinstance(nbytes, int) or nbytes < 0:
                return None
            extra[name] = payload[offset : offset + nbytes].decode()
            offset += nbytes
        if offset > len(payload) or not isinstance(doc["extra"], dict):
            return None
        extra.update(doc["extra"])
        step_types = {cls.__name__: cls for cls in (*_STEP_TYPES, launch_type)}
        unpacker = _Unpacker(step_types, memoryview(payload)[offset:], doc["arrays"])
        fields = doc["schedule"]
        if set(fields) != {f.name for f in dataclasses.fields(Schedule)}:
            return None
        schedule = Schedule(**{name: unpacker.value(v) for name, v in fields.items()})
        return schedule, extra
    except Exception:  # anything malformed is a miss: the function is compiled again
        return None
