"""accy in one screen: parse a small MLP + softmax program (examples/demo.mlir),
compile it for the best device here (an OpenCL GPU when one works, else the
CPU through LLVM, else the numpy reference device), run it on random inputs and set the result beside the
reference interpreter's.

    make demo        (or: python examples/demo.py)
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

import accy
from accy.runtime.devices import best_device

PROGRAM = Path(__file__).with_name("demo.mlir")


def main() -> int:
    module = accy.parse_module(PROGRAM)
    device, note = best_device()
    if note:
        print(f"note: {note}; falling back to the '{device.name}' device")
    exe = accy.compile(module, device=device)
    print(f"compiled {exe} in {exe.compile_s * 1e3:.1f} ms")

    x, w1, b1, w2, b2 = exe.random_inputs(seed=0)
    # Scale the weights by 1/sqrt(fan-in), as an initialiser would, so the
    # softmax is not saturated.
    inputs = [x, w1 / np.float32(np.sqrt(32)), b1, w2 / np.float32(np.sqrt(64)), b2]
    (probs,) = exe(*inputs)
    (expected,) = exe.reference_outputs(inputs)
    (check,) = exe.compare_with_reference(inputs, [probs])

    print(f"\nclass probabilities of the first 3 rows ({device.name} | reference):")
    with np.printoptions(precision=4, suppress=True, linewidth=120):
        for row in range(3):
            print(f"  {probs[row]}\n  {expected[row]}\n")
    print(f"rows sum to 1: {np.allclose(probs.sum(axis=1), 1.0, atol=1e-5)}")
    stats = exe.stats
    print(f"kernels: {stats.kernels}, fallbacks: {stats.fallbacks}, peak bytes: {stats.peak_bytes}")
    print(f"max abs error {check.max_abs:.2e}, max rel error {check.max_rel:.2e}: {'ok' if check.ok else 'MISMATCH'}")
    return 0 if check.ok else 1


if __name__ == "__main__":
    sys.exit(main())
