"""The compile cache (accy/runtime/compile_cache.py): a function compiled
once is taken whole from disk by a new device (as by a new process), runs
correctly on poisoned buffers, and is a miss whenever anything it depends on
differs (shapes, strictness, math tier); programs with host fallbacks are
never kept and print their remark on every compile; a payload that does not
thaw, and ACCY_DEBUG=3, compile afresh."""

from __future__ import annotations

import pickle
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("llvmlite.binding")

from templates import check  # noqa: E402

import accy  # noqa: E402
from accy.passes.kernelization import kernelize  # noqa: E402
from accy.runtime.compile_cache import NAMESPACE, code_fingerprint, source_digest  # noqa: E402
from accy.runtime.disk_cache import DiskCache  # noqa: E402
from accy.runtime.llvm import LLVMDevice  # noqa: E402

ROOT = Path(__file__).parents[1]

SOFTMAX_SCALE = """
module attributes {{accy.target = #accy.target<math = "{math}">}} {{
func.func @main(%x: tensor<{r}x{c}xf32>, %s: tensor<{c}xf32>) -> tensor<{r}x{c}xf32> {{
  %b = "accy.broadcast"(%s) <{{dims = array<i64: 1>}}> : (tensor<{c}xf32>) -> tensor<{r}x{c}xf32>
  %m = "accy.mul"(%x, %b) : (tensor<{r}x{c}xf32>, tensor<{r}x{c}xf32>) -> tensor<{r}x{c}xf32>
  %0 = "accy.softmax"(%m) <{{axis = -1 : i64}}> : (tensor<{r}x{c}xf32>) -> tensor<{r}x{c}xf32>
  func.return %0 : tensor<{r}x{c}xf32>
}}
}}
"""


@pytest.fixture
def cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("ACCY_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("ACCY_DEBUG", raising=False)
    return tmp_path


def fresh_device() -> LLVMDevice:
    """A new device: its caches in memory are empty, as in a new process."""
    return LLVMDevice(poison=True)


def entries(cache_dir: Path) -> list[Path]:
    return sorted((cache_dir / NAMESPACE).glob("*/*.bin"))


def test_a_new_device_takes_the_function_from_the_cache(cache_dir: Path) -> None:
    text = SOFTMAX_SCALE.format(r=7, c=333, math="exact")
    cold = accy.compile(text, device=fresh_device())
    assert not cold.program.compile_cached
    want = check(cold, seed=3)
    assert len(entries(cache_dir)) == 1
    warm = accy.compile(text, device=fresh_device())
    assert warm.program.compile_cached
    got = check(warm, seed=3)
    np.testing.assert_array_equal(got[0], want[0])
    assert warm.stats.kernels == cold.stats.kernels and warm.stats.peak_bytes == cold.stats.peak_bytes
    assert warm.program.source == cold.program.source
    assert warm.program.jit_cached  # type: ignore[attr-defined]  # and the object code from the object cache


@pytest.mark.parametrize(
    "change",
    [
        dict(r=8, c=333, math="exact"),  # another shape
        dict(r=7, c=332, math="exact"),
        dict(r=7, c=333, math="fast"),  # another target profile
    ],
    ids=["rows", "cols", "math"],
)
def test_anything_the_program_depends_on_is_a_miss(cache_dir: Path, change: dict[str, object]) -> None:
    accy.compile(SOFTMAX_SCALE.format(r=7, c=333, math="exact"), device=fresh_device())
    other = accy.compile(SOFTMAX_SCALE.format(**change), device=fresh_device())
    assert not other.program.compile_cached
    check(other)
    assert len(entries(cache_dir)) == 2


def test_strict_is_part_of_the_key(cache_dir: Path) -> None:
    text = SOFTMAX_SCALE.format(r=5, c=17, math="exact")
    accy.compile(text, device=fresh_device())
    assert not accy.compile(text, device=fresh_device(), strict=True).program.compile_cached
    assert accy.compile(text, device=fresh_device(), strict=True).program.compile_cached


def test_fallbacks_are_never_kept_and_remark_every_time(cache_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    remarks: list[str] = []
    monkeypatch.setattr(kernelize, "remark", remarks.append)
    for n in (1, 2):
        exe = accy.compile(ROOT / "programs" / "fallback.mlir", device=fresh_device())
        assert exe.stats.fallbacks >= 1 and not exe.program.compile_cached
        check(exe, seed=4)
        assert len(remarks) == n * exe.stats.fallbacks
    assert entries(cache_dir) == []


def test_a_payload_that_does_not_thaw_is_compiled_again(cache_dir: Path) -> None:
    text = SOFTMAX_SCALE.format(r=3, c=65, math="exact")
    accy.compile(text, device=fresh_device())
    (path,) = entries(cache_dir)
    key = path.stem
    store = DiskCache(NAMESPACE, cache_dir)
    for garbage in (b"not a pickle", pickle.dumps(("sources", "schedule")), pickle.dumps({"a": 1})):
        assert store.put(key, garbage)  # checksummed as a good entry: only the payload is wrong
        exe = accy.compile(text, device=fresh_device())
        assert not exe.program.compile_cached
        check(exe)
        assert accy.compile(text, device=fresh_device()).program.compile_cached  # rewritten


def test_debug_level_3_always_kernelizes(
    cache_dir: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    text = SOFTMAX_SCALE.format(r=4, c=9, math="exact")
    accy.compile(text, device=fresh_device())
    monkeypatch.setenv("ACCY_DEBUG", "3")
    exe = accy.compile(text, device=fresh_device())
    assert not exe.program.compile_cached
    assert "gpu.module" in capsys.readouterr().err  # the IR after kernelize


def test_any_change_to_the_source_changes_the_digest(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    (tmp_path / "a.py").write_text("x = 1\n")
    (tmp_path / "sub" / "b.py").write_text("y = 2\n")
    first = source_digest(tmp_path)
    (tmp_path / "sub" / "b.py").write_text("y = 3\n")
    edited = source_digest(tmp_path)
    (tmp_path / "sub" / "b.py").rename(tmp_path / "sub" / "c.py")
    renamed = source_digest(tmp_path)
    (tmp_path / "notes.txt").write_text("not code")
    (tmp_path / "sub" / "__pycache__").mkdir()
    (tmp_path / "sub" / "__pycache__" / "c.py").write_text("compiled, not source")
    assert len({first, edited, renamed}) == 3 and source_digest(tmp_path) == renamed
    (tmp_path / "sub" / "deeper").mkdir()
    (tmp_path / "sub" / "deeper" / "d.py").write_text("")  # an empty file in a folder two down counts too
    assert source_digest(tmp_path) not in {first, edited, renamed}
    assert code_fingerprint() == code_fingerprint()  # taken once per process


def test_another_keys_entry_is_a_miss(cache_dir: Path) -> None:
    """An entry copied over another key's (the payload of another shape) is
    never taken for it: the program would be another module's."""
    text, other = SOFTMAX_SCALE.format(r=3, c=65, math="exact"), SOFTMAX_SCALE.format(r=4, c=9, math="exact")
    accy.compile(other, device=fresh_device())
    (other_path,) = entries(cache_dir)
    accy.compile(text, device=fresh_device())
    (path,) = [p for p in entries(cache_dir) if p != other_path]
    store = DiskCache(NAMESPACE, cache_dir)
    payload = store.get(other_path.stem)
    assert payload is not None and store.put(path.stem, payload)
    exe = accy.compile(text, device=fresh_device())
    assert not exe.program.compile_cached
    check(exe)
    assert accy.compile(text, device=fresh_device()).program.compile_cached  # rewritten


def test_the_cache_follows_the_environment_of_each_compile(cache_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """One device (accy.compile's default is one per process) honours
    ACCY_CACHE_DIR as it is at each compile: `off` after a warm compile is a
    compile again, another folder is empty, and the first folder still hits."""
    text = SOFTMAX_SCALE.format(r=3, c=17, math="exact")
    device = fresh_device()
    assert not accy.compile(text, device=device).program.compile_cached
    assert accy.compile(text, device=device).program.compile_cached
    monkeypatch.setenv("ACCY_CACHE_DIR", "off")
    assert not accy.compile(text, device=device).program.compile_cached
    other = cache_dir / "other"
    monkeypatch.setenv("ACCY_CACHE_DIR", str(other))
    assert not accy.compile(text, device=device).program.compile_cached
    assert entries(other) and accy.compile(text, device=device).program.compile_cached
    monkeypatch.setenv("ACCY_CACHE_DIR", str(cache_dir))
    assert accy.compile(text, device=device).program.compile_cached


def test_payload_texts_round_trip_and_damage_is_a_miss() -> None:
    """A payload keeps `extra`'s strings as raw text after its JSON document
    (kernel sources decode fast) and its other values in the document; a
    payload cut inside a text or inside the arrays after it does not thaw."""
    from accy.runtime.compile_cache import pack_schedule, unpack_schedule
    from accy.runtime.llvm import _Launch
    from accy.runtime.schedule import Constant, Schedule
    from accy.runtime.signature import TensorSpec

    constant = np.arange(7, dtype=np.float32)
    spec = TensorSpec("tensor<7xf32>", (7,), np.dtype(np.float32), np.dtype(np.float32))
    schedule = Schedule(1, [], [], [], [Constant(0, constant, constant.nbytes, False)], [0], [spec], 28, 0)
    extra = {"k0": 'define void @k0() {\n  ret void ; "quoted" \\ é\n}\n', "empty": "", "options": ["-O3", 2]}
    payload = pack_schedule(schedule, extra, _Launch)
    assert extra["k0"].encode() in payload  # raw, not JSON-escaped
    unpacked = unpack_schedule(payload, _Launch)
    assert unpacked is not None
    thawed, got = unpacked
    assert got == extra and list(got) == list(extra)
    assert np.array_equal(thawed.steps[0].data, constant) and thawed.result_types == [spec]
    doc_end = payload.index(extra["k0"].encode())
    for cut in (doc_end + 5, len(payload) - 3):
        assert unpack_schedule(payload[:cut], _Launch) is None
