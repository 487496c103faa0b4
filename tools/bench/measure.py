"""Timing one implementation (accy, numpy or torch) of one workload.

`run.py` times accy through this module in its own process, and every other
measurement in a worker: this file run as `measure.py --serve` in a
subprocess with the environment that measurement needs (threads, OpenBLAS
variables). A worker lives for the whole run, so imports, PoCL's start-up
and torch's thread pool are paid once, not per measurement. It reads one JSON
request a line on stdin,

    {"impl": "numpy", "workload": "softmax", "seed": 0,
     "settings": {"size": "quick", "repeat": 10, "budget_s": 1.0, "threads": 1, "device": "opencl"}}

and answers each with one line `RESULT_PREFIX + JSON` on stdout (other
output, such as a library's messages, goes to stderr or is ignored): the
`Timing` fields, plus accy's details for "accy", or `{"error": text}`.

Run without `--serve`, it takes one measurement from its options and prints
the JSON, which is handy on its own:

    python tools/bench/measure.py --impl numpy --workload softmax --size quick
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
from workloads import BY_NAME, SIZES, Workload

IMPLS = ("accy", "numpy", "torch")
RESULT_PREFIX = "@@bench-result "
# Fewest timed runs kept when a slow workload would overrun its budget.
MIN_RUNS = 3
#: Least seconds of untimed warm-up calls (besides at least `warmup` calls):
#: on this kind of VM, calls on fresh inputs run up to 1.5x slower for their
#: first few tens of milliseconds (exp(a)*b+c on PoCL: 1.7, 1.4, 1.3 ms ...
#: down to 1.1), which two warm-up calls of a 1 ms kernel do not cover.
WARMUP_S = 0.2
# accy's result passes when max |accy - numpy| <= REL_TOLERANCE * max |numpy|.
REL_TOLERANCE = 1e-3


@dataclass(frozen=True)
class Timing:
    """Seconds per call over `runs` timed calls, after warm-up."""

    median_s: float
    min_s: float
    runs: int


def time_calls(call: Callable[[], object], repeat: int, budget_s: float, warmup: int = 2) -> Timing:
    """Calls `call` untimed, `warmup` times and for at least WARMUP_S seconds
    (first launches, caches, page faults), then `repeat` times timed; fewer
    (but at least MIN_RUNS) when the last warm-up call says `repeat` calls
    would take longer than `budget_s`."""
    start = time.perf_counter()
    for _ in range(max(warmup, 1) - 1):
        call()
    while time.perf_counter() - start < WARMUP_S:
        call()
    start = time.perf_counter()
    call()
    once = time.perf_counter() - start
    runs = repeat
    if once * repeat > budget_s:
        runs = min(repeat, max(MIN_RUNS, int(budget_s / once)))
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        call()
        times.append(time.perf_counter() - start)
    return Timing(statistics.median(times), min(times), runs)


def compare(got: np.ndarray, want: np.ndarray) -> dict[str, Any]:
    """Max absolute error (NaN if either side has a NaN the other lacks), that
    error relative to max |want|, and whether it is within REL_TOLERANCE."""
    if got.shape != want.shape:
        return {"max_abs_err": None, "rel_err": None, "ok": False, "check": f"shape {got.shape} != {want.shape}"}
    diff = np.abs(got.astype(np.float64) - want.astype(np.float64))
    max_abs = float(diff.max()) if diff.size else 0.0  # NaN when any difference is NaN
    rel = max_abs / (float(np.abs(want).max()) or 1.0) if want.size else 0.0
    ok = bool(rel <= REL_TOLERANCE)
    return {"max_abs_err": max_abs, "rel_err": rel, "ok": ok, "check": "ok" if ok else "FAILED"}


@dataclass(frozen=True)
class Settings:
    """How to measure: the workload size, timed calls and their time budget,
    threads (for torch; numpy and PoCL take theirs from the environment), the
    accy device name."""

    size: str = "default"
    repeat: int = 10
    budget_s: float = 5.0
    threads: int = 1
    device: str = "opencl"


def measure_numpy(w: Workload, inputs: list[np.ndarray], s: Settings) -> dict[str, Any]:
    return asdict(time_calls(lambda: w.numpy_fn(*inputs), s.repeat, s.budget_s))


def measure_torch(w: Workload, inputs: list[np.ndarray], s: Settings) -> dict[str, Any]:
    import torch

    torch.set_num_threads(s.threads)
    tensors = [torch.from_numpy(a) for a in inputs]
    with torch.inference_mode():
        timing = time_calls(lambda: w.torch_fn(torch, *tensors), s.repeat, s.budget_s)
    return {**asdict(timing), "version": torch.__version__}


def measure_accy(w: Workload, inputs: list[np.ndarray], s: Settings) -> dict[str, Any]:
    """Compiles `w` through `accy.compile`, times calls of the Executable, and
    checks its result against numpy's on the same inputs. The device is
    created before the compile clock starts: its context is a one-time cost
    of the process, not of the program."""
    import accy

    accy.get_device(s.device)
    start = time.perf_counter()
    exe = accy.compile(w.program(w.size_dims(s.size)), device=s.device)
    compile_s = time.perf_counter() - start
    timing = time_calls(lambda: exe(*inputs), s.repeat, s.budget_s)
    (got,) = exe(*inputs)
    stats = exe.stats
    return {
        **asdict(timing),
        "compile_s": compile_s,
        "kernels": stats.kernels,
        "fallbacks": stats.fallbacks,
        "peak_bytes": stats.peak_bytes,
        **compare(got, w.numpy_fn(*inputs)),
    }


MEASURE: dict[str, Callable[[Workload, list[np.ndarray], Settings], dict[str, Any]]] = {
    "accy": measure_accy,
    "numpy": measure_numpy,
    "torch": measure_torch,
}


def measure(impl: str, name: str, settings: Settings, seed: int = 0) -> dict[str, Any]:
    """One measurement as a JSON-able dict; a failure becomes {"error": text}."""
    w = BY_NAME[name]
    try:
        return MEASURE[impl](w, w.inputs(settings.size, seed), settings)
    except ImportError as e:
        return {"error": f"{impl}: not installed ({e})"}
    except Exception as e:  # the benchmark reports a failing workload and goes on
        lines = str(e).strip().splitlines()
        return {"error": f"{type(e).__name__}: {lines[0] if lines else ''}"}


def serve() -> None:
    """The worker loop (see the module docstring). Python-level prints during
    a measurement go to stderr so that stdout carries only results."""
    results = sys.stdout
    sys.stdout = sys.stderr
    for line in sys.stdin:
        if not line.strip():
            continue
        request = json.loads(line)
        settings = Settings(**request["settings"])
        result = measure(request["impl"], request["workload"], settings, request.get("seed", 0))
        results.write(RESULT_PREFIX + json.dumps(result) + "\n")
        results.flush()


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description="Time one implementation of one bench workload; prints JSON.")
    p.add_argument("--serve", action="store_true", help="answer JSON requests on stdin (run.py's workers)")
    p.add_argument("--impl", choices=IMPLS, default="numpy")
    p.add_argument("--workload", choices=sorted(BY_NAME), default="exp_mul_add")
    p.add_argument("--size", choices=SIZES, default="default")
    p.add_argument("--repeat", type=int, default=10)
    p.add_argument("--budget", type=float, default=5.0, help="seconds of timed calls before repeat is cut")
    p.add_argument("--threads", type=int, default=1, help="torch.set_num_threads (numpy and PoCL read the environment)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--device", default="opencl")
    a = p.parse_args(argv)
    if a.serve:
        serve()
        return 0
    settings = Settings(a.size, a.repeat, a.budget, a.threads, a.device)
    print(json.dumps(measure(a.impl, a.workload, settings, a.seed)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
