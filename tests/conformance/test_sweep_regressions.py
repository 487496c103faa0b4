"""Bugs a held-out sweep found (issue 19), each against the reference
interpreter on the LLVM device and on PoCL under both profiles, with no host
fallback (the suite sets ACCY_VERIFY_BOUNDS, so a kernel that reads or
writes past a buffer fails to compile).

Work with no output row on the GPU profile: a reduction, a row pipeline
(softmax, log_softmax, layer_norm, a row sum of one) or a scan over zero
rows launched one work-group anyway, whose loads the bounds verifier
refused (before it, they read past a buffer's one-element placeholder)."""

from __future__ import annotations

import numpy as np
import pytest
from check import arr, assert_matches, ty
from test_degenerate_kernels import attention_kernels
from test_flash_attention import attention_src
from test_kernels import for_float16

import accy


def run_against_reference(src: str, shapes: list[tuple[int, ...]], device, dtype=np.float32) -> None:
    exe = accy.compile(src, device=device, strict=True)
    rng = np.random.default_rng(0)
    xs = [(rng.standard_normal(s) * 3).astype(dtype) for s in shapes]
    got = exe(*xs)
    assert exe.stats.fallbacks == 0
    for g, w in zip(got, exe.reference_outputs(xs), strict=True):
        assert_matches(g, w)


#: (input shape, reduced axes): no output row (0xN, 3x0x4 over its last
#: axis), or rows of no element (Nx0: each output the kind's identity).
EMPTY_REDUCTIONS = [
    ((0, 4), [1]), ((0, 1000), [1]), ((0, 5000), [1]), ((3, 0, 4), [2]), ((3, 0, 4), [1]),
    ((4, 0), [1]), ((1000, 0), [1]), ((0, 4), [0]), ((0,), [0]), ((0, 3), [0, 1]),
]


@pytest.mark.parametrize("prologue", [False, True], ids=["bare", "prologue"])
@pytest.mark.parametrize("case", EMPTY_REDUCTIONS, ids=lambda c: "x".join(map(str, c[0])) + f"-axes{c[1]}")
def test_empty_reductions(case, prologue: bool, device) -> None:
    """Every kind, float and integer (the integer without a prologue)."""
    shape, axes = case
    out = [n for i, n in enumerate(shape) if i not in axes]
    for kind in ("sum", "prod", "max", "min"):
        for et, dtype in (("f32", np.float32), ("i32", np.int32)):
            if prologue and et != "f32":
                continue
            t, r = ty(list(shape), et), ty(out, et)
            pre = f'  %x = "accy.exp"(%a) : ({t}) -> {t}\n' if prologue else f'  %x = "accy.neg"(%a) : ({t}) -> {t}\n'
            src = (
                f"func.func @main(%a: {t}) -> {r} {{\n{pre}"
                f'  %s = "accy.reduce"(%x) <{{kind = "{kind}", axes = {arr(axes)}}}> : ({t}) -> {r}\n'
                f"  func.return %s : {r}\n}}"
            )
            run_against_reference(src, [shape], device, dtype)


ROW_SHAPES = [(0, 5), (0, 4096), (5, 0), (3, 0, 4), (0, 3, 4)]


@pytest.mark.parametrize("named", ["softmax", "log_softmax", "layer_norm"])
@pytest.mark.parametrize("shape", ROW_SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_empty_row_ops(shape, named: str, device) -> None:
    t, tn = ty(list(shape)), ty([shape[-1]])
    if named == "layer_norm":
        src = (
            f"func.func @main(%x: {t}, %g: {tn}, %b: {tn}) -> {t} {{\n"
            f'  %f = "accy.layer_norm"(%x, %g, %b) <{{epsilon = 1.0e-05 : f32}}> : ({t}, {tn}, {tn}) -> {t}\n'
            f"  func.return %f : {t}\n}}"
        )
        run_against_reference(src, [shape, shape[-1:], shape[-1:]], device)
    else:
        src = (
            f"func.func @main(%x: {t}) -> {t} {{\n"
            f'  %f = "accy.{named}"(%x) <{{axis = -1 : i64}}> : ({t}) -> {t}\n'
            f"  func.return %f : {t}\n}}"
        )
        run_against_reference(src, [shape], device)


@pytest.mark.parametrize("shape", [(0, 5), (0, 4096), (5, 0)], ids=lambda s: "x".join(map(str, s)))
def test_empty_row_sums_of_a_softmax(shape, device) -> None:
    """A row pipeline whose outputs are per-row totals (x - max, its sum)."""
    rows, n = shape
    t, r = ty([rows, n]), ty([rows])
    src = (
        f"func.func @main(%x: {t}) -> {r} {{\n"
        f'  %f = "accy.softmax"(%x) <{{axis = 1 : i64}}> : ({t}) -> {t}\n'
        f'  %p = "accy.mul"(%x, %f) : ({t}, {t}) -> {t}\n'
        f'  %s = "accy.reduce"(%p) <{{kind = "sum", axes = array<i64: 1>}}> : ({t}) -> {r}\n'
        f"  func.return %s : {r}\n}}"
    )
    run_against_reference(src, [shape], device)


@pytest.mark.parametrize("case", [((0, 1000), 1), ((0, 4096), 1), ((3, 0, 4), 2), ((0, 3, 4), 1)],
                         ids=lambda c: "x".join(map(str, c[0])) + f"-axis{c[1]}")
def test_empty_scans_with_a_prologue(case, device) -> None:
    """Scans over no line (the GPU profile's tiled scans need one), fused
    with the work around them."""
    shape, axis = case
    t = ty(list(shape))
    src = (
        f"func.func @main(%x: {t}) -> {t} {{\n"
        f'  %e = "accy.exp"(%x) : ({t}) -> {t}\n'
        f'  %c = "accy.scan"(%e) <{{kind = "sum", axis = {axis} : i64, exclusive = false, reverse = false}}> '
        f": ({t}) -> {t}\n"
        f'  %n = "accy.neg"(%c) : ({t}) -> {t}\n'
        f"  func.return %n : {t}\n}}"
    )
    run_against_reference(src, [shape], device)


# --------------------------------------------------------------------------
# float16 attention accumulates in float32 (widen-accumulation): the CPU
# per-row flash kernel summed q·k, the row sum and the accumulator in f16,
# 3.9e-3 off the reference where f16's tolerance is 1e-3.
# --------------------------------------------------------------------------

#: float16's tolerance (accy-run --check's).
F16_RTOL, F16_ATOL = 1e-2, 1e-3


@pytest.mark.parametrize("form", ["attention", "softmax", "primitive"])
@pytest.mark.parametrize("shape", [([2], 70, 70, 257, 257), ([2], 70, 70, 64, 64), ([], 5, 9, 3, 5), ([2], 1, 130, 16, 8)],
                         ids=["d257", "d64", "small", "one-query"])
@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
def test_f16_attention(form: str, shape, causal: bool, device) -> None:
    """Within f16's tolerance of the reference, q scaled so that the
    scores are of scale 1 (as 1/sqrt(D) makes them; sharper, the
    reference's own f16 rounding of the scores is past the tolerance). The
    named attention is one flash kernel (the casts fuse into it); the
    written-out forms are still a dot, a row pipeline and a dot in f16 (the
    matcher does not see through the cast widen-accumulation puts before
    the second dot). On an OpenCL driver without cl_khr_fp16 (PoCL here)
    it runs on the host."""
    batch, sq, sk, d, dv = shape
    f16 = attention_src(batch, sq, sk, d, dv, causal, form, fused=False).replace("xf32>", "xf16>")
    src, fp16 = for_float16(f16.replace("-3.40282347e+38", "-65504.0"), device)  # the mask: f16's lowest
    exe = accy.compile(src, device=device, strict=fp16)
    rng = np.random.default_rng(0)
    q, k, v = (rng.standard_normal(s) for s in ((*batch, sq, d), (*batch, sk, d), (*batch, sk, dv)))
    xs = [(q / (0.3 * np.sqrt(max(d, 1)))).astype(np.float16), k.astype(np.float16), v.astype(np.float16)]
    (got,) = exe(*xs)
    if fp16:
        assert exe.stats.fallbacks == 0
        if form == "attention":
            assert exe.stats.kernels == attention_kernels(device, sq, sk, d, dv)
    assert_matches(got, exe.reference_outputs(xs)[0], F16_RTOL, F16_ATOL)


@pytest.mark.parametrize("shape", [(19, 3, 2), (2, 2), (1, 2), (5, 4)], ids=str)
def test_reversed_last_dim_by_slices_and_concat(shape, device) -> None:
    """x[..., ::-1] written as a concat of one-element slices of the last dim
    (what the ONNX importer wrote for a kernel flip): each output reads its
    piece at its neighbour (gid + 1 under gid % n == 0), which the bounds
    proof refused (so the compile failed) until a guard on a residue bounded
    the value it was taken of."""
    t, n = ty(shape), shape[-1]
    one = ty([*shape[:-1], 1])
    lines, names = [], []
    for k in reversed(range(n)):
        start, limit = [0] * (len(shape) - 1) + [k], [*shape[:-1], k + 1]
        lines.append(f'  %s{k} = "accy.slice"(%x) <{{start = {arr(start)}, limit = {arr(limit)}, '
                     f'stride = {arr([1] * len(shape))}}}> : ({t}) -> {one}')
        names.append(f"%s{k}")
    body = "\n".join(lines)
    types = ", ".join([one] * n)
    src = f"""func.func @main(%x: {t}) -> {t} {{
{body}
  %y = "accy.concat"({", ".join(names)}) <{{axis = {len(shape) - 1} : i64}}> : ({types}) -> {t}
  func.return %y : {t}
}}"""
    run_against_reference(src, [shape], device)
