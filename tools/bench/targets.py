"""The targets of issue 10 ("Heavy kernels that win"), as the benchmarks
check them: accy's speed relative to a baseline, that is baseline time /
accy time (above 1, accy is faster; "≥ 0.6× numpy" is 0.6), or, where the
issue says so, a fraction of a measured limit or an absolute rate; and
issue 11's dispatch cost and memory flatness (`DISPATCH`, `MEMORY`: at
most the target, see `AT_MOST`).

`CPU` applies to tools/bench/run.py (the issue states it for PoCL with 2
threads; the bench checks it on every CPU device at its default thread
count), `GPU` to tools/gpu/bench.py on the H200. Workloads the issue gives no
target for are charted without one.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

#: The measures a target (and a ratio entry of the benchmarks' JSON) can be of.
SPEEDUP = "speedup"  # baseline time / accy time
COPY_FRACTION = "copy fraction"  # accy's bytes per second / the card's copy bandwidth (torch copy_)
TFLOPS = "TFLOP/s"  # accy's rate, not a ratio: in the JSON, never in the chart
# Issue 11's dispatch cost and memory (tools/bench/dispatch.py, memory.py): in the JSON, not in the chart.
OVERHEAD_US = "us over bare"  # accy's median call - a bare pyopencl loop's making the same calls, microseconds
CALL_US = "us a call"  # accy's median call, microseconds
RSS_GROWTH = "RSS growth"  # bytes of resident memory grown after warm-up
POOL_CHANGES = "pool changes"  # readings after warm-up at which the pool's state differed
TRIP_US = "us a trip over device"  # a loop's wall time a trip beyond its kernels' device time (tools/bench/rnn.py)
#: Measures whose target is a most, not a least.
AT_MOST = frozenset({OVERHEAD_US, CALL_US, RSS_GROWTH, POOL_CHANGES, TRIP_US})


@dataclass(frozen=True)
class Target:
    """At least `value` of `measure` (at most, for `AT_MOST` measures) for
    `workload` against `baseline`; `dims` limits it to those sizes and
    `device` to that device (None: every size, every device)."""

    workload: str
    baseline: str
    value: float
    measure: str = SPEEDUP
    dims: tuple[int, ...] | None = None
    device: str | None = None


CPU: list[Target] = [
    Target("exp_mul_add", "numpy", 1.5),
    Target("matmul", "numpy", 0.6),
    Target("matmul_large", "numpy", 0.6),
    Target("matmul_bias_relu", "numpy", 0.6),
    Target("row_sum", "numpy", 1.5),
    Target("cumsum", "numpy", 10.0),
    Target("cumsum", "torch", 2.0),
    Target("softmax", "numpy", 5.0),
    Target("layer_norm", "numpy", 5.0),
    Target("attention", "numpy", 1.5),
    Target("attention", "torch", 0.7),
    Target("attention_causal", "numpy", 1.5),
    Target("attention_causal", "torch", 0.7),
]

GPU: list[Target] = [
    Target("exp_mul_add", "torch copy", 0.9, COPY_FRACTION),
    Target("matmul", "torch", 0.6, dims=(4096,)),
    Target("matmul", "accy", 30.0, TFLOPS, dims=(4096,)),
    Target("row_sum", "torch", 1.1),
    Target("cumsum", "torch", 1.3),
    Target("softmax", "torch", 1.25),
    Target("layer_norm", "torch", 1.25),
    Target("attention", "torch", 0.6),
    Target("attention_causal", "torch", 0.6),
    # Issue 23: matmul 4096 on the tensor cores against torch's (cuBLAS).
    Target("matmul_f16", "torch", 0.5, dims=(4096,)),
    Target("matmul_bf16", "torch", 0.5, dims=(4096,)),
    Target("matmul_tf32", "torch", 0.5, dims=(4096,)),
    # Issue 23: short rows (65536 x 128) at least torch eager's speed.
    Target("softmax_short", "torch", 1.0),
    Target("layer_norm_short", "torch", 1.0),
    # Issue 23: every bandwidth-bound row in f16 at least 1.3x torch eager's f16.
    *(Target(f"{w}_f16", "torch", 1.3) for w in ("exp_mul_add", "row_sum", "cumsum", "softmax", "layer_norm")),
    # Issue 23: f16/bf16 attention, causal and not, at least half of SDPA's (flash) speed.
    *(Target(f"{w}_{et}", "torch", 0.5) for w in ("attention", "attention_causal") for et in ("f16", "bf16")),
]


#: Issue 11 item 5: a warm call of a one-kernel program on tiny inputs (16
#: floats), numpy in and out or accy.Arrays in and out. On OpenCL, the host
#: time accy adds beyond the OpenCL calls it makes; on the LLVM device, the
#: whole call.
DISPATCH: list[Target] = [
    Target("dispatch_numpy", "bare pyopencl", 15.0, OVERHEAD_US),
    Target("dispatch_arrays", "bare pyopencl", 15.0, OVERHEAD_US),
    Target("dispatch_numpy", "accy", 20.0, CALL_US, device="llvm"),
    Target("dispatch_arrays", "accy", 20.0, CALL_US, device="llvm"),
]

#: Issue 11's memory target, "10,000 calls and 1,000 compiles: resident
#: memory and the pool's size stay flat after warm-up", on every device:
#: bytes of RSS growth allowed after warm-up (what malloc and the drivers
#: may round to; 1 MiB over 10,000 calls is ~100 bytes a call, 2 MiB over
#: 1,000 compiles 2 KB a compile) and no change of the pool at all.
MEMORY: list[Target] = [
    Target("memory_calls", "after warm-up", 1 << 20, RSS_GROWTH),
    Target("memory_calls", "after warm-up", 0, POOL_CHANGES),
    Target("memory_compiles", "after warm-up", 2 << 20, RSS_GROWTH),
    Target("memory_compiles", "after warm-up", 0, POOL_CHANGES),
    # Issue 25: from the 1,000th to the 10,000th distinct program, at most
    # 10 MB in all (~1 KB a program), and the pool as it was.
    Target("memory_distinct", "after warm-up", 10_000_000, RSS_GROWTH),
    Target("memory_distinct", "after warm-up", 0, POOL_CHANGES),
    # ... and the same through @accy.jit retracing a function for each new shape.
    Target("memory_retraces", "after warm-up", 10_000_000, RSS_GROWTH),
    Target("memory_retraces", "after warm-up", 0, POOL_CHANGES),
]


#: Issue 11 item 4: an RNN cell (batch 64, hidden 1024: matmul + bias +
#: tanh, carried state) iterated 100 times: on either device, at most 30 us a
#: trip beyond the kernels' own device time; on the GPU ("gpu": the H200
#: through tools/gpu/bench.py) at least 20x faster than the host path it
#: took before iterate was lowered.
RNN: list[Target] = [
    Target("rnn", "device time", 30.0, TRIP_US, dims=(64, 1024, 100)),
    Target("rnn", "host path", 20.0, SPEEDUP, dims=(64, 1024, 100), device="gpu"),
]


def meets(value: float | None, target: float, measure: str) -> bool:
    """Whether `value` reaches `target` (at most it for `AT_MOST` measures, else at least)."""
    if value is None:
        return False
    return value <= target if measure in AT_MOST else value >= target


def find(
    targets: Sequence[Target],
    workload: str,
    baseline: str,
    dims: Sequence[int],
    measure: str = SPEEDUP,
    device: str | None = None,
) -> float | None:
    """The target for this measurement, or None when the issue gives none."""
    for t in targets:
        if (
            (t.workload, t.baseline, t.measure) == (workload, baseline, measure)
            and (t.dims is None or t.dims == tuple(dims))
            and (t.device is None or t.device == device)
        ):
            return t.value
    return None
