"""What an OpenCL driver keeps per distinct program, without accy (issue 25).

A bare pyopencl loop, the way accy's OpenCL device uses the driver: each
step builds a program of its own (`exp(a) + b` with the length baked in, as
accy's kernels have it), makes its kernel, launches it once, waits, checks
the result and drops everything. RSS is read after `--warm-up` programs and
at every tenth of `--programs` more. With `--recycle N` the context and
queue are made anew every N programs (the old ones dropped), to see
whether what the driver keeps goes with its context; with `--keep K` the
last K programs and kernels stay alive (as accy's program cache keeps
them); with `--raw-build` a program is built as accy builds it (from
source through `cl._cl._Program`, bypassing pyopencl's compiler cache).

    python3 tools/gpu/driver_memory.py [--warm-up 1000] [--programs 3000] [--recycle 0] [--json FILE]

Compare its growth a program with `tools/bench/memory.py --device opencl`
(accy's loop over the same programs) on the same machine: what the two
share is the driver's.
"""

from __future__ import annotations

import argparse
import collections
import gc
import json
import os
import sys

import numpy as np
import pyopencl as cl

PAGE = os.sysconf("SC_PAGE_SIZE")
SOURCE = """
__kernel __attribute__((reqd_work_group_size(64, 1, 1)))
void k(__global const float *a, __global const float *b, __global float *out) {{
  size_t i = get_global_id(0);
  if (i < {n}) out[i] = exp(a[i]) + b[i];
}}
"""


def rss_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * PAGE


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--warm-up", type=int, default=1000)
    parser.add_argument("--programs", type=int, default=3000)
    parser.add_argument("--recycle", type=int, default=0, help="a new context every N programs (0: never)")
    parser.add_argument("--keep", type=int, default=0, help="keep the last K programs alive")
    parser.add_argument("--raw-build", action="store_true", help="build as accy does, without pyopencl's cache")
    parser.add_argument("--json", metavar="FILE")
    args = parser.parse_args()

    platform = cl.get_platforms()[0]
    device = platform.get_devices()[0]
    state: dict[str, object] = {}

    def fresh_context() -> None:
        state.clear()
        gc.collect()
        state["ctx"] = ctx = cl.Context([device])
        state["queue"] = cl.CommandQueue(ctx)

    fresh_context()
    wrong = 0
    kept: collections.deque[object] = collections.deque(maxlen=args.keep or None)

    def step(n: int) -> None:
        nonlocal wrong
        ctx, queue = state["ctx"], state["queue"]
        a = np.linspace(-1.0, 1.0, n, dtype=np.float32)
        mf = cl.mem_flags
        da = cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=a)
        dout = cl.Buffer(ctx, mf.WRITE_ONLY, a.nbytes)
        if args.raw_build:
            program = cl.Program(cl._cl._Program(ctx, SOURCE.format(n=n)))
            program.build(options=[], devices=[device])
        else:
            program = cl.Program(ctx, SOURCE.format(n=n)).build()
        kernel = program.k
        kernel(queue, (-(-n // 64) * 64,), (64,), da, da, dout)
        out = np.empty_like(a)
        cl.enqueue_copy(queue, out, dout)
        queue.finish()
        if not np.allclose(out, np.exp(a) + a, rtol=1e-5, atol=1e-6):
            wrong += 1
        if args.keep:
            kept.append((program, kernel))

    n = 17
    for i in range(args.warm_up):
        if args.recycle and i and i % args.recycle == 0:
            fresh_context()
        step(n)
        n += 1
    gc.collect()
    readings = [rss_bytes()]
    for i in range(args.programs):
        if args.recycle and (args.warm_up + i) % args.recycle == 0:
            fresh_context()
        step(n)
        n += 1
        if (i + 1) % max(1, args.programs // 10) == 0:
            gc.collect()
            readings.append(rss_bytes())
    growth = readings[-1] - readings[0]
    row = {
        "platform": platform.name,
        "device": device.name,
        "driver": device.driver_version,
        "warm_up": args.warm_up,
        "programs": args.programs,
        "recycle": args.recycle,
        "keep": args.keep,
        "raw_build": args.raw_build,
        "rss_after_warm_up": readings[0],
        "rss_growth": growth,
        "bytes_per_program": growth / args.programs,
        "rss_readings": readings,
        "wrong": wrong,
    }
    print(json.dumps(row))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(row, f, indent=1)
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())
