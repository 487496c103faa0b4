"""accy's cache on disk: blobs by key, checksummed, written atomically.

Everything accy keeps across processes lives under one folder, the *cache
root*: `$ACCY_CACHE_DIR` when set, else `$XDG_CACHE_HOME/accy`, else
`~/.cache/accy`. `ACCY_CACHE_DIR=off` turns the disk cache off. Each user of
the cache has a namespace, a sub-folder of the root:

    <root>/programs/<k[:2]>/<k>.bin     built OpenCL programs (program_cache.py)
    <root>/<namespace>/...              later users (an autotuner's results)
    <root>/<namespace>/tmp/             entries being written

An entry is `MAGIC | sha256(key + payload) | len(payload) | payload`. It is
written to a temporary file in `tmp/` and renamed over the entry with
`os.replace`, so a reader sees a whole old entry, a whole new one, or none;
two processes writing the same entry both succeed and one of them wins.
`get` verifies the header and checksum before it returns a payload: a
truncated, zeroed or garbage file (or a directory, a FIFO, a file of another
key) is a miss and is removed, and the caller rebuilds and writes it again.

Entries are data (program binaries, object code, and the compile cache's
schedules as JSON and raw arrays, compile_cache.py), never pickles, but
object code is still code: whoever can write the cache can make accy run
what they like. So, as ccache, pip and Triton do, accy trusts a folder only
if no one else can write it:

- the root, the namespaces and their sub-folders that accy creates are made
  mode 0700, whatever the umask;
- the root (which may be a symbolic link to a folder), each namespace and
  each sub-folder must be a folder owned by the user that is not writable by
  group or others. A link (or file) of the user's at a namespace's or
  sub-folder's name is removed, never followed, and a folder made in its
  place. A folder that fails is not used: the process warns once and runs
  without the disk cache (chmod 700 the folder, or set `ACCY_CACHE_DIR`);
- an entry is read only if it is a regular file owned by the user, opened
  with `O_NOFOLLOW` from its folder's descriptor; anything else is a miss
  and is removed;
- the stale-temp sweep removes entries of `tmp/` through the folder's
  descriptor, never following a link.

A cache root that cannot be created or written is not an error either: the
first failure prints one `AccyCacheWarning` naming the folder and the
reason, and the process goes on without the disk cache.
"""

from __future__ import annotations

import errno
import hashlib
import itertools
import os
import stat
import sys
import tempfile
import threading
import time
import warnings
from pathlib import Path

from accy.env import FALSE_WORDS, env_int, env_path

CACHE_DIR_ENV = "ACCY_CACHE_DIR"
#: `ACCY_CACHE_DIR` values that turn the disk cache off (any case): a yes/no
#: variable's off words, and none.
OFF_VALUES = (*FALSE_WORDS, "none")

MAGIC = b"ACCYBLOB1\n"
_DIGEST = 32
_LENGTH = 8
HEADER_BYTES = len(MAGIC) + _DIGEST + _LENGTH
#: Entries larger than this are refused (a garbage file claiming to be huge
#: must not make accy read it whole).
MAX_ENTRY_BYTES = 1 << 30
#: Temporary files older than this are left-overs of a killed writer.
STALE_TMP_SECONDS = 600.0


class AccyCacheWarning(UserWarning):
    """accy runs without its disk cache (the folder is not usable)."""


def cache_root() -> Path | None:
    """The cache root (see the module docstring); None when turned off."""
    configured = env_path(CACHE_DIR_ENV)
    if configured is not None:
        if configured.strip().lower() in OFF_VALUES:
            return None
        return Path(configured).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "accy"


def checksum(key: str, payload: bytes) -> bytes:
    return hashlib.sha256(key.encode() + b"\0" + payload).digest()


def encode_entry(key: str, payload: bytes) -> bytes:
    """The bytes of an entry file holding `payload` under `key`."""
    return MAGIC + checksum(key, payload) + len(payload).to_bytes(_LENGTH, "little") + payload


def decode_entry(key: str, data: bytes) -> bytes | None:
    """The payload of an entry file's bytes, or None if they do not verify."""
    if len(data) < HEADER_BYTES or not data.startswith(MAGIC):
        return None
    digest = data[len(MAGIC) : len(MAGIC) + _DIGEST]
    length = int.from_bytes(data[len(MAGIC) + _DIGEST : HEADER_BYTES], "little")
    payload = data[HEADER_BYTES:]
    if length != len(payload) or checksum(key, payload) != digest:
        return None
    return payload


class DiskCache:
    """Verified blobs by key under `<root>/<namespace>` (see the module
    docstring). `root=None` follows `cache_root()` at each use, so setting
    `ACCY_CACHE_DIR` (to a folder, or `off`) in a running process takes
    effect at the next compile. Safe to use from several threads and
    processes at once."""

    def __init__(self, namespace: str, root: Path | str | None = None) -> None:
        self.namespace = namespace
        self._root = Path(root) if root is not None else None
        self._dir: Path | None = None
        self._resolved = False
        self._resolved_root: Path | None = None
        self.disabled_reason: str | None = None
        self._lock = threading.Lock()
        self._swept = False
        #: Entries that failed verification (and were removed).
        self.corrupt = 0

    @property
    def directory(self) -> Path | None:
        """The namespace folder, created on first use; None when the disk
        cache is off or unusable."""
        root = self._root if self._root is not None else cache_root()
        with self._lock:
            if not self._resolved or root != self._resolved_root:
                self._resolved, self._resolved_root = True, root
                self._dir, self.disabled_reason, self._swept = None, None, False
                if root is not None:
                    try:
                        _ensure_root(root)
                        # A namespace may sit in another's folder ("compiled/sources"): each level is checked.
                        folder = root
                        for part in Path(self.namespace).parts:
                            folder = folder / part
                            _ensure_dir(folder)
                        _ensure_dir(folder / "tmp")
                        self._dir = folder
                    except OSError as e:
                        self._disable_locked(root, e)
            return self._dir

    def path(self, key: str) -> Path | None:
        """Where the entry of `key` lives (None without a cache folder)."""
        directory = self.directory
        return None if directory is None else directory / key[:2] / f"{key}.bin"

    def get(self, key: str) -> bytes | None:
        """The payload stored under `key`, or None when there is none or it
        does not verify (a bad entry is removed)."""
        path = self.path(key)
        if path is None:
            return None
        data = _read_entry(path)
        payload = decode_entry(key, data) if data is not None else None
        if payload is None:
            if data is not None or os.path.lexists(path):
                self.corrupt += 1
                self.discard(key)
        else:
            try:  # used now: the last entry least-recently-used eviction removes
                os.utime(path, follow_symlinks=False)
            except OSError:
                pass
        return payload

    def put(self, key: str, payload: bytes) -> bool:
        """Stores `payload` under `key` atomically; False when the cache is
        off or could not be written (the first failure warns once)."""
        directory = self.directory
        if directory is None or len(payload) > MAX_ENTRY_BYTES:
            return False
        path = directory / key[:2] / f"{key}.bin"
        tmp_dir = directory / "tmp"
        self._sweep(tmp_dir)
        tmp_name: str | None = None
        try:
            _ensure_dir(path.parent)
            _ensure_dir(tmp_dir)
            fd, tmp_name = tempfile.mkstemp(prefix=f"{key[:16]}.", suffix=".tmp", dir=tmp_dir)
            with os.fdopen(fd, "wb") as f:
                f.write(encode_entry(key, payload))
            if path.is_dir() and not path.is_symlink():
                _remove_tree(path)  # a directory squatting on the entry's name
            os.replace(tmp_name, path)
            _written(directory.parent, len(payload) + HEADER_BYTES)
            return True
        except OSError as e:
            if tmp_name is not None:
                _unlink(Path(tmp_name))
            with self._lock:
                self._disable_locked(directory.parent, e)
            return False

    def discard(self, key: str) -> None:
        """Removes the entry of `key` if there is one."""
        path = self.path(key)
        if path is None:
            return
        if path.is_dir() and not path.is_symlink():
            _remove_tree(path)
        else:
            _unlink(path)

    def _disable_locked(self, folder: Path, error: OSError) -> None:
        """Turns the disk cache off; one warning a process names the cache
        root `folder` (or the folder of it that failed a check)."""
        if self.disabled_reason is not None:
            return
        self._dir = None
        if isinstance(error, UntrustedFolder):
            folder = Path(error.filename)
        reason = error.strerror or str(error)
        self.disabled_reason = f"the accy cache folder {folder} is not usable ({reason}): running without the disk cache"
        with _warned_lock:
            if str(folder) in _warned:
                return
            _warned.add(str(folder))
        # Attributed to the caller's line outside accy (e.g. its accy.compile).
        warnings.warn(
            self.disabled_reason + f" (set {CACHE_DIR_ENV} to another folder)",
            AccyCacheWarning,
            stacklevel=stacklevel_outside_accy(),
        )

    def _sweep(self, tmp_dir: Path) -> None:
        """Removes temporary files a killed writer left behind (once a process)."""
        if self._swept:
            return
        self._swept = True
        now = time.time()
        try:
            # Through the folder's descriptor: `tmp` itself must not be a link
            # (a link would make the sweep remove old files wherever it points).
            fd = os.open(tmp_dir, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
        except OSError:
            return
        try:
            for entry in list(os.scandir(fd)):
                try:
                    if now - entry.stat(follow_symlinks=False).st_mtime > STALE_TMP_SECONDS:
                        os.unlink(entry.name, dir_fd=fd)  # a link itself, never its target
                except OSError:
                    pass
        finally:
            os.close(fd)


# Folders already warned about: one warning a process, however many caches use them.
_warned: set[str] = set()
_warned_lock = threading.Lock()


def stacklevel_outside_accy() -> int:
    """The `stacklevel` that makes a warning issued by this function's
    caller name the first frame outside the accy package (Python 3.11 has
    no skip_file_prefixes): `_disable_locked`'s, and `accy.compile`'s
    however many of accy's frames stand between (the tuner's compile, the
    runtime's)."""
    package = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
    frame = sys._getframe(2)  # the caller's frame is level 1 of the warning
    level = 2
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(package):
        frame = frame.f_back
        level += 1
    return level


class UntrustedFolder(OSError):
    """A cache folder someone else could write (see the module docstring)."""


#: Mode bits of a folder that let someone other than its owner write it.
_WRITABLE_BY_OTHERS = stat.S_IWGRP | stat.S_IWOTH


def check_trusted(path: Path | str, info: os.stat_result, uid: int | None = None) -> None:
    """Raises UntrustedFolder unless `info` (of folder `path`) is a folder
    owned by `uid` (default: this process's effective user) that neither
    group nor others can write."""
    uid = os.geteuid() if uid is None else uid
    if not stat.S_ISDIR(info.st_mode):
        problem = "it is a symbolic link" if stat.S_ISLNK(info.st_mode) else "it is not a folder"
    elif info.st_uid != uid:
        problem = f"it is owned by user {info.st_uid}, not by this user ({uid})"
    elif info.st_mode & _WRITABLE_BY_OTHERS:
        problem = f"it is writable by group or others (mode {stat.S_IMODE(info.st_mode):o}; chmod 700 it)"
    else:
        return
    raise UntrustedFolder(errno.EPERM, f"{problem}, so others could plant code in it", str(path))


def _make_private_dir(path: Path) -> None:
    """Creates `path` (and missing parents) mode 0700, whatever the umask."""
    if not path.parent.exists():
        _make_private_dir(path.parent)
    try:
        os.mkdir(path, 0o700)
    except FileExistsError:
        return
    os.chmod(path, 0o700)  # mkdir's mode is masked by the umask


def _ensure_root(root: Path) -> None:
    """Creates the cache root if missing; checks it (a link to a folder is
    followed: the folder it names is checked)."""
    if not os.path.lexists(root):
        _make_private_dir(root)
    check_trusted(root, os.stat(root))


def _ensure_dir(path: Path) -> None:
    """Creates folder `path` of a checked parent mode 0700 and checks it; a
    file or a link squatting on its name is removed first."""
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        info = None
    if info is not None and not stat.S_ISDIR(info.st_mode) and info.st_uid == os.geteuid():
        os.unlink(path)  # a link is removed, never followed
        info = None
    if info is None:
        _make_private_dir(path)
        info = os.lstat(path)
    check_trusted(path, info)


def _read_entry(path: Path) -> bytes | None:
    """The bytes of entry file `path`, or None when it is missing or is not
    a regular file owned by this user (a link, a FIFO, a folder, another
    user's file) in a trusted folder, or is too large to be an entry."""
    try:
        folder = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    except OSError:
        return None
    try:
        check_trusted(path.parent, os.fstat(folder))
        # O_NONBLOCK: opening a FIFO must not wait for a writer.
        fd = os.open(path.name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=folder)
    except OSError:
        os.close(folder)
        return None
    os.close(folder)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_uid != os.geteuid():
            return None
        if info.st_size > MAX_ENTRY_BYTES + HEADER_BYTES:
            return None
        with os.fdopen(fd, "rb", closefd=False) as f:
            # The size fstat gave (read(n) allocates n bytes first: a 1 GiB bound cost every read 1 GiB).
            return f.read(info.st_size)
    except OSError:
        return None
    finally:
        os.close(fd)


def _unlink(path: Path) -> None:
    try:
        path.unlink()
    except OSError:
        pass


def _remove_tree(path: Path) -> None:
    import shutil

    shutil.rmtree(path, ignore_errors=True)


# --------------------------------------------------------------------------
# The size bound: least recently used entries go first
# --------------------------------------------------------------------------

MAX_BYTES_ENV = "ACCY_CACHE_MAX_BYTES"
#: The bytes of all entries of all namespaces kept by default (`$ACCY_CACHE_MAX_BYTES`).
DEFAULT_MAX_BYTES = 4 << 30

_usage_lock = threading.Lock()
#: Per cache root, the bytes of its entries as last counted plus those written since.
_usage: dict[Path, int] = {}


def max_bytes() -> int:
    """The bound on the cache's entries, in bytes (`$ACCY_CACHE_MAX_BYTES`)."""
    return env_int(MAX_BYTES_ENV, DEFAULT_MAX_BYTES, "bytes", minimum=0)


def entries(root: Path) -> list[tuple[Path, int, float]]:
    """Every entry under `root` (path, bytes, last use), namespaces' `tmp/`
    left out; a namespace in another's folder ("compiled/sources") included."""
    found = []
    for path in itertools.chain(root.glob("*/*/*.bin"), root.glob("*/*/*/*.bin")):
        if path.parent.name == "tmp":
            continue
        try:
            info = path.lstat()
        except OSError:
            continue
        if stat.S_ISREG(info.st_mode):
            found.append((path, info.st_size, info.st_mtime))
    return found


def evict(root: Path, bound: int) -> int:
    """Removes the least recently used entries under `root` until their bytes
    are at most `bound`; the bytes left."""
    found = sorted(entries(root), key=lambda e: e[2])
    total = sum(size for _, size, _ in found)
    for path, size, _ in found:
        if total <= bound:
            break
        _unlink(path)
        total -= size
    return total


def _written(root: Path, nbytes: int) -> None:
    """Counts an entry written under `root`; evicts when past the bound (the
    folder is counted once per process, then kept up to date)."""
    bound = max_bytes()
    with _usage_lock:
        if root not in _usage:
            _usage[root] = sum(size for _, size, _ in entries(root))
        else:
            _usage[root] += nbytes
        if _usage[root] > bound:
            _usage[root] = evict(root, bound)


def usage(root: Path) -> dict[str, tuple[int, int]]:
    """Per namespace under `root`: its entries and their bytes."""
    out: dict[str, tuple[int, int]] = {}
    for path, size, _ in entries(root):
        n, b = out.get(path.parent.parent.name, (0, 0))
        out[path.parent.parent.name] = (n + 1, b + size)
    return out


def clear(root: Path) -> int:
    """Removes every entry under `root` (folders stay); the entries removed."""
    found = entries(root)
    for path, _, _ in found:
        _unlink(path)
    with _usage_lock:
        _usage.pop(root, None)
    return len(found)
