"""Kernels at the edges of their sizes (issue 19): flash attention with head
dims past a register tile's private buffers (D, Dv up to 513), over no keys
(Sk = 0), with head dim 0 and with rows whose every score is masked; each
against the reference interpreter on the LLVM device and on PoCL under both
profiles, with no host fallback (the suite sets ACCY_VERIFY_BOUNDS, so a
kernel that reads or writes past a buffer fails to compile)."""

from __future__ import annotations

import numpy as np
import pytest
from check import arr, assert_matches, ty
from test_flash_attention import attention_src, inputs
from test_row_pipeline import check_program, normal

import accy
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


@pytest.mark.parametrize("batch", [[0], [2]], ids=["no-batch", "batch"])
@pytest.mark.parametrize("sq", [0, 3])
def test_attention_of_nothing(batch: list[int], sq: int, device) -> None:
    """No batch or no query: an empty result, no launch reads anything."""
    src = attention_src(batch, sq, 5, 4, 5, True, "attention", fused=False)
    check_program(src, inputs(batch, sq, 5, 4, 5, fused=False), device)


def dot_src(a: list[int], b: list[int], lb: list[int], rb: list[int], lc: list[int], rc: list[int],
            epilogue: bool) -> tuple[str, list[int]]:
    """accy.dot_general of a and b (result: batch, lhs free, rhs free dims)
    and its result's shape; `epilogue` adds a bias input and a relu."""
    lf = [d for d in range(len(a)) if d not in (*lb, *lc)]
    rf = [d for d in range(len(b)) if d not in (*rb, *rc)]
    out = [a[d] for d in lb] + [a[d] for d in lf] + [b[d] for d in rf]
    to = ty(out)
    bias = f", %bias: {to}" if epilogue else ""
    lines = [
        f"func.func @main(%a: {ty(a)}, %b: {ty(b)}{bias}) -> {to} {{",
        f'  %o = "accy.dot_general"(%a, %b) <{{lhs_batch = {arr(lb)}, rhs_batch = {arr(rb)}, '
        f"lhs_contract = {arr(lc)}, rhs_contract = {arr(rc)}}}> : ({ty(a)}, {ty(b)}) -> {to}",
    ]
    result = "%o"
    if epilogue:
        lines += [
            f'  %z = "accy.constant"() <{{value = dense<0.0> : {to}}}> : () -> {to}',
            f'  %s = "accy.add"(%o, %bias) : ({to}, {to}) -> {to}',
            f'  %y = "accy.max"(%s, %z) : ({to}, {to}) -> {to}',
        ]
        result = "%y"
    return "\n".join([*lines, f"  func.return {result} : {to}", "}"]), out


def check_dot(case, epilogue: bool, device) -> None:
    """The dot compiles with `strict` (no host fallback) and matches the
    reference on random inputs."""
    a, b, lb, rb, lc, rc = case
    src, out = dot_src(a, b, lb, rb, lc, rc, epilogue)
    exe = accy.compile(src, device=device, strict=True)
    xs = normal(tuple(a), tuple(b), *([tuple(out)] if epilogue else []), scale=1.0)(np.random.default_rng(0))
    (got,) = exe(*xs)
    assert exe.stats.fallbacks == 0
    assert_matches(got, exe.reference_outputs(xs)[0])


#: (lhs, rhs, lhs_batch, rhs_batch, lhs_contract, rhs_contract): a matrix
#: times a vector (no rhs free dim: the CPU profile's packed kernel found no
#: last output column), its transpose, a vector times a matrix, a vector times
#: a vector (a scalar), their batched forms, at sizes that pack and odd ones.
VECTOR_DOTS = {
    "matvec-512": ([512, 512], [512], [], [], [1], [0]),
    "matvec-odd": ([301, 1003], [1003], [], [], [1], [0]),
    "matvec-t": ([1001, 307], [1001], [], [], [0], [0]),
    "matvec-small": ([5, 3], [3], [], [], [1], [0]),
    "vecmat": ([1003], [1003, 301], [], [], [0], [0]),
    "vecvec": ([1001], [1001], [], [], [0], [0]),
    "batch-matvec": ([3, 300, 1001], [3, 1001], [0], [0], [2], [1]),
    "batch-vecmat": ([3, 1003], [3, 1003, 17], [0], [0], [1], [1]),
    "batch-vecvec": ([3, 1001], [3, 1001], [0], [0], [1], [1]),
    "matvec-two-contracting": ([300, 10, 101], [10, 101], [], [], [1, 2], [0, 1]),
}


@pytest.mark.parametrize("epilogue", [False, True], ids=["bare", "epilogue"])
@pytest.mark.parametrize("case", VECTOR_DOTS.values(), ids=VECTOR_DOTS.keys())
def test_vector_dots(case, epilogue: bool, device) -> None:
    check_dot(case, epilogue, device)


#: Dots with no output element or no term: M = 0, N = 0, both (over K =
#: 1024: the tile sizes divided by zero), no batch, K = 0 (zeros, then the
#: epilogue), a vector dot over nothing.
EMPTY_DOTS = {
    "0x0-k1024": ([0, 1024], [1024, 0], [], [], [1], [0]),
    "m0": ([0, 1024], [1024, 64], [], [], [1], [0]),
    "n0": ([300, 1024], [1024, 0], [], [], [1], [0]),
    "batch0": ([0, 300, 100], [0, 100, 64], [0], [0], [2], [1]),
    "k0": ([300, 0], [0, 64], [], [], [1], [0]),
    "k0-batch": ([2, 300, 0], [2, 0, 64], [0], [0], [2], [1]),
    "k0-matvec": ([300, 0], [0], [], [], [1], [0]),
    "k0-vecvec": ([0], [0], [], [], [0], [0]),
    "m0-matvec": ([0, 1024], [1024], [], [], [1], [0]),
}


@pytest.mark.parametrize("epilogue", [False, True], ids=["bare", "epilogue"])
@pytest.mark.parametrize("case", EMPTY_DOTS.values(), ids=EMPTY_DOTS.keys())
def test_empty_dots(case, epilogue: bool, device) -> None:
    check_dot(case, epilogue, device)


#: (shape, axis) of scans over nothing: an empty axis (of one line, of
#: several, between other dims) or lines of some length but none of them.
EMPTY_SCANS = [((0,), 0), ((3, 0), 1), ((4, 0, 3), 1), ((0, 5), 1), ((0, 5), 0), ((2, 0, 17), 2)]


@pytest.mark.parametrize("reverse", [False, True], ids=["forward", "reverse"])
@pytest.mark.parametrize("exclusive", [False, True], ids=["inclusive", "exclusive"])
@pytest.mark.parametrize("case", EMPTY_SCANS, ids=lambda c: "x".join(map(str, c[0])) + f"-axis{c[1]}")
def test_empty_scans(case, exclusive: bool, reverse: bool, device) -> None:
    """Every kind, float and integer: an empty result, no launch that reads
    (the exclusive scan over an empty axis was an IndexError)."""
    shape, axis = case
    for kind in ("sum", "prod", "max", "min"):
        for et, dtype in (("f32", np.float32), ("i32", np.int32)):
            t = ty(list(shape), et)
            src = (
                f"func.func @main(%x: {t}) -> {t} {{\n"
                f'  %c = "accy.scan"(%x) <{{kind = "{kind}", axis = {axis} : i64, '
                f"exclusive = {str(exclusive).lower()}, reverse = {str(reverse).lower()}}}> : ({t}) -> {t}\n"
                f"  func.return %c : {t}\n}}"
            )
            exe = accy.compile(src, device=device, strict=True)
            x = np.zeros(shape, dtype)
            (got,) = exe(x)
            assert exe.stats.fallbacks == 0
            assert_matches(got, exe.reference_outputs([x])[0])


def row_loss_src(rows: int, n: int, named: str, full: bool) -> str:
    """sum(onehot · f(x)) along the rows (the cross-entropy loss for f =
    log_softmax), or over everything (`full`, a scalar), with f a named
    softmax, log_softmax or layer_norm."""
    t, tn = ty([rows, n]), ty([n])
    out = ty([]) if full else ty([rows])
    params = f", %g: {tn}, %b: {tn}" if named == "layer_norm" else ""
    if named == "layer_norm":
        f = f'  %f = "accy.layer_norm"(%x, %g, %b) <{{epsilon = 1.0e-05 : f32}}> : ({t}, {tn}, {tn}) -> {t}\n'
    else:
        f = f'  %f = "accy.{named}"(%x) <{{axis = 1 : i64}}> : ({t}) -> {t}\n'
    return (
        f"func.func @main(%x: {t}, %onehot: {t}{params}) -> {out} {{\n{f}"
        f'  %p = "accy.mul"(%onehot, %f) : ({t}, {t}) -> {t}\n'
        f'  %s = "accy.reduce"(%p) <{{kind = "sum", axes = array<i64: {"0, 1" if full else "1"}>}}> : ({t}) -> {out}\n'
        f"  func.return %s : {out}\n}}"
    )


@pytest.mark.parametrize("full", [False, True], ids=["rows", "scalar"])
@pytest.mark.parametrize("named", ["log_softmax", "softmax", "layer_norm"])
@pytest.mark.parametrize("size", [(37, 101), (4, 128), (1, 3)], ids=lambda s: f"{s[0]}x{s[1]}")
def test_reduction_of_a_named_row_op(size, named: str, full: bool, device) -> None:
    """A reduction over the rows of a named row op is kernels, no host
    fallback (it was a host fallback, "accy.reduce cannot be computed
    elementwise": the reduction was put in the named op's first sweep):
    one kernel for a row sum, two for a full one, as in primitives."""
    rows, n = size
    src = row_loss_src(rows, n, named, full)
    exe = accy.compile(src, device=device, strict=True)
    rng = np.random.default_rng(1)
    onehot = np.eye(n, dtype=np.float32)[rng.integers(0, n, rows)]
    xs = [(rng.standard_normal((rows, n)) * 3).astype(np.float32), onehot]
    if named == "layer_norm":
        xs += [rng.standard_normal(n).astype(np.float32) for _ in range(2)]
    (got,) = exe(*xs)
    assert exe.stats.fallbacks == 0 and exe.stats.kernels == (2 if full else 1)
    assert_matches(got, exe.reference_outputs(xs)[0])
