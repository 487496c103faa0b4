"""The compile cache's source index (accy/runtime/source_cache.py): a text
compiled before is thawed without being parsed, from memory in the same
process and from disk in a new one (a new device stands for it); it holds
bytes only, never an executable; it is off with the disk cache; a damaged
entry or one leading to another key's payload is a miss; its memory is
bounded by entries and bytes; a warm `accy-run` parses nothing and loads
no xDSL, and says so in `--stats`."""

from __future__ import annotations

import gc
import json
import os
import subprocess
import sys
import weakref
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("llvmlite.binding")

from templates import EXP_MUL_SUM, check  # noqa: E402

import accy  # noqa: E402
from accy.runtime import source_cache  # noqa: E402
from accy.runtime.disk_cache import DiskCache  # noqa: E402
from accy.runtime.llvm import LLVMDevice  # noqa: E402
from accy.runtime.signature import TensorSpec  # noqa: E402
from accy.runtime.source_cache import RecentCompiles, SourceEntry  # noqa: E402


@pytest.fixture
def cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("ACCY_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("ACCY_DEBUG", raising=False)
    for name in (source_cache.MEMORY_ENTRIES_ENV, source_cache.MEMORY_BYTES_ENV):
        monkeypatch.delenv(name, raising=False)
    return tmp_path


def index_entries(cache_dir: Path) -> list[Path]:
    return sorted((cache_dir / source_cache.NAMESPACE).glob("*/*.bin"))


def parsed(exe: accy.Executable) -> bool:
    """Whether the executable's text was parsed (its source is computed on first use)."""
    return "source" in exe.__dict__


def test_same_process_recompile_thaws_from_memory_and_holds_nothing(cache_dir: Path) -> None:
    device = LLVMDevice(poison=True)
    text = EXP_MUL_SUM.format(r=5, c=19)
    first = accy.compile(text, device=device)
    assert not first.program.compile_cached and parsed(first)
    want = check(first, seed=2)
    assert len(index_entries(cache_dir)) == 1 and len(device.recent) == 1
    program = weakref.ref(first.program)
    del first
    gc.collect()
    assert program() is None  # the memory holds bytes, not the program
    again = accy.compile(text, device=device)
    assert again.program.compile_cached and device.recent.hits == 1 and not parsed(again)
    got = again(*again.random_inputs(2))
    for g, w in zip(got, want, strict=True):
        np.testing.assert_array_equal(g, w)
    assert [str(s) for s in again.output_specs] == ["tensor<5xf32>", "tensor<5x19xf32>"]
    check(again, seed=4)  # the reference comparison parses the text now
    assert parsed(again) and again.function.sym_name.data == "main"


def test_a_new_process_takes_it_from_disk_unparsed(cache_dir: Path) -> None:
    text = EXP_MUL_SUM.format(r=3, c=7)
    accy.compile(text, device=LLVMDevice())
    fresh = LLVMDevice(poison=True)
    exe = accy.compile(text, device=fresh)
    assert exe.program.compile_cached and not parsed(exe) and fresh.recent.hits == 0 and len(fresh.recent) == 1
    check(exe, seed=1)
    assert exe.stats.kernels >= 1


def test_off_with_the_disk_cache(cache_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    device = LLVMDevice()
    text = EXP_MUL_SUM.format(r=2, c=3)
    accy.compile(text, device=device)
    monkeypatch.setenv("ACCY_CACHE_DIR", "off")
    exe = accy.compile(text, device=device)
    assert not exe.program.compile_cached and device.recent.hits == 0
    check(exe)


def test_memory_off_still_reads_the_disk_index(cache_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(source_cache.MEMORY_ENTRIES_ENV, "0")
    device = LLVMDevice()
    text = EXP_MUL_SUM.format(r=4, c=4)
    accy.compile(text, device=device)
    assert len(device.recent) == 0
    exe = accy.compile(text, device=device)
    assert exe.program.compile_cached and not parsed(exe) and device.recent.hits == 0
    check(exe)


@pytest.mark.parametrize("damage", ["garbage", "truncated", "other_key"])
def test_a_bad_index_entry_is_a_miss(cache_dir: Path, damage: str) -> None:
    text, other = EXP_MUL_SUM.format(r=3, c=5), EXP_MUL_SUM.format(r=6, c=2)
    accy.compile(other, device=LLVMDevice())
    (other_path,) = index_entries(cache_dir)
    accy.compile(text, device=LLVMDevice())
    (path,) = [p for p in index_entries(cache_dir) if p != other_path]
    store = DiskCache(source_cache.NAMESPACE, cache_dir)
    good = store.get(path.stem)
    assert good is not None
    entry = SourceEntry.from_bytes(good)
    assert entry is not None
    spoiled = {
        "garbage": b"\x00not an entry",
        "truncated": good[: len(good) // 2],
        # A well-formed entry leading to the other program's payload: its stamp names another key.
        "other_key": SourceEntry.from_bytes(store.get(other_path.stem) or b"").to_bytes(),  # type: ignore[union-attr]
    }[damage]
    assert spoiled is not None and store.put(path.stem, spoiled)
    exe = accy.compile(text, device=LLVMDevice())
    assert [str(s) for s in exe.input_specs] == ["tensor<3x5xf32>", "tensor<3x5xf32>"]
    check(exe, seed=3)
    assert SourceEntry.from_bytes(store.get(path.stem) or b"") == entry  # written again


def test_recent_compiles_are_bounded_by_entries_and_bytes() -> None:
    spec = TensorSpec("tensor<2xf32>", (2,), np.dtype(np.float32), np.dtype(np.float32))
    entry = SourceEntry("s", "k", "main", (spec,), (spec,))
    recent = RecentCompiles(max_entries=3, max_bytes=100)
    for i in range(5):
        recent.put(f"key{i}", entry, bytes(10))
    assert len(recent) == 3 and recent.get("key0") is None and recent.get("key4") is not None
    recent.get("key2")  # used: key3, then key4, are now the least recent
    recent.put("big", entry, bytes(85))  # 115 bytes: key3 and key4 go
    assert recent.get("key3") is None and recent.get("key4") is None
    assert recent.get("key2") is not None and recent.get("big") is not None
    assert recent.nbytes == 95 and len(recent) == 2
    recent.put("huge", entry, bytes(101))  # past the bound on its own: not kept
    assert recent.get("huge") is None and recent.nbytes == 95


def test_a_spec_round_trips_and_bf16_is_not_indexed() -> None:
    spec = TensorSpec("tensor<3x1xi1>", (3, 1), np.dtype(np.bool_), np.dtype(np.int8))
    data = spec.to_json()
    assert data is not None and TensorSpec.from_json(data) == spec and spec.nbytes == 3
    ml_dtypes = pytest.importorskip("ml_dtypes")
    bf16 = np.dtype(ml_dtypes.bfloat16)
    assert TensorSpec("tensor<2xbf16>", (2,), bf16, bf16).to_json() is None


WARM_CHILD = """
import contextlib, io, json, sys
from accy.cli.run import main
out = io.StringIO()
with contextlib.redirect_stdout(out):
    status = main([sys.argv[1], "--device", sys.argv[2], "--stats"])
stats = json.loads(out.getvalue().strip().splitlines()[-1])
loaded = sorted(m for m in sys.modules if m.startswith(("xdsl", "accy.passes", "accy.dialects.accy", "accy.reference")))
print(json.dumps({"status": status, "stats": stats, "loaded": loaded}))
"""


@pytest.mark.parametrize("device", ["llvm", "opencl"])
def test_a_warm_accy_run_parses_nothing_and_loads_no_xdsl(device: str, tmp_path: Path) -> None:
    """The OpenCL runtime once loaded xDSL (~180 ms) through one constant of the kernel dialect."""
    if device == "opencl":
        pytest.importorskip("pyopencl")
        from accy.runtime import opencl as ocl

        if not ocl.opencl_devices():
            pytest.skip("no OpenCL device")
    program = tmp_path / "p.mlir"
    program.write_text(EXP_MUL_SUM.format(r=4, c=9))
    env = {**os.environ, "ACCY_CACHE_DIR": str(tmp_path / "cache")}
    for name in ("ACCY_DEBUG", "ACCY_TUNE", "ACCY_DUMP_DIR", "ACCY_OVERRIDE_DIR"):
        env.pop(name, None)
    runs = []
    for _ in range(2):
        done = subprocess.run([sys.executable, "-c", WARM_CHILD, str(program), device], env=env, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr[-2000:]
        runs.append(json.loads(done.stdout.strip().splitlines()[-1]))
    cold, warm = runs
    assert cold["status"] == warm["status"] == 0
    assert not cold["stats"]["compile_cached"] and cold["stats"]["parse_s"] > 0 and cold["stats"]["passes_s"] > 0
    assert "xdsl.dialects.builtin" in cold["loaded"]
    assert warm["stats"]["compile_cached"] and warm["stats"]["parse_s"] == warm["stats"]["passes_s"] == 0
    assert warm["stats"]["build_s"] > 0 and warm["stats"]["import_s"] > 0 and warm["stats"]["first_launch_s"] > 0
    assert warm["loaded"] == [], warm["loaded"]  # neither xDSL, the parser's dialects, the passes nor the reference


def test_a_device_making_its_own_profile_has_an_identity_of_its_own(cache_dir: Path) -> None:
    """Two devices of one class over one OpenCL device, each forcing a
    profile (as the conformance suite's do): the same text compiled on each
    gives each its own profile's kernels, never the other's from the index."""
    pytest.importorskip("pyopencl")
    from accy.dialects.target import CPU_PROFILE, GPU_PROFILE, TargetProfile
    from accy.runtime.opencl import OpenCLDevice

    class Profiled(OpenCLDevice):
        def __init__(self, profile: TargetProfile) -> None:
            super().__init__(poison=True)
            self.profile = profile

        def target_profile(self, math_tier: str = "exact") -> TargetProfile:
            return self.profile.replace(math=math_tier)

    try:
        cpu, gpu = Profiled(CPU_PROFILE), Profiled(GPU_PROFILE)
    except Exception as e:  # noqa: BLE001  (no OpenCL platform on this machine)
        pytest.skip(f"no OpenCL device: {e}")
    text = EXP_MUL_SUM.format(r=37, c=301)
    sources: dict[Profiled, set[str]] = {cpu: set(), gpu: set()}
    for device in (cpu, gpu, cpu, gpu):
        exe = accy.compile(text, device=device)
        check(exe, seed=4)
        sources[device].add(exe.program.source)
    assert len(sources[cpu]) == len(sources[gpu]) == 1  # the second compile of each: the same program
    assert "__local" in next(iter(sources[gpu])) and "__local" not in next(iter(sources[cpu]))
