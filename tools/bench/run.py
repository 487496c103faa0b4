"""`make bench`: accy against numpy (and torch, when installed), side by side,
in one run, as ratios.

For each workload (see workloads.py), in this order so that the machine's
noise falls on neighbouring measurements:

1. accy on each device of `--device` (default: every one of opencl and llvm
   that works here), in this process: `accy.compile(program, device=...)`,
   then calls of the Executable; its result is checked against numpy's on
   the same inputs;
2. numpy, then torch CPU when torch is importable, in a baseline worker
   subprocess whose environment lacks OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE
   (they make OpenBLAS pick a slower kernel; docs/performance.md) and pins
   OMP_NUM_THREADS/OPENBLAS_NUM_THREADS to the CPU count; this process's
   environment is never changed;
3. with one thread (unless --no-one-thread): accy on each device in a worker
   with POCL_MAX_PTHREAD_COUNT=1 and ACCY_THREADS=1, then numpy and torch in
   a baseline worker with OMP_NUM_THREADS=1 and OPENBLAS_NUM_THREADS=1.

Then (unless --no-compile) the compile times of examples/demo.mlir on each
device: a new process with an empty cache folder (cold), then a second new
process on the same folder (warm).

Workers (measure.py --serve) live for the whole run; see measure.py.

Every measurement warms up (at least 0.2 s), then times `--repeat` calls (fewer, at least 3,
when they would take more than `--budget` seconds) and keeps the median and
the minimum. After the tables, issue 10's CPU targets (targets.py), met or
missed. `--json FILE` writes everything, with a `ratios` list (accy's speed
over each baseline, its target), and the chart of the ratios beside it
(chart.py; needs matplotlib); `--chart-only FILE` redraws that chart. See
tools/bench/README.md for the columns and the JSON.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict
from pathlib import Path
from typing import IO, Any

import chart
import dispatch
import latency
import memory
import numpy as np
import rnn
import targets
import tuning
from measure import REL_TOLERANCE, RESULT_PREFIX, Settings, measure
from workloads import BY_NAME, Workload, select

MEASURE_SCRIPT = Path(__file__).with_name("measure.py")
# docs/performance.md: set on the project's machines, they slow numpy's OpenBLAS down.
OPENBLAS_TRAPS = ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")
THREAD_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")
#: Seconds between measurements: the previous one's idle OpenMP/OpenBLAS/torch
#: threads spin that long or more (at 0.1 s, PoCL's softmax right after torch's
#: measured 6.2 ms median against 4.2 quiet).
SETTLE_S = 0.5
#: The accy devices a run compares when --device is not given (those that work here).
DEFAULT_DEVICES = ("opencl", "llvm")


def subprocess_env(impl: str, threads: int | None) -> dict[str, str]:
    """The environment of a measuring subprocess: baselines without the
    OpenBLAS traps; accy as the user runs it. `threads` pins numpy/OpenMP
    threads (and PoCL's, for accy with one thread); None keeps the defaults."""
    env = dict(os.environ)
    if impl != "accy":
        for name in OPENBLAS_TRAPS:
            env.pop(name, None)
    if threads is not None:
        env.update({name: str(threads) for name in THREAD_VARS})
        if impl == "accy":
            env["POCL_MAX_PTHREAD_COUNT"] = str(threads)
            env["ACCY_THREADS"] = str(threads)
    return env


class Worker:
    """A `measure.py --serve` subprocess with its own environment (see
    `subprocess_env`), kept for the whole run. A worker that dies answers
    its request with an error naming its exit code and last stderr line, and
    is started afresh for the next request."""

    def __init__(self, env: dict[str, str]) -> None:
        self.env = env
        self.proc: subprocess.Popen[str] | None = None
        self.stderr: IO[str] | None = None

    def _start(self) -> subprocess.Popen[str]:
        if self.proc is None or self.proc.poll() is not None:
            self.stderr = tempfile.TemporaryFile("w+")
            self.proc = subprocess.Popen(
                [sys.executable, str(MEASURE_SCRIPT), "--serve"],
                env=self.env,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=self.stderr,
                text=True,
            )
        return self.proc

    def measure(self, impl: str, name: str, settings: Settings, seed: int) -> dict[str, Any]:
        proc = self._start()
        assert proc.stdin is not None and proc.stdout is not None
        request = {"impl": impl, "workload": name, "seed": seed, "settings": asdict(settings)}
        try:
            proc.stdin.write(json.dumps(request) + "\n")
            proc.stdin.flush()
        except BrokenPipeError:
            pass  # reported below, from the worker's exit
        for line in proc.stdout:
            if line.startswith(RESULT_PREFIX):
                return json.loads(line[len(RESULT_PREFIX) :])
        return {"error": f"worker exited with code {proc.wait()}: {self._stderr_tail()}"}

    def _stderr_tail(self) -> str:
        if self.stderr is None:
            return ""
        self.stderr.seek(0)
        lines = self.stderr.read().strip().splitlines()
        return lines[-1] if lines else "no output"

    def close(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            assert self.proc.stdin is not None
            self.proc.stdin.close()
            self.proc.wait()


def device_description(device: str) -> str:
    """The accy device, with its default thread count (PoCL: its compute units)."""
    try:
        import accy

        d = accy.get_device(device)
    except Exception as e:  # reported in the header; each workload then reports its error
        return f"{device}: unavailable ({e})"
    cl_device = getattr(d, "cl_device", None)
    if cl_device is not None:
        threads = f", {cl_device.max_compute_units} compute units"
    else:
        threads = f", {d.threads} threads" if hasattr(d, "threads") else ""
    return f"{device} = {getattr(d, 'description', d.name)}{threads}"


def working_devices(names: list[str]) -> list[str]:
    """The devices of `names` that start here (the default: opencl and llvm)."""
    import accy

    found = []
    for name in names:
        try:
            accy.get_device(name)
        except Exception:
            continue
        found.append(name)
    return found


def accy_impl(device: str) -> str:
    """The results key of accy on `device`."""
    return f"accy:{device}"


def run_workload(
    w: Workload, args: argparse.Namespace, baselines: list[str], cpus: int, workers: dict[str, Worker]
) -> dict[str, Any]:
    """All measurements of one workload: {impl: {"all": result, "1": result}}
    with impl `accy:<device>` for each device, then the baselines, taken one
    after the other so that the machine's noise falls on all."""
    impls = [accy_impl(d) for d in args.devices] + baselines
    results: dict[str, dict[str, Any]] = {impl: {} for impl in impls}
    plan = [("all", d, None) for d in args.devices] + [("all", b, workers["baseline-all"]) for b in baselines]
    if not args.no_one_thread:
        plan += [("1", d, workers["accy-1"]) for d in args.devices] + [
            ("1", b, workers["baseline-1"]) for b in baselines
        ]
    for thr, what, worker in plan:
        impl, device = ("accy", what) if what in args.devices else (what, "")
        settings = Settings(args.size, args.repeat, args.budget, cpus if thr == "all" else 1, device)
        # Idle OpenMP/OpenBLAS threads of the previous measurement spin briefly.
        time.sleep(SETTLE_S)
        key = accy_impl(device) if impl == "accy" else impl
        if worker is None:
            results[key][thr] = measure(impl, w.name, settings, args.seed)
        else:
            results[key][thr] = worker.measure(impl, w.name, settings, args.seed)
    return {"workload": w.name, "description": w.description, "size": w.label(args.size), "results": results}


DEMO = Path(__file__).resolve().parents[2] / "examples" / "demo.mlir"
#: The child of a compile measurement: creates the device (not timed: a
#: process's one-time cost), times accy.compile, and runs the program once
#: (an OpenCL program's binary reaches the disk cache at its build).
COMPILE_CHILD = """
import json, sys, time
import accy
device = accy.get_device(sys.argv[1])
text = open(sys.argv[2]).read()
start = time.perf_counter()
exe = accy.compile(text, device=device)
seconds = time.perf_counter() - start
exe(*exe.random_inputs(seed=0))
print(json.dumps({"compile_s": seconds, "compile_cached": exe.program.compile_cached}))
"""


def compile_times(device: str, repeat: int = 3) -> dict[str, Any]:
    """Cold and warm compile of the demo program on `device`, `repeat` times
    each (medians): cold in a new process with an empty cache folder, warm in
    a second new process on the folder the first one filled."""
    cold, warm = [], []
    try:
        for _ in range(repeat):
            with tempfile.TemporaryDirectory(prefix="accy-bench-cache-") as folder:
                env = dict(os.environ, ACCY_CACHE_DIR=folder)
                for into in (cold, warm):
                    run = subprocess.run(
                        [sys.executable, "-c", COMPILE_CHILD, device, str(DEMO)],
                        env=env,
                        capture_output=True,
                        text=True,
                        timeout=300,
                    )
                    if run.returncode != 0:
                        lines = run.stderr.strip().splitlines()
                        return {"error": lines[-1] if lines else f"exit status {run.returncode}"}
                    into.append(json.loads(run.stdout.strip().splitlines()[-1])["compile_s"])
    except subprocess.TimeoutExpired:
        return {"error": "a compile took over 300 s"}
    cold_s, warm_s = statistics.median(cold), statistics.median(warm)
    return {"cold_s": cold_s, "warm_s": warm_s, "cold_over_warm": cold_s / warm_s, "runs": repeat}


#: Issue 11's scripts and their arguments (default; with --quick: fewer calls and compiles).
SIDE_SCRIPTS = {
    "dispatch": (dispatch, [], ["--calls", "1000"]),
    "memory": (memory, [], ["--calls", "2000", "--warm-up", "200", "--compiles", "200", "--compile-warm-up", "50", "--distinct", "1000", "--distinct-warm-up", "200"]),
    "rnn": (rnn, [], ["--trips", "20", "--repeat", "3"]),
    # Issue 24 item 2: fresh accy-run processes, cold and warm, and the same-process recompile.
    "latency": (latency, [], ["--runs", "3", "--recompiles", "100"]),
    # Tuned against untuned (issue 24 item 3): only with --tune (the searches take minutes).
    "tuning": (tuning, [], ["--quick"]),
}


#: Seconds a side script may take, and a device of memory.py (run a device
#: at a time): its 10,000 distinct programs and 10,000 retraces are 20,000
#: compiles, 272 ms each on PoCL on a 2-core Intel Xeon (90 minutes; 78 ms
#: on the LLVM device): `--quick` or `--no-memory` for a shorter bench.
SIDE_TIMEOUT_S = 900
MEMORY_DEVICE_TIMEOUT_S = 7200


def side_script(name: str, devices: list[str], quick: bool) -> list[dict[str, Any]]:
    """The rows of tools/bench/<name>.py (dispatch cost, memory flatness) on
    `devices`, run in a new process of its own (memory.py: one a device):
    RSS is the process's, and neither should feel what the workloads left
    behind. A row with "error" when the script failed."""
    if name == "memory" and len(devices) > 1:
        return [row for d in devices for row in side_script(name, [d], quick)]
    module, default, fewer = SIDE_SCRIPTS[name]
    argv = [sys.executable, module.__file__, "--json", "-", "--device", ",".join(devices), *(fewer if quick else default)]
    timeout = MEMORY_DEVICE_TIMEOUT_S if name == "memory" else SIDE_TIMEOUT_S
    # A session of its own, so that a script past its time is stopped with
    # the processes it started (memory.py's per-device one ran on for an
    # hour beside the rest of the bench once only its parent was killed).
    with subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True) as proc:
        try:
            stdout, stderr = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
            return [{"device": ",".join(devices), "error": f"{name}.py took over {timeout} s"}]
    lines = stdout.strip().splitlines()
    if not lines or not lines[-1].startswith("["):
        tail = (stderr.strip().splitlines() or [f"exit status {proc.returncode}"])[-1]
        return [{"device": ",".join(devices), "error": f"{name}.py: {tail}"}]
    return json.loads(lines[-1])


# --------------------------------------------------------------------------
# Printing
# --------------------------------------------------------------------------


def ms(seconds: float | None) -> str:
    return "-" if seconds is None else f"{seconds * 1e3:.4g}"


def ratio(a: dict[str, Any], b: dict[str, Any]) -> str:
    if "median_s" not in a or "median_s" not in b or not b["median_s"]:
        return "-"
    return f"{a['median_s'] / b['median_s']:.2f}"


def table(header: list[str], rows: list[list[str]], left: int = 3) -> str:
    """Columns padded to their widest cell; the first `left` left-aligned."""
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]

    def line(cells: list[str]) -> str:
        return "  ".join(
            c.ljust(wd) if i < left else c.rjust(wd) for i, (c, wd) in enumerate(zip(cells, widths, strict=True))
        )

    return "\n".join([line(header), line(["-" * wd for wd in widths]), *(line(r) for r in rows)])


def ratio_pairs(devices: list[str], baselines: list[str]) -> list[tuple[str, str]]:
    """The ratio columns: each accy device over each baseline, then each
    later device over the first (llvm/opencl)."""
    pairs = [(accy_impl(d), b) for d in devices for b in baselines]
    pairs += [(accy_impl(d), accy_impl(devices[0])) for d in devices[1:]]
    return pairs


def short(impl: str) -> str:
    return impl.removeprefix("accy:")


def times_table(records: list[dict[str, Any]], devices: list[str], baselines: list[str], cpus: int) -> str:
    impls = [accy_impl(d) for d in devices] + baselines
    pairs = ratio_pairs(devices, baselines)
    header = ["workload", "size", "thr"]
    for impl in impls:
        header += [f"{short(impl)} med", "min"]
    header += [f"{short(a)}/{short(b)}" for a, b in pairs]
    rows = []
    for rec in records:
        res = rec["results"]
        for thr in ("all", "1"):
            if not any(thr in res[impl] for impl in impls):
                continue
            row = [rec["workload"], rec["size"], str(cpus) if thr == "all" else "1"]
            for impl in impls:
                r = res[impl].get(thr, {})
                row += [ms(r.get("median_s")), ms(r.get("min_s"))]
            row += [ratio(res[a].get(thr, {}), res[b].get(thr, {})) for a, b in pairs]
            rows.append(row)
    return table(header, rows)


def details_table(records: list[dict[str, Any]], devices: list[str]) -> str:
    header = [
        "workload",
        "device",
        "kernels",
        "fallbacks",
        "peak MiB",
        "compile ms",
        "runs",
        "max abs err",
        "rel err",
        "check",
    ]
    rows = []
    for rec in records:
        for device in devices:
            a = rec["results"][accy_impl(device)]["all"]
            if "error" in a:
                rows.append([rec["workload"], device, *["-"] * 7, "ERROR"])
                continue
            rows.append(
                [
                    rec["workload"],
                    device,
                    str(a["kernels"]),
                    str(a["fallbacks"]),
                    f"{a['peak_bytes'] / 2**20:.1f}",
                    f"{a['compile_s'] * 1e3:.0f}",
                    str(a["runs"]),
                    "-" if a["max_abs_err"] is None else f"{a['max_abs_err']:.2e}",
                    "-" if a["rel_err"] is None else f"{a['rel_err']:.2e}",
                    a["check"],
                ]
            )
    return table(header, rows, left=2)


def compile_table(compiles: dict[str, dict[str, Any]]) -> str:
    header = ["device", "cold ms", "warm ms", "cold/warm", "cold / first device's cold"]
    rows = []
    first = next(iter(compiles.values()), {})
    for device, c in compiles.items():
        if "error" in c:
            rows.append([device, "-", "-", "-", "-"])
            continue
        versus = f"{c['cold_s'] / first['cold_s']:.2f}" if "cold_s" in first else "-"
        rows.append([device, ms(c["cold_s"]), ms(c["warm_s"]), f"{c['cold_over_warm']:.1f}", versus])
    return table(header, rows, left=1)


def ratio_entries(
    records: list[dict[str, Any]], devices: list[str], baselines: list[str], cpus: int
) -> list[dict[str, Any]]:
    """accy's speed over each baseline (baseline median / accy median), per
    workload, device and thread count, with issue 10's CPU target at the
    default thread count (targets.py). A failed measurement, or an accy
    result that did not match numpy's, has no value."""
    entries = []
    for rec in records:
        dims = tuple(int(d) for d in rec["size"].split("x"))
        for device in devices:
            for thr in ("all", "1"):
                a = rec["results"][accy_impl(device)].get(thr)
                if a is None:
                    continue
                for b in baselines:
                    base = rec["results"][b].get(thr, {})
                    value = chart.speedup(a.get("median_s"), base.get("median_s")) if a.get("ok") else None
                    target = targets.find(targets.CPU, rec["workload"], b, dims) if thr == "all" else None
                    threads = cpus if thr == "all" else 1
                    entries.append(chart.entry(device, rec["workload"], rec["size"], b, value, target, threads))
    return entries


def chart_title(cpus: int) -> str:
    return f"make bench: accy on this machine's CPU ({cpus} cores) against numpy and torch"


def chart_only(path: str) -> int:
    """--chart-only: the chart of a saved run's JSON, beside it."""
    doc = json.loads(Path(path).read_text())
    records = doc["workloads"]
    baselines = [impl for impl in (records[0]["results"] if records else {}) if not impl.startswith("accy:")]
    ratios = ratio_entries(records, doc["devices"], baselines, doc["cpus"])
    return 0 if chart.write_chart(ratios, chart.chart_path(path), chart_title(doc["cpus"])) else 1


def problems(
    records: list[dict[str, Any]], compiles: dict[str, dict[str, Any]], sides: dict[str, list[dict[str, Any]]]
) -> list[str]:
    """Measurements that failed, and accy results that did not match numpy
    (or, in the dispatch and memory scripts, the expected values)."""
    found = []
    for rec in records:
        for impl, by_thr in rec["results"].items():
            for thr, r in by_thr.items():
                where = f"{rec['workload']} {impl} ({'default threads' if thr == 'all' else '1 thread'})"
                if "error" in r:
                    found.append(f"{where}: {r['error']}")
                elif r.get("ok") is False:
                    found.append(f"{where}: result check {r['check']}, rel err {r['rel_err']}")
    found += [f"compile on {device}: {c['error']}" for device, c in compiles.items() if "error" in c]
    for name, rows in sides.items():
        found += [f"{name} on {r['device']}: {r['error']}" for r in rows if "error" in r]
        found += [f"{name} on {r['device']}: wrong result" for r in rows if r.get("ok") is False]
    return found


# --------------------------------------------------------------------------
# Main
# --------------------------------------------------------------------------


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        description="accy against numpy (and torch) on the workloads of docs/performance.md, as ratios."
    )
    p.add_argument("--quick", action="store_true", help="smaller sizes, fewer runs, calls and compiles")
    p.add_argument("--large", action="store_true", help="add matmul 2048^2")
    p.add_argument(
        "--only",
        action="append",
        default=[],
        metavar="NAME",
        help=f"run only NAME (repeatable or comma-separated; {', '.join(BY_NAME)})",
    )
    p.add_argument("--repeat", type=int, help="timed calls per measurement (default 10)")
    p.add_argument(
        "--budget",
        type=float,
        help="seconds of timed calls before --repeat is cut, to at least 3 (default 5; 1 with --quick)",
    )
    p.add_argument("--no-one-thread", action="store_true", help="skip the one-thread measurements")
    p.add_argument("--no-torch", action="store_true", help="skip torch even when it is installed")
    p.add_argument(
        "--device",
        action="append",
        default=[],
        metavar="NAME",
        help="accy devices, side by side (repeatable or comma-separated; default: opencl and llvm, those that work here)",
    )
    p.add_argument("--no-compile", action="store_true", help="skip the cold/warm compile times of the demo program")
    p.add_argument("--no-dispatch", action="store_true", help="skip the dispatch cost of a tiny call (dispatch.py)")
    p.add_argument("--no-memory", action="store_true", help="skip memory over many calls and compiles (memory.py)")
    p.add_argument("--no-rnn", action="store_true", help="skip the RNN cell iterated on the device (rnn.py)")
    p.add_argument("--no-latency", action="store_true", help="skip the latency to a first result of fresh accy-run processes (latency.py)")
    p.add_argument(
        "--tune", action="store_true",
        help="also tune cumsum, softmax and matmul and time them tuned against untuned (tuning.py; a minute or "
        "more; `make bench` passes it)",
    )
    p.add_argument("--seed", type=int, default=0, help="seed of the random inputs")
    p.add_argument(
        "--json", metavar="FILE", help="also write the results as JSON to FILE, and their chart beside it (FILE.png)"
    )
    p.add_argument("--chart-only", metavar="JSON", help="measure nothing: chart a saved run's JSON beside it")
    a = p.parse_args(argv)
    a.size = "quick" if a.quick else "default"
    a.repeat = 10 if a.repeat is None else a.repeat
    a.budget = a.budget if a.budget is not None else (1.0 if a.quick else 5.0)
    if a.repeat < 1:
        p.error("--repeat must be at least 1")
    a.only = [n.strip() for item in a.only for n in item.split(",") if n.strip()]
    a.device = [n.strip() for item in a.device for n in item.split(",") if n.strip()]
    try:
        a.workloads = select(a.only, a.large)
    except ValueError as e:
        p.error(str(e))
    return a


#: The side sections' tables, in the order printed: (side, its module, heading).
SIDE_TABLES = (
    ("dispatch", dispatch, "Dispatch cost (dispatch.py): median us of a warm call on 16 floats; accy-bare = what accy adds to its OpenCL calls"),
    ("memory", memory, "Memory (memory.py): RSS growth in bytes after warm-up, and readings at which the pool's state changed"),
    ("rnn", rnn, "RNN cell iterated on the device (rnn.py): ms a call; us a trip beyond the kernels' device time"),
    ("latency", latency, "Latency to a first result (latency.py): fresh accy-run processes, cold = empty cache, warm = the same cache"),
    ("tuning", tuning, "Tuned against untuned (tuning.py): medians of calls in turn; x untuned = untuned / tuned (above 1, tuned is faster)"),
)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.chart_only:
        return chart_only(args.chart_only)
    sys.stdout.reconfigure(line_buffering=True)  # type: ignore[attr-defined]  # keep order with stderr progress
    cpus = os.cpu_count() or 1
    args.devices = args.device or working_devices(list(DEFAULT_DEVICES))
    if not args.devices:
        print(f"accy bench: none of the devices {', '.join(DEFAULT_DEVICES)} works here", file=sys.stderr)
        return 1
    torch_note = "torch: not installed"
    baselines = ["numpy"]
    if args.no_torch:
        torch_note = "torch: skipped (--no-torch)"
    elif importlib.util.find_spec("torch") is not None:
        baselines.append("torch")
        torch_note = "torch: CPU, in a subprocess"
    header = [
        f"accy bench ({args.size} sizes, {args.repeat} runs, {args.budget:g} s budget per measurement, {cpus} CPUs)",
        *(f"accy device: {device_description(d)}" for d in args.devices),
        f"numpy {np.__version__}: in a subprocess without {' and '.join(OPENBLAS_TRAPS)}",
        torch_note,
    ]
    print("\n".join(header), flush=True)
    started = time.perf_counter()
    records = []
    workers = {
        "baseline-all": Worker(subprocess_env("numpy", cpus)),
        "baseline-1": Worker(subprocess_env("numpy", 1)),
        "accy-1": Worker(subprocess_env("accy", 1)),
    }
    try:
        for w in args.workloads:
            print(f"  {w.name} ({w.description}, {w.label(args.size)}) ...", file=sys.stderr, flush=True)
            records.append(run_workload(w, args, baselines, cpus, workers))
    finally:
        for worker in workers.values():
            worker.close()
    compiles: dict[str, dict[str, Any]] = {}
    if not args.no_compile:
        for device in args.devices:
            print(f"  compile of {DEMO.name} on {device} ...", file=sys.stderr, flush=True)
            compiles[device] = compile_times(device)
    # Issue 11's dispatch cost, memory flatness and iterated RNN cell: not workloads, so not with --only.
    sides: dict[str, list[dict[str, Any]]] = {}
    for name, skip in (
        ("dispatch", args.no_dispatch),
        ("memory", args.no_memory),
        ("rnn", args.no_rnn),
        ("latency", args.no_latency),
    ):
        if not skip and not args.only:
            print(f"  {name}.py on {', '.join(args.devices)} ...", file=sys.stderr, flush=True)
            time.sleep(SETTLE_S)
            sides[name] = side_script(name, args.devices, args.quick)
    if args.tune:
        print(f"  tuning.py on {', '.join(args.devices)} ...", file=sys.stderr, flush=True)
        time.sleep(SETTLE_S)
        sides["tuning"] = side_script("tuning", args.devices, args.quick)
    print()
    print("Times in ms (median and min of the timed runs); X/Y = X median / Y median, below 1 is X faster.")
    print(times_table(records, args.devices, baselines, cpus))
    print()
    print(f"accy ({cpus}-thread run): check = max |accy - numpy| <= {REL_TOLERANCE:g} * max |numpy|")
    print(details_table(records, args.devices))
    if compiles:
        print()
        print(
            f"accy.compile of {DEMO.name} (medians of 3): cold = new process, empty cache; warm = new process, same cache"
        )
        print(compile_table(compiles))
    for side, module, heading in SIDE_TABLES:
        if side in sides:
            print()
            print(heading)
            print(module.table(sides[side]))
    ratios = ratio_entries(records, args.devices, baselines, cpus)
    ratios += dispatch.entries(sides.get("dispatch", [])) + memory.entries(sides.get("memory", []))
    ratios += rnn.entries(sides.get("rnn", [])) + tuning.entries(sides.get("tuning", []))
    summary = chart.target_summary(ratios)
    ran = {rec["workload"] for rec in records}
    unchecked = list(
        dict.fromkeys(
            f"{t.workload} vs {t.baseline}" for t in targets.CPU if t.workload in ran and t.baseline not in baselines
        )
    )
    if summary["lines"] or unchecked:
        print()
        print(
            f"Targets (issue 10's CPU targets: accy's speed over the baseline at {cpus} threads, above 1 accy is"
            f" faster; issue 11's dispatch cost, memory and RNN trip overhead, at most): {summary['met']} met, {summary['missed']} missed"
        )
        print("  " + "\n  ".join(summary["lines"]))
        if unchecked:
            print(f"  not checked ({torch_note}): {', '.join(unchecked)}")
    found = problems(records, compiles, sides)
    if found:
        print("\nproblems:\n  " + "\n  ".join(found))
    print(f"\ntotal {time.perf_counter() - started:.0f} s")
    if args.json:
        doc = {
            "header": header,
            "cpus": cpus,
            "size": args.size,
            "repeat": args.repeat,
            "devices": args.devices,
            "baselines": baselines,
            "workloads": records,
            "ratios": ratios,
            "targets": {"met": summary["met"], "missed": summary["missed"], "not_checked": unchecked},
            "compile": compiles,
            "dispatch": sides.get("dispatch"),
            "memory": sides.get("memory"),
            "rnn": sides.get("rnn"),
            "latency": sides.get("latency"),
            "tuning": sides.get("tuning"),
        }
        chart.write_results(doc, args.json, chart_title(cpus))
    # A wrong or failed accy result fails the run (after printing everything).
    failed = any(
        r.get("ok") is not True for rec in records for d in args.devices for r in rec["results"][accy_impl(d)].values()
    )
    side_failed = any("error" in r or r.get("ok") is False for rows in sides.values() for r in rows)
    return 1 if failed or side_failed or any("error" in c for c in compiles.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
