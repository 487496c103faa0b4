"""accy's program cache on disk: entries verify or are rebuilt, a corrupted
cache (every file truncated, zeroed or replaced with garbage) never stops the
next run, an unusable folder gives one warning, two processes can fill one
cache at once, and PoCL's own cache is private to each process and removed
with it. Every run's results are checked against the reference interpreter.

Runs that could crash the interpreter (loading cached binaries into the
driver) are separate processes, as a user's next `accy-run` would be.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("pyopencl")

from accy.runtime import opencl as ocl  # noqa: E402
from accy.runtime.disk_cache import (  # noqa: E402
    AccyCacheWarning,
    DiskCache,
    cache_root,
    decode_entry,
    encode_entry,
)
from accy.runtime.program_cache import ProgramCache  # noqa: E402

pytestmark = pytest.mark.skipif(not ocl.opencl_devices(), reason="no OpenCL device")

# Two programs (odd sizes), each compiled, run on random inputs and checked
# against the reference; prints what the program cache did as JSON.
WORKER = r"""
import json, sys
import accy
from accy.runtime.devices import get_device

SRC = '''
func.func @main(%x: tensor<3x{c}xf32>, %y: tensor<3x{c}xf32>) -> (tensor<3xf32>, tensor<3x{c}xf32>) {{
  %e = "accy.exp"(%x) : (tensor<3x{c}xf32>) -> tensor<3x{c}xf32>
  %m = "accy.mul"(%e, %y) : (tensor<3x{c}xf32>, tensor<3x{c}xf32>) -> tensor<3x{c}xf32>
  %s = "accy.reduce"(%m) <{{kind = "sum", axes = array<i64: 1>}}> : (tensor<3x{c}xf32>) -> tensor<3xf32>
  func.return %s, %m : tensor<3xf32>, tensor<3x{c}xf32>
}}
'''
device = get_device("opencl")
ok = []
for cols in (5, 17):
    exe = accy.compile(SRC.format(c=cols), device=device)
    inputs = exe.random_inputs(cols)
    ok.append(all(c.ok for c in exe.compare_with_reference(inputs, exe(*inputs))))
p = device.programs
print(json.dumps({"ok": ok, "disk_loads": p.disk_loads, "source_builds": p.source_builds,
                  "corrupt": p.disk.corrupt if p.disk is not None else None, "pocl": device.pocl_cache_dir}))
"""

TIMEOUT = 300  # bounds a hang; a run takes a few seconds


def run_worker(cache: Path | str) -> dict:
    env = {**os.environ, "ACCY_CACHE_DIR": str(cache)}
    proc = subprocess.run([sys.executable, "-c", WORKER], env=env, capture_output=True, text=True, timeout=TIMEOUT)
    assert proc.returncode == 0, f"exit {proc.returncode}\n{proc.stderr[-3000:]}"
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    report["stderr"] = proc.stderr
    assert report["ok"] == [True, True], report
    return report


def cache_files(root: Path) -> list[Path]:
    """The program binaries under `root` (the compile cache's `compiled/` entries left out)."""
    return sorted(p for p in root.rglob("*") if p.is_file() and "compiled" not in p.relative_to(root).parts)


def entries_verify(root: Path) -> bool:
    files = cache_files(root)
    return bool(files) and all(
        f.parent.parent.name == "programs" and decode_entry(f.stem, f.read_bytes()) is not None for f in files
    )


# --------------------------------------------------------------------------
# The entry format
# --------------------------------------------------------------------------


def test_entries_round_trip_and_reject_any_damage(tmp_path):
    disk = DiskCache("programs", root=tmp_path)
    payload = np.random.default_rng(0).bytes(1001)
    key = "ab" + "0" * 62
    assert disk.get(key) is None
    assert disk.put(key, payload) and disk.get(key) == payload
    path = disk.path(key)
    assert path is not None and path.parent.name == "ab"
    data = path.read_bytes()
    damaged = {
        "truncated": data[: len(data) // 2],
        "empty": b"",
        "zeroed": bytes(len(data)),
        "one bit flipped": data[:-1] + bytes([data[-1] ^ 1]),
        "longer": data + b"x",
        "garbage": np.random.default_rng(1).bytes(len(data)),
    }
    for what, bad in damaged.items():
        path.write_bytes(bad)
        assert disk.get(key) is None, what
        assert not path.exists(), what  # removed, so the next put writes it afresh
    # An entry copied under another key does not verify either.
    assert decode_entry("cd" + "0" * 62, encode_entry(key, payload)) is None
    assert disk.corrupt == len(damaged)
    # A directory squatting on the entry's name is a miss, and put replaces it.
    path.mkdir()
    assert disk.get(key) is None and disk.put(key, payload) and disk.get(key) == payload
    assert list((tmp_path / "programs" / "tmp").iterdir()) == []  # no temporary file left


def test_cache_root_follows_the_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("ACCY_CACHE_DIR", str(tmp_path / "c"))
    assert cache_root() == tmp_path / "c"
    monkeypatch.setenv("ACCY_CACHE_DIR", "off")
    assert cache_root() is None
    assert DiskCache("programs").put("ab" * 32, b"x") is False
    monkeypatch.delenv("ACCY_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache_root() == tmp_path / "xdg" / "accy"


def test_unusable_folder_warns_once_and_runs_uncached(tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    disk = DiskCache("programs", root=blocker / "cache")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert disk.get("ab" * 32) is None
        assert disk.put("ab" * 32, b"x") is False
        assert DiskCache("programs", root=blocker / "cache").get("ab" * 32) is None
    messages = [str(w.message) for w in caught if issubclass(w.category, AccyCacheWarning)]
    assert len(messages) == 1, messages
    assert f"{blocker / 'cache'} is not usable" in messages[0] and "running without the disk cache" in messages[0]


def test_a_binary_the_driver_refuses_is_rebuilt_from_source(tmp_path):
    device = ocl.OpenCLDevice()
    device.programs = ProgramCache(device.context, device.cl_device, disk=DiskCache("programs", root=tmp_path))
    source = "__kernel void twice(__global float *x) { x[get_global_id(0)] *= 2.0f; }"
    key = device.programs.disk_key(source, "")
    # It verifies (accy's checksum is right) but is no program binary.
    assert device.programs.disk.put(key, b"\x00not a binary")  # type: ignore[union-attr]
    built = device.programs.get(source)
    assert device.programs.source_builds == 1 and device.programs.disk_loads == 0
    assert set(built.kernels) == {"twice"}
    # The rebuilt program's binary replaced the refused one at its build (program_cache.py: `_complete`).
    assert device.programs.disk.get(key) not in (None, b"\x00not a binary")  # type: ignore[union-attr]
    assert not built.stored


# --------------------------------------------------------------------------
# Across processes
# --------------------------------------------------------------------------


def test_second_process_loads_binaries_and_corruption_is_rebuilt(tmp_path):
    import tempfile

    # A PoCL folder left by a killed process (its pid runs no more) is removed by the next one.
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    stale = Path(tempfile.gettempdir()) / f"accy-pocl-{dead.pid}-stale"
    (stale / "kcache").mkdir(parents=True)
    (stale / "kcache" / "junk").write_bytes(b"\0" * 100)

    cache = tmp_path / "cache"
    cold = run_worker(cache)
    assert cold["source_builds"] == 2 and cold["disk_loads"] == 0
    assert len(cache_files(cache)) == 2 and entries_verify(cache)
    # PoCL's folder was the process's own, and went with it.
    private = Path(cold["pocl"])
    assert private.name.startswith("accy-pocl-") and not private.exists() and not stale.exists()
    warm = run_worker(cache)
    assert warm["source_builds"] == 0 and warm["disk_loads"] == 2

    rng = np.random.default_rng(3)
    damage = {
        "truncate": lambda data: data[: len(data) // 3],
        "zero": lambda data: b"",
        "garbage": lambda data: rng.bytes(len(data)),
    }
    for what, spoil in damage.items():
        for f in cache_files(cache):
            f.write_bytes(spoil(f.read_bytes()))
        report = run_worker(cache)
        assert report["corrupt"] == 2 and report["source_builds"] == 2 and report["disk_loads"] == 0, what
        assert entries_verify(cache), what  # rebuilt and stored again


def test_unwritable_cache_folder_gives_one_warning_and_right_results(tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    report = run_worker(blocker / "cache")
    assert report["source_builds"] == 2
    assert report["stderr"].count("AccyCacheWarning") == 1, report["stderr"]
    assert "is not usable" in report["stderr"] and "Traceback" not in report["stderr"]


def test_accy_run_checks_right_with_an_unusable_cache(tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    program = tmp_path / "p.mlir"
    program.write_text(
        'func.func @main(%x: tensor<7x3xf32>) -> tensor<7x3xf32> {\n'
        '  %0 = "accy.tanh"(%x) : (tensor<7x3xf32>) -> tensor<7x3xf32>\n'
        "  func.return %0 : tensor<7x3xf32>\n}\n"
    )
    env = {**os.environ, "ACCY_CACHE_DIR": str(blocker / "cache")}
    proc = subprocess.run(
        [sys.executable, "-m", "accy.cli.run", str(program), "--device", "opencl", "--check"],
        env=env, capture_output=True, text=True, timeout=TIMEOUT,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "check out0:" in proc.stdout and ": ok" in proc.stdout
    assert proc.stderr.count("is not usable") == 1 and "Traceback" not in proc.stderr


def test_two_processes_fill_one_cache_at_once(tmp_path):
    cache = tmp_path / "cache"
    env = {**os.environ, "ACCY_CACHE_DIR": str(cache)}
    procs = [
        subprocess.Popen([sys.executable, "-c", WORKER], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for _ in range(2)
    ]
    for proc in procs:
        out, err = proc.communicate(timeout=TIMEOUT)
        assert proc.returncode == 0, err[-3000:]
        assert json.loads(out.strip().splitlines()[-1])["ok"] == [True, True]
    assert len(cache_files(cache)) == 2 and entries_verify(cache)
    assert list((cache / "programs" / "tmp").iterdir()) == []


# A custom kernel with a required work-group size, called with results left
# on the device (its launch still running when the call returns), then again.
# When the binary was stored after the first call, PoCL 3.1 aborted the
# process (SIGABRT in pocl_release_dlhandle_cache) where it was fetched while
# that launch was in flight; `make test` from a fresh clone hit it under load.
# The binary is now fetched and stored at the build, before any launch: the
# calls must still run, and the binary be on disk.
IN_FLIGHT = r"""
import numpy as np, accy
from accy.kernel import Kernel, MemLayout, MemScope
for trial in range(3):
    k = Kernel("opencl")
    n = 64
    inp = k.define(np.float32, MemScope.GLOBAL, read_only=True, size=n)
    i = k.group_index(0, n)
    out = k.define(np.float32, MemScope.GLOBAL, read_only=False, size=n)
    k.store(out, k.add(k.load(inp, i), float(trial)), i, MemLayout.SCALAR)
    with k.loop(0, 400000 + trial):  # long enough to be running at the store
        k.store(out, k.add(k.load(out, i), 0.0), i, MemLayout.SCALAR)
    compiled = k.compile()
    x = accy.device_put(np.arange(n, dtype=np.float32), "opencl")
    (y,) = compiled.forward([x], [n], to_host=False)
    (z,) = compiled.forward([y], [n])
    np.testing.assert_array_equal(z, np.arange(n, dtype=np.float32) + 2 * trial)
print("ok")
"""


def test_storing_a_binary_while_a_launch_is_in_flight_does_not_abort(tmp_path):
    env = {**os.environ, "ACCY_CACHE_DIR": str(tmp_path / "cache")}
    proc = subprocess.run([sys.executable, "-c", IN_FLIGHT], env=env, capture_output=True, text=True, timeout=TIMEOUT)
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", f"exit {proc.returncode}\n{proc.stderr[-3000:]}"
    assert cache_files(tmp_path / "cache"), "no binary was stored: the case this test exists for did not happen"
