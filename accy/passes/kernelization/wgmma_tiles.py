"""Warpgroup tensor-core tiles of a GPU product (Hopper's `wgmma`), for a
target whose `mma` is "sm90" (or "emulate-sm90": the same kernel, each
work-item summing its accumulators from the swizzled tiles itself, so any
GPU-profile device tests the lowering): f16 or bf16 operands that async copies stage
(both operands buffers of aligned 16-byte vectors along k of the lhs and n
of the rhs: `MmaOperands.copy_a`, `copy_b`; or along k of both, an rhs
contracted along its last dim: `MmaOperands.b_k_major`), or f32 operands
as TF32 (the caller's `math = fast`) whose rhs is staged k-contiguous
(PTX's wgmma reads a TF32 B only so), f32 accumulators.

- A work-group of two warpgroups (8 warps, 256 work-items) computes a 128 x
  256 block of one batch; warpgroup h its rows 64h to 64h + 63 by
  `accy_kernel.wgmma` m64n256k16 (TF32: k8), 128 f32 accumulators a work-item (warp w
  of the work-group holds rows 16w to 16w + 15 as 32 m16n8 accumulator
  fragments, as `MmaTiles`'s epilogue reads them: a `WarpLayout` of 8 x 1
  warps of 16 x 256).
- Each k step stages 128 bytes of k a row (64 k of 16-bit operands, 32 of
  f32) of the lhs block k-contiguous and of the rhs block n-contiguous
  (`b_k_major`: k-contiguous, a row an n) in workgroup memory, 128-byte swizzled
  as the instruction reads them (`accy_kernel.wgmma`: the 16-byte chunk c
  of row r of an 8-row atom at c XOR r % 8; a 16-bit rhs in atoms of 8 k by 64
  n), zero past M, N and K, by async copies into `STAGES` buffers, copied
  `STAGES` - 2 steps ahead: a step waits for its own copies, fences them
  for the matrix instructions' proxy, one barrier, then its four wgmmas (32
  bytes of k each: k16, or k8 of TF32) as one group, waits until the step
  before's group is done, and copies the step `STAGES` - 2 ahead into the
  buffer the step before last used (which both warpgroups' waits before
  this barrier released).
- 192 KiB of workgroup memory: past the 48 KiB NVIDIA's driver reports, in
  `static_local_bytes`. The sums go through `MmaTiles.epilogue`.

Probed first by hand (tools/gpu/wgmma_probe.py, 2026-12-07): the same
kernel written in OpenCL C gave 4096² f16 in 0.339 ms on an H100 against
cuBLAS's 0.190 (0.56x; the `mma.sync` tiles 0.455 ms, 0.41x, on the same
card). The lowering's own kernel: all of test_mma_dot's sm90 cases pass on
an H100, and 4096² f16 takes 0.301 ms there (0.61x cuBLAS; docs/kernel-notes.md).
"""

from __future__ import annotations

from xdsl.dialects import arith
from xdsl.dialects.builtin import Float32Type
from xdsl.ir import SSAValue

from accy.dialects.kernel import AsyncWaitOp, WgmmaOp, WgmmaSyncOp
from accy.dialects.target import TargetProfile
from accy.dialects.types import element_bytes
from accy.passes.kernelization.lowered import LoweredKernel
from accy.passes.kernelization.mma_tiles import WARP, MmaOperands, MmaTiles, WarpLayout
from accy.passes.kernelization.register_tiles import Product

#: The work-group's warps as the epilogue sees them (16 rows of the block's
#: 256 columns a warp).
LAYOUT = WarpLayout(8, 1, 16, 256)
#: Emulated, blocks of 128 x 64 (m64n64: 32 sums a work-item, where 128
#: overflowed the stack of PoCL's work-group threads and took minutes to build).
EMULATED_LAYOUT = WarpLayout(8, 1, 16, 64)
#: Staging buffers of each operand.
STAGES = 4
#: Bytes of a swizzle atom (8 rows), of a staged row (one k step's), and of
#: the k of a row one wgmma reads.
ATOM = WgmmaOp.ATOM_BYTES
ROW = WgmmaOp.ROW_BYTES
WGMMA_K_BYTES = 32


def local_bytes(layout: WarpLayout = LAYOUT) -> int:
    """Workgroup memory the kernel stages in (a row of 128 bytes whatever the type)."""
    return STAGES * (layout.bm + layout.bn) * ROW


def wgmma_applies(profile: TargetProfile, ops: MmaOperands) -> bool:
    """Whether the warpgroup tiles build `ops` on `profile`: "sm90", 16-bit
    operands (an rhs n- or k-contiguous) or TF32 (an rhs k-contiguous)
    staged by async copies, and room for the work-group."""
    # PTX's wgmma reads a 16-bit B n-contiguous (transposed) or k-contiguous, a TF32 one only k-contiguous.
    return (
        profile.mma in ("sm90", "emulate-sm90")
        and (ops.pairs or ops.b_k_major)
        and ops.copy_a is not None
        and ops.copy_b is not None
        and profile.max_work_group_size >= LAYOUT.threads
        and local_bytes(_layout(profile)) <= profile.local_capacity
    )


def _layout(profile: TargetProfile) -> WarpLayout:
    return EMULATED_LAYOUT if profile.mma == "emulate-sm90" else LAYOUT


class WgmmaTiles(MmaTiles):
    """The kernel on `p`'s builder (module docstring): `MmaTiles`'s copies,
    slots and epilogue over swizzled buffers and warpgroup instructions."""

    def __init__(self, p: Product, ops: MmaOperands) -> None:
        kb = p.kb
        self.p, self.ops, self.kb, self.lay = p, ops, kb, _layout(kb.profile)
        lay, width = self.lay, element_bytes(ops.element)
        self.shape = f"m64n{lay.bn}k{WGMMA_K_BYTES // width}"
        self.row = ROW // width  # elements of a staged row: the k of a step
        self.copies, self.stages, self.bk = True, STAGES, self.row
        # From one 64 n of an n-contiguous rhs to the next (its 8 k rows are
        # an atom apart); a k-contiguous rhs's rows are one an n, as the lhs's an m.
        self.b_n_atom = ATOM if ops.b_k_major else self.bk // 8 * ATOM
        self.a_size, self.b_size = lay.bm * self.bk, self.bk * lay.bn
        self.a_tile = kb.local_array(STAGES * self.a_size, ops.element, workgroup=True, alignment=ATOM)
        self.b_tile = kb.local_array(STAGES * self.b_size, ops.element, workgroup=True, alignment=ATOM)
        self.lane, self.warp = kb.local_id("x"), kb.local_id("y")
        self.g, self.t = kb.div(self.lane, 4), kb.rem(self.lane, 4)
        self.wm, self.wn = kb.mul(self.warp, lay.wm), kb.idx(0)
        self.n0, self.m0 = kb.mul(kb.group_id("x"), lay.bn), kb.mul(kb.group_id("y"), lay.bm)
        self.bc = kb.delinearize(kb.group_id("z"), p.batch_shape)
        self.flat = kb.add(kb.mul(self.warp, WARP), self.lane)
        # The warpgroup's first row of the lhs block: 64 rows of 128 bytes on for the second.
        self.a_group = kb.mul(kb.div(self.warp, 4), 64 * self.row)
        self.acc_zero = kb.const(0.0, Float32Type())

    def kernel(self) -> LoweredKernel:
        kb, p, bk = self.kb, self.p, self.bk
        for s in range(STAGES - 2):  # steps 0 .. STAGES - 3 in flight
            self.issue(kb.idx(s * bk), kb.idx(s))
        accs = kb.for_(0, p.K, bk, [self.acc_zero] * (self.lay.bn // 2), self._step)
        kb.op(WgmmaSyncOp("wait", 0))
        kb.op(AsyncWaitOp(0))  # nothing in flight past the kernel's end (copies of steps past K)
        return self.epilogue(accs)

    def _step(self, k: SSAValue, acc: list[SSAValue]) -> list[SSAValue]:
        """One staged step at k, in buffer (k / bk) % STAGES (module docstring)."""
        kb, bk = self.kb, self.bk
        kb.op(AsyncWaitOp(STAGES - 3))
        kb.op(WgmmaSyncOp("proxy"))
        kb.barrier()
        step = kb.div(k, bk)
        cur = kb.rem(step, STAGES)
        a_at = kb.add(kb.mul(cur, self.a_size), self.a_group)
        b_at = kb.mul(cur, self.b_size)
        kb.op(WgmmaSyncOp("fence"))
        for j in range(ROW // WGMMA_K_BYTES):
            wgmma = WgmmaOp(
                self.shape, self.a_tile, a_at, self.b_tile, b_at, acc, j, ATOM, ATOM, self.b_n_atom, self.ops.b_k_major
            )
            acc = list(kb.op(wgmma).results)
        kb.op(WgmmaSyncOp("commit"))
        kb.op(WgmmaSyncOp("wait", 1))
        self.issue(kb.add(k, (STAGES - 2) * bk), kb.rem(kb.add(step, STAGES - 2), STAGES))
        return acc

    def _layout(self) -> list[tuple[bool, SSAValue, SSAValue]]:
        """`MmaTiles._layout`'s slots, a k-contiguous rhs's as the lhs's:
        [n][k], k fastest."""
        ops = self.ops
        if not ops.b_k_major:
            return super()._layout()
        return self._tile_slots(True, self.lay.bm, self.bk, ops.a_lanes) + self._tile_slots(False, self.lay.bn, self.bk, ops.b_lanes)

    def _source(self, lhs: bool, row: SSAValue, col: SSAValue, k0: SSAValue) -> tuple[SSAValue, int, SSAValue]:
        """A slot's operand coordinates (`MmaTiles._source`; a k-contiguous rhs's row is its n)."""
        if lhs or not self.ops.b_k_major:
            return super()._source(lhs, row, col, k0)
        kb = self.kb
        return kb.add(self.n0, row), self.p.N, kb.add(k0, col)

    def _local(self, lhs: bool, row: SSAValue, col: SSAValue, offsets: tuple[SSAValue, SSAValue]) -> tuple[SSAValue, SSAValue]:
        """A slot's swizzled place (`col` a whole 16-byte chunk): the lhs's
        [m][k] rows of 128 bytes, a k-contiguous rhs's [n][k] alike; a
        16-bit rhs's [k][n] in atoms of 8 k by 64 n, the atoms along k of
        one 64 n consecutive."""
        kb, r = self.kb, self.row
        chunk_elements = 16 // element_bytes(self.ops.element)
        if lhs or self.ops.b_k_major:
            chunk, at = kb.div(col, chunk_elements), kb.mul(row, r)
        else:
            chunk = kb.div(kb.rem(col, 64), chunk_elements)
            at = kb.add(kb.mul(kb.div(col, 64), self.b_n_atom // element_bytes(self.ops.element)), kb.mul(row, r))
        swizzled = kb.val(arith.XOrIOp(chunk, kb.rem(row, 8)))
        tile, off = (self.a_tile, offsets[0]) if lhs else (self.b_tile, offsets[1])
        return tile, kb.add(off, kb.add(at, kb.mul(swizzled, chunk_elements)))
