"""ONNX BitShift on signed integer types (i8, i16, i32, i64) as onnx's
reference evaluator: shifts by negative amounts and by the width or more,
INT_MIN/INT_MAX, left shifts that wrap, arithmetic right shifts of negative
values, broadcast shift amounts, at an odd shape, on every device (one model
of all eight cases per device)."""

from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
from onnx import helper  # noqa: E402
from onnx_graphs import model, vi  # noqa: E402

from accy.cli.onnx_backend import AccyBackend, reference_outputs  # noqa: E402

DEVICES = ["reference", "llvm", "opencl"]
TYPES = [np.int8, np.int16, np.int32, np.int64]
RNG = np.random.default_rng(1717)


def shift_model():
    nodes, inputs, outputs, feeds = [], [], [], {}
    for dtype in TYPES:
        info = np.iinfo(dtype)
        bits = info.bits
        name = np.dtype(dtype).name
        x = RNG.integers(info.min, info.max, (7, 5), dtype=dtype, endpoint=True)
        x[0, :4] = [info.min, info.max, -1, 0]
        y = RNG.integers(-3, bits + 4, (7, 5)).astype(dtype)
        y[1, :4] = [bits - 1, bits, -1, 0]
        y1 = np.array([bits - 1], dtype)  # broadcast along x
        feeds.update({f"x_{name}": x, f"y_{name}": y, f"y1_{name}": y1})
        t = helper.np_dtype_to_tensor_dtype(np.dtype(dtype))
        inputs += [vi(f"x_{name}", [7, 5], t), vi(f"y_{name}", [7, 5], t), vi(f"y1_{name}", [1], t)]
        for direction in ("LEFT", "RIGHT"):
            for amount in (f"y_{name}", f"y1_{name}"):
                out = f"z_{name}_{direction}_{amount}"
                nodes.append(helper.make_node("BitShift", [f"x_{name}", amount], [out], direction=direction))
                outputs.append(vi(out, [7, 5], t))
    return model(nodes, inputs, outputs, opset=18), feeds


@pytest.mark.parametrize("device", DEVICES)
def test_signed_bit_shift_matches_onnx_reference(device):
    m, feeds = shift_model()
    want = reference_outputs(m, feeds)
    got = AccyBackend.for_device(device, strict=True).prepare(m).run(feeds)
    bad = [o.name for o, g, w in zip(m.graph.output, got, want, strict=True) if g.dtype != w.dtype or not np.array_equal(g, w)]
    assert not bad, bad
