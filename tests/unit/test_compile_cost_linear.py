"""Compile cost grows linearly with program length (issue 19), checked by
counting work, not by timing it: the kernel ops kernelize emits, the groups
the schedule walks, and the size of every fused item, for programs of N
and 2N ops. A row pipeline of N softmax stages used to be one kernel that
recomputed every earlier stage in every pass (O(N^2) ops), and each merge
of its growth walked the rest of the program; one elementwise chain of any
length was one kernel, however long LLVM took over it."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import pytest

import accy
from accy.dialects import accy as accy_ops
from accy.passes.analyses import schedule
from accy.passes.analyses.schedule import MAX_FUSED_OPS, MAX_ROW_LEVELS, Schedule
from accy.passes.kernelization.kernelize import KernelizePass
from accy.passes.pass_manager import AnalysisManager

sys.path.insert(0, str(Path(__file__).parents[2] / "tools"))
from compile_cost import STAGE_OPS, elementwise_chain, row_pipeline_stages  # noqa: E402


def _main(text: str):
    module = accy.parse_module(text)
    return module, next(op for op in module.walk() if op.name == "func.func")


def _items(text: str) -> list[schedule.WorkItem]:
    _, fn = _main(text)
    return Schedule(fn, AnalysisManager()).items


def _kernel_ops(text: str) -> tuple[int, int]:
    """(kernels, ops inside them) after kernelize."""
    module, _ = _main(text)
    accy.PassManager([KernelizePass()]).run(module)
    kernels = [op for op in module.walk() if op.name == "gpu.func"]
    return len(kernels), sum(1 for k in kernels for _ in k.walk())


def _compute_ops(item: schedule.WorkItem) -> int:
    return len(set(item.ops) - item.read_through)


def test_row_pipeline_stages_emit_linearly_many_kernel_ops() -> None:
    """12 and 24 softmax stages in a row: twice the stages, about twice the
    kernel ops (it was 3.4x: every pass recomputed every stage before it)."""
    (k1, ops1), (k2, ops2) = (_kernel_ops(row_pipeline_stages(STAGE_OPS * n, (5, 19))) for n in (12, 24))
    assert k2 >= 2 * k1 - 1
    assert ops2 / ops1 < 2.3, (ops1, ops2)


def test_row_pipelines_span_at_most_max_row_levels() -> None:
    """Every row pipeline of 40 stages holds at most `MAX_ROW_LEVELS`
    reductions (each stage's reductions are two levels in a row) and the
    stages are split into pipelines of that many."""
    items = _items(row_pipeline_stages(STAGE_OPS * 40, (5, 19)))
    rows = [it for it in items if it.kind == "row_pipeline"]
    reduces = [sum(isinstance(op, accy_ops.ReduceOp) for op in it.ops) for it in rows]
    assert sum(reduces) == 80
    assert max(reduces) <= MAX_ROW_LEVELS
    assert len(rows) == math.ceil(80 / MAX_ROW_LEVELS)


def test_schedule_walks_linearly_many_groups(monkeypatch: pytest.MonkeyPatch) -> None:
    """The groups the fuser's cycle checks visit (`succ_groups` and
    `pred_groups` calls) for 40 and 80 stages: about twice as many (each
    merge of a row pipeline's growth walked the rest of the program: 15x
    for 4x the stages)."""
    calls = [0]

    def counted(name: str):
        original = getattr(schedule._Fuser, name)

        def wrapper(self, grp):
            calls[0] += 1
            return original(self, grp)

        monkeypatch.setattr(schedule._Fuser, name, wrapper)

    counted("succ_groups")
    counted("pred_groups")
    counts = []
    for n in (40, 80):
        calls[0] = 0
        _items(row_pipeline_stages(STAGE_OPS * n, (5, 19)))
        counts.append(calls[0])
    assert counts[1] / counts[0] < 2.5, counts


@pytest.mark.parametrize("cap", [16, 37])
def test_elementwise_chain_is_cut_at_the_cap(monkeypatch: pytest.MonkeyPatch, cap: int) -> None:
    """With a cap of `cap` ops, a chain of 101 and 202 ops is cut into
    ceil(ops / cap) items, none over the cap, and kernelize emits twice the
    kernel ops for twice the chain. (Schedule and kernelize only: nothing
    here goes through the compile cache, which does not key on the cap.)"""
    monkeypatch.setattr(schedule, "MAX_FUSED_OPS", cap)
    sizes = []
    for n in (100, 201):
        items = _items(elementwise_chain(n, (3, 5)))
        assert len(items) == math.ceil((n + 1) / cap)
        assert max(_compute_ops(it) for it in items) <= cap
        sizes.append(_kernel_ops(elementwise_chain(n, (3, 5)))[1])
    assert sizes[1] / sizes[0] < 2.3, sizes


def test_default_cap_is_kept_by_every_item() -> None:
    """The default `MAX_FUSED_OPS`: a chain of 2.5 times it is three items, none over it."""
    items = _items(elementwise_chain(MAX_FUSED_OPS * 5 // 2, (3, 5)))
    assert len(items) == 3
    assert max(_compute_ops(it) for it in items) <= MAX_FUSED_OPS
