"""Launch shapes shared by the lowerings: a 1-D launch of one work-item per
unit of work (`launch_1d`, with `guarded` for the padding) and the loop
skeletons built on it.
"""

from __future__ import annotations

from collections.abc import Callable

from xdsl.ir import SSAValue

from accy.dialects.target import TargetProfile
from accy.passes.kernelization.kernel_builder import KernelBuilder


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
