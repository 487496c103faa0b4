"""decompose: each named op's primitive form computes what the named op does
(checked by the reference interpreter on random inputs), and leaves no named
op behind."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import pytest
from xdsl.dialects.builtin import Float32Type, Float64Type, ModuleOp
from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue

from accy.dialects.accy import (
    AttentionOp,
    ConstantOp,
    DotGeneralOp,
    LayerNormOp,
    LogSoftmaxOp,
    ReduceOp,
    SelectOp,
    SoftmaxOp,
    tensor,
)
from accy.dialects.context import make_context
from accy.passes.decompose import DecomposePass
from accy.passes.pass_manager import AnalysisManager
from accy.reference import numpy_dtype, run

f32, f64 = Float32Type(), Float64Type()
CTX = make_context()


def single_op_module(arg_types: Sequence[Attribute], make: Callable[[list[SSAValue]], Operation]) -> ModuleOp:
    """`func.func @main(args) { return make(args) }`."""
    block = Block(arg_types=list(arg_types))
    op = make(list(block.args))
    block.add_ops([op, ReturnOp(op.results[0])])
    func = FuncOp("main", (list(arg_types), [op.results[0].type]), Region(block))
    return ModuleOp([func])


def random_inputs(module: ModuleOp, seed: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    func = next(iter(module.ops))
    assert isinstance(func, FuncOp)
    return [
        (rng.standard_normal(tuple(t.get_shape())) * 3).astype(numpy_dtype(t.element_type))
        for t in func.function_type.inputs.data
    ]


def check_decomposition(module: ModuleOp, named: type[Operation], seed: int = 0) -> ModuleOp:
    """Decomposes `module` and checks the result matches the named op's."""
    module.verify()
    inputs = random_inputs(module, seed)
    (want,) = run(module, "main", *inputs)
    DecomposePass().run(CTX, module, AnalysisManager())
    module.verify()
    assert not any(isinstance(op, named) for op in module.walk())
    (got,) = run(module, "main", *inputs)
    assert got.dtype == want.dtype and got.shape == want.shape
    tol = 1e-5 if want.dtype == np.float32 else 1e-12
    np.testing.assert_allclose(got, want, rtol=tol * 10, atol=tol)
    return module


@pytest.mark.parametrize("log", [False, True])
@pytest.mark.parametrize(
    ("shape", "axis"),
    [((1,), 0), ((17,), -1), ((3, 17), 1), ((3, 17), 0), ((2, 3, 5), 1), ((2, 1, 5), -2)],
)
def test_softmax(shape: tuple[int, ...], axis: int, log: bool) -> None:
    cls = LogSoftmaxOp if log else SoftmaxOp
    check_decomposition(single_op_module([tensor(shape, f32)], lambda a: cls(a[0], axis)), cls)


def test_softmax_f64_large_values() -> None:
    # Unstable forms overflow exp(1000): the row max must be subtracted.
    m = single_op_module([tensor((3, 4), f64)], lambda a: SoftmaxOp(a[0], -1))
    DecomposePass().run(CTX, m, AnalysisManager())
    x = np.array([[1000.0, 999.0, 998.0, -5.0]] * 3)
    (got,) = run(m, "main", x)
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    np.testing.assert_allclose(got, e / e.sum(axis=-1, keepdims=True), rtol=1e-12)


@pytest.mark.parametrize("shape", [(1,), (17,), (3, 17), (2, 3, 5)])
@pytest.mark.parametrize("dtype", [f32, f64])
def test_layer_norm(shape: tuple[int, ...], dtype: Attribute) -> None:
    last = tensor(shape[-1:], dtype)
    m = single_op_module([tensor(shape, dtype), last, last], lambda a: LayerNormOp(a[0], a[1], a[2], epsilon=1e-3))
    check_decomposition(m, LayerNormOp, seed=len(shape))


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize(
    ("q", "k", "dv"),
    [
        ((1, 1), (1, 1), 1),
        ((5, 8), (7, 8), 3),
        ((7, 4), (5, 4), 4),
        ((2, 5, 8), (2, 5, 8), 8),
        ((2, 3, 17, 4), (2, 3, 9, 4), 5),
    ],
)
def test_attention(q: tuple[int, ...], k: tuple[int, ...], dv: int, causal: bool) -> None:
    v = (*k[:-1], dv)
    m = single_op_module(
        [tensor(q, f32), tensor(k, f32), tensor(v, f32)],
        lambda a: AttentionOp(a[0], a[1], a[2], scale=0.3, causal=causal),
    )
    check_decomposition(m, AttentionOp, seed=len(q) + causal)
    dots = [op for op in m.walk() if isinstance(op, DotGeneralOp)]
    assert len(dots) == 2
    assert any(isinstance(op, SelectOp) for op in m.walk()) == causal


def test_causal_mask_is_finite_and_keeps_key_zero() -> None:
    # A query row whose scores at unmasked keys are hugely negative must still
    # attend to key 0 only (the masked fill must be lower than any score).
    m = single_op_module(
        [tensor((3, 2), f32), tensor((3, 2), f32), tensor((3, 2), f32)],
        lambda a: AttentionOp(a[0], a[1], a[2], scale=1.0, causal=True),
    )
    DecomposePass().run(CTX, m, AnalysisManager())
    fills = [op for op in m.walk() if isinstance(op, ConstantOp) and op.value.get_element_type() == f32]
    assert any(np.isfinite(v) and v < -1e38 for op in fills for v in op.value.get_values()[:1])
    q = np.array([[1.0, 0.0], [1.0, 0.0], [1.0, 0.0]], np.float32)
    k = np.array([[-1e3, 0.0], [5.0, 0.0], [5.0, 0.0]], np.float32)
    v = np.arange(6, dtype=np.float32).reshape(3, 2)
    (got,) = run(m, "main", q, k, v)
    np.testing.assert_allclose(got[0], v[0])


def test_ops_option_limits_the_rewrite() -> None:
    m = single_op_module([tensor((3, 4), f32)], lambda a: SoftmaxOp(a[0], -1))
    DecomposePass(ops=("layer_norm",)).run(CTX, m, AnalysisManager())
    assert any(isinstance(op, SoftmaxOp) for op in m.walk())
    assert DecomposePass(ops=("layer_norm",)).run(CTX, m, AnalysisManager()).everything
    DecomposePass(ops=("softmax",)).run(CTX, m, AnalysisManager())
    assert [op.kind.data for op in m.walk() if isinstance(op, ReduceOp)] == ["max", "sum"]


def test_unknown_op_option_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match="unknown op.*gemm"):
        DecomposePass(ops=("gemm",))


def test_pipeline_option_parses() -> None:
    from xdsl.passes import PassPipeline

    from accy.passes.registry import get_pass

    pipeline = PassPipeline.parse_spec({"decompose": lambda: get_pass("decompose")}, "decompose{ops=softmax,attention}")
    assert pipeline.passes[0].ops == ("softmax", "attention")
