"""Flash attention on tensor cores (FlashAttention-2's structure) for a
GPU target whose `mma` is "sm80" (or "emulate": the same kernel, each
matrix instruction done by the warp's work-items through local memory,
`mma_emulation`), where q, k and v are f16 or bf16 (read as stored, before
the f32 cast that compute-half-in-f32 gives the attention's operands) and
the attention computes in f32, or, only where the module's `math` is
"fast", f32 (TF32: the tensor core reads 10 of f32's 23 mantissa bits, in
both products; `exact` keeps IEEE f32 on the SIMT kernel, as the dot
does). Both products run on `accy_kernel.mma` with f32 accumulators:
m16n8k16 for 16-bit operands, m16n8k8 for TF32 (`operands`).

- A work-group of `WARPS` warps (work-items (lane, warp): 32 x 4) owns a
  block of 16·R·WARPS query rows of one batch (`Plan.bq`), each warp R row
  tiles of 16 (R = 2 where D and Dv are at most 64 and the blocks are
  many: each k and v fragment then serves two mmas, and each key tile is
  read by half as many blocks); work-item 4g + t owns rows g and g + 8 of
  each of its warp's row tiles (the rows of its accumulator fragments,
  `ACCUMULATOR_FRAGMENT`). Its q fragments (A operands of the first
  product, D padded with zeros to a multiple of 16) are read from global
  memory once and stay in registers.
- Per tile of `bk` keys (64, or 32 or 16 where local memory holds no
  more), the keys ([key][D], k's rows) and values ([key][Dv]) are staged
  in local memory (the operands' elements: 16-bit, or f32 for TF32, whose
  tiles take twice the bytes), zeros past D and Dv, keys past Sk reading
  key Sk-1; rows are padded by 16 bytes so that the eight 16-byte rows a
  fragment load reads (TF32: the 8 x 4 elements) start in distinct banks.
  Then each warp:
  - S = q·kᵀ on mma: per k step of D (16, TF32 8), the B fragments of its
    bk/8 key tiles by `ldmatrix` (k rows are [n][k] rows: no transpose;
    TF32 and emulated by local loads), one mma per key tile;
  - the score's elementwise work on each accumulator element, keys past
    Sk and (causal) past the query set to -inf;
  - the online softmax in f32 registers: a row's max over the tile is
    its four lanes' (t = 0..3) maxima reduced by `accy_kernel.shuffle_xor`
    (masks 1 and 2); each lane rescales its share of the row's sum and its
    output accumulators and sums its own exponentials p (the shares are
    added by the same quad reduction once, at the end);
  - O += P·V on mma: p converted to the operands' type is the A fragment
    directly (the accumulators of key tiles 2i and 2i+1 are, register for
    register, the A fragment of k16 step i: FA2's register trick); V's B
    fragments by `ldmatrix.trans` of the [key][Dv] tile. TF32: p stays
    f32, and key tile i's accumulators (c0, c1, c2, c3) are k8 step i's A
    fragment as (c0, c2, c1, c3), m16n8k8's k index t standing for key 2t
    and t + 4 for key 2t + 1; V's B fragments, by local loads, take keys
    in that order (`_p_fragment`, `_v_fragments`): no shuffles.
- Causal blocks stop at the tile holding their last query. Rows past Sq
  compute row Sq-1 and store nothing; each output element goes through the
  epilogue (`_Attention.finish`), guarded past Sq and Dv.

Not covered (the SIMT kernel, `_GpuBlocks`, runs; `unsupported` says
why): f32 operands under `math = "exact"`, D or Dv above `MAX_D`, a
work-group or local memory too small.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

from xdsl.dialects import arith, memref, vector
from xdsl.dialects import math as mathd
from xdsl.dialects.builtin import BFloat16Type, Float16Type, Float32Type, VectorType
from xdsl.ir import Attribute, SSAValue

from accy.dialects import accy
from accy.dialects.kernel import (
    ACCUMULATOR_FRAGMENT,
    ASYNC_COPY_BYTES,
    FRAGMENTS,
    MMA_K,
    AsyncCommitOp,
    AsyncCopyOp,
    AsyncWaitOp,
    LdMatrixOp,
    MmaOp,
    NarrowPairOp,
    ShuffleXorOp,
)
from accy.dialects.target import TargetProfile
from accy.dialects.types import element_bytes, numel
from accy.passes.kernelization.flash_attention import GPU_MANY_BLOCKS, _Attention, _combined
from accy.passes.kernelization.kernel_builder import vectors_aligned
from accy.passes.kernelization.lowered import LoweredKernel
from accy.passes.kernelization.mma_emulation import Exchange, exchange_elements

#: log2(e), single precision: exp(x) = exp2(x·LOG2_E) (`_MmaAttention._exp`).
LOG2_E = 1.4426950408889634

#: Warps of a work-group, each owning 16 query rows a row tile (`Plan.row_tiles`).
WARPS = 4
WARP = 32
THREADS = WARP * WARPS
#: Row tiles a warp (two: each k and v fragment serves two mmas, and a
#: block of 128 rows reads each key tile once) where D and Dv are at most
#: this and there are `GPU_MANY_BLOCKS` blocks of 128 rows or more; else one.
TWO_ROW_TILES_MAX_D = 64
#: (keys of a staged tile, buffers of each tile) by preference, the first
#: whose tiles fit in local memory; two buffers only where async copies
#: fill them (`Plan.copies`).
TILINGS = ((64, 2), (32, 2), (64, 1), (32, 1), (16, 2), (16, 1))
#: Bytes each staged row is padded by: the eight rows of a 16-bit fragment
#: load (16 bytes each), or the 8 x 4 f32 elements of a TF32 one, start in
#: distinct banks.
PAD_BYTES = 16
#: The largest D and Dv: a warp's q fragments and output accumulators stay in registers.
MAX_D = 256


def _up(n: int, m: int) -> int:
    return -(-n // m) * m


def _shape(element: Attribute) -> str:
    """The mma shape of operands of `element`: TF32 m16n8k8 for f32, else m16n8k16."""
    return "m16n8k8" if isinstance(element, Float32Type) else "m16n8k16"


def chunk(element: Attribute) -> int:
    """Elements of an async copy (16 bytes) of `element`."""
    return ASYNC_COPY_BYTES // element_bytes(element)


def local_bytes(profile: TargetProfile, element: Attribute, d: int, dv: int, bk: int, stages: int) -> int:
    """Local memory of the kernel on operands of `element` at key tiles of
    `bk` in `stages` buffers: the staged keys and values and, emulated,
    the warps' exchange and the shuffles' words."""
    width, k = element_bytes(element), MMA_K[_shape(element)]
    pad = PAD_BYTES // width
    staged = stages * bk * (_up(d, k) + pad + _up(dv, k) + pad)
    if profile.mma != "emulate":
        return staged * width
    x_a, x_b = exchange_elements(_shape(element), WARPS, 2, max(bk, _up(dv, k)) // 8)
    return (staged + x_a + x_b) * width + THREADS * 4


def narrow(fa: _Attention, operand: SSAValue) -> SSAValue | None:
    """The f16 or bf16 value an f32 operand of the attention is cast from
    (compute-half-in-f32's cast, fused into the kernel), or None."""
    cast = operand.owner
    if isinstance(cast, accy.CastOp) and cast in fa.ops and isinstance(accy.elem_of(cast.x), Float16Type | BFloat16Type):
        return cast.x
    return None


def operands(fa: _Attention) -> tuple[SSAValue, SSAValue, SSAValue] | str:
    """q, k and v as the kernel reads them: the 16-bit values they are
    cast from (m16n8k16), or under `math = fast` the f32 operands
    themselves (TF32 m16n8k8: the tensor core reads 10 of f32's 23
    mantissa bits, in both products); or why neither."""
    raw = (fa.qk.lhs, fa.qk.rhs, fa.pv.rhs)
    q, k, v = (narrow(fa, x) for x in raw)
    if not isinstance(fa.et, Float32Type):
        return "q, k and v are not f16 or bf16 values the attention computes on in f32"
    if q is not None and k is not None and v is not None:
        if len({type(accy.elem_of(x)) for x in (q, k, v)}) != 1:
            return "q, k and v are not of one element type"
        return q, k, v
    if fa.kb.profile.math != "fast" or not all(isinstance(accy.elem_of(x), Float32Type) for x in raw):
        why = "q, k and v are not f16 or bf16 values the attention computes on in f32"
        return f"{why} (f32 ones take TF32 only under math = fast)"
    return raw


@dataclass(frozen=True)
class Plan:
    """How the kernel runs an attention: q, k and v as the 16-bit values
    they are cast from or (TF32) the f32 operands (`operands`), tiles of
    `bk` keys in `stages` buffers, filled by async copies (`copies`: k and
    v are buffers contiguous along D and Dv, whole aligned 16-byte chunks)
    or by plain loads (one buffer)."""

    q: SSAValue
    k: SSAValue
    v: SSAValue
    bk: int
    stages: int
    copies: bool
    row_tiles: int

    @property
    def bq(self) -> int:
        """Query rows of a work-group's block."""
        return 16 * self.row_tiles * WARPS


def plan(fa: _Attention) -> Plan | str:
    """The kernel's plan for `fa`, or why it does not run it."""
    why = unsupported(fa)
    if why is not None:
        return why
    read = operands(fa)
    assert not isinstance(read, str)
    q, k, v = read
    element = accy.elem_of(q)
    copies = _copyable(fa, k, fa.k_dims[1], fa.d) and _copyable(fa, v, fa.v_dims[2], fa.dv)
    profile = fa.kb.profile
    fits = [
        (bk, n)
        for bk, n in TILINGS
        if (copies or n == 1) and local_bytes(profile, element, fa.d, fa.dv, bk, n) <= profile.local_mem_bytes
    ]
    if not fits:
        return "local memory does not hold the staged tiles"
    wide = max(_up(fa.d, 16), _up(fa.dv, 16)) <= TWO_ROW_TILES_MAX_D
    row_tiles = 2 if wide and -(-fa.sq // (32 * WARPS)) * max(numel(fa.batch_shape), 1) >= GPU_MANY_BLOCKS else 1
    return Plan(q, k, v, *fits[0], copies, row_tiles)


def _copyable(fa: _Attention, value: SSAValue, along: int, extent: int) -> bool:
    """Whether `value` is a buffer whose rows along dim `along` (its last)
    are whole aligned 16-byte chunks."""
    acc = fa.kb.access.get(value)
    last = len(accy.shape_of(value)) - 1
    n = chunk(accy.elem_of(value))
    return acc is not None and along == last and extent % n == 0 and vectors_aligned(acc, n)


def unsupported(fa: _Attention) -> str | None:
    """Why the tensor-core kernel does not run this attention, or None where it does."""
    profile = fa.kb.profile
    if profile.mma not in ("sm80", "sm90", "emulate"):
        return "the target has no warp matrix instructions (mma)"
    read = operands(fa)
    if isinstance(read, str):
        return read
    if fa.d > MAX_D or fa.dv > MAX_D:
        return f"D = {fa.d}, Dv = {fa.dv}: above {MAX_D}"
    if fa.sk == 0:
        return "no keys"
    if profile.max_work_group_size < THREADS:
        return f"work-groups of {profile.max_work_group_size} work-items: fewer than {THREADS}"
    if local_bytes(profile, accy.elem_of(read[0]), fa.d, fa.dv, TILINGS[-1][0], 1) > profile.local_mem_bytes:
        return "local memory does not hold the staged tiles"
    return None


def mma_attention(fa: _Attention, how: Plan) -> LoweredKernel:
    """The tensor-core kernel of `fa` as `how` (from `plan`) says."""
    return _MmaAttention(fa, how).kernel()


class _MmaAttention:
    """The kernel on `fa`'s builder (module docstring). Building it emits
    the preamble (local arrays, ids, the rows); `kernel` the rest."""

    def __init__(self, fa: _Attention, how: Plan) -> None:
        self.fa, self.kb, self.how = fa, fa.kb, how
        kb, profile = fa.kb, fa.kb.profile
        self.q, self.k, self.v = how.q, how.k, how.v
        self.element: Attribute = accy.elem_of(how.q)
        self.shape = _shape(self.element)
        # 16-bit operands: fragment registers are pairs along k (m16n8k16);
        # TF32: one f32 element each (m16n8k8), read by plain local loads.
        self.pairs = self.shape == "m16n8k16"
        self.kstep = MMA_K[self.shape]
        self.bk, self.mt, self.bq = how.bk, how.row_tiles, how.bq
        self.dp, self.dvp = _up(fa.d, self.kstep), _up(fa.dv, self.kstep)
        pad = PAD_BYTES // element_bytes(self.element)
        self.k_row, self.v_row = self.dp + pad, self.dvp + pad
        self.n_s, self.n_o = self.bk // 8, self.dvp // 8  # key tiles of S, column tiles of O
        self.emulated = profile.mma == "emulate"
        align = PAD_BYTES
        self.k_size, self.v_size = self.bk * self.k_row, self.bk * self.v_row  # a buffer of each
        self.k_tile = kb.local_array(how.stages * self.k_size, self.element, workgroup=True, alignment=align)
        self.v_tile = kb.local_array(how.stages * self.v_size, self.element, workgroup=True, alignment=align)
        self.k_off, self.v_off = kb.idx(0), kb.idx(0)  # the buffers in use
        self.lane, self.warp = kb.local_id("x"), kb.local_id("y")
        self.g, self.t = kb.div(self.lane, 4), kb.rem(self.lane, 4)
        self.flat = kb.add(kb.mul(self.warp, WARP), self.lane)
        if self.emulated:
            x_a, x_b = exchange_elements(self.shape, WARPS, self.mt, max(self.n_s, self.n_o))
            self.exchange = Exchange(
                kb, self.shape, self.element, kb.local_array(x_a, self.element, workgroup=True),
                kb.local_array(x_b, self.element, workgroup=True), self.warp, self.g, self.t,
            )  # fmt: skip
        block = kb.group_id("x")
        if fa.causal:  # the longest blocks (the last queries') first: the shortest make the tail
            block = kb.sub(kb.idx(-(-fa.sq // self.bq) - 1), block)
        self.q0 = kb.mul(block, self.bq)
        self.bc = kb.delinearize(kb.group_id("y"), fa.batch_shape)
        first = kb.add(self.q0, kb.add(kb.mul(self.warp, 16 * self.mt), self.g))
        # Row tile i's rows of accumulator elements 0, 1 and 2, 3: rows[2i], rows[2i + 1].
        self.rows = [kb.add(first, 16 * i + 8 * h) for i in range(self.mt) for h in (0, 1)]
        self.read_rows = [kb.min(r, fa.sq - 1) for r in self.rows]
        # Masked scores and the running max: -inf, or under `fast` half the
        # lowest finite value (fa.lowest: no infinities there), so that
        # (masked - max)·log2 e in `_exp` stays finite. With the lowest f32
        # itself the product overflowed to -inf, and PoCL's fast build gave
        # NaN for exp2 of it (TF32 attention, every masked tile).
        self.ninf, self.zero = kb.const(fa.lowest / 2, Float32Type()), kb.const(0.0, Float32Type())
        self.log2e = kb.const(LOG2_E, Float32Type())
        self.masked = fa.causal or fa.sk % self.bk != 0

    def kernel(self) -> LoweredKernel:
        """q's fragments, the loop over the key tiles the block sees, the rows stored."""
        fa, kb = self.fa, self.kb
        q = [[self._q_fragment(i, kk) for i in range(self.mt)] for kk in range(self.dp // self.kstep)]
        keys_end = kb.min(fa.sk, kb.min(kb.add(self.q0, self.bq), fa.sq)) if fa.causal else kb.idx(fa.sk)
        limits = [fa.key_end(r) for r in self.read_rows] if self.masked else []
        rows = len(self.rows)
        init = [self.ninf] * rows + [self.zero] * rows + [self.zero] * (self.mt * self.n_o * 4)
        if self.how.stages == 2:
            self._issue(kb.idx(0), kb.idx(0))  # the first tile in flight
        final = kb.for_(0, keys_end, self.bk, init, partial(self._tile, q, limits))
        if self.how.copies:
            kb.op(AsyncWaitOp(0))  # nothing in flight past the kernel's end
        self._store(final)
        grid = (-(-fa.sq // self.bq), max(numel(fa.batch_shape), 1), 1)
        return kb.lowered(grid, (WARP, WARPS, 1), states_block=True)

    # -- reading the operands ---------------------------------------------------------

    def _pair(self, lo: SSAValue, hi: SSAValue) -> SSAValue:
        """(lo, hi) as one `vector<2xT>` fragment register."""
        kb = self.kb
        pair = kb.val(vector.BroadcastOp(lo, VectorType(self.element, [2])))
        return kb.val(vector.InsertOp(hi, pair, [1]))

    def _narrow(self, lo: SSAValue, hi: SSAValue) -> SSAValue:
        """f32 (lo, hi) rounded to one fragment register of the operands'
        type (`accy_kernel.narrow_pair`: on NVIDIA's GPUs one packed cvt for
        the pair; H200, B4 H16 S4096 D64: bf16 1.22 -> 1.02 ms against
        rounding by integer arithmetic, f16 1.07 -> 1.02 against two
        conversions)."""
        return self.kb.val(NarrowPairOp(lo, hi, self.element))

    def _read(
        self, value: SSAValue, dims: tuple, contract: SSAValue, free: SSAValue, padded: int, extent: int | None
    ) -> SSAValue:
        """Element (contract, free) of operand `value` (`_Attention.operand_at`);
        where `extent` is given, 0 where coordinate `padded` (0: contract, 1:
        free) is past it (read at extent - 1)."""
        fa, kb = self.fa, self.kb
        if extent is None:
            return fa.operand_at(value, dims, self.bc, contract, free)
        coords = [contract, free]
        inside = kb.lt(coords[padded], extent)
        coords[padded] = kb.min(coords[padded], extent - 1)
        return kb.select(inside, fa.operand_at(value, dims, self.bc, *coords), kb.const(0.0, self.element))

    def _q_fragment(self, tile: int, kk: int) -> list[SSAValue]:
        """The A fragment of q's row tile `tile` at k step kk (rows g and g
        + 8 of the tile; m16n8k16: d = 16kk + 2t + 0/1/8/9, m16n8k8: d = 8kk
        + t + 0/4), zeros past D."""
        fa, kb, k = self.fa, self.kb, self.kstep
        padded = k * kk + k > fa.d
        regs = []
        for go, ts, off in FRAGMENTS[self.shape]["a"]:  # a0 .. a3
            d = kb.add(kb.mul(self.t, ts), k * kk + off)
            extent = fa.d if padded else None
            row = self.read_rows[2 * tile + go // 8]
            if not self.pairs:
                regs.append(self._read(self.q, fa.q_dims, d, row, 0, extent))
                continue
            pair = [self._read(self.q, fa.q_dims, kb.add(d, h), row, 0, extent) for h in (0, 1)]
            regs.append(self._pair(*pair))
        return regs

    def _staged(self, k0: SSAValue) -> None:
        """The tile from k0 in local memory, its buffers in use. Two buffers:
        its copies (issued a tile before) waited for, a barrier (every
        work-item's are in, and every work-item is done with the tile
        before), the next tile's copies issued into the other buffer. One:
        a barrier (the tile before read), the tile copied or loaded, a barrier."""
        kb = self.kb
        if self.how.stages == 2:
            kb.op(AsyncWaitOp(0))
            kb.barrier()
            cur = kb.rem(kb.div(k0, self.bk), 2)
            self._issue(kb.add(k0, self.bk), kb.sub(kb.idx(1), cur))
            self.k_off, self.v_off = kb.mul(cur, self.k_size), kb.mul(cur, self.v_size)
            return
        kb.barrier()
        if self.how.copies:
            self._issue(k0, kb.idx(0))
            kb.op(AsyncWaitOp(0))
        else:
            self._stage(k0)
        kb.barrier()

    def _issue(self, k0: SSAValue, buffer: SSAValue) -> None:
        """Async copies of the tile from k0 into `buffer`, 16 bytes a slot,
        consecutive work-items on consecutive chunks of a row (zeros past
        Sk, D and Dv), committed as one group."""
        fa, kb = self.fa, self.kb
        parts = (
            (self.k, fa.k_dims, fa.d, self.dp, self.k_tile, self.k_row, kb.mul(buffer, self.k_size), False),
            (self.v, fa.v_dims, fa.dv, self.dvp, self.v_tile, self.v_row, kb.mul(buffer, self.v_size), True),
        )
        n = chunk(self.element)
        for value, dims, extent, cols, tile, row_len, off, free_cols in parts:
            per_row = cols // n
            total = self.bk * per_row
            acc = kb.access[value]
            for e in range(-(-total // THREADS)):
                slot = kb.add(self.flat, e * THREADS)
                key, c = kb.div(slot, per_row), kb.mul(kb.rem(slot, per_row), n)
                j = kb.add(k0, key)
                valid = kb.val(arith.AndIOp(kb.lt(j, fa.sk), kb.lt(c, extent)))
                src = kb.address(acc, fa.coords(dims, self.bc, *((j, c) if free_cols else (c, j))))
                copy = partial(self._copy, acc.arg, src, tile, kb.add(off, kb.add(kb.mul(key, row_len), c)), valid)
                if total % THREADS and (e + 1) * THREADS > total:
                    kb.if_(kb.lt(slot, total), copy)
                else:
                    copy()
        kb.op(AsyncCommitOp())

    def _copy(self, src: SSAValue, at: SSAValue, tile: SSAValue, to: SSAValue, valid: SSAValue) -> list[SSAValue]:
        self.kb.op(AsyncCopyOp(src, at, tile, to, valid))
        return []

    def _stage(self, k0: SSAValue) -> None:
        """The tile's keys and values from k0 into local memory by plain
        loads, consecutive work-items on consecutive columns; zeros past D
        and Dv, keys past Sk read at Sk - 1."""
        self._stage_tile(self.dp, partial(self._put_key, k0))
        self._stage_tile(self.dvp, partial(self._put_value, k0))

    def _stage_tile(self, cols: int, put: Callable[[SSAValue, SSAValue], None]) -> None:
        """`put(key, column)` of each of bk x cols elements of a tile."""
        kb = self.kb
        total = self.bk * cols
        steps, rest = divmod(total, THREADS)
        assert not rest, "a tile is whole rounds of the work-group (bk a multiple of 16, the padded widths of 8)"

        def step(e: SSAValue, _: list[SSAValue]) -> list[SSAValue]:
            slot = kb.add(self.flat, kb.mul(e, THREADS))
            put(kb.div(slot, cols), kb.rem(slot, cols))
            return []

        kb.for_(0, steps, 1, [], step)

    def _put_key(self, k0: SSAValue, key: SSAValue, d: SSAValue) -> None:
        fa, kb = self.fa, self.kb
        j = kb.min(kb.add(k0, key), fa.sk - 1)
        x = self._read(self.k, fa.k_dims, d, j, 0, fa.d if self.dp != fa.d else None)
        kb.op(memref.StoreOp.get(x, self.k_tile, [kb.add(kb.mul(key, self.k_row), d)]))

    def _put_value(self, k0: SSAValue, key: SSAValue, c: SSAValue) -> None:
        fa, kb = self.fa, self.kb
        j = kb.min(kb.add(k0, key), fa.sk - 1)
        x = self._read(self.v, fa.v_dims, j, c, 1, fa.dv if self.dvp != fa.dv else None)
        kb.op(memref.StoreOp.get(x, self.v_tile, [kb.add(kb.mul(key, self.v_row), c)]))

    # -- fragments of the staged tiles -------------------------------------------------

    def _ldmatrix(self, tile: SSAValue, at: SSAValue, trans: bool) -> list[list[SSAValue]]:
        regs = list(self.kb.op(LdMatrixOp(tile, at, trans=trans)).results)
        return [regs[:2], regs[2:]]

    def _k_fragments(self, kk: int) -> list[list[SSAValue]]:
        """The B fragments of k step kk of each key tile: m16n8k16: b0 =
        k[key g][d 16kk + 2t, +1], b1 the same 8 d later; m16n8k8 (TF32): b0
        = k[key g][d 8kk + t], b1 4 d later. 16-bit on the tensor cores by
        ldmatrix, two key tiles a call: work-item 8i + r names key row 8·(i /
        2) + r from d 8·(i % 2); else by local loads."""
        kb, k = self.kb, self.kstep
        out: list[list[SSAValue]] = []
        if not self.emulated and self.pairs:
            matrix, r = kb.div(self.lane, 8), kb.rem(self.lane, 8)
            for pair in range(self.n_s // 2):
                key = kb.add(kb.mul(kb.div(matrix, 2), 8), kb.add(r, 16 * pair))
                d = kb.add(kb.mul(kb.rem(matrix, 2), 8), 16 * kk)
                out += self._ldmatrix(self.k_tile, kb.add(self.k_off, kb.add(kb.mul(key, self.k_row), d)), False)
            return out
        for nt in range(self.n_s):
            row = kb.add(self.k_off, kb.mul(kb.add(self.g, nt * 8), self.k_row))
            regs = []
            for _, ts, off in FRAGMENTS[self.shape]["b"]:
                at = kb.add(row, kb.add(kb.mul(self.t, ts), k * kk + off))
                x = self._local(self.k_tile, at)
                regs.append(self._pair(x, self._local(self.k_tile, kb.add(at, 1))) if self.pairs else x)
            out.append(regs)
        return out

    def _v_fragments(self, kk: int) -> list[list[SSAValue]]:
        """The B fragments of key step kk of each tile of 8 output columns.
        m16n8k16 (keys 16kk ..): b0 = v[keys 16kk + 2t, +1][column g], b1 the
        keys 8 later; on the tensor cores by ldmatrix.trans, two column tiles
        a call: work-item 8i + r names key row 16kk + 8·(i % 2) + r from
        column 8·(i / 2). m16n8k8 (TF32, keys 8kk ..): b0 = v[key 8kk +
        2t][column g], b1 = v[key 8kk + 2t + 1][column g]: k index t is key 2t
        and t + 4 key 2t + 1, the order of P's A fragment (`_p_fragment`)."""
        kb = self.kb
        out: list[list[SSAValue]] = []
        if not self.pairs:
            for nv in range(self.n_o):
                key = kb.add(kb.mul(self.t, 2), 8 * kk)
                at = kb.add(self.v_off, kb.add(kb.mul(key, self.v_row), kb.add(self.g, nv * 8)))
                out.append([self._local(self.v_tile, at), self._local(self.v_tile, kb.add(at, self.v_row))])
            return out
        if not self.emulated:
            matrix, r = kb.div(self.lane, 8), kb.rem(self.lane, 8)
            key = kb.add(kb.mul(kb.rem(matrix, 2), 8), kb.add(r, 16 * kk))
            for pair in range(self.n_o // 2):
                c = kb.add(kb.mul(kb.div(matrix, 2), 8), 16 * pair)
                out += self._ldmatrix(self.v_tile, kb.add(self.v_off, kb.add(kb.mul(key, self.v_row), c)), True)
            return out
        for nv in range(self.n_o):
            regs = []
            for off in (0, 8):
                key = kb.add(kb.mul(self.t, 2), 16 * kk + off)
                at = kb.add(self.v_off, kb.add(kb.mul(key, self.v_row), kb.add(self.g, nv * 8)))
                regs.append(self._pair(self._local(self.v_tile, at), self._local(self.v_tile, kb.add(at, self.v_row))))
            out.append(regs)
        return out

    def _local(self, tile: SSAValue, at: SSAValue) -> SSAValue:
        return self.kb.val(memref.LoadOp.get(tile, [at]))

    def _mma(self, a: list[list[SSAValue]], b: list[list[SSAValue]], acc: list[SSAValue]) -> list[SSAValue]:
        """acc + each A fragment of `a` times each B fragment of `b` (4
        accumulators each, those of (i, j) from (i·len(b) + j)·4)."""
        if self.emulated:
            return self.exchange.round(a, b, acc)
        out = list(acc)
        for i, a_regs in enumerate(a):
            for j, regs in enumerate(b):
                at = (i * len(b) + j) * 4
                out[at : at + 4] = self.kb.op(MmaOp(self.shape, a_regs, regs, out[at : at + 4])).results
        return out

    # -- a key tile ------------------------------------------------------------------------

    def _quad(self, x: SSAValue, combine: type[arith.MaximumfOp] | type[arith.AddfOp]) -> SSAValue:
        """`x` combined over the four lanes t = 0..3 that share a row."""
        kb = self.kb
        for mask in (1, 2):
            x = kb.val(combine(x, kb.val(ShuffleXorOp(x, mask))))
        return x

    def _tile(self, q: list[list[SSAValue]], limits: list[SSAValue], k0: SSAValue, carried: list[SSAValue]) -> list[SSAValue]:
        """The key tile from k0: staged, S on mma, the online softmax step, O += P·V on mma."""
        fa, kb = self.fa, self.kb
        rows = len(self.rows)
        m, l, o = carried[:rows], carried[rows : 2 * rows], carried[2 * rows :]
        self._staged(k0)
        s = [self.zero] * (self.mt * self.n_s * 4)
        for kk in range(self.dp // self.kstep):
            s = self._mma(q[kk], self._k_fragments(kk), s)
        keys, scores = [], []
        for i, dot in enumerate(s):  # row tile i // (4 n_s), key tile i // 4 % n_s
            nt, (_, ts, to) = i // 4 % self.n_s, ACCUMULATOR_FRAGMENT[i % 4]
            row = self._row(i, self.n_s)
            keys.append(kb.add(k0, kb.add(kb.mul(self.t, ts), nt * 8 + to)))
            scores.append(fa.score_at(self.bc, self.read_rows[row], kb.min(keys[-1], fa.sk - 1), dot, 1))
        if self.masked:
            scores = self._masked(k0, keys, scores, limits)
        out_m, out_l, corrs, p = [], [], [], [self.zero] * len(scores)
        for row in range(rows):
            mine = [i for i in range(len(scores)) if self._row(i, self.n_s) == row]
            # fmax, not NaN-propagating maximumf: a NaN score makes its p
            # NaN, and so its row's sum and every output of the row, as the
            # reference's max would (fmax(-inf, NaN) is -inf: shift stays 0).
            top = self._quad(_combined(kb, arith.MaxnumfOp, [scores[i] for i in mine]), arith.MaxnumfOp)
            m_new = kb.val(arith.MaxnumfOp(m[row], top))
            shift, corr = fa.rescale(m[row], m_new)
            for i in mine:
                p[i] = self._exp(kb.val(arith.SubfOp(scores[i], shift)))
            out_m.append(m_new)
            out_l.append(fa.fma(l[row], corr, _combined(kb, arith.AddfOp, [p[i] for i in mine])))
            corrs.append(corr)
        o = [kb.val(arith.MulfOp(x, corrs[self._row(i, self.n_o)])) for i, x in enumerate(o)]
        for kk in range(self.bk // self.kstep):
            a = [self._p_fragment(p, tile, kk) for tile in range(self.mt)]
            o = self._mma(a, self._v_fragments(kk), o)
        return out_m + out_l + o

    def _p_fragment(self, p: list[SSAValue], tile: int, kk: int) -> list[SSAValue]:
        """The A fragment of row tile `tile` at key step kk of P·V from the
        probabilities `p` (S's accumulators: c0 (g, 2t), c1 (g, 2t + 1), c2
        (g + 8, 2t), c3 (g + 8, 2t + 1) of each key tile). m16n8k16: key
        tiles 2kk and 2kk + 1, register for register, each pair rounded to
        the operands' type (FA2's register trick). m16n8k8 (TF32): key tile
        kk as (c0, c2, c1, c3), f32 as they are: a0 (g, k t) is key 2t, a2
        (g, k t + 4) key 2t + 1 (V's B fragment takes the same order)."""
        if not self.pairs:
            c = p[tile * self.n_s * 4 + 4 * kk :][:4]
            return [c[0], c[2], c[1], c[3]]
        at = tile * self.n_s * 4 + 8 * kk
        lo, hi = p[at : at + 4], p[at + 4 : at + 8]  # key tiles 2kk, 2kk + 1
        return [self._narrow(lo[0], lo[1]), self._narrow(lo[2], lo[3]), self._narrow(hi[0], hi[1]),
                self._narrow(hi[2], hi[3])]  # fmt: skip

    def _masked(self, k0: SSAValue, keys: list[SSAValue], scores: list[SSAValue], limits: list[SSAValue]) -> list[SSAValue]:
        """`scores` with keys past their row's limit (Sk, or causal the row
        itself) at -inf, in the tiles that hold such keys (those past Sk,
        causal those reaching past the block's first row); elsewhere as they are."""
        fa, kb = self.fa, self.kb
        end = kb.add(k0, self.bk)
        edges = [kb.lt(fa.sk, end)] if fa.sk % self.bk else []
        edges += [kb.lt(self.q0, end)] if fa.causal else []
        edge = edges[0] if len(edges) == 1 else kb.val(arith.OrIOp(*edges))

        def masked() -> list[SSAValue]:
            return [
                kb.select(kb.lt(key, limits[self._row(i, self.n_s)]), x, self.ninf)
                for i, (key, x) in enumerate(zip(keys, scores, strict=True))
            ]

        return kb.if_(edge, masked, lambda: scores, [x.type for x in scores])

    def _exp(self, x: SSAValue) -> SSAValue:
        """exp(x) as exp2(x·log2 e), for x = s - shift <= 0 (or NaN): an ex2
        on NVIDIA's GPUs, where OpenCL's exp is a longer sequence (H200, f16
        B4 H16 S4096 D64: 1.31 -> 1.16 ms; fmax for the row max then 1.07). Rounding the product adds at
        most |x|·2^-24 to p's relative error: under f16's rounding of p
        before P·V (2^-11) while p is above e^-88, below which it is 0."""
        kb = self.kb
        return kb.val(mathd.Exp2Op(kb.val(arith.MulfOp(x, self.log2e))))

    @staticmethod
    def _row(i: int, tiles: int) -> int:
        """The row (index into `rows`) of accumulator i of row tiles of `tiles` n tiles each."""
        return 2 * (i // (4 * tiles)) + (i % 4) // 2

    # -- the rows stored -----------------------------------------------------------------------

    def _store(self, final: list[SSAValue]) -> None:
        """Each row's sum (its lanes' shares added), then acc / l of each of
        the work-item's output elements through the epilogue, nothing past
        Sq and Dv."""
        fa, kb = self.fa, self.kb
        rows = len(self.rows)
        inv = [fa.inverse(self._quad(final[rows + r], arith.AddfOp)) for r in range(rows)]
        for i, acc in enumerate(final[2 * rows :]):
            nv, (_, ts, to) = i // 4 % self.n_o, ACCUMULATOR_FRAGMENT[i % 4]
            r = self._row(i, self.n_o)
            row = self.rows[r]
            col = kb.add(kb.mul(self.t, ts), nv * 8 + to)
            value = kb.val(arith.MulfOp(acc, inv[r]))
            fa.finish_guarded(self.bc, row, col, value, fa.sq % self.bq != 0, nv * 8 + 8 > fa.dv)

