"""Lowering of dot work items: one `accy.dot_general` (batch dims, several
contracting dims, operands read through their strides, so transposes are
free) with its elementwise prologue and epilogue (bias, activation,
residual) fused.

The dot is seen as B batches of an (M x K) by (K x N) product, where M, N and
K are the products of the lhs free, rhs free and contracting dims; flat m, n
and k are split back into the operands' own coordinates, so any dot_general
is just index math.

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
  `vector<WxT>` accumulators. Work-items walk the row tiles fastest, so one
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
  then runs the epilogue W lanes at a time.
- GPU profile: TxT work-groups (T the profile's `dot_tile`, 16 by default,
  at most what the device's work-group holds), each work-item an R x R
  register tile (R the profile's `dot_rows`, 8 by default on the GPU,
  halved while there are fewer than `GPU_MIN_BLOCKS` work-groups), so a
  work-group computes a (T·R)² block; each k step stages T/4 columns of
  the lhs block and T/4 rows of the rhs block in local memory (barriers
  around it), fetched into registers from global memory during the step
  before, and every work-item does R² `fma`s per staged k from R + R local
  loads (`local_tiles`). A product with too few blocks even at
  `GPU_MIN_TILE` tiles (64 rows by 1024, an RNN cell's) splits k into
  ranges of at least `GPU_SPLIT_MIN_K`: one launch stores each range's
  partial sums, a second adds them per output element and runs the
  epilogue.
- Otherwise: one work-item per output element, a scalar loop over k.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

from xdsl.dialects import arith, memref, vector
from xdsl.dialects import math as mathd
from xdsl.dialects.builtin import IndexType, VectorType
from xdsl.ir import SSAValue

from accy.dialects import accy
from accy.dialects.host import buffer_element_type
from accy.dialects.target import TargetProfile
from accy.dialects.types import element_bytes, numel
from accy.passes.analyses.bufferization import BufferPlan
from accy.passes.analyses.outlining import OutlinedKernel
from accy.passes.kernelization.evaluate import Expr, vectorizable
from accy.passes.kernelization.kernel_builder import KernelBuilder, anchored_kernel
from accy.passes.kernelization.launch import stage_kernel, work_item_per
from accy.passes.kernelization.lowered import LoweredKernel, Scratch


def lower_dot(kernel: OutlinedKernel, plan: BufferPlan, profile: TargetProfile) -> LoweredKernel:
    """A dot kernel: one `accy.dot_general` and the work fused around it."""
    kb, dot = anchored_kernel(kernel, plan, profile, accy.DotGeneralOp, "dot")
    d = _Dot(kb, kernel, dot)
    if d.B * d.M * d.N == 0:
        # No output element: no tiles to size (zero rows or columns would
        # divide by zero); one work-item per element launches none.
        return d.per_element()
    if profile.profile == "gpu":
        return d.local_tiles(plan)
    if d.can_pack():
        return d.packed_tiles(plan)
    if d.can_register_tile():
        return d.register_tiles()
    return d.per_element()


#: Accumulators a CPU register tile may hold, by vector width: AVX-512 (16
#: lanes) has 32 vector registers, AVX2 and SSE 16; the rest hold the rhs
#: vectors of a k step and the broadcast lhs scalar.
ACCUMULATORS = {16: 24}
DEFAULT_ACCUMULATORS = 12
#: Work-groups a GPU dot aims for at least, halving its register tiles (to
#: 2x2) until it has them: a few per multiprocessor of a large GPU.
GPU_MIN_BLOCKS = 256
#: Multiply-adds per batch below which a CPU dot is not packed: two more
#: launches (~10-20 us each) cost more than packing saves on a small product.
PACK_MIN_WORK = 64 * 64 * 64
#: Smallest register tile edge a GPU dot halves its tiles to before it splits k.
GPU_MIN_TILE = 4
#: Fewest k a range of a GPU dot split along k holds (`_k_split`).
GPU_SPLIT_MIN_K = 32
#: Work-groups a GPU dot split along k aims for (`_k_split`).
GPU_SPLIT_BLOCKS = 512
#: k staged per step of a GPU dot, for a 16 x 16 work-group (scaled with it).
GPU_K_STEP = 4
#: Largest GPU register tile that prefetches the next k step (`local_tiles`).
GPU_PREFETCH_TILE = 8


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
        mc = expr.kb.delinearize(m, self.m_shape)
        coords = self._place(len(self.a_shape), [(self.lb, bc), (self.lf, mc), (self.lc, kc)])
        return expr.at(self.dot.lhs, coords)

    def b_at(self, expr: Expr, bc: list[SSAValue], n: SSAValue, kc: list[SSAValue]) -> SSAValue:
        nc = expr.kb.delinearize(n, self.n_shape)
        coords = self._place(len(self.b_shape), [(self.rb, bc), (self.rf, nc), (self.rc, kc)])
        return expr.at(self.dot.rhs, coords)

    def out_coords(self, bc: list[SSAValue], m: SSAValue, n: SSAValue) -> list[SSAValue]:
        kb = self.kb
        return [*bc, *kb.delinearize(m, self.m_shape), *kb.delinearize(n, self.n_shape)]

    def fma(self, a: SSAValue, b: SSAValue, acc: SSAValue, kb: KernelBuilder | None = None) -> SSAValue:
        kb = kb or self.kb
        if self.float:
            return kb.val(mathd.FmaOp(a, b, acc))
        return kb.val(arith.AddiOp(kb.val(arith.MuliOp(a, b)), acc))

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
        tile_rows = min(kb.profile.dot_rows, self.M)
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

    # -- CPU: packed panels and register tiles ----------------------------------

    def tile_shape(self) -> tuple[int, int]:
        """(rows, vectors) of the CPU register tile: the profile's, within the
        register budget and at most M rows."""
        profile = self.kb.profile
        budget = ACCUMULATORS.get(profile.vector_width, DEFAULT_ACCUMULATORS)
        if self.et.bitwidth > 32:  # a vector of doubles takes two registers
            budget //= 2
        vectors = max(1, min(profile.dot_vectors, budget))
        return max(1, min(profile.dot_rows, budget // vectors, self.M)), vectors

    def can_pack(self) -> bool:
        rows, _ = self.tile_shape()
        return (
            self.float
            and self.kb.profile.vector_width > 1
            and self.M > rows
            and self.M * self.N * self.K >= PACK_MIN_WORK
            and vectorizable(self.others, self.kb)
        )

    def _rhs_vectors(self) -> bool:
        """Whether the rhs can be read W columns at a time: its last dim is the
        last free dim, whole vectors of it."""
        w = self.kb.profile.vector_width
        return bool(self.rf) and self.rf[-1] == len(self.b_shape) - 1 and self.b_shape[-1] % w == 0

    def packed_tiles(self, plan: BufferPlan) -> LoweredKernel:
        kb, w = self.kb, self.kb.profile.vector_width
        rows, vectors = self.tile_shape()
        cols = vectors * w
        m_tiles, n_tiles = -(-self.M // rows), -(-self.N // cols)
        a_panel, b_panel = self.K * rows, self.K * cols  # elements of one panel
        a_packed = Scratch(self.et, self.B * m_tiles * a_panel)
        b_packed = Scratch(self.et, self.B * n_tiles * b_panel)
        pack_a = self._pack(plan, "pack_a", a_packed, m_tiles, rows, self.a_at, self.M, 1)
        vec = w if self._rhs_vectors() else 1
        pack_b = self._pack(plan, "pack_b", b_packed, n_tiles, cols, self.b_at, self.N, vec)
        pa, pb = kb.scratch_argument(a_packed), kb.scratch_argument(b_packed)
        vt = VectorType(self.et, [w])
        st = buffer_element_type(self.et)
        tile = kb.local_array(rows * cols, st, workgroup=False)

        def body(gid: SSAValue) -> None:
            bi, nt, mt = kb.delinearize(gid, [self.B, n_tiles, m_tiles])
            a_base = kb.mul(kb.add(kb.mul(bi, m_tiles), mt), a_panel)
            b_base = kb.mul(kb.add(kb.mul(bi, n_tiles), nt), b_panel)

            def step(k: SSAValue, acc: list[SSAValue]) -> list[SSAValue]:
                a_at, b_at = kb.add(a_base, kb.mul(k, rows)), kb.add(b_base, kb.mul(k, cols))
                bvecs = [kb.val(vector.LoadOp(pb, [kb.add(b_at, c * w)], vt)) for c in range(vectors)]
                out = []
                for r in range(rows):
                    a = kb.val(vector.BroadcastOp(kb.val(memref.LoadOp.get(pa, [kb.add(a_at, r)])), vt))
                    out += [self.fma(a, bvecs[c], acc[r * vectors + c]) for c in range(vectors)]
                return out

            accs = kb.for_(0, self.K, 1, [kb.const(0, vt)] * (rows * vectors), step)
            for i, acc in enumerate(accs):
                kb.op(vector.StoreOp(acc, tile, [kb.const(i * w, IndexType())]))
            bc = kb.delinearize(bi, self.batch_shape)
            m0, n0 = kb.mul(mt, rows), kb.mul(nt, cols)
            self._tile_epilogue(tile, bc, m0, n0, rows, cols)

        main = work_item_per(kb, self.B * n_tiles * m_tiles, body)
        pack_b.before = pack_a
        main.before = pack_b
        return main

    def _pack(
        self,
        plan: BufferPlan,
        suffix: str,
        scratch: Scratch,
        tiles: int,
        width: int,
        read: Callable[[Expr, list[SSAValue], SSAValue, list[SSAValue]], SSAValue],
        extent: int,
        vec: int,
    ) -> LoweredKernel:
        """The kernel packing one operand into panels of `width` rows (lhs) or
        columns (rhs), k-major: a work-item per (batch, panel, k) writes
        `width` elements, `vec` at a time (1, or W when W consecutive
        elements of the operand are W consecutive columns); indices past
        `extent` read the last one."""

        def body(pk: KernelBuilder, out: SSAValue, gid: SSAValue) -> None:
            bi, t, k = pk.delinearize(gid, [self.B, tiles, self.K])
            bc = pk.delinearize(bi, self.batch_shape)
            kc = pk.delinearize(k, self.k_shape)
            base = pk.mul(gid, width)
            expr = Expr(pk, self.others, vec)
            for j in range(0, width, vec):
                # A vector past the extent starts at its last whole vector (extent is whole vectors then).
                i = pk.min(pk.add(pk.mul(t, width), j), extent - vec)
                x = read(expr, bc, i, kc)
                at = pk.add(base, j)
                pk.op(vector.StoreOp(x, out, [at]) if vec > 1 else memref.StoreOp.get(x, out, [at]))

        return stage_kernel(self.kernel, plan, self.kb.profile, suffix, scratch, self.B * tiles * self.K, body)

    def _tile_epilogue(self, tile: SSAValue, bc: list[SSAValue], m0: SSAValue, n0: SSAValue, rows: int, cols: int) -> None:
        """The epilogue of one register tile (in the private array `tile`,
        row-major): a loop over its rows, W lanes at a time when the output's
        last dim is whole vectors, else lane by lane; guarded past M and N."""
        kb, w = self.kb, self.kb.profile.vector_width
        vt = VectorType(buffer_element_type(self.et), [w])
        # W lanes need the output's last dim to be rhs columns, whole vectors
        # of them (a matrix-vector product has no rhs free dim: N = 1).
        lanes = w if self.n_shape and self.n_shape[-1] % w == 0 else 1

        def row(r: SSAValue, _: list[SSAValue]) -> list[SSAValue]:
            m = kb.add(m0, r)

            def column(c: SSAValue, _: list[SSAValue]) -> list[SSAValue]:
                n = kb.add(n0, c)

                def store() -> list[SSAValue]:
                    at = kb.add(kb.mul(r, cols), c)
                    load = vector.LoadOp(tile, [at], vt) if lanes > 1 else memref.LoadOp.get(tile, [at])
                    self.finish(self.out_coords(bc, m, n), kb.val(load), lanes)
                    return []

                inside = [kb.lt(m, self.M)] if self.M % rows else []
                inside += [kb.lt(n, self.N)] if self.N % cols else []
                if inside:
                    cond = inside[0] if len(inside) == 1 else kb.val(arith.AndIOp(*inside))
                    kb.if_(cond, store)
                else:
                    store()
                return []

            kb.for_(0, cols, lanes, [], column)
            return []

        kb.for_(0, rows, 1, [], row)

    # -- GPU: local-memory tiles and register tiles --------------------------------

    def local_tiles(self, plan: BufferPlan) -> LoweredKernel:
        """T x T work-items (T the profile's `dot_tile`), each a R x R register
        tile (R its `dot_rows`): a work-group computes a (T·R) x (T·R) block
        (`_tiles`). A product with too few blocks to fill the device even
        with GPU_MIN_TILE tiles (a batch of 64 rows, say) splits k into S ranges
        (`_k_split`): the blocks of each range store partial sums in a
        scratch buffer, and a second launch adds the S sums of each output
        element, in order, and runs the epilogue."""
        kb = self.kb
        t = min(kb.profile.dot_tile, math.isqrt(kb.profile.max_work_group_size))
        r = max(1, kb.profile.dot_rows)
        while r > 1 and 2 * (t // 2 or 1) * t * r * element_bytes(buffer_element_type(self.et)) > kb.profile.local_mem_bytes:
            r //= 2
        # Smaller tiles for a product too small to fill the device with blocks
        # (1024² at 8x8 tiles is 64 blocks for an H200's 132 multiprocessors),
        # down to GPU_MIN_TILE: below, k is split instead.
        while r > GPU_MIN_TILE and self._blocks(t * r) < GPU_MIN_BLOCKS:
            r //= 2
        bk = max(1, t * GPU_K_STEP // 16)  # k per staged step
        splits, chunk = self._k_split(self._blocks(t * r), bk)
        if splits == 1:
            return self._tiles(kb, t, r, 1, self.K, lambda b, bc, s, m, n, value: self.finish(self.out_coords(bc, m, n), value))
        partial = Scratch(self.et, splits * self.B * self.M * self.N)
        sk = KernelBuilder(f"{self.kernel.name}_split_k", self.kernel.kind, kb.profile, plan, list(self.kernel.inputs), ops=self.kernel.ops)
        sums = sk.scratch_argument(partial)

        def store_partial(b: KernelBuilder, bc: list[SSAValue], s: SSAValue, m: SSAValue, n: SSAValue, value: SSAValue) -> None:
            at = b.linearize([s, b.linearize(bc, self.batch_shape), m, n], [splits, self.B, self.M, self.N])
            b.op(memref.StoreOp.get(value, sums, [at]))

        first = self._tiles(sk, t, r, splits, chunk, store_partial)
        read = kb.scratch_argument(partial)
        outputs = self.B * self.M * self.N

        def body(gid: SSAValue) -> None:
            bi, m, n = kb.delinearize(gid, [self.B, self.M, self.N])
            total = kb.val(memref.LoadOp.get(read, [gid]))
            for s in range(1, splits):
                total = kb.val(arith.AddfOp(total, kb.val(memref.LoadOp.get(read, [kb.add(gid, s * outputs)]))))
            self.finish(self.out_coords(kb.delinearize(bi, self.batch_shape), m, n), total)

        main = work_item_per(kb, outputs, body)
        main.before = first
        return main

    def _blocks(self, edge: int) -> int:
        """Work-groups of (edge x edge)-output blocks over the product."""
        return max(self.B, 1) * -(-self.M // edge) * -(-self.N // edge)

    def _k_split(self, blocks: int, bk: int) -> tuple[int, int]:
        """How many k ranges (S) and how long each (a multiple of `bk`, at
        least GPU_SPLIT_MIN_K): 1 when there are GPU_MIN_BLOCKS blocks, else
        enough for GPU_SPLIT_BLOCKS work-groups."""
        if blocks >= GPU_MIN_BLOCKS or not self.float:
            return 1, self.K
        splits = min(-(-GPU_SPLIT_BLOCKS // blocks), self.K // GPU_SPLIT_MIN_K)
        if splits <= 1:
            return 1, self.K
        chunk = -(-self.K // splits)
        chunk = -(-chunk // bk) * bk
        return -(-self.K // chunk), chunk

    def _tiles(
        self,
        kb: KernelBuilder,
        t: int,
        r: int,
        splits: int,
        chunk: int,
        store: Callable[[KernelBuilder, list[SSAValue], SSAValue, SSAValue, SSAValue, SSAValue], None],
    ) -> LoweredKernel:
        """The tiled kernel on builder `kb`: T x T work-items of R x R tiles
        over k range s (`chunk` k from s·chunk; the grid's z is batch x
        range), `store(kb, batch coords, s, m, n, sum)` for every output
        element in range. Work-item (tx, ty) owns rows ty + T·i and columns
        tx + T·j, so a warp's reads of the staged tiles are broadcasts (rows)
        or consecutive (columns), and its stores are coalesced. Each k step
        stages BK = T·GPU_K_STEP/16 columns of the lhs block (k-major) and BK
        rows of the rhs block in local memory, zero past M, N and K, fetched
        during the step before (tiles up to GPU_PREFETCH_TILE)."""
        bm = t * r  # block edge (rows and columns)
        bk = max(1, t * GPU_K_STEP // 16)  # k per staged step
        st = buffer_element_type(self.et)
        a_tile = kb.local_array(bk * bm, st, workgroup=True)  # [k][m]
        b_tile = kb.local_array(bk * bm, st, workgroup=True)  # [k][n]
        tx, ty = kb.local_id("x"), kb.local_id("y")
        n0, m0 = kb.mul(kb.group_id("x"), bm), kb.mul(kb.group_id("y"), bm)
        z = kb.group_id("z")
        s = kb.rem(z, splits)
        bc = kb.delinearize(kb.div(z, splits), self.batch_shape)
        k_first = kb.mul(s, chunk)
        flat = kb.add(kb.mul(ty, t), tx)
        zero = kb.const(0, self.et)
        per_thread = -(-(bk * bm) // (t * t))

        def fetch(k0: SSAValue) -> list[SSAValue]:
            """This work-item's elements of the lhs and rhs blocks at k0, as
            (lhs, rhs) pairs; zero past M, N and K."""
            out: list[SSAValue] = []
            for e in range(per_thread):
                slot = kb.add(flat, e * t * t)

                def pair(slot: SSAValue = slot) -> list[SSAValue]:
                    # lhs: consecutive work-items read consecutive k of a row.
                    mm, kk = kb.div(slot, bk), kb.rem(slot, bk)
                    m, k = kb.add(m0, mm), kb.add(k0, kk)
                    ok = kb.val(arith.AndIOp(kb.lt(m, self.M), kb.lt(k, self.K)))
                    a = kb.if_(ok, lambda: [self.a_at(Expr(kb, self.others), bc, m, kb.delinearize(k, self.k_shape))], lambda: [zero], [self.et])[0]
                    # rhs: consecutive work-items read consecutive n of a row.
                    kk2, nn = kb.div(slot, bm), kb.rem(slot, bm)
                    n, k2 = kb.add(n0, nn), kb.add(k0, kk2)
                    ok2 = kb.val(arith.AndIOp(kb.lt(n, self.N), kb.lt(k2, self.K)))
                    b = kb.if_(ok2, lambda: [self.b_at(Expr(kb, self.others), bc, n, kb.delinearize(k2, self.k_shape))], lambda: [zero], [self.et])[0]
                    return [a, b]

                if (e + 1) * t * t <= bk * bm:
                    out += pair()
                else:
                    out += kb.if_(kb.lt(slot, bk * bm), pair, lambda: [zero, zero], [self.et, self.et])
            return out

        def put(values: list[SSAValue]) -> None:
            """Stores what `fetch` gave into the local tiles (the lhs k-major)."""
            for e in range(per_thread):
                slot = kb.add(flat, e * t * t)

                def store_pair(slot: SSAValue = slot, a: SSAValue = values[2 * e], b: SSAValue = values[2 * e + 1]) -> list[SSAValue]:
                    mm, kk = kb.div(slot, bk), kb.rem(slot, bk)
                    kb.op(memref.StoreOp.get(a, a_tile, [kb.add(kb.mul(kk, bm), mm)]))
                    kb.op(memref.StoreOp.get(b, b_tile, [slot]))
                    return []

                if (e + 1) * t * t <= bk * bm:
                    store_pair()
                else:
                    kb.if_(kb.lt(slot, bk * bm), store_pair)

        def inner(kk: SSAValue, c: list[SSAValue]) -> list[SSAValue]:
            row = kb.mul(kk, bm)
            a = [kb.val(memref.LoadOp.get(a_tile, [kb.add(row, kb.add(ty, t * i))])) for i in range(r)]
            b = [kb.val(memref.LoadOp.get(b_tile, [kb.add(row, kb.add(tx, t * j))])) for j in range(r)]
            return [self.fma(a[i], b[j], c[i * r + j], kb) for i in range(r) for j in range(r)]

        # The next k step's elements are fetched from global memory while
        # this one's are multiplied (register prefetch). On the H200, with 4
        # k a step: 8x8 tiles at 4096² 31.6 TFLOP/s (8 k a step: 24.8 with
        # the prefetch, 29.7 without), 4x4 tiles at 1024² 17.5 (15.3
        # without).
        prefetch = r <= GPU_PREFETCH_TILE

        def k_step(k: SSAValue, carried: list[SSAValue]) -> list[SSAValue]:
            k0 = kb.add(k_first, k)
            acc, held = carried[: r * r], carried[r * r :]
            put(held if prefetch else fetch(k0))
            kb.barrier()
            following = fetch(kb.add(k0, bk)) if prefetch else []
            out = kb.for_(0, bk, 1, acc, inner)
            kb.barrier()
            return out + following

        first = fetch(k_first) if prefetch else []
        accs = kb.for_(0, chunk, bk, [zero] * (r * r) + first, k_step)[: r * r]
        for i in range(r):
            m = kb.add(m0, kb.add(ty, t * i))
            for j in range(r):
                n = kb.add(n0, kb.add(tx, t * j))

                def store_sum(m: SSAValue = m, n: SSAValue = n, value: SSAValue = accs[i * r + j]) -> list[SSAValue]:
                    store(kb, bc, s, m, n, value)
                    return []

                kb.if_(kb.val(arith.AndIOp(kb.lt(m, self.M), kb.lt(n, self.N))), store_sum)
        grid = (-(-self.N // bm), -(-self.M // bm), max(self.B, 1) * splits)
        return kb.lowered(grid, (t, t, 1), states_block=True)
