"""Dispatch cost (issue 11 item 5): what a warm call of a one-kernel program
on tiny inputs costs, numpy in and out and accy.Arrays in and out
(`to_host=False`), on PoCL and the LLVM device.

    .venv/bin/python tools/bench/dispatch.py [--calls N] [--profile] [--json FILE]

On OpenCL each accy row has a twin: a bare pyopencl loop making the same
OpenCL calls as the accy call (the same kernel object, `set_args`,
`enqueue_nd_range_kernel`, the same buffers made over host memory or copies
in, the copy out and `finish`, or the marker of an asynchronous call), so
`accy - bare` is the host time accy adds (targets.py). Which calls accy
makes is read from the call itself (`program.in_place`), not assumed. A
call on accy.Arrays returns before its kernel ran: both loops wait for
the result (`block_until_ready`, the marker's `wait`) so that neither
loop's queued kernels run, on the same two cores, inside the other's timed
calls. The two loops run in alternating blocks so that the shared
machine's noise falls on both, and `accy - bare` is the median of the
differences of neighbouring blocks (`paired_overhead`). On the LLVM device the whole call is the
measure (there are no driver calls to subtract).

The `jit` row (issue 22) is what `accy.jit` adds over calling its compiled
executable directly: the same program traced from `lambda x, y: x + y`,
called through the jitted function and through `fn.lower(x, y).compile()`
in alternating blocks on every device (its bare column is the executable),
at most 20 us (`JIT_TARGETS`).

Prints median microseconds per call; `--json FILE` (`-`: stdout) writes the
rows, and `make bench` (run.py) puts them in its JSON with their targets.
`--profile` prints the hottest functions of the accy rows (cProfile).
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

import chart
import numpy as np
import targets

import accy

PROGRAM = """
func.func @main(%x: tensor<16xf32>, %y: tensor<16xf32>) -> tensor<16xf32> {
  %z = "accy.add"(%x, %y) : (tensor<16xf32>, tensor<16xf32>) -> tensor<16xf32>
  func.return %z : tensor<16xf32>
}
"""
#: Calls per block of the alternating loops.
BLOCK = 100
#: Untimed calls of each loop first (caches, first launches, the pool's free lists).
WARM_UP = 300

Call = Callable[[], object]

#: What issue 22 measures the jit's warm call against, and its target.
JIT_BASELINE = "accy executable"
JIT_TARGETS = [targets.Target("dispatch_jit", JIT_BASELINE, 20.0, targets.OVERHEAD_US)]


def per_call_seconds(loops: dict[str, Call], calls: int) -> dict[str, list[float]]:
    """Each loop's per-call times: `calls` calls each, in alternating blocks of BLOCK."""
    for call in loops.values():
        for _ in range(WARM_UP):
            call()
    times: dict[str, list[float]] = {name: [] for name in loops}
    clock = time.perf_counter
    for _ in range(max(1, calls // BLOCK)):
        for name, call in loops.items():
            into = times[name]
            for _ in range(BLOCK):
                start = clock()
                call()
                into.append(clock() - start)
    return times


def paired_overhead(accy_s: list[float], bare_s: list[float]) -> float:
    """accy's time over the bare loop's, block by block: the median over
    the alternating blocks of (accy's block median - the next bare block's
    median). The machine's state drifts between blocks (PoCL's unpinned
    threads on one core or two: the bare loop's median moved from 47 to
    66 us between two rows of one run), and a pair of neighbouring blocks
    sees the same state."""
    blocks = min(len(accy_s), len(bare_s)) // BLOCK
    return statistics.median(
        statistics.median(accy_s[i * BLOCK : (i + 1) * BLOCK]) - statistics.median(bare_s[i * BLOCK : (i + 1) * BLOCK])
        for i in range(blocks)
    )


def accy_call(exe: accy.Executable, inputs: list[Any], to_host: bool) -> Call:
    """One accy call; on accy.Arrays, waiting for its result (module docstring)."""
    if to_host:
        return lambda: exe(*inputs)

    def call_arrays() -> object:
        (result,) = exe(*inputs, to_host=False)
        return result.block_until_ready()

    return call_arrays


def bare_opencl(exe: accy.Executable, inputs: list[Any], to_host: bool) -> Call:
    """A pyopencl loop making the OpenCL calls one accy call makes on `inputs`
    (numpy arrays or accy.Arrays), by hand; see the module docstring."""
    import pyopencl as cl

    exe(*inputs, to_host=to_host)  # to learn which numpy inputs accy used in place
    in_place = list(exe.program.in_place)
    program = exe.program
    device = exe.device
    queue, context = device.queue, device.context
    schedule = program.schedule
    (launch,) = [s for s in schedule.steps if hasattr(s, "kernel")]
    (result_slot,) = schedule.result_slots
    nbytes = inputs[0].nbytes
    # accy's pool hands the same buffers out on every call: no OpenCL call.
    copies = [cl.Buffer(context, cl.mem_flags.READ_WRITE, size=nbytes) for _ in inputs]
    result = cl.Buffer(context, cl.mem_flags.READ_WRITE, size=nbytes)
    read_only_host = cl.mem_flags.READ_ONLY | cl.mem_flags.USE_HOST_PTR
    kernel, global_size, local_size = launch.kernel, launch.global_size, launch.local_size
    slots = schedule.arg_slots

    if not to_host:  # accy.Arrays in: their buffers, as they are; an Array out: a marker
        buffers = {slot: a.buffer for slot, a in zip(slots, inputs, strict=True)}
        buffers[result_slot] = result
        args = [buffers[a] for a in launch.args]

        def call_arrays() -> object:
            kernel.set_args(*args)
            cl.enqueue_nd_range_kernel(queue, kernel, global_size, local_size)
            ready = cl.enqueue_marker(queue)
            ready.wait()
            return ready

        return call_arrays

    def call_numpy() -> np.ndarray:
        buffers = {result_slot: result}
        for slot, array, copy, direct in zip(slots, inputs, copies, in_place, strict=True):
            if direct:
                buffers[slot] = cl.Buffer(context, read_only_host, hostbuf=array)
            else:
                cl.enqueue_copy(queue, copy, array, is_blocking=False)
                buffers[slot] = copy
        kernel.set_args(*(buffers[a] for a in launch.args))
        cl.enqueue_nd_range_kernel(queue, kernel, global_size, local_size)
        out = np.empty(16, np.float32)
        cl.enqueue_copy(queue, out, result, is_blocking=False)
        queue.finish()
        return out

    return call_numpy


def measure(devices: list[str], calls: int) -> list[dict[str, Any]]:
    """One row per device and argument kind: medians (and minimums) in
    microseconds of accy's call and, on OpenCL, of the bare loop, and the
    overhead (accy median - bare median)."""
    x = np.arange(16, dtype=np.float32)
    y = np.linspace(-1.0, 1.0, 16, dtype=np.float32)
    rows = []
    for name in devices:
        try:
            exe = accy.compile(PROGRAM, device=name)
        except (ValueError, RuntimeError) as e:
            rows.append({"device": name, "error": str(e)})
            continue
        arrays = [accy.device_put(x, exe.device), accy.device_put(y, exe.device)]
        for kind, inputs, to_host in (("numpy", [x, y], True), ("arrays", arrays, False)):
            (got,) = exe(*inputs, to_host=to_host)
            ok = bool(np.array_equal(np.asarray(got), x + y))
            loops: dict[str, Call] = {"accy": accy_call(exe, inputs, to_host)}
            if name.startswith("opencl"):
                loops["bare"] = bare_opencl(exe, inputs, to_host)
            times = per_call_seconds(loops, calls)
            row: dict[str, Any] = {"device": name, "inputs": kind, "ok": ok, "calls": len(times["accy"])}
            for loop, seconds in times.items():
                row[f"{loop}_us"] = statistics.median(seconds) * 1e6
                row[f"{loop}_min_us"] = min(seconds) * 1e6
            if "bare" in times:
                row["overhead_us"] = paired_overhead(times["accy"], times["bare"]) * 1e6
            rows.append(row)
        rows.append(jit_row(name, x, y, calls))
    return rows


def jit_row(name: str, x: np.ndarray, y: np.ndarray, calls: int) -> dict[str, Any]:
    """accy.jit's warm call against its own compiled executable's, both on
    numpy arrays (the module docstring)."""
    jitted = accy.jit(lambda x, y: x + y, device=name)
    exe = jitted.lower(x, y).compile()
    ok = bool(np.array_equal(jitted(x, y), x + y)) and jitted.trace_count == 1
    times = per_call_seconds({"accy": lambda: jitted(x, y), "bare": lambda: exe(x, y)}, calls)
    row: dict[str, Any] = {"device": name, "inputs": "jit", "ok": ok, "calls": len(times["accy"])}
    for loop, seconds in times.items():
        row[f"{loop}_us"] = statistics.median(seconds) * 1e6
        row[f"{loop}_min_us"] = min(seconds) * 1e6
    row["overhead_us"] = paired_overhead(times["accy"], times["bare"]) * 1e6
    return row


def entries(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The rows as ratio entries of `make bench`'s JSON (chart.py) with
    their targets (targets.DISPATCH): on OpenCL accy's time over the bare
    loop's, elsewhere the whole call."""
    out = []
    for row in rows:
        if "error" in row:
            continue
        workload = f"dispatch_{row['inputs']}"
        if row["inputs"] == "jit":
            value = row["overhead_us"]
            target = targets.find(JIT_TARGETS, workload, JIT_BASELINE, (16,), targets.OVERHEAD_US, row["device"])
            out.append(chart.entry(row["device"], workload, "16", JIT_BASELINE, value if row["ok"] else None, target, measure=targets.OVERHEAD_US))
            continue
        if "overhead_us" in row:
            measure, baseline, value = targets.OVERHEAD_US, "bare pyopencl", row["overhead_us"]
        else:
            measure, baseline, value = targets.CALL_US, "accy", row["accy_us"]
        target = targets.find(targets.DISPATCH, workload, baseline, (16,), measure, row["device"])
        out.append(chart.entry(row["device"], workload, "16", baseline, value if row["ok"] else None, target, measure=measure))
    return out


def profile(devices: list[str], calls: int) -> None:
    """The hottest functions of accy's calls (cProfile), per device and argument kind."""
    x = np.arange(16, dtype=np.float32)
    for name in devices:
        exe = accy.compile(PROGRAM, device=name)
        arrays = [accy.device_put(x, exe.device), accy.device_put(x, exe.device)]
        for kind, inputs, to_host in (("numpy", [x, x], True), ("arrays", arrays, False)):
            for _ in range(WARM_UP):
                exe(*inputs, to_host=to_host)
            profiler = cProfile.Profile()
            profiler.enable()
            for _ in range(calls):
                exe(*inputs, to_host=to_host)
            profiler.disable()
            print(f"\n== {name}, {kind} in and out")
            pstats.Stats(profiler).sort_stats("tottime").print_stats(15)


def table(rows: list[dict[str, Any]]) -> str:
    lines = [f"{'device':<8} {'in/out':<7} {'accy us':>8} {'bare us':>8} {'accy-bare':>9}  check"]
    for r in rows:
        if "error" in r:
            lines.append(f"{r['device']:<8} not available: {r['error']}")
            continue
        bare = f"{r['bare_us']:8.1f}" if "bare_us" in r else f"{'-':>8}"
        over = f"{r['overhead_us']:9.1f}" if "overhead_us" in r else f"{'-':>9}"
        lines.append(f"{r['device']:<8} {r['inputs']:<7} {r['accy_us']:8.1f} {bare} {over}  {'ok' if r['ok'] else 'WRONG'}")
    if any(r.get("inputs") == "jit" for r in rows):
        lines.append("(jit: accy.jit's call; its bare column is the compiled executable called directly)")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=3000, help="timed calls of each loop (default 3000)")
    parser.add_argument("--device", default="opencl,llvm", help="devices, comma-separated (default opencl,llvm)")
    parser.add_argument("--json", metavar="FILE", help="write the rows as JSON to FILE (- for stdout)")
    parser.add_argument("--profile", action="store_true", help="print the hottest functions of accy's calls instead")
    args = parser.parse_args(argv)
    devices = [d.strip() for d in args.device.split(",") if d.strip()]
    if args.profile:
        profile(devices, args.calls)
        return 0
    rows = measure(devices, args.calls)
    chart.print_rows(rows, args.json, "Median microseconds per warm call of a one-kernel program on 16 floats:", table(rows))
    return 0 if all(r.get("ok", True) for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
