"""Lowering of flash_attention work items: `accy.attention` (expanded into
its primitive form) or q·kᵀ → elementwise (scale, mask) → softmax → ·v written
out (the softmax named or with primitives), with prologues on q, k, v and an
epilogue on the result.

The Sq x Sk scores are never stored: each query row runs the online softmax
over the keys, carrying the running max m, the running sum l and the
accumulator acc[Dv]:

    s = S(q·k_j)                    the item's elementwise work on the score
    m' = max(m, s);  c = exp(m - m');  p = exp(s - m')
    l' = l·c + p;    acc' = acc·c + p·v_j

and stores acc / l through the epilogue. A causal mask written as the
decompose pass writes it (select(iota_k > iota_q, lowest, s)) is recognised:
keys past the query are skipped rather than masked. Any other mask is
computed per score. What matches is the attention matcher's
(`analyses.attention`): the schedule fuses only what it matched, and hands
the match over in the item's facts; a named `accy.attention` is matched
here on its decomposition.

CPU profile, float32/64 and at least `BLOCK_MIN_WORK` multiply-adds a
batch: four launches (`_QueryBlocks`). Three pack the operands (prologues evaluated, any
layout read through its strides) into scratch panels: q as blocks of Qb
query rows, D-major (`pq[b][qt][d][r]`); kᵀ as tiles of KT keys, D-major,
plus a last row holding each key's index as a float (`pk[b][t][d][j]`,
D+1 rows); v as rows of Dv padded to whole vectors (`pv[b][j][c]`); keys
past Sk repeat the last one. The fourth gives each work-item a block of Qb
query rows (Qb the profile's `query_rows`, KT its `key_tile`). Per tile of
KT keys, a register micro-kernel computes the Qb x KT scores as
`vector<WxT>` accumulators (a kᵀ vector of W keys times a broadcast q
scalar per fma), the score's elementwise work runs W keys at a time (lane
by lane through a private array when it reads a tensor and the last tile
is partial), keys past Sk and (causal) past the query are set to -inf by
comparing the index row, the online softmax rescales per query row, and
p goes through a private array into a second micro-kernel: a v row (Dv/W
vectors) times a broadcast p per fma into the Qb x Dv accumulators.
Causal blocks skip every tile past the block's last query. Otherwise one
work-item per (batch, query row): q's row, acc and the dot over D are
`vector<WxT>` chunks in registers (scalars when the layout or the prologue
does not allow W lanes). No barriers.

GPU profile: a work-group of TY x 8 work-items per block of TY·4 query
rows (the profile's `query_rows`, 64, at most) of one batch, tiles of 32
keys (`key_tile`) staged in local memory; each work-item computes 4 rows x
4 keys of the scores and 4 rows x Dv/8 columns of the output in registers
(`_GpuBlocks`). Where the target's `mma` is "sm80" or "emulate" and q, k
and v are f16 or bf16 (or f32 under `math = "fast"`: TF32), both products
run on tensor cores instead (`mma_attention`: FlashAttention-2's warps of
16 query rows, the online softmax on the mma accumulators);
`mma_attention.plan` says where not.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from functools import partial, reduce
from typing import Any, NamedTuple

from xdsl.dialects import arith, memref, vector
from xdsl.dialects import math as mathd
from xdsl.dialects.builtin import Float32Type, Float64Type, VectorType, i32
from xdsl.ir import Operation, SSAValue

from accy.dialects import accy
from accy.dialects.dense import splat_value
from accy.dialects.host import buffer_element_type
from accy.dialects.kernel import aligned_access
from accy.dialects.target import TargetProfile
from accy.dialects.types import element_bytes, numel
from accy.passes.analyses.attention import AttentionMatch, NoMatch, lowest, match_attention
from accy.passes.analyses.bufferization import BufferPlan
from accy.passes.analyses.outlining import OutlinedKernel
from accy.passes.analyses.reads import read_elsewhere
from accy.passes.analyses.schedule import AttentionFacts
from accy.passes.kernelization.combining import pow2_at_most, vector_total
from accy.passes.kernelization.evaluate import Expr
from accy.passes.kernelization.kernel_builder import KernelBuilder, cmp
from accy.passes.kernelization.launch import stage_kernel, work_item_per
from accy.passes.kernelization.lowered import Decline, LoweredKernel, Scratch
from accy.passes.kernelization.row_values import broadcast_accesses, expanded, pin_aliases, walk_cone

Chunk = tuple[int, int]
"""(offset, width) of a piece of a row of D or Dv elements."""

#: Multiply-adds per batch (Sq·Sk·(D+Dv)) below which a CPU attention is not
#: packed: three more launches cost more than they save on a small one.
BLOCK_MIN_WORK = 64 * 64 * 64
#: Work-items of a GPU attention work-group along the keys of a tile (and
#: the output columns), and query rows per work-item.
#: (On the H200 at B4 H16 S4096 D64: 8 x 4 gave 23.6 TFLOP/s, 16 x 8 (the
#: tiles then halved to fit) 20.9, 8 x 8 23.9 but half the speed at S1024;
#: halving the rows of a block for more work-groups at S1024 lost 25%.)
GPU_KEY_THREADS = 8
GPU_QUERY_ROWS = 4
#: Work-groups from which a GPU attention's key tiles are at most
#: GPU_MANY_BLOCKS_KEY_TILE keys: many blocks fill the device, and short
#: tiles keep more of them resident; fewer blocks leave it underfilled, and
#: long tiles halve the barriers per key. H200, key tiles 64 against 32: B1
#: H8 S1024 D64 (128 blocks) 0.148 ms against 0.155, causal 0.148 against
#: 0.171; B4 H16 S4096 (4096 blocks) 13.95 ms against 11.64, causal 7.59
#: against 6.30.
GPU_MANY_BLOCKS = 256
GPU_MANY_BLOCKS_KEY_TILE = 32
#: Floats of a vector local load of the GPU kernel's register tiles where
#: the target's `attention_lanes` is this (`_GpuBlocks`): one 16-byte access.
GPU_LANES = 4


def lower_flash_attention(kernel: OutlinedKernel, plan: BufferPlan, profile: TargetProfile) -> LoweredKernel:
    """A flash-attention kernel: two dot_generals and the softmax between
    them, as the schedule matched them (`AttentionFacts`), or a named
    `accy.attention`, matched here on its primitive form by the same matcher."""
    kb = KernelBuilder.for_kernel(kernel, plan, profile)
    with expanded(kernel.ops) as (ops, aliases):
        if isinstance(kernel.facts, AttentionFacts):
            match = kernel.facts.match
        else:
            dots = [op for op in ops if isinstance(op, accy.DotGeneralOp)]
            if len(dots) != 2:
                raise Decline(f"a flash attention kernel needs two accy.dot_general, got {len(dots)}")
            try:
                match = match_attention(ops, dots[0], dots[1], aliases)
            except NoMatch as e:
                raise Decline(str(e)) from None
        fa = _Attention(kb, ops, aliases, kernel.outputs, match)
        if numel(fa.rows) * fa.dv == 0:
            # No output element: one work-item per row launches none (a GPU
            # grid of one work-group per batch would still read a batch).
            return fa.work_item_per_row()
        if profile.profile == "gpu":
            # The tensor-core kernel builds on this module's `_Attention`.
            from accy.passes.kernelization.mma_attention import Plan, mma_attention, plan

            how = plan(fa)
            return mma_attention(fa, how) if isinstance(how, Plan) else _GpuBlocks(fa).kernel()
        if fa.can_block():
            return _QueryBlocks(fa, kernel, plan).kernel()
        return fa.work_item_per_row()


def chunks(n: int, width: int) -> list[Chunk]:
    """n elements as `width`-lane pieces, then single elements."""
    full = n - n % width if width > 1 else 0
    return [(o, width) for o in range(0, full, width)] + [(o, 1) for o in range(full, n)]


Combine = type[arith.MaximumfOp] | type[arith.AddfOp]
"""The op of a running max or sum."""


def _combined(kb: KernelBuilder, op: Combine, values: Sequence[SSAValue]) -> SSAValue:
    """`values` combined by `op`, left to right."""
    return reduce(lambda a, b: kb.val(op(a, b)), values)


class _Attention:
    """The matched attention (q·kᵀ, score, softmax, ·v) and its kernels."""

    def __init__(
        self, kb: KernelBuilder, ops: list[Operation], aliases: dict[SSAValue, SSAValue], outputs: Sequence[SSAValue],
        match: AttentionMatch,
    ) -> None:
        self.kb, self.ops, self.aliases, self.outputs = kb, ops, aliases, list(outputs)
        self.producer = {r: op for op in ops for r in op.results}
        self.match = match
        self.qk, self.pv, self.score, self.causal = match.qk, match.pv, match.score, match.causal
        # Rows are [*batch, Sq].
        *rows, self.sk = accy.shape_of(self.qk.result)
        self.rows = tuple(rows)
        self.et = accy.elem_of(self.qk.result)
        # A masked score and the running max before any score: -inf, or
        # under `math = fast` the type's lowest finite value, since the fast
        # build (-cl-fast-relaxed-math: no infinities) may fold the kernels'
        # tests against -inf (PoCL did: wrong rows of a 9-key attention).
        self.lowest = -math.inf if kb.profile.math == "exact" else lowest(self.et)
        for out in self.outputs:
            if accy.shape_of(out) != accy.shape_of(self.pv.result):
                raise Decline(f"output {out.name_hint or out} does not have the attention result's shape")
        if read_elsewhere(self.outputs, ops, self.pv.result, aliases):
            raise Decline("the epilogue reads the attention's result at other coordinates than its own")
        self.batch_shape = list(self.rows[:-1])
        self.sq = self.rows[-1]
        lb, rb, lc, rc = (tuple(x) for x in self.qk.dims())
        self.q_dims = (lb, lc[0], self._free(self.qk.lhs, lb, lc))
        self.k_dims = (rb, rc[0], self._free(self.qk.rhs, rb, rc))
        pb, vb, _, vc = (tuple(x) for x in self.pv.dims())
        self.v_dims = (vb, vc[0], self._free(self.pv.rhs, vb, vc))
        self.d = accy.shape_of(self.qk.lhs)[lc[0]]
        self.dv = accy.shape_of(self.pv.rhs)[self.v_dims[2]]
        self.inputs = broadcast_accesses(kb, ops)

    def on(self, kb: KernelBuilder) -> _Attention:
        """The same attention built on `kb` (a staged kernel's builder)."""
        return _Attention(kb, self.ops, self.aliases, self.outputs, self.match)

    @staticmethod
    def _free(v: SSAValue, batch: Sequence[int], contract: Sequence[int]) -> int:
        (free,) = [d for d in range(len(accy.shape_of(v))) if d not in (*batch, *contract)]
        return free

    # -- evaluation --------------------------------------------------------------------

    def expr(self, width: int) -> Expr:
        kb = self.kb
        e = Expr(kb, self.ops, width)
        for v, acc in self.inputs.items():
            e.pin(v, lambda coords, acc=acc: kb.load(acc, coords, width))
        pin_aliases(e, self.aliases)
        return e

    def coords(self, dims: tuple[Sequence[int], int, int], bc: list[SSAValue], row: SSAValue, col: SSAValue) -> list[SSAValue]:
        """Operand coordinates: batch, the contracted index `row`, the free index `col`."""
        batch, contract, free = dims
        coords: list[Any] = [None] * (len(batch) + 2)
        for d, c in zip(batch, bc, strict=True):
            coords[d] = c
        coords[contract], coords[free] = row, col
        return coords

    def operand_at(
        self, value: SSAValue, dims: tuple[Sequence[int], int, int], bc: list[SSAValue], contract: SSAValue,
        free: SSAValue,
    ) -> SSAValue:
        """One element of `value`, an operand of q·kᵀ or p·v (`dims`: its
        `q_dims`, `k_dims` or `v_dims`) or what it is computed from along the
        same dims: at batch `bc`, contracted index `contract`, free index `free`."""
        return self.expr(1).at(value, self.coords(dims, bc, contract, free))

    def q_at(self, bc: list[SSAValue], i: SSAValue, d0: SSAValue | int, w: int) -> SSAValue:
        return self.expr(w).at(self.qk.lhs, self.coords(self.q_dims, bc, self.kb.as_index(d0), i))

    def k_at(self, bc: list[SSAValue], j: SSAValue, d0: SSAValue | int, w: int) -> SSAValue:
        return self.expr(w).at(self.qk.rhs, self.coords(self.k_dims, bc, self.kb.as_index(d0), j))

    def v_at(self, bc: list[SSAValue], j: SSAValue, d0: SSAValue | int, w: int) -> SSAValue:
        return self.expr(w).at(self.pv.rhs, self.coords(self.v_dims, bc, j, self.kb.as_index(d0)))

    def score_at(self, bc: list[SSAValue], i: SSAValue, j: SSAValue, dot: SSAValue, w: int) -> SSAValue:
        """The score's elementwise work on `dot` (q·k, `w` lanes) at query i, key j."""
        e = self.expr(w)
        e.pin(self.qk.result, lambda _: dot)
        return e.at(self.score, [*bc, i, j])

    def finish(self, coords: list[SSAValue], value: SSAValue, w: int) -> None:
        """`value` (`w` lanes of the attention's result at `coords`) through
        the epilogue into every output."""
        epilogue = self.expr(w)
        epilogue.pin(self.pv.result, lambda _: value)
        epilogue.store(self.outputs, coords)

    def finish_guarded(
        self, bc: list[SSAValue], row: SSAValue, col: SSAValue, value: SSAValue, rows_past: bool, cols_past: bool
    ) -> None:
        """`finish` of the scalar `value` of output (row, col), guarded by
        row < Sq where `rows_past` (a block may reach past the queries) and
        by col < Dv where `cols_past`."""
        kb = self.kb
        inside = ([kb.lt(row, self.sq)] if rows_past else []) + ([kb.lt(col, self.dv)] if cols_past else [])

        def put() -> list[SSAValue]:
            self.finish([*bc, row, col], value, 1)
            return []

        if inside:
            kb.if_(inside[0] if len(inside) == 1 else kb.val(arith.AndIOp(*inside)), put)
        else:
            put()

    def _lanes(self, values: Sequence[SSAValue], last: Sequence[int], n: int) -> int:
        """W when `values` can be computed W lanes at a time along their last
        dim and that dim is the one walked (`last` holds, per value, the dim
        walked); otherwise 1."""
        w = self.kb.profile.vector_width
        leaves = {*self.inputs, self.qk.result, self.pv.result}
        _, ok = walk_cone(self.kb, self.producer, self.aliases, values, set(), leaves)
        in_last = all(d == len(accy.shape_of(v)) - 1 for v, d in zip(values, last, strict=True))
        return w if w > 1 and ok and in_last and n >= w else 1

    def widths(self) -> tuple[int, int]:
        """Lane widths of the D chunks and the Dv chunks of the per-row kernel."""
        out_dims = [len(accy.shape_of(o)) - 1 for o in self.outputs]
        wd = self._lanes([self.qk.lhs, self.qk.rhs], [self.q_dims[1], self.k_dims[1]], self.d)
        wv = self._lanes([self.pv.rhs, *self.outputs], [self.v_dims[2], *out_dims], self.dv)
        return wd, wv

    # -- the online softmax ----------------------------------------------------------------

    def splat(self, x: SSAValue, w: int) -> SSAValue:
        """`x` in each of `w` lanes (`x` itself for one)."""
        return x if w == 1 else self.kb.val(vector.BroadcastOp(x, VectorType(x.type, [w])))

    def fma(self, a: SSAValue, b: SSAValue, c: SSAValue) -> SSAValue:
        return self.kb.val(mathd.FmaOp(a, b, c))

    def init(self, dv_chunks: list[Chunk]) -> list[SSAValue]:
        kb, et = self.kb, self.et
        accs = [kb.const(0.0, VectorType(et, [w]) if w > 1 else et) for _, w in dv_chunks]
        return [kb.const(self.lowest, et), kb.const(0.0, et), *accs]

    def rescale(self, m: SSAValue, m_new: SSAValue) -> tuple[SSAValue, SSAValue]:
        """(shift, corr) of a row whose running max goes from m to m_new: its
        new exponentials are exp(s - shift), what it summed so far is scaled
        by corr = exp(m - shift). The kernel holds the constants -inf and 0
        already."""
        kb, et = self.kb, self.et
        ninf, zero = kb.const(self.lowest, et), kb.const(0.0, et)
        # While every score so far is -inf, shift by 0 (exp(-inf - -inf) is NaN).
        shift = kb.select(cmp(kb, "eq", m_new, ninf, False), zero, m_new)
        return shift, kb.val(mathd.ExpOp(kb.val(arith.SubfOp(m, shift))))

    def update(
        self, bc: list[SSAValue], i: SSAValue, j: SSAValue, q: list[tuple[Chunk, SSAValue]],
        dv_chunks: list[Chunk], carried: list[SSAValue],
        k_at: Callable[[int, int], SSAValue], v_at: Callable[[int, int], SSAValue],
    ) -> list[SSAValue]:
        """One key j of the online softmax (module docstring)."""
        kb, et = self.kb, self.et
        m, l, accs = carried[0], carried[1], carried[2:]
        lanes: SSAValue | None = None
        dot: SSAValue | None = None
        for (d0, w), qv in q:
            kv = k_at(d0, w)
            if w > 1:
                lanes = kb.val(arith.MulfOp(qv, kv)) if lanes is None else self.fma(qv, kv, lanes)
            else:
                dot = kb.val(arith.MulfOp(qv, kv)) if dot is None else self.fma(qv, kv, dot)
        if lanes is not None:
            total = vector_total(kb, "sum", lanes)
            dot = total if dot is None else kb.val(arith.AddfOp(total, dot))
        if dot is None:  # D = 0: q·k sums nothing
            dot = kb.const(0.0, et)
        s = self.score_at(bc, i, j, dot, 1)
        m_new = kb.val(arith.MaximumfOp(m, s))
        shift, corr = self.rescale(m, m_new)
        p = kb.val(mathd.ExpOp(kb.val(arith.SubfOp(s, shift))))
        out = [m_new, self.fma(l, corr, p)]
        for (d0, w), acc in zip(dv_chunks, accs, strict=True):
            scaled = kb.val(arith.MulfOp(acc, self.splat(corr, w)))
            out.append(self.fma(self.splat(p, w), v_at(d0, w), scaled))
        return out

    def inverse(self, l: SSAValue) -> SSAValue:
        """1 / l, the factor of a row's acc. Over no keys (Sk = 0) the result
        is 0, as `q·kᵀ -> softmax -> ·v` sums nothing (the op contract): acc
        and l are both 0 there, and 0 · 1/0 would be NaN."""
        kb = self.kb
        if self.sk == 0:
            return kb.const(0.0, self.et)
        return kb.val(arith.DivfOp(kb.const(1.0, self.et), l))

    def store(self, bc: list[SSAValue], i: SSAValue, dv_chunks: list[Chunk], carried: list[SSAValue]) -> None:
        """acc / l through the epilogue into every output."""
        kb = self.kb
        inv = self.inverse(carried[1])
        for (d0, w), acc in zip(dv_chunks, carried[2:], strict=True):
            value = kb.val(arith.MulfOp(acc, self.splat(inv, w)))
            self.finish([*bc, i, kb.idx(d0)], value, w)

    def key_end(self, i: SSAValue) -> SSAValue:
        """Keys j < key_end are visited: all, or j <= i when causal."""
        return self.kb.min(self.sk, self.kb.add(i, 1)) if self.causal else self.kb.idx(self.sk)

    # -- CPU: one work-item per query row ----------------------------------------------------

    def work_item_per_row(self) -> LoweredKernel:
        """One work-item per (batch, query row) (module docstring)."""
        wd, wv = self.widths()
        d_chunks, dv_chunks = chunks(self.d, wd), chunks(self.dv, wv)
        return work_item_per(self.kb, numel(self.rows), partial(self._query_row, d_chunks, dv_chunks))

    def _query_row(self, d_chunks: list[Chunk], dv_chunks: list[Chunk], gid: SSAValue) -> None:
        """Emits query row gid: its q chunks loaded, the online softmax over
        the keys it sees, the row stored."""
        kb = self.kb
        row = kb.delinearize(gid, self.rows)
        bc, i = row[:-1], row[-1]
        q = [((d0, w), self.q_at(bc, i, d0, w)) for d0, w in d_chunks]
        key = partial(self._key, bc, i, q, dv_chunks)
        final = kb.for_(0, self.key_end(i), 1, self.init(dv_chunks), key)
        self.store(bc, i, dv_chunks, final)

    def _key(
        self, bc: list[SSAValue], i: SSAValue, q: list[tuple[Chunk, SSAValue]], dv_chunks: list[Chunk], j: SSAValue,
        carried: list[SSAValue],
    ) -> list[SSAValue]:
        """Key j of query row i, k and v read straight from the operands."""
        return self.update(bc, i, j, q, dv_chunks, carried, partial(self.k_at, bc, j), partial(self.v_at, bc, j))

    # -- CPU: a block of query rows per work-item over packed operands ------------------------

    def can_block(self) -> bool:
        """Whether the CPU blocked kernel applies: float32/64 (key indices are
        compared as floats, exact there) with vectors, and enough work."""
        return (
            isinstance(self.et, Float32Type | Float64Type)
            and self.kb.profile.vector_width > 1
            and self.sq > 1
            and self.sq * self.sk * (self.d + self.dv) >= BLOCK_MIN_WORK
        )

    def vector_scores(self, key_tile: int) -> bool:
        """Whether the score's elementwise work runs W keys at a time: every
        op of it computes W lanes, and it reads no tensor past Sk (it reads
        none, or the keys are whole tiles)."""
        tables = {r for op in self.ops if isinstance(op, accy.ConstantOp) and splat_value(op.value) is None
                  for r in op.results}
        reads = {*self.kb.access, *self.inputs, *self.kb.view_leaves, *tables}
        read, ok = walk_cone(self.kb, self.producer, self.aliases, [self.score], reads, {self.qk.result})
        return ok and (self.sk % key_tile == 0 or not read)

    def scores(
        self, bc: list[SSAValue], i: SSAValue, j0: SSAValue, dots: list[SSAValue], spill: SSAValue, at: int, kt: int,
        vectors: bool,
    ) -> list[SSAValue]:
        """The score's elementwise work on query row i's dots with keys j0.. (W
        lanes a vector): W keys at a time, or lane by lane through the private
        array `spill` (from `at`), keys past Sk read at Sk-1 (masked later)."""
        kb, w = self.kb, self.kb.profile.vector_width
        if vectors:
            return [self.score_at(bc, i, kb.add(j0, v * w), dot, w) for v, dot in enumerate(dots)]
        for v, dot in enumerate(dots):
            kb.op(vector.StoreOp(dot, spill, [kb.idx(at + v * w)]))
        kb.for_(0, kt, 1, [], partial(self._score_lane, bc, i, j0, spill, at))
        vt = VectorType(buffer_element_type(self.et), [w])
        return [kb.val(vector.LoadOp(spill, [kb.idx(at + v * w)], vt)) for v in range(len(dots))]

    def _score_lane(
        self, bc: list[SSAValue], i: SSAValue, j0: SSAValue, spill: SSAValue, at: int, jj: SSAValue, _: list[SSAValue]
    ) -> list[SSAValue]:
        """The score of key j0 + jj, its dot read from and its score written to `spill`."""
        kb = self.kb
        slot = kb.add(jj, at)
        dot = kb.val(memref.LoadOp.get(spill, [slot]))
        j = kb.min(kb.add(j0, jj), self.sk - 1)
        kb.op(memref.StoreOp.get(self.score_at(bc, i, j, dot, 1), spill, [slot]))
        return []

    def store_row(
        self, bc: list[SSAValue], i: SSAValue, l: SSAValue, accs: list[SSAValue], spill: SSAValue, guard: bool
    ) -> None:
        """acc / l of query row i (Dv padded to whole vectors) through the
        epilogue: W lanes at a time when the outputs allow, else lane by lane
        through the private array `spill`; nothing past Sq when `guard`."""
        kb, w = self.kb, self.kb.profile.vector_width
        out_dims = [len(accy.shape_of(o)) - 1 for o in self.outputs]
        lanes = w if self.dv % w == 0 and self._lanes(self.outputs, out_dims, self.dv) == w else 1
        store = partial(self._store_row_values, bc, i, l, accs, spill, lanes)
        if guard:
            kb.if_(kb.lt(i, self.sq), store)
        else:
            store()

    def _store_row_values(
        self, bc: list[SSAValue], i: SSAValue, l: SSAValue, accs: list[SSAValue], spill: SSAValue, lanes: int
    ) -> list[SSAValue]:
        """Emits `store_row`'s stores, `lanes` at a time."""
        kb, w = self.kb, self.kb.profile.vector_width
        inv = self.splat(self.inverse(l), w)
        values = [kb.val(arith.MulfOp(a, inv)) for a in accs]
        if lanes == w:
            for c, value in enumerate(values):
                self.finish([*bc, i, kb.idx(c * w)], value, w)
            return []
        for c, value in enumerate(values):
            kb.op(vector.StoreOp(value, spill, [kb.idx(c * w)]))
        kb.for_(0, self.dv, 1, [], partial(self._store_lane, bc, i, spill))
        return []

    def _store_lane(
        self, bc: list[SSAValue], i: SSAValue, spill: SSAValue, d: SSAValue, _: list[SSAValue]
    ) -> list[SSAValue]:
        """Column d of query row i, read from `spill`, through the epilogue."""
        x = self.kb.val(memref.LoadOp.get(spill, [d]))
        self.finish([*bc, i, d], x, 1)
        return []

    # -- GPU: the sizes of the tiles ---------------------------------------------------------

    def gpu_tiles(self) -> tuple[int, int, int, int, int]:
        """(TY, RQ, RK, Dv padded, W) of the GPU kernel: TY x 16 work-items,
        each RQ query rows by RK keys of a tile; query_rows and key_tile at
        most, fewer rows while the queries are few, tiles of at most
        GPU_MANY_BLOCKS_KEY_TILE keys for GPU_MANY_BLOCKS work-groups or
        more, then fewer while the tiles do not fit in local memory. W is the
        elements a local load of the register tiles takes: `gpu_lanes` where
        the tiles so fitted are whole vectors of it (RQ, RK and Dv padded /
        TX), else 1, the tiles fitted again for the scalar layout."""
        lanes = self.gpu_lanes()
        if lanes > 1:
            ty, rq, rk, dvp = self._gpu_fit(lanes)
            if rq % lanes == 0 and rk % lanes == 0:
                return ty, rq, rk, dvp, lanes
        return (*self._gpu_fit(1), 1)

    def _gpu_fit(self, lanes: int) -> tuple[int, int, int, int]:
        """(TY, RQ, RK, Dv padded) of `gpu_tiles` for the layout of `lanes`."""
        profile = self.kb.profile
        tx = min(GPU_KEY_THREADS, profile.max_work_group_size)
        rq = GPU_QUERY_ROWS
        ty = max(1, min(pow2_at_most(profile.query_rows) // rq, profile.max_work_group_size // tx))
        rk = max(1, pow2_at_most(profile.key_tile) // tx)
        while rq > 1 and ty * rq // 2 >= self.sq:
            rq //= 2
        while ty > 1 and ty * rq // 2 >= self.sq:
            ty //= 2
        while rk > 1 and tx * rk // 2 >= self.sk:
            rk //= 2
        blocks = -(-self.sq // (ty * rq)) * max(numel(self.batch_shape), 1)
        while rk > 1 and blocks >= GPU_MANY_BLOCKS and tx * rk > GPU_MANY_BLOCKS_KEY_TILE:
            rk //= 2
        dvp = -(-self.dv // (tx * lanes)) * tx * lanes  # whole vectors of a work-item's columns
        while self._gpu_local(tx, ty, rq, rk, dvp, lanes) > profile.local_mem_bytes:
            if rq > 1:
                rq //= 2
            elif rk > 1:
                rk //= 2
            elif ty > 1:
                ty //= 2
            else:
                raise Decline(f"a query row and a key of D = {self.d}, Dv = {self.dv} do not fit in local memory")
        return ty, rq, rk, dvp

    def _gpu_local(self, tx: int, ty: int, rq: int, rk: int, dvp: int, lanes: int) -> int:
        """Local memory bytes of the GPU kernel's tiles (`_GpuBlocks`) in the layout of `lanes`."""
        return sum(self.gpu_tile_elements(tx, ty * rq, tx * rk, dvp, lanes)) * element_bytes(buffer_element_type(self.et))

    def gpu_tile_elements(self, tx: int, bq: int, bk: int, dvp: int, lanes: int) -> tuple[int, int, int]:
        """Elements of the GPU kernel's three local tiles (q, keys or values,
        p or the rows' shares) for blocks of `bq` rows and tiles of `bk`
        keys: rows padded by 1 element (scalar loads), or `[d][row]` and
        `[key][row]` rows padded by one vector (`lanes` > 1)."""
        d, shares = self.d, bq * (tx + 1)
        if lanes > 1:
            return d * (bq + lanes), max(d * (bk + lanes), bk * dvp), max(bk * (bq + lanes), shares)
        return bq * (d + 1), max(bk * (d + 1), bk * dvp), max(bq * (bk + 1), shares)

    def gpu_lanes(self) -> int:
        """`GPU_LANES` where the target's `attention_lanes` asks for vector
        loads of the GPU kernel's tiles and they are f32, else 1."""
        lanes = self.kb.profile.attention_lanes
        return GPU_LANES if lanes == GPU_LANES and isinstance(buffer_element_type(self.et), Float32Type) else 1

    def value_or_zero(self, bc: list[SSAValue], j: SSAValue, c: SSAValue, dvp: int) -> SSAValue:
        """v at (key j, column c), 0 in the padding columns past Dv."""
        kb = self.kb
        if dvp == self.dv:
            return self.v_at(bc, j, c, 1)
        x = self.v_at(bc, j, kb.min(c, self.dv - 1), 1)
        return kb.select(kb.lt(c, self.dv), x, kb.const(0.0, self.et))


class _Block(NamedTuple):
    """What a work-item of `_QueryBlocks` knows of its block of query rows."""

    b: SSAValue  # the flat batch
    bc: list[SSAValue]  # the batch coordinates
    q0: SSAValue  # the first query row
    q_base: SSAValue  # the block's panel of packed q
    rows: list[SSAValue]  # its query rows, those past Sq at Sq-1
    limits: list[SSAValue]  # per row, the first masked key index as a float vector (when masked)


class _QueryBlocks:
    """The packed, register-tiled CPU kernel (module docstring): Qb query
    rows a work-item, tiles of KT keys, over q, kᵀ (with a row of key
    indices) and v packed by three launches before it. Building it builds
    the packing launches and the main kernel's arguments and arrays;
    `kernel` emits the work-items."""

    def __init__(self, fa: _Attention, kernel: OutlinedKernel, plan: BufferPlan) -> None:
        self.fa = fa
        kb, et = fa.kb, fa.et
        self.w = w = kb.profile.vector_width
        self.qb = qb = max(1, min(kb.profile.query_rows, fa.sq))
        self.kt = kt = w * max(1, kb.profile.key_tile // w)
        self.nk, self.nv = kt // w, -(-fa.dv // w)
        self.dvp = dvp = self.nv * w
        self.batches, self.q_blocks, self.k_tiles = max(numel(fa.batch_shape), 1), -(-fa.sq // qb), -(-fa.sk // kt)
        self.st = buffer_element_type(et)
        self.vt = VectorType(self.st, [w])
        pq = Scratch(et, self.batches * self.q_blocks * fa.d * qb)
        pk = Scratch(et, self.batches * self.k_tiles * (fa.d + 1) * kt)
        pv = Scratch(et, self.batches * self.k_tiles * kt * dvp)
        self.vec_v = w if fa.dv % w == 0 and fa._lanes([fa.pv.rhs], [fa.v_dims[2]], fa.dv) == w else 1
        pack = partial(stage_kernel, kernel, plan, kb.profile)
        self.packs = (
            pack("pack_q", pq, self.batches * self.q_blocks * fa.d, partial(self._pack, self._pack_q)),
            pack("pack_k", pk, self.batches * self.k_tiles * (fa.d + 1), partial(self._pack, self._pack_k)),
            pack("pack_v", pv, self.batches * self.k_tiles * kt, partial(self._pack, self._pack_v)),
        )
        self.aq, self.ak, self.av = kb.scratch_argument(pq), kb.scratch_argument(pk), kb.scratch_argument(pv)
        # The block's p (Qb x KT), and the spill of one output row (Dv padded)
        # lane by lane in `store_row`: whichever is longer.
        self.probs = kb.local_array(max(qb * kt, dvp), self.st, workgroup=False)
        self.vector_scores = fa.vector_scores(kt)
        self.masked = fa.causal or fa.sk % kt != 0
        self.ninf, self.zero = kb.const(fa.lowest, et), kb.const(0.0, et)

    def kernel(self) -> LoweredKernel:
        """The main kernel, a work-item per (batch, block of query rows),
        after the three packing launches."""
        main = work_item_per(self.fa.kb, self.batches * self.q_blocks, self._work_item)
        pack_q, pack_k, pack_v = self.packs
        pack_k.before, pack_v.before, main.before = pack_q, pack_k, pack_v
        return main

    # -- the packing launches ----------------------------------------------------------------

    def _pack(
        self, fill: Callable[[_Attention, KernelBuilder, SSAValue, SSAValue], None], sk: KernelBuilder, out: SSAValue,
        gid: SSAValue,
    ) -> None:
        """A packing work-item on the staged kernel's builder `sk`."""
        fill(self.fa.on(sk), sk, out, gid)

    def _pack_q(self, fa: _Attention, sk: KernelBuilder, out: SSAValue, gid: SSAValue) -> None:
        """Emits q's element d of the Qb rows of one block (`pq[b][qt][d][r]`)."""
        b, qt, d = sk.delinearize(gid, [self.batches, self.q_blocks, fa.d])
        bc = sk.delinearize(b, fa.batch_shape)
        for r in range(self.qb):
            i = sk.min(sk.add(sk.mul(qt, self.qb), r), fa.sq - 1)
            sk.op(memref.StoreOp.get(fa.q_at(bc, i, d, 1), out, [sk.add(sk.mul(gid, self.qb), r)]))

    def _pack_k(self, fa: _Attention, sk: KernelBuilder, out: SSAValue, gid: SSAValue) -> None:
        """Emits row d of kᵀ for the KT keys of one tile (`pk[b][t][d][j]`),
        or for d = D the keys' indices as floats."""
        b, t, d = sk.delinearize(gid, [self.batches, self.k_tiles, fa.d + 1])
        bc = sk.delinearize(b, fa.batch_shape)
        keys = partial(self._pack_keys, fa, sk, out, gid, bc, t, d)
        sk.if_(sk.lt(d, fa.d), keys, partial(self._pack_indices, sk, out, gid, t))

    def _pack_keys(
        self, fa: _Attention, sk: KernelBuilder, out: SSAValue, gid: SSAValue, bc: list[SSAValue], t: SSAValue,
        d: SSAValue,
    ) -> list[SSAValue]:
        """Emits element d of the tile's KT keys, keys past Sk repeating the last."""
        for lane in range(self.kt):
            j = sk.min(sk.add(sk.mul(t, self.kt), lane), fa.sk - 1)
            sk.op(memref.StoreOp.get(fa.k_at(bc, j, d, 1), out, [sk.add(sk.mul(gid, self.kt), lane)]))
        return []

    def _pack_indices(self, sk: KernelBuilder, out: SSAValue, gid: SSAValue, t: SSAValue) -> list[SSAValue]:
        """Emits the index row: each of the tile's KT keys' index, as a float."""
        first = sk.val(arith.IndexCastOp(sk.mul(t, self.kt), i32))
        for lane in range(self.kt):
            j = sk.val(arith.AddiOp(first, sk.const(lane, i32)))
            sk.op(memref.StoreOp.get(sk.val(arith.SIToFPOp(j, self.st)), out, [sk.add(sk.mul(gid, self.kt), lane)]))
        return []

    def _pack_v(self, fa: _Attention, sk: KernelBuilder, out: SSAValue, gid: SSAValue) -> None:
        """Emits v's row of key j, Dv padded with zeros to whole vectors
        (`pv[b][j][c]`), `vec_v` lanes at a time."""
        b, j = sk.delinearize(gid, [self.batches, self.k_tiles * self.kt])
        bc = sk.delinearize(b, fa.batch_shape)
        j = sk.min(j, fa.sk - 1)
        for c in range(0, self.dvp, self.vec_v):
            at = sk.add(sk.mul(gid, self.dvp), c)
            if c >= fa.dv:
                sk.op(memref.StoreOp.get(sk.const(0.0, self.st), out, [at]))
            elif self.vec_v > 1:
                sk.op(vector.StoreOp(fa.v_at(bc, j, c, self.vec_v), out, [at]))
            else:
                sk.op(memref.StoreOp.get(fa.v_at(bc, j, c, 1), out, [at]))

    # -- the blocks --------------------------------------------------------------------------

    def _load_vec(self, buf: SSAValue, at: SSAValue) -> SSAValue:
        return self.fa.kb.val(vector.LoadOp(buf, [at], self.vt))

    def _splat_load(self, buf: SSAValue, at: SSAValue) -> SSAValue:
        return self.fa.splat(self.fa.kb.val(memref.LoadOp.get(buf, [at])), self.w)

    def _as_float(self, i: SSAValue) -> SSAValue:
        kb = self.fa.kb
        return kb.val(arith.SIToFPOp(kb.val(arith.IndexCastOp(i, i32)), self.st))

    def _work_item(self, gid: SSAValue) -> None:
        """Emits one block: the loop over the key tiles it sees (those up to
        its last query when causal), then each row stored."""
        fa, kb, qb = self.fa, self.fa.kb, self.qb
        b, qt = kb.delinearize(gid, [self.batches, self.q_blocks])
        bc = kb.delinearize(b, fa.batch_shape)
        q0 = kb.mul(qt, qb)
        q_base = kb.mul(gid, fa.d * qb)
        rows = [kb.min(kb.add(q0, r), fa.sq - 1) for r in range(qb)]
        limits = [fa.splat(self._as_float(fa.key_end(i)), self.w) for i in rows] if self.masked else []
        block = _Block(b, bc, q0, q_base, rows, limits)
        seen = kb.min(fa.sk, kb.min(kb.add(q0, qb), fa.sq)) if fa.causal else kb.idx(fa.sk)
        tiles = kb.div(kb.add(seen, self.kt - 1), self.kt) if fa.causal else kb.idx(self.k_tiles)
        init = [self.ninf, self.zero] * qb + [kb.const(0.0, self.vt)] * (qb * self.nv)
        final = kb.for_(0, tiles, 1, init, partial(self._tile, block))
        for r in range(qb):
            accs = final[2 * qb + r * self.nv:2 * qb + (r + 1) * self.nv]
            fa.store_row(bc, kb.add(q0, r), final[2 * r + 1], accs, self.probs, guard=fa.sq % qb != 0)

    def _tile(self, block: _Block, t: SSAValue, carried: list[SSAValue]) -> list[SSAValue]:
        """Emits key tile t: the Qb x KT scores (`_qk_step`), each row's
        online softmax step (`_softmax_row`), then p·v (`_pv_step`)."""
        fa, kb, qb, nk, kt = self.fa, self.fa.kb, self.qb, self.nk, self.kt
        k_base = kb.mul(kb.add(kb.mul(block.b, self.k_tiles), t), (fa.d + 1) * kt)
        v_base = kb.mul(kb.add(kb.mul(block.b, self.k_tiles), t), kt * self.dvp)
        j0 = kb.mul(t, kt)
        scores = kb.for_(0, fa.d, 1, [kb.const(0.0, self.vt)] * (qb * nk), partial(self._qk_step, block.q_base, k_base))
        index: list[SSAValue] = []  # the keys' indices as floats, to mask by
        if self.masked:
            index = [self._load_vec(self.ak, kb.add(k_base, fa.d * kt + v * self.w)) for v in range(nk)]
        out: list[SSAValue] = []
        accs: list[SSAValue] = []
        for r, i in enumerate(block.rows):
            row_out, row_accs = self._softmax_row(block, r, i, j0, scores[r * nk:(r + 1) * nk], index, carried)
            out += row_out
            accs += row_accs
        return out + kb.for_(0, kt, 1, accs, partial(self._pv_step, v_base))

    def _qk_step(self, q_base: SSAValue, k_base: SSAValue, d: SSAValue, s: list[SSAValue]) -> list[SSAValue]:
        """One d of the scores: NK kᵀ vectors (W keys each) times Qb broadcast q scalars."""
        fa, kb, w = self.fa, self.fa.kb, self.w
        ks = [self._load_vec(self.ak, kb.add(k_base, kb.add(kb.mul(d, self.kt), v * w))) for v in range(self.nk)]
        qrow = kb.add(q_base, kb.mul(d, self.qb))
        qs = [self._splat_load(self.aq, kb.add(qrow, r)) for r in range(self.qb)]
        return [fa.fma(qs[r], ks[v], s[r * self.nk + v]) for r in range(self.qb) for v in range(self.nk)]

    def _softmax_row(
        self, block: _Block, r: int, i: SSAValue, j0: SSAValue, dots: list[SSAValue], index: list[SSAValue],
        carried: list[SSAValue],
    ) -> tuple[list[SSAValue], list[SSAValue]]:
        """Row r's step over the tile: its scores (keys past Sk and, causal,
        past the query set to -inf by the index row), the new max and sum,
        its p stored to `probs`; returns (m, l) and its accumulators
        rescaled."""
        fa, kb, w, qb, nv = self.fa, self.fa.kb, self.w, self.qb, self.nv
        m, l = carried[2 * r], carried[2 * r + 1]
        s = fa.scores(block.bc, i, j0, dots, self.probs, r * self.kt, self.kt, self.vector_scores)
        if self.masked:
            s = [kb.select(cmp(kb, "ge", index[v], block.limits[r], False), fa.splat(self.ninf, w), s[v])
                 for v in range(self.nk)]
        m_new = kb.val(arith.MaximumfOp(m, vector_total(kb, "max", _combined(kb, arith.MaximumfOp, s))))
        shift, corr = fa.rescale(m, m_new)
        p = [kb.val(mathd.ExpOp(kb.val(arith.SubfOp(x, fa.splat(shift, w))))) for x in s]
        total = _combined(kb, arith.AddfOp, p)
        out = [m_new, fa.fma(l, corr, vector_total(kb, "sum", total))]
        for v in range(self.nk):
            kb.op(vector.StoreOp(p[v], self.probs, [kb.idx(r * self.kt + v * w)]))
        scale = fa.splat(corr, w)
        return out, [kb.val(arith.MulfOp(a, scale)) for a in carried[2 * qb + r * nv:2 * qb + (r + 1) * nv]]

    def _pv_step(self, v_base: SSAValue, jj: SSAValue, acc: list[SSAValue]) -> list[SSAValue]:
        """One key of p·v: a v row (NV vectors) times Qb broadcast p."""
        fa, kb, nv = self.fa, self.fa.kb, self.nv
        row = kb.add(v_base, kb.mul(jj, self.dvp))
        vs = [self._load_vec(self.av, kb.add(row, c * self.w)) for c in range(nv)]
        ps = [self._splat_load(self.probs, kb.add(jj, r * self.kt)) for r in range(self.qb)]
        return [fa.fma(ps[r], vs[c], acc[r * nv + c]) for r in range(self.qb) for c in range(nv)]


class _GpuBlocks:
    """A work-group of TY x TX work-items per block of Bq = TY·RQ query rows
    of one batch. Work-item (tx, ty) owns query rows ty·RQ + i and, per
    tile of Bk = TX·RK keys, keys tx + TX·j (and output columns tx +
    TX·c): the Bq x D block of q is staged once, then each tile stages
    the keys (`[key][D+1]`, padded so rows fall in distinct banks), runs
    an RQ x RK register micro-kernel for the scores, the score's
    elementwise work and the masks per score, shares each row's partial
    maxima through local memory for the row's max, rescales, writes p
    (`[row][Bk+1]`) and stages the values over the keys, and runs an RQ x
    Dv/TX micro-kernel for p·v. Each work-item sums its share of a row's
    exponentials; the shares are added once at the end. Rows past Sq
    compute row Sq-1 and store nothing; keys past Sk read key Sk-1 and
    are masked to -inf with those past the query (causal), whose tiles
    past the block's last query are skipped.

    With `attention_lanes` = 4 (`_Attention.gpu_lanes`; the tiles whole
    vectors of 4: RQ, RK and Dv/TX multiples of it) the register tiles read
    local memory a 16-byte vector at a time, as the SIMT dot's do: q staged
    `[d][Bq+4]` and the keys `[d][Bk+4]` (a work-item's rows, and its keys
    (TX·j' + tx)·4 + (0..3), consecutive), p `[key][Bq+4]`, and a
    work-item's output columns (TX·c' + tx)·4 + (0..3); a warp's vector
    loads then cover 128 consecutive bytes (or broadcast), so each is one
    pass of the local memory, against one a scalar load.

    Building it emits the kernel's preamble (local arrays, ids, the
    block's rows); `kernel` emits the rest."""

    def __init__(self, fa: _Attention) -> None:
        self.fa = fa
        kb, et = fa.kb, fa.et
        st = buffer_element_type(et)
        self.tx_n = tx_n = min(GPU_KEY_THREADS, kb.profile.max_work_group_size)
        self.ty_n, self.rq, self.rk, self.dvp, self.w = fa.gpu_tiles()
        self.bq, self.bk, self.cv = self.ty_n * self.rq, tx_n * self.rk, self.dvp // tx_n
        bq, bk = self.bq, self.bk
        self.threads = tx_n * self.ty_n
        self.groups = -(-fa.sq // bq)
        # With vectors, rows of whole vectors (one of padding), starting aligned.
        self.q_row, self.k_row, self.p_row = bq + self.w, bk + self.w, bq + self.w
        align = self.w * element_bytes(st) if self.w > 1 else None
        q, kv, shared = fa.gpu_tile_elements(tx_n, bq, bk, self.dvp, self.w)
        self.q_tile = kb.local_array(q, st, workgroup=True, alignment=align)
        self.kv_tile = kb.local_array(kv, st, workgroup=True, alignment=align)
        self.shared = kb.local_array(shared, st, workgroup=True, alignment=align)
        self.tx, self.ty = kb.local_id("x"), kb.local_id("y")
        self.flat = kb.add(kb.mul(self.ty, tx_n), self.tx)
        self.q0 = kb.mul(kb.group_id("x"), bq)
        self.bc = kb.delinearize(kb.group_id("y"), fa.batch_shape)
        self.mine = [kb.add(kb.mul(self.ty, self.rq), i) for i in range(self.rq)]  # rows of the block
        self.rows = [kb.min(kb.add(self.q0, r), fa.sq - 1) for r in self.mine]
        self.ninf, self.zero = kb.const(fa.lowest, et), kb.const(0.0, et)
        self.masked = fa.causal or fa.sk % bk != 0

    def kernel(self) -> LoweredKernel:
        """Emits q staged, the loop over the key tiles the block sees, and the
        rows stored; the finished kernel."""
        fa, kb, rq = self.fa, self.fa.kb, self.rq
        self._stage(self.bq, fa.d, self._put_q)
        keys_end = kb.min(fa.sk, kb.min(kb.add(self.q0, self.bq), fa.sq)) if fa.causal else kb.idx(fa.sk)
        limits = [fa.key_end(i) for i in self.rows]
        init = [self.ninf, self.zero] * rq + [self.zero] * (rq * self.cv)
        final = kb.for_(0, keys_end, self.bk, init, partial(self._tile, limits))
        self._store_rows(final)
        grid = (self.groups, max(numel(fa.batch_shape), 1), 1)
        return kb.lowered(grid, (self.tx_n, self.ty_n, 1), states_block=True)

    # -- local memory ------------------------------------------------------------------------

    def _load(self, buf: SSAValue, at: SSAValue) -> SSAValue:
        return self.fa.kb.val(memref.LoadOp.get(buf, [at]))

    def _store(self, x: SSAValue, buf: SSAValue, at: SSAValue) -> None:
        self.fa.kb.op(memref.StoreOp.get(x, buf, [at]))

    def _stage(self, count: int, cols: int, put: Callable[[SSAValue, SSAValue], None]) -> None:
        """Emits `put(row, col)` for each of count x cols elements, consecutive
        work-items on consecutive columns."""
        total = count * cols
        self.fa.kb.for_(0, -(-total // self.threads), 1, [], partial(self._stage_step, total, cols, put))

    def _stage_step(
        self, total: int, cols: int, put: Callable[[SSAValue, SSAValue], None], e: SSAValue, _: list[SSAValue]
    ) -> list[SSAValue]:
        """Emits this work-item's e-th element of `_stage` (guarded past the
        last when the work-items do not divide them)."""
        kb = self.fa.kb
        slot = kb.add(self.flat, kb.mul(e, self.threads))
        put_slot = partial(self._put_slot, cols, put, slot)
        if total % self.threads == 0:
            put_slot()
        else:
            kb.if_(kb.lt(slot, total), put_slot)
        return []

    def _put_slot(self, cols: int, put: Callable[[SSAValue, SSAValue], None], slot: SSAValue) -> list[SSAValue]:
        """`put` of element `slot` as (row, column)."""
        put(self.fa.kb.div(slot, cols), self.fa.kb.rem(slot, cols))
        return []

    def _put_q(self, r: SSAValue, d: SSAValue) -> None:
        """q's element d of block row r into `[row][D+1]` (vectors: `[d][Bq+4]`)."""
        fa, kb = self.fa, self.fa.kb
        self._store(fa.q_at(self.bc, kb.min(kb.add(self.q0, r), fa.sq - 1), d, 1), self.q_tile, self._q_at(r, d))

    def _q_at(self, r: SSAValue, d: SSAValue) -> SSAValue:
        kb = self.fa.kb
        return kb.add(kb.mul(d, self.q_row), r) if self.w > 1 else kb.add(kb.mul(r, self.fa.d + 1), d)

    def _put_key(self, k0: SSAValue, key: SSAValue, d: SSAValue) -> None:
        """k's element d of tile key `key` into `[key][D+1]` (vectors: `[d][Bk+4]`)."""
        fa, kb = self.fa, self.fa.kb
        self._store(fa.k_at(self.bc, kb.min(kb.add(k0, key), fa.sk - 1), d, 1), self.kv_tile, self._k_at(key, d))

    def _k_at(self, key: SSAValue, d: SSAValue) -> SSAValue:
        kb = self.fa.kb
        return kb.add(kb.mul(d, self.k_row), key) if self.w > 1 else kb.add(kb.mul(key, self.fa.d + 1), d)

    def _my(self, j: int) -> SSAValue:
        """This work-item's j-th key of a tile (or output column): tx + TX·j,
        with vectors (TX·(j / 4) + tx)·4 + j % 4."""
        kb, w = self.fa.kb, self.w
        if w == 1:
            return kb.add(self.tx, self.tx_n * j)
        return kb.add(kb.mul(kb.add(self.tx, self.tx_n * (j // w)), w), j % w)

    def _vector_load(self, buf: SSAValue, at: SSAValue) -> list[SSAValue]:
        """The `w` elements from `at` (a multiple of w) of a local tile, one aligned load."""
        kb, st = self.fa.kb, buffer_element_type(self.fa.et)
        vec = kb.val(aligned_access(vector.LoadOp(buf, [at], VectorType(st, [self.w])), self.w * element_bytes(st)))
        return [kb.val(vector.ExtractOp(vec, [lane], st)) for lane in range(self.w)]

    def _loads(self, buf: SSAValue, at: Callable[[int], SSAValue], count: int) -> list[SSAValue]:
        """Elements `at(0)` .. `at(count - 1)` of a local tile, each address
        built before its load; with vectors, runs of w consecutive ones one
        load each (`at` of each run's first)."""
        if self.w == 1:
            return [self._load(buf, at(i)) for i in range(count)]
        return [x for v in range(0, count, self.w) for x in self._vector_load(buf, at(v))]

    def _put_value(self, k0: SSAValue, key: SSAValue, c: SSAValue) -> None:
        """v's column c of tile key `key` (0 past Dv) into `[key][Dv padded]`."""
        fa, kb = self.fa, self.fa.kb
        self._store(fa.value_or_zero(self.bc, kb.min(kb.add(k0, key), fa.sk - 1), c, self.dvp), self.kv_tile,
                    kb.add(kb.mul(key, self.dvp), c))

    def _fold(self, base: SSAValue, combine: Combine) -> SSAValue:
        """The TX shares of a row in `shared` from `base`, combined."""
        step = partial(self._fold_step, base, combine)
        return self.fa.kb.for_(1, self.tx_n, 1, [self._load(self.shared, base)], step)[0]

    def _fold_step(
        self, base: SSAValue, combine: Combine, t: SSAValue, acc: list[SSAValue]
    ) -> list[SSAValue]:
        """Share t combined into the running `acc`."""
        return [self.fa.kb.val(combine(acc[0], self._load(self.shared, self.fa.kb.add(base, t))))]

    # -- a key tile --------------------------------------------------------------------------

    def _tile(self, limits: list[SSAValue], k0: SSAValue, carried: list[SSAValue]) -> list[SSAValue]:
        """Emits the key tile from k0: the keys staged, the scores, each row's
        max, the rescaled sums, p and the values staged, then p·v."""
        fa, kb = self.fa, self.fa.kb
        kb.barrier()  # q staged; the last tile's p and values read
        self._stage(self.bk, fa.d, partial(self._put_key, k0))
        kb.barrier()
        dots = kb.for_(0, fa.d, 1, [self.zero] * (self.rq * self.rk), self._qk_step)
        scores = self._scores(k0, dots, limits)
        self._row_maxima(scores)
        out, ps, scaled = self._rescale(carried, scores)
        kb.barrier()  # every row's max read, the keys used
        self._stage_p_and_values(k0, ps)
        return out + kb.for_(0, self.bk, 1, scaled, self._pv_step)

    def _qk_step(self, d: SSAValue, s: list[SSAValue]) -> list[SSAValue]:
        """One d of the RQ x RK scores, from local q and keys."""
        fa, rk = self.fa, self.rk
        qs = self._loads(self.q_tile, lambda i: self._q_at(self.mine[i], d), self.rq)
        ks = self._loads(self.kv_tile, lambda j: self._k_at(self._my(j), d), rk)
        return [fa.fma(qs[i], ks[j], s[i * rk + j]) for i in range(self.rq) for j in range(rk)]

    def _scores(self, k0: SSAValue, dots: list[SSAValue], limits: list[SSAValue]) -> list[SSAValue]:
        """The score's elementwise work on each dot, keys past Sk (read at
        Sk-1) and past the query (causal) masked to -inf."""
        fa, kb, rk = self.fa, self.fa.kb, self.rk
        keys = [kb.add(k0, self._my(j)) for j in range(rk)]
        scores = []
        for i in range(self.rq):
            for j in range(rk):
                sc = fa.score_at(self.bc, self.rows[i], kb.min(keys[j], fa.sk - 1), dots[i * rk + j], 1)
                scores.append(kb.select(kb.lt(keys[j], limits[i]), sc, self.ninf) if self.masked else sc)
        return scores

    def _row_maxima(self, scores: list[SSAValue]) -> None:
        """Each row's max of the tile into `shared` (column TX of the row):
        the work-items' partial maxima, then one work-item per row."""
        kb, rk = self.fa.kb, self.rk
        for i in range(self.rq):
            top = _combined(kb, arith.MaximumfOp, scores[i * rk:(i + 1) * rk])
            self._store(top, self.shared, kb.add(kb.mul(self.mine[i], self.tx_n + 1), self.tx))
        kb.barrier()
        for e in range(-(-self.bq // self.threads)):
            r = kb.add(self.flat, e * self.threads)
            kb.if_(kb.lt(r, self.bq), partial(self._row_max, r))
        kb.barrier()

    def _row_max(self, r: SSAValue) -> list[SSAValue]:
        """Block row r's partial maxima folded, into its column TX."""
        base = self.fa.kb.mul(r, self.tx_n + 1)
        self._store(self._fold(base, arith.MaximumfOp), self.shared, self.fa.kb.add(base, self.tx_n))
        return []

    def _rescale(
        self, carried: list[SSAValue], scores: list[SSAValue]
    ) -> tuple[list[SSAValue], list[list[SSAValue]], list[SSAValue]]:
        """Each row's online softmax step: (m, l) of every row, every row's p,
        and the output accumulators rescaled."""
        fa, kb, rq, rk, cv = self.fa, self.fa.kb, self.rq, self.rk, self.cv
        out, ps, scaled = [], [], []
        for i in range(rq):
            m, l = carried[2 * i], carried[2 * i + 1]
            top = self._load(self.shared, kb.add(kb.mul(self.mine[i], self.tx_n + 1), self.tx_n))
            m_new = kb.val(arith.MaximumfOp(m, top))
            shift, corr = fa.rescale(m, m_new)
            p = [kb.val(mathd.ExpOp(kb.val(arith.SubfOp(x, shift)))) for x in scores[i * rk:(i + 1) * rk]]
            out += [m_new, fa.fma(l, corr, _combined(kb, arith.AddfOp, p))]
            ps.append(p)
            scaled += [kb.val(arith.MulfOp(o, corr)) for o in carried[2 * rq + i * cv:2 * rq + (i + 1) * cv]]
        return out, ps, scaled

    def _stage_p_and_values(self, k0: SSAValue, ps: list[list[SSAValue]]) -> None:
        """Each work-item's p into `[row][Bk+1]`, the tile's values into
        `[key][Dv padded]`, then a barrier."""
        kb = self.fa.kb
        for i, p in enumerate(ps):
            for j in range(self.rk):
                self._store(p[j], self.shared, self._p_at(self.mine[i], self._my(j)))
        self._stage(self.bk, self.dvp, partial(self._put_value, k0))
        kb.barrier()

    def _p_at(self, r: SSAValue, key: SSAValue) -> SSAValue:
        """Where p of block row r and tile key `key` is: `[row][Bk+1]` (vectors: `[key][Bq+4]`)."""
        kb = self.fa.kb
        return kb.add(kb.mul(key, self.p_row), r) if self.w > 1 else kb.add(kb.mul(r, self.bk + 1), key)

    def _pv_step(self, kk: SSAValue, o: list[SSAValue]) -> list[SSAValue]:
        """One key of p·v: RQ local p times Dv/TX local values."""
        fa, kb, cv = self.fa, self.fa.kb, self.cv
        pk = self._loads(self.shared, lambda i: self._p_at(self.mine[i], kk), self.rq)
        vs = self._loads(self.kv_tile, lambda c: kb.add(kb.mul(kk, self.dvp), self._my(c)), cv)
        return [fa.fma(pk[i], vs[c], o[i * cv + c]) for i in range(self.rq) for c in range(cv)]

    # -- the rows stored -----------------------------------------------------------------------

    def _store_rows(self, final: list[SSAValue]) -> None:
        """Each row's sum (the work-items' shares added once), then acc / l of
        each of the work-item's columns through the epilogue, nothing past
        Sq and Dv."""
        fa, kb, rq, cv, tx_n = self.fa, self.fa.kb, self.rq, self.cv, self.tx_n
        kb.barrier()
        for i in range(rq):
            self._store(final[2 * i + 1], self.shared, kb.add(kb.mul(self.mine[i], tx_n + 1), self.tx))
        kb.barrier()
        for i in range(rq):
            inv = fa.inverse(self._fold(kb.mul(self.mine[i], tx_n + 1), arith.AddfOp))
            row = kb.add(self.q0, self.mine[i])
            for c in range(cv):
                value = kb.val(arith.MulfOp(final[2 * rq + i * cv + c], inv))
                past_dv = (c // self.w + 1) * tx_n * self.w > fa.dv  # some work-item's column c is past Dv
                fa.finish_guarded(self.bc, row, self._my(c), value, fa.sq % self.bq != 0, past_dv)
