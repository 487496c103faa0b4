"""Tensor-core tiles of a GPU product: B batches of (M x K) by (K x N) on
warp-level `accy_kernel.mma` (NVIDIA's `mma.sync`), for a target whose
`mma` is "sm80" (or "emulate": the same kernel, each matrix instruction
done by the warp's work-items through local memory, so any GPU-profile
device tests the lowering).

- f16 and bf16 operands (read as they are stored, before the f32 cast that
  compute-half-in-f32 gives a dot's operands) through m16n8k16, f32
  operands through TF32 m16n8k8 (the caller allows it only under `math =
  fast`: the tensor core reads 10 of f32's 23 mantissa bits); f32
  accumulators in every case.
- A work-group of warps (work-items (lane, warp): 32 x warps) computes a
  block of one batch, warp (wm, wn) its part of it, `mt` x `nt` mma tiles
  of 16 x 8, as the first of `CONFIGS` that fits the device's local
  memory says: 2 x 4 warps of 64 x 64 (128 x 256 blocks) in 4 stages for
  f16 and bf16, 2 x 2 of 64 x 64 in 3 stages of 128-byte k steps for TF32
  where the device builds that much local memory (NVIDIA's:
  `static_local_bytes`), else 2 x 4 of 64 x 32 and 2 x 2 of 64 x 64 (128 x
  128 blocks) in 2 stages of 64-byte steps.
- Each k step stages `step_bytes` of k (64: 32 k of f16, 16 of f32) of the lhs block and of the rhs block in local
  memory, the lhs k-contiguous ([m][k]), the rhs n-contiguous ([k][n]),
  rows padded by `PAD_BYTES` so that a warp's fragment loads fall in
  distinct banks (an [n][k] rhs written lane by lane put 16 work-items'
  stores in one bank), zero past M, N and K. Where both operands are
  buffers read a 16-byte vector a slot (`MmaOperands.copy_a`), async copies
  (`accy_kernel.async_copy`, cp.async) fill `stages` buffers of each:
  a step waits for its own copies, one barrier, issues the copies of the
  step `stages` - 1 ahead into the buffer the step before used, then
  multiplies; no register holds a staged element (the H200's f16 4096²
  product: 163 registers and 0.88 ms with register staging, 124 and 0.50
  ms so: two work-groups a multiprocessor). Otherwise two buffers of
  each: a step multiplies one, then writes the next step's elements
  (fetched from global memory into registers a step before, as `GpuTiles`
  does) into the other, then one barrier. Consecutive work-items
  read consecutive k of the lhs and consecutive n of the rhs, 16 bytes at
  a time (`VECTOR_BYTES`) where that operand is contiguous along them and
  K (or N's last dim) is whole vectors, else element by element (row-major
  operands coalesce; others are read through their strides, correct and
  slower).
- 16-bit operands' fragments come by `accy_kernel.ldmatrix` (an mma
  tile's A registers; transposed, two n tiles' B registers: one
  instruction each); emulated, and for TF32, from local loads (an A
  register a `vector<2xT>` pair along k or an f32, a B register one or two
  elements; `accy_kernel.FRAGMENTS` places them).
- The staged tiles are 16-byte aligned and their vector accesses say so
  (`aligned_access`): `vloadN` may assume only the element's alignment,
  and NVIDIA's compiler splits it into N narrow accesses (the H200's f16
  4096² product took 3.0 ms so, 1.9 ms with wide ones).
- The sums go to the epilogue (`Product.finish`) element by element, each
  guarded past M and N.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

from xdsl.dialects import arith, memref, vector
from xdsl.dialects.builtin import Float32Type, VectorType
from xdsl.ir import Attribute, SSAValue

from accy.dialects.kernel import (
    ACCUMULATOR_FRAGMENT,
    FRAGMENTS,
    MMA_K,
    AsyncCommitOp,
    AsyncCopyOp,
    AsyncWaitOp,
    LdMatrixOp,
    MmaOp,
    aligned_access,
)
from accy.dialects.target import TargetProfile
from accy.dialects.types import element_bytes
from accy.passes.kernelization.evaluate import Expr
from accy.passes.kernelization.lowered import LoweredKernel
from accy.passes.kernelization.mma_emulation import Exchange, exchange_elements
from accy.passes.kernelization.register_tiles import Product

WARP = 32


@dataclass(frozen=True)
class WarpLayout:
    """A work-group of `warps_m` x `warps_n` warps, warp (wm, wn) owning a
    `wm` x `wn` part of the block (`mt` x `nt` mma tiles of 16 x 8)."""

    warps_m: int
    warps_n: int
    wm: int
    wn: int

    @property
    def warps(self) -> int:
        return self.warps_m * self.warps_n

    @property
    def threads(self) -> int:
        return WARP * self.warps

    @property
    def bm(self) -> int:
        return self.warps_m * self.wm

    @property
    def bn(self) -> int:
        return self.warps_n * self.wn

    @property
    def mt(self) -> int:
        return self.wm // 16

    @property
    def nt(self) -> int:
        return self.wn // 8


@dataclass(frozen=True)
class TileConfig:
    """A kernel's warps (`layout`), the bytes of k it stages a row each step
    (`step_bytes`: 64 is 32 k of f16 or bf16, 16 of f32), and the buffers of
    each staged tile where async copies fill them (`stages`: stages - 1
    steps in flight while one is multiplied; register staging has two)."""

    layout: WarpLayout
    step_bytes: int = 64
    stages: int = 2


#: The configurations by operand bytes, best first: a kernel takes the first
#: whose staging fits the device's local memory (`TargetProfile.local_capacity`)
#: and work-group; the deeper ones only where async copies stage (with
#: register staging, 64 x 64 warps of 16-bit operands spilled: 1.15 ms).
#: H200, 4096², same process: f16 on 2 x 4 warps of 64 x 64 (128 x 256
#: blocks) in 4 stages of 64-byte k steps, 106 KiB (past the 48 KiB NVIDIA's
#: driver reports: `static_local_bytes`), 0.448 ms against 0.494 on 2 x 4
#: of 64 x 32 in 2 stages (37 KiB; two work-groups a multiprocessor); TF32
#: on 2 x 2 of 64 x 64 in 3 stages of 128-byte steps, 104 KiB, 0.818
#: against 0.935 in 2 of 64 bytes (64 x 64 warps: their fragments come by
#: plain local loads, half as many a product as 64 x 32 warps take).
#: docs/kernel-notes.md has the other configurations measured.
CONFIGS = {
    2: (TileConfig(WarpLayout(2, 4, 64, 64), 64, 4), TileConfig(WarpLayout(2, 4, 64, 32), 64, 2)),
    4: (TileConfig(WarpLayout(2, 2, 64, 64), 128, 3), TileConfig(WarpLayout(2, 2, 64, 64), 64, 2)),
}


#: Elements of padding per staged row: 16 bytes, so the rows of a fragment
#: load (a row per group g, 8 of them) start in different banks.
PAD_BYTES = 16

#: Bytes of an operand a staging read takes where it is contiguous.
VECTOR_BYTES = 16

#: Reads one operand element: (evaluator, batch coordinates, flat m or n, k coordinates) -> value.
Read = Callable[[Expr, list[SSAValue], SSAValue, list[SSAValue]], SSAValue]
#: Where an operand element lies: (batch coordinates, flat m or n, k coordinates) -> (buffer, flat index).
Place = Callable[[list[SSAValue], SSAValue, list[SSAValue]], tuple[SSAValue, SSAValue]]


@dataclass(frozen=True)
class MmaOperands:
    """What the tensor-core kernel of a product reads: its mma `shape`, the
    staged element type (f16, bf16 or f32) and the readers of the lhs at (m,
    k) and the rhs at (n, k), giving values of that type; `a_lanes`
    consecutive k of the lhs a read and `b_lanes` consecutive n of the rhs
    (vectors, `lanes` > 1, only where the caller knows a vector never
    crosses the end of K or N: K, or N's last dim, a multiple of it).
    `copy_a` and `copy_b`, where both operands are buffers whose slots are
    aligned 16-byte vectors, place their elements for async copies;
    `b_k_major`: `copy_b` places `b_lanes` consecutive k of the rhs, not n
    (the warpgroup tiles' TF32 rhs: `wgmma_tiles`)."""

    shape: str
    element: Attribute
    read_a: Read
    read_b: Read
    a_lanes: int = 1
    b_lanes: int = 1
    copy_a: Place | None = None
    copy_b: Place | None = None
    b_k_major: bool = False

    @property
    def k(self) -> int:
        return MMA_K[self.shape]

    @property
    def pairs(self) -> bool:
        """Whether a fragment register is a pair of 16-bit elements along k."""
        return self.shape == "m16n8k16"


def local_bytes(config: TileConfig, element: Attribute, emulated: bool, copies: bool) -> int:
    """Local memory the kernel stages (and, emulated, exchanges) in; `copies`:
    staged by async copies (`config.stages` buffers, else two)."""
    width, lay, step = element_bytes(element), config.layout, config.step_bytes
    stages = config.stages if copies else 2
    staged = stages * (lay.bm * (step + PAD_BYTES) + step // width * (lay.bn * width + PAD_BYTES))
    k = 16 if width == 2 else 8
    exchange = lay.warps * (lay.mt * 16 + lay.nt * 8) * k * width if emulated else 0
    return staged + exchange


def config_for(profile: TargetProfile, element: Attribute, copies: bool) -> TileConfig | None:
    """The configuration of the kernel on `profile` (`CONFIGS`), or None where none fits."""
    emulated = profile.mma.startswith("emulate")
    candidates = CONFIGS[element_bytes(element)]
    for config in candidates if copies else candidates[-1:]:
        fits_group = profile.max_work_group_size >= config.layout.threads
        if fits_group and local_bytes(config, element, emulated, copies) <= profile.local_capacity:
            return config
    return None


class MmaTiles:
    """The kernel on `p`'s builder (module docstring). Building it emits the
    preamble (local arrays, ids, the block's origin); `kernel` the rest."""

    def __init__(self, p: Product, ops: MmaOperands) -> None:
        self.p, self.ops, kb = p, ops, p.kb
        # Async copies where both operands are buffers of aligned 16-byte slots.
        self.copies = ops.copy_a is not None and ops.copy_b is not None
        config = config_for(kb.profile, ops.element, self.copies)
        assert config is not None, "the caller checked that the kernel fits (config_for)"
        self.lay = lay = config.layout
        self.kb = kb
        width = element_bytes(ops.element)
        self.bk = config.step_bytes // width  # k staged per step
        self.stride = self.bk + PAD_BYTES // width  # of the lhs's rows
        self.b_stride = lay.bn + PAD_BYTES // width  # of the rhs's
        # Buffers of each: a step multiplies one while later steps' elements
        # go into the others (`a_off`, `b_off`: the one in use).
        self.stages = config.stages if self.copies else 2
        self.a_size, self.b_size = lay.bm * self.stride, self.bk * self.b_stride
        self.a_tile = kb.local_array(self.stages * self.a_size, ops.element, workgroup=True, alignment=VECTOR_BYTES)
        self.b_tile = kb.local_array(self.stages * self.b_size, ops.element, workgroup=True, alignment=VECTOR_BYTES)
        self.a_off, self.b_off = kb.idx(0), kb.idx(0)
        self.emulated = kb.profile.mma.startswith("emulate")
        if self.emulated:
            x_a, x_b = exchange_elements(ops.shape, lay.warps, lay.mt, lay.nt)
            exchange = (kb.local_array(x_a, ops.element, workgroup=True), kb.local_array(x_b, ops.element, workgroup=True))
        self.lane, self.warp = kb.local_id("x"), kb.local_id("y")
        self.g, self.t = kb.div(self.lane, 4), kb.rem(self.lane, 4)
        if self.emulated:
            self.exchange = Exchange(kb, ops.shape, ops.element, *exchange, self.warp, self.g, self.t)
        self.wm = kb.mul(kb.div(self.warp, lay.warps_n), lay.wm)
        self.wn = kb.mul(kb.rem(self.warp, lay.warps_n), lay.wn)
        self.n0, self.m0 = kb.mul(kb.group_id("x"), lay.bn), kb.mul(kb.group_id("y"), lay.bm)
        self.bc = kb.delinearize(kb.group_id("z"), p.batch_shape)
        self.flat = kb.add(kb.mul(self.warp, WARP), self.lane)
        self.zero = kb.const(0, ops.element)
        self.acc_zero = kb.const(0.0, Float32Type())

    def kernel(self) -> LoweredKernel:
        """The k loop, then the guarded epilogue of every sum; the finished kernel."""
        kb, p, lay = self.kb, self.p, self.lay
        n_acc = lay.mt * lay.nt * 4
        if self.copies:
            for s in range(self.stages - 1):  # steps 0 .. stages - 2 in flight
                self.issue(kb.idx(s * self.bk), kb.idx(s))
            accs = kb.for_(0, p.K, self.bk, [self.acc_zero] * n_acc, self._copied_step)
            kb.op(AsyncWaitOp(0))  # nothing in flight past the kernel's end
        else:
            self.put(self.fetch(kb.idx(0)))  # step 0 into buffer 0
            kb.barrier()
            ahead = self.fetch(kb.idx(self.bk))
            accs = kb.for_(0, p.K, self.bk, [self.acc_zero] * n_acc + ahead, self._k_step)[:n_acc]
        return self.epilogue(accs)

    def epilogue(self, accs: list[SSAValue]) -> LoweredKernel:
        """Every warp's sums (mt x nt accumulator fragments), each through the
        fused epilogue where it lies within M and N; the finished kernel."""
        kb, p, lay = self.kb, self.p, self.lay
        for mt in range(lay.mt):
            for nt in range(lay.nt):
                for i, (go, ts, to) in enumerate(ACCUMULATOR_FRAGMENT):
                    m = kb.add(self.m0, kb.add(self.wm, kb.add(self.g, mt * 16 + go)))
                    n = kb.add(self.n0, kb.add(self.wn, kb.add(kb.mul(self.t, ts), nt * 8 + to)))
                    value = accs[(mt * lay.nt + nt) * 4 + i]
                    store = partial(self._finish, m, n, value)
                    kb.if_(kb.val(arith.AndIOp(kb.lt(m, p.M), kb.lt(n, p.N))), store)
        grid = (-(-p.N // lay.bn), -(-p.M // lay.bm), max(p.B, 1))
        return kb.lowered(grid, (WARP, lay.warps, 1), states_block=True)

    def _finish(self, m: SSAValue, n: SSAValue, value: SSAValue) -> list[SSAValue]:
        self.p.finish(self.p.out_coords(self.bc, m, n), value)
        return []

    # -- staging -----------------------------------------------------------------

    def _k_step(self, k: SSAValue, carried: list[SSAValue]) -> list[SSAValue]:
        """One staged step at k, whose elements are in buffer (k / bk) % 2:
        bk / k rounds of mma on it, the next step's elements (`held`,
        fetched a step before) into the other buffer, the step after next
        fetched, one barrier. The other buffer was last read by the step
        before, which the previous barrier ended."""
        kb = self.kb
        n_acc = self.lay.mt * self.lay.nt * 4
        acc, held = carried[:n_acc], carried[n_acc:]
        cur = kb.rem(kb.div(k, self.bk), 2)
        other = kb.sub(kb.idx(1), cur)
        self.a_off, self.b_off = kb.mul(cur, self.a_size), kb.mul(cur, self.b_size)
        for ks in range(0, self.bk, self.ops.k):
            acc = self._round(ks, acc)
        self.a_off, self.b_off = kb.mul(other, self.a_size), kb.mul(other, self.b_size)
        self.put(held)
        following = self.fetch(kb.add(k, 2 * self.bk))
        kb.barrier()
        return acc + following

    def _copied_step(self, k: SSAValue, acc: list[SSAValue]) -> list[SSAValue]:
        """One step at k staged by async copies, in buffer (k / bk) % stages:
        wait for its copies and barrier (every work-item's are in, and every
        work-item is done with the step before), copy the step stages - 1
        ahead into that step's buffer, then the rounds of mma."""
        kb = self.kb
        kb.op(AsyncWaitOp(self.stages - 2))
        kb.barrier()
        step = kb.div(k, self.bk)
        ahead = kb.rem(kb.add(step, self.stages - 1), self.stages)
        self.issue(kb.add(k, (self.stages - 1) * self.bk), ahead)
        cur = kb.rem(step, self.stages)
        self.a_off, self.b_off = kb.mul(cur, self.a_size), kb.mul(cur, self.b_size)
        for ks in range(0, self.bk, self.ops.k):
            acc = self._round(ks, acc)
        return acc

    def issue(self, k0: SSAValue, buffer: SSAValue) -> None:
        """Async copies of the step at k0 into staging `buffer` (zeros past
        M, N and K), committed as one group."""
        kb, p, ops = self.kb, self.p, self.ops
        offsets = (kb.mul(buffer, self.a_size), kb.mul(buffer, self.b_size))
        for lhs, row, col in self._layout():
            i, extent, k = self._source(lhs, row, col, k0)
            valid = kb.val(arith.AndIOp(kb.lt(i, extent), kb.lt(k, p.K)))
            place = ops.copy_a if lhs else ops.copy_b
            assert place is not None
            src, at = place(self.bc, i, kb.delinearize(k, p.k_shape))
            kb.op(AsyncCopyOp(src, at, *self._local(lhs, row, col, offsets), valid))
        kb.op(AsyncCommitOp())

    def _layout(self) -> list[tuple[bool, SSAValue, SSAValue]]:
        """This work-item's slots of a staged step, `a_lanes` or `b_lanes`
        elements each: (of the lhs, row, column) in its tile, the lhs's
        [m][k] k fastest, then the rhs's [k][n] n fastest."""
        ops = self.ops
        return self._tile_slots(True, self.lay.bm, self.bk, ops.a_lanes) + self._tile_slots(False, self.lay.bn, self.lay.bn, ops.b_lanes)

    def _tile_slots(self, lhs: bool, rows: int, row: int, lanes: int) -> list[tuple[bool, SSAValue, SSAValue]]:
        """This work-item's slots of one operand's staged tile of `rows` (the
        block's bm or bn, `_slots`) in rows of `row` elements, `lanes` a slot:
        (of the lhs, row, column)."""
        kb, per_row = self.kb, row // lanes
        return [(lhs, kb.div(s, per_row), kb.mul(kb.rem(s, per_row), lanes)) for s in self._slots(rows, lanes)]

    def _source(self, lhs: bool, row: SSAValue, col: SSAValue, k0: SSAValue) -> tuple[SSAValue, int, SSAValue]:
        """A slot's operand coordinates in the step at k0: (m, M, k) or (n, N, k)."""
        kb, p = self.kb, self.p
        if lhs:
            return kb.add(self.m0, row), p.M, kb.add(k0, col)
        return kb.add(self.n0, col), p.N, kb.add(k0, row)

    def _local(self, lhs: bool, row: SSAValue, col: SSAValue, offsets: tuple[SSAValue, SSAValue]) -> tuple[SSAValue, SSAValue]:
        """A slot's local tile and index there, in the buffer at `offsets` (of the lhs's, of the rhs's)."""
        kb = self.kb
        tile, off, stride = (self.a_tile, offsets[0], self.stride) if lhs else (self.b_tile, offsets[1], self.b_stride)
        return tile, kb.add(off, kb.add(kb.mul(row, stride), col))

    def _slots(self, rows: int, lanes: int) -> list[SSAValue]:
        """This work-item's slots of a staged tile of `rows` (the block's bm or bn) by bk
        elements, `lanes` elements a slot, the work-group's work-items apart."""
        threads = self.lay.threads
        count, rest = divmod(rows * self.bk // lanes, threads)
        assert count and not rest, "a staged tile is whole rounds of the work-group's slots"
        return [self.kb.add(self.flat, e * threads) for e in range(count)]

    def fetch(self, k0: SSAValue) -> list[SSAValue]:
        """This work-item's elements of the step at k0, slot by slot
        (`_layout`); zero past M, N and K."""
        ops, out = self.ops, []
        for lhs, row, col in self._layout():
            read, lanes = (ops.read_a, ops.a_lanes) if lhs else (ops.read_b, ops.b_lanes)
            out.append(self._read_or_zero(*self._source(lhs, row, col, k0), read, lanes))
        return out

    def _read_or_zero(self, i: SSAValue, extent: int, k: SSAValue, read: Read, lanes: int) -> SSAValue:
        """`read` of `lanes` elements at (i, k) where i < extent and k < K,
        else zero (a slot of several lanes lies all in range or all out:
        `MmaOperands`)."""
        kb, p = self.kb, self.p
        ok = kb.val(arith.AndIOp(kb.lt(i, extent), kb.lt(k, p.K)))
        zero = self.zero
        if lanes > 1:
            zero = kb.val(vector.BroadcastOp(self.zero, VectorType(self.ops.element, [lanes])))

        def value() -> list[SSAValue]:
            # A slot's lanes start at a multiple of them along k (lhs) or n (rhs).
            return [read(Expr(kb, p.others, lanes, aligned=True), self.bc, i, kb.delinearize(k, p.k_shape))]

        return kb.if_(ok, value, lambda: [zero], [zero.type])[0]

    def put(self, values: list[SSAValue]) -> None:
        """Stores what `fetch` gave into the buffer in use: the lhs at
        [m][k], the rhs at [k][n] (a slot's lanes one aligned vector store:
        rows and slots are whole vectors)."""
        kb, ops = self.kb, self.ops
        for (lhs, row, col), value in zip(self._layout(), values, strict=True):
            tile, at = self._local(lhs, row, col, (self.a_off, self.b_off))
            lanes = ops.a_lanes if lhs else ops.b_lanes
            if lanes > 1:
                kb.op(aligned_access(vector.StoreOp(value, tile, [at]), lanes * element_bytes(ops.element)))
            else:
                kb.op(memref.StoreOp.get(value, tile, [at]))

    # -- the matrix instructions -------------------------------------------------

    def _round(self, ks: int, acc: list[SSAValue]) -> list[SSAValue]:
        """One mma k (16 or 8) at staged k `ks`: every warp's mt x nt tiles."""
        kb, shape, lay = self.kb, self.ops.shape, self.lay
        if self.emulated:
            a = [self._fragment(self.a_tile, kb.add(self.wm, mt * 16), ks, FRAGMENTS[shape]["a"]) for mt in range(lay.mt)]
        else:
            a = self._ldmatrix_a(ks)
        if self.ops.pairs and not self.emulated:
            b = self._ldmatrix_b(ks)
        else:
            b = [self._b_fragment(kb.add(self.wn, nt * 8), ks, FRAGMENTS[shape]["b"]) for nt in range(lay.nt)]
        if self.emulated:
            return self.exchange.round(a, b, acc)
        out = list(acc)
        for mt in range(lay.mt):
            for nt in range(lay.nt):
                at = (mt * lay.nt + nt) * 4
                out[at : at + 4] = kb.op(MmaOp(shape, a[mt], b[nt], out[at : at + 4])).results
        return out

    def _ldmatrix_rows(self) -> tuple[SSAValue, SSAValue, SSAValue]:
        """The row work-item 8i + r names in an `ldmatrix` (row r of matrix
        i): (r, i's row offset 0 or 8, i's column offset 0 or 16 bytes in elements)."""
        kb = self.kb
        matrix, r = kb.div(self.lane, 8), kb.rem(self.lane, 8)
        return r, kb.mul(kb.rem(matrix, 2), 8), kb.mul(kb.div(matrix, 2), LdMatrixOp.ROW_BYTES // element_bytes(self.ops.element))

    def _ldmatrix_a(self, ks: int) -> list[list[SSAValue]]:
        """Each mma tile's four A registers by one `accy_kernel.ldmatrix`:
        the 8-row matrices of [m][k] at rows +0/+8 and k +0/+16 bytes (for
        16-bit elements k +0/+8, each register a pair along k; for TF32 k
        +0/+4, each an f32)."""
        kb = self.kb
        r, low, high = self._ldmatrix_rows()
        out = []
        for mt in range(self.lay.mt):
            row = kb.add(kb.add(self.wm, mt * 16), kb.add(low, r))
            at = kb.add(self.a_off, kb.add(kb.mul(row, self.stride), kb.add(high, ks)))
            out.append(list(kb.op(LdMatrixOp(self.a_tile, at)).results))
        return out

    def _ldmatrix_b(self, ks: int) -> list[list[SSAValue]]:
        """Two n tiles' 16-bit B registers by one transposed `ldmatrix` of
        [k][n] (k +0/+8, n +0/+8)."""
        kb = self.kb
        r, low, high = self._ldmatrix_rows()
        b: list[list[SSAValue]] = []
        for pair in range(self.lay.nt // 2):
            k, n = kb.add(kb.add(low, r), ks), kb.add(self.wn, kb.add(high, pair * 16))
            at = kb.add(self.b_off, kb.add(kb.mul(k, self.b_stride), n))
            regs = list(kb.op(LdMatrixOp(self.b_tile, at, True)).results)
            b += [regs[:2], regs[2:]]
        return b

    def _fragment(
        self, tile: SSAValue, base: SSAValue, ks: int, registers: tuple[tuple[int, int, int], ...]
    ) -> list[SSAValue]:
        """A fragment's registers from a staged tile ([g side][k]) whose g side starts at `base`: A's."""
        kb = self.kb
        regs = []
        for go, ts, to in registers:
            row = kb.add(base, kb.add(self.g, go))
            col = kb.add(kb.mul(self.t, ts), ks + to)
            at = kb.add(self.a_off, kb.add(kb.mul(row, self.stride), col))
            if self.ops.pairs:  # at even k: the pair is one 32-bit word
                pair = vector.LoadOp(tile, [at], VectorType(self.ops.element, [2]))
                regs.append(kb.val(aligned_access(pair, 2 * element_bytes(self.ops.element))))
            else:
                regs.append(kb.val(memref.LoadOp.get(tile, [at])))
        return regs

    def _b_fragment(self, base: SSAValue, ks: int, registers: tuple[tuple[int, int, int], ...]) -> list[SSAValue]:
        """B's registers from the staged [k][n] tile, n from `base`: an
        element, or a pair along k (two loads, a row apart)."""
        kb = self.kb
        regs = []
        for go, ts, to in registers:
            n = kb.add(base, kb.add(self.g, go))
            k = kb.add(kb.mul(self.t, ts), ks + to)
            at = kb.add(self.b_off, kb.add(kb.mul(k, self.b_stride), n))
            x = kb.val(memref.LoadOp.get(self.b_tile, [at]))
            if self.ops.pairs:
                after = kb.val(memref.LoadOp.get(self.b_tile, [kb.add(at, self.b_stride)]))
                pair = kb.val(vector.BroadcastOp(x, VectorType(self.ops.element, [2])))
                x = kb.val(vector.InsertOp(after, pair, [1]))
            regs.append(x)
        return regs


def mma_tiles(p: Product, ops: MmaOperands) -> LoweredKernel:
    """The tensor-core kernel of `p` over all of k, finishing every output
    element: Hopper's warpgroup tiles where they apply (`wgmma_tiles`), else
    the warp tiles of `MmaTiles`."""
    from accy.passes.kernelization.wgmma_tiles import WgmmaTiles, wgmma_applies

    if wgmma_applies(p.kb.profile, ops):
        return WgmmaTiles(p, ops).kernel()
    return MmaTiles(p, ops).kernel()
