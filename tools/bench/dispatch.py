"""Dispatch cost (issue 11 item 5): what a warm call of a one-kernel program
on tiny inputs costs, against a bare pyopencl loop making the same OpenCL
calls, on PoCL and the LLVM device; numpy in and out, and accy.Arrays in and
out (`to_host=False`).

    .venv/bin/python tools/bench/dispatch.py [--calls N] [--profile]

Prints the median microseconds per call of each row (the machine is shared:
read the differences between rows of one run, not the absolute figures);
`--profile` prints the hottest functions of the accy rows (cProfile).
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import statistics
import time
from collections.abc import Callable

import numpy as np

import accy

PROGRAM = """
func.func @main(%x: tensor<16xf32>, %y: tensor<16xf32>) -> tensor<16xf32> {
  %z = "accy.add"(%x, %y) : (tensor<16xf32>, tensor<16xf32>) -> tensor<16xf32>
  func.return %z : tensor<16xf32>
}
"""


def median_us(call: Callable[[], object], calls: int) -> float:
    for _ in range(min(200, calls)):  # warm-up
        call()
    times = []
    for _ in range(calls):
        start = time.perf_counter()
        call()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e6


def bare_pyopencl(exe: accy.Executable, x: np.ndarray, y: np.ndarray) -> Callable[[], object]:
    """The OpenCL calls one accy call makes (copy in, set args, launch, copy out), by hand."""
    import pyopencl as cl

    program = exe.program
    device = exe.device
    (launch,) = [s for s in program.schedule.steps if hasattr(s, "kernel")]
    bufs = [cl.Buffer(device.context, cl.mem_flags.READ_WRITE, size=x.nbytes) for _ in range(3)]
    out = np.empty_like(x)

    def call() -> np.ndarray:
        cl.enqueue_copy(device.queue, bufs[0], x, is_blocking=False)
        cl.enqueue_copy(device.queue, bufs[1], y, is_blocking=False)
        launch.kernel.set_args(*bufs)
        cl.enqueue_nd_range_kernel(device.queue, launch.kernel, launch.global_size, launch.local_size)
        cl.enqueue_copy(device.queue, out, bufs[2], is_blocking=False)
        device.queue.finish()
        return out

    return call


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--profile", action="store_true")
    args = parser.parse_args()
    x = np.arange(16, dtype=np.float32)
    y = np.ones(16, np.float32)
    rows: list[tuple[str, Callable[[], object]]] = []
    for name in ("opencl", "llvm"):
        try:
            exe = accy.compile(PROGRAM, device=name)
        except ValueError as e:
            print(f"{name}: not available ({e})")
            continue
        xa, ya = accy.device_put(x, exe.device), accy.device_put(y, exe.device)
        rows.append((f"{name}: numpy in, numpy out", lambda exe=exe: exe(x, y)))
        rows.append((f"{name}: accy.Arrays in and out", lambda exe=exe, xa=xa, ya=ya: exe(xa, ya, to_host=False)))
        if name == "opencl":
            rows.append((f"{name}: bare pyopencl, same calls", bare_pyopencl(exe, x, y)))
    for label, call in rows:
        print(f"{label:40s} {median_us(call, args.calls):8.1f} us")
    if args.profile:
        for label, call in rows:
            if "bare" in label:
                continue
            profiler = cProfile.Profile()
            profiler.enable()
            for _ in range(args.calls):
                call()
            profiler.disable()
            print(f"\n== {label}")
            pstats.Stats(profiler).sort_stats("tottime").print_stats(12)


if __name__ == "__main__":
    main()
