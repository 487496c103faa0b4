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
batch: four launches. Three pack the operands (prologues evaluated, any
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
(`work_group_per_block`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

from xdsl.dialects import arith, memref, vector
from xdsl.dialects import math as mathd
from xdsl.dialects.builtin import Float32Type, Float64Type, VectorType, i32
from xdsl.ir import Operation, SSAValue

from accy.dialects import accy
from accy.dialects.dense import splat_value
from accy.dialects.host import buffer_element_type
from accy.dialects.target import TargetProfile
from accy.dialects.types import element_bytes, numel
from accy.passes.analyses.attention import AttentionMatch, NoMatch, match_attention
from accy.passes.analyses.bufferization import BufferPlan
from accy.passes.analyses.outlining import OutlinedKernel
from accy.passes.analyses.reads import read_elsewhere
from accy.passes.analyses.schedule import AttentionFacts
from accy.passes.kernelization.combining import vector_total
from accy.passes.kernelization.evaluate import Expr
from accy.passes.kernelization.kernel_builder import KernelBuilder, cmp
from accy.passes.kernelization.launch import stage_kernel, work_item_per
from accy.passes.kernelization.lowered import Decline, LoweredKernel, Scratch
from accy.passes.kernelization.row_values import broadcast_accesses, expanded, pin_aliases, walk_cone

Chunk = tuple[int, int]
"""(offset, width) of a piece of a row of D or Dv elements."""


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
            return fa.work_group_per_block()
        if fa.can_block():
            return fa.blocks_of_queries(kernel, plan)
        return fa.work_item_per_row()


#: Multiply-adds per batch (Sq·Sk·(D+Dv)) below which a CPU attention is not
#: packed: three more launches cost more than they save on a small one.
BLOCK_MIN_WORK = 64 * 64 * 64


def chunks(n: int, width: int) -> list[Chunk]:
    """n elements as `width`-lane pieces, then single elements."""
    full = n - n % width if width > 1 else 0
    return [(o, width) for o in range(0, full, width)] + [(o, 1) for o in range(full, n)]


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

    def _at(self, dims: tuple[Sequence[int], int, int], bc: list[SSAValue], row: SSAValue, col: SSAValue) -> list[SSAValue]:
        """Operand coordinates: batch, the contracted index `row`, the free index `col`."""
        batch, contract, free = dims
        coords: list[Any] = [None] * (len(batch) + 2)
        for d, c in zip(batch, bc, strict=True):
            coords[d] = c
        coords[contract], coords[free] = row, col
        return coords

    def q_at(self, bc: list[SSAValue], i: SSAValue, d0: SSAValue | int, w: int) -> SSAValue:
        return self.expr(w).at(self.qk.lhs, self._at(self.q_dims, bc, self.kb.as_index(d0), i))

    def k_at(self, bc: list[SSAValue], j: SSAValue, d0: SSAValue | int, w: int) -> SSAValue:
        return self.expr(w).at(self.qk.rhs, self._at(self.k_dims, bc, self.kb.as_index(d0), j))

    def v_at(self, bc: list[SSAValue], j: SSAValue, d0: SSAValue | int, w: int) -> SSAValue:
        return self.expr(w).at(self.pv.rhs, self._at(self.v_dims, bc, j, self.kb.as_index(d0)))

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

    def _splat(self, x: SSAValue, w: int) -> SSAValue:
        return x if w == 1 else self.kb.val(vector.BroadcastOp(x, VectorType(x.type, [w])))

    def _fma(self, a: SSAValue, b: SSAValue, c: SSAValue) -> SSAValue:
        return self.kb.val(mathd.FmaOp(a, b, c))

    def init(self, dv_chunks: list[Chunk]) -> list[SSAValue]:
        kb, et = self.kb, self.et
        accs = [kb.const(0.0, VectorType(et, [w]) if w > 1 else et) for _, w in dv_chunks]
        return [kb.const(-math.inf, et), kb.const(0.0, et), *accs]

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
                lanes = kb.val(arith.MulfOp(qv, kv)) if lanes is None else self._fma(qv, kv, lanes)
            else:
                dot = kb.val(arith.MulfOp(qv, kv)) if dot is None else self._fma(qv, kv, dot)
        if lanes is not None:
            total = vector_total(kb, "sum", lanes)
            dot = total if dot is None else kb.val(arith.AddfOp(total, dot))
        if dot is None:  # D = 0: q·k sums nothing
            dot = kb.const(0.0, et)
        e = self.expr(1)
        e.pin(self.qk.result, lambda _: dot)
        s = e.at(self.score, [*bc, i, j])
        m_new = kb.val(arith.MaximumfOp(m, s))
        # While every score so far is -inf, shift by 0 (exp(-inf - -inf) is NaN).
        shift = kb.val(arith.SelectOp(cmp(kb, "eq", m_new, kb.const(-math.inf, et), False), kb.const(0.0, et), m_new))
        corr = kb.val(mathd.ExpOp(kb.val(arith.SubfOp(m, shift))))
        p = kb.val(mathd.ExpOp(kb.val(arith.SubfOp(s, shift))))
        out = [m_new, self._fma(l, corr, p)]
        for (d0, w), acc in zip(dv_chunks, accs, strict=True):
            scaled = kb.val(arith.MulfOp(acc, self._splat(corr, w)))
            out.append(self._fma(self._splat(p, w), v_at(d0, w), scaled))
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
            value = kb.val(arith.MulfOp(acc, self._splat(inv, w)))
            epilogue = self.expr(w)
            epilogue.pin(self.pv.result, lambda _, value=value: value)
            epilogue.store(self.outputs, [*bc, i, kb.idx(d0)])

    def key_end(self, i: SSAValue) -> SSAValue:
        """Keys j < key_end are visited: all, or j <= i when causal."""
        return self.kb.min(self.sk, self.kb.add(i, 1)) if self.causal else self.kb.idx(self.sk)

    # -- CPU: one work-item per query row ----------------------------------------------------

    def work_item_per_row(self) -> LoweredKernel:
        kb = self.kb
        wd, wv = self.widths()
        d_chunks, dv_chunks = chunks(self.d, wd), chunks(self.dv, wv)
        total = numel(self.rows)
        def body(gid: SSAValue) -> None:
            row = kb.delinearize(gid, self.rows)
            bc, i = row[:-1], row[-1]
            q = [((d0, w), self.q_at(bc, i, d0, w)) for d0, w in d_chunks]

            def key(j: SSAValue, carried: list[SSAValue]) -> list[SSAValue]:
                return self.update(
                    bc, i, j, q, dv_chunks, carried,
                    lambda d0, w: self.k_at(bc, j, d0, w), lambda d0, w: self.v_at(bc, j, d0, w),
                )

            final = kb.for_(0, self.key_end(i), 1, self.init(dv_chunks), key)
            self.store(bc, i, dv_chunks, final)

        return work_item_per(kb, total, body)

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

    def _vector_scores(self, key_tile: int) -> bool:
        """Whether the score's elementwise work runs W keys at a time: every
        op of it computes W lanes, and it reads no tensor past Sk (it reads
        none, or the keys are whole tiles)."""
        tables = {r for op in self.ops if isinstance(op, accy.ConstantOp) and splat_value(op.value) is None
                  for r in op.results}
        reads = {*self.kb.access, *self.inputs, *self.kb.view_leaves, *tables}
        read, ok = walk_cone(self.kb, self.producer, self.aliases, [self.score], reads, {self.qk.result})
        return ok and (self.sk % key_tile == 0 or not read)

    def blocks_of_queries(self, kernel: OutlinedKernel, plan: BufferPlan) -> LoweredKernel:
        """The packed, register-tiled CPU kernel (module docstring)."""
        kb, et, w = self.kb, self.et, self.kb.profile.vector_width
        qb = max(1, min(kb.profile.query_rows, self.sq))
        kt = w * max(1, kb.profile.key_tile // w)
        nk, nv = kt // w, -(-self.dv // w)
        dvp = nv * w
        batches, q_blocks, k_tiles = max(numel(self.batch_shape), 1), -(-self.sq // qb), -(-self.sk // kt)
        st = buffer_element_type(et)
        vt = VectorType(st, [w])
        pq = Scratch(et, batches * q_blocks * self.d * qb)
        pk = Scratch(et, batches * k_tiles * (self.d + 1) * kt)
        pv = Scratch(et, batches * k_tiles * kt * dvp)
        profile = kb.profile

        def packer(fill: Callable[[_Attention, KernelBuilder, SSAValue, SSAValue], None]) -> Callable[..., None]:
            def body(sk: KernelBuilder, out: SSAValue, gid: SSAValue) -> None:
                fill(_Attention(sk, self.ops, self.aliases, self.outputs, self.match), sk, out, gid)
            return body

        def fill_q(fa: _Attention, sk: KernelBuilder, out: SSAValue, gid: SSAValue) -> None:
            b, qt, d = sk.delinearize(gid, [batches, q_blocks, self.d])
            bc = sk.delinearize(b, self.batch_shape)
            for r in range(qb):
                i = sk.min(sk.add(sk.mul(qt, qb), r), self.sq - 1)
                sk.op(memref.StoreOp.get(fa.q_at(bc, i, d, 1), out, [sk.add(sk.mul(gid, qb), r)]))

        def fill_k(fa: _Attention, sk: KernelBuilder, out: SSAValue, gid: SSAValue) -> None:
            b, t, d = sk.delinearize(gid, [batches, k_tiles, self.d + 1])
            bc = sk.delinearize(b, self.batch_shape)

            def keys() -> list[SSAValue]:
                for lane in range(kt):
                    j = sk.min(sk.add(sk.mul(t, kt), lane), self.sk - 1)
                    sk.op(memref.StoreOp.get(fa.k_at(bc, j, d, 1), out, [sk.add(sk.mul(gid, kt), lane)]))
                return []

            def indices() -> list[SSAValue]:
                first = sk.val(arith.IndexCastOp(sk.mul(t, kt), i32))
                for lane in range(kt):
                    j = sk.val(arith.AddiOp(first, sk.const(lane, i32)))
                    sk.op(memref.StoreOp.get(sk.val(arith.SIToFPOp(j, st)), out, [sk.add(sk.mul(gid, kt), lane)]))
                return []

            sk.if_(sk.lt(d, self.d), keys, indices)

        vec_v = w if self.dv % w == 0 and self._lanes([self.pv.rhs], [self.v_dims[2]], self.dv) == w else 1

        def fill_v(fa: _Attention, sk: KernelBuilder, out: SSAValue, gid: SSAValue) -> None:
            b, j = sk.delinearize(gid, [batches, k_tiles * kt])
            bc = sk.delinearize(b, self.batch_shape)
            j = sk.min(j, self.sk - 1)
            for c in range(0, dvp, vec_v):
                at = sk.add(sk.mul(gid, dvp), c)
                if c >= self.dv:
                    sk.op(memref.StoreOp.get(sk.const(0.0, st), out, [at]))
                elif vec_v > 1:
                    sk.op(vector.StoreOp(fa.v_at(bc, j, c, vec_v), out, [at]))
                else:
                    sk.op(memref.StoreOp.get(fa.v_at(bc, j, c, 1), out, [at]))

        pack_q = stage_kernel(kernel, plan, profile, "pack_q", pq, batches * q_blocks * self.d, packer(fill_q))
        pack_k = stage_kernel(kernel, plan, profile, "pack_k", pk, batches * k_tiles * (self.d + 1), packer(fill_k))
        pack_v = stage_kernel(kernel, plan, profile, "pack_v", pv, batches * k_tiles * kt, packer(fill_v))
        aq, ak, av = kb.scratch_argument(pq), kb.scratch_argument(pk), kb.scratch_argument(pv)
        # The block's p (Qb x KT), and the spill of one output row (Dv padded)
        # lane by lane in `_store_row`: whichever is longer.
        probs = kb.local_array(max(qb * kt, dvp), st, workgroup=False)
        vector_scores = self._vector_scores(kt)
        masked = self.causal or self.sk % kt != 0
        ninf, zero = kb.const(-math.inf, et), kb.const(0.0, et)

        def load_vec(buf: SSAValue, at: SSAValue) -> SSAValue:
            return kb.val(vector.LoadOp(buf, [at], vt))

        def splat_load(buf: SSAValue, at: SSAValue) -> SSAValue:
            return self._splat(kb.val(memref.LoadOp.get(buf, [at])), w)

        def as_float(i: SSAValue) -> SSAValue:
            return kb.val(arith.SIToFPOp(kb.val(arith.IndexCastOp(i, i32)), st))

        def body(gid: SSAValue) -> None:
            b, qt = kb.delinearize(gid, [batches, q_blocks])
            bc = kb.delinearize(b, self.batch_shape)
            q0 = kb.mul(qt, qb)
            q_base = kb.mul(gid, self.d * qb)
            rows = [kb.min(kb.add(q0, r), self.sq - 1) for r in range(qb)]
            limits = [self._splat(as_float(self.key_end(i)), w) for i in rows] if masked else []
            seen = kb.min(self.sk, kb.min(kb.add(q0, qb), self.sq)) if self.causal else kb.idx(self.sk)
            tiles = kb.div(kb.add(seen, kt - 1), kt) if self.causal else kb.idx(k_tiles)

            def tile(t: SSAValue, carried: list[SSAValue]) -> list[SSAValue]:
                k_base = kb.mul(kb.add(kb.mul(b, k_tiles), t), (self.d + 1) * kt)
                v_base = kb.mul(kb.add(kb.mul(b, k_tiles), t), kt * dvp)
                j0 = kb.mul(t, kt)

                def qk_step(d: SSAValue, s: list[SSAValue]) -> list[SSAValue]:
                    ks = [load_vec(ak, kb.add(k_base, kb.add(kb.mul(d, kt), v * w))) for v in range(nk)]
                    qrow = kb.add(q_base, kb.mul(d, qb))
                    qs = [splat_load(aq, kb.add(qrow, r)) for r in range(qb)]
                    return [self._fma(qs[r], ks[v], s[r * nk + v]) for r in range(qb) for v in range(nk)]

                scores = kb.for_(0, self.d, 1, [kb.const(0.0, vt)] * (qb * nk), qk_step)
                index = [load_vec(ak, kb.add(k_base, self.d * kt + v * w)) for v in range(nk)] if masked else []
                out: list[SSAValue] = []
                accs: list[SSAValue] = []
                for r, i in enumerate(rows):
                    m, l = carried[2 * r], carried[2 * r + 1]
                    s = self._scores(bc, i, j0, scores[r * nk:(r + 1) * nk], probs, r * kt, kt, vector_scores)
                    if masked:
                        s = [kb.select(cmp(kb, "ge", index[v], limits[r], False), self._splat(ninf, w), s[v])
                             for v in range(nk)]
                    top = s[0]
                    for x in s[1:]:
                        top = kb.val(arith.MaximumfOp(top, x))
                    m_new = kb.val(arith.MaximumfOp(m, vector_total(kb, "max", top)))
                    # While every score so far is -inf, shift by 0 (exp(-inf - -inf) is NaN).
                    shift = kb.select(cmp(kb, "eq", m_new, ninf, False), zero, m_new)
                    corr = kb.val(mathd.ExpOp(kb.val(arith.SubfOp(m, shift))))
                    p = [kb.val(mathd.ExpOp(kb.val(arith.SubfOp(x, self._splat(shift, w))))) for x in s]
                    total = p[0]
                    for x in p[1:]:
                        total = kb.val(arith.AddfOp(total, x))
                    out += [m_new, self._fma(l, corr, vector_total(kb, "sum", total))]
                    for v in range(nk):
                        kb.op(vector.StoreOp(p[v], probs, [kb.idx(r * kt + v * w)]))
                    scale = self._splat(corr, w)
                    accs += [kb.val(arith.MulfOp(a, scale)) for a in carried[2 * qb + r * nv:2 * qb + (r + 1) * nv]]

                def pv_step(jj: SSAValue, acc: list[SSAValue]) -> list[SSAValue]:
                    row = kb.add(v_base, kb.mul(jj, dvp))
                    vs = [load_vec(av, kb.add(row, c * w)) for c in range(nv)]
                    ps = [splat_load(probs, kb.add(jj, r * kt)) for r in range(qb)]
                    return [self._fma(ps[r], vs[c], acc[r * nv + c]) for r in range(qb) for c in range(nv)]

                return out + kb.for_(0, kt, 1, accs, pv_step)

            init = [ninf, zero] * qb + [kb.const(0.0, vt)] * (qb * nv)
            final = kb.for_(0, tiles, 1, init, tile)
            for r in range(qb):
                self._store_row(bc, kb.add(q0, r), final[2 * r + 1], final[2 * qb + r * nv:2 * qb + (r + 1) * nv],
                                probs, guard=self.sq % qb != 0)

        main = work_item_per(kb, batches * q_blocks, body)
        pack_k.before, pack_v.before, main.before = pack_q, pack_k, pack_v
        return main

    def _scores(
        self, bc: list[SSAValue], i: SSAValue, j0: SSAValue, dots: list[SSAValue], spill: SSAValue, at: int, kt: int,
        vectors: bool,
    ) -> list[SSAValue]:
        """The score's elementwise work on query row i's dots with keys j0.. (W
        lanes a vector): W keys at a time, or lane by lane through the private
        array `spill` (from `at`), keys past Sk read at Sk-1 (masked later)."""
        kb, w = self.kb, self.kb.profile.vector_width
        if vectors:
            out = []
            for v, dot in enumerate(dots):
                e = self.expr(w)
                e.pin(self.qk.result, lambda _, dot=dot: dot)
                out.append(e.at(self.score, [*bc, i, kb.add(j0, v * w)]))
            return out
        for v, dot in enumerate(dots):
            kb.op(vector.StoreOp(dot, spill, [kb.idx(at + v * w)]))

        def lane(jj: SSAValue, _: list[SSAValue]) -> list[SSAValue]:
            slot = kb.add(jj, at)
            dot = kb.val(memref.LoadOp.get(spill, [slot]))
            e = self.expr(1)
            e.pin(self.qk.result, lambda _: dot)
            kb.op(memref.StoreOp.get(e.at(self.score, [*bc, i, kb.min(kb.add(j0, jj), self.sk - 1)]), spill, [slot]))
            return []

        kb.for_(0, kt, 1, [], lane)
        vt = VectorType(buffer_element_type(self.et), [w])
        return [kb.val(vector.LoadOp(spill, [kb.idx(at + v * w)], vt)) for v in range(len(dots))]

    def _store_row(
        self, bc: list[SSAValue], i: SSAValue, l: SSAValue, accs: list[SSAValue], spill: SSAValue, guard: bool
    ) -> None:
        """acc / l of query row i (Dv padded to whole vectors) through the
        epilogue: W lanes at a time when the outputs allow, else lane by lane
        through the private array `spill`; nothing past Sq when `guard`."""
        kb, w = self.kb, self.kb.profile.vector_width
        out_dims = [len(accy.shape_of(o)) - 1 for o in self.outputs]
        lanes = w if self.dv % w == 0 and self._lanes(self.outputs, out_dims, self.dv) == w else 1

        def store() -> list[SSAValue]:
            inv = self._splat(self.inverse(l), w)
            values = [kb.val(arith.MulfOp(a, inv)) for a in accs]
            if lanes == w:
                for c, value in enumerate(values):
                    epilogue = self.expr(w)
                    epilogue.pin(self.pv.result, lambda _, value=value: value)
                    epilogue.store(self.outputs, [*bc, i, kb.idx(c * w)])
                return []
            for c, value in enumerate(values):
                kb.op(vector.StoreOp(value, spill, [kb.idx(c * w)]))

            def lane(d: SSAValue, _: list[SSAValue]) -> list[SSAValue]:
                x = kb.val(memref.LoadOp.get(spill, [d]))
                epilogue = self.expr(1)
                epilogue.pin(self.pv.result, lambda _: x)
                epilogue.store(self.outputs, [*bc, i, d])
                return []

            kb.for_(0, self.dv, 1, [], lane)
            return []

        if guard:
            kb.if_(kb.lt(i, self.sq), store)
        else:
            store()

    # -- GPU: a work-group per block of query rows, register tiles over local tiles --------

    def _gpu_tiles(self) -> tuple[int, int, int, int]:
        """(TY, RQ, RK, Dv padded) of the GPU kernel: TY x 16 work-items, each
        RQ query rows by RK keys of a tile; query_rows and key_tile at most,
        fewer rows while the queries are few, tiles of at most
        GPU_MANY_BLOCKS_KEY_TILE keys for GPU_MANY_BLOCKS work-groups or
        more, then fewer while the tiles do not fit in local memory."""
        profile = self.kb.profile
        tx = min(GPU_KEY_THREADS, profile.max_work_group_size)
        rq = GPU_QUERY_ROWS
        ty = max(1, min(_pow2_at_most(profile.query_rows) // rq, profile.max_work_group_size // tx))
        rk = max(1, _pow2_at_most(profile.key_tile) // tx)
        while rq > 1 and ty * rq // 2 >= self.sq:
            rq //= 2
        while ty > 1 and ty * rq // 2 >= self.sq:
            ty //= 2
        while rk > 1 and tx * rk // 2 >= self.sk:
            rk //= 2
        blocks = -(-self.sq // (ty * rq)) * max(numel(self.batch_shape), 1)
        while rk > 1 and blocks >= GPU_MANY_BLOCKS and tx * rk > GPU_MANY_BLOCKS_KEY_TILE:
            rk //= 2
        dvp = -(-self.dv // tx) * tx
        while self._gpu_local(tx, ty, rq, rk, dvp) > profile.local_mem_bytes:
            if rq > 1:
                rq //= 2
            elif rk > 1:
                rk //= 2
            elif ty > 1:
                ty //= 2
            else:
                raise Decline(f"a query row and a key of D = {self.d}, Dv = {self.dv} do not fit in local memory")
        return ty, rq, rk, dvp

    def _gpu_local(self, tx: int, ty: int, rq: int, rk: int, dvp: int) -> int:
        """Local memory bytes of the GPU kernel's tiles (`work_group_per_block`)."""
        bq, bk = ty * rq, tx * rk
        q, kv, p = bq * (self.d + 1), max(bk * (self.d + 1), bk * dvp), max(bq * (bk + 1), bq * (tx + 1))
        return (q + kv + p) * element_bytes(buffer_element_type(self.et))

    def work_group_per_block(self) -> LoweredKernel:
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
        past the block's last query are skipped."""
        kb, et = self.kb, self.et
        st = buffer_element_type(et)
        tx_n = min(GPU_KEY_THREADS, kb.profile.max_work_group_size)
        ty_n, rq, rk, dvp = self._gpu_tiles()
        bq, bk, cv = ty_n * rq, tx_n * rk, dvp // tx_n
        threads = tx_n * ty_n
        groups = -(-self.sq // bq)
        q_tile = kb.local_array(bq * (self.d + 1), st, workgroup=True)
        kv_tile = kb.local_array(max(bk * (self.d + 1), bk * dvp), st, workgroup=True)
        shared = kb.local_array(max(bq * (bk + 1), bq * (tx_n + 1)), st, workgroup=True)
        tx, ty = kb.local_id("x"), kb.local_id("y")
        flat = kb.add(kb.mul(ty, tx_n), tx)
        q0 = kb.mul(kb.group_id("x"), bq)
        bc = kb.delinearize(kb.group_id("y"), self.batch_shape)
        mine = [kb.add(kb.mul(ty, rq), i) for i in range(rq)]  # rows of the block
        rows = [kb.min(kb.add(q0, r), self.sq - 1) for r in mine]
        ninf, zero = kb.const(-math.inf, et), kb.const(0.0, et)

        def load(buf: SSAValue, at: SSAValue) -> SSAValue:
            return kb.val(memref.LoadOp.get(buf, [at]))

        def store(x: SSAValue, buf: SSAValue, at: SSAValue) -> None:
            kb.op(memref.StoreOp.get(x, buf, [at]))

        def stage(count: int, cols: int, put: Callable[[SSAValue, SSAValue], None]) -> None:
            """`put(row, col)` for each of count x cols elements, consecutive
            work-items on consecutive columns."""
            total = count * cols

            def one(e: SSAValue, _: list[SSAValue]) -> list[SSAValue]:
                slot = kb.add(flat, kb.mul(e, threads))

                def put_slot() -> list[SSAValue]:
                    put(kb.div(slot, cols), kb.rem(slot, cols))
                    return []

                if total % threads == 0:
                    put_slot()
                else:
                    kb.if_(kb.lt(slot, total), put_slot)
                return []

            kb.for_(0, -(-total // threads), 1, [], one)

        def fold(base: SSAValue, combine: type[arith.MaximumfOp] | type[arith.AddfOp]) -> SSAValue:
            """The TX shares of a row in `shared` from `base`, combined."""
            def step(t: SSAValue, acc: list[SSAValue]) -> list[SSAValue]:
                return [kb.val(combine(acc[0], load(shared, kb.add(base, t))))]

            return kb.for_(1, tx_n, 1, [load(shared, base)], step)[0]

        stage(bq, self.d, lambda r, d: store(
            self.q_at(bc, kb.min(kb.add(q0, r), self.sq - 1), d, 1), q_tile, kb.add(kb.mul(r, self.d + 1), d)))
        keys_end = kb.min(self.sk, kb.min(kb.add(q0, bq), self.sq)) if self.causal else kb.idx(self.sk)
        limits = [self.key_end(i) for i in rows]
        masked = self.causal or self.sk % bk != 0

        def tile(k0: SSAValue, carried: list[SSAValue]) -> list[SSAValue]:
            kb.barrier()  # q staged; the last tile's p and values read
            stage(bk, self.d, lambda key, d: store(
                self.k_at(bc, kb.min(kb.add(k0, key), self.sk - 1), d, 1), kv_tile,
                kb.add(kb.mul(key, self.d + 1), d)))
            kb.barrier()

            def qk_step(d: SSAValue, s: list[SSAValue]) -> list[SSAValue]:
                qs = [load(q_tile, kb.add(kb.mul(r, self.d + 1), d)) for r in mine]
                ks = [load(kv_tile, kb.add(kb.mul(kb.add(tx, tx_n * j), self.d + 1), d)) for j in range(rk)]
                return [self._fma(qs[i], ks[j], s[i * rk + j]) for i in range(rq) for j in range(rk)]

            dots = kb.for_(0, self.d, 1, [zero] * (rq * rk), qk_step)
            keys = [kb.add(k0, kb.add(tx, tx_n * j)) for j in range(rk)]
            scores = []
            for i in range(rq):
                for j in range(rk):
                    e = self.expr(1)
                    e.pin(self.qk.result, lambda _, x=dots[i * rk + j]: x)
                    sc = e.at(self.score, [*bc, rows[i], kb.min(keys[j], self.sk - 1)])
                    scores.append(kb.select(kb.lt(keys[j], limits[i]), sc, ninf) if masked else sc)
            # Each row's max: the work-items' partial maxima, then one work-item per row.
            for i in range(rq):
                top = scores[i * rk]
                for x in scores[i * rk + 1:(i + 1) * rk]:
                    top = kb.val(arith.MaximumfOp(top, x))
                store(top, shared, kb.add(kb.mul(mine[i], tx_n + 1), tx))
            kb.barrier()
            for e in range(-(-bq // threads)):
                r = kb.add(flat, e * threads)

                def row_max(r: SSAValue = r) -> list[SSAValue]:
                    base = kb.mul(r, tx_n + 1)
                    store(fold(base, arith.MaximumfOp), shared, kb.add(base, tx_n))
                    return []

                kb.if_(kb.lt(r, bq), row_max)
            kb.barrier()
            out, ps = [], []
            for i in range(rq):
                m, l = carried[2 * i], carried[2 * i + 1]
                m_new = kb.val(arith.MaximumfOp(m, load(shared, kb.add(kb.mul(mine[i], tx_n + 1), tx_n))))
                # While every score so far is -inf, shift by 0 (exp(-inf - -inf) is NaN).
                shift = kb.select(cmp(kb, "eq", m_new, ninf, False), zero, m_new)
                corr = kb.val(mathd.ExpOp(kb.val(arith.SubfOp(m, shift))))
                p = [kb.val(mathd.ExpOp(kb.val(arith.SubfOp(x, shift)))) for x in scores[i * rk:(i + 1) * rk]]
                total = p[0]
                for x in p[1:]:
                    total = kb.val(arith.AddfOp(total, x))
                out += [m_new, self._fma(l, corr, total)]
                ps.append((p, [kb.val(arith.MulfOp(o, corr)) for o in carried[2 * rq + i * cv:2 * rq + (i + 1) * cv]]))
            kb.barrier()  # every row's max read, the keys used
            for i, (p, _) in enumerate(ps):
                for j in range(rk):
                    store(p[j], shared, kb.add(kb.mul(mine[i], bk + 1), kb.add(tx, tx_n * j)))
            stage(bk, dvp, lambda key, c: store(
                self._value_or_zero(bc, kb.min(kb.add(k0, key), self.sk - 1), c, dvp), kv_tile,
                kb.add(kb.mul(key, dvp), c)))
            kb.barrier()

            def pv_step(kk: SSAValue, o: list[SSAValue]) -> list[SSAValue]:
                pk = [load(shared, kb.add(kb.mul(r, bk + 1), kk)) for r in mine]
                vs = [load(kv_tile, kb.add(kb.mul(kk, dvp), kb.add(tx, tx_n * c))) for c in range(cv)]
                return [self._fma(pk[i], vs[c], o[i * cv + c]) for i in range(rq) for c in range(cv)]

            scaled = [x for _, o in ps for x in o]
            return out + kb.for_(0, bk, 1, scaled, pv_step)

        init = [ninf, zero] * rq + [zero] * (rq * cv)
        final = kb.for_(0, keys_end, bk, init, tile)
        # Each row's sum: the work-items' shares added once.
        kb.barrier()
        for i in range(rq):
            store(final[2 * i + 1], shared, kb.add(kb.mul(mine[i], tx_n + 1), tx))
        kb.barrier()
        for i in range(rq):
            total = fold(kb.mul(mine[i], tx_n + 1), arith.AddfOp)
            inv = self.inverse(total)
            row = kb.add(q0, mine[i])
            for c in range(cv):
                col = kb.add(tx, tx_n * c)
                value = kb.val(arith.MulfOp(final[2 * rq + i * cv + c], inv))

                def put(row: SSAValue = row, col: SSAValue = col, value: SSAValue = value) -> list[SSAValue]:
                    epilogue = self.expr(1)
                    epilogue.pin(self.pv.result, lambda _: value)
                    epilogue.store(self.outputs, [*bc, row, col])
                    return []

                inside = [kb.lt(row, self.sq)] if self.sq % bq else []
                inside += [kb.lt(col, self.dv)] if (c + 1) * tx_n > self.dv else []
                if inside:
                    kb.if_(inside[0] if len(inside) == 1 else kb.val(arith.AndIOp(*inside)), put)
                else:
                    put()
        grid = (groups, max(numel(self.batch_shape), 1), 1)
        return kb.lowered(grid, (tx_n, ty_n, 1), states_block=True)

    def _value_or_zero(self, bc: list[SSAValue], j: SSAValue, c: SSAValue, dvp: int) -> SSAValue:
        """v at (key j, column c), 0 in the padding columns past Dv."""
        kb = self.kb
        if dvp == self.dv:
            return self.v_at(bc, j, c, 1)
        x = self.v_at(bc, j, kb.min(c, self.dv - 1), 1)
        return kb.select(kb.lt(c, self.dv), x, kb.const(0.0, self.et))


def _pow2_at_most(n: int) -> int:
    """The largest power of two at most n (1 for n < 2)."""
    return 1 << max(0, n.bit_length() - 1)


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
