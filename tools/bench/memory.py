"""Memory flatness (issue 11): 10,000 calls and 1,000 compiles in one
process leave resident memory (RSS) and the device's pool where warm-up
left them. On each device (PoCL and the LLVM device by default), for numpy
and accy.Array inputs, results to the host and on the device:

1. `--warm-up` calls (default 1,000), then `--calls` calls (default
   10,000) of a one-kernel program with a constant, the result of each
   dropped before the next; RSS and the pool's state (bytes and buffers
   held by each holder, bytes and buffers cached, buffers created) are read
   after warm-up and at every tenth of the calls;
2. `--compile-warm-up` compiles (default 100), then `--compiles` (default
   1,000), each called once and dropped, read the same way;
3. issue 25: `--distinct-warm-up` distinct programs (default 1,000), then
   `--distinct` more (default 9,000: 10,000 in all), each compiled, called once, checked
   and dropped (`exp(a) + b` over a length of its own), read the same way.
   What a tracing frontend or a tuner does: the caches fill and evict, and
   nothing may grow with the number of programs seen;
4. the same through `@accy.jit` (`retraces`): one jitted function called
   with an array of a new length each time, so each call traces and
   compiles anew and the function's bounded signature cache
   (`$ACCY_JIT_CACHE_SIZE`) drops the oldest.

A case passes when RSS grew by at most `targets.MEMORY` bytes from the end
of warm-up to the end, and the pool's state was the same at every reading.
Each device runs in a process of its own (RSS is the process's).

    .venv/bin/python tools/bench/memory.py [--device opencl,llvm] [--json FILE]

`make bench` (run.py) runs it and puts its rows, with pass/fail, in its JSON.
"""

from __future__ import annotations

import argparse
import gc
import itertools
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any

import chart
import numpy as np
import targets

#: A one-kernel program with a non-splat constant (a buffer of the program's own).
PROGRAM = """
func.func @main(%x: tensor<16xf32>, %y: tensor<16xf32>) -> tensor<16xf32> {
  %c = "accy.constant"() <{value = dense<[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0, 12.0, 13.0, 14.0, 15.0, 16.0]> : tensor<16xf32>}> : () -> tensor<16xf32>
  %m = "accy.mul"(%y, %c) : (tensor<16xf32>, tensor<16xf32>) -> tensor<16xf32>
  %z = "accy.add"(%x, %m) : (tensor<16xf32>, tensor<16xf32>) -> tensor<16xf32>
  func.return %z : tensor<16xf32>
}
"""
READINGS = 10
#: What the growth is measured from (the targets' baseline).
BASELINE = "after warm-up"
PAGE = os.sysconf("SC_PAGE_SIZE")


def rss_bytes() -> int:
    """This process's resident memory."""
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * PAGE


def pool_state(device: Any) -> tuple[object, ...]:
    report = device.memory_report()
    pool = device.pool
    return (report.held, report.buffers, report.cached, len(pool), pool.stats.created)


def held_state(device: Any) -> tuple[object, ...]:
    """What the pool's holders hold (distinct programs make buffers of new
    sizes, so the pool's cache and creation count move; what is held may not)."""
    report = device.memory_report()
    return (report.held, report.buffers)


def track(
    step: Callable[[], None], device: Any, warm_up: int, count: int, state: Callable[[Any], tuple[object, ...]] = pool_state
) -> dict[str, Any]:
    """Runs `step` `warm_up` times, then `count` times, reading RSS and the
    pool (`state`) after warm-up and at every tenth of `count`."""
    for _ in range(warm_up):
        step()
    gc.collect()
    rss = [rss_bytes()]
    pools = [state(device)]
    start = time.perf_counter()
    for reading in range(READINGS):
        for _ in range(count * (reading + 1) // READINGS - count * reading // READINGS):
            step()
        gc.collect()
        rss.append(rss_bytes())
        pools.append(state(device))
    return {
        "count": count,
        "warm_up": warm_up,
        "seconds": time.perf_counter() - start,
        "rss_after_warm_up": rss[0],
        "rss_growth": rss[-1] - rss[0],
        "rss_readings": rss,
        "pool_changes": sum(1 for p in pools[1:] if p != pools[0]),
        "pool_after_warm_up": str(device.memory_report()),
    }


def measure_device(name: str, args: argparse.Namespace) -> list[dict[str, Any]]:
    """Every case on device `name`, in this process."""
    import accy
    import accy.numpy  # noqa: F401  (the retraces' function)

    exe = accy.compile(PROGRAM, device=name)
    device = exe.device
    x = np.linspace(-2.0, 2.0, 16, dtype=np.float32)
    y = np.linspace(3.0, -1.0, 16, dtype=np.float32)
    want = x + y * np.arange(1, 17, dtype=np.float32)
    arrays = [accy.device_put(x, device), accy.device_put(y, device)]
    rows = []
    for inputs, values in (("numpy", [x, y]), ("arrays", arrays)):
        for to_host in (True, False):
            (got,) = exe(*values, to_host=to_host)
            ok = bool(np.allclose(np.array(got, copy=True), want, rtol=1e-6))
            del got
            row = track(lambda values=values, to_host=to_host: exe(*values, to_host=to_host), device, args.warm_up, args.calls)
            rows.append({"device": name, "case": "calls", "inputs": inputs, "to_host": to_host, "ok": ok, **row})

    def compile_and_call() -> None:
        accy.compile(PROGRAM, device=device)(x, y)

    row = track(compile_and_call, device, args.compile_warm_up, args.compiles)
    rows.append({"device": name, "case": "compiles", "inputs": "numpy", "to_host": True, "ok": True, **row})

    lengths = itertools.count(17)
    wrong: list[int] = []

    def compile_distinct_and_call() -> None:
        n = next(lengths)
        a = np.linspace(-1.0, 1.0, n, dtype=np.float32)
        (got,) = accy.compile(distinct_program(n), device=device)(a, a)
        if not np.allclose(got, np.exp(a) + a, rtol=1e-5, atol=1e-6):
            wrong.append(n)

    if args.distinct:
        if args.tracemalloc:
            for _ in range(args.distinct_warm_up):
                compile_distinct_and_call()
            print_python_growth(compile_distinct_and_call, args.distinct, args.tracemalloc)
        row = track(compile_distinct_and_call, device, args.distinct_warm_up, args.distinct, held_state)
        rows.append({"device": name, "case": "distinct", "inputs": "numpy", "to_host": True, "ok": not wrong, **row})
        retraced = accy.jit(lambda a, b: accy.numpy.exp(a) + b, device=device)
        wrong_traces: list[int] = []

        def retrace_and_call() -> None:
            n = next(lengths)
            a = np.linspace(-1.0, 1.0, n, dtype=np.float32)
            if not np.allclose(retraced(a, a), np.exp(a) + a, rtol=1e-5, atol=1e-6):
                wrong_traces.append(n)

        row = track(retrace_and_call, device, args.distinct_warm_up, args.distinct, held_state)
        ok = not wrong_traces and retraced.trace_count == args.distinct_warm_up + args.distinct
        rows.append({"device": name, "case": "retraces", "inputs": "numpy", "to_host": True, "ok": ok, **row})
    return rows


def print_python_growth(step: Callable[[], None], count: int, top: int) -> None:
    """Runs `step` `count` times under tracemalloc and prints to stderr the
    `top` source lines whose Python allocations grew most (where a
    kilobyte a program goes, when it is Python's), beside RSS's growth."""
    import tracemalloc

    gc.collect()
    tracemalloc.start(8)
    before, rss = tracemalloc.take_snapshot(), rss_bytes()
    for _ in range(count):
        step()
    gc.collect()
    after = tracemalloc.take_snapshot()
    stats = after.compare_to(before, "traceback")
    python = sum(s.size_diff for s in stats)
    print(f"tracemalloc over {count} programs: Python +{python:,} B, RSS +{rss_bytes() - rss:,} B", file=sys.stderr)
    for stat in stats[:top]:
        print(f"  {stat.size_diff:+,} B in {stat.count_diff:+,} blocks", file=sys.stderr)
        for line in stat.traceback.format()[-6:]:
            print(f"    {line}", file=sys.stderr)
    tracemalloc.stop()


def distinct_program(n: int) -> str:
    """`exp(a) + b` over tensors of `n` floats: one program per length."""
    t = f"tensor<{n}xf32>"
    return f"""
func.func @main(%a: {t}, %b: {t}) -> {t} {{
  %e = "accy.exp"(%a) : ({t}) -> {t}
  %z = "accy.add"(%e, %b) : ({t}, {t}) -> {t}
  func.return %z : {t}
}}
"""


def judge(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Adds each row's limits (targets.MEMORY) and whether it passed."""
    for row in rows:
        if "error" in row:
            continue
        row["rss_limit"] = _target(row, targets.RSS_GROWTH)
        pool_limit = _target(row, targets.POOL_CHANGES)
        row["passed"] = row["ok"] and row["rss_growth"] <= row["rss_limit"] and row["pool_changes"] <= pool_limit
    return rows


def entries(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The rows as ratio entries of `make bench`'s JSON (chart.py), RSS
    growth and pool changes against their targets."""
    out = []
    for row in rows:
        if "error" in row:
            continue
        size = f"{row['count']} {row['case']}, {row['inputs']} in, {'host' if row['to_host'] else 'device'} out"
        for measure, key in ((targets.RSS_GROWTH, "rss_growth"), (targets.POOL_CHANGES, "pool_changes")):
            value = row[key] if row["ok"] else None
            out.append(chart.entry(row["device"], f"memory_{row['case']}", size, BASELINE, value, _target(row, measure), measure=measure))
    return out


def _target(row: dict[str, Any], measure: str) -> float:
    value = targets.find(targets.MEMORY, f"memory_{row['case']}", BASELINE, (), measure, row["device"])
    assert value is not None, f"targets.MEMORY has no {measure} target for {row['case']}"
    return value


def measure(devices: list[str], argv: list[str]) -> list[dict[str, Any]]:
    """Each device in a subprocess of its own (this script with `--one`)."""
    rows: list[dict[str, Any]] = []
    traced = any(a.startswith("--tracemalloc") for a in argv)  # its report goes to our stderr
    for name in devices:
        done = subprocess.run(
            [sys.executable, __file__, "--one", name, *argv], stdout=subprocess.PIPE, stderr=None if traced else subprocess.PIPE, text=True, check=False
        )
        if done.returncode != 0:
            tail = ((done.stderr or "").strip().splitlines() or ["no output (see above)"])[-1]
            rows.append({"device": name, "error": tail, "passed": False})
            continue
        rows.extend(json.loads(done.stdout.strip().splitlines()[-1]))
    return judge(rows)


def table(rows: list[dict[str, Any]]) -> str:
    lines = [f"{'device':<8} {'case':<9} {'inputs':<7} {'results':<8} {'n':>6} {'RSS growth':>12} {'limit':>10} {'pool changes':>12}  verdict"]
    for r in rows:
        if "error" in r:
            lines.append(f"{r['device']:<8} failed: {r['error']}")
            continue
        results = "host" if r["to_host"] else "device"
        lines.append(
            f"{r['device']:<8} {r['case']:<9} {r['inputs']:<7} {results:<8} {r['count']:>6} {r['rss_growth']:>12,} "
            f"{r['rss_limit']:>10,} {r['pool_changes']:>12}  {'flat' if r['passed'] else 'GROWS' if r['ok'] else 'WRONG'}"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="opencl,llvm", help="devices, comma-separated (default opencl,llvm)")
    parser.add_argument("--calls", type=int, default=10_000)
    parser.add_argument("--warm-up", type=int, default=1_000)
    parser.add_argument("--compiles", type=int, default=1_000)
    parser.add_argument("--compile-warm-up", type=int, default=100)
    parser.add_argument("--distinct", type=int, default=9_000, help="distinct programs after warm-up (0: none)")
    parser.add_argument("--distinct-warm-up", type=int, default=1_000)
    parser.add_argument("--tracemalloc", type=int, default=0, metavar="N",
                        help="first trace the distinct programs' Python allocations and print the N lines that grew most")
    parser.add_argument("--json", metavar="FILE", help="write the rows as JSON to FILE (- for stdout)")
    parser.add_argument("--one", metavar="DEVICE", help=argparse.SUPPRESS)  # a device's subprocess
    args = parser.parse_args(argv)
    if args.one:
        print(json.dumps(measure_device(args.one, args)))
        return 0
    passed_on = _without_values(argv, ("--device", "--json"))
    rows = measure([d.strip() for d in args.device.split(",") if d.strip()], passed_on)
    chart.print_rows(rows, args.json, "Memory over many calls and compiles (bytes; the pool's state compared at each tenth):", table(rows))
    return 0 if all(r.get("passed") for r in rows) else 1


def _without_values(argv: list[str], options: tuple[str, ...]) -> list[str]:
    """`argv` without `options` and their values (both `--opt v` and `--opt=v`)."""
    out, skip = [], False
    for a in argv:
        if skip:
            skip = False
        elif a in options:
            skip = True
        elif not a.startswith(tuple(f"{o}=" for o in options)):
            out.append(a)
    return out


if __name__ == "__main__":
    sys.exit(main())
