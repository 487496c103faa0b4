"""The benchmarks' tooling (tools/bench, tools/gpu): the workloads added for
issue 10's targets against the reference interpreter, the ratio entries both
benchmarks write, and the chart with and without matplotlib. Nothing is
timed and no device is used."""

from __future__ import annotations

import importlib.util
import json
import os
import sys
import time
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pytest

import accy

TOOLS = Path(__file__).parents[2] / "tools"
sys.path.insert(0, str(TOOLS / "bench"))

import chart  # noqa: E402
import dispatch  # noqa: E402
import memory  # noqa: E402
import targets  # noqa: E402
from workloads import BY_NAME  # noqa: E402


def load(path: Path, name: str) -> ModuleType:
    """A script of tools/ as a module under its own name (tools/gpu/bench.py
    would otherwise clash with the tools/bench folder)."""
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


bench_run = load(TOOLS / "bench" / "run.py", "bench_run")
gpu_bench = load(TOOLS / "gpu" / "bench.py", "gpu_bench")


@pytest.mark.parametrize(("name", "dims"), [("matmul_bias_relu", (24,)), ("attention_causal", (1, 2, 19, 8))])
def test_workload_matches_reference(name: str, dims: tuple[int, ...]) -> None:
    w = BY_NAME[name]
    rng = np.random.default_rng(0)
    inputs = [rng.standard_normal(s, dtype=np.float32) for s in w.shapes(dims)]
    (want,) = accy.reference.run(accy.parse_module(w.program(dims)), "main", *inputs)
    np.testing.assert_allclose(w.numpy_fn(*inputs), want, rtol=1e-5, atol=1e-5)


def timing(median_s: float, ok: bool | None = None) -> dict[str, Any]:
    return {"median_s": median_s} if ok is None else {"median_s": median_s, "ok": ok}


def test_cpu_ratios_and_targets() -> None:
    records = [
        {
            "workload": "cumsum",
            "size": "64x64",
            "results": {
                "accy:llvm": {"all": timing(1.0, True), "1": timing(2.0, True)},
                "numpy": {"all": timing(12.0), "1": timing(12.0)},
                "torch": {"all": timing(1.5), "1": timing(3.0)},
            },
        },
        {
            "workload": "softmax",
            "size": "64x64",
            "results": {"accy:llvm": {"all": timing(1.0, False)}, "numpy": {"all": timing(9.0)}, "torch": {"all": {}}},
        },
    ]
    entries = bench_run.ratio_entries(records, ["llvm"], ["numpy", "torch"], 2)
    by = {(e["workload"], e["threads"], e["baseline"]): e for e in entries}
    assert len(entries) == 6
    assert by["cumsum", 2, "numpy"] | {"value": 12.0, "target": 10.0, "meets": True} == by["cumsum", 2, "numpy"]
    assert by["cumsum", 2, "torch"]["value"] == 1.5 and by["cumsum", 2, "torch"]["meets"] is False
    assert by["cumsum", 1, "numpy"]["value"] == 6.0 and by["cumsum", 1, "numpy"]["target"] is None
    # a wrong accy result has no value, and misses its target
    assert by["softmax", 2, "numpy"]["value"] is None and by["softmax", 2, "numpy"]["meets"] is False
    summary = chart.target_summary(entries)
    assert (summary["met"], summary["missed"]) == (1, 2)
    assert summary["lines"][0] == "met    cumsum 64x64 on llvm (2 threads) vs numpy: 12.00x (target 10.00x)"


def test_gpu_ratios_and_targets() -> None:
    rows = [
        {
            "workload": "exp_mul_add",
            "dims": [64],
            "accy_s": 1.0,
            "torch_s": 2.0,
            "ok": True,
            "accy_tbs": 3.8,
            "copy_tbs": 4.0,
        },
        {"workload": "matmul", "dims": [4096], "accy_s": 2.0, "torch_s": 1.0, "ok": True, "accy_tflops": 31.0},
        {"workload": "matmul", "dims": [1024], "accy_s": 2.0, "torch_s": 1.0, "ok": True, "accy_tflops": 20.0},
        {"workload": "cumsum", "dims": [8, 8], "error": "RuntimeError: no"},
    ]
    entries = gpu_bench.ratio_entries(rows, "opencl (GPU)")
    by = {(e["workload"], e["size"], e["measure"]): e for e in entries}
    assert (
        by["exp_mul_add", "64", targets.COPY_FRACTION] | {"value": 0.95, "target": 0.9, "meets": True}
        == by["exp_mul_add", "64", targets.COPY_FRACTION]
    )
    assert by["exp_mul_add", "64", targets.SPEEDUP]["value"] == 2.0
    assert by["matmul", "4096", targets.SPEEDUP]["meets"] is False  # 0.5 < 0.6
    assert by["matmul", "4096", targets.TFLOPS]["meets"] is True
    assert by["matmul", "1024", targets.SPEEDUP]["target"] is None
    assert (
        by["cumsum", "8x8", targets.SPEEDUP] | {"value": None, "target": 1.3, "meets": False}
        == by["cumsum", "8x8", targets.SPEEDUP]
    )


def test_gpu_short_rows_against_torch_and_torch_compile() -> None:
    """Issue 23's short rows: 65536 x 128, each against torch eager (target
    1.0x) and torch.compile (no target); a failed torch.compile has no value."""
    assert gpu_bench.GPU_SIZES["softmax_short"] == gpu_bench.GPU_SIZES["layer_norm_short"] == [(65536, 128)]
    assert gpu_bench.workload_of("layer_norm_short") == "layer_norm"
    assert gpu_bench.moved_bytes("softmax_short", (65536, 128)) == 8.0 * 65536 * 128
    rows = [
        {"workload": "softmax_short", "dims": [65536, 128], "accy_s": 1.0, "torch_s": 1.25, "compiled_s": 0.5,
         "ok": True},
        {"workload": "layer_norm_short", "dims": [65536, 128], "accy_s": 1.0, "torch_s": 0.8, "ok": True,
         "compiled_error": "RuntimeError: no triton"},
    ]  # fmt: skip
    by = {(e["workload"], e["baseline"]): e for e in gpu_bench.ratio_entries(rows, "opencl (GPU)")}
    assert len(by) == 4
    assert by["softmax_short", "torch"] | {"value": 1.25, "target": 1.0, "meets": True} == by["softmax_short", "torch"]
    assert by["softmax_short", "torch.compile"]["value"] == 0.5 and by["softmax_short", "torch.compile"]["target"] is None
    assert by["layer_norm_short", "torch"]["meets"] is False
    assert by["layer_norm_short", "torch.compile"]["value"] is None
    assert "torch.compile 500.000 ms (0.50)" in gpu_bench.row_line(rows[0] | {"kernels": 1, "rel_err": 0.0})


def ratios() -> list[dict[str, Any]]:
    return [
        chart.entry("opencl", "softmax", "8x8", "numpy", 6.0, 5.0, threads=2),
        chart.entry("opencl", "softmax", "8x8", "numpy", 3.0, None, threads=1),
        chart.entry("llvm", "cumsum", "8x8", "torch", None, 2.0, threads=2),
        chart.entry("llvm", "matmul", "8", "accy", 31.0, 30.0, measure=targets.TFLOPS),
    ]


def test_chart_is_written(tmp_path: Path) -> None:
    # matplotlib is a test dependency: the chart is drawn, not skipped.
    png = chart.write_results({"ratios": ratios()}, tmp_path / "out" / "bench.json", "test")
    assert png == tmp_path / "out" / "bench.png"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert json.loads((tmp_path / "out" / "bench.json").read_text())["ratios"][0]["meets"] is True


def test_without_matplotlib_the_json_is_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    for name in [m for m in sys.modules if m == "matplotlib" or m.startswith("matplotlib.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib raises ImportError
    assert chart.write_results({"ratios": ratios()}, tmp_path / "bench.json", "test") is None
    assert (tmp_path / "bench.json").exists() and not (tmp_path / "bench.png").exists()
    out = capsys.readouterr().out.strip().splitlines()
    assert len(out) == 1 and out[0].startswith("chart: no PNG, matplotlib is not importable")


def test_dispatch_entries_are_at_most_targets() -> None:
    """Issue 11's dispatch targets are maxima: accy's time over the bare
    pyopencl loop on OpenCL (15 us), the whole call on the LLVM device
    (20 us); a wrong result has no value."""
    rows = [
        {"device": "opencl", "inputs": "numpy", "ok": True, "accy_us": 60.0, "bare_us": 50.0, "overhead_us": 10.0},
        {"device": "opencl", "inputs": "arrays", "ok": True, "accy_us": 66.0, "bare_us": 50.0, "overhead_us": 16.0},
        {"device": "llvm", "inputs": "numpy", "ok": True, "accy_us": 19.0},
        {"device": "llvm", "inputs": "arrays", "ok": False, "accy_us": 9.0},
        {"device": "opencl", "error": "no OpenCL platform"},
    ]
    got = [(e["device"], e["workload"], e["measure"], e["value"], e["target"], e["meets"]) for e in dispatch.entries(rows)]
    assert got == [
        ("opencl", "dispatch_numpy", targets.OVERHEAD_US, 10.0, 15.0, True),
        ("opencl", "dispatch_arrays", targets.OVERHEAD_US, 16.0, 15.0, False),
        ("llvm", "dispatch_numpy", targets.CALL_US, 19.0, 20.0, True),
        ("llvm", "dispatch_arrays", targets.CALL_US, None, 20.0, False),
    ]
    assert chart.target_summary(dispatch.entries(rows))["missed"] == 2


def test_memory_rows_pass_only_when_flat() -> None:
    """A memory case passes when RSS grew by at most its target after
    warm-up and the pool never changed; its entries say the same."""

    def row(case: str, growth: int, changes: int) -> dict[str, Any]:
        return {"device": "llvm", "case": case, "inputs": "numpy", "to_host": True, "ok": True, "count": 10,
                "rss_growth": growth, "pool_changes": changes}

    rows = memory.judge([row("calls", 4096, 0), row("calls", 2 << 20, 0), row("compiles", 0, 1), row("compiles", 2 << 20, 0)])
    assert [r["passed"] for r in rows] == [True, False, False, True]
    assert [r["rss_limit"] for r in rows] == [1 << 20, 1 << 20, 2 << 20, 2 << 20]
    meets = [(e["measure"], e["meets"]) for e in memory.entries(rows)]
    assert meets == [
        (targets.RSS_GROWTH, True), (targets.POOL_CHANGES, True),
        (targets.RSS_GROWTH, False), (targets.POOL_CHANGES, True),
        (targets.RSS_GROWTH, True), (targets.POOL_CHANGES, False),
        (targets.RSS_GROWTH, True), (targets.POOL_CHANGES, True),
    ]


def test_gpu_bench_tunes_a_row_beside_the_untuned_one_without_torch(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """tools/gpu/bench.py --tune's piece that needs no torch, on PoCL's GPU
    profile (work-group kernels): a row tuned within its budget, timed beside
    the untuned one, its result checked against the untuned one's."""
    pytest.importorskip("pyopencl")
    from accy.dialects.target import GPU_PROFILE
    from accy.runtime.opencl import OpenCLDevice, opencl_devices

    if not opencl_devices():
        pytest.skip("no OpenCL device")

    class GpuProfiled(OpenCLDevice):
        def target_profile(self, math_tier: str = "exact") -> Any:
            return GPU_PROFILE.replace(math=math_tier)

    monkeypatch.setenv("ACCY_CACHE_DIR", str(tmp_path / "cache"))  # the search runs cold
    device = GpuProfiled(poison=True)
    r = gpu_bench.tuned_against_untuned(accy, device, "softmax", (37, 300), repeat=3, budget_s=3.0)
    assert "error" not in r, r
    assert r["ok"] and r["rel_err"] <= gpu_bench.REL_TOLERANCE, r
    assert r["candidates"] >= 1 and r["untuned_s"] > 0 and r["tuned_s"] > 0 and r["speedup"] > 0
    assert set(r["fields"]) <= set(GPU_PROFILE.__dataclass_fields__), r["fields"]
    # The same kernels (the defaults kept) are one program timed twice: a speedup of 1, not the noise.
    if not r["fields"]:
        assert r["same_kernels"], r
    if r["same_kernels"]:
        assert r["speedup"] == 1.0 and "(the same kernels)" in gpu_bench.tuned_line(r)
    line = gpu_bench.tuned_line(r)
    assert line.startswith("softmax") and "37x300" in line and "x untuned" in line and "MISMATCH" not in line
    (entry,) = gpu_bench.tuned_entries([r, {"workload": "cumsum", "dims": [4], "error": "no"}], "opencl (GPU profile)")
    assert entry["baseline"] == "untuned" and entry["target"] == 1.0 and entry["value"] == r["speedup"]
    # A wrong tuned result has no value.
    (wrong,) = gpu_bench.tuned_entries([{**r, "ok": False}], "opencl (GPU profile)")
    assert wrong["value"] is None


def test_a_side_script_past_its_time_is_stopped_with_its_children(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """make bench's side scripts (run.py's `side_script`): one past its time
    is an error row, and the processes it started stop with it (memory.py's
    per-device process once ran on for an hour after its parent was killed)."""
    pid_file = tmp_path / "child.pid"
    script = tmp_path / "slow.py"
    script.write_text(
        "import subprocess, sys, time\n"
        "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'])\n"
        f"open({str(pid_file)!r}, 'w').write(str(child.pid))\n"
        "time.sleep(60)\n"
    )
    slow = ModuleType("slow")
    slow.__file__ = str(script)
    monkeypatch.setitem(bench_run.SIDE_SCRIPTS, "dispatch", (slow, [], []))
    monkeypatch.setattr(bench_run, "SIDE_TIMEOUT_S", 3)
    (row,) = bench_run.side_script("dispatch", ["llvm"], quick=False)
    assert row["error"] == "dispatch.py took over 3 s"
    child = int(pid_file.read_text())
    for _ in range(100):  # reaped by init once killed: gone from the process table
        try:
            os.kill(child, 0)
        except ProcessLookupError:
            break
        time.sleep(0.05)
    else:
        os.kill(child, 9)
        raise AssertionError("the side script's child outlived it")
