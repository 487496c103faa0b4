"""The disk cache's size bound (`ACCY_CACHE_MAX_BYTES`): writing past it
removes the least recently used entries (a `get` counts as a use) until the
entries fit; `python -m accy cache info` counts them and `cache clear`
removes them all."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from accy.runtime import disk_cache
from accy.runtime.disk_cache import HEADER_BYTES, DiskCache

ROOT = Path(__file__).parents[2]


@pytest.fixture
def root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("ACCY_CACHE_DIR", str(tmp_path))
    disk_cache._usage.pop(tmp_path, None)
    return tmp_path


def total(root: Path) -> int:
    return sum(size for _, size, _ in disk_cache.entries(root))


def test_eviction_keeps_the_bound_and_drops_the_least_recently_used(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    entry = 1000
    monkeypatch.setenv("ACCY_CACHE_MAX_BYTES", str(5 * (entry + HEADER_BYTES)))
    a, b = DiskCache("one", root), DiskCache("two", root)
    keys = [f"{i:02d}" + "k" * 30 for i in range(12)]
    for i, key in enumerate(keys[:5]):
        assert (a if i % 2 else b).put(key, bytes([i]) * entry)
    assert total(root) == 5 * (entry + HEADER_BYTES)
    for i, key in enumerate(keys[:5]):  # make the order of use explicit: key 0 used last
        path = (a if i % 2 else b).path(key)
        assert path is not None
        os.utime(path, (time.time() - 100 + (10 - i), time.time() - 100 + (10 - i)))
    assert b.get(keys[4]) == bytes([4]) * entry  # used now: kept
    assert a.put(keys[5], b"x" * entry)
    assert total(root) <= 5 * (entry + HEADER_BYTES)
    assert a.get(keys[3]) is None  # the least recently used went first
    assert b.get(keys[4]) is not None and a.get(keys[5]) is not None
    for key in keys[6:]:
        assert b.put(key, b"y" * entry)
        assert total(root) <= 5 * (entry + HEADER_BYTES)
    assert len(disk_cache.entries(root)) == 5


def test_info_and_clear(root: Path) -> None:
    cache = DiskCache("compiled", root)
    for i in range(3):
        assert cache.put(f"{i}" * 40, b"z" * 100)
    env = {"ACCY_CACHE_DIR": str(root), "PATH": "/usr/bin:/bin"}
    info = subprocess.run(
        [sys.executable, "-m", "accy", "cache", "info"], env=env, cwd=ROOT, capture_output=True, text=True
    )
    assert info.returncode == 0, info.stderr
    assert "3 entries" in info.stdout and "compiled/: 3 entries" in info.stdout
    cleared = subprocess.run(
        [sys.executable, "-m", "accy", "cache", "clear"], env=env, cwd=ROOT, capture_output=True, text=True
    )
    assert cleared.returncode == 0 and "removed 3 entries" in cleared.stdout
    assert disk_cache.entries(root) == [] and cache.get("0" * 40) is None
    assert cache.put("9" * 40, b"again") and cache.get("9" * 40) == b"again"  # the folders still work
