"""Full reductions on the OpenCL device: accuracy against float64 and device
time (summed kernel times from OpenCL profiling events) beside torch.sum on
the same GPU when torch sees one. Run through tools/gpu/nvidia_opencl.sh."""

from __future__ import annotations

import statistics

import numpy as np

import accy


def main() -> None:
    try:
        import torch
    except ImportError:
        torch = None
    for n in (10**6, 10**7, 10**8):
        src = (f'func.func @main(%x: tensor<{n}xf32>) -> tensor<f32> {{\n'
               f'  %s = "accy.reduce"(%x) <{{kind = "sum", axes = array<i64: 0>}}> : (tensor<{n}xf32>) -> tensor<f32>\n'
               f'  func.return %s : tensor<f32>\n}}')
        exe = accy.compile(src, device="opencl")
        x = np.random.default_rng(0).uniform(-1, 2, n).astype(np.float32)
        exact = x.astype(np.float64).sum()
        times = []
        for _ in range(20):
            (got,) = exe(x, profile=True)
            times.append(sum(p.seconds for p in exe.stats.profile))
        rel = abs(float(got) - exact) / abs(exact)
        line = f"sum n={n:>9}: kernels {exe.stats.kernels}, rel err {rel:.1e}, device {statistics.median(times) * 1e3:.3f} ms"
        if torch is not None and torch.cuda.is_available():
            t = torch.from_numpy(x).cuda()
            for _ in range(5):
                t.sum()
            torch.cuda.synchronize()
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            ms = []
            for _ in range(20):
                start.record()
                t.sum()
                end.record()
                torch.cuda.synchronize()
                ms.append(start.elapsed_time(end))
            line += f", torch.sum {statistics.median(ms):.3f} ms"
        print(line, flush=True)


if __name__ == "__main__":
    main()
