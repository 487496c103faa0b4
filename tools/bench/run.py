"""`make bench`: accy against numpy (and torch, when installed), side by side,
in one run, as ratios.

For each workload (see workloads.py), in this order so that the machine's
noise falls on neighbouring measurements:

1. accy, in this process: `accy.compile(program, device=...)`, then calls of
   the Executable; its result is checked against numpy's on the same inputs;
2. numpy, then torch CPU when torch is importable, in a baseline worker
   subprocess whose environment lacks OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE
   (they make OpenBLAS pick a slower kernel; docs/performance.md) and pins
   OMP_NUM_THREADS/OPENBLAS_NUM_THREADS to the CPU count; this process's
   environment is never changed;
3. with one thread (unless --no-one-thread): accy in a worker with
   POCL_MAX_PTHREAD_COUNT=1, then numpy and torch in a baseline worker with
   OMP_NUM_THREADS=1 and OPENBLAS_NUM_THREADS=1.

Workers (measure.py --serve) live for the whole run; see measure.py.

Every measurement warms up, then times `--repeat` calls (fewer, at least 3,
when they would take more than `--budget` seconds) and keeps the median and
the minimum. See tools/bench/README.md for the columns.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict
from pathlib import Path
from typing import IO, Any

import numpy as np
from measure import REL_TOLERANCE, RESULT_PREFIX, Settings, measure
from workloads import BY_NAME, Workload, select

MEASURE_SCRIPT = Path(__file__).with_name("measure.py")
# docs/performance.md: set on the project's machines, they slow numpy's OpenBLAS down.
OPENBLAS_TRAPS = ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")
THREAD_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")
SETTLE_S = 0.1


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
    """The accy device, with PoCL's compute units (its default thread count)."""
    try:
        import accy

        d = accy.get_device(device)
    except Exception as e:  # reported in the header; each workload then reports its error
        return f"{device}: unavailable ({e})"
    cl_device = getattr(d, "cl_device", None)
    units = f", {cl_device.max_compute_units} compute units" if cl_device is not None else ""
    return f"{device} = {getattr(d, 'description', d.name)}{units}"


def run_workload(
    w: Workload, args: argparse.Namespace, impls: list[str], cpus: int, workers: dict[str, Worker]
) -> dict[str, Any]:
    """All measurements of one workload: {impl: {"all": result, "1": result}},
    taken one after the other so that the machine's noise falls on all."""
    results: dict[str, dict[str, Any]] = {impl: {} for impl in impls}
    plan = [("all", "accy", None)] + [("all", impl, workers["baseline-all"]) for impl in impls[1:]]
    if not args.no_one_thread:
        plan += [("1", "accy", workers["accy-1"])] + [("1", impl, workers["baseline-1"]) for impl in impls[1:]]
    for thr, impl, worker in plan:
        settings = Settings(args.size, args.repeat, args.budget, cpus if thr == "all" else 1, args.device)
        # Idle OpenMP/OpenBLAS threads of the previous measurement spin briefly.
        time.sleep(SETTLE_S)
        if worker is None:
            results[impl][thr] = measure(impl, w.name, settings, args.seed)
        else:
            results[impl][thr] = worker.measure(impl, w.name, settings, args.seed)
    return {"workload": w.name, "description": w.description, "size": w.label(args.size), "results": results}


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


def times_table(records: list[dict[str, Any]], impls: list[str], cpus: int) -> str:
    header = ["workload", "size", "thr", "accy med", "min"]
    for impl in impls[1:]:
        header += [f"{impl} med", "min", f"accy/{impl}"]
    rows = []
    for rec in records:
        res = rec["results"]
        for thr in ("all", "1"):
            if thr not in res["accy"]:
                continue
            mine = res["accy"][thr]
            row = [
                rec["workload"],
                rec["size"],
                str(cpus) if thr == "all" else "1",
                ms(mine.get("median_s")),
                ms(mine.get("min_s")),
            ]
            for impl in impls[1:]:
                other = res[impl][thr]
                row += [ms(other.get("median_s")), ms(other.get("min_s")), ratio(mine, other)]
            rows.append(row)
    return table(header, rows)


def details_table(records: list[dict[str, Any]]) -> str:
    header = ["workload", "kernels", "fallbacks", "peak MiB", "compile ms", "runs", "max abs err", "rel err", "check"]
    rows = []
    for rec in records:
        a = rec["results"]["accy"]["all"]
        if "error" in a:
            rows.append([rec["workload"], *["-"] * 7, "ERROR"])
            continue
        rows.append(
            [
                rec["workload"],
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
    return table(header, rows, left=1)


def problems(records: list[dict[str, Any]]) -> list[str]:
    """Measurements that failed, and accy results that did not match numpy."""
    found = []
    for rec in records:
        for impl, by_thr in rec["results"].items():
            for thr, r in by_thr.items():
                where = f"{rec['workload']} {impl} ({'default threads' if thr == 'all' else '1 thread'})"
                if "error" in r:
                    found.append(f"{where}: {r['error']}")
                elif r.get("ok") is False:
                    found.append(f"{where}: result check {r['check']}, rel err {r['rel_err']}")
    return found


# --------------------------------------------------------------------------
# Main
# --------------------------------------------------------------------------


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description="accy against numpy (and torch) on the workloads of docs/performance.md, as ratios.")
    p.add_argument("--quick", action="store_true", help="smaller sizes and fewer runs (about a minute)")
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
    p.add_argument("--device", default="opencl", help="accy device (default opencl)")
    p.add_argument("--seed", type=int, default=0, help="seed of the random inputs")
    p.add_argument("--json", metavar="FILE", help="also write the results as JSON to FILE")
    a = p.parse_args(argv)
    a.size = "quick" if a.quick else "default"
    a.repeat = 10 if a.repeat is None else a.repeat
    a.budget = a.budget if a.budget is not None else (1.0 if a.quick else 5.0)
    if a.repeat < 1:
        p.error("--repeat must be at least 1")
    a.only = [n.strip() for item in a.only for n in item.split(",") if n.strip()]
    try:
        a.workloads = select(a.only, a.large)
    except ValueError as e:
        p.error(str(e))
    return a


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    sys.stdout.reconfigure(line_buffering=True)  # type: ignore[attr-defined]  # keep order with stderr progress
    cpus = os.cpu_count() or 1
    torch_note = "torch: not installed"
    impls = ["accy", "numpy"]
    if args.no_torch:
        torch_note = "torch: skipped (--no-torch)"
    elif importlib.util.find_spec("torch") is not None:
        impls.append("torch")
        torch_note = "torch: CPU, in a subprocess"
    header = [
        f"accy bench ({args.size} sizes, {args.repeat} runs, {args.budget:g} s budget per measurement, {cpus} CPUs)",
        f"accy device: {device_description(args.device)}",
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
            records.append(run_workload(w, args, impls, cpus, workers))
    finally:
        for worker in workers.values():
            worker.close()
    print()
    print("Times in ms (median and min of the timed runs); accy/X = accy median / X median, below 1 is accy faster.")
    print(times_table(records, impls, cpus))
    print()
    print(f"accy ({args.device}, {cpus}-thread run): check = max |accy - numpy| <= {REL_TOLERANCE:g} * max |numpy|")
    print(details_table(records))
    found = problems(records)
    if found:
        print("\nproblems:\n  " + "\n  ".join(found))
    print(f"\ntotal {time.perf_counter() - started:.0f} s")
    if args.json:
        Path(args.json).write_text(
            json.dumps(
                {"header": header, "cpus": cpus, "size": args.size, "repeat": args.repeat, "workloads": records},
                indent=2,
            )
            + "\n"
        )
    # A wrong or failed accy result fails the run (after printing everything).
    failed = any(r.get("ok") is not True for rec in records for r in rec["results"]["accy"].values())
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
