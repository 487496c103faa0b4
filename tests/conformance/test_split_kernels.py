"""Programs the schedule cuts into several kernels to keep compile cost
linear (issue 19): elementwise chains past `MAX_FUSED_OPS` ops and row
pipelines past `MAX_ROW_LEVELS` reduction levels. Each cut stores a value
that the next kernel reads back; the results must still be the reference
interpreter's, on odd and degenerate sizes, on every device and profile."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np
import pytest
from check import check

from accy.passes.analyses.schedule import MAX_FUSED_OPS, MAX_ROW_LEVELS

sys.path.insert(0, str(Path(__file__).parents[2] / "tools"))
from compile_cost import STAGE_OPS, chain_lines, elementwise_chain, row_pipeline_stages  # noqa: E402
from workloads import function_text, generic_op  # noqa: E402


def _inputs(shape: tuple[int, ...], seed: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(shape).astype(np.float32) for _ in range(2)]


def test_chain_cut_into_kernels(device) -> None:
    """2 * MAX_FUSED_OPS + 37 elementwise ops over 13x29: three kernels."""
    n = 2 * MAX_FUSED_OPS + 37
    check(elementwise_chain(n - 1, (13, 29)), _inputs((13, 29), 0), device, kernels=math.ceil(n / MAX_FUSED_OPS))


def test_value_read_across_every_cut(device) -> None:
    """A value computed by the first kernel and read by every op of the
    chain after it (each binary op's other operand): each later kernel
    reads it back from its buffer."""
    shape = (3, 37)
    first = generic_op("%f", "neg", ["%a0"], [shape], shape)
    lines, last = chain_lines(MAX_FUSED_OPS + 101, shape, "%f", "%f", "e")
    lines.append(generic_op("%r", "add", [last, "%a1"], [shape, shape], shape))
    check(function_text([shape, shape], shape, [first, *lines]), _inputs(shape, 1), device, kernels=2)


@pytest.mark.parametrize("shape", [(7, 45), (1, 17), (5, 1), (2, 3, 33)])
def test_softmax_stages_cut_into_row_pipelines(device, shape: tuple[int, ...]) -> None:
    """Five softmax stages in a row (ten reduction levels): row pipelines of
    `MAX_ROW_LEVELS` levels each, the last stage's with the final add."""
    stages = 5
    kernels = math.ceil(2 * stages / MAX_ROW_LEVELS)
    check(row_pipeline_stages(STAGE_OPS * stages, shape), _inputs(shape, 2), device, kernels=kernels)
