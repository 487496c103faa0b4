"""Register tiles of a product: the fast kernels of B batches of an (M x K)
by (K x N) product, for any lowering that can read its operands element by
element and finish an output element (a dot; a convolution seen as an
implicit product). The lowering describes its product (`Product`: the
sizes, how an operand element is read at (batch, m or n, k), how an output
element is finished) and picks a kernel and its sizes; this module builds
it.

- `row_tiles` (CPU, the rhs read W columns at a time): each work-item
  computes R rows by W columns with R `vector<WxT>` accumulators straight
  from the operands, then runs the epilogue W lanes at a time.
- `packed_tiles` (CPU): three launches. The first two pack the operands
  (their prologue evaluated on the way, any layout or transpose read
  through its strides) into scratch panels (`pack`): the lhs as panels of R
  rows, k-major (`pa[b][mt][k][r]`), the rhs as panels of C·W columns,
  k-major (`pb[b][nt][k][c]`); rows and columns past M and N repeat the
  last one (computed, never stored). The third gives each work-item one R x
  C·W register tile (`PackedTile`, sized by `tile_shape` within the register
  budget `ACCUMULATORS`): every k step loads C vectors of the rhs panel and
  R lhs scalars, contiguous, and does R·C `math.fma`s on `vector<WxT>`
  accumulators. Work-items walk the row tiles fastest, so one rhs panel
  stays in cache while the lhs panels stream. The tile then goes through a
  private array to the epilogue (`TileEpilogue`).
- `gpu_tiles` (GPU): T x T work-groups, each work-item an R x R register
  tile, so a work-group computes a (T·R)² block (`GpuTiles`: local-memory
  staging with a register prefetch, sized by `gpu_tile_shape` and
  `gpu_k_step`, a work-item's rows and columns in runs read as aligned
  vectors, `gpu_ownership_run`); `gpu_split_k` splits k into ranges for a product with too
  few blocks, one launch for the partial sums and one adding them.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Protocol

from xdsl.dialects import arith, memref, vector
from xdsl.dialects import math as mathd
from xdsl.dialects.builtin import IndexType, VectorType
from xdsl.ir import Attribute, Operation, SSAValue

from accy.dialects.host import buffer_element_type
from accy.dialects.kernel import aligned_access
from accy.dialects.target import TargetProfile
from accy.dialects.types import element_bytes
from accy.passes.analyses.bufferization import BufferPlan
from accy.passes.analyses.outlining import OutlinedKernel
from accy.passes.kernelization.evaluate import Expr, vectorizable
from accy.passes.kernelization.kernel_builder import KernelBuilder
from accy.passes.kernelization.launch import stage_kernel, work_item_per
from accy.passes.kernelization.lowered import LoweredKernel, Scratch

#: Accumulators a CPU register tile may hold, by vector width: AVX-512 (16
#: lanes) has 32 vector registers, AVX2 and SSE 16; the rest hold the rhs
#: vectors of a k step and the broadcast lhs scalar.
ACCUMULATORS = {16: 24}
DEFAULT_ACCUMULATORS = 12
#: k staged per step of a GPU tiled product, for a 16 x 16 work-group (scaled with it).
GPU_K_STEP = 4
#: Largest GPU register tile that prefetches the next k step (`GpuTiles`).
GPU_PREFETCH_TILE = 8
#: Rows (and columns) of a GPU register tile a work-item owns as one run of
#: consecutive ones (`GpuTiles`, `gpu_ownership_run`): it reads each run of
#: a staged tile as one aligned vector (a 16-byte `ld.shared.v4` of f32).
#: 1 is the strided ownership (rows ty + T·i), read element by element.
GPU_OWNERSHIP_RUN = 4
#: Most bytes a GPU register tile's aligned local read takes at once (the
#: widest shared-memory load, and the staged tiles' alignment).
GPU_VECTOR_BYTES = 16
#: Elements each k row of a GPU product's staged lhs tile ([k][m]) is
#: padded by: its stores (a warp's slots: 8 rows m, 4 k) fall in distinct
#: banks, where rows of 128 floats put the 4 k of a row m in one bank.
#: A multiple of every ownership run, so the runs stay aligned.
GPU_LHS_PAD = 8
#: Block rows a group of the GPU grid's order holds (`grouped_blocks`; 1:
#: row by row). H200, f32 4096²: 3.466 -> 3.431 ms with 8 (16: 3.435); the
#: tensor-core tiles lost with it (f16 0.486 -> 0.493 ms) and keep rows.
GPU_BLOCK_GROUP = 8


def grouped_blocks(kb: KernelBuilder, nx: int, ny: int, group: int) -> tuple[SSAValue, SSAValue]:
    """The block (column, row) that work-group (x, y) of an nx x ny grid
    computes, in Triton's grouped order: the work-groups in launch order (x
    fastest) walk `group` block rows, then the next column, so the blocks
    in flight together share their lhs rows and rhs columns in L2 (row by
    row, each wave would stream all of the rhs). With `group` 1 (or one
    block row), block (x, y) itself."""
    gx, gy = kb.group_id("x"), kb.group_id("y")
    if group <= 1 or ny <= 1:
        return gx, gy
    group = min(group, ny)
    per_group = group * nx
    flat = kb.add(kb.mul(gy, nx), gx)
    first = kb.mul(kb.div(flat, per_group), group)  # the group's first row
    within = kb.rem(flat, per_group)
    row, column = kb.add(first, kb.rem(within, group)), kb.div(within, group)
    last = ny % group  # the rows of a last, partial group
    if last:
        partial = kb.lt(ny - last - 1, first)
        row = kb.select(partial, kb.add(first, kb.rem(within, last)), row)
        column = kb.select(partial, kb.div(within, last), column)
    return column, row


#: Reads one element (or W lanes along n) of an operand: (evaluator, batch
#: coordinates, flat m or n, k coordinates) -> value.
Read = Callable[[Expr, list[SSAValue], SSAValue, list[SSAValue]], SSAValue]
#: Stores what a GPU tile computed for one output element: (builder, batch
#: coordinates, k range s, m, n, sum).
Store = Callable[[KernelBuilder, list[SSAValue], SSAValue, SSAValue, SSAValue, SSAValue], None]


class Product(Protocol):
    """B batches of an (M x K) by (K x N) product, as a lowering sees it: the
    sizes, the element type, and how its operands are read and its outputs
    finished. Flat k is split into coordinates of `k_shape`, a flat batch
    into coordinates of `batch_shape`."""

    kb: KernelBuilder
    kernel: OutlinedKernel
    #: The ops the operands' prologues and the epilogue evaluate (`Expr`).
    others: list[Operation]
    B: int
    M: int
    N: int
    K: int
    batch_shape: list[int]
    k_shape: list[int]
    et: Attribute
    is_float: bool

    def a_at(self, expr: Expr, bc: list[SSAValue], m: SSAValue, kc: list[SSAValue]) -> SSAValue:
        """The lhs at batch `bc`, row m, k coordinates `kc` (expr's width of lanes)."""
        ...

    def b_at(self, expr: Expr, bc: list[SSAValue], n: SSAValue, kc: list[SSAValue]) -> SSAValue:
        """The rhs at batch `bc`, column n, k coordinates `kc` (expr's width of lanes)."""
        ...

    def out_coords(self, bc: list[SSAValue], m: SSAValue, n: SSAValue) -> list[SSAValue]:
        """The outputs' coordinates of element (bc, m, n)."""
        ...

    def finish(self, coords: list[SSAValue], value: SSAValue, width: int = 1) -> None:
        """The epilogue and stores of the output element (or W lanes) at `coords`."""
        ...

    def rhs_vectors(self) -> bool:
        """Whether W consecutive n from a multiple of W are W consecutive
        elements of the rhs (read W lanes at a time)."""
        ...

    def out_vectors(self) -> bool:
        """Whether W consecutive n from a multiple of W are W consecutive
        elements of every output (finished W lanes at a time)."""
        ...


def fma(kb: KernelBuilder, a: SSAValue, b: SSAValue, acc: SSAValue, floating: bool) -> SSAValue:
    """a·b + acc: a `math.fma` on floats, a multiply and an add on integers."""
    if floating:
        return kb.val(mathd.FmaOp(a, b, acc))
    return kb.val(arith.AddiOp(kb.val(arith.MuliOp(a, b)), acc))


def _all_of(kb: KernelBuilder, conditions: list[SSAValue]) -> SSAValue:
    """The conjunction of one or two i1 conditions."""
    return conditions[0] if len(conditions) == 1 else kb.val(arith.AndIOp(*conditions))


# -- CPU: register tiles straight from the operands ------------------------------


@dataclass
class RowTiles:
    """Each work-item computes `rows` rows by W columns of the product with
    `rows` `vector<WxT>` accumulators, reading the rhs W columns at a time
    (the product's `rhs_vectors`, N whole vectors) straight from the
    operands; rows past M (the last tile) read row M-1 and are not stored."""

    p: Product
    rows: int

    def __post_init__(self) -> None:
        w = self.p.kb.profile.vector_width
        self.m_tiles = -(-self.p.M // self.rows)
        self.n_tiles = self.p.N // w
        self.vt = VectorType(self.p.et, [w])

    def kernel(self) -> LoweredKernel:
        """The finished kernel: a work-item per (batch, row tile, W columns)."""
        return work_item_per(self.p.kb, self.p.B * self.m_tiles * self.n_tiles, self.work_item)

    def work_item(self, gid: SSAValue) -> None:
        """Emits one work-item: the k loop over its tile, then the epilogue of
        each row (guarded past M when the rows are not whole tiles)."""
        p, kb, w = self.p, self.p.kb, self.p.kb.profile.vector_width
        bi, mt, nt = kb.delinearize(gid, [p.B, self.m_tiles, self.n_tiles])
        bc = kb.delinearize(bi, p.batch_shape)
        m0, n0 = kb.mul(mt, self.rows), kb.mul(nt, w)
        rows = [kb.min(kb.add(m0, i), p.M - 1) for i in range(self.rows)]
        accs = kb.for_(0, p.K, 1, [kb.const(0, self.vt)] * self.rows, partial(self._k_step, bc, n0, rows))
        for i in range(self.rows):
            m = kb.add(m0, i)
            store = partial(self._store_row, bc, m, n0, accs[i])
            if p.M % self.rows == 0:
                store()
            else:
                kb.if_(kb.lt(m, p.M), store)

    def _k_step(
        self, bc: list[SSAValue], n0: SSAValue, rows: list[SSAValue], k: SSAValue, acc: list[SSAValue]
    ) -> list[SSAValue]:
        """One k: a rhs vector of W columns, times each row's lhs scalar broadcast."""
        p, kb, w = self.p, self.p.kb, self.p.kb.profile.vector_width
        kc = kb.delinearize(k, p.k_shape)
        bvec = p.b_at(Expr(kb, p.others, w), bc, n0, kc)
        scalar = Expr(kb, p.others)
        out = []
        for i in range(self.rows):
            a = kb.val(vector.BroadcastOp(p.a_at(scalar, bc, rows[i], kc), self.vt))
            out.append(fma(kb, a, bvec, acc[i], p.is_float))
        return out

    def _store_row(self, bc: list[SSAValue], m: SSAValue, n0: SSAValue, value: SSAValue) -> list[SSAValue]:
        """The epilogue of row m's W columns."""
        self.p.finish(self.p.out_coords(bc, m, n0), value, self.p.kb.profile.vector_width)
        return []


def row_tiles(p: Product) -> LoweredKernel:
    """The `RowTiles` kernel of `p`, R the profile's `dot_rows` (at most M)."""
    return RowTiles(p, min(p.kb.profile.dot_rows, p.M)).kernel()


# -- CPU: packed panels and register tiles -------------------------------------------


def tile_shape(profile: TargetProfile, et: Attribute, m: int) -> tuple[int, int]:
    """(rows, vectors) of the CPU register tile of element type `et`: the
    profile's `dot_rows` and `dot_vectors`, within the register budget and at
    most `m` rows."""
    budget = ACCUMULATORS.get(profile.vector_width, DEFAULT_ACCUMULATORS)
    if et.bitwidth > 32:  # a vector of doubles takes two registers
        budget //= 2
    vectors = max(1, min(profile.dot_vectors, budget))
    return max(1, min(profile.dot_rows, budget // vectors, m)), vectors


def pack(
    p: Product, plan: BufferPlan, suffix: str, scratch: Scratch, tiles: int, width: int, read: Read, extent: int,
    vec: int,
) -> LoweredKernel:
    """The kernel packing one operand into panels of `width` rows (lhs) or
    columns (rhs), k-major: a work-item per (batch, panel, k) writes
    `width` elements, `vec` at a time (1, or W when W consecutive
    elements of the operand are W consecutive columns); indices past
    `extent` read the last one."""
    body = partial(_pack_work_item, p, tiles, width, read, extent, vec)
    return stage_kernel(p.kernel, plan, p.kb.profile, suffix, scratch, p.B * tiles * p.K, body)


def _pack_work_item(
    p: Product, tiles: int, width: int, read: Read, extent: int, vec: int, pk: KernelBuilder, out: SSAValue,
    gid: SSAValue,
) -> None:
    """Emits one work-item of `pack`: `width` elements of panel t at k."""
    bi, t, k = pk.delinearize(gid, [p.B, tiles, p.K])
    bc = pk.delinearize(bi, p.batch_shape)
    kc = pk.delinearize(k, p.k_shape)
    base = pk.mul(gid, width)
    expr = Expr(pk, p.others, vec)
    for j in range(0, width, vec):
        # A vector past the extent starts at its last whole vector (extent is whole vectors then).
        i = pk.min(pk.add(pk.mul(t, width), j), extent - vec)
        x = read(expr, bc, i, kc)
        at = pk.add(base, j)
        pk.op(vector.StoreOp(x, out, [at]) if vec > 1 else memref.StoreOp.get(x, out, [at]))


@dataclass
class PackedTile:
    """One work-item's R x C·W register tile over the packed panels `pa`
    (R rows a k, `pa[b][mt][k][r]`) and `pb` (C·W columns a k,
    `pb[b][nt][k][c]`), spilled to the private array `tile` for the
    epilogue."""

    p: Product
    rows: int
    vectors: int
    m_tiles: int
    n_tiles: int
    pa: SSAValue
    pb: SSAValue
    tile: SSAValue

    def __post_init__(self) -> None:
        w = self.p.kb.profile.vector_width
        self.cols = self.vectors * w
        self.vt = VectorType(self.p.et, [w])

    def work_item(self, gid: SSAValue) -> None:
        """Emits one work-item: row tiles walked fastest (one rhs panel stays
        in cache while the lhs panels stream), the k loop, the tile stored
        to the private array, then its epilogue."""
        p, kb, w = self.p, self.p.kb, self.p.kb.profile.vector_width
        bi, nt, mt = kb.delinearize(gid, [p.B, self.n_tiles, self.m_tiles])
        a_base = kb.mul(kb.add(kb.mul(bi, self.m_tiles), mt), p.K * self.rows)
        b_base = kb.mul(kb.add(kb.mul(bi, self.n_tiles), nt), p.K * self.cols)
        zeros = [kb.const(0, self.vt)] * (self.rows * self.vectors)
        accs = kb.for_(0, p.K, 1, zeros, partial(self._k_step, a_base, b_base))
        for i, acc in enumerate(accs):
            kb.op(vector.StoreOp(acc, self.tile, [kb.const(i * w, IndexType())]))
        bc = kb.delinearize(bi, p.batch_shape)
        m0, n0 = kb.mul(mt, self.rows), kb.mul(nt, self.cols)
        TileEpilogue(p, self.tile, bc, m0, n0, self.rows, self.cols).emit()

    def _k_step(self, a_base: SSAValue, b_base: SSAValue, k: SSAValue, acc: list[SSAValue]) -> list[SSAValue]:
        """One k: C vector loads of the rhs panel, R broadcast lhs scalars, R·C fmas."""
        p, kb, w = self.p, self.p.kb, self.p.kb.profile.vector_width
        a_at, b_at = kb.add(a_base, kb.mul(k, self.rows)), kb.add(b_base, kb.mul(k, self.cols))
        bvecs = [kb.val(vector.LoadOp(self.pb, [kb.add(b_at, c * w)], self.vt)) for c in range(self.vectors)]
        out = []
        for r in range(self.rows):
            a = kb.val(vector.BroadcastOp(kb.val(memref.LoadOp.get(self.pa, [kb.add(a_at, r)])), self.vt))
            out += [fma(kb, a, bvecs[c], acc[r * self.vectors + c], p.is_float) for c in range(self.vectors)]
        return out


@dataclass
class TileEpilogue:
    """The epilogue of one register tile (in the private array `tile`,
    row-major, `cols` a row) whose first element is (bc, m0, n0): a loop
    over its rows, W lanes at a time when the outputs allow
    (`out_vectors`), else lane by lane; guarded past M and N."""

    p: Product
    tile: SSAValue
    bc: list[SSAValue]
    m0: SSAValue
    n0: SSAValue
    rows: int
    cols: int

    def __post_init__(self) -> None:
        w = self.p.kb.profile.vector_width
        self.vt = VectorType(buffer_element_type(self.p.et), [w])
        self.lanes = w if self.p.out_vectors() else 1

    def emit(self) -> None:
        """Emits the loop over the tile's rows."""
        self.p.kb.for_(0, self.rows, 1, [], self._row)

    def _row(self, r: SSAValue, _: list[SSAValue]) -> list[SSAValue]:
        """Emits row r: a loop over its columns, `lanes` at a time."""
        self.p.kb.for_(0, self.cols, self.lanes, [], partial(self._column, r, self.p.kb.add(self.m0, r)))
        return []

    def _column(self, r: SSAValue, m: SSAValue, c: SSAValue, _: list[SSAValue]) -> list[SSAValue]:
        """Emits the element (or lanes) at column c of row r, guarded past M
        and N where the tiles do not divide them."""
        p, kb = self.p, self.p.kb
        n = kb.add(self.n0, c)
        inside = [kb.lt(m, p.M)] if p.M % self.rows else []
        inside += [kb.lt(n, p.N)] if p.N % self.cols else []
        store = partial(self._store, r, m, c, n)
        if inside:
            kb.if_(_all_of(kb, inside), store)
        else:
            store()
        return []

    def _store(self, r: SSAValue, m: SSAValue, c: SSAValue, n: SSAValue) -> list[SSAValue]:
        """The tile's element (r, c) loaded and finished as output (m, n)."""
        p, kb = self.p, self.p.kb
        at = kb.add(kb.mul(r, self.cols), c)
        load = vector.LoadOp(self.tile, [at], self.vt) if self.lanes > 1 else memref.LoadOp.get(self.tile, [at])
        p.finish(p.out_coords(self.bc, m, n), kb.val(load), self.lanes)
        return []


def packed_tiles(p: Product, plan: BufferPlan) -> LoweredKernel:
    """The packed CPU kernel of `p` (module docstring): the lhs and rhs
    packing launches, then the `PackedTile` launch after them."""
    kb, w = p.kb, p.kb.profile.vector_width
    rows, vectors = tile_shape(kb.profile, p.et, p.M)
    cols = vectors * w
    m_tiles, n_tiles = -(-p.M // rows), -(-p.N // cols)
    a_packed = Scratch(p.et, p.B * m_tiles * p.K * rows)
    b_packed = Scratch(p.et, p.B * n_tiles * p.K * cols)
    pack_a = pack(p, plan, "pack_a", a_packed, m_tiles, rows, p.a_at, p.M, 1)
    vec = w if p.rhs_vectors() else 1
    pack_b = pack(p, plan, "pack_b", b_packed, n_tiles, cols, p.b_at, p.N, vec)
    pa, pb = kb.scratch_argument(a_packed), kb.scratch_argument(b_packed)
    tile = kb.local_array(rows * cols, buffer_element_type(p.et), workgroup=False)
    work = PackedTile(p, rows, vectors, m_tiles, n_tiles, pa, pb, tile)
    main = work_item_per(kb, p.B * n_tiles * m_tiles, work.work_item)
    pack_b.before = pack_a
    main.before = pack_b
    return main


# -- GPU: local-memory tiles and register tiles ---------------------------------------


def gpu_tile_shape(profile: TargetProfile, et: Attribute) -> tuple[int, int]:
    """(T, R) of the GPU tiles: T x T work-items (the profile's `dot_tile`,
    at most what a work-group holds), each an R x R register tile (its
    `dot_rows`, halved until the staged tiles fit in local memory)."""
    t = min(profile.dot_tile, math.isqrt(profile.max_work_group_size))
    r = max(1, profile.dot_rows)
    while r > 1 and 2 * (t // 2 or 1) * t * r * element_bytes(buffer_element_type(et)) > profile.local_mem_bytes:
        r //= 2
    return t, r


def gpu_ownership_run(r: int, et: Attribute) -> int:
    """Rows a GPU register tile of R x R elements of `et` owns a run
    (`GPU_OWNERSHIP_RUN`): 1 unless R is whole runs and a run's bytes are
    at most GPU_VECTOR_BYTES."""
    w = GPU_OWNERSHIP_RUN
    if w > 1 and r % w == 0 and w * element_bytes(buffer_element_type(et)) <= GPU_VECTOR_BYTES:
        return w
    return 1


def gpu_k_step(t: int) -> int:
    """k staged per step of T x T work-items (`GPU_K_STEP` scaled from 16 x 16)."""
    return max(1, t * GPU_K_STEP // 16)


class GpuTiles:
    """The tiled kernel on builder `kb`: T x T work-items of R x R tiles
    over k range s (`chunk` k from s·chunk; the grid's z is batch x
    range), `store(kb, batch coords, s, m, n, sum)` for every output
    element in range. Work-item (tx, ty) owns R/W runs of W consecutive
    rows, ty·W + T·W·q + (0..W-1), and the same of columns from tx·W (W =
    `gpu_ownership_run`), so a warp's reads of the staged tiles are
    broadcasts (rows) or consecutive (columns), a run one aligned W-wide
    vector; its stores are coalesced with W = 1 (rows ty + T·i), W apart
    (scalar, guarded) with runs. Each k step
    stages BK = `gpu_k_step(T)` columns of the lhs block (k-major) and BK
    rows of the rhs block in local memory, zero past M, N and K, fetched
    during the step before (tiles up to GPU_PREFETCH_TILE).

    Building it emits the kernel's preamble (local arrays, ids, the block's
    origin); `kernel` emits the rest."""

    def __init__(self, p: Product, kb: KernelBuilder, t: int, r: int, splits: int, chunk: int, store: Store) -> None:
        self.p, self.kb, self.t, self.r, self.splits, self.chunk, self.store = p, kb, t, r, splits, chunk, store
        self.bm = bm = t * r  # block edge (rows and columns)
        self.bk = bk = gpu_k_step(t)  # k per staged step
        self.staged = bk * bm  # elements of each staged tile
        st = buffer_element_type(p.et)
        self.run = w = gpu_ownership_run(r, p.et)
        # A run is read as one vector: the tiles' start and every run (a
        # multiple of W from a row of BM = T·R, itself whole runs) aligned to it.
        align = w * element_bytes(st) if w > 1 else None
        self.a_stride = bm + GPU_LHS_PAD  # of the lhs tile's k rows
        self.a_tile = kb.local_array(bk * self.a_stride, st, workgroup=True, alignment=align)  # [k][m]
        self.b_tile = kb.local_array(bk * bm, st, workgroup=True, alignment=align)  # [k][n]
        self.tx, self.ty = kb.local_id("x"), kb.local_id("y")
        # The first of a work-item's runs of columns (rows) within the block.
        self.tx_run, self.ty_run = (kb.mul(self.tx, w), kb.mul(self.ty, w)) if w > 1 else (self.tx, self.ty)
        bx, by = grouped_blocks(kb, -(-p.N // bm), -(-p.M // bm), GPU_BLOCK_GROUP)
        self.n0, self.m0 = kb.mul(bx, bm), kb.mul(by, bm)
        z = kb.group_id("z")
        self.s = kb.rem(z, splits)
        self.bc = kb.delinearize(kb.div(z, splits), p.batch_shape)
        self.k_first = kb.mul(self.s, chunk)
        self.flat = kb.add(kb.mul(self.ty, t), self.tx)
        self.zero = kb.const(0, p.et)
        self.per_thread = -(-self.staged // (t * t))
        # The next k step's elements are fetched from global memory while
        # this one's are multiplied (register prefetch). On the H200, with 4
        # k a step: 8x8 tiles at 4096² 31.6 TFLOP/s (8 k a step: 24.8 with
        # the prefetch, 29.7 without), 4x4 tiles at 1024² 17.5 (15.3
        # without).
        self.prefetch = r <= GPU_PREFETCH_TILE

    def kernel(self) -> LoweredKernel:
        """Emits the k loop and the guarded stores of the sums; the finished kernel."""
        kb, p, r = self.kb, self.p, self.r
        first = self.fetch(self.k_first) if self.prefetch else []
        accs = kb.for_(0, self.chunk, self.bk, [self.zero] * (r * r) + first, self._k_step)[: r * r]
        for i in range(r):
            m = kb.add(self.m0, self._owned(self.ty_run, i))
            for j in range(r):
                n = kb.add(self.n0, self._owned(self.tx_run, j))
                store = partial(self._store_sum, m, n, accs[i * r + j])
                kb.if_(kb.val(arith.AndIOp(kb.lt(m, p.M), kb.lt(n, p.N))), store)
        grid = (-(-p.N // self.bm), -(-p.M // self.bm), max(p.B, 1) * self.splits)
        return kb.lowered(grid, (self.t, self.t, 1), states_block=True)

    def _k_step(self, k: SSAValue, carried: list[SSAValue]) -> list[SSAValue]:
        """One staged step: the fetched elements put in local memory, a
        barrier, the next step's fetched (prefetch), BK multiply steps, a
        barrier."""
        kb, r = self.kb, self.r
        k0 = kb.add(self.k_first, k)
        acc, held = carried[: r * r], carried[r * r :]
        self.put(held if self.prefetch else self.fetch(k0))
        kb.barrier()
        following = self.fetch(kb.add(k0, self.bk)) if self.prefetch else []
        out = kb.for_(0, self.bk, 1, acc, self._multiply)
        kb.barrier()
        return out + following

    def _slot(self, e: int) -> tuple[SSAValue, bool]:
        """This work-item's e-th slot of the staged tiles, and whether it may
        lie past them (then it is guarded)."""
        return self.kb.add(self.flat, e * self.t * self.t), (e + 1) * self.t * self.t > self.staged

    def fetch(self, k0: SSAValue) -> list[SSAValue]:
        """This work-item's elements of the lhs and rhs blocks at k0, as
        (lhs, rhs) pairs; zero past M, N and K."""
        kb, et = self.kb, self.p.et
        out: list[SSAValue] = []
        for e in range(self.per_thread):
            slot, guard = self._slot(e)
            if guard:
                fetched = partial(self._fetch_pair, k0, slot)
                out += kb.if_(kb.lt(slot, self.staged), fetched, lambda: [self.zero, self.zero], [et, et])
            else:
                out += self._fetch_pair(k0, slot)
        return out

    def _fetch_pair(self, k0: SSAValue, slot: SSAValue) -> list[SSAValue]:
        """The lhs and rhs elements of `slot` at k0: consecutive work-items
        read consecutive k of an lhs row and consecutive n of an rhs row."""
        kb, p = self.kb, self.p
        mm, kk = kb.div(slot, self.bk), kb.rem(slot, self.bk)
        m, k = kb.add(self.m0, mm), kb.add(k0, kk)
        a = self._read_or_zero(m, p.M, k, partial(self._lhs, m, k))
        kk2, nn = kb.div(slot, self.bm), kb.rem(slot, self.bm)
        n, k2 = kb.add(self.n0, nn), kb.add(k0, kk2)
        b = self._read_or_zero(n, p.N, k2, partial(self._rhs, n, k2))
        return [a, b]

    def _read_or_zero(self, i: SSAValue, extent: int, k: SSAValue, read: Callable[[], list[SSAValue]]) -> SSAValue:
        """`read()` where i < extent and k < K, else zero."""
        kb = self.kb
        ok = kb.val(arith.AndIOp(kb.lt(i, extent), kb.lt(k, self.p.K)))
        return kb.if_(ok, read, lambda: [self.zero], [self.p.et])[0]

    def _lhs(self, m: SSAValue, k: SSAValue) -> list[SSAValue]:
        """The lhs at (row m, flat k)."""
        p, kb = self.p, self.kb
        return [p.a_at(Expr(kb, p.others), self.bc, m, kb.delinearize(k, p.k_shape))]

    def _rhs(self, n: SSAValue, k: SSAValue) -> list[SSAValue]:
        """The rhs at (column n, flat k)."""
        p, kb = self.p, self.kb
        return [p.b_at(Expr(kb, p.others), self.bc, n, kb.delinearize(k, p.k_shape))]

    def put(self, values: list[SSAValue]) -> None:
        """Stores what `fetch` gave into the local tiles (the lhs k-major)."""
        for e in range(self.per_thread):
            slot, guard = self._slot(e)
            store = partial(self._put_pair, slot, values[2 * e], values[2 * e + 1])
            if guard:
                self.kb.if_(self.kb.lt(slot, self.staged), store)
            else:
                store()

    def _put_pair(self, slot: SSAValue, a: SSAValue, b: SSAValue) -> list[SSAValue]:
        """The lhs element `a` of `slot` into its k-major place, the rhs `b` at `slot`."""
        kb = self.kb
        mm, kk = kb.div(slot, self.bk), kb.rem(slot, self.bk)
        kb.op(memref.StoreOp.get(a, self.a_tile, [kb.add(kb.mul(kk, self.a_stride), mm)]))
        kb.op(memref.StoreOp.get(b, self.b_tile, [slot]))
        return []

    def _owned(self, first: SSAValue, i: int) -> SSAValue:
        """The block's row (column) of a work-item's i-th one, its first run
        at `first` (ty·W or tx·W): run i // W, element i % W."""
        w = self.run
        return self.kb.add(first, self.t * w * (i // w) + i % w)

    def _owned_values(self, tile: SSAValue, row: SSAValue, first: SSAValue) -> list[SSAValue]:
        """A work-item's R values of one staged k (from `row`) of `tile`:
        element by element (W = 1), else R/W aligned W-wide vector loads."""
        kb, w = self.kb, self.run
        if w == 1:
            return [kb.val(memref.LoadOp.get(tile, [kb.add(row, self._owned(first, i))])) for i in range(self.r)]
        st = buffer_element_type(self.p.et)
        out = []
        for q in range(0, self.r, w):
            load = vector.LoadOp(tile, [kb.add(row, self._owned(first, q))], VectorType(st, [w]))
            x = kb.val(aligned_access(load, w * element_bytes(st)))
            out += [kb.val(vector.ExtractOp(x, [lane], st)) for lane in range(w)]
        return out

    def _multiply(self, kk: SSAValue, c: list[SSAValue]) -> list[SSAValue]:
        """One staged k: R lhs and R rhs values read (`_owned_values`), R² fmas."""
        kb, r = self.kb, self.r
        a = self._owned_values(self.a_tile, kb.mul(kk, self.a_stride), self.ty_run)
        b = self._owned_values(self.b_tile, kb.mul(kk, self.bm), self.tx_run)
        return [fma(kb, a[i], b[j], c[i * r + j], self.p.is_float) for i in range(r) for j in range(r)]

    def _store_sum(self, m: SSAValue, n: SSAValue, value: SSAValue) -> list[SSAValue]:
        """`store` of output (m, n)'s sum."""
        self.store(self.kb, self.bc, self.s, m, n, value)
        return []


def gpu_tiles(p: Product, t: int, r: int) -> LoweredKernel:
    """The `GpuTiles` kernel of `p` over all of k, finishing every output element."""
    return GpuTiles(p, p.kb, t, r, 1, p.K, partial(_finish_sum, p)).kernel()


def _finish_sum(
    p: Product, kb: KernelBuilder, bc: list[SSAValue], s: SSAValue, m: SSAValue, n: SSAValue, value: SSAValue
) -> None:
    """The epilogue of output (bc, m, n): a `Store` for a kernel over all of k."""
    p.finish(p.out_coords(bc, m, n), value)


def gpu_split_k(p: Product, plan: BufferPlan, t: int, r: int, splits: int, chunk: int) -> LoweredKernel:
    """k split into `splits` ranges of `chunk` k: a first launch of
    `GpuTiles` stores each range's partial sums in a scratch buffer, and a
    second adds the sums of each output element, in order, and runs the
    epilogue."""
    kb, kernel = p.kb, p.kernel
    partial_sums = Scratch(p.et, splits * p.B * p.M * p.N)
    sk = KernelBuilder(f"{kernel.name}_split_k", kernel.kind, kb.profile, plan, list(kernel.inputs), ops=kernel.ops)
    sums = sk.scratch_argument(partial_sums)
    first = GpuTiles(p, sk, t, r, splits, chunk, partial(_store_partial, p, splits, sums)).kernel()
    read = kb.scratch_argument(partial_sums)
    main = work_item_per(kb, p.B * p.M * p.N, partial(_add_partials, p, splits, read))
    main.before = first
    return main


def _store_partial(
    p: Product, splits: int, sums: SSAValue, b: KernelBuilder, bc: list[SSAValue], s: SSAValue, m: SSAValue,
    n: SSAValue, value: SSAValue,
) -> None:
    """Stores range s's sum of output (bc, m, n) at `sums[s][b][m][n]`."""
    at = b.linearize([s, b.linearize(bc, p.batch_shape), m, n], [splits, p.B, p.M, p.N])
    b.op(memref.StoreOp.get(value, sums, [at]))


def _add_partials(p: Product, splits: int, read: SSAValue, gid: SSAValue) -> None:
    """Emits one work-item of the second launch: output gid's partial sums
    added in range order, then its epilogue."""
    kb = p.kb
    outputs = p.B * p.M * p.N
    bi, m, n = kb.delinearize(gid, [p.B, p.M, p.N])
    total = kb.val(memref.LoadOp.get(read, [gid]))
    for s in range(1, splits):
        total = kb.val(arith.AddfOp(total, kb.val(memref.LoadOp.get(read, [kb.add(gid, s * outputs)]))))
    p.finish(p.out_coords(kb.delinearize(bi, p.batch_shape), m, n), total)



# -- which kernel: shared by every lowering that describes a Product ------------------

#: Work-groups a GPU product aims for at least, halving its register tiles
#: (to GPU_MIN_TILE) until it has them: a few per multiprocessor of a large GPU.
GPU_MIN_BLOCKS = 256
#: Multiply-adds per batch below which a CPU product is not packed: two more
#: launches (~10-20 us each) cost more than packing saves on a small product.
PACK_MIN_WORK = 64 * 64 * 64
#: Smallest register tile edge a GPU product halves its tiles to before it splits k.
GPU_MIN_TILE = 4
#: Fewest k a range of a GPU product split along k holds (`_k_split`).
GPU_SPLIT_MIN_K = 32
#: Work-groups a GPU product split along k aims for (`_k_split`).
GPU_SPLIT_BLOCKS = 512


def can_pack(p: Product) -> bool:
    """Whether `packed_tiles` applies: float, vectors, more than one
    register tile of rows, at least PACK_MIN_WORK multiply-adds and an
    epilogue of W lanes."""
    rows, _ = tile_shape(p.kb.profile, p.et, p.M)
    return (
        p.is_float
        and p.kb.profile.vector_width > 1
        and p.M > rows
        and p.M * p.N * p.K >= PACK_MIN_WORK
        and vectorizable(p.others, p.kb)
    )


def local_tiles(p: Product, plan: BufferPlan) -> LoweredKernel:
    """T x T work-items, each a R x R register tile (`gpu_tile_shape`): a
    work-group computes a (T·R) x (T·R) block (`gpu_tiles`). Smaller
    tiles for a product too small to fill the device with blocks (1024²
    at 8x8 tiles is 64 blocks for an H200's 132 multiprocessors), down to
    GPU_MIN_TILE. A product with too few blocks even then (a batch of 64
    rows, say) splits k into S ranges (`_k_split`, `gpu_split_k`)."""
    t, r = gpu_tile_shape(p.kb.profile, p.et)
    while r > GPU_MIN_TILE and _blocks(p, t * r) < GPU_MIN_BLOCKS:
        r //= 2
    splits, chunk = _k_split(p, _blocks(p, t * r), gpu_k_step(t))
    if splits == 1:
        return gpu_tiles(p, t, r)
    return gpu_split_k(p, plan, t, r, splits, chunk)


def _blocks(p: Product, edge: int) -> int:
    """Work-groups of (edge x edge)-output blocks over the product."""
    return max(p.B, 1) * -(-p.M // edge) * -(-p.N // edge)


def _k_split(p: Product, blocks: int, bk: int) -> tuple[int, int]:
    """How many k ranges (S) and how long each (a multiple of `bk`, at
    least GPU_SPLIT_MIN_K): 1 when there are GPU_MIN_BLOCKS blocks, else
    enough for GPU_SPLIT_BLOCKS work-groups."""
    if blocks >= GPU_MIN_BLOCKS or not p.is_float:
        return 1, p.K
    splits = min(-(-GPU_SPLIT_BLOCKS // blocks), p.K // GPU_SPLIT_MIN_K)
    if splits <= 1:
        return 1, p.K
    chunk = -(-p.K // splits)
    chunk = -(-chunk // bk) * bk
    return -(-p.K // chunk), chunk


def per_element(p: Product) -> LoweredKernel:
    """One work-item per output element, a scalar loop over k."""
    return work_item_per(p.kb, p.B * p.M * p.N, partial(_element, p))


def _element(p: Product, gid: SSAValue) -> None:
    """Emits output element gid: the loop over k, then the epilogue."""
    kb = p.kb
    bi, m, n = kb.delinearize(gid, [p.B, p.M, p.N])
    bc = kb.delinearize(bi, p.batch_shape)
    total = kb.for_(0, p.K, 1, [kb.const(0, p.et)], partial(_element_step, p, bc, m, n))[0]
    p.finish(p.out_coords(bc, m, n), total)


def _element_step(
    p: Product, bc: list[SSAValue], m: SSAValue, n: SSAValue, k: SSAValue, acc: list[SSAValue]
) -> list[SSAValue]:
    """One k of output element (bc, m, n): a multiply-add."""
    kb = p.kb
    kc = kb.delinearize(k, p.k_shape)
    expr = Expr(kb, p.others)
    return [fma(kb, p.a_at(expr, bc, m, kc), p.b_at(expr, bc, n, kc), acc[0], p.is_float)]
