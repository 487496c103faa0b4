"""The four analyses from Python: layouts against numpy, kernel counts, peak
bytes and the plan's invariants, over programs of several sizes."""

from __future__ import annotations

import numpy as np
import pytest
from numpy.lib.stride_tricks import as_strided
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp
from xdsl.parser import Parser

from accy.dialects.context import make_context
from accy.passes.analyses.bufferization import BufferPlan
from accy.passes.analyses.outlining import Outlining, OutliningError
from accy.passes.analyses.schedule import KINDS, Schedule
from accy.passes.analyses.shape_layout import ShapeLayout, reshape_strides
from accy.passes.pass_manager import AnalysisManager, PassManager
from accy.passes.registry import get_pass


def T(shape, et="f32") -> str:
    return "tensor<" + "".join(f"{d}x" for d in shape) + et + ">"


def parse(text: str) -> ModuleOp:
    module = Parser(make_context(), text).parse_module()
    module.verify()
    return module


def main_of(module: ModuleOp) -> func.FuncOp:
    return next(op for op in module.walk() if isinstance(op, func.FuncOp))


def analyse(text: str):
    fn = main_of(parse(text))
    am = AnalysisManager()
    return fn, am.get(Schedule, fn), am.get(Outlining, fn), am.get(BufferPlan, fn)


def dot(a, b, ta, tb, tr, lb=(), rb=(), lc=(1,), rc=(0,), name="%d") -> str:
    arr = lambda xs: "array<i64" + (": " + ", ".join(map(str, xs)) if xs else "") + ">"  # noqa: E731
    return (
        f'{name} = "accy.dot_general"({a}, {b}) <{{lhs_batch = {arr(lb)}, rhs_batch = {arr(rb)}, '
        f"lhs_contract = {arr(lc)}, rhs_contract = {arr(rc)}}}> : ({ta}, {tb}) -> {tr}"
    )


# --------------------------------------------------------------------------
# shape-layout: strides read the same elements numpy's views do
# --------------------------------------------------------------------------


def _read(base: np.ndarray, layout) -> np.ndarray:
    flat = base.reshape(-1)
    return as_strided(
        flat[layout.offset :], layout.shape, tuple(s * flat.itemsize for s in layout.strides), writeable=False
    )


@pytest.mark.parametrize("shape", [(6, 8), (1, 5), (3, 17), (4, 1)])
def test_view_layouts_match_numpy(shape):
    rows, cols = shape
    x = np.arange(rows * cols, dtype=np.float32).reshape(shape)
    sl_r = (rows + 1) // 2
    text = f"""
    func.func @main(%x: {T(shape)}) -> ({T((cols, rows))}, {T((sl_r, cols))}, {T((cols * rows,))}, {T((2, rows, cols))}) {{
      %t = "accy.transpose"(%x) <{{permutation = array<i64: 1, 0>}}> : ({T(shape)}) -> {T((cols, rows))}
      %s = "accy.slice"(%x) <{{start = array<i64: 0, 0>, limit = array<i64: {rows}, {cols}>, stride = array<i64: 2, 1>}}> : ({T(shape)}) -> {T((sl_r, cols))}
      %r = "accy.reshape"(%t) : ({T((cols, rows))}) -> {T((cols * rows,))}
      %b = "accy.broadcast"(%x) <{{dims = array<i64: 1, 2>}}> : ({T(shape)}) -> {T((2, rows, cols))}
      func.return %t, %s, %r, %b : {T((cols, rows))}, {T((sl_r, cols))}, {T((cols * rows,))}, {T((2, rows, cols))}
    }}"""
    fn = main_of(parse(text))
    sl = AnalysisManager().get(ShapeLayout, fn)
    ops = list(fn.body.block.ops)
    want = {"t": x.T, "s": x[::2], "r": x.T.reshape(-1), "b": np.broadcast_to(x, (2, rows, cols))}
    for op in ops[:-1]:
        v = op.results[0]
        info = sl.info(v)
        lay = info.layout
        assert info.nbytes == 4 * int(np.prod(info.shape))
        if lay.is_view:
            assert lay.base is fn.args[0]
            np.testing.assert_array_equal(_read(x, lay), want[v.name_hint])
        else:  # only a reshape no strides express is a copy
            assert v.name_hint == "r" and rows > 1 and cols > 1
            assert lay.contiguous


@pytest.mark.parametrize(
    "old, new",
    [((4, 6), (24,)), ((4, 6), (2, 2, 6)), ((4, 6), (4, 3, 2)), ((1, 6, 1), (3, 2)), ((5,), (1, 5, 1))],
)
@pytest.mark.parametrize("view", ["plain", "transpose", "slice"])
def test_reshape_strides_match_numpy(old, new, view):
    base = np.arange(int(np.prod(old)) * 4, dtype=np.float32)
    if view == "slice":
        arr = base.reshape(-1)[::4][: int(np.prod(old))].reshape(old)
    else:
        arr = base[: int(np.prod(old))].reshape(old)
        if view == "transpose":
            arr = arr.T
    strides = tuple(s // 4 for s in arr.strides)
    got = reshape_strides(arr.shape, strides, new)
    want = np.reshape(arr, new)
    if got is None:
        assert not np.shares_memory(want, arr)
    else:
        np.testing.assert_array_equal(as_strided(base, new, tuple(s * 4 for s in got)), want)


# --------------------------------------------------------------------------
# schedule: kernel counts
# --------------------------------------------------------------------------


def softmax_prims(r: int, n: int) -> str:
    x, v = T((r, n)), T((r,))
    return f"""
    func.func @main(%x: {x}) -> {x} {{
      %m = "accy.reduce"(%x) <{{kind = "max", axes = array<i64: 1>}}> : ({x}) -> {v}
      %mb = "accy.broadcast"(%m) <{{dims = array<i64: 0>}}> : ({v}) -> {x}
      %d = "accy.sub"(%x, %mb) : ({x}, {x}) -> {x}
      %e = "accy.exp"(%d) : ({x}) -> {x}
      %s = "accy.reduce"(%e) <{{kind = "sum", axes = array<i64: 1>}}> : ({x}) -> {v}
      %sb = "accy.broadcast"(%s) <{{dims = array<i64: 0>}}> : ({v}) -> {x}
      %y = "accy.div"(%e, %sb) : ({x}, {x}) -> {x}
      func.return %y : {x}
    }}"""


def layer_norm(r: int, n: int, named: bool) -> str:
    x, v, g = T((r, n)), T((r,)), T((n,))
    if named:
        body = f'%y = "accy.layer_norm"(%x, %g, %b) <{{epsilon = 1.0e-05 : f32}}> : ({x}, {g}, {g}) -> {x}'
    else:
        body = f"""
      %mu = "accy.reduce"(%x) <{{kind = "mean", axes = array<i64: 1>}}> : ({x}) -> {v}
      %mub = "accy.broadcast"(%mu) <{{dims = array<i64: 0>}}> : ({v}) -> {x}
      %xc = "accy.sub"(%x, %mub) : ({x}, {x}) -> {x}
      %sq = "accy.mul"(%xc, %xc) : ({x}, {x}) -> {x}
      %var = "accy.reduce"(%sq) <{{kind = "mean", axes = array<i64: 1>}}> : ({x}) -> {v}
      %eps = "accy.constant"() <{{value = dense<1.0e-05> : {v}}}> : () -> {v}
      %ve = "accy.add"(%var, %eps) : ({v}, {v}) -> {v}
      %rs = "accy.rsqrt"(%ve) : ({v}) -> {v}
      %rb = "accy.broadcast"(%rs) <{{dims = array<i64: 0>}}> : ({v}) -> {x}
      %nm = "accy.mul"(%xc, %rb) : ({x}, {x}) -> {x}
      %gb = "accy.broadcast"(%g) <{{dims = array<i64: 1>}}> : ({g}) -> {x}
      %bb = "accy.broadcast"(%b) <{{dims = array<i64: 1>}}> : ({g}) -> {x}
      %ng = "accy.mul"(%nm, %gb) : ({x}, {x}) -> {x}
      %y = "accy.add"(%ng, %bb) : ({x}, {x}) -> {x}"""
    return f"""
    func.func @main(%x: {x}, %g: {g}, %b: {g}) -> {x} {{
      {body}
      func.return %y : {x}
    }}"""


def attention(b: int, h: int, s: int, d: int, named: bool, causal: bool) -> str:
    q, sc, r = T((b, h, s, d)), T((b, h, s, s)), T((b, h, s))
    if named:
        body = f'%o = "accy.attention"(%q, %k, %v) <{{scale = 0.5 : f32, causal = {str(causal).lower()}}}> : ({q}, {q}, {q}) -> {q}'
        args = ""
    else:
        mask = T((s, s), "i1")
        masked = (
            f"""
      %ninf = "accy.constant"() <{{value = dense<0xFF800000> : {sc}}}> : () -> {sc}
      %mb = "accy.broadcast"(%mask) <{{dims = array<i64: 2, 3>}}> : ({mask}) -> {T((b, h, s, s), "i1")}
      %sm = "accy.select"(%mb, %ss, %ninf) : ({T((b, h, s, s), "i1")}, {sc}, {sc}) -> {sc}"""
            if causal
            else f'%sm = "accy.add"(%ss, %ss) : ({sc}, {sc}) -> {sc}'
        )
        args = f", %mask: {mask}" if causal else ""
        body = f"""
      {dot("%q", "%k", q, q, sc, (0, 1), (0, 1), (3,), (3,), "%s")}
      %c = "accy.constant"() <{{value = dense<0.5> : tensor<f32>}}> : () -> tensor<f32>
      %cb = "accy.broadcast"(%c) <{{dims = array<i64>}}> : (tensor<f32>) -> {sc}
      %ss = "accy.mul"(%s, %cb) : ({sc}, {sc}) -> {sc}
      {masked}
      %m = "accy.reduce"(%sm) <{{kind = "max", axes = array<i64: 3>}}> : ({sc}) -> {r}
      %mbb = "accy.broadcast"(%m) <{{dims = array<i64: 0, 1, 2>}}> : ({r}) -> {sc}
      %dd = "accy.sub"(%sm, %mbb) : ({sc}, {sc}) -> {sc}
      %e = "accy.exp"(%dd) : ({sc}) -> {sc}
      %su = "accy.reduce"(%e) <{{kind = "sum", axes = array<i64: 3>}}> : ({sc}) -> {r}
      %sb = "accy.broadcast"(%su) <{{dims = array<i64: 0, 1, 2>}}> : ({r}) -> {sc}
      %p = "accy.div"(%e, %sb) : ({sc}, {sc}) -> {sc}
      {dot("%p", "%v", sc, q, q, (0, 1), (0, 1), (3,), (2,), "%o")}"""
    return f"""
    func.func @main(%q: {q}, %k: {q}, %v: {q}{args}) -> {q} {{
      {body}
      func.return %o : {q}
    }}"""


def chain(n_ops: int, shape) -> str:
    x = T(shape)
    unary = ["exp", "tanh", "neg", "abs", "sigmoid"]
    lines, prev = [], "%x"
    for i in range(n_ops):
        if i % 3 == 2:
            lines.append(f'%v{i} = "accy.mul"({prev}, %y) : ({x}, {x}) -> {x}')
        else:
            lines.append(f'%v{i} = "accy.{unary[i % len(unary)]}"({prev}) : ({x}) -> {x}')
        prev = f"%v{i}"
    body = "\n      ".join(lines)
    return f"""
    func.func @main(%x: {x}, %y: {x}) -> {x} {{
      {body}
      func.return {prev} : {x}
    }}"""


def matmul_bias_relu(m: int, k: int, n: int) -> str:
    a, w, o = T((m, k)), T((k, n)), T((m, n))
    return f"""
    func.func @main(%a: {a}, %w: {w}, %b: {T((n,))}) -> {o} {{
      {dot("%a", "%w", a, w, o, name="%y")}
      %bb = "accy.broadcast"(%b) <{{dims = array<i64: 1>}}> : ({T((n,))}) -> {o}
      %z = "accy.add"(%y, %bb) : ({o}, {o}) -> {o}
      %r = "accy.relu"(%z) : ({o}) -> {o}
      func.return %r : {o}
    }}"""


SIZES = [(1, 1), (3, 17), (64, 128), (17, 3)]


@pytest.mark.parametrize("r, n", SIZES)
def test_softmax_is_one_row_pipeline(r, n):
    for text in (softmax_prims(r, n), softmax_prims(r, n).replace("accy.reduce", "accy.reduce")):
        _, sched, _, _ = analyse(text)
        assert [i.kind for i in sched.items] == ["row_pipeline"]


@pytest.mark.parametrize("r, n", SIZES)
@pytest.mark.parametrize("named", [True, False])
def test_layer_norm_is_one_row_pipeline(r, n, named):
    _, sched, outl, plan = analyse(layer_norm(r, n, named))
    assert [i.kind for i in sched.items] == ["row_pipeline"]
    (kern,) = outl.kernels
    assert kern.name == "main_k0_row_pipeline"
    assert [o.name_hint for o in kern.outputs] == ["y"]


RETURNED_ROW_BROADCAST = """func.func @main(%x: tensor<3x5xf32>) -> (tensor<3x5xf32>, tensor<3x5xf32>) {
  %m = "accy.reduce"(%x) <{kind = "max", axes = array<i64: 1>}> : (tensor<3x5xf32>) -> tensor<3xf32>
  %b = "accy.broadcast"(%m) <{dims = array<i64: 0>}> : (tensor<3xf32>) -> tensor<3x5xf32>
  %d = "accy.sub"(%x, %b) : (tensor<3x5xf32>, tensor<3x5xf32>) -> tensor<3x5xf32>
  func.return %b, %d : tensor<3x5xf32>, tensor<3x5xf32>
}"""


def test_returned_view_read_through_is_stored_once():
    """The row pipeline reads through the returned broadcast; only its copy
    item stores it, and every kernel stores something."""
    _, sched, outl, _ = analyse(RETURNED_ROW_BROADCAST)
    assert [i.kind for i in sched.items] == ["row_pipeline", "shape"]
    assert [[o.name_hint for o in k.outputs] for k in outl.kernels] == [["m", "d"], ["b"]]


@pytest.mark.parametrize("break_it", ["duplicate_item", "drop_copy_item"])
def test_outlining_invariants_name_the_kernel(break_it):
    """A schedule that breaks an outlining invariant is an internal error
    naming the kernel or value, not a crash in a lowering."""
    fn = main_of(parse(RETURNED_ROW_BROADCAST))
    am = AnalysisManager()
    sched = am.get(Schedule, fn)
    if break_it == "duplicate_item":
        sched.items.append(sched.items[-1])
        match = "kernel main_k2_shape .* stores no value"
    else:
        sched.items.pop()
        match = "returned value %b is stored by no kernel"
    with pytest.raises(OutliningError, match=match):
        am.get(Outlining, fn)


@pytest.mark.parametrize("n_ops", [2, 10, 25])
@pytest.mark.parametrize("shape", [(1,), (3, 17), (2, 3, 5)])
def test_elementwise_chain_is_one_kernel(n_ops, shape):
    _, sched, outl, plan = analyse(chain(n_ops, shape))
    assert [i.kind for i in sched.items] == ["elementwise"]
    assert len(sched.items[0].ops) == n_ops
    assert len(outl.kernels[0].outputs) == 1
    # x, y (read from the third op on) and the result: nothing in between
    # is stored.
    assert plan.peak_bytes == (3 if n_ops >= 3 else 2) * 4 * int(np.prod(shape))


@pytest.mark.parametrize("m, k, n", [(1, 1, 1), (3, 17, 5), (64, 32, 128)])
def test_matmul_bias_relu_is_one_kernel(m, k, n):
    _, sched, outl, plan = analyse(matmul_bias_relu(m, k, n))
    assert [i.kind for i in sched.items] == ["dot_general"]
    assert sched.items[0].anchor.name == "accy.dot_general"
    assert [v.name_hint for v in outl.kernels[0].inputs] == ["a", "w", "b"]
    assert plan.peak_bytes == 4 * (m * k + k * n + n + m * n)


@pytest.mark.parametrize("named", [True, False])
@pytest.mark.parametrize("causal", [True, False])
@pytest.mark.parametrize("b, h, s, d", [(1, 1, 3, 2), (2, 3, 17, 8), (1, 8, 1024, 64)])
def test_attention_is_one_flash_kernel_without_an_sxs_buffer(named, causal, b, h, s, d):
    _, sched, outl, plan = analyse(attention(b, h, s, d, named, causal))
    assert [i.kind for i in sched.items] == ["flash_attention"]
    (kern,) = outl.kernels
    assert [v.name_hint for v in kern.outputs] == ["o"]
    qkv_out = 4 * b * h * s * d * 4
    mask = s * s if causal and not named else 0
    splats = (4 if not named else 0) + (4 if causal and not named else 0)
    assert plan.peak_bytes == qkv_out + mask + splats
    if s >= 1024:
        assert plan.peak_bytes < s * s * 4 * h
        assert plan.peak_bytes / h < s * s * 4
    # No buffer as large as the scores of one head.
    if s * s > 2 * s * d + s:
        assert all(buf.nbytes < s * s * 4 for buf in plan.buffers if buf.owned)


def test_flash_needs_the_scores_private():
    """Scores returned as well as used: not a flash kernel (they must be stored)."""
    text = attention(1, 2, 5, 4, named=False, causal=False)
    text = text.replace("-> tensor<1x2x5x4xf32> {", "-> (tensor<1x2x5x4xf32>, tensor<1x2x5x5xf32>) {")
    text = text.replace("func.return %o : tensor<1x2x5x4xf32>", "func.return %o, %p : tensor<1x2x5x4xf32>, tensor<1x2x5x5xf32>")
    _, sched, _, _ = analyse(text)
    kinds = [i.kind for i in sched.items]
    assert "flash_attention" not in kinds
    assert kinds.count("dot_general") == 2 and "row_pipeline" in kinds


# --------------------------------------------------------------------------
# The plan's invariants
# --------------------------------------------------------------------------


def check_plan(fn, sched, outl, plan) -> None:
    """Every item kind is known; every op of an item comes before its users'
    items; kernel inputs/outputs have refs; values live at one step never
    share a buffer, except an in-place elementwise output over a dead input."""
    assert all(item.kind in KINDS for item in sched.items)
    produced_at: dict = {}
    for k, kern in enumerate(outl.kernels):
        for v in kern.inputs:
            assert v in plan.refs
            if v in produced_at:
                assert produced_at[v] < k
        for v in kern.outputs:
            assert v in plan.refs
            produced_at[v] = k
    for arg in fn.args:
        assert arg in plan.refs
    spans: dict = {}
    for k, kern in enumerate(outl.kernels):
        for v in kern.outputs:
            spans[v] = [k, k]
        for v in kern.inputs:
            if v in spans:
                spans[v][1] = k
    for a, (fa, la) in spans.items():
        for b, (fb, lb) in spans.items():
            if a is b or plan.refs[a].buffer != plan.refs[b].buffer:
                continue
            overlap = max(fa, fb) < min(la, lb)
            assert not overlap, f"{a.name_hint} and {b.name_hint} share a buffer while both live"


# Each program is one kernel, so everything is live at once: the peak is the
# bytes of every argument, stored constant and result, counted by hand.
PROGRAMS = [
    (softmax_prims(5, 7), 2 * 5 * 7 * 4),  # x, y
    (layer_norm(3, 17, False), 2 * 3 * 17 * 4 + 2 * 17 * 4 + 4),  # x, y; gamma, beta; the epsilon splat (one f32)
    # q, k, v, o; the 9x9 i1 causal mask (a byte each); two f32 splats (scale, -inf)
    (attention(1, 2, 9, 4, False, True), 4 * 2 * 9 * 4 * 4 + 9 * 9 + 2 * 4),
    (chain(10, (4, 4)), 3 * 4 * 4 * 4),  # x, y, the result
    (matmul_bias_relu(3, 5, 7), (3 * 5 + 5 * 7 + 7 + 3 * 7) * 4),  # a, w, bias, result
]


@pytest.mark.parametrize(("text", "peak"), PROGRAMS)
def test_plan_invariants(text, peak):
    fn, sched, outl, plan = analyse(text)
    check_plan(fn, sched, outl, plan)
    assert len(outl.kernels) == 1
    assert plan.peak_bytes == peak


def test_reuse_and_in_place_lower_the_peak():
    """A pipeline of stored values of one size: the plan needs two buffers
    for it however long it gets."""
    x = T((64,))
    lines = []
    prev = "%x"
    for i in range(6):
        lines.append(f'%s{i} = "accy.scan"({prev}) <{{kind = "sum", axis = 0 : i64}}> : ({x}) -> {x}')
        prev = f"%s{i}"
    text = f"""
    func.func @main(%x: {x}) -> {x} {{
      {chr(10).join(lines)}
      func.return {prev} : {x}
    }}"""
    fn, sched, outl, plan = analyse(text)
    assert len(outl.kernels) == 6
    check_plan(fn, sched, outl, plan)
    assert plan.peak_bytes == 2 * 256  # x with s0, then s(i-1) with s(i)
    assert len([b for b in plan.buffers if b.owned]) == 2


# --------------------------------------------------------------------------
# The cache
# --------------------------------------------------------------------------


def test_cache_kept_by_a_no_op_and_dropped_by_a_change():
    module = parse(softmax_prims(4, 8).replace("func.return %y", '%dead = "accy.exp"(%x) : (tensor<4x8xf32>) -> tensor<4x8xf32>\n      func.return %y'))
    fn = main_of(module)
    pm = PassManager([get_pass("dce")()])
    first = pm.am.get(BufferPlan, fn)
    assert pm.am.get(BufferPlan, fn) is first
    pm.run(module)  # dce erases the dead op: the IR changed
    assert pm.am.get_cached(BufferPlan, fn) is None
    assert pm.am.get_cached(Schedule, fn) is None
    again = pm.am.get(BufferPlan, fn)
    assert again is not first and again.peak_bytes == first.peak_bytes
    pm.run(module)  # nothing left to erase: everything is kept
    assert pm.am.get_cached(BufferPlan, fn) is again
    assert pm.am.stats["schedule"].misses == 2
    assert pm.am.stats["bufferization"].invalidations == 1
