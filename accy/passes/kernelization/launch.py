"""Launch shapes shared by the lowerings, the two skeletons every kernel is
built on: one work-item per unit of work (`work_item_per`: a row, an output
element, a register tile, a query row; a 1-D launch from `launch_1d`, the
padding `guarded`), the CPU profile's shape and the GPU's for pointwise
work; and one work-group per unit of work (`work_group_per`: work-items
that cooperate through local memory and barriers on a row or an output),
whose work-group size the kernel states (`gpu.known_block_size`), since
its result depends on it. A lowering of several launches builds its first
stages with `stage_kernel` (a work-item per unit, writing a scratch buffer:
the packed panels of a dot or an attention).
"""

from __future__ import annotations

from collections.abc import Callable

from xdsl.ir import SSAValue

from accy.dialects.target import TargetProfile
from accy.passes.analyses.bufferization import BufferPlan
from accy.passes.analyses.outlining import OutlinedKernel
from accy.passes.kernelization.kernel_builder import KernelBuilder
from accy.passes.kernelization.lowered import LoweredKernel, Scratch


def launch_1d(total: int, profile: TargetProfile, local: int | None = None) -> tuple[tuple[int, int, int], tuple[int, int, int], int]:
    """Work-groups and work-group size covering `total` work-items in x
    (the kernel guards ids >= total); work-groups of `local` work-items, by
    default the profile's `group_size`, at most the device's limit and
    `total`. Returns (grid, block, padded total)."""
    total = max(total, 1)
    if local is None:
        local = profile.group_size
    local = max(1, min(local, profile.max_work_group_size, total))
    groups = -(-total // local)
    return (groups, 1, 1), (local, 1, 1), groups * local


def guarded(kb: KernelBuilder, gid: SSAValue, total: int, padded: int, body: Callable[[], None]) -> None:
    """Runs `body` only for ids below `total` (no guard when the launch is exact)."""
    if padded == total:
        body()
        return

    def then() -> list[SSAValue]:
        body()
        return []

    kb.if_(kb.lt(gid, total), then)


def work_item_per(kb: KernelBuilder, total: int, body: Callable[[SSAValue], None]) -> LoweredKernel:
    """The finished kernel of `total` work-items, `body(id)` building what
    work-item `id` (0 <= id < total) does; the work-group size is free."""
    grid, block, padded = launch_1d(total, kb.profile)
    gid = kb.global_id()
    guarded(kb, gid, total, padded, lambda: body(gid))
    return kb.lowered(grid, block)


def work_group_per(
    kb: KernelBuilder, groups: int, threads: int, body: Callable[[SSAValue, SSAValue], None]
) -> LoweredKernel:
    """The finished kernel of `groups` work-groups of `threads` work-items,
    `body(group, tid)` building what work-item `tid` of work-group `group`
    does; the kernel states its work-group size."""
    body(kb.group_id(), kb.local_id())
    return kb.lowered((max(groups, 1), 1, 1), (threads, 1, 1), states_block=True)


def stage_kernel(
    kernel: OutlinedKernel, plan: BufferPlan, profile: TargetProfile, suffix: str, scratch: Scratch, total: int,
    body: Callable[[KernelBuilder, SSAValue, SSAValue], None],
) -> LoweredKernel:
    """A first-stage kernel `<kernel>_<suffix>` over `kernel`'s inputs that
    writes the scratch buffer `scratch`: `total` work-items, `body(kb,
    scratch_arg, id)` building what work-item `id` does."""
    sk = KernelBuilder(f"{kernel.name}_{suffix}", kernel.kind, profile, plan, list(kernel.inputs), ops=kernel.ops)
    out = sk.scratch_argument(scratch)
    return work_item_per(sk, total, lambda gid: body(sk, out, gid))
