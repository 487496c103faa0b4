"""accy.conv and accy.pool in the reference interpreter against onnx's own
reference evaluator (Conv, MaxPool, AveragePool with ceil_mode = 0) at odd
geometries: 1x1 kernels, strides past the kernel, dilations, depthwise
groups, padding past half the kernel, 1-d, 2-d and 3-d."""

from __future__ import annotations

import numpy as np
import pytest
from xdsl.builder import ImplicitBuilder
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp

from accy.dialects.accy import ConvOp, PoolOp
from accy.dialects.types import tensor
from accy.reference import interpreter

onnx = pytest.importorskip("onnx")
from onnx import helper  # noqa: E402
from onnx.reference import ReferenceEvaluator  # noqa: E402

#: (input shape, weight shape, strides, dilations, pads_low, pads_high, groups)
CONVS = [
    ((1, 3, 7), (2, 3, 1), [1], [1], [0], [0], 1),
    ((2, 3, 11), (4, 3, 3), [4], [1], [2], [3], 1),  # stride past the kernel, pads past half of it
    ((1, 4, 9, 10), (4, 1, 3, 3), [1, 2], [1, 1], [1, 1], [1, 2], 4),  # depthwise
    ((2, 6, 8, 7), (9, 2, 2, 3), [2, 1], [2, 3], [0, 2], [1, 0], 3),  # groups, dilations
    ((1, 2, 5, 6, 4), (3, 2, 3, 2, 3), [1, 2, 1], [1, 1, 2], [1, 0, 2], [2, 1, 0], 1),  # 3-d
    ((3, 5, 13, 1), (7, 5, 1, 1), [3, 1], [1, 1], [0, 0], [0, 0], 1),  # 1x1, a spatial dim of 1
]

#: (input shape, window, strides, dilations, pads_low, pads_high)
POOLS = [
    ((1, 3, 9), [1], [1], [1], [0], [0]),
    ((2, 3, 11), [3], [4], [1], [1], [1]),
    ((1, 2, 9, 10), [3, 3], [1, 2], [1, 1], [1, 1], [1, 1]),
    ((2, 2, 8, 9), [2, 3], [2, 1], [2, 2], [0, 1], [1, 1]),
    ((1, 2, 5, 6, 7), [2, 3, 2], [1, 2, 2], [1, 1, 2], [1, 1, 0], [0, 1, 1]),
]


def _run_accy(make_op, *arrays: np.ndarray) -> np.ndarray:  # type: ignore[no-untyped-def]
    types = [tensor(a.shape, _elem(a.dtype)) for a in arrays]
    f = func.FuncOp("main", (types, []))
    with ImplicitBuilder(f.body.block):
        op = make_op(*f.body.block.args)
        func.ReturnOp(op)
    f.function_type = func.FunctionType.from_lists(types, [op.result.type])
    m = ModuleOp([f])
    m.verify()
    (r,) = interpreter.run(m, "main", *arrays)
    return r


def _elem(dtype: np.dtype):  # type: ignore[no-untyped-def]
    from xdsl.dialects.builtin import f16, f32, f64, i32

    return {np.dtype("float32"): f32, np.dtype("float16"): f16, np.dtype("float64"): f64, np.dtype("int32"): i32}[np.dtype(dtype)]


def _onnx(op: str, inputs: list[np.ndarray], **attrs) -> np.ndarray:  # type: ignore[no-untyped-def]
    names = [f"i{k}" for k in range(len(inputs))]
    node = helper.make_node(op, names, ["y"], **attrs)
    et = helper.np_dtype_to_tensor_dtype(inputs[0].dtype)
    graph = helper.make_graph(
        [node], "g", [helper.make_tensor_value_info(n, et, a.shape) for n, a in zip(names, inputs, strict=True)],
        [helper.make_tensor_value_info("y", et, None)],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)])
    (y,) = ReferenceEvaluator(model).run(None, dict(zip(names, inputs, strict=True)))
    return y


@pytest.mark.parametrize("case", CONVS, ids=lambda c: f"{c[0]}*{c[1]}")
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_conv_matches_onnx(case, dtype: str) -> None:  # type: ignore[no-untyped-def]
    xs, ws, strides, dil, lo, hi, groups = case
    rng = np.random.default_rng(0)
    x = rng.standard_normal(xs).astype(dtype)
    w = rng.standard_normal(ws).astype(dtype)
    got = _run_accy(lambda a, b: ConvOp(a, b, strides, dil, lo, hi, groups), x, w)
    want = _onnx("Conv", [x, w], strides=strides, dilations=dil, pads=[*lo, *hi], group=groups, kernel_shape=list(ws[2:]))
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("case", POOLS, ids=lambda c: f"{c[0]}/{c[1]}")
@pytest.mark.parametrize("kind", ["max", "average", "average_include"])
def test_pool_matches_onnx(case, kind: str) -> None:  # type: ignore[no-untyped-def]
    xs, window, strides, dil, lo, hi = case
    x = np.random.default_rng(1).standard_normal(xs).astype(np.float32)
    include = kind == "average_include"
    accy_kind = "max" if kind == "max" else "average"
    got = _run_accy(lambda a: PoolOp(a, accy_kind, window, strides, dil, lo, hi, include), x)
    attrs = {"kernel_shape": window, "strides": strides, "pads": [*lo, *hi]}
    if kind == "max":
        attrs["dilations"] = dil
        want = _onnx("MaxPool", [x], **attrs)
    else:
        attrs["count_include_pad"] = int(include)
        attrs["dilations"] = dil
        want = _onnx("AveragePool", [x], **attrs)
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_pool_sum_and_integer_max() -> None:
    x = np.arange(2 * 3 * 7, dtype=np.int32).reshape(2, 3, 7) * np.int32(-1)
    got = _run_accy(lambda a: PoolOp(a, "max", [3], [2], [1], [2], [2]), x)
    xp = np.pad(x, [(0, 0), (0, 0), (2, 2)], constant_values=np.iinfo(np.int32).min)
    want = np.stack([xp[..., 2 * i : 2 * i + 3].max(-1) for i in range(got.shape[-1])], -1)
    np.testing.assert_array_equal(got, want)
    s = _run_accy(lambda a: PoolOp(a, "sum", [3], [2], [1], [2], [2]), x)
    xz = np.pad(x, [(0, 0), (0, 0), (2, 2)])
    np.testing.assert_array_equal(s, np.stack([xz[..., 2 * i : 2 * i + 3].sum(-1) for i in range(s.shape[-1])], -1))
