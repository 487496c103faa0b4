"""The GPU benchmark: accy on an OpenCL GPU against torch on the same card,
device time against device time, side by side in one run.

For each workload (tools/bench/workloads.py's programs, at GPU sizes):

- accy: `accy.compile(program, device="opencl")`, its inputs on the card
  (`accy.device_put`, as torch's are), then calls with `profile=True` and
  `to_host=False`; a call's device time is the sum of its launches' OpenCL
  profiling-event times (`exe.stats.profile`), the median over `--repeat`
  calls after a warm-up; its result is checked against torch's on the same
  inputs (max |accy - torch| <= 1e-3 * max |torch|, float64 reference for
  matmul and attention where TF32 is off);
- torch: the same computation on CUDA tensors (eager ops,
  `torch.matmul` with TF32 off, `scaled_dot_product_attention`), timed with
  CUDA events around each call, the median likewise;
- accy's and torch's calls alternate, one each a round, so that the card's
  state (clocks, temperature, what ran before) falls on both alike;
- for exp(a)·b+c, also torch's copy of as many floats (`Tensor.copy_`): the
  card's copy bandwidth, read + write counted, which the issue's target for
  that workload is a fraction of.

Issue 23's tensor-core rows (`TENSOR_CORE_ROWS`): matmul 4096 in f16 and
bf16 against torch's (cuBLAS, tensor cores), and in f32 under `math =
"fast"` (accy's TF32) against torch with TF32 allowed. Its short rows
(`SHORT_ROWS`): softmax and layer norm over 65536 rows of 128, against
torch eager and, as a second baseline, `torch.compile` of the same function
(default mode: one generated Triton kernel), timed alike after its
compiling call; JSON `compiled_s` (or `compiled_error` where it fails).
Its f16 rows (`HALF_ROWS`): exp(a)·b+c, row sum, cumsum, softmax and layer
norm at their f32 sizes in f16, against torch eager in f16 (target 1.3x),
each result checked against torch in f32 on the same inputs.
`--list` prints every row, its sizes and its targets, and measures nothing.

Prints a line per workload and size and issue 10's H200 targets
(tools/bench/targets.py), met or missed; with `--json FILE`, writes every
time, rate and ratio as JSON, and the chart of the ratios beside it
(FILE.png, tools/bench/chart.py; needs matplotlib). `--chart-only FILE`
draws the chart of a saved JSON and measures nothing (no GPU, torch or
accy needed). Run on the H200 through the device tool with
tools/gpu/h200.sh (the conformance suite, then this), or alone:

    tools/gpu/nvidia_opencl.sh python3 tools/gpu/bench.py --json $OUT/gpu-bench.json

Then (unless `--no-rnn`) issue 11's RNN cell iterated 100 times on the
card against the host path (tools/bench/rnn.py; JSON `rnn`), and (unless
`--no-chain`) issue 11's chain: exp(a)·b+c over 2^26 floats
on `accy.Array`s, each result the next call's input, 100 calls: wall time
a call against the kernel's device time (target: 1.2x + 50 us, no host
transfer); JSON `chain`.

`--tune` (issue 24) also tunes each row's accy program on the card
(`accy.tune`, at most `--tune-budget` seconds a row, default 30) and times
it beside the untuned one, device times of calls in turn on the same
arrays, the tuned result checked against the untuned one: a line per row
(x untuned: untuned / tuned, target never below 1; the tune's seconds and
candidates; the fields it changed), JSON `tuning` and `tuning_ratios`.
Without torch (as on the CPU machines) `--tune` runs only that.

`--target` sets tile sizes in every program's module target (the fields
of accy/dialects/target.py), to compare them in one run:

    ... tools/gpu/bench.py --only cumsum --target "row_threads = 512, scan_vectors = 8"
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
import chart  # noqa: E402
import rnn  # noqa: E402
import targets  # noqa: E402
from workloads import BY_NAME  # noqa: E402

#: Sizes on the GPU (the CPU bench's are too small to keep a card busy).
GPU_SIZES: dict[str, list[tuple[int, ...]]] = {
    "exp_mul_add": [(1 << 26,)],
    "matmul": [(1024,), (2048,), (4096,)],
    "row_sum": [(16384, 4096)],
    "cumsum": [(16384, 4096)],
    "softmax": [(16384, 4096)],
    "layer_norm": [(16384, 4096)],
    "attention": [(1, 8, 1024, 64), (4, 16, 4096, 64)],
    "attention_causal": [(1, 8, 1024, 64), (4, 16, 4096, 64)],
}
REL_TOLERANCE = 1e-3


class TypedRow(NamedTuple):
    """A row of issue 23 in another element type: tools/bench/workloads.py's
    `workload` with accy's program in `element` (f16, bf16; f32 under
    `target`'s `math = "fast"`: TF32), the same computation in torch in
    `torch_dtype` (TF32 allowed for `tf32`), and the check's tolerance (a
    few roundings of the result type, or TF32's)."""

    workload: str
    element: str
    numpy_dtype: str
    torch_dtype: str
    target: str = ""
    tf32: bool = False
    tolerance: float = REL_TOLERANCE
    #: Checked against torch in f32 on the same inputs, not torch's own result.
    f32_check: bool = False


#: The tensor-core rows, by row name: the matmul in 16-bit floats on the
#: device's own matrix instructions (Hopper's wgmma where it has them),
#: beside it on mma.sync (`_sm80`, no target of its own), and in TF32 (wgmma
#: on Hopper, its rhs packed k-contiguous first; beside it on mma.sync).
TENSOR_CORE_ROWS = {
    "matmul_f16": TypedRow("matmul", "f16", "float16", "float16", tolerance=2e-3),
    "matmul_bf16": TypedRow("matmul", "bf16", "bfloat16", "bfloat16", tolerance=1.6e-2),
    "matmul_f16_sm80": TypedRow("matmul", "f16", "float16", "float16", target='mma = "sm80"', tolerance=2e-3),
    "matmul_bf16_sm80": TypedRow("matmul", "bf16", "bfloat16", "bfloat16", target='mma = "sm80"', tolerance=1.6e-2),
    "matmul_tf32": TypedRow("matmul", "f32", "float32", "float32", target='math = "fast"', tf32=True, tolerance=2e-3),
    "matmul_tf32_sm80": TypedRow(
        "matmul", "f32", "float32", "float32", target='math = "fast", mma = "sm80"', tf32=True, tolerance=2e-3
    ),
}
GPU_SIZES.update({name: [(4096,)] for name in TENSOR_CORE_ROWS})
#: The bandwidth-bound rows in f16 (stored in 16 bits, computed in f32), at
#: their f32 rows' sizes: half the bytes moved, timed against torch eager in
#: f16, checked against torch in f32 on the same inputs (as the issue asks:
#: torch's f16 cumsum of rows of 4096 is 1e-2 of its largest value off).
HALF_ROWS = {
    f"{w}_f16": TypedRow(w, "f16", "float16", "float16", tolerance=4e-3, f32_check=True)
    for w in ("exp_mul_add", "row_sum", "cumsum", "softmax", "layer_norm")
}
GPU_SIZES.update({name: GPU_SIZES[row.workload] for name, row in HALF_ROWS.items()})
#: Attention in f16 and bf16 (tensor cores where the device has them),
#: causal and not, against torch's SDPA (flash) in the same type, checked
#: against torch in f32 on the same inputs.
HALF_ATTENTION_ROWS = {
    f"{w}_{et}": TypedRow(w, et, dtype, dtype, tolerance=tol, f32_check=True)
    for w in ("attention", "attention_causal")
    for et, dtype, tol in (("f16", "float16", 4e-3), ("bf16", "bfloat16", 1.6e-2))
}
GPU_SIZES.update({name: [(4, 16, 4096, 64)] for name in HALF_ATTENTION_ROWS})
TYPED_ROWS = {**TENSOR_CORE_ROWS, **HALF_ROWS, **HALF_ATTENTION_ROWS}

#: Issue 23's short rows, by row name: tools/bench/workloads.py's workload
#: over rows of 128 (several rows a work-group: row_pipeline.py's
#: `row_segments`), timed against torch eager and torch.compile.
SHORT_ROWS = {"softmax_short": "softmax", "layer_norm_short": "layer_norm"}
GPU_SIZES.update({name: [(65536, 128)] for name in SHORT_ROWS})
#: Rows with torch.compile as a second baseline.
COMPILED_BASELINE = frozenset(SHORT_ROWS)


def workload_of(name: str) -> str:
    """The workloads.py workload a row measures."""
    row = TYPED_ROWS.get(name)
    return row.workload if row is not None else SHORT_ROWS.get(name, name)


def flops(name: str, dims: tuple[int, ...]) -> float | None:
    if name.startswith("matmul"):
        return 2.0 * dims[0] ** 3
    if name.startswith("attention"):
        b, h, s, d = dims
        full = 4.0 * b * h * s * s * d
        return full / 2 if workload_of(name) == "attention_causal" else full  # the masked half is skipped
    return None


def moved_bytes(name: str, dims: tuple[int, ...]) -> float | None:
    n = float(np.prod(dims))
    per_element = {"exp_mul_add": 16, "row_sum": 4, "cumsum": 8, "softmax": 8, "layer_norm": 8}.get(workload_of(name))
    narrow = 0.5 if name in HALF_ROWS else 1.0  # the f32 figures' bytes, in 16 bits
    return None if per_element is None else per_element * n * narrow


def accy_seconds(exe: Any, arrays: list[Any]) -> float:
    """The device time of one accy call on device arrays: its launches' profiling-event times."""
    exe(*arrays, profile=True, to_host=False)
    return sum(p.seconds for p in exe.stats.profile)


def torch_seconds(torch: Any, fn: Any, tensors: list[Any]) -> float:
    """The device time of one torch call: CUDA events around it."""
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    fn(torch, *tensors)
    end.record()
    torch.cuda.synchronize()
    return start.elapsed_time(end) / 1e3


def time_torch(torch: Any, fn: Any, tensors: list[Any], repeat: int) -> tuple[float, Any]:
    out = fn(torch, *tensors)
    torch.cuda.synchronize()
    return statistics.median(torch_seconds(torch, fn, tensors) for _ in range(repeat)), out


def copy_tbs(torch: Any, n: int, repeat: int) -> float:
    """The card's copy bandwidth in TB/s (read + write counted): torch's
    `copy_` of n floats."""
    src = torch.randn(n, device="cuda")
    dst = torch.empty_like(src)
    seconds, _ = time_torch(torch, lambda torch, a, b: b.copy_(a), [src, dst], repeat)
    return 8.0 * n / seconds / 1e12


def compiled_by_torch(torch: Any, fn: Any) -> Any:
    """`fn` (a workload's `torch_fn`) through torch.compile, called as `fn`."""
    compiled = torch.compile(lambda *tensors: fn(torch, *tensors))
    return lambda torch, *tensors: compiled(*tensors)


def with_target(program: str, fields: str) -> str:
    """`program` in a module whose `accy.target` sets `fields` (none: as it is)."""
    if not fields:
        return program
    return f"builtin.module attributes {{accy.target = #accy.target<{fields}>}} {{\n{program}}}\n"


def row_program(name: str, dims: tuple[int, ...], target: str = "") -> tuple[str, list[np.ndarray]]:
    """Row `name`'s accy program at `dims` (in its element type, in a module
    whose target sets the row's fields and `target`) and its inputs."""
    row = TYPED_ROWS.get(name)
    w = BY_NAME[workload_of(name)]
    rng = np.random.default_rng(0)
    inputs = [rng.standard_normal(s, dtype=np.float32) for s in w.shapes(dims)]
    program = w.program(dims)
    if row is not None:
        dtype = np.float32 if row.element == "f32" else _numpy_dtype(row.numpy_dtype)
        inputs = [a.astype(dtype) for a in inputs]
        program = program.replace("xf32>", f"x{row.element}>")
        target = ", ".join(t for t in (row.target, target) if t)
    return with_target(program, target), inputs


def measure(
    torch: Any, accy: Any, device: Any, name: str, dims: tuple[int, ...], repeat: int, target: str = ""
) -> dict[str, Any]:
    """One workload at one size: accy's and torch's device times, the check
    of accy's result against torch's, rates (and, for exp(a)·b+c, the copy
    bandwidth); `error` when accy failed."""
    row = TYPED_ROWS.get(name)
    w = BY_NAME[workload_of(name)]
    program, inputs = row_program(name, dims, target)
    record: dict[str, Any] = {"workload": name, "dims": list(dims)}
    try:
        exe = accy.compile(program, device=device)
        arrays = [accy.device_put(a, device) for a in inputs]
        (got,) = exe(*arrays)
        accy_seconds(exe, arrays)  # the profiling queue's first call
        record.update(kernels=exe.stats.kernels, fallbacks=exe.stats.fallbacks)
    except Exception as e:  # reported, and the run fails at the end
        record["error"] = f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
        return record
    if row is not None:
        tensors = [torch.from_numpy(a.astype(np.float32)).cuda().to(getattr(torch, row.torch_dtype)) for a in inputs]
        torch.backends.cuda.matmul.allow_tf32 = row.tf32
    else:
        tensors = [torch.from_numpy(a).cuda() for a in inputs]
    accy_times, torch_times, compiled_times = [], [], []
    with torch.inference_mode():
        want = w.torch_fn(torch, *tensors)
        if row is not None and row.f32_check:
            want = w.torch_fn(torch, *(t.float() for t in tensors))
        compiled = None
        if name in COMPILED_BASELINE:
            try:
                compiled = compiled_by_torch(torch, w.torch_fn)
                compiled(torch, *tensors)  # compiles
            except Exception as e:  # reported; the eager baseline still stands
                record["compiled_error"] = f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
                compiled = None
        torch.cuda.synchronize()
        for _ in range(repeat):
            accy_times.append(accy_seconds(exe, arrays))
            torch_times.append(torch_seconds(torch, w.torch_fn, tensors))
            if compiled is not None:
                compiled_times.append(torch_seconds(torch, compiled, tensors))
    torch.backends.cuda.matmul.allow_tf32 = False
    accy_s, torch_s = statistics.median(accy_times), statistics.median(torch_times)
    if compiled_times:
        record["compiled_s"] = statistics.median(compiled_times)
    record["accy_s"] = accy_s
    want_np = want.float().cpu().numpy()
    err = float(np.abs(got.astype(np.float64) - want_np).max()) / (float(np.abs(want_np).max()) or 1.0)
    tolerance = row.tolerance if row is not None else REL_TOLERANCE
    record.update(torch_s=torch_s, accy_over_torch=accy_s / torch_s, rel_err=err, ok=err <= tolerance)
    f, b = flops(name, dims), moved_bytes(name, dims)
    if f:
        record.update(accy_tflops=f / accy_s / 1e12, torch_tflops=f / torch_s / 1e12)
    if b:
        record.update(accy_tbs=b / accy_s / 1e12, torch_tbs=b / torch_s / 1e12)
    if name == "exp_mul_add":
        record["copy_tbs"] = copy_tbs(torch, int(np.prod(dims)), repeat)
    return record


def _numpy_dtype(name: str) -> Any:
    """numpy's float16, or ml_dtypes' bfloat16."""
    if name == "bfloat16":
        import ml_dtypes

        return ml_dtypes.bfloat16
    return np.dtype(name)


def row_line(r: dict[str, Any]) -> str:
    size = "x".join(map(str, r["dims"]))
    if "error" in r:
        return f"{r['workload']:16s} {size:>16s}  accy failed: {r['error']}"
    rate = (
        f"{r['accy_tflops']:.1f} vs {r['torch_tflops']:.1f} TFLOP/s"
        if "accy_tflops" in r
        else f"{r['accy_tbs']:.2f} vs {r['torch_tbs']:.2f} TB/s"
        if "accy_tbs" in r
        else ""
    )
    if "copy_tbs" in r:
        rate += f" (copy {r['copy_tbs']:.2f})"
    if "compiled_s" in r:
        rate += f"  torch.compile {r['compiled_s'] * 1e3:.3f} ms ({r['compiled_s'] / r['accy_s']:.2f})"
    elif "compiled_error" in r:
        rate += f"  torch.compile failed: {r['compiled_error']}"
    return (
        f"{r['workload']:16s} {size:>16s}  accy {r['accy_s'] * 1e3:8.3f} ms  torch {r['torch_s'] * 1e3:8.3f} ms  "
        f"torch/accy {r['torch_s'] / r['accy_s']:5.2f}  {rate}  kernels {r['kernels']}  rel err {r['rel_err']:.1e}"
        f"{'' if r['ok'] else '  MISMATCH'}"
    )


def ratio_entries(rows: list[dict[str, Any]], device: str) -> list[dict[str, Any]]:
    """accy's speed over torch (torch time / accy time), for exp(a)·b+c its
    fraction of the copy bandwidth, for matmul its TFLOP/s, each with issue
    10's H200 target (targets.GPU). A failed or wrong accy result has no
    value."""
    entries = []
    for r in rows:
        name, dims = r["workload"], tuple(r["dims"])
        size = "x".join(map(str, dims))
        good = r.get("ok") is True
        measures = [("torch", targets.SPEEDUP, chart.speedup(r.get("accy_s"), r.get("torch_s")))]
        if name in COMPILED_BASELINE:
            measures.append(("torch.compile", targets.SPEEDUP, chart.speedup(r.get("accy_s"), r.get("compiled_s"))))
        if name == "exp_mul_add":
            fraction = r["accy_tbs"] / r["copy_tbs"] if "copy_tbs" in r else None
            measures.append(("torch copy", targets.COPY_FRACTION, fraction))
        if name.startswith("matmul"):
            measures.append(("accy", targets.TFLOPS, r.get("accy_tflops")))
        for baseline, measure, value in measures:
            target = targets.find(targets.GPU, name, baseline, dims, measure)
            if value is None and target is None and measure != targets.SPEEDUP:
                continue  # a measure this run (or an older JSON) lacks, with no target to report
            entries.append(chart.entry(device, name, size, baseline, value if good else None, target, measure=measure))
    return entries


#: Issue 11's first target: exp(a)·b+c over 2^26 floats on device arrays,
#: each call's result the next call's input, 100 calls.
CHAIN_DIMS, CHAIN_CALLS = (1 << 26,), 100


def chain_on_device(accy: Any, device: Any, repeat: int) -> dict[str, Any]:
    """Wall time per call of a chain of calls on `accy.Array`s (no host
    transfer between them) against the kernel's device time: issue 11's
    target is at most 1.2x the device time plus 50 us."""
    w = BY_NAME["exp_mul_add"]
    exe = accy.compile(w.program(CHAIN_DIMS), device=device)
    rng = np.random.default_rng(0)
    a, b, c = (accy.device_put(rng.standard_normal(CHAIN_DIMS, dtype=np.float32) * 0.1, device) for _ in range(3))
    times = []
    for _ in range(repeat):
        exe(a, b, c, profile=True, to_host=False)
        times.append(sum(p.seconds for p in exe.stats.profile))
    device_s = statistics.median(times)
    (x,) = exe(a, b, c, to_host=False)
    for _ in range(10):  # the pool's buffers allocated and first touched
        (x,) = exe(x, b, c, to_host=False)
    x.block_until_ready()
    start = time.perf_counter()
    for _ in range(CHAIN_CALLS):
        (x,) = exe(x, b, c, to_host=False)
    x.block_until_ready()  # calls on Arrays return before their kernels finish
    wall_s = (time.perf_counter() - start) / CHAIN_CALLS
    moved = exe.stats.uploads + exe.stats.downloads  # of the last call
    target_s = 1.2 * device_s + 50e-6
    return {
        "workload": "exp_mul_add chained on accy.Arrays", "dims": list(CHAIN_DIMS), "calls": CHAIN_CALLS,
        "wall_s": wall_s, "device_s": device_s, "target_s": target_s, "transfers": moved,
        "met": wall_s <= target_s and moved == 0,
    }


#: Seconds one row's search may take on the GPU (issue 24: at most 30 s a workload).
GPU_TUNE_BUDGET_S = 30.0


def tuned_against_untuned(
    accy: Any, device: Any, name: str, dims: tuple[int, ...], repeat: int, target: str = "",
    budget_s: float = GPU_TUNE_BUDGET_S,
) -> dict[str, Any]:
    """`--tune`: row `name` tuned on `device` (`accy.tune` within `budget_s`
    seconds; `tune_s`, its candidates and the fields it changed) beside the
    same row untuned: device times (`accy_seconds`) of the two executables
    called in turn on the same device arrays, `repeat` pairs after a
    warm-up; `speedup` is the median over the pairs of untuned / tuned
    (above 1, tuned is faster; target: never below 1), or 1 where the two
    programs' kernels are the same character for character (`same_kernels`:
    the search kept the defaults, and the pairs' ratios are noise). The
    tuned result is checked against the untuned one (checked against torch
    by `measure`) at the row's tolerance. Needs no torch; `error` when either failed."""
    from accy.tuning.search import Budget

    program, inputs = row_program(name, dims, target)
    record: dict[str, Any] = {"workload": name, "dims": list(dims), "budget_s": budget_s}
    try:
        start = time.perf_counter()
        result = accy.tune(program, device=device, budget=Budget(program_s=budget_s, kernel_s=min(Budget().kernel_s, budget_s)))
        record["tune_s"] = time.perf_counter() - start
        record["candidates"] = sum(t.status not in ("confirmed", "unconfirmed") for t in result.trials)
        untuned = accy.compile(program, device=device)
        defaults = untuned.device.profile_for(accy.parse_module(program))
        # The fields the search changed from what the row compiles with untuned (none: the same kernels).
        record["fields"] = {k: v for k, v in result.fields.items() if getattr(defaults, k) != v}
        tuned = accy.compile(result.module, device=device)
        arrays = [accy.device_put(a, device) for a in inputs]
        (want,), (got,) = untuned(*arrays), tuned(*arrays)
        for exe in (untuned, tuned):
            accy_seconds(exe, arrays)  # the profiling queue's first call
    except Exception as e:  # reported, and the run fails at the end
        record["error"] = f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
        return record
    pairs = [(accy_seconds(untuned, arrays), accy_seconds(tuned, arrays)) for _ in range(repeat)]
    want64 = want.astype(np.float64)
    err = float(np.abs(got.astype(np.float64) - want64).max()) / (float(np.abs(want64).max()) or 1.0)
    row = TYPED_ROWS.get(name)
    record.update(
        untuned_s=statistics.median(u for u, _ in pairs),
        tuned_s=statistics.median(t for _, t in pairs),
        speedup=statistics.median(u / t for u, t in pairs),
        same_kernels=untuned.program.source == tuned.program.source,
        rel_err=err,
        ok=err <= (row.tolerance if row is not None else REL_TOLERANCE),
    )
    if record["same_kernels"]:
        record["speedup"] = 1.0  # one program timed twice
    return record


def tuned_line(r: dict[str, Any]) -> str:
    size = "x".join(map(str, r["dims"]))
    if "error" in r:
        return f"{r['workload']:16s} {size:>16s}  tuned: failed: {r['error']}"
    fields = " ".join(f"{k}={v}" for k, v in r["fields"].items()) or "(defaults kept)"
    if r.get("same_kernels"):
        fields += " (the same kernels)"
    return (
        f"{r['workload']:16s} {size:>16s}  untuned {r['untuned_s'] * 1e3:8.3f} ms  tuned {r['tuned_s'] * 1e3:8.3f} ms  "
        f"x untuned {r['speedup']:5.2f}  tune {r['tune_s']:5.1f} s ({r['candidates']} candidates, budget "
        f"{r['budget_s']:g} s)  {fields}  rel err {r['rel_err']:.1e}{'' if r['ok'] else '  MISMATCH'}"
    )


def tuned_entries(rows: list[dict[str, Any]], device: str) -> list[dict[str, Any]]:
    """The tuned rows as ratio entries: tuned speed over untuned, target 1 (never slower)."""
    return [
        chart.entry(device, r["workload"], "x".join(map(str, r["dims"])), "untuned", r["speedup"] if r["ok"] else None,
                    1.0, measure=targets.SPEEDUP)
        for r in rows
        if "error" not in r
    ]


def chart_title(device: str, torch_note: str) -> str:
    return f"tools/gpu/bench.py: accy on {device} against {torch_note}, device times"


def chart_only(path: str) -> int:
    """--chart-only: the chart of a saved run's JSON, beside it."""
    doc = json.loads(Path(path).read_text())
    ratios = ratio_entries(doc["rows"], doc.get("device_label", doc["device"]))
    title = chart_title(doc["device"], doc.get("torch", "torch"))
    return 0 if chart.write_chart(ratios, chart.chart_path(path), title) else 1


def list_rows() -> int:
    """--list: every row, its sizes, baselines and targets; nothing measured."""
    for name, sizes in GPU_SIZES.items():
        baselines = ["torch", *(["torch.compile"] if name in COMPILED_BASELINE else [])]
        for dims in sizes:
            found = [f"{t.baseline} {t.value:g}{'' if t.measure == targets.SPEEDUP else ' ' + t.measure}"
                     for t in targets.GPU if t.workload == name and (t.dims is None or t.dims == dims)]
            print(f"{name:16s} {'x'.join(map(str, dims)):>16s}  {workload_of(name):12s} vs {', '.join(baselines):20s} "
                  f"targets: {', '.join(found) or '-'}")
    return 0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description="accy (OpenCL GPU) against torch (CUDA) on the same card, device times.")
    p.add_argument("--only", default="", help=f"comma-separated workloads (default: all; {', '.join(GPU_SIZES)})")
    p.add_argument("--repeat", type=int, default=20)
    p.add_argument(
        "--json", metavar="FILE", help="write the results as JSON to FILE, and their chart beside it (FILE.png)"
    )
    p.add_argument("--chart-only", metavar="JSON", help="measure nothing: chart a saved run's JSON beside it")
    p.add_argument("--list", action="store_true", help="measure nothing: list the rows, their sizes and targets")
    p.add_argument("--no-chain", action="store_true", help="skip the chain of calls on device arrays (issue 11)")
    p.add_argument("--no-rnn", action="store_true", help="skip the RNN cell iterated on the device (issue 11)")
    p.add_argument(
        "--tune", action="store_true",
        help="also tune each row's accy program and time it beside the untuned one (without torch: only that)",
    )
    p.add_argument(
        "--tune-budget", type=float, default=GPU_TUNE_BUDGET_S, metavar="S",
        help=f"seconds a row's search may take (default {GPU_TUNE_BUDGET_S:g})",
    )
    p.add_argument(
        "--target", default="", metavar="FIELDS",
        help='tile sizes for every program\'s module target, e.g. "row_threads = 512, scan_vectors = 8"',
    )
    args = p.parse_args(argv)
    if args.chart_only:
        return chart_only(args.chart_only)
    if args.list:
        return list_rows()
    names = [n for n in args.only.split(",") if n] or list(GPU_SIZES)
    unknown = [n for n in names if n not in GPU_SIZES]
    if unknown:
        p.error(f"unknown workload {', '.join(unknown)} (known: {', '.join(GPU_SIZES)})")
    if args.tune:
        try:
            import torch
        except ModuleNotFoundError:
            return tune_only(names, args)
    import torch

    import accy

    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    device = accy.get_device("opencl")
    device_name = getattr(device, "description", device.name)
    cl_device = getattr(device, "cl_device", None)
    label = f"{device.name} ({cl_device.name.strip()})" if cl_device is not None else device.name
    torch_note = f"torch {torch.__version__} on {torch.cuda.get_device_name()}"
    print(f"accy device: {device_name}; {torch_note}", flush=True)
    rows, tuned_rows = [], []
    for name in names:
        for dims in GPU_SIZES[name]:
            rows.append(measure(torch, accy, device, name, dims, args.repeat, args.target))
            print(row_line(rows[-1]), flush=True)
            if args.tune:
                tuned_rows.append(tuned_against_untuned(accy, device, name, dims, args.repeat, args.target, args.tune_budget))
                print(tuned_line(tuned_rows[-1]), flush=True)
    ratios = ratio_entries(rows, label)
    summary = chart.target_summary(ratios)
    print(f"\nIssue 10's H200 targets: {summary['met']} met, {summary['missed']} missed")
    print("  " + "\n  ".join(summary["lines"]))
    chain = None if args.no_chain else chain_on_device(accy, device, args.repeat)
    if chain is not None:
        print(
            f"\nIssue 11: {chain['workload']} {CHAIN_DIMS[0]}, {CHAIN_CALLS} calls: {chain['wall_s'] * 1e3:.3f} ms a call, "
            f"device {chain['device_s'] * 1e3:.3f} ms, target {chain['target_s'] * 1e3:.3f} ms (1.2x + 50 us), "
            f"{chain['transfers']} host transfers: {'met' if chain['met'] else 'MISSED'}"
        )
    rnn_rows = None if args.no_rnn else rnn.measure(["opencl"], 64, 1024, 100, args.repeat)
    if rnn_rows is not None:
        rnn_ratios = rnn.entries(rnn_rows, gpu=True)
        rnn_summary = chart.target_summary(rnn_ratios)
        print("\nIssue 11: RNN cell h = tanh(h·W + b), batch 64, hidden 1024, 100 trips a call (host: the reference path)")
        print(rnn.table(rnn_rows))
        print("  " + "\n  ".join(rnn_summary["lines"]))
    if args.json:
        doc = {
            "device": device_name,
            "device_label": label,
            "torch": torch_note,
            "repeat": args.repeat,
            "rows": rows,
            "ratios": ratios,
            "targets": {"met": summary["met"], "missed": summary["missed"]},
            "chain": chain,
            "rnn": rnn_rows,
            "rnn_ratios": rnn.entries(rnn_rows, gpu=True) if rnn_rows is not None else None,
            "tuning": tuned_rows if args.tune else None,
            "tuning_ratios": tuned_entries(tuned_rows, label) if args.tune else None,
        }
        chart.write_results(doc, args.json, chart_title(device_name, torch_note))
    if args.tune:
        _tune_summary(tuned_rows, label)
    return 1 if any(r.get("ok") is not True for r in rows + tuned_rows) else 0


def _tune_summary(rows: list[dict[str, Any]], label: str) -> None:
    summary = chart.target_summary(tuned_entries(rows, label))
    print(f"\nTuned against untuned (never slower): {summary['met']} met, {summary['missed']} missed")
    print("  " + "\n  ".join(summary["lines"]))


def tune_only(names: list[str], args: argparse.Namespace) -> int:
    """`--tune` where torch is not installed: only the tuned rows beside the
    untuned ones, on the OpenCL device (`ACCY_...` as usual), printed and,
    with `--json`, written under `tuning`."""
    import accy

    device = accy.get_device("opencl")
    label = getattr(device, "description", device.name)
    print(f"accy device: {label}; torch is not installed: only the tuned rows against the untuned ones", flush=True)
    rows = []
    for name in names:
        for dims in GPU_SIZES[name]:
            rows.append(tuned_against_untuned(accy, device, name, dims, args.repeat, args.target, args.tune_budget))
            print(tuned_line(rows[-1]), flush=True)
    _tune_summary(rows, label)
    if args.json:
        doc = {"device": label, "repeat": args.repeat, "tuning": rows, "tuning_ratios": tuned_entries(rows, label),
               "ratios": tuned_entries(rows, label)}
        chart.write_results(doc, args.json, f"tools/gpu/bench.py --tune: accy tuned against untuned on {label}")
    return 1 if any(r.get("ok") is not True for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
