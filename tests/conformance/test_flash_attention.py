"""Conformance of the flash_attention lowering on the OpenCL runtime (PoCL):
`accy.attention` and the same computation written with primitives (q·kᵀ,
scale, causal mask, softmax, ·v), causal or not, with batch dims, a fused
prologue on q and an epilogue, at query and key counts 1, 3, 17 and 127,
under both profiles. Each program must be ONE kernel with no host fallback
and match the reference interpreter (see `check_program`)."""

from __future__ import annotations

import pytest
from check import ty
from test_row_pipeline import check_program, normal


def attention_src(batch: list[int], sq: int, sk: int, d: int, dv: int, causal: bool, named: bool, fused: bool) -> str:
    """softmax(0.3·q·kᵀ [causal]) · v over `batch` dims; `fused` adds a
    prologue (q·2) and an epilogue (+ residual)."""
    tq, tk, tv, to = ty([*batch, sq, d]), ty([*batch, sk, d]), ty([*batch, sk, dv]), ty([*batch, sq, dv])
    ts, tr = ty([*batch, sq, sk]), ty([*batch, sq])
    rank = len(batch) + 2
    bdims = ", ".join(map(str, range(rank - 2)))
    residual = f", %res: {to}" if fused else ""
    lines = [f"func.func @main(%q0: {tq}, %k: {tk}, %v: {tv}{residual}) -> {to} {{"]
    if fused:
        lines += [
            f'  %two = "accy.constant"() <{{value = dense<2.0> : {tq}}}> : () -> {tq}',
            f'  %q = "accy.mul"(%q0, %two) : ({tq}, {tq}) -> {tq}',
        ]
    q = "%q" if fused else "%q0"
    if named:
        flag = "true" if causal else "false"
        lines.append(f'  %o = "accy.attention"({q}, %k, %v) <{{scale = 0.3 : f32, causal = {flag}}}> : ({tq}, {tk}, {tv}) -> {to}')
    else:
        rows = f'<{{dims = array<i64: {", ".join(map(str, range(rank - 1)))}>}}> : ({tr}) -> {ts}'
        lines += [
            f'  %s0 = "accy.dot_general"({q}, %k) <{{lhs_batch = array<i64{": " + bdims if bdims else ""}>, '
            f'rhs_batch = array<i64{": " + bdims if bdims else ""}>, lhs_contract = array<i64: {rank - 1}>, '
            f'rhs_contract = array<i64: {rank - 1}>}}> : ({tq}, {tk}) -> {ts}',
            f'  %sc = "accy.constant"() <{{value = dense<0.3> : {ts}}}> : () -> {ts}',
            f'  %s1 = "accy.mul"(%s0, %sc) : ({ts}, {ts}) -> {ts}',
        ]
        if causal:
            ik, iq = ty([sk], "i32"), ty([sq], "i32")
            tm = ty([*batch, sq, sk], "i1")
            lines += [
                f'  %ik = "accy.constant"() <{{value = dense<[{", ".join(map(str, range(sk)))}]> : {ik}}}> : () -> {ik}',
                f'  %iq = "accy.constant"() <{{value = dense<[{", ".join(map(str, range(sq)))}]> : {iq}}}> : () -> {iq}',
                f'  %bk = "accy.broadcast"(%ik) <{{dims = array<i64: {rank - 1}>}}> : ({ik}) -> {ty([*batch, sq, sk], "i32")}',
                f'  %bq = "accy.broadcast"(%iq) <{{dims = array<i64: {rank - 2}>}}> : ({iq}) -> {ty([*batch, sq, sk], "i32")}',
                f'  %m = "accy.cmp"(%bk, %bq) <{{predicate = "gt"}}> : ({ty([*batch, sq, sk], "i32")}, {ty([*batch, sq, sk], "i32")}) -> {tm}',
                f'  %low = "accy.constant"() <{{value = dense<-3.40282347e+38> : {ts}}}> : () -> {ts}',
                f'  %s = "accy.select"(%m, %low, %s1) : ({tm}, {ts}, {ts}) -> {ts}',
            ]
        else:
            lines.append(f'  %s = "accy.add"(%s1, %s1) : ({ts}, {ts}) -> {ts}')
        lines += [
            f'  %mx = "accy.reduce"(%s) <{{kind = "max", axes = array<i64: {rank - 1}>}}> : ({ts}) -> {tr}',
            f'  %mb = "accy.broadcast"(%mx) {rows}',
            f'  %sh = "accy.sub"(%s, %mb) : ({ts}, {ts}) -> {ts}',
            f'  %e = "accy.exp"(%sh) : ({ts}) -> {ts}',
            f'  %sm = "accy.reduce"(%e) <{{kind = "sum", axes = array<i64: {rank - 1}>}}> : ({ts}) -> {tr}',
            f'  %sb = "accy.broadcast"(%sm) {rows}',
            f'  %p = "accy.div"(%e, %sb) : ({ts}, {ts}) -> {ts}',
            f'  %o = "accy.dot_general"(%p, %v) <{{lhs_batch = array<i64{": " + bdims if bdims else ""}>, '
            f'rhs_batch = array<i64{": " + bdims if bdims else ""}>, lhs_contract = array<i64: {rank - 1}>, '
            f'rhs_contract = array<i64: {rank - 2}>}}> : ({ts}, {tv}) -> {to}',
        ]
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


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, [*s[0], *s[1:]])))
@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
@pytest.mark.parametrize("form", ["named", "primitive"])
def test_attention(shape, causal: bool, form: str, device) -> None:
    batch, sq, sk, d, dv = shape
    src = attention_src(batch, sq, sk, d, dv, causal, form == "named", fused=False)
    check_program(src, inputs(batch, sq, sk, d, dv, fused=False), device)


@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
@pytest.mark.parametrize("form", ["named", "primitive"])
def test_attention_prologue_epilogue(causal: bool, form: str, device) -> None:
    """q·2 fused in front, + residual fused behind: still one kernel."""
    src = attention_src([2], 9, 13, 16, 16, causal, form == "named", fused=True)
    check_program(src, inputs([2], 9, 13, 16, 16, fused=True), device)
