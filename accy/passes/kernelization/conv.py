"""Lowering of conv work items: one `accy.conv` with its elementwise
prologue (read as its input or weight is read) and epilogue (a bias, an
activation, a residual) fused, as an implicit product on the dot's
register tiles (`register_tiles`).

A conv of input [N, C, x...] by weight [M, C/G, k...] with G groups is G
batches of an (M/G x K) by (K x N·Y) product, K = C/G · T (T = the taps of
the kernel, Y = the output positions):

    lhs[g][m][(c, t)]        = weight[g·M/G + m, c, t]
    rhs[g][(n, y)][(c, t)]   = input[n, g·C/G + c, y·strides + t·dilations − pads_low]
                               (0 where that falls in the padding)
    out[n, g·M/G + m, y]     = Σ_k lhs · rhs

so the im2col matrix is never a tensor: the CPU's packed kernel
(`packed_tiles`) writes it straight into its rhs panels (each element
computed from the input's coordinates, a select of 0 in the padding, the
read clamped into the input so the bounds proof sees it inside), and its
register tiles run as a dot's. The kernel is chosen as a dot's is: packed
panels on the CPU when the product is large enough (`can_pack`), else one
work-item per output element (`per_element`: a depthwise conv, whose
product is 1 x T by T x Y); on the GPU, local-memory tiles
(`local_tiles`). The rhs is read one element at a time (its columns are
output positions, not consecutive input elements); the epilogue takes W
lanes when the output's last dim is whole vectors.
"""

from __future__ import annotations

import math

from xdsl.dialects import arith
from xdsl.ir import SSAValue

from accy.dialects import accy
from accy.dialects.target import TargetProfile
from accy.passes.analyses.bufferization import BufferPlan
from accy.passes.analyses.outlining import OutlinedKernel
from accy.passes.kernelization.evaluate import Expr
from accy.passes.kernelization.kernel_builder import KernelBuilder, anchored_kernel
from accy.passes.kernelization.lowered import LoweredKernel
from accy.passes.kernelization.register_tiles import can_pack, local_tiles, packed_tiles, per_element


def lower_conv(kernel: OutlinedKernel, plan: BufferPlan, profile: TargetProfile) -> LoweredKernel:
    """A conv kernel: one `accy.conv` and the work fused around it."""
    kb, conv = anchored_kernel(kernel, plan, profile, accy.ConvOp, "conv")
    c = _Conv(kb, kernel, conv)
    if c.B * c.M * c.N * c.K == 0:
        # No output element, or none with a term (a channel dim of 0): one
        # work-item per element, its sum over no k is 0.
        return per_element(c)
    if profile.profile == "gpu":
        return local_tiles(c, plan)
    if can_pack(c):
        return packed_tiles(c, plan)
    return per_element(c)


class _Conv:
    """The conv as G batches of (M/G x K) by (K x N·Y) (a
    `register_tiles.Product`; module docstring)."""

    def __init__(self, kb: KernelBuilder, kernel: OutlinedKernel, conv: accy.ConvOp) -> None:
        self.kb, self.kernel, self.conv = kb, kernel, conv
        self.others = [op for op in kernel.ops if op is not conv]
        geometry = conv.geometry()
        self.strides, self.dilations, self.pads_low = geometry["strides"], geometry["dilations"], geometry["pads_low"]
        self.spatial = accy.shape_of(conv.input)[2:]
        n, _, *self.out = accy.shape_of(conv.result)
        m, self.cg, *self.window = accy.shape_of(conv.weight)
        self.G = conv.groups.value.data
        self.mg = m // self.G
        self.n_shape = [n, *self.out]
        self.batch_shape = [self.G]
        self.k_shape = [self.cg, *self.window]
        self.B, self.M, self.N, self.K = self.G, self.mg, math.prod(self.n_shape), math.prod(self.k_shape)
        self.et = accy.elem_of(conv.result)
        self.is_float = accy.is_float(self.et)

    def a_at(self, expr: Expr, bc: list[SSAValue], m: SSAValue, kc: list[SSAValue]) -> SSAValue:
        """weight[g·M/G + m, c, t]."""
        kb = expr.kb
        return expr.at(self.conv.weight, [kb.add(kb.mul(bc[0], self.mg), m), *kc])

    def b_at(self, expr: Expr, bc: list[SSAValue], n: SSAValue, kc: list[SSAValue]) -> SSAValue:
        """input[n, g·C/G + c, y·strides + t·dilations − pads_low], 0 in the
        padding: the position clamped into the input (an explicit
        `minsi`/`maxsi`, `Expr.clamp`) and the value selected, along each
        spatial dim whose windows reach past the input."""
        kb = expr.kb
        batch, *y = kb.delinearize(n, self.n_shape)
        c, *t = kc
        coords = [batch, kb.add(kb.mul(bc[0], self.cg), c)]
        inside: SSAValue | None = None
        for d, (x, o, k, s, dil, lo) in enumerate(
            zip(self.spatial, self.out, self.window, self.strides, self.dilations, self.pads_low, strict=True)
        ):
            p = kb.add(kb.mul(y[d], s), kb.mul(t[d], dil))
            p = kb.sub(p, lo) if lo else p
            if lo == 0 and (o - 1) * s + (k - 1) * dil - lo < x:  # every window of this dim inside the input
                coords.append(p)
                continue
            ok = kb.val(arith.AndIOp(kb.lt(-1, p), kb.lt(p, x)))
            inside = ok if inside is None else kb.val(arith.AndIOp(inside, ok))
            coords.append(expr.clamp(p, x - 1))
        value = expr.at(self.conv.input, coords)
        return value if inside is None else kb.select(inside, value, kb.const(0, self.et))

    def out_coords(self, bc: list[SSAValue], m: SSAValue, n: SSAValue) -> list[SSAValue]:
        kb = self.kb
        batch, *y = kb.delinearize(n, self.n_shape)
        return [batch, kb.add(kb.mul(bc[0], self.mg), m), *y]

    def finish(self, coords: list[SSAValue], value: SSAValue, width: int = 1) -> None:
        """The epilogue and stores of one output element (or W lanes)."""
        epilogue = Expr(self.kb, self.others, width)
        epilogue.pin(self.conv.result, lambda _: value)
        epilogue.store(self.kernel.outputs, coords)

    def rhs_vectors(self) -> bool:
        """Never: consecutive columns are output positions, whose input
        elements are `strides` apart (and padded at the edges)."""
        return False

    def out_vectors(self) -> bool:
        """Whether W consecutive columns from a multiple of W are W
        consecutive output elements: the output's last dim is whole vectors."""
        return self.out[-1] % self.kb.profile.vector_width == 0
