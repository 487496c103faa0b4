"""The targets of issue 10 ("Heavy kernels that win"), as the benchmarks
check them: accy's speed relative to a baseline, that is baseline time /
accy time (above 1, accy is faster; "≥ 0.6× numpy" is 0.6), or, where the
issue says so, a fraction of a measured limit or an absolute rate.

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


@dataclass(frozen=True)
class Target:
    """At least `value` of `measure` for `workload` against `baseline`;
    `dims` limits it to those sizes (None: every size)."""

    workload: str
    baseline: str
    value: float
    measure: str = SPEEDUP
    dims: tuple[int, ...] | None = None


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
]


def find(
    targets: Sequence[Target], workload: str, baseline: str, dims: Sequence[int], measure: str = SPEEDUP
) -> float | None:
    """The target for this measurement, or None when the issue gives none."""
    for t in targets:
        if (t.workload, t.baseline, t.measure) == (workload, baseline, measure) and (
            t.dims is None or t.dims == tuple(dims)
        ):
            return t.value
    return None
