"""The ONNX importer's Pad, ArgMax/ArgMin, Conv (ConvTranspose, ConvInteger)
and pools are the dialect's `accy.pad`, `accy.reduce` argmax/argmin,
`accy.conv` and `accy.pool`: every Pad mode with negative pads, pads past
the dim and the axes input; arg reductions with keepdims, select_last_index,
ties and NaNs; convolutions with groups, dilations, strides, asymmetric
pads, auto_pad and a bias; max, average (count_include_pad, ceil_mode,
dilations, auto_pad) and Lp pools, matching onnx's reference evaluator on
every device. The imported modules hold those ops, not slices of taps; what
the ops do not cover is one error naming the node."""

from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
import onnx_graphs  # noqa: E402
from onnx import TensorProto as TP  # noqa: E402
from onnx import helper  # noqa: E402
from onnx_graphs import vi  # noqa: E402

from accy.cli.onnx_backend import AccyBackend, reference_outputs  # noqa: E402
from accy.dialects import accy as A  # noqa: E402
from accy.frontends.onnx import OnnxImportError, import_model  # noqa: E402

DEVICES = ["reference", "llvm", "opencl"]
RNG = np.random.default_rng(2626)


def model(nodes, inputs, outputs, initializers=(), opset=19):
    """onnx_graphs.model at opset 19, this file's default."""
    return onnx_graphs.model(nodes, inputs, outputs, initializers, opset)




def const(name, values, dtype=np.int64):
    return onnx.numpy_helper.from_array(np.asarray(values, dtype), name)


def floats(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


def pads():
    """Each mode with a crop and pads past the dim (reflect and wrap repeat), the axes input, a constant value."""
    nodes, outs, inits = [], [], []
    for k, mode in enumerate(("constant", "edge", "reflect", "wrap")):
        inits.append(const(f"p{k}", [1, -1, 4, 5, 0, -2]))
        nodes.append(helper.make_node("Pad", ["x", f"p{k}", "v"], [f"y{k}"], mode=mode))
        outs.append(vi(f"y{k}", None))
    inits += [const("pa", [3, 7]), const("axes", [-1])]
    nodes.append(helper.make_node("Pad", ["x", "pa", "v", "axes"], ["ya"], mode="reflect"))
    outs.append(vi("ya", None))
    m = model(nodes, [vi("x", [3, 4, 5])], outs, inits + [onnx.numpy_helper.from_array(np.float32(2.5), "v")])
    return m, {"x": floats(3, 4, 5)}, A.PadOp, 5


def cropped_then_padded(x: np.ndarray, low: list[int], high: list[int], mode: str, value: float) -> np.ndarray:
    """ONNX's Pad with negative pads (which onnx's reference evaluator, numpy.pad, refuses):
    the negative ones crop, then numpy.pad pads by the others."""
    kept = x[tuple(slice(max(-lo, 0), n - max(-hi, 0)) for n, lo, hi in zip(x.shape, low, high, strict=True))]
    widths = [(max(lo, 0), max(hi, 0)) for lo, hi in zip(low, high, strict=True)]
    return np.pad(kept, widths, mode, **({"constant_values": value} if mode == "constant" else {}))


def pads_expected(feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
    x = feeds["x"]
    out = [cropped_then_padded(x, [1, -1, 4], [5, 0, -2], mode, 2.5) for mode in ("constant", "edge", "reflect", "wrap")]
    return [*out, np.pad(x, [(0, 0), (0, 0), (3, 7)], "reflect")]


def pad_opset2():
    m = model([helper.make_node("Pad", ["x"], ["y"], mode="edge", pads=[0, 2, 1, 3])], [vi("x", [2, 3])], [vi("y", None)], opset=2)
    return m, {"x": floats(2, 3)}, A.PadOp, 1


def arg_reductions():
    """Ties and NaNs in the data; keepdims and select_last_index both ways; int32 too."""
    nodes, outs = [], []
    for k, (op, axis, keep, last) in enumerate(
        [("ArgMax", 1, 1, 0), ("ArgMax", -1, 0, 1), ("ArgMin", 0, 0, 0), ("ArgMin", 2, 1, 1), ("ArgMax", 2, 0, 0)]
    ):
        nodes.append(helper.make_node(op, ["x"], [f"y{k}"], axis=axis, keepdims=keep, select_last_index=last))
        outs.append(vi(f"y{k}", None, TP.INT64))
    nodes.append(helper.make_node("ArgMin", ["i"], ["yi"], axis=1, select_last_index=1))
    outs.append(vi("yi", None, TP.INT64))
    x = RNG.integers(-2, 3, (3, 5, 7)).astype(np.float32)
    x[0, 1, 2] = x[2, 4, 0] = np.nan
    m = model(nodes, [vi("x", [3, 5, 7]), vi("i", [4, 9], TP.INT32)], outs, opset=13)
    return m, {"x": x, "i": RNG.integers(-3, 3, (4, 9)).astype(np.int32)}, A.ReduceOp, 6


def convs():
    """Groups, dilations, strides, asymmetric pads, auto_pad, a bias; 1-d and 2-d."""
    w = floats(6, 2, 3, 3)
    nodes = [
        helper.make_node("Conv", ["x", "w", "b"], ["y0"], group=2, strides=[2, 1], dilations=[1, 2], pads=[1, 0, 2, 1]),
        helper.make_node("Conv", ["x", "w"], ["y1"], group=2, auto_pad="SAME_UPPER", strides=[2, 2]),
        helper.make_node("Conv", ["x", "w"], ["y2"], group=2, auto_pad="SAME_LOWER", strides=[3, 2]),
        helper.make_node("Conv", ["x", "w1"], ["y3"], auto_pad="VALID"),
        helper.make_node("Conv", ["z", "w2"], ["y4"], pads=[2, 1], dilations=[3]),
    ]
    inits = [onnx.numpy_helper.from_array(w, "w"), onnx.numpy_helper.from_array(floats(6), "b"),
             onnx.numpy_helper.from_array(floats(5, 4, 1, 2), "w1"), onnx.numpy_helper.from_array(floats(3, 2, 3), "w2")]
    m = model(nodes, [vi("x", [2, 4, 7, 9]), vi("z", [1, 2, 11])], [vi(f"y{k}", None) for k in range(5)], inits)
    return m, {"x": floats(2, 4, 7, 9), "z": floats(1, 2, 11)}, A.ConvOp, 5


def conv_transpose_and_integer():
    nodes = [
        helper.make_node("ConvTranspose", ["x", "w"], ["y"], strides=[2, 3], pads=[1, 0, 0, 2], dilations=[1, 2]),
        helper.make_node("ConvInteger", ["q", "wq", "zq"], ["yq"], pads=[1, 1, 0, 1]),
    ]
    inits = [onnx.numpy_helper.from_array(floats(4, 3, 3, 2), "w"),
             onnx.numpy_helper.from_array(RNG.integers(0, 255, (3, 2, 2, 2)).astype(np.uint8), "wq"),
             onnx.numpy_helper.from_array(np.uint8(7), "zq")]
    m = model(nodes, [vi("x", [1, 4, 5, 4]), vi("q", [2, 2, 5, 6], TP.UINT8)], [vi("y", None), vi("yq", None, TP.INT32)],
              inits, opset=13)
    return m, {"x": floats(1, 4, 5, 4), "q": RNG.integers(0, 255, (2, 2, 5, 6)).astype(np.uint8)}, A.ConvOp, 2


def pools():
    """Max (integers too), average with and without count_include_pad, ceil_mode, dilations, auto_pad; Lp."""
    k = dict(kernel_shape=[3, 2])
    nodes = [
        helper.make_node("MaxPool", ["x"], ["y0"], strides=[2, 2], pads=[1, 0, 1, 1], dilations=[1, 2], **k),
        helper.make_node("MaxPool", ["x"], ["y1"], strides=[2, 3], ceil_mode=1, **k),
        helper.make_node("AveragePool", ["x"], ["y2"], strides=[2, 1], pads=[1, 1, 1, 0], count_include_pad=1, **k),
        helper.make_node("AveragePool", ["x"], ["y3"], strides=[2, 1], pads=[1, 1, 1, 0], **k),
        helper.make_node("AveragePool", ["x"], ["y4"], strides=[3, 3], ceil_mode=1, count_include_pad=1, pads=[0, 1, 0, 0], **k),
        helper.make_node("AveragePool", ["x"], ["y5"], strides=[2, 2], auto_pad="SAME_LOWER", **k),
        helper.make_node("AveragePool", ["x"], ["y6"], strides=[3, 2], ceil_mode=1, dilations=[2, 1], **k),
        helper.make_node("LpPool", ["x"], ["y7"], p=3, strides=[1, 2], pads=[0, 1, 1, 0], **k),
        helper.make_node("MaxPool", ["i"], ["y8"], kernel_shape=[2], pads=[1, 1], strides=[2]),
    ]
    outs = [vi(f"y{j}", None) for j in range(8)] + [vi("y8", None, TP.INT32)]
    m = model(nodes, [vi("x", [2, 3, 8, 7]), vi("i", [2, 3, 9], TP.INT32)], outs)
    return m, {"x": floats(2, 3, 8, 7), "i": RNG.integers(-9, 9, (2, 3, 9)).astype(np.int32)}, A.PoolOp, 9


MODELS = {f.__name__: f for f in (pads, pad_opset2, arg_reductions, convs, conv_transpose_and_integer, pools)}


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("name", list(MODELS))
def test_window_ops_match_onnx_reference(name: str, device: str) -> None:
    m, feeds, _, _ = MODELS[name]()
    got = AccyBackend.for_device(device).prepare(m).run(feeds)
    want = pads_expected(feeds) if name == "pads" else reference_outputs(m, feeds)
    assert len(got) == len(want)
    for i, (g, w) in enumerate(zip(got, want, strict=True)):
        assert g.dtype == w.dtype and g.shape == w.shape, f"output #{i}: {g.dtype}{g.shape}, onnx's {w.dtype}{w.shape}"
        if w.dtype.kind == "f":
            np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-4, err_msg=f"output #{i}")
        else:
            np.testing.assert_array_equal(g, w, err_msg=f"output #{i}")


@pytest.mark.parametrize("name", list(MODELS))
def test_each_node_is_one_dialect_op(name: str) -> None:
    m, _, cls, count = MODELS[name]()
    ops = list(import_model(m).walk())
    assert sum(isinstance(op, cls) for op in ops) == count
    # No taps written out: the dialect op computes the window (ConvTranspose
    # spreads its input by the strides with a concat and a slice first).
    if name != "conv_transpose_and_integer":
        assert not any(isinstance(op, A.SliceOp | A.ConcatOp) for op in ops)


def refusal(node, inputs, opset=19, initializers=()) -> str:
    m = model([node], inputs, [vi("y", None)], initializers, opset)
    with pytest.raises(OnnxImportError) as e:
        import_model(m)
    return str(e.value)


def test_what_the_ops_do_not_cover_is_one_error_naming_the_node() -> None:
    x = [vi("x", [1, 2, 5, 5])]
    assert "negative pads" in refusal(helper.make_node("Conv", ["x", "x"], ["y"], name="c", pads=[-1, 0, 0, 0]), x)
    message = refusal(helper.make_node("MaxPool", ["x"], ["y"], name="mp", kernel_shape=[2, 2], auto_pad="SAME_UPPER",
                                       ceil_mode=1), x)
    assert "'mp'" in message and "ceil_mode with auto_pad" in message
    message = refusal(helper.make_node("Pad", ["x", "p"], ["y"], name="pd", mode="edge"), [vi("x", [0, 3])], 19,
                      [const("p", [1, 0, 0, 0])])
    assert "'pd'" in message and "keeps no element" in message
    assert "empty axis" in refusal(helper.make_node("ArgMax", ["x"], ["y"], axis=1), [vi("x", [3, 0])])
