"""Lowering of scan work items: one `accy.scan` (any kind, axis, exclusive,
reverse) with its elementwise prologue and epilogue fused.

A scan runs along lines: the elements of `x` along the scan axis, every
other coordinate fixed. Each line is walked in its logical order (from the
end when `reverse`) carrying the running value: an inclusive scan stores it
after combining the element, an exclusive one before (so the first element
is the identity). The prologue is evaluated at each element and the
epilogue at each stored element.

CPU profile: one work-item per line walks it in order. No barriers. When
the scan axis is the last dim, W consecutive elements (the profile's
`vector_width`) a step: each vector scanned in registers (log2 W lane
shuffles, Hillis-Steele) and combined with the carry, the last lane of
which is the next carry; the elements past the last whole vector one at a
time. When the scan axis is not the last dim, the lines
adjacent along the last dim are adjacent in memory: a work-item then walks
W of them (the profile's `vector_width`) at once, as `vector<WxT>` loads,
combines and stores (a last block of fewer than W lines a line at a time),
where the prologue and epilogue can be evaluated W lanes at a time.

GPU profile: one work-group holds R lines of T work-items each (R x T at
most `row_threads`). A line is walked in tiles of J x T x V elements (V the
profile's `vector_width`, J its `scan_vectors`): in a tile, work-item t
takes the chunks of V consecutive elements that start at j·T·V + t·V (j <
J), so that the T work-items of a line read J runs of T·V consecutive
elements. Each work-item scans its chunks in registers; a Hillis-Steele
scan of the J chunk totals across the line's T work-items in local memory
(`work_group_scan`, log2 T + 1 barriers) gives each chunk what comes
before it in the tile; the carry from the earlier tiles is combined in,
and the results go out through the epilogue. The last tile, when the line
is no multiple of a tile, guards every chunk that reaches past the line's
end and treats the elements past it as the identity. Where the local
arrays do not fit the device's local memory even with J = 1, the GPU
takes the CPU profile's kernel.

- A line gets one work-item per J·V elements, up to `row_threads`: T is
  the largest power of two within ceil(n / (J·V)) and `row_threads`, and
  R the largest within the lines and `row_threads` / T. So a line of at
  most J·V elements (16 with the GPU defaults) is one work-item's alone,
  without barriers or local memory, and short lines share a work-group
  R at a time: the one-work-item-per-line form, with coalesced loads.
- When the scan axis is the innermost dim (all dims after it are 1), the
  T work-items of a line are adjacent (local id r·T + t) and a chunk is
  read and written as a `vector<VxT>` where the axis is the last dim and
  the prologue and epilogue can be evaluated V lanes at a time; otherwise
  (views in the kernel) one element at a time.
- Along another axis, lines that are adjacent in memory are adjacent
  work-items (local id t·R + r, with at least min(32, lines) lines a
  work-group), so each load is coalesced across lines; a chunk's elements
  are strided and read one at a time.
- Float sums (and products) combine in another order than a walk along
  the line: within a few ulp of it, as the reference's pairwise sums are.

A line longer than a tile is walked tile after tile by one work-group.
Where lines of at least `SPLIT_TILES` tiles would take at most half of
`FILL_GROUPS` work-groups (a few long lines), each is split into segments
of whole tiles, so that about `FILL_GROUPS` work-groups share them, in two
launches: the first stores each segment's total into a scratch buffer
(`<kernel>_partials`), the second scans each segment from the totals of
the segments before it (combined by the line's work-items and a
work-group scan). The input is read twice, and every work-item of the
second launch reaches the same barriers: the last segment's masked tile is
run by every segment, masking all of it but there. (A decoupled look-back
across work-groups would read the input once; not built.)
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import NamedTuple

from xdsl.dialects import arith, memref, vector
from xdsl.dialects.builtin import VectorType
from xdsl.ir import Attribute, SSAValue

from accy.dialects import accy
from accy.dialects.host import buffer_element_type
from accy.dialects.target import TargetProfile
from accy.dialects.types import element_bytes, numel
from accy.passes.analyses.bufferization import BufferPlan
from accy.passes.analyses.outlining import OutlinedKernel
from accy.passes.kernelization.combining import (
    combine,
    identity,
    last_lane,
    place,
    reversed_lanes,
    scan_scratch_size,
    shifted_lanes,
    vector_prefix,
    work_group_scan,
    work_group_size,
)
from accy.passes.kernelization.evaluate import Expr, vectorizable
from accy.passes.kernelization.kernel_builder import KernelBuilder, anchored_kernel
from accy.passes.kernelization.launch import work_group_per, work_item_per
from accy.passes.kernelization.lowered import LoweredKernel, Scratch

#: Lines that are adjacent in memory a GPU work-group takes at least (up to
#: the lines there are), when the scan axis is not the innermost dim.
ADJACENT_LINES = 32
#: Work-groups that keep a large GPU busy (8 a multiprocessor of a 132-SM
#: H200): lines of at least SPLIT_TILES tiles held by at most half as many
#: work-groups are split into segments, up to this many work-groups in all.
#: (Fewer tiles take less time one after the other than a second launch
#: and a second read of the input cost.)
FILL_GROUPS = 1024
SPLIT_TILES = 8


class _Place(NamedTuple):
    """A GPU work-item's place along its line: local id `lid` = `first` (the
    line's position 0) + `t`·`stride`."""

    lid: SSAValue
    first: SSAValue
    t: SSAValue
    stride: int


def lower_scan(kernel: OutlinedKernel, plan: BufferPlan, profile: TargetProfile) -> LoweredKernel:
    """A scan kernel: one `accy.scan` and the work fused around it."""
    kb, scan = anchored_kernel(kernel, plan, profile, accy.ScanOp, "scan")
    lowering = _Scan(kb, kernel, scan)
    # An empty scan (no line, or lines of no element) has no tile to fill:
    # one work-item per line walks nothing.
    if profile.profile == "gpu" and lowering.rank and numel(lowering.shape):
        tiled = lowering.tiled(plan)
        if tiled is not None:
            return tiled
    return lowering.work_item_per_line()


class _Scan:
    """The scan's lines and the kernels that walk them (module docstring)."""

    def __init__(self, kb: KernelBuilder, kernel: OutlinedKernel, scan: accy.ScanOp) -> None:
        self.kb, self.kernel, self.scan = kb, kernel, scan
        self.shape = accy.shape_of(scan.x)
        self.kind, self.et = scan.kind.data, accy.elem_of(scan.x)
        self.rank = len(self.shape)
        self.axis = scan.axis.value.data % self.rank if self.rank else 0
        self.n = self.shape[self.axis] if self.rank else 1
        self.exclusive, self.reverse = scan.exclusive.value.data, scan.reverse.value.data
        self.line_shape = [s for d, s in enumerate(self.shape) if d != self.axis]
        self.lines = numel(self.line_shape)
        self.others = [op for op in kernel.ops if op is not scan]

    def coords(self, kept: list[SSAValue], pos: SSAValue) -> list[SSAValue]:
        """Full coordinates of element `pos` (along the axis) of the line at `kept`."""
        return place(self.rank, (self.axis,), [pos], kept) if self.rank else []

    def actual(self, logical: SSAValue | int) -> SSAValue:
        """The position along the axis of the element `logical` steps into the walk."""
        kb = self.kb
        return kb.sub(self.n - 1, logical) if self.reverse else kb.as_index(logical)

    def identity(self) -> SSAValue:
        return self.kb.const(identity(self.kind, self.et), self.et)

    def store(self, kept: list[SSAValue], pos: SSAValue, result: SSAValue, width: int = 1, aligned: bool = False) -> None:
        """The epilogue of `result` (a `vector<width>` from `pos` when width > 1), stored;
        by streaming stores where that pays (`KernelBuilder.streams`) and
        `aligned` says `pos` is a multiple of `width`."""
        kb = self.kb
        epilogue = Expr(kb, self.others, width)
        epilogue.pin(self.scan.result, lambda _: result)
        stream = {o for o in self.kernel.outputs if aligned and kb.streams(o, width)}
        epilogue.store(self.kernel.outputs, self.coords(kept, pos), stream)

    # -- one work-item per line (or per W adjacent lines) ----------------------------

    def work_item_per_line(self) -> LoweredKernel:
        kb = self.kb
        width = kb.profile.vector_width
        last = self.shape[-1] if self.rank else 1
        if width > 1 and self.rank and self.axis == self.rank - 1 and self.n >= width and vectorizable(self.others, kb):
            return work_item_per(kb, self.lines, lambda gid: self._walk_along(kb.delinearize(gid, self.line_shape)))
        if not (
            width > 1 and self.rank >= 2 and self.axis != self.rank - 1 and last >= width
            and vectorizable(self.others, kb)
        ):
            return work_item_per(kb, self.lines, lambda gid: self._walk(kb.delinearize(gid, self.line_shape), 1))
        # W lines adjacent along the last dim at a time; a last block of
        # fewer than W lines is walked a line at a time.
        blocks = -(-last // width)
        outer_shape = self.line_shape[:-1]

        def body(gid: SSAValue) -> None:
            outer = kb.delinearize(kb.div(gid, blocks), outer_shape)
            block = kb.rem(gid, blocks)
            first = kb.mul(block, width)
            if last % width == 0:
                self._walk([*outer, first], width)
                return

            def lanes() -> list[SSAValue]:
                self._walk([*outer, first], width)
                return []

            def one(c: SSAValue, _: list[SSAValue]) -> list[SSAValue]:
                self._walk([*outer, c], 1)
                return []

            kb.if_(kb.lt(block, last // width), lanes, lambda: kb.for_(first, last, 1, [], one))

        return work_item_per(kb, numel(outer_shape) * blocks, body)

    def _walk(self, kept: list[SSAValue], width: int, first: int = 0, carry: SSAValue | None = None) -> None:
        """The line at `kept` in order from its `first` element on, after
        `carry` (width > 1: the W lines from `kept` along the last dim, as
        `vector<WxT>`)."""
        kb = self.kb
        t = VectorType(self.et, [width]) if width > 1 else self.et

        def step(k: SSAValue, carried: list[SSAValue]) -> list[SSAValue]:
            pos = self.actual(k)
            x = Expr(kb, self.others, width).at(self.scan.x, self.coords(kept, pos))
            acc = combine(kb, self.kind, carried[0], x)
            self.store(kept, pos, carried[0] if self.exclusive else acc, width)
            return [acc]

        kb.for_(first, self.n, 1, [carry or kb.const(identity(self.kind, self.et), t)], step)

    def _walk_along(self, kept: list[SSAValue]) -> None:
        """The line at `kept`, its axis the last dim, W consecutive elements a
        step: each vector scanned in registers (`vector_prefix`, log2 W
        shuffles; lanes reversed for a reverse scan), the carry (the last
        lane so far, in every lane) combined in; the n mod W elements left
        at the end of the walk one at a time. The next carry combines the
        carry with the vector's own total (its prefix's last lane, the same
        value as the last lane of the result): one combine a step on the
        chain from one carry to the next, the shuffles off it."""
        kb, w = self.kb, self.kb.profile.vector_width
        full = self.n - self.n % w
        # A vector starts at a multiple of W (streaming stores need it) unless
        # a reverse walk starts from the end of a line of no multiple of W.
        aligned = not self.reverse or self.n % w == 0

        def step(k: SSAValue, carried: list[SSAValue]) -> list[SSAValue]:
            start = kb.sub(self.n - w, k) if self.reverse else k  # the vector's first element in memory
            x = Expr(kb, self.others, w).at(self.scan.x, self.coords(kept, start))
            x = reversed_lanes(kb, x) if self.reverse else x
            prefix = vector_prefix(kb, self.kind, x)
            inclusive = combine(kb, self.kind, carried[0], prefix)
            out = combine(kb, self.kind, carried[0], shifted_lanes(kb, self.kind, prefix, 1)) if self.exclusive else inclusive
            self.store(kept, start, reversed_lanes(kb, out) if self.reverse else out, w, aligned)
            return [combine(kb, self.kind, carried[0], last_lane(kb, prefix))]

        init = kb.const(identity(self.kind, self.et), VectorType(self.et, [w]))
        carry = kb.for_(0, full, w, [init], step)[0]
        if full < self.n:
            self._walk(kept, 1, full, kb.val(vector.ExtractOp(carry, [0], self.et)))

    # -- GPU: lines in tiles, a work-group scan per tile --------------------------------

    def _plan(self) -> bool:
        """The GPU kernels' shape (module docstring): `chunks` (J),
        `threads` (T) and `rows` (R), the local array of the work-group
        scan; False where it would not fit the device's local memory even
        with one vector per work-item."""
        kb, profile = self.kb, self.kb.profile
        self.width = width = profile.vector_width
        self.vector = (
            width > 1 and self.axis == self.rank - 1 and self.n >= width and vectorizable(self.others, kb)
        )
        self.contiguous = numel(self.shape[self.axis + 1:]) == 1
        cap = work_group_size(profile.row_threads, profile.row_threads, profile)
        chunks = profile.scan_vectors
        self.storage = buffer_element_type(self.et)
        while True:
            per_item = chunks * width
            if self.contiguous:
                threads = work_group_size(-(-self.n // per_item), cap, profile)
            else:
                least = work_group_size(self.lines, min(ADJACENT_LINES, cap), profile)
                threads = work_group_size(-(-self.n // per_item), cap // least, profile)
            rows = work_group_size(self.lines, cap // threads, profile)
            self.group = rows * threads
            # The tiles' scan, and the carry's in a segmented scan.
            local = scan_scratch_size(threads, chunks, self.group) + scan_scratch_size(threads, 1, self.group)
            if local * element_bytes(self.storage) <= profile.local_mem_bytes:
                break
            if chunks == 1:
                return False
            chunks //= 2
        self.chunks, self.threads, self.rows = chunks, threads, rows
        self.tile = chunks * threads * width
        self.whole = self.n // self.tile * self.tile
        """Where the line's whole tiles end (a masked tile follows when it is short of n)."""
        return True

    def tiled(self, plan: BufferPlan) -> LoweredKernel | None:
        """The GPU kernel, or kernels (module docstring); None where `_plan` finds none."""
        if not self._plan():
            return None
        tiles = -(-self.n // self.tile)
        groups = -(-self.lines // self.rows)
        if tiles >= SPLIT_TILES and 2 * groups <= FILL_GROUPS:
            per = -(-tiles // min(tiles, -(-FILL_GROUPS // groups)))
            return self._segments(plan, -(-tiles // per), per * self.tile)
        return self._one_pass()

    def _line_of(self, lines_group: SSAValue, lid: SSAValue) -> tuple[list[SSAValue], SSAValue, _Place, SSAValue | None]:
        """Work-item `lid` of the work-group that holds lines group
        `lines_group`: its line's coordinates, the line, its place along the
        line, and whether the line exists (None when every one does)."""
        kb, rows, threads = self.kb, self.rows, self.threads
        if rows == 1:
            r, t, stride, first = kb.idx(0), lid, 1, kb.idx(0)
        elif self.contiguous:
            r, t, stride = kb.div(lid, threads), kb.rem(lid, threads), 1
            first = kb.mul(r, threads)
        else:
            r, t, stride = kb.rem(lid, rows), kb.div(lid, rows), rows
            first = r
        line = kb.add(kb.mul(lines_group, rows), r)
        inside: SSAValue | None = None
        if self.lines % rows:
            # The last work-group's spare lines walk the last line again
            # (every work-item reaches the barriers) and store nothing.
            inside = kb.lt(line, self.lines)
            line = kb.min(line, self.lines - 1)
        return kb.delinearize(line, self.line_shape), line, _Place(lid, first, t, stride), inside

    def _line_scan(self, shares: list[SSAValue], scratch: SSAValue | None, place: _Place) -> tuple[list[SSAValue], list[SSAValue]]:
        """`work_group_scan` of `shares` across the line of the work-item at `place`."""
        return work_group_scan(
            self.kb, self.kind, shares, scratch, place.lid, place.first, place.t, self.threads, place.stride, self.group
        )

    def _scratch(self, series: int) -> SSAValue | None:
        size = scan_scratch_size(self.threads, series, self.group)
        return self.kb.local_array(size, self.storage, workgroup=True) if size else None

    def _one_pass(self) -> LoweredKernel:
        """A work-group walks its lines' tiles from the first to the last."""
        kb = self.kb
        scratch = self._scratch(self.chunks)

        def body(wg: SSAValue, lid: SSAValue) -> None:
            kept, _, place, inside = self._line_of(wg, lid)

            def tile(base: SSAValue, carry: SSAValue, end: SSAValue | int | None) -> SSAValue:
                return self._tile(kept, base, carry, end, inside, scratch, place)

            carry = kb.for_(0, self.whole, self.tile, [self.identity()], lambda b, c: [tile(b, c[0], None)])[0]
            if self.whole < self.n:
                tile(kb.idx(self.whole), carry, self.n)

        return work_group_per(kb, -(-self.lines // self.rows), self.group, body)

    def _segments(self, plan: BufferPlan, segments: int, length: int) -> LoweredKernel:
        """Lines split into `segments` segments of `length` elements (whole
        tiles), a work-group each: a first launch stores each segment's
        total into a scratch buffer; the second scans each segment from the
        total of the segments before it."""
        partials = Scratch(self.et, self.lines * segments)
        first_kb = KernelBuilder(
            f"{self.kernel.name}_partials", self.kernel.kind, self.kb.profile, plan, list(self.kernel.inputs),
            ops=self.kernel.ops,
        )
        out = first_kb.scratch_argument(partials)
        first = _Scan(first_kb, self.kernel, self.scan)
        first._plan()
        stage1 = first._segment_totals(out, segments, length)
        stage2 = self._segment_scans(self.kb.scratch_argument(partials), segments, length)
        stage2.before = stage1
        return stage2

    def _segment(self, wg: SSAValue, segments: int, length: int) -> tuple[SSAValue, SSAValue, SSAValue]:
        """Work-group `wg`'s segment, and where its whole tiles start and end."""
        kb = self.kb
        segment = kb.rem(wg, segments)
        start = kb.mul(segment, length)
        return segment, start, kb.min(kb.add(start, length), self.whole)

    def _segment_totals(self, out: SSAValue, segments: int, length: int) -> LoweredKernel:
        kb, kind = self.kb, self.kind
        scratch = self._scratch(1)

        def body(wg: SSAValue, lid: SSAValue) -> None:
            segment, start, end = self._segment(wg, segments, length)
            kept, line, place, inside = self._line_of(kb.div(wg, segments), lid)

            def tile(base: SSAValue, share: SSAValue, end: SSAValue | int | None) -> SSAValue:
                for chunk in self._chunk_starts(base, place.t):
                    for x in self._load(kept, chunk, end):
                        share = combine(kb, kind, share, x)
                return share

            share = kb.for_(start, end, self.tile, [self.identity()], lambda b, c: [tile(b, c[0], None)])[0]
            if self.whole < self.n:
                share = kb.if_(
                    kb.lt(segments - 2, segment), lambda: [tile(kb.idx(self.whole), share, self.n)], lambda: [share],
                    [self.et],
                )[0]
            _, (total,) = self._line_scan([share], scratch, place)

            def store() -> list[SSAValue]:
                kb.op(memref.StoreOp.get(total, out, [kb.add(kb.mul(line, segments), segment)]))
                return []

            first = kb.lt(place.t, 1)
            kb.if_(first if inside is None else kb.val(arith.AndIOp(first, inside)), store)

        return work_group_per(kb, -(-self.lines // self.rows) * segments, self.group, body)

    def _segment_scans(self, partials: SSAValue, segments: int, length: int) -> LoweredKernel:
        kb, kind = self.kb, self.kind
        scratch, carry_scratch = self._scratch(self.chunks), self._scratch(1)

        def body(wg: SSAValue, lid: SSAValue) -> None:
            segment, start, end = self._segment(wg, segments, length)
            kept, line, place, inside = self._line_of(kb.div(wg, segments), lid)
            base = kb.mul(line, segments)

            def before(i: SSAValue, c: list[SSAValue]) -> list[SSAValue]:
                return [combine(kb, kind, c[0], kb.val(memref.LoadOp.get(partials, [kb.add(base, i)])))]

            share = kb.for_(place.t, segment, self.threads, [self.identity()], before)[0]
            _, (carry,) = self._line_scan([share], carry_scratch, place)

            def tile(base: SSAValue, carry: SSAValue, end: SSAValue | int | None) -> SSAValue:
                return self._tile(kept, base, carry, end, inside, scratch, place)

            carry = kb.for_(start, end, self.tile, [carry], lambda b, c: [tile(b, c[0], None)])[0]
            if self.whole < self.n:
                # The masked tile, run by every segment (each reaches its
                # barriers) and ending at the line's end in the last one,
                # where it begins elsewhere (nothing loaded or stored). Run
                # under a branch or in a loop, PoCL 3.1 took a store's
                # mask, computed before the work-group scan's barriers,
                # from another work-item.
                last = kb.lt(segments - 2, segment)
                tile(kb.idx(self.whole), carry, kb.select(last, kb.idx(self.n), kb.idx(self.whole)))

        return work_group_per(kb, -(-self.lines // self.rows) * segments, self.group, body)

    def _chunk_starts(self, base: SSAValue, t: SSAValue) -> list[SSAValue]:
        """Where (logical) work-item t's chunks of the tile at `base` start."""
        kb, width = self.kb, self.width
        return [kb.add(base, kb.add(kb.mul(t, width), j * self.threads * width)) for j in range(self.chunks)]

    def _tile(
        self, kept: list[SSAValue], base: SSAValue, carry: SSAValue, end: SSAValue | int | None,
        inside: SSAValue | None, scratch: SSAValue | None, place: _Place,
    ) -> SSAValue:
        """One tile of the line at `kept` from `base` (logical), after
        `carry`; with an `end`, the elements from `end` on are masked (the
        identity, not stored). Returns the carry for the next tile."""
        kb = self.kb
        starts = self._chunk_starts(base, place.t)
        prefixes: list[list[SSAValue]] = []
        for start in starts:
            lanes = self._load(kept, start, end)
            running = [lanes[0]]
            for x in lanes[1:]:
                running.append(combine(kb, self.kind, running[-1], x))
            prefixes.append(running)
        before, totals = self._line_scan([p[-1] for p in prefixes], scratch, place)
        run = carry
        for start, running, b, total in zip(starts, prefixes, before, totals, strict=True):
            offset = combine(kb, self.kind, run, b)
            shifted = [None, *running[:-1]] if self.exclusive else running
            out = [offset if p is None else combine(kb, self.kind, offset, p) for p in shifted]
            self._store(kept, start, out, end, inside)
            run = combine(kb, self.kind, run, total)
        return run

    # -- chunks: V consecutive elements of the walk -------------------------------------

    def _vector_at(self, start: SSAValue) -> SSAValue:
        """Where along the axis the vector of the chunk at `start` (logical) begins."""
        return self.kb.sub(self.n - self.width, start) if self.reverse else start

    def _load(self, kept: list[SSAValue], start: SSAValue, end: SSAValue | int | None) -> list[SSAValue]:
        """The chunk's elements, in the walk's order (the identity from `end` on)."""
        kb, width = self.kb, self.width

        def element(k: int) -> SSAValue:
            return Expr(kb, self.others).at(self.scan.x, self.coords(kept, self.actual(kb.add(start, k))))

        def whole() -> list[SSAValue]:
            if not self.vector:
                return [element(k) for k in range(width)]
            x = Expr(kb, self.others, width).at(self.scan.x, self.coords(kept, self._vector_at(start)))
            lanes = [kb.val(vector.ExtractOp(x, [k], self.et)) for k in range(width)]
            return lanes[::-1] if self.reverse else lanes

        def guarded() -> list[SSAValue]:
            assert end is not None
            return [
                self._branch(
                    self._below(kb.add(start, k), end), lambda k=k: [element(k)], lambda: [self.identity()], [self.et]
                )[0]
                for k in range(width)
            ]

        if end is None:
            return whole()
        if not self.vector:
            return guarded()
        return self._branch(self._fits(start, end), whole, guarded, [self.et] * width)

    def _fits(self, start: SSAValue, end: SSAValue | int) -> SSAValue | bool:
        """Whether the chunk at `start` ends by `end`."""
        return self._below(start, self.kb.sub(end, self.width - 1))

    def _below(self, a: SSAValue, b: SSAValue | int) -> SSAValue | bool:
        """a < b, as a Python bool where both are known (one work-item a
        line: every chunk's place is a constant)."""
        kb = self.kb
        known_a, known_b = kb.const_value.get(a), b if isinstance(b, int) else kb.const_value.get(b)
        if known_a is not None and known_b is not None:
            return known_a < known_b
        return kb.lt(a, b)

    def _branch(
        self, cond: SSAValue | bool, then: Callable[[], list[SSAValue]],
        else_: Callable[[], list[SSAValue]] | None = None, types: Sequence[Attribute] = (),
    ) -> list[SSAValue]:
        """`KernelBuilder.if_`, or the one branch a known condition takes."""
        if cond is True:
            return then()
        if cond is False:
            return else_() if else_ is not None else []
        return self.kb.if_(cond, then, else_, types)

    def _store(
        self, kept: list[SSAValue], start: SSAValue, out: list[SSAValue], end: SSAValue | int | None,
        inside: SSAValue | None,
    ) -> None:
        """The chunk's results (in the walk's order) through the epilogue."""
        kb, width = self.kb, self.width

        def element(k: int) -> None:
            self.store(kept, self.actual(kb.add(start, k)), out[k])

        def whole() -> list[SSAValue]:
            if not self.vector:
                for k in range(width):
                    element(k)
                return []
            v = kb.const(0, VectorType(self.et, [width]))
            for k, x in enumerate(out[::-1] if self.reverse else out):
                v = kb.val(vector.InsertOp(x, v, [k]))
            self.store(kept, self._vector_at(start), v, width)
            return []

        def guarded() -> list[SSAValue]:
            assert end is not None
            for k in range(width):

                def then(k: int = k) -> list[SSAValue]:
                    element(k)
                    return []

                self._branch(self._below(kb.add(start, k), end), then)
            return []

        def either() -> list[SSAValue]:
            assert end is not None
            return self._branch(self._fits(start, end), whole, guarded)

        write: Callable[[], list[SSAValue]] = whole
        if end is not None:
            write = either if self.vector else guarded
        if inside is None:
            write()
        else:
            kb.if_(inside, write)
