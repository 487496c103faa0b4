"""Lowering of dot work items: one `accy.dot_general` (batch dims, several
contracting dims, operands read through their strides, so transposes are
free) with its elementwise prologue and epilogue (bias, activation,
residual) fused.

The dot is seen as B batches of an (M x K) by (K x N) product, where M, N and
K are the products of the lhs free, rhs free and contracting dims; flat m, n
and k are split back into the operands' own coordinates, so any dot_general
is just index math. The register-tile kernels are built by
`register_tiles` (a convolution lowering builds them too), which also
sizes them and holds the thresholds named below; this module describes
the dot to it (`_Dot` is its `Product`) and picks the kernel.

- CPU profile, float, more than one register tile of rows and at least
  `PACK_MIN_WORK` multiply-adds a batch: packed panels and register tiles,
  three launches. The first two pack the operands
  (their prologue evaluated on the way, any layout or transpose read
  through its strides) into scratch panels: the lhs as panels of R rows,
  k-major (`pa[b][mt][k][r]`), the rhs as panels of C·W columns, k-major
  (`pb[b][nt][k][c]`); rows and columns past M and N repeat the last one
  (computed, never stored). The third gives each work-item one R x C·W
  register tile (R the profile's `dot_rows`, C its `dot_vectors`, within
  the register budget `ACCUMULATORS`): every k step loads C vectors of the
  rhs panel and R lhs scalars, contiguous, and does R·C `math.fma`s on
  `vector<WxT>` accumulators (`packed_tiles`). Work-items walk the row tiles fastest, so one
  rhs panel stays in cache while the lhs panels stream. The tile then goes
  through a private array to the epilogue, run once in a loop: W lanes at a
  time when the output's last dim is whole vectors, lane by lane otherwise
  (guarded past M and N). Packing costs O(MK + KN) against the product's
  O(MNK) and makes every inner-loop access contiguous, whatever the
  operands' strides (power-of-two strides otherwise thrash the cache).
- CPU profile, float, a small product or a single tile of rows (M <= R:
  packing the rhs would cost as much as the product), the rhs's last dim
  the last free dim and a multiple of W: each work-item computes R rows by
  W columns with R `vector<WxT>` accumulators straight from the operands,
  then runs the epilogue W lanes at a time (`row_tiles`).
- GPU profile: TxT work-groups (T the profile's `dot_tile`, 16 by default,
  at most what the device's work-group holds), each work-item an R x R
  register tile (R the profile's `dot_rows`, 8 by default on the GPU,
  halved while there are fewer than `GPU_MIN_BLOCKS` work-groups), so a
  work-group computes a (T·R)² block; each k step stages T/4 columns of
  the lhs block and T/4 rows of the rhs block in local memory (barriers
  around it), fetched into registers from global memory during the step
  before, and every work-item does R² `fma`s per staged k from its runs of
  W consecutive rows and columns (W = `gpu_ownership_run`, 4 for f32 8x8
  and 4x4 tiles), each one aligned W-wide local load (`gpu_tiles`). A
  product with too few blocks even at `GPU_MIN_TILE` tiles (64 rows by
  1024, an RNN cell's) splits k into ranges of at least
  `GPU_SPLIT_MIN_K`: one launch stores each range's partial sums, a
  second adds them per output element and runs the epilogue
  (`gpu_split_k`).
  Where the target's `mma` is set (NVIDIA's tensor cores, or "emulate"
  for tests), a dot of f16 or bf16 operands, or under `math = fast` of f32
  operands (TF32), takes the tensor-core kernel instead (`mma_tiles`): a
  product of any size, k not split. Hopper's warpgroup tiles read a TF32
  rhs only k-contiguous: an rhs that is not is first copied [b][n][k]
  into scratch by a launch of its own (`_Dot.warpgroup_k_major`), O(KN)
  against the product's O(MNK); they read a 16-bit rhs n-contiguous where
  copies stage it so, else k-contiguous (as it is where it is contracted
  along its last dim, x · Wᵀ, else packed too).
- Otherwise: one work-item per output element, a scalar loop over k.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from functools import partial

from xdsl.dialects import memref
from xdsl.dialects.builtin import BFloat16Type, Float16Type, Float32Type
from xdsl.ir import SSAValue

from accy.dialects import accy
from accy.dialects.target import TargetProfile
from accy.dialects.types import element_bytes, numel
from accy.passes.analyses.bufferization import BufferPlan
from accy.passes.analyses.outlining import OutlinedKernel
from accy.passes.kernelization.evaluate import Expr, vectorizable
from accy.passes.kernelization.kernel_builder import KernelBuilder, anchored_kernel, vectors_aligned
from accy.passes.kernelization.launch import stage_kernel
from accy.passes.kernelization.lowered import LoweredKernel, Scratch
from accy.passes.kernelization.mma_tiles import VECTOR_BYTES, MmaOperands, config_for, mma_tiles
from accy.passes.kernelization.register_tiles import (
    can_pack,
    local_tiles,
    packed_tiles,
    per_element,
    row_tiles,
)
from accy.passes.kernelization.wgmma_tiles import wgmma_applies

#: Consecutive k of the rhs that consecutive work-items of the TF32
#: warpgroup tiles' packing launch copy (`_Dot._pack_k_major`): a warp's
#: 128-byte run of the [b][n][k] copy.
PACK_RUN = 32


def lower_dot(kernel: OutlinedKernel, plan: BufferPlan, profile: TargetProfile) -> LoweredKernel:
    """A dot kernel: one `accy.dot_general` and the work fused around it."""
    kb, dot = anchored_kernel(kernel, plan, profile, accy.DotGeneralOp, "dot")
    d = _Dot(kb, kernel, dot)
    if d.B * d.M * d.N == 0:
        # No output element: no tiles to size (zero rows or columns would
        # divide by zero); one work-item per element launches none.
        return per_element(d)
    if profile.profile == "gpu":
        mma = d.mma_operands()
        if mma is None:
            return local_tiles(d, plan)
        warpgroup = d.warpgroup_k_major(mma, plan)
        if warpgroup is None:
            return mma_tiles(d, mma)
        ops, pack = warpgroup
        main = mma_tiles(d, ops)
        main.before = pack
        return main
    if can_pack(d):
        return packed_tiles(d, plan)
    if d.can_register_tile():
        return row_tiles(d)
    return per_element(d)


class _Dot:
    """The dot as B batches of (M x K) by (K x N) (a `register_tiles.Product`),
    and the choice of its kernel."""

    def __init__(self, kb: KernelBuilder, kernel: OutlinedKernel, dot: accy.DotGeneralOp) -> None:
        self.kb, self.kernel, self.dot = kb, kernel, dot
        self.others = [op for op in kernel.ops if op is not dot]
        a, b = accy.shape_of(dot.lhs), accy.shape_of(dot.rhs)
        self.a_shape, self.b_shape = a, b
        self.lb, self.rb, self.lc, self.rc = (tuple(x) for x in dot.dims())
        self.lf = [d for d in range(len(a)) if d not in (*self.lb, *self.lc)]
        self.rf = [d for d in range(len(b)) if d not in (*self.rb, *self.rc)]
        self.batch_shape = [a[d] for d in self.lb]
        self.m_shape = [a[d] for d in self.lf]
        self.n_shape = [b[d] for d in self.rf]
        self.k_shape = [a[d] for d in self.lc]
        self.B, self.M, self.N, self.K = (numel(s) for s in (self.batch_shape, self.m_shape, self.n_shape, self.k_shape))
        self.et = accy.elem_of(dot.result)
        self.is_float = accy.is_float(self.et)
        self.out_shape = accy.shape_of(dot.result)

    # -- coordinates (the Product) -----------------------------------------------

    @staticmethod
    def _place(rank: int, groups: Sequence[tuple[Sequence[int], Sequence[SSAValue]]]) -> list[SSAValue]:
        """Coordinates of rank `rank` with each group's values at its dims."""
        coords: list[SSAValue | None] = [None] * rank
        for dims, values in groups:
            for d, v in zip(dims, values, strict=False):
                coords[d] = v
        assert all(c is not None for c in coords)
        return coords  # type: ignore[return-value]

    def a_at(
        self, expr: Expr, bc: list[SSAValue], m: SSAValue, kc: list[SSAValue], source: SSAValue | None = None
    ) -> SSAValue:
        """The lhs at (bc, m, kc), or `source` there (a value of the lhs's shape)."""
        return expr.at(source or self.dot.lhs, self.a_coords(expr.kb, bc, m, kc))

    def a_coords(self, kb: KernelBuilder, bc: list[SSAValue], m: SSAValue, kc: list[SSAValue]) -> list[SSAValue]:
        """The lhs's coordinates of (bc, m, kc), built on `kb` (a packing kernel's, or the product's)."""
        mc = kb.delinearize(m, self.m_shape)
        return self._place(len(self.a_shape), [(self.lb, bc), (self.lf, mc), (self.lc, kc)])

    def b_at(
        self, expr: Expr, bc: list[SSAValue], n: SSAValue, kc: list[SSAValue], source: SSAValue | None = None
    ) -> SSAValue:
        """The rhs at (bc, n, kc), or `source` there (a value of the rhs's shape)."""
        return expr.at(source or self.dot.rhs, self.b_coords(expr.kb, bc, n, kc))

    def b_coords(self, kb: KernelBuilder, bc: list[SSAValue], n: SSAValue, kc: list[SSAValue]) -> list[SSAValue]:
        """The rhs's coordinates of (bc, n, kc), built on `kb` (a packing kernel's, or the product's)."""
        nc = kb.delinearize(n, self.n_shape)
        return self._place(len(self.b_shape), [(self.rb, bc), (self.rf, nc), (self.rc, kc)])

    def out_coords(self, bc: list[SSAValue], m: SSAValue, n: SSAValue) -> list[SSAValue]:
        kb = self.kb
        return [*bc, *kb.delinearize(m, self.m_shape), *kb.delinearize(n, self.n_shape)]

    def finish(self, coords: list[SSAValue], value: SSAValue, width: int = 1) -> None:
        """The epilogue and stores of one output element (or W lanes)."""
        epilogue = Expr(self.kb, self.others, width)
        epilogue.pin(self.dot.result, lambda _: value)
        epilogue.store(self.kernel.outputs, coords)

    def rhs_vectors(self) -> bool:
        """Whether the rhs can be read W columns at a time: its last dim is the
        last free dim, whole vectors of it."""
        w = self.kb.profile.vector_width
        return bool(self.rf) and self.rf[-1] == len(self.b_shape) - 1 and self.b_shape[-1] % w == 0

    def out_vectors(self) -> bool:
        """Whether the outputs take W columns at a time: their last dim is rhs
        columns, whole vectors of them (a matrix-vector product has no rhs
        free dim: N = 1)."""
        return bool(self.n_shape) and self.n_shape[-1] % self.kb.profile.vector_width == 0

    # -- CPU: which register tiles -------------------------------------------------

    def can_register_tile(self) -> bool:
        """Whether `row_tiles` applies: float, vectors, the rhs read W columns
        at a time and an epilogue of W lanes."""
        return (
            self.is_float
            and self.kb.profile.vector_width > 1
            and self.rhs_vectors()
            and vectorizable(self.others, self.kb)
        )

    # -- GPU: tensor cores -------------------------------------------------------------

    def mma_operands(self) -> MmaOperands | None:
        """How the tensor-core kernel reads this dot, or None where it does
        not apply: the target's `mma` unset; f16 or bf16 operands (both of
        one type, read before a fused cast to f32) take m16n8k16, f32
        operands under `math = fast` TF32 m16n8k8; and the device's
        work-group and local memory must hold the kernel."""
        profile = self.kb.profile
        if not profile.mma or not self.is_float or not isinstance(self.et, Float32Type):
            return None
        a, b = self._narrow(self.dot.lhs), self._narrow(self.dot.rhs)
        if a is not None and b is not None and type(accy.elem_of(a)) is type(accy.elem_of(b)):
            element, shape = accy.elem_of(a), "m16n8k16"
        elif profile.math == "fast" and all(isinstance(accy.elem_of(v), Float32Type) for v in self.dot.operands):
            a, b, element, shape = self.dot.lhs, self.dot.rhs, Float32Type(), "m16n8k8"
        else:
            return None
        # Vector reads (16 bytes) along k of an lhs whose last dim is the one
        # contracting dim, along n of an rhs whose last dim is the last free dim.
        w = VECTOR_BYTES // element_bytes(element)
        lanes = vectorizable(self.others, self.kb)
        a_lanes = w if lanes and self.lc == (len(self.a_shape) - 1,) and self.K % w == 0 else 1
        b_vectors = bool(self.rf) and self.rf[-1] == len(self.b_shape) - 1 and self.n_shape[-1] % w == 0
        b_lanes = w if lanes and b_vectors else 1
        # Async copies (cp.async) where both operands are buffers read a whole
        # aligned vector a slot: no register staging, more k steps in flight.
        kb = self.kb
        copies = a_lanes > 1 and b_lanes > 1 and all(
            v in kb.access and vectors_aligned(kb.access[v], w) for v in (a, b)
        )
        copy_a = partial(self._copy_source, a, self.a_coords) if copies else None
        copy_b = partial(self._copy_source, b, self.b_coords) if copies else None
        if config_for(profile, element, copies) is None:
            return None
        return MmaOperands(
            shape, element, partial(self.a_at, source=a), partial(self.b_at, source=b), a_lanes, b_lanes,
            copy_a, copy_b,
        )  # fmt: skip

    def warpgroup_k_major(self, ops: MmaOperands, plan: BufferPlan) -> tuple[MmaOperands, LoweredKernel | None] | None:
        """`ops` on Hopper's warpgroup tiles with the rhs staged
        k-contiguous: TF32 always (its wgmma reads B only so), 16-bit where
        async copies do not stage the rhs along n (an rhs contracted along
        its last dim, x · Wᵀ, or N not whole vectors). The rhs's async copies
        along k: of the rhs itself where its last dim is the one contracting
        dim (whole aligned vectors), else of a scratch copy [b][n][k] that a
        first launch packs (`_pack_k_major`); with that launch. None where
        the tiles do not take them (not "sm90", an lhs that copies do not
        stage, a 16-bit rhs that copies stage along n)."""
        tf32 = ops.shape == "m16n8k8"
        if not tf32 and ops.copy_b is not None:
            return None
        profile, kb = self.kb.profile, self.kb
        lhs, rhs = (self.dot.lhs, self.dot.rhs) if tf32 else (self._narrow(self.dot.lhs), self._narrow(self.dot.rhs))
        w = ops.a_lanes  # 16 bytes of k where the lhs is read so (K whole vectors)
        if w == 1 or lhs is None or rhs is None or not (lhs in kb.access and vectors_aligned(kb.access[lhs], w)):
            return None
        copy_a = partial(self._copy_source, lhs, self.a_coords)
        k_major = replace(ops, b_lanes=w, b_k_major=True, copy_a=copy_a, copy_b=copy_a)  # copy_b: a stand-in
        if not wgmma_applies(profile, k_major):
            return None
        if self.rc == (len(self.b_shape) - 1,) and rhs in kb.access and vectors_aligned(kb.access[rhs], w):
            return replace(k_major, copy_b=partial(self._copy_source, rhs, self.b_coords)), None
        scratch = Scratch(accy.elem_of(rhs), self.B * self.N * self.K)
        rows = -(-self.K // PACK_RUN)
        body = partial(self._pack_k_major, rhs)
        pack = stage_kernel(self.kernel, plan, profile, "pack_b", scratch, self.B * rows * self.N * PACK_RUN, body)
        packed = kb.scratch_argument(scratch)

        def place(bc: list[SSAValue], n: SSAValue, kc: list[SSAValue]) -> tuple[SSAValue, SSAValue]:
            return packed, self._packed_index(kb, kb.linearize(bc, self.batch_shape), n, kb.linearize(kc, self.k_shape))

        return replace(k_major, copy_b=place), pack

    def _packed_index(self, kb: KernelBuilder, b: SSAValue, n: SSAValue, k: SSAValue) -> SSAValue:
        """The flat index in the rhs's [b][n][k] scratch copy of its element at batch b, n, k."""
        return kb.add(kb.mul(kb.add(kb.mul(b, self.N), n), self.K), k)

    def _pack_k_major(self, rhs: SSAValue, pk: KernelBuilder, out: SSAValue, gid: SSAValue) -> None:
        """One work-item of the [b][n][k] copy of `rhs` (the dot's rhs, or the
        16-bit value a fused cast reads): its element (b, k, n),
        `PACK_RUN` consecutive work-items consecutive k (a coalesced run of the
        copy), the next runs the next n (the rhs's rows read together)."""
        b, rows, n, kk = pk.delinearize(gid, [self.B, -(-self.K // PACK_RUN), self.N, PACK_RUN])
        k = pk.add(pk.mul(rows, PACK_RUN), kk)

        def copy() -> list[SSAValue]:
            x = self.b_at(Expr(pk, self.others), pk.delinearize(b, self.batch_shape), n, pk.delinearize(k, self.k_shape), rhs)
            pk.op(memref.StoreOp.get(x, out, [self._packed_index(pk, b, n, k)]))
            return []

        if self.K % PACK_RUN:
            pk.if_(pk.lt(k, self.K), copy)
        else:
            copy()

    def _copy_source(
        self, value: SSAValue,
        coords: Callable[[KernelBuilder, list[SSAValue], SSAValue, list[SSAValue]], list[SSAValue]],
        bc: list[SSAValue], i: SSAValue, kc: list[SSAValue],
    ) -> tuple[SSAValue, SSAValue]:
        """The buffer argument of operand `value` and the flat index of its element at (bc, i, kc)."""
        kb = self.kb
        acc = kb.access[value]
        return acc.arg, kb.address(acc, coords(kb, bc, i, kc))

    def _narrow(self, operand: SSAValue) -> SSAValue | None:
        """The 16-bit float value an operand is: itself, or the source of the
        fused cast to f32 that compute-half-in-f32 reads it through."""
        if isinstance(accy.elem_of(operand), Float16Type | BFloat16Type):
            return operand
        cast = operand.owner
        narrow = isinstance(cast, accy.CastOp) and isinstance(accy.elem_of(cast.x), Float16Type | BFloat16Type)
        if narrow and cast in self.others:
            return cast.x
        return None
