"""Conformance of the row_pipeline lowering on the OpenCL runtime (PoCL):
softmax, log_softmax and layer_norm, named and written with primitives,
with elementwise prologues and epilogues, at row counts and row lengths 1,
3, 17 and 127, under the CPU and the GPU profile. Each program must be ONE
kernel with no host fallback, and match the reference interpreter on random
inputs (twice, on the conformance suite's poisoning device)."""

from __future__ import annotations

import numpy as np
import pytest
from check import assert_matches, ty

import accy
from accy.backends.opencl.emitter import kernel_funcs
from accy.dialects.kernel import is_stream_store
from accy.passes.kernelization.kernelize import KernelizePass
from accy.passes.pass_manager import PassManager


def check_program(src: str, make_inputs, device, kernels: int = 1) -> None:
    """Compiles `src` for `device` (outputs poisoned before the launches) and
    runs it on two sets of random inputs, each against the reference; the
    program must run as `kernels` kernels and no host fallback."""
    exe = accy.compile(src, device=device)
    for seed in (0, 1):
        inputs = make_inputs(np.random.default_rng(seed))
        got = exe(*inputs)
        assert exe.stats.fallbacks == 0
        assert exe.stats.kernels == kernels
        for g, w in zip(got, exe.reference_outputs(inputs), strict=True):
            assert_matches(g, w)


def normal(*shapes: tuple[int, ...], scale: float = 3.0):
    return lambda rng: [(rng.standard_normal(s) * scale).astype(np.float32) for s in shapes]


#: (rows, row length): each of 1, 3, 17, 127 as both.
SIZES = [(1, 3), (3, 17), (17, 127), (127, 1)]


def softmax_src(rows: int, n: int, log: bool, named: bool) -> str:
    """Softmax or log_softmax of 2·x + 1 (a prologue), plus x (an epilogue)."""
    t, r = ty([rows, n]), ty([rows])
    head = f"func.func @main(%x: {t}) -> {t} {{\n"
    pro = (
        f'  %two = "accy.constant"() <{{value = dense<2.0> : {t}}}> : () -> {t}\n'
        f'  %one = "accy.constant"() <{{value = dense<1.0> : {t}}}> : () -> {t}\n'
        f'  %m2 = "accy.mul"(%x, %two) : ({t}, {t}) -> {t}\n'
        f'  %a = "accy.add"(%m2, %one) : ({t}, {t}) -> {t}\n'
    )
    if named:
        body = f'  %s = "accy.{"log_softmax" if log else "softmax"}"(%a) <{{axis = 1 : i64}}> : ({t}) -> {t}\n'
    else:
        bc = f'<{{dims = array<i64: 0>}}> : ({r}) -> {t}'
        body = (
            f'  %mx = "accy.reduce"(%a) <{{kind = "max", axes = array<i64: 1>}}> : ({t}) -> {r}\n'
            f'  %mb = "accy.broadcast"(%mx) {bc}\n'
            f'  %d = "accy.sub"(%a, %mb) : ({t}, {t}) -> {t}\n'
            f'  %e = "accy.exp"(%d) : ({t}) -> {t}\n'
            f'  %sm = "accy.reduce"(%e) <{{kind = "sum", axes = array<i64: 1>}}> : ({t}) -> {r}\n'
        )
        if log:
            body += (
                f'  %lg = "accy.log"(%sm) : ({r}) -> {r}\n'
                f'  %lb = "accy.broadcast"(%lg) {bc}\n'
                f'  %s = "accy.sub"(%d, %lb) : ({t}, {t}) -> {t}\n'
            )
        else:
            body += f'  %sb = "accy.broadcast"(%sm) {bc}\n  %s = "accy.div"(%e, %sb) : ({t}, {t}) -> {t}\n'
    tail = f'  %y = "accy.add"(%s, %x) : ({t}, {t}) -> {t}\n  func.return %y : {t}\n}}'
    return head + pro + body + tail


@pytest.mark.parametrize("rows,n", SIZES)
@pytest.mark.parametrize("form", ["named", "primitive"])
@pytest.mark.parametrize("log", [False, True], ids=["softmax", "log_softmax"])
def test_softmax(rows: int, n: int, form: str, log: bool, device) -> None:
    check_program(softmax_src(rows, n, log, form == "named"), normal((rows, n)), device)


def layer_norm_src(shape: list[int], named: bool) -> str:
    """layer_norm(x) over the last dim, then relu (an epilogue)."""
    t, g, r = ty(shape), ty(shape[-1:]), ty(shape[:-1])
    last = len(shape) - 1
    head = f"func.func @main(%x: {t}, %g: {g}, %b: {g}) -> {t} {{\n"
    if named:
        body = f'  %n = "accy.layer_norm"(%x, %g, %b) <{{epsilon = 1.0e-05 : f32}}> : ({t}, {g}, {g}) -> {t}\n'
    else:
        rows_dims = ", ".join(map(str, range(last)))
        bc = f'<{{dims = array<i64: {rows_dims}>}}> : ({r}) -> {t}'
        body = (
            f'  %mu = "accy.reduce"(%x) <{{kind = "mean", axes = array<i64: {last}>}}> : ({t}) -> {r}\n'
            f'  %mb = "accy.broadcast"(%mu) {bc}\n'
            f'  %c = "accy.sub"(%x, %mb) : ({t}, {t}) -> {t}\n'
            f'  %c2 = "accy.mul"(%c, %c) : ({t}, {t}) -> {t}\n'
            f'  %var = "accy.reduce"(%c2) <{{kind = "mean", axes = array<i64: {last}>}}> : ({t}) -> {r}\n'
            f'  %eps = "accy.constant"() <{{value = dense<1.0e-05> : {r}}}> : () -> {r}\n'
            f'  %ve = "accy.add"(%var, %eps) : ({r}, {r}) -> {r}\n'
            f'  %is = "accy.rsqrt"(%ve) : ({r}) -> {r}\n'
            f'  %ib = "accy.broadcast"(%is) {bc}\n'
            f'  %nm = "accy.mul"(%c, %ib) : ({t}, {t}) -> {t}\n'
            f'  %gb = "accy.broadcast"(%g) <{{dims = array<i64: {last}>}}> : ({g}) -> {t}\n'
            f'  %bb = "accy.broadcast"(%b) <{{dims = array<i64: {last}>}}> : ({g}) -> {t}\n'
            f'  %sc = "accy.mul"(%nm, %gb) : ({t}, {t}) -> {t}\n'
            f'  %n = "accy.add"(%sc, %bb) : ({t}, {t}) -> {t}\n'
        )
    tail = f'  %y = "accy.relu"(%n) : ({t}) -> {t}\n  func.return %y : {t}\n}}'
    return head + body + tail


@pytest.mark.parametrize("rows,n", SIZES)
@pytest.mark.parametrize("form", ["named", "primitive"])
def test_layer_norm(rows: int, n: int, form: str, device) -> None:
    check_program(layer_norm_src([rows, n], form == "named"), normal((rows, n), (n,), (n,)), device)


#: Rows whose GPU work-item shares are held in registers (512 and 4096
#: over 256 work-items: 2 and 16 elements each) and one just past it (4097:
#: the strided loop).
HELD = [(3, 512), (2, 4096), (2, 4097)]


@pytest.mark.parametrize("rows,n", HELD)
@pytest.mark.parametrize("form", ["named", "primitive"])
def test_rows_held_in_registers(rows: int, n: int, form: str, device) -> None:
    check_program(softmax_src(rows, n, False, form == "named"), normal((rows, n)), device)
    check_program(layer_norm_src([rows, n], form == "named"), normal((rows, n), (n,), (n,)), device)


def test_layer_norm_batched_rows(device) -> None:
    """Rows spread over two leading dims."""
    check_program(layer_norm_src([2, 3, 19], named=True), normal((2, 3, 19), (19,), (19,)), device)


def test_row_outputs(device) -> None:
    """A softmax that also returns its row sums (a row-shaped output) and
    whose prologue reads a per-row bias broadcast along the rows."""
    t, r = ty([6, 21]), ty([6])
    bc = f'<{{dims = array<i64: 0>}}> : ({r}) -> {t}'
    src = f"""func.func @main(%x: {t}, %bias: {r}) -> ({t}, {r}) {{
  %bb = "accy.broadcast"(%bias) {bc}
  %a = "accy.add"(%x, %bb) : ({t}, {t}) -> {t}
  %mx = "accy.reduce"(%a) <{{kind = "max", axes = array<i64: 1>}}> : ({t}) -> {r}
  %mb = "accy.broadcast"(%mx) {bc}
  %d = "accy.sub"(%a, %mb) : ({t}, {t}) -> {t}
  %e = "accy.exp"(%d) : ({t}) -> {t}
  %sm = "accy.reduce"(%e) <{{kind = "sum", axes = array<i64: 1>}}> : ({t}) -> {r}
  %sb = "accy.broadcast"(%sm) {bc}
  %s = "accy.div"(%e, %sb) : ({t}, {t}) -> {t}
  func.return %s, %sm : {t}, {r}
}}"""
    check_program(src, normal((6, 21), (6,)), device)


@pytest.mark.parametrize("shape,axis", [((5, 17), 0), ((3, 4, 17), 1), ((16, 16), 0), ((7, 3, 5), 0), ((1, 9), 0)])
@pytest.mark.parametrize("log", [False, True])
def test_softmax_along_another_axis_is_a_kernel(shape: tuple[int, ...], axis: int, log: bool, device) -> None:
    """A named softmax or log_softmax along another axis than the last is a
    row pipeline whose row runs along that axis (no host fallback), with an
    elementwise epilogue; square shapes included, where the axis is all
    that tells it from the usual form."""
    t = ty(list(shape))
    op = "log_softmax" if log else "softmax"
    src = (
        f"func.func @main(%x: {t}, %y: {t}) -> {t} {{\n"
        f'  %s = "accy.{op}"(%x) <{{axis = {axis} : i64}}> : ({t}) -> {t}\n'
        f'  %a = "accy.add"(%s, %y) : ({t}, {t}) -> {t}\n'
        f"  func.return %a : {t}\n}}"
    )
    check_program(src, normal(shape, shape), device)


def streamed(src: str) -> str:
    """`src` in a module whose target streams every scan output, however small."""
    return f"builtin.module attributes {{accy.target = #accy.target<stream_bytes = 4>}} {{\n{src}\n}}\n"


@pytest.mark.parametrize("rows,n", [(1, 1), (3, 17), (17, 127), (2, 1023), (3, 1024)])
def test_outputs_past_stream_bytes(rows: int, n: int, device) -> None:
    """Outputs past `stream_bytes` (CPU profile): softmax, whose sum pass
    keeps exp in the output's row for the write pass, log_softmax and
    layer_norm; rows of whole vectors and not. The write pass stores them
    plainly (the stash's lines are in the cache: test_row_pipeline_never_streams)."""
    for log in (False, True):
        check_program(streamed(softmax_src(rows, n, log, named=True)), normal((rows, n)), device)
    check_program(streamed(layer_norm_src([rows, n], named=False)), normal((rows, n), (n,), (n,)), device)


@pytest.mark.parametrize("log", [False, True])
def test_row_pipeline_never_streams(log: bool) -> None:
    """No streaming store in a CPU row pipeline, even past `stream_bytes`:
    softmax 4096² took 1.6-1.7x the time so on an Intel Xeon, 1.12-1.15x on
    an AMD EPYC (docs/kernel-notes.md)."""
    mod = accy.parse_module(streamed(softmax_src(4, 64, log, named=True)))
    PassManager([KernelizePass()]).run(mod)
    stores = [op for f in kernel_funcs(mod) for op in f.walk() if op.name == "vector.store"]
    assert stores and not any(is_stream_store(op) for op in stores)
