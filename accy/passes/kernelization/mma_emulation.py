"""Warp matrix instructions done by the warp's own work-items, for a target
whose `mma` is "emulate" (kernels built for the tensor cores, tested on
any GPU-profile device): a round of `accy_kernel.mma`s sharing their A
and B fragments, by the op's contract.

Each work-item writes the elements of its fragment registers (placed by
`accy_kernel.FRAGMENTS`) into its warp's part of two local exchange
arrays, A's rows and B's columns k-contiguous; a barrier; each work-item
computes its accumulator elements (`ACCUMULATOR_FRAGMENT`) as f32 fmas
in k order from the warp's elements; a barrier, after which the
exchange is free again. The barriers are the work-group's, so every warp
runs the same rounds (the tensor-core kernels' control flow is uniform
across the work-group wherever they multiply).
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.dialects import arith, memref, vector
from xdsl.dialects import math as mathd
from xdsl.dialects.builtin import Float32Type
from xdsl.ir import Attribute, SSAValue

from accy.dialects.kernel import ACCUMULATOR_FRAGMENT, FRAGMENTS, MMA_K
from accy.passes.kernelization.kernel_builder import KernelBuilder


def exchange_elements(shape: str, warps: int, a_tiles: int, b_tiles: int) -> tuple[int, int]:
    """Elements of the A and B exchange arrays for rounds of at most
    `a_tiles` A fragments (16 rows) and `b_tiles` B fragments (8 columns)
    a warp."""
    k = MMA_K[shape]
    return warps * a_tiles * 16 * k, warps * b_tiles * 8 * k


@dataclass(frozen=True)
class Exchange:
    """The local arrays one work-item's emulated rounds go through: `x_a`
    and `x_b` (`exchange_elements` of the fragments' element type), and
    the work-item's warp, g (lane / 4) and t (lane % 4)."""

    kb: KernelBuilder
    shape: str
    element: Attribute
    x_a: SSAValue
    x_b: SSAValue
    warp: SSAValue
    g: SSAValue
    t: SSAValue

    @property
    def pairs(self) -> bool:
        return self.shape == "m16n8k16"

    def round(self, a: list[list[SSAValue]], b: list[list[SSAValue]], acc: list[SSAValue]) -> list[SSAValue]:
        """acc + every A fragment of `a` times every B fragment of `b`: the
        accumulators of (i, j) at acc[(i·len(b) + j)·4 ..] (module docstring)."""
        kb, k = self.kb, MMA_K[self.shape]
        parts = ((a, self.x_a, 16, FRAGMENTS[self.shape]["a"]), (b, self.x_b, 8, FRAGMENTS[self.shape]["b"]))
        for fragments, exchange, rows, layout in parts:
            warp_base = kb.mul(self.warp, len(fragments) * rows * k)
            for f, regs in enumerate(fragments):
                for reg, (go, ts, to) in zip(regs, layout, strict=True):
                    halves = (
                        [kb.val(vector.ExtractOp(reg, [h], self.element)) for h in range(2)] if self.pairs else [reg]
                    )
                    for h, x in enumerate(halves):
                        row = kb.add(kb.add(self.g, go), f * rows)
                        at = kb.add(warp_base, kb.add(kb.mul(row, k), kb.add(kb.mul(self.t, ts), to + h)))
                        kb.op(memref.StoreOp.get(x, exchange, [at]))
        kb.barrier()
        a_rows = [
            kb.add(kb.mul(self.warp, len(a) * 16 * k), kb.mul(kb.add(self.g, i * 16 + go), k))
            for i in range(len(a))
            for go in (0, 8)
        ]
        b_rows = [
            kb.add(kb.mul(self.warp, len(b) * 8 * k), kb.mul(kb.add(kb.mul(self.t, 2), j * 8 + c), k))
            for j in range(len(b))
            for c in (0, 1)
        ]

        def step(kk: SSAValue, sums: list[SSAValue]) -> list[SSAValue]:
            xs = [self._widened(self.x_a, kb.add(r, kk)) for r in a_rows]
            ys = [self._widened(self.x_b, kb.add(r, kk)) for r in b_rows]
            out = list(sums)
            for i in range(len(a)):
                for j in range(len(b)):
                    for e, (go, _, to) in enumerate(ACCUMULATOR_FRAGMENT):
                        at = (i * len(b) + j) * 4 + e
                        out[at] = kb.val(mathd.FmaOp(xs[2 * i + go // 8], ys[2 * j + to], sums[at]))
            return out

        out = kb.for_(0, k, 1, acc, step)
        kb.barrier()
        return out

    def _widened(self, exchange: SSAValue, at: SSAValue) -> SSAValue:
        x = self.kb.val(memref.LoadOp.get(exchange, [at]))
        return x if isinstance(x.type, Float32Type) else self.kb.val(arith.ExtFOp(x, Float32Type()))
