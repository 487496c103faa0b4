"""ONNX's narrow types (float8 x4, float4e2m1, float8e8m0, int4, uint4,
int2, uint2) through Cast and CastLike, bit-exact with onnx's reference
evaluator on every device: from f32, f16 and f64 (saturate on and off, e8m0's
three round modes) over every code's value, the values halfway between
neighbouring codes (ties to even) and just off them, subnormals, ±0, ±inf,
NaN and out-of-range values; every code back to f32 and f16; integers
wrapping into int4/int2. One model per device holds all the casts (one
compile). Any other op on such a value is one "dtype" error naming the node."""

from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
from onnx import TensorProto as TP  # noqa: E402
from onnx import helper  # noqa: E402
from onnx_graphs import model, vi  # noqa: E402

from accy.cli.onnx_backend import AccyBackend, reference_outputs  # noqa: E402
from accy.frontends.onnx import OnnxImportError, import_model  # noqa: E402
from accy.frontends.onnx_narrow import FLOATS, INTS  # noqa: E402

DEVICES = ["reference", "llvm", "opencl"]
FLOAT_TYPES = [*FLOATS, TP.FLOAT8E8M0]
RNG = np.random.default_rng(825)


def _values(t: int) -> np.ndarray:
    """The finite values of type `t`, sorted."""
    n = 16 if t == TP.FLOAT4E2M1 else 256
    v = np.arange(n, dtype=np.uint8).view(helper.tensor_dtype_to_np_dtype(t)).astype(np.float64)
    return np.unique(v[np.isfinite(v)])


def drawn() -> np.ndarray:
    """f64 values that probe every type's rounding."""
    parts = [np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1e30, -1e30, 1e-45, -1e-45, 2.0**-149, 3e38])]
    for t in FLOAT_TYPES:
        v = _values(t)
        mid = (v[1:] + v[:-1]) / 2
        parts += [v, -v, mid, -mid, np.nextafter(mid, np.inf), np.nextafter(mid, -np.inf), v * 1.5, v[-1:] * 1.0625]
    parts.append(RNG.standard_normal(999) * 10.0 ** RNG.integers(-8, 8, 999))
    return np.concatenate(parts)


def cast(x: str, y: str, to: int, **attrs):
    return helper.make_node("Cast", [x], [y], to=to, **attrs)


def cast_model():
    """Every cast the test checks, in one graph, and its inputs."""
    x = drawn()
    with np.errstate(over="ignore"):  # values past f16's range are drawn on purpose: they become ±inf
        feeds = {"x32": x.astype(np.float32), "x16": x.astype(np.float16), "x64": x}
    feeds["i32"] = RNG.integers(-300, 300, 37).astype(np.int32)
    nodes, inputs, outputs = [], [vi(k, [a.size], helper.np_dtype_to_tensor_dtype(a.dtype)) for k, a in feeds.items()], []
    k = 0

    def out(node_inputs, to, op="Cast", **attrs):
        nonlocal k
        name = f"y{k}"
        k += 1
        if op == "Cast":
            nodes.append(cast(node_inputs, name, to, **attrs))
        else:
            nodes.append(helper.make_node(op, node_inputs, [name], **attrs))
        return name

    def declare(name, to, size):
        outputs.append(vi(name, [size], to))

    for t in FLOAT_TYPES:
        for src in ("x32", "x16", "x64"):
            for sat in (1, 0):
                modes = ("up", "down", "nearest") if t == TP.FLOAT8E8M0 else ("up",)
                for mode in modes:
                    declare(out(src, t, saturate=sat, round_mode=mode), t, x.size)
        codes = np.arange(16 if t == TP.FLOAT4E2M1 else 256, dtype=np.uint8)
        name = f"c{t}"
        feeds[name] = codes.view(helper.tensor_dtype_to_np_dtype(t))
        inputs.append(vi(name, [codes.size], t))
        declare(out(name, TP.FLOAT), TP.FLOAT, codes.size)
        declare(out(name, TP.FLOAT16), TP.FLOAT16, codes.size)
        # CastLike to f16, and to another narrow type (decode, then encode).
        declare(out([name, "x16"], None, op="CastLike"), TP.FLOAT16, codes.size)
        declare(out(name, TP.FLOAT8E5M2), TP.FLOAT8E5M2, codes.size)
    for t in INTS:
        for src in ("x32", "x16", "i32"):
            declare(out(src, t), t, feeds[src].size)
        small = np.arange(INTS[t][0], INTS[t][1] + 1)
        name = f"n{t}"
        feeds[name] = small.astype(helper.tensor_dtype_to_np_dtype(t))
        inputs.append(vi(name, [small.size], t))
        for to in (TP.FLOAT, TP.INT8, TP.UINT8, TP.INT4, TP.FLOAT8E4M3FN):
            declare(out(name, to), to, small.size)
    m = model(nodes, inputs, outputs, opset=25)
    return m, feeds


@pytest.fixture(scope="module")
def casts():
    m, feeds = cast_model()
    return m, feeds, reference_outputs(m, feeds)


@pytest.mark.parametrize("device", DEVICES)
def test_casts_match_onnx_reference_bit_exactly(device, casts):
    m, feeds, want = casts
    got = AccyBackend.for_device(device, strict=True).prepare(m).run(feeds)
    assert len(got) == len(want)
    bad = []
    for node, g, w in zip(m.graph.node, got, want, strict=True):
        assert g.dtype == w.dtype, (node, g.dtype, w.dtype)
        gb, wb = np.ascontiguousarray(g).view(np.uint8), np.ascontiguousarray(w).view(np.uint8)
        if g.dtype.kind == "f" and g.dtype.itemsize > 1:  # NaN payloads aside: NaN where NaN, else the bits
            same = (np.isnan(g) & np.isnan(w)) | (g.view(f"u{g.itemsize}") == w.view(f"u{w.itemsize}"))
            ok = bool(same.all())
        else:
            ok = np.array_equal(gb, wb)
        if not ok:
            bad.append(helper.printable_node(node))
    assert not bad, bad


def test_narrow_value_refused_by_other_ops():
    m = model([helper.make_node("Add", ["x", "x"], ["y"], name="add8")],
              [vi("x", [4], TP.FLOAT8E4M3FN)], [vi("y", [4], TP.FLOAT8E4M3FN)], opset=21)
    with pytest.raises(OnnxImportError, match=r"node 'add8' \(Add\): input 'x' is float8e4m3fn") as e:
        import_model(m)
    assert e.value.kind == "dtype"


def test_identity_passes_codes_through():
    m = model([helper.make_node("Identity", ["x"], ["y"])], [vi("x", [5], TP.UINT4)], [vi("y", [5], TP.UINT4)], opset=21)
    x = np.array([0, 3, 15, 7, 8]).astype(helper.tensor_dtype_to_np_dtype(TP.UINT4))
    (y,) = AccyBackend.for_device("reference").prepare(m).run([x])
    assert y.dtype == x.dtype and np.array_equal(y.view(np.uint8), x.view(np.uint8))
