"""Conformance of the flash_attention lowering on the OpenCL runtime (PoCL):
`accy.attention` and the same computation written out (q·kᵀ, scale, causal
mask, softmax, ·v) with a named `accy.softmax` or with primitives, causal or
not, with batch dims, a fused prologue on q and an epilogue, the scale as a
product, a quotient or a prologue on q, a mask given as an input, at query
and key counts 1, 3, 17 and 127, under both profiles. Each program must be
ONE kernel with no host fallback and match the reference interpreter (see
`check_program`); a log_softmax between the dots is no attention. Large
enough attentions take the CPU profile's blocked kernel (three packs and
the blocks: four launches): their cases draw what it could confuse (query
blocks and key tiles ragged or whole, Sq above and below Sk with the
causal mask, Dv stored whole vectors or lane by lane, a tensor mask read
in a partial tile, float64)."""

from __future__ import annotations

from functools import cache

import numpy as np
import pytest
from check import assert_matches, ty
from conftest import GPU_PROFILE, ProfiledDevice
from test_row_pipeline import check_program, normal

import accy
from accy.passes.kernelization.flash_attention import BLOCK_MIN_WORK


def attention_src(
    batch: list[int], sq: int, sk: int, d: int, dv: int, causal: bool, form: str, fused: bool,
    scale: str = "mul", mask: bool = False,
) -> str:
    """softmax(0.3·q·kᵀ [causal]) · v over `batch` dims (without the causal
    mask, the scaled score is doubled: s + s). `form` is "attention" (one
    `accy.attention`), "softmax" (the dots, the scale and the mask written
    out, a named `accy.softmax` between them) or "primitive" (the softmax
    written out too). Where the dots are written out, `scale` says how 0.3
    is applied: "mul" (score · splat), "div" (score / splat 1/0.3) or "q"
    (q · splat, a prologue), and `mask` adds an i1 input %mask whose true
    elements take the lowest float. `fused` adds a prologue (q·2) and an
    epilogue (+ residual)."""
    assert form in ("attention", "softmax", "primitive")
    assert form != "attention" or (scale == "mul" and not mask)
    tq, tk, tv, to = ty([*batch, sq, d]), ty([*batch, sk, d]), ty([*batch, sk, dv]), ty([*batch, sq, dv])
    ts, tr, tm = ty([*batch, sq, sk]), ty([*batch, sq]), ty([*batch, sq, sk], "i1")
    rank = len(batch) + 2
    bdims = ", ".join(map(str, range(rank - 2)))
    extra = (f", %res: {to}" if fused else "") + (f", %mask: {tm}" if mask else "")
    lines = [f"func.func @main(%q0: {tq}, %k: {tk}, %v: {tv}{extra}) -> {to} {{"]
    q = "%q0"
    if fused:
        lines += [
            f'  %two = "accy.constant"() <{{value = dense<2.0> : {tq}}}> : () -> {tq}',
            f'  %q1 = "accy.mul"({q}, %two) : ({tq}, {tq}) -> {tq}',
        ]
        q = "%q1"
    if scale == "q":
        lines += [
            f'  %qc = "accy.constant"() <{{value = dense<0.3> : {tq}}}> : () -> {tq}',
            f'  %q2 = "accy.mul"({q}, %qc) : ({tq}, {tq}) -> {tq}',
        ]
        q = "%q2"
    if form == "attention":
        flag = "true" if causal else "false"
        lines.append(f'  %o = "accy.attention"({q}, %k, %v) <{{scale = 0.3 : f32, causal = {flag}}}> : ({tq}, {tk}, {tv}) -> {to}')
    else:
        rows = f'<{{dims = array<i64: {", ".join(map(str, range(rank - 1)))}>}}> : ({tr}) -> {ts}'
        lines.append(
            f'  %s0 = "accy.dot_general"({q}, %k) <{{lhs_batch = array<i64{": " + bdims if bdims else ""}>, '
            f'rhs_batch = array<i64{": " + bdims if bdims else ""}>, lhs_contract = array<i64: {rank - 1}>, '
            f'rhs_contract = array<i64: {rank - 1}>}}> : ({tq}, {tk}) -> {ts}'
        )
        scaled = "%s0"  # scale "q": q is scaled already
        if scale != "q":
            op, value = ("mul", 0.3) if scale == "mul" else ("div", 1 / 0.3)
            lines += [
                f'  %sc = "accy.constant"() <{{value = dense<{value!r}> : {ts}}}> : () -> {ts}',
                f'  %s1 = "accy.{op}"(%s0, %sc) : ({ts}, {ts}) -> {ts}',
            ]
            scaled = "%s1"
        low = f'  %low = "accy.constant"() <{{value = dense<-3.40282347e+38> : {ts}}}> : () -> {ts}'
        if causal:
            ik, iq = ty([sk], "i32"), ty([sq], "i32")
            ti = ty([*batch, sq, sk], "i32")
            lines += [
                f'  %ik = "accy.constant"() <{{value = dense<[{", ".join(map(str, range(sk)))}]> : {ik}}}> : () -> {ik}',
                f'  %iq = "accy.constant"() <{{value = dense<[{", ".join(map(str, range(sq)))}]> : {iq}}}> : () -> {iq}',
                f'  %bk = "accy.broadcast"(%ik) <{{dims = array<i64: {rank - 1}>}}> : ({ik}) -> {ti}',
                f'  %bq = "accy.broadcast"(%iq) <{{dims = array<i64: {rank - 2}>}}> : ({iq}) -> {ti}',
                f'  %m = "accy.cmp"(%bk, %bq) <{{predicate = "gt"}}> : ({ti}, {ti}) -> {tm}',
                low,
                f'  %s2 = "accy.select"(%m, %low, {scaled}) : ({tm}, {ts}, {ts}) -> {ts}',
            ]
        else:
            lines.append(f'  %s2 = "accy.add"({scaled}, {scaled}) : ({ts}, {ts}) -> {ts}')
        score = "%s2"
        if mask:
            lines += [] if causal else [low]
            lines.append(f'  %s = "accy.select"(%mask, %low, %s2) : ({tm}, {ts}, {ts}) -> {ts}')
            score = "%s"
        if form == "softmax":
            lines.append(f'  %p = "accy.softmax"({score}) <{{axis = {rank - 1} : i64}}> : ({ts}) -> {ts}')
        else:
            lines += [
                f'  %mx = "accy.reduce"({score}) <{{kind = "max", axes = array<i64: {rank - 1}>}}> : ({ts}) -> {tr}',
                f'  %mb = "accy.broadcast"(%mx) {rows}',
                f'  %sh = "accy.sub"({score}, %mb) : ({ts}, {ts}) -> {ts}',
                f'  %e = "accy.exp"(%sh) : ({ts}) -> {ts}',
                f'  %sm = "accy.reduce"(%e) <{{kind = "sum", axes = array<i64: {rank - 1}>}}> : ({ts}) -> {tr}',
                f'  %sb = "accy.broadcast"(%sm) {rows}',
                f'  %p = "accy.div"(%e, %sb) : ({ts}, {ts}) -> {ts}',
            ]
        lines.append(
            f'  %o = "accy.dot_general"(%p, %v) <{{lhs_batch = array<i64{": " + bdims if bdims else ""}>, '
            f'rhs_batch = array<i64{": " + bdims if bdims else ""}>, lhs_contract = array<i64: {rank - 1}>, '
            f'rhs_contract = array<i64: {rank - 2}>}}> : ({ts}, {tv}) -> {to}'
        )
    if fused:
        lines += [f'  %y = "accy.add"(%o, %res) : ({to}, {to}) -> {to}', f"  func.return %y : {to}", "}"]
    else:
        lines += [f"  func.return %o : {to}", "}"]
    return "\n".join(lines)


def inputs(batch: list[int], sq: int, sk: int, d: int, dv: int, fused: bool):
    residual = [(*batch, sq, dv)] if fused else []
    return normal((*batch, sq, d), (*batch, sk, d), (*batch, sk, dv), *residual, scale=1.0)


#: (batch, Sq, Sk, D, Dv): Sq and Sk each take 1, 3, 17 and 127; D and Dv
#: both whole vectors and ragged.
SHAPES = [
    ([2], 1, 3, 16, 3),
    ([1, 2], 3, 17, 17, 16),
    ([], 17, 127, 8, 33),
    ([2], 127, 1, 32, 5),
]


FORMS = ["attention", "softmax", "primitive"]


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, [*s[0], *s[1:]])))
@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
@pytest.mark.parametrize("form", FORMS)
def test_attention(shape, causal: bool, form: str, device) -> None:
    batch, sq, sk, d, dv = shape
    src = attention_src(batch, sq, sk, d, dv, causal, form, fused=False)
    check_program(src, inputs(batch, sq, sk, d, dv, fused=False), device)


def kernels(device, sq: int, sk: int, d: int, dv: int) -> int:
    """Launches of an attention: four when the CPU profile blocks it."""
    blocked = device.target_profile().profile == "cpu" and sq > 1 and sq * sk * (d + dv) >= BLOCK_MIN_WORK
    return 4 if blocked else 1



@pytest.mark.parametrize("shape", [([], 9, 9, 16, 16), ([2], 65, 37, 24, 40), ([1, 2], 130, 200, 64, 64)],
                         ids=lambda s: "x".join(map(str, [*s[0], *s[1:]])))  # fmt: skip
@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
def test_attention_under_fast_math(shape, causal: bool, device) -> None:
    """Under `math = "fast"` (built with -cl-fast-relaxed-math: no
    infinities) the masked keys (past Sk in a partial tile, causal) and the
    running max start at the lowest finite value, not -inf, which the fast
    build may fold away (PoCL's GPU-profile kernels gave rows 14 off at 9
    keys): finite inputs give the reference's result within rounding."""
    batch, sq, sk, d, dv = shape
    body = attention_src(batch, sq, sk, d, dv, causal, "attention", fused=False)
    src = f'builtin.module attributes {{accy.target = #accy.target<math = "fast">}} {{\n{body}\n}}'
    check_program(src, inputs(batch, sq, sk, d, dv, fused=False), device, kernels=kernels(device, sq, sk, d, dv))

#: (batch, Sq, Sk, D, Dv, form, fused) of the CPU blocked kernel: Sq a
#: whole number of 4-row blocks or not, Sk whole 64-key tiles or not, Sq
#: below, equal to and above Sk, D and Dv whole vectors or ragged.
BLOCKED = [
    ([2], 63, 67, 40, 25, "attention", False),
    ([], 130, 64, 33, 32, "primitive", True),
    ([1, 2], 37, 200, 16, 48, "softmax", False),
    ([3], 128, 128, 64, 64, "attention", True),
    ([], 2, 2000, 64, 64, "primitive", False),
]


@pytest.mark.parametrize("case", BLOCKED, ids=lambda c: "x".join(map(str, [*c[0], *c[1:5]])) + f"-{c[5]}")
@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
def test_blocked_attention(case, causal: bool, device) -> None:
    batch, sq, sk, d, dv, form, fused = case
    assert sq * sk * (d + dv) >= BLOCK_MIN_WORK, "the case must be large enough to be blocked"
    src = attention_src(batch, sq, sk, d, dv, causal, form, fused)
    check_program(src, inputs(batch, sq, sk, d, dv, fused), device, kernels=kernels(device, sq, sk, d, dv))


@pytest.mark.parametrize("sk", [67, 128], ids=["partial-tile", "whole-tiles"])
@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
def test_blocked_attention_input_mask(sk: int, causal: bool, device) -> None:
    """A mask read as a tensor in the score: lane by lane in a partial key
    tile (keys past Sk must not be read), W keys at a time in whole tiles."""
    batch, sq, d, dv = [2], 45, 64, 32
    src = attention_src(batch, sq, sk, d, dv, causal, "softmax", fused=False, mask=True)
    floats = inputs(batch, sq, sk, d, dv, fused=False)

    def make(rng: np.random.Generator) -> list[np.ndarray]:
        return [*floats(rng), rng.random((*batch, sq, sk)) < 0.3]

    check_program(src, make, device, kernels=kernels(device, sq, sk, d, dv))


@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
def test_blocked_attention_float64(causal: bool, device) -> None:
    if not device.target_profile().fp64:
        pytest.skip("the device has no float64")
    batch, sq, sk, d, dv = [2], 70, 90, 24, 40
    src = attention_src(batch, sq, sk, d, dv, causal, "attention", fused=False).replace("f32", "f64")
    exe = accy.compile(src, device=device)
    rng = np.random.default_rng(4)
    xs = [x.astype(np.float64) for x in inputs(batch, sq, sk, d, dv, fused=False)(rng)]
    (got,) = exe(*xs)
    assert exe.stats.fallbacks == 0 and exe.stats.kernels == kernels(device, sq, sk, d, dv)
    assert_matches(got, exe.reference_outputs(xs)[0], rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
@pytest.mark.parametrize("form", FORMS)
def test_attention_prologue_epilogue(causal: bool, form: str, device) -> None:
    """q·2 fused in front, + residual fused behind: still one kernel."""
    src = attention_src([2], 9, 13, 16, 16, causal, form, fused=True)
    check_program(src, inputs([2], 9, 13, 16, 16, fused=True), device)


@pytest.mark.parametrize("scale", ["mul", "div", "q"])
@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
@pytest.mark.parametrize("form", ["softmax", "primitive"])
def test_attention_scale(scale: str, causal: bool, form: str, device) -> None:
    """The scale as score · splat, score / splat or a prologue q · splat
    (the first at a user's shapes, with a named softmax): one kernel."""
    shape = ([2], 100, 77, 32, 16) if scale == "mul" else ([3], 17, 5, 8, 3)
    batch, sq, sk, d, dv = shape
    src = attention_src(batch, sq, sk, d, dv, causal, form, fused=False, scale=scale)
    check_program(src, inputs(batch, sq, sk, d, dv, fused=False), device, kernels=kernels(device, sq, sk, d, dv))


@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
@pytest.mark.parametrize("form", ["softmax", "primitive"])
def test_attention_input_mask(causal: bool, form: str, device) -> None:
    """A mask given as an i1 input (selecting the lowest float), on top of
    the causal one or alone, then the softmax: one kernel."""
    batch, sq, sk, d, dv = [2], 17, 19, 16, 4
    src = attention_src(batch, sq, sk, d, dv, causal, form, fused=False, mask=True)
    floats = inputs(batch, sq, sk, d, dv, fused=False)

    def make(rng: np.random.Generator) -> list[np.ndarray]:
        return [*floats(rng), rng.random((*batch, sq, sk)) < 0.3]

    check_program(src, make, device)


def test_log_softmax_between_the_dots_is_no_attention(device) -> None:
    """A named log_softmax between the dots is not attention: the dots and
    the row pipeline stay three kernels (not one item that falls back)."""
    src = attention_src([2], 17, 13, 16, 5, False, "softmax", fused=False).replace('"accy.softmax"', '"accy.log_softmax"')
    assert '"accy.log_softmax"' in src
    check_program(src, inputs([2], 17, 13, 16, 5, fused=False), device, kernels=3)


@pytest.mark.parametrize("sq,sk", [(17, 13), (16, 16)])
def test_softmax_without_max_between_the_dots_is_no_attention(sq: int, sk: int, device) -> None:
    """q·kᵀ -> exp -> row sum -> div -> ·v (no max subtracted) is a row
    pipeline between two dots, not the attention matcher's softmax: three
    kernels, no host fallback, and `strict` compiles it."""
    t = lambda *s: ty(list(s))  # noqa: E731
    dot = ('"accy.dot_general"({a}, {b}) <{{lhs_batch = array<i64: 0>, rhs_batch = array<i64: 0>, '
           'lhs_contract = array<i64: 2>, rhs_contract = array<i64: {rc}>}}> : ({ta}, {tb}) -> {tr}')
    src = (
        f"func.func @main(%q: {t(2, sq, 16)}, %k: {t(2, sk, 16)}, %v: {t(2, sk, 5)}) -> {t(2, sq, 5)} {{\n"
        f"  %s = {dot.format(a='%q', b='%k', rc=2, ta=t(2, sq, 16), tb=t(2, sk, 16), tr=t(2, sq, sk))}\n"
        f'  %e = "accy.exp"(%s) : ({t(2, sq, sk)}) -> {t(2, sq, sk)}\n'
        f'  %r = "accy.reduce"(%e) <{{kind = "sum", axes = array<i64: 2>}}> : ({t(2, sq, sk)}) -> {t(2, sq)}\n'
        f'  %rb = "accy.broadcast"(%r) <{{dims = array<i64: 0, 1>}}> : ({t(2, sq)}) -> {t(2, sq, sk)}\n'
        f'  %p = "accy.div"(%e, %rb) : ({t(2, sq, sk)}, {t(2, sq, sk)}) -> {t(2, sq, sk)}\n'
        f"  %o = {dot.format(a='%p', b='%v', rc=1, ta=t(2, sq, sk), tb=t(2, sk, 5), tr=t(2, sq, 5))}\n"
        f"  func.return %o : {t(2, sq, 5)}\n}}"
    )
    check_program(src, normal((2, sq, 16), (2, sk, 16), (2, sk, 5), scale=0.3), device, kernels=3)
    import accy

    accy.compile(src, device=device, strict=True)


#: (batch, Sq, Sk, D, Dv, form, fused) of the GPU kernel's vector layout
#: (`attention_lanes = 4`): key tiles whole and partial, causal blocks
#: skipped, Sq ragged against the 64-row blocks, D odd (q and the keys are
#: staged [d][row]), Dv past a work-item's last whole vector of columns and
#: whole, a prologue and an epilogue.
GPU_VECTOR_CASES = [
    ([2], 65, 37, 24, 40, "attention", False),
    ([], 100, 77, 17, 5, "primitive", True),
    ([1, 2], 64, 96, 32, 64, "softmax", False),
    ([3], 33, 130, 8, 33, "attention", True),
]
GPU_VECTOR_TARGET = 'profile = "gpu", query_rows = 64, key_tile = 32'


@pytest.mark.parametrize("case", GPU_VECTOR_CASES, ids=lambda c: "x".join(map(str, [*c[0], *c[1:5]])) + f"-{c[5]}")
@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
def test_gpu_attention_vector_layout(case, causal: bool) -> None:
    """`attention_lanes = 4` on the GPU profile: the register tiles read q,
    the keys, p and the values 16 bytes at a time from tiles laid out for
    it (`_GpuBlocks`), each work-item's keys and columns interleaved by 4;
    results as the reference's. `attention_lanes = 1` (the default) prints
    the same kernel as no field at all, with no vector load of local memory."""
    batch, sq, sk, d, dv, form, fused = case
    body = attention_src(batch, sq, sk, d, dv, causal, form, fused)
    device = _gpu_device()
    vector = f"builtin.module attributes {{accy.target = #accy.target<{GPU_VECTOR_TARGET}, attention_lanes = 4>}} {{\n{body}\n}}"
    check_program(vector, inputs(batch, sq, sk, d, dv, fused), device)
    assert "*(__local float4*)" in accy.compile(vector, device=device).program.source
    scalar, default = (
        accy.compile(f"builtin.module attributes {{accy.target = #accy.target<{target}>}} {{\n{body}\n}}", device=device).program.source
        for target in (f"{GPU_VECTOR_TARGET}, attention_lanes = 1", GPU_VECTOR_TARGET)
    )
    assert scalar == default and "*(__local float4*)" not in default


@cache
def _gpu_device() -> ProfiledDevice:
    return ProfiledDevice(GPU_PROFILE)
