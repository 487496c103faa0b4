"""Kernels at the edges of their sizes (issue 19): flash attention with head
dims past a register tile's private buffers (D, Dv up to 513), over no keys
(Sk = 0), with head dim 0 and with rows whose every score is masked; each
against the reference interpreter on the LLVM device and on PoCL under both
profiles, with no host fallback (the suite sets ACCY_VERIFY_BOUNDS, so a
kernel that reads or writes past a buffer fails to compile)."""

from __future__ import annotations

import numpy as np
import pytest
from check import ty
from test_flash_attention import attention_src, inputs
from test_row_pipeline import check_program

from accy.passes.kernelization.flash_attention import BLOCK_MIN_WORK


def attention_kernels(device, sq: int, sk: int, d: int, dv: int) -> int:
    """Launches of an attention: four when the CPU profile blocks it."""
    blocked = device.target_profile().profile == "cpu" and sq > 1 and sq * sk * (d + dv) >= BLOCK_MIN_WORK
    return 4 if blocked else 1


def blocked_size(d: int, dv: int) -> int:
    """Sq = Sk large enough that the CPU profile takes the blocked kernel."""
    n = 2
    while n * n * (d + dv) < BLOCK_MIN_WORK:
        n += 7
    return n


#: (D, Dv): a private row of Dv padded to whole vectors once overflowed the
#: blocked kernel's 256-element array (Qb x KT) past Dv = 256.
HEAD_DIMS = [(1, 1), (3, 3), (255, 255), (256, 256), (257, 257), (300, 300), (513, 513), (3, 300), (300, 3)]


@pytest.mark.parametrize("dims", HEAD_DIMS, ids=lambda x: f"{x[0]}x{x[1]}")
@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
def test_attention_head_dims(dims: tuple[int, int], causal: bool, device) -> None:
    d, dv = dims
    n = blocked_size(d, dv)
    sq, sk = n + 3, n  # a ragged query block, Sq above Sk
    src = attention_src([], sq, sk, d, dv, causal, "attention", fused=False)
    check_program(src, inputs([], sq, sk, d, dv, fused=False), device, kernels=attention_kernels(device, sq, sk, d, dv))


@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
def test_attention_wide_values_small(causal: bool, device) -> None:
    """The per-row kernel (too little work to block) at Dv = 513, D = 257."""
    src = attention_src([2], 3, 5, 257, 513, causal, "primitive", fused=False)
    check_program(src, inputs([2], 3, 5, 257, 513, fused=False), device)


FORMS = ["attention", "softmax", "primitive"]


@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
def test_attention_over_no_keys(form: str, causal: bool, device) -> None:
    """Sk = 0: ·v sums nothing, the result is 0 (not 0/0)."""
    src = attention_src([2], 3, 0, 4, 5, causal, form, fused=True)
    check_program(src, inputs([2], 3, 0, 4, 5, fused=True), device)


@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("shape", [([2], 3, 5, 0, 4), ([], 300, 300, 0, 16), ([2], 3, 5, 0, 0)],
                         ids=["small", "blocked", "empty-values"])
@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
def test_attention_head_dim_zero(form: str, shape, causal: bool, device) -> None:
    """D = 0: every score is 0, each row the mean of the values it sees."""
    batch, sq, sk, d, dv = shape
    src = attention_src(batch, sq, sk, d, dv, causal, form, fused=False)
    check_program(src, inputs(batch, sq, sk, d, dv, fused=False), device, kernels=attention_kernels(device, sq, sk, d, dv))


@pytest.mark.parametrize("low", ["lowest", "-inf"])
@pytest.mark.parametrize("form", ["softmax", "primitive"])
@pytest.mark.parametrize("shape", [([2], 5, 7, 4, 3), ([2], 45, 67, 64, 32)], ids=["small", "blocked"])
def test_attention_fully_masked_rows(low: str, form: str, shape, device) -> None:
    """A mask input that masks every key of some rows: with the lowest finite
    value those rows are the mean of v (uniform weights), with -inf they are
    NaN (exp(-inf - -inf)), on every device as in the reference."""
    batch, sq, sk, d, dv = shape
    src = attention_src(batch, sq, sk, d, dv, False, form, fused=False, mask=True)
    ts = ty([*batch, sq, sk])
    if low == "-inf":
        lowest = f'  %low = "accy.constant"() <{{value = dense<-3.40282347e+38> : {ts}}}> : () -> {ts}'
        assert lowest in src
        src = src.replace(lowest, f'  %zero = "accy.constant"() <{{value = dense<0.0> : {ts}}}> : () -> {ts}\n'
                                  f'  %low = "accy.log"(%zero) : ({ts}) -> {ts}')
    floats = inputs(batch, sq, sk, d, dv, fused=False)

    def make(rng: np.random.Generator) -> list[np.ndarray]:
        mask = rng.random((*batch, sq, sk)) < 0.3
        mask[0, 1, :] = mask[-1, sq - 1, :] = True
        return [*floats(rng), mask]

    check_program(src, make, device, kernels=attention_kernels(device, sq, sk, d, dv))
