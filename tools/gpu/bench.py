"""The GPU benchmark: accy on an OpenCL GPU against torch on the same card,
device time against device time, side by side in one run.

For each workload (tools/bench/workloads.py's programs, at GPU sizes):

- accy: `accy.compile(program, device="opencl")`, then calls with
  `profile=True`; a call's device time is the sum of its launches' OpenCL
  profiling-event times (`exe.stats.profile`), the median over `--repeat`
  calls after a warm-up; its result is checked against torch's on the same
  inputs (max |accy - torch| <= 1e-3 * max |torch|, float64 reference for
  matmul and attention where TF32 is off);
- torch: the same computation on CUDA tensors (eager ops,
  `torch.matmul` with TF32 off, `scaled_dot_product_attention`), timed with
  CUDA events around each call, the median likewise.

Writes a table, and JSON with `--json` (every time, the ratios, TFLOP/s or
TB/s where they mean something). Run on the H200 through the device tool:

    tools/gpu/nvidia_opencl.sh python3 tools/gpu/bench.py --json $OUT/gpu-bench.json

`--target` sets tile sizes in every program's module target (the fields
of accy/dialects/target.py), to compare them in one run:

    ... tools/gpu/bench.py --only cumsum --target "row_threads = 512, scan_vectors = 8"
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
from workloads import BY_NAME  # noqa: E402

#: Sizes on the GPU (the CPU bench's are too small to keep a card busy).
GPU_SIZES: dict[str, list[tuple[int, ...]]] = {
    "exp_mul_add": [(1 << 26,)],
    "matmul": [(1024,), (2048,), (4096,)],
    "row_sum": [(16384, 4096)],
    "cumsum": [(4096, 4096), (16384, 4096)],
    "softmax": [(16384, 4096)],
    "layer_norm": [(16384, 4096)],
    "attention": [(1, 8, 1024, 64), (4, 16, 4096, 64)],
}
REL_TOLERANCE = 1e-3


def flops(name: str, dims: tuple[int, ...]) -> float | None:
    if name.startswith("matmul"):
        return 2.0 * dims[0] ** 3
    if name == "attention":
        b, h, s, d = dims
        return 4.0 * b * h * s * s * d
    return None


def moved_bytes(name: str, dims: tuple[int, ...]) -> float | None:
    n = float(np.prod(dims))
    return {"exp_mul_add": 16 * n, "row_sum": 4 * n, "cumsum": 8 * n, "softmax": 8 * n, "layer_norm": 8 * n}.get(name)


def time_accy(exe: Any, inputs: list[np.ndarray], repeat: int) -> tuple[float, np.ndarray]:
    (out,) = exe(*inputs, profile=True)
    times = []
    for _ in range(repeat):
        exe(*inputs, profile=True)
        times.append(sum(p.seconds for p in exe.stats.profile))
    return statistics.median(times), out


def time_torch(torch: Any, fn: Any, tensors: list[Any], repeat: int) -> tuple[float, Any]:
    out = fn(torch, *tensors)
    torch.cuda.synchronize()
    times = []
    for _ in range(repeat):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn(torch, *tensors)
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end) / 1e3)
    return statistics.median(times), out


def with_target(program: str, fields: str) -> str:
    """`program` in a module whose `accy.target` sets `fields` (none: as it is)."""
    if not fields:
        return program
    return f"builtin.module attributes {{accy.target = #accy.target<{fields}>}} {{\n{program}}}\n"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description="accy (OpenCL GPU) against torch (CUDA) on the same card, device times.")
    p.add_argument("--only", default="", help="comma-separated workloads (default: all)")
    p.add_argument("--repeat", type=int, default=20)
    p.add_argument("--json", metavar="FILE")
    p.add_argument(
        "--target", default="", metavar="FIELDS",
        help='tile sizes for every program\'s module target, e.g. "row_threads = 512, scan_vectors = 8"',
    )
    args = p.parse_args(argv)
    import torch

    import accy

    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    device = accy.get_device("opencl")
    names = [n for n in args.only.split(",") if n] or list(GPU_SIZES)
    print(f"accy device: {getattr(device, 'description', device.name)}; torch {torch.__version__} on {torch.cuda.get_device_name()}")
    rows, failed = [], False
    for name in names:
        w = BY_NAME[name]
        for dims in GPU_SIZES[name]:
            shapes = w.shapes(dims)
            rng = np.random.default_rng(0)
            inputs = [rng.standard_normal(s, dtype=np.float32) for s in shapes]
            record: dict[str, Any] = {"workload": name, "dims": list(dims)}
            try:
                exe = accy.compile(with_target(w.program(dims), args.target), device=device)
                accy_s, got = time_accy(exe, inputs, args.repeat)
                record.update(accy_s=accy_s, kernels=exe.stats.kernels, fallbacks=exe.stats.fallbacks)
            except Exception as e:  # reported, and the run fails at the end
                record["error"] = f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
                failed = True
                rows.append(record)
                print(f"{name} {dims}: accy failed: {record['error']}")
                continue
            tensors = [torch.from_numpy(a).cuda() for a in inputs]
            with torch.inference_mode():
                torch_s, want = time_torch(torch, w.torch_fn, tensors, args.repeat)
            want_np = want.float().cpu().numpy()
            err = float(np.abs(got.astype(np.float64) - want_np).max()) / (float(np.abs(want_np).max()) or 1.0)
            record.update(torch_s=torch_s, accy_over_torch=accy_s / torch_s, rel_err=err, ok=err <= REL_TOLERANCE)
            failed |= not record["ok"]
            f, b = flops(name, dims), moved_bytes(name, dims)
            if f:
                record.update(accy_tflops=f / accy_s / 1e12, torch_tflops=f / torch_s / 1e12)
            if b:
                record.update(accy_tbs=b / accy_s / 1e12, torch_tbs=b / torch_s / 1e12)
            rows.append(record)
            rate = (
                f"{record['accy_tflops']:.1f} vs {record['torch_tflops']:.1f} TFLOP/s" if f
                else f"{record['accy_tbs']:.2f} vs {record['torch_tbs']:.2f} TB/s" if b else ""
            )
            print(
                f"{name:12s} {'x'.join(map(str, dims)):>16s}  accy {accy_s * 1e3:8.3f} ms  torch {torch_s * 1e3:8.3f} ms  "
                f"torch/accy {torch_s / accy_s:5.2f}  {rate}  kernels {exe.stats.kernels}  rel err {err:.1e}"
                f"{'' if record['ok'] else '  MISMATCH'}"
            )
    if args.json:
        Path(args.json).write_text(json.dumps({"device": getattr(device, "description", device.name), "rows": rows}, indent=2) + "\n")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
