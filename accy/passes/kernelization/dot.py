"""Lowering of dot work items: one `accy.dot_general` (batch dims, several
contracting dims, operands read through their strides, so transposes are
free) with its elementwise prologue and epilogue (bias, activation,
residual) fused.

The dot is seen as B batches of an (M x K) by (K x N) product, where M, N and
K are the products of the lhs free, rhs free and contracting dims; flat m, n
and k are split back into the operands' own coordinates, so any dot_general
is just index math.

- CPU profile, float, the rhs's last dim is the last free dim and a multiple
  of the vector width W: each work-item computes a register tile of R rows by
  W columns (R the profile's `dot_rows`, 4 by default) with R `vector<WxT>`
  accumulators (an lhs scalar broadcast times an rhs vector, `math.fma`),
  then runs the epilogue W lanes at a time.
- GPU profile: TxT work-groups (T the profile's `dot_tile`, 16 by default,
  at most what the device's work-group holds); each k step stages a TxT
  tile of each operand in local memory (barriers around it) and every
  work-item accumulates one output element.
- Otherwise: one work-item per output element, a scalar loop over k.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

from xdsl.dialects import arith, memref, vector
from xdsl.dialects import math as mathd
from xdsl.dialects.builtin import VectorType
from xdsl.ir import SSAValue

from accy.dialects import accy
from accy.dialects.host import buffer_element_type
from accy.dialects.target import TargetProfile
from accy.dialects.types import numel
from accy.passes.analyses.bufferization import BufferPlan
from accy.passes.analyses.outlining import OutlinedKernel
from accy.passes.kernelization.evaluate import Expr, vectorizable
from accy.passes.kernelization.kernel_builder import KernelBuilder, anchored_kernel
from accy.passes.kernelization.launch import work_item_per
from accy.passes.kernelization.lowered import LoweredKernel


def lower_dot(kernel: OutlinedKernel, plan: BufferPlan, profile: TargetProfile) -> LoweredKernel:
    """A dot kernel: one `accy.dot_general` and the work fused around it."""
    kb, dot = anchored_kernel(kernel, plan, profile, accy.DotGeneralOp, "dot")
    d = _Dot(kb, kernel, dot)
    if profile.profile == "gpu":
        return d.local_tiles()
    if d.can_register_tile():
        return d.register_tiles()
    return d.per_element()


class _Dot:
    """The dot as B batches of (M x K) by (K x N), and its kernels."""

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
        self.float = accy.is_float(self.et)
        self.out_shape = accy.shape_of(dot.result)

    # -- coordinates ---------------------------------------------------------

    @staticmethod
    def _place(rank: int, groups: Sequence[tuple[Sequence[int], Sequence[SSAValue]]]) -> list[SSAValue]:
        """Coordinates of rank `rank` with each group's values at its dims."""
        coords: list[SSAValue | None] = [None] * rank
        for dims, values in groups:
            for d, v in zip(dims, values, strict=False):
                coords[d] = v
        assert all(c is not None for c in coords)
        return coords  # type: ignore[return-value]

    def a_at(self, expr: Expr, bc: list[SSAValue], m: SSAValue, kc: list[SSAValue]) -> SSAValue:
        mc = self.kb.delinearize(m, self.m_shape)
        coords = self._place(len(self.a_shape), [(self.lb, bc), (self.lf, mc), (self.lc, kc)])
        return expr.at(self.dot.lhs, coords)

    def b_at(self, expr: Expr, bc: list[SSAValue], n: SSAValue, kc: list[SSAValue]) -> SSAValue:
        nc = self.kb.delinearize(n, self.n_shape)
        coords = self._place(len(self.b_shape), [(self.rb, bc), (self.rf, nc), (self.rc, kc)])
        return expr.at(self.dot.rhs, coords)

    def out_coords(self, bc: list[SSAValue], m: SSAValue, n: SSAValue) -> list[SSAValue]:
        kb = self.kb
        return [*bc, *kb.delinearize(m, self.m_shape), *kb.delinearize(n, self.n_shape)]

    def fma(self, a: SSAValue, b: SSAValue, acc: SSAValue) -> SSAValue:
        if self.float:
            return self.kb.val(mathd.FmaOp(a, b, acc))
        return self.kb.val(arith.AddiOp(self.kb.val(arith.MuliOp(a, b)), acc))

    def finish(self, coords: list[SSAValue], value: SSAValue, width: int = 1) -> None:
        """The epilogue and stores of one output element (or W lanes)."""
        epilogue = Expr(self.kb, self.others, width)
        epilogue.pin(self.dot.result, lambda _: value)
        epilogue.store(self.kernel.outputs, coords)

    # -- one work-item per output element --------------------------------------

    def per_element(self) -> LoweredKernel:
        kb = self.kb
        total = self.B * self.M * self.N
        def body(gid: SSAValue) -> None:
            bi, m, n = kb.delinearize(gid, [self.B, self.M, self.N])
            bc = kb.delinearize(bi, self.batch_shape)

            def step(k: SSAValue, acc: list[SSAValue]) -> list[SSAValue]:
                kc = kb.delinearize(k, self.k_shape)
                expr = Expr(kb, self.others)
                return [self.fma(self.a_at(expr, bc, m, kc), self.b_at(expr, bc, n, kc), acc[0])]

            total_ = kb.for_(0, self.K, 1, [kb.const(0, self.et)], step)[0]
            self.finish(self.out_coords(bc, m, n), total_)

        return work_item_per(kb, total, body)

    # -- CPU: register tiles -------------------------------------------------

    def can_register_tile(self) -> bool:
        w = self.kb.profile.vector_width
        return (
            self.float
            and w > 1
            and bool(self.rf)
            and self.rf[-1] == len(self.b_shape) - 1
            and self.b_shape[-1] % w == 0
            and vectorizable(self.others, self.kb)
        )

    def register_tiles(self) -> LoweredKernel:
        kb, w = self.kb, self.kb.profile.vector_width
        tile_rows = kb.profile.dot_rows
        m_tiles = -(-self.M // tile_rows)
        n_tiles = self.N // w
        total = self.B * m_tiles * n_tiles
        vt = VectorType(self.et, [w])
        def body(gid: SSAValue) -> None:
            bi, mt, nt = kb.delinearize(gid, [self.B, m_tiles, n_tiles])
            bc = kb.delinearize(bi, self.batch_shape)
            m0, n0 = kb.mul(mt, tile_rows), kb.mul(nt, w)
            # Rows past M (the last tile) read row M-1 and are not stored.
            rows = [kb.min(kb.add(m0, i), self.M - 1) for i in range(tile_rows)]

            def step(k: SSAValue, acc: list[SSAValue]) -> list[SSAValue]:
                kc = kb.delinearize(k, self.k_shape)
                bvec = self.b_at(Expr(kb, self.others, w), bc, n0, kc)
                scalar = Expr(kb, self.others)
                out = []
                for i in range(tile_rows):
                    a = kb.val(vector.BroadcastOp(self.a_at(scalar, bc, rows[i], kc), vt))
                    out.append(self.fma(a, bvec, acc[i]))
                return out

            accs = kb.for_(0, self.K, 1, [kb.const(0, vt)] * tile_rows, step)
            for i in range(tile_rows):
                m = kb.add(m0, i)

                def store(i: int = i, m: SSAValue = m) -> list[SSAValue]:
                    self.finish(self.out_coords(bc, m, n0), accs[i], w)
                    return []

                if self.M % tile_rows == 0:
                    store()
                else:
                    kb.if_(kb.lt(m, self.M), store)

        return work_item_per(kb, total, body)

    # -- GPU: local-memory tiles ------------------------------------------------

    def local_tiles(self) -> LoweredKernel:
        # The profile's tile edge, at most what a work-group of t x t items may hold.
        kb, t = self.kb, min(self.kb.profile.dot_tile, math.isqrt(self.kb.profile.max_work_group_size))
        st = buffer_element_type(self.et)
        a_tile = kb.local_array(t * t, st, workgroup=True)
        b_tile = kb.local_array(t * t, st, workgroup=True)
        tx, ty = kb.local_id("x"), kb.local_id("y")
        n = kb.add(kb.mul(kb.group_id("x"), t), tx)
        m = kb.add(kb.mul(kb.group_id("y"), t), ty)
        bi = kb.group_id("z")
        bc = kb.delinearize(bi, self.batch_shape)
        m_ok, n_ok = kb.lt(m, self.M), kb.lt(n, self.N)
        slot = kb.add(kb.mul(ty, t), tx)
        zero = kb.const(0, self.et)

        def stage(ok: SSAValue, load: Callable[[], SSAValue], tile: SSAValue) -> None:
            v = kb.if_(ok, lambda: [load()], lambda: [zero], [self.et])[0]
            kb.op(memref.StoreOp.get(v, tile, [slot]))

        def k_tile(k0: SSAValue, acc: list[SSAValue]) -> list[SSAValue]:
            ka, kb_ = kb.add(k0, tx), kb.add(k0, ty)
            a_ok = kb.val(arith.AndIOp(m_ok, kb.lt(ka, self.K)))
            b_ok = kb.val(arith.AndIOp(n_ok, kb.lt(kb_, self.K)))
            stage(a_ok, lambda: self.a_at(Expr(kb, self.others), bc, m, kb.delinearize(ka, self.k_shape)), a_tile)
            stage(b_ok, lambda: self.b_at(Expr(kb, self.others), bc, n, kb.delinearize(kb_, self.k_shape)), b_tile)
            kb.barrier()

            def inner(kk: SSAValue, c: list[SSAValue]) -> list[SSAValue]:
                a = kb.val(memref.LoadOp.get(a_tile, [kb.add(kb.mul(ty, t), kk)]))
                b = kb.val(memref.LoadOp.get(b_tile, [kb.add(kb.mul(kk, t), tx)]))
                return [self.fma(a, b, c[0])]

            out = kb.for_(0, t, 1, acc, inner)
            kb.barrier()
            return out

        total = kb.for_(0, self.K, t, [zero], k_tile)[0]

        def store() -> list[SSAValue]:
            self.finish(self.out_coords(bc, m, n), total)
            return []

        kb.if_(kb.val(arith.AndIOp(m_ok, n_ok)), store)
        grid = (-(-self.N // t), -(-self.M // t), max(self.B, 1))
        return kb.lowered(grid, (t, t, 1), states_block=True)
