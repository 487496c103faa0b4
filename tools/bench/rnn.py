"""An RNN cell iterated on the device (issue 11 item 4): h = tanh(h·W + b)
with `accy.iterate`, batch 64, hidden 1024, 100 trips a call (`--batch`,
`--hidden`, `--trips`).

For each device (PoCL and the LLVM device by default; the H200 through
tools/gpu/bench.py), with every argument an `accy.Array` on the device and
the result left there:

- `device_s`: the kernels' own time in one call (`profile=True`: device
  events on OpenCL, each launch's wall time on the LLVM device);
- `wall_s`: the median wall time of a call, waiting for its result;
- `host_s`: the same program on the host path it took before iterate was
  lowered (the reference interpreter: the loop in numpy, its matmuls
  included), numpy in and out;
- `over_us`: (wall_s - device_s) / trips, the time a trip costs beyond its
  kernels (target: at most 30 us, `targets.RNN`); `speedup`: host_s /
  wall_s (target on the GPU: at least 20).

The result is checked against the host path's. `--json FILE` (`-`:
stdout) writes the rows; `make bench` (run.py) runs this script and puts
them in its JSON with their targets.

    .venv/bin/python tools/bench/rnn.py [--device opencl,llvm] [--json FILE]
"""

from __future__ import annotations

import argparse
import statistics
import time
from typing import Any

import chart
import numpy as np
import targets

import accy

DOT = "lhs_batch = array<i64>, rhs_batch = array<i64>, lhs_contract = array<i64: 1>, rhs_contract = array<i64: 0>"


def program(batch: int, hidden: int, trips: int) -> str:
    """h = tanh(h·W + b), `trips` times, from h0."""
    h, w, b = f"tensor<{batch}x{hidden}xf32>", f"tensor<{hidden}x{hidden}xf32>", f"tensor<{hidden}xf32>"
    return f"""func.func @main(%h0: {h}, %w: {w}, %b: {b}) -> {h} {{
  %bb = "accy.broadcast"(%b) <{{dims = array<i64: 1>}}> : ({b}) -> {h}
  %r = "accy.iterate"(%h0) <{{count = {trips} : i64}}> ({{
  ^bb0(%hi: {h}):
    %m = "accy.dot_general"(%hi, %w) <{{{DOT}}}> : ({h}, {w}) -> {h}
    %s = "accy.add"(%m, %bb) : ({h}, {h}) -> {h}
    %t = "accy.tanh"(%s) : ({h}) -> {h}
    "accy.yield"(%t) : ({h}) -> ()
  }}) : ({h}) -> {h}
  func.return %r : {h}
}}
"""


def inputs(batch: int, hidden: int) -> list[np.ndarray]:
    rng = np.random.default_rng(0)
    return [
        rng.standard_normal((batch, hidden), dtype=np.float32),
        rng.standard_normal((hidden, hidden), dtype=np.float32) / np.float32(np.sqrt(hidden)),
        rng.standard_normal(hidden, dtype=np.float32) * np.float32(0.1),
    ]


def measure_device(name: str, batch: int, hidden: int, trips: int, repeat: int, host: tuple[float, np.ndarray]) -> dict[str, Any]:
    """One device's row (module docstring); `host` is the host path's (seconds, result)."""
    row: dict[str, Any] = {"device": name, "batch": batch, "hidden": hidden, "trips": trips}
    try:
        exe = accy.compile(program(batch, hidden, trips), device=name, strict=True)
    except Exception as e:  # a device that is not there, or a program it refuses
        return {**row, "error": f"{type(e).__name__}: {e}"}
    arrays = [accy.device_put(a, exe.device) for a in inputs(batch, hidden)]
    (out,) = exe(*arrays, to_host=False)
    out.block_until_ready()
    devices = []
    for _ in range(max(3, repeat // 2)):
        (out,) = exe(*arrays, profile=True, to_host=False)
        devices.append(sum(p.seconds for p in exe.stats.profile))
    walls = []
    for _ in range(repeat):
        start = time.perf_counter()
        (out,) = exe(*arrays, to_host=False)
        out.block_until_ready()
        walls.append(time.perf_counter() - start)
    host_s, want = host
    got = out.numpy()
    device_s, wall_s = statistics.median(devices), statistics.median(walls)
    return {
        **row,
        "kernels": exe.stats.kernels,
        "launches": exe.stats.launches,
        "fallbacks": exe.stats.fallbacks,
        "transfers": exe.stats.uploads + exe.stats.downloads,
        "device_s": device_s,
        "wall_s": wall_s,
        "host_s": host_s,
        "over_us": (wall_s - device_s) / trips * 1e6,
        "speedup": host_s / wall_s,
        "max_abs_err": float(np.max(np.abs(got - want))),
        "ok": bool(np.allclose(got, want, rtol=1e-3, atol=1e-3)) and exe.stats.fallbacks == 0,
    }


def host_path(batch: int, hidden: int, trips: int, repeat: int) -> tuple[float, np.ndarray]:
    """The host path's median seconds a call and its result (the reference device)."""
    exe = accy.compile(program(batch, hidden, trips), device="reference")
    xs = inputs(batch, hidden)
    (want,) = exe(*xs)
    times = []
    for _ in range(max(2, repeat // 4)):
        start = time.perf_counter()
        exe(*xs)
        times.append(time.perf_counter() - start)
    return statistics.median(times), want


def measure(devices: list[str], batch: int, hidden: int, trips: int, repeat: int) -> list[dict[str, Any]]:
    host = host_path(batch, hidden, trips, repeat)
    return [measure_device(name, batch, hidden, trips, repeat, host) for name in devices]


def entries(rows: list[dict[str, Any]], gpu: bool = False) -> list[dict[str, Any]]:
    """The rows as ratio entries (chart.py) with their targets (`targets.RNN`)."""
    out = []
    dims_of = lambda r: f"{r['batch']}x{r['hidden']}x{r['trips']}"  # noqa: E731
    for row in rows:
        if "error" in row:
            continue
        dims = (row["batch"], row["hidden"], row["trips"])
        for baseline, measure, value in (
            ("device time", targets.TRIP_US, row["over_us"]),
            ("host path", targets.SPEEDUP, row["speedup"]),
        ):
            target = targets.find(targets.RNN, "rnn", baseline, dims, measure, "gpu" if gpu else row["device"])
            out.append(chart.entry(row["device"], "rnn", dims_of(row), baseline, value if row["ok"] else None, target, measure=measure))
    return out


def table(rows: list[dict[str, Any]]) -> str:
    lines = [
        f"{'device':<8} {'kernels':>7} {'launches':>8} {'device ms':>9} {'wall ms':>8} {'host ms':>8} "
        f"{'us/trip over':>12} {'x host':>7}  check"
    ]
    for r in rows:
        if "error" in r:
            lines.append(f"{r['device']:<8} not available: {r['error']}")
            continue
        lines.append(
            f"{r['device']:<8} {r['kernels']:>7} {r['launches']:>8} {r['device_s'] * 1e3:9.3f} {r['wall_s'] * 1e3:8.3f} "
            f"{r['host_s'] * 1e3:8.2f} {r['over_us']:12.1f} {r['speedup']:7.1f}  {'ok' if r['ok'] else 'WRONG'}"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="opencl,llvm", help="devices, comma-separated (default opencl,llvm)")
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--hidden", type=int, default=1024)
    parser.add_argument("--trips", type=int, default=100)
    parser.add_argument("--repeat", type=int, default=10, help="timed calls a device (default 10)")
    parser.add_argument("--json", metavar="FILE", help="write the rows as JSON to FILE (- for stdout)")
    args = parser.parse_args(argv)
    devices = [d.strip() for d in args.device.split(",") if d.strip()]
    rows = measure(devices, args.batch, args.hidden, args.trips, args.repeat)
    title = f"RNN cell h = tanh(h·W + b), batch {args.batch}, hidden {args.hidden}, {args.trips} trips a call:"
    chart.print_rows(rows, args.json, title, table(rows))
    return 0 if all(r.get("ok", True) for r in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
