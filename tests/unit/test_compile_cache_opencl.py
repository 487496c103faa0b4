"""The compile cache on the OpenCL device (PoCL here): a function compiled
once is taken whole from disk by a new device and by a new process
(`compile_cached`), its kernels' binary from the program cache, and runs
correctly on poisoned buffers; two processes compiling the same program into
one cache folder at once both get right results; an entry that is
truncated, zeroed, garbage or another key's payload is a miss, compiled
again and rewritten."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("pyopencl")

from templates import check  # noqa: E402

import accy  # noqa: E402
from accy.runtime import opencl as ocl  # noqa: E402
from accy.runtime.compile_cache import NAMESPACE  # noqa: E402
from accy.runtime.disk_cache import DiskCache  # noqa: E402

if not ocl.opencl_devices():
    pytest.skip("no OpenCL device", allow_module_level=True)

ROOT = Path(__file__).parents[2]

PROGRAM = """
func.func @main(%x: tensor<{r}x{c}xf32>, %s: tensor<{c}xf32>) -> tensor<{r}x{c}xf32> {{
  %b = "accy.broadcast"(%s) <{{dims = array<i64: 1>}}> : (tensor<{c}xf32>) -> tensor<{r}x{c}xf32>
  %m = "accy.mul"(%x, %b) : (tensor<{r}x{c}xf32>, tensor<{r}x{c}xf32>) -> tensor<{r}x{c}xf32>
  %0 = "accy.softmax"(%m) <{{axis = -1 : i64}}> : (tensor<{r}x{c}xf32>) -> tensor<{r}x{c}xf32>
  func.return %0 : tensor<{r}x{c}xf32>
}}
"""

CHILD = """
import json, sys
sys.path.insert(0, sys.argv[2])
import numpy as np
import accy
from accy.runtime.opencl import OpenCLDevice
from templates import check
exe = accy.compile(open(sys.argv[1]).read(), device=OpenCLDevice(poison=True))
out = check(exe, seed=5)
print(json.dumps({"cached": exe.program.compile_cached, "sum": float(np.sum(out[0], dtype=np.float64))}))
"""


@pytest.fixture
def cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("ACCY_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("ACCY_DEBUG", raising=False)
    return tmp_path


def fresh_device() -> ocl.OpenCLDevice:
    """A new device: its caches in memory are empty, as in a new process."""
    return ocl.OpenCLDevice(poison=True)


def entries(cache_dir: Path) -> list[Path]:
    return sorted((cache_dir / NAMESPACE).glob("*/*.bin"))


def program(r: int = 7, c: int = 333) -> str:
    return PROGRAM.format(r=r, c=c)


def test_a_new_device_takes_the_function_from_the_cache(cache_dir: Path) -> None:
    text = program()
    cold = accy.compile(text, device=fresh_device())
    assert not cold.program.compile_cached
    want = check(cold, seed=3)
    assert len(entries(cache_dir)) == 1
    warm = accy.compile(text, device=fresh_device())
    assert warm.program.compile_cached
    got = check(warm, seed=3)
    np.testing.assert_array_equal(got[0], want[0])
    assert warm.stats.kernels == cold.stats.kernels and warm.stats.peak_bytes == cold.stats.peak_bytes
    assert warm.program.source == cold.program.source and warm.program.source


@pytest.mark.parametrize("r,c", [(8, 333), (7, 1), (1, 17)])
def test_another_shape_is_a_miss(cache_dir: Path, r: int, c: int) -> None:
    accy.compile(program(), device=fresh_device())
    other = accy.compile(program(r, c), device=fresh_device())
    assert not other.program.compile_cached
    check(other)
    assert len(entries(cache_dir)) == 2


def test_strict_is_part_of_the_key(cache_dir: Path) -> None:
    text = program(5, 17)
    accy.compile(text, device=fresh_device())
    assert not accy.compile(text, device=fresh_device(), strict=True).program.compile_cached
    assert accy.compile(text, device=fresh_device(), strict=True).program.compile_cached


def test_a_damaged_entry_is_a_miss_and_rewritten(cache_dir: Path) -> None:
    text, other = program(3, 65), program(4, 9)
    accy.compile(other, device=fresh_device())
    (other_path,) = entries(cache_dir)
    accy.compile(text, device=fresh_device())
    (path,) = [p for p in entries(cache_dir) if p != other_path]
    store = DiskCache(NAMESPACE, cache_dir)
    good = store.get(path.stem)
    assert good is not None
    payloads = {
        "truncated": good[: len(good) // 2],
        "zeroed": bytes(len(good)),
        "garbage": os.urandom(len(good)),
        "another key's": store.get(other_path.stem),
    }
    for why, payload in payloads.items():
        assert payload is not None and store.put(path.stem, payload), why  # checksummed: only the payload is wrong
        exe = accy.compile(text, device=fresh_device())
        assert not exe.program.compile_cached, why
        check(exe)
        assert accy.compile(text, device=fresh_device()).program.compile_cached, why  # rewritten
    for why, raw in {"truncated file": path.read_bytes()[:20], "zeroed file": bytes(path.stat().st_size)}.items():
        path.write_bytes(raw)  # the file itself damaged: the disk cache's checksum refuses it
        exe = accy.compile(text, device=fresh_device())
        assert not exe.program.compile_cached, why
        check(exe)


def _child(cache_dir: Path, source: Path) -> subprocess.Popen[str]:
    env = {**os.environ, "ACCY_CACHE_DIR": str(cache_dir)}
    env.pop("ACCY_DEBUG", None)
    args = [sys.executable, "-c", CHILD, str(source), str(ROOT / "tests" / "unit")]
    return subprocess.Popen(args, env=env, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _result(proc: subprocess.Popen[str]) -> dict[str, object]:
    out, err = proc.communicate(timeout=600)
    assert proc.returncode == 0, err
    return json.loads(out.strip().splitlines()[-1])


def test_two_processes_at_once_then_a_third_from_the_cache(cache_dir: Path, tmp_path: Path) -> None:
    source = tmp_path / "p.mlir"
    source.write_text(program(6, 129))
    both = [_result(p) for p in [_child(cache_dir, source), _child(cache_dir, source)]]
    assert both[0]["sum"] == both[1]["sum"]
    assert len(entries(cache_dir)) == 1
    third = _result(_child(cache_dir, source))
    assert third["cached"] is True and third["sum"] == both[0]["sum"]
