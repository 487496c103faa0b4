"""Lowering of scan work items: one `accy.scan` (any kind, axis, exclusive,
reverse) with its elementwise prologue and epilogue fused.

A scan runs along lines: the elements of `x` along the scan axis, every
other coordinate fixed. Each line is walked in its logical order (from the
end when `reverse`) carrying the running value: an inclusive scan stores it
after combining the element, an exclusive one before (so the first element
is the identity). The prologue is evaluated at each element and the
epilogue at each stored element.

CPU profile: one work-item per line walks it in order, one element at a
time. No barriers. When the scan axis is not the last dim, the lines
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
(`work_group_scan`, log2 T barriers) gives each chunk what comes before it
in the tile; the carry from the earlier tiles is combined in, and the
results go out through the epilogue. The last tile, when the line is no
multiple of a tile, guards every chunk that reaches past the line's end
and treats the elements past it as the identity.

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

A line longer than a tile is walked tile after tile by one work-group, so
a few very long lines use a few work-groups (a decoupled look-back across
work-groups would spread them; not built).
"""

from __future__ import annotations

from collections.abc import Callable

from xdsl.dialects import vector
from xdsl.dialects.builtin import VectorType
from xdsl.ir import SSAValue

from accy.dialects import accy
from accy.dialects.host import buffer_element_type
from accy.dialects.target import TargetProfile
from accy.dialects.types import element_bytes, numel
from accy.passes.analyses.bufferization import BufferPlan
from accy.passes.analyses.outlining import OutlinedKernel
from accy.passes.kernelization.combining import (
    combine,
    identity,
    place,
    scan_scratch_size,
    work_group_scan,
    work_group_size,
)
from accy.passes.kernelization.evaluate import Expr, vectorizable
from accy.passes.kernelization.kernel_builder import KernelBuilder, anchored_kernel
from accy.passes.kernelization.launch import work_group_per, work_item_per
from accy.passes.kernelization.lowered import LoweredKernel

#: Lines that are adjacent in memory a GPU work-group takes at least (up to
#: the lines there are), when the scan axis is not the innermost dim.
ADJACENT_LINES = 32


def lower_scan(kernel: OutlinedKernel, plan: BufferPlan, profile: TargetProfile) -> LoweredKernel:
    """A scan kernel: one `accy.scan` and the work fused around it."""
    kb, scan = anchored_kernel(kernel, plan, profile, accy.ScanOp, "scan")
    lowering = _Scan(kb, kernel, scan)
    if profile.profile == "gpu" and lowering.rank:
        tiled = lowering.tiled()
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

    def store(self, kept: list[SSAValue], pos: SSAValue, result: SSAValue, width: int = 1) -> None:
        """The epilogue of `result` (a `vector<width>` from `pos` when width > 1), stored."""
        epilogue = Expr(self.kb, self.others, width)
        epilogue.pin(self.scan.result, lambda _: result)
        epilogue.store(self.kernel.outputs, self.coords(kept, pos))

    # -- one work-item per line (or per W adjacent lines) ----------------------------

    def work_item_per_line(self) -> LoweredKernel:
        kb = self.kb
        width = kb.profile.vector_width
        last = self.shape[-1] if self.rank else 1
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

    def _walk(self, kept: list[SSAValue], width: int) -> None:
        """The line at `kept` in order (width > 1: the W lines from `kept`
        along the last dim, as `vector<WxT>`)."""
        kb = self.kb
        t = VectorType(self.et, [width]) if width > 1 else self.et

        def step(k: SSAValue, carried: list[SSAValue]) -> list[SSAValue]:
            pos = self.actual(k)
            x = Expr(kb, self.others, width).at(self.scan.x, self.coords(kept, pos))
            acc = combine(kb, self.kind, carried[0], x)
            self.store(kept, pos, carried[0] if self.exclusive else acc, width)
            return [acc]

        kb.for_(0, self.n, 1, [kb.const(identity(self.kind, self.et), t)], step)

    # -- GPU: lines in tiles, a work-group scan per tile --------------------------------

    def tiled(self) -> LoweredKernel | None:
        """The GPU kernel (module docstring), or None where its local array
        would not fit the device's local memory even with one vector per
        work-item."""
        kb, profile = self.kb, self.kb.profile
        self.width = width = profile.vector_width
        self.vector = (
            width > 1 and self.axis == self.rank - 1 and self.n >= width and vectorizable(self.others, kb)
        )
        contiguous = numel(self.shape[self.axis + 1:]) == 1
        cap = work_group_size(profile.row_threads, profile.row_threads, profile)
        chunks = profile.scan_vectors
        storage = buffer_element_type(self.et)
        while True:
            per_item = chunks * width
            if contiguous:
                threads = work_group_size(-(-self.n // per_item), cap, profile)
            else:
                least = work_group_size(self.lines, min(ADJACENT_LINES, cap), profile)
                threads = work_group_size(-(-self.n // per_item), cap // least, profile)
            rows = work_group_size(self.lines, cap // threads, profile)
            group = rows * threads
            scratch_size = scan_scratch_size(threads, chunks, group)
            if scratch_size * element_bytes(storage) <= profile.local_mem_bytes:
                break
            if chunks == 1:
                return None
            chunks //= 2
        self.chunks, self.threads, self.rows = chunks, threads, rows
        self.tile = chunks * threads * width
        scratch = kb.local_array(scratch_size, storage, workgroup=True) if scratch_size else None

        def body(wg: SSAValue, lid: SSAValue) -> None:
            if rows == 1:
                r, t, stride = kb.idx(0), lid, 1
            elif contiguous:
                r, t, stride = kb.div(lid, threads), kb.rem(lid, threads), 1
            else:
                r, t, stride = kb.rem(lid, rows), kb.div(lid, rows), rows
            line = kb.add(kb.mul(wg, rows), r)
            inside: SSAValue | None = None
            if self.lines % rows:
                # The last work-group's spare lines walk the last line again
                # (every work-item reaches the barriers) and store nothing.
                inside = kb.lt(line, self.lines)
                line = kb.min(line, self.lines - 1)
            kept = kb.delinearize(line, self.line_shape)

            def tile(base: SSAValue, carry: SSAValue, masked: bool) -> SSAValue:
                return self._tile(kept, base, carry, masked, inside, scratch, lid, t, stride, group)

            whole = self.n // self.tile * self.tile
            carry = kb.for_(0, whole, self.tile, [self.identity()], lambda b, c: [tile(b, c[0], False)])[0]
            if whole < self.n:
                tile(kb.idx(whole), carry, True)

        return work_group_per(kb, -(-self.lines // rows), group, body)

    def _tile(
        self, kept: list[SSAValue], base: SSAValue, carry: SSAValue, masked: bool, inside: SSAValue | None,
        scratch: SSAValue | None, lid: SSAValue, t: SSAValue, stride: int, group: int,
    ) -> SSAValue:
        """One tile of the line at `kept` from `base` (logical), after
        `carry`; `masked` guards the elements past the line's end. Returns
        the carry for the next tile."""
        kb, width = self.kb, self.width
        starts = [kb.add(base, kb.add(kb.mul(t, width), j * self.threads * width)) for j in range(self.chunks)]
        prefixes: list[list[SSAValue]] = []
        for start in starts:
            lanes = self._load(kept, start, masked)
            running = [lanes[0]]
            for x in lanes[1:]:
                running.append(combine(kb, self.kind, running[-1], x))
            prefixes.append(running)
        before, totals = work_group_scan(
            kb, self.kind, [p[-1] for p in prefixes], scratch, lid, t, self.threads, stride, group
        )
        run = carry
        for start, running, b, total in zip(starts, prefixes, before, totals, strict=True):
            offset = combine(kb, self.kind, run, b)
            shifted = [None, *running[:-1]] if self.exclusive else running
            out = [offset if p is None else combine(kb, self.kind, offset, p) for p in shifted]
            self._store(kept, start, out, masked, inside)
            run = combine(kb, self.kind, run, total)
        return run

    # -- chunks: V consecutive elements of the walk -------------------------------------

    def _vector_at(self, start: SSAValue) -> SSAValue:
        """Where along the axis the vector of the chunk at `start` (logical) begins."""
        return self.kb.sub(self.n - self.width, start) if self.reverse else start

    def _load(self, kept: list[SSAValue], start: SSAValue, masked: bool) -> list[SSAValue]:
        """The chunk's elements, in the walk's order (the identity past the line's end when `masked`)."""
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
            return [
                kb.if_(kb.lt(kb.add(start, k), self.n), lambda k=k: [element(k)], lambda: [self.identity()], [self.et])[0]
                for k in range(width)
            ]

        if not masked:
            return whole()
        if not self.vector:
            return guarded()
        return kb.if_(self._fits(start), whole, guarded, [self.et] * width)

    def _fits(self, start: SSAValue) -> SSAValue:
        """Whether the chunk at `start` ends within the line."""
        return self.kb.lt(start, self.n - self.width + 1)

    def _store(
        self, kept: list[SSAValue], start: SSAValue, out: list[SSAValue], masked: bool, inside: SSAValue | None
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
            for k in range(width):

                def then(k: int = k) -> list[SSAValue]:
                    element(k)
                    return []

                kb.if_(kb.lt(kb.add(start, k), self.n), then)
            return []

        def either() -> list[SSAValue]:
            return kb.if_(self._fits(start), whole, guarded)

        write: Callable[[], list[SSAValue]] = whole
        if masked:
            write = either if self.vector else guarded
        if inside is None:
            write()
        else:
            kb.if_(inside, write)
