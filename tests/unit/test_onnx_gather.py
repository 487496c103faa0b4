"""The ONNX importer's gathers are `accy.gather`s: Gather, GatherElements and
GatherND (batch dims, partial and full index tuples), ReverseSequence and a
Slice with a negative step, at sizes the former compare-and-reduce
decompositions refused (past GATHER_LIMIT / SLICE_LIMIT), with negative
indices and i32/i64 indices, matching onnx's reference evaluator on every
device; the imported module holds gathers and no reduction."""

from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
from onnx import TensorProto as TP  # noqa: E402
from onnx import helper  # noqa: E402
from onnx_graphs import model, vi  # noqa: E402

from accy.cli.onnx_backend import AccyBackend, reference_outputs  # noqa: E402
from accy.dialects import accy as A  # noqa: E402
from accy.frontends.onnx import import_model  # noqa: E402

DEVICES = ["reference", "llvm", "opencl"]
RNG = np.random.default_rng(2222)




def ints(lo, hi, shape, dtype=np.int64):
    return RNG.integers(lo, hi, shape).astype(dtype)


def floats(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


def big_embedding():
    """6000 x 64 rows by 3 x 700 run-time ids: 8e8 elements of compare work."""
    table = onnx.numpy_helper.from_array(floats(6000, 64), "table")
    m = model([helper.make_node("Gather", ["table", "ids"], ["y"], axis=0)],
              [vi("ids", [3, 700], TP.INT64)], [vi("y", [3, 700, 64])], [table])
    return m, {"ids": ints(-6000, 6000, (3, 700))}


def gather_axis1_i32():
    m = model([helper.make_node("Gather", ["x", "i"], ["y"], axis=1)],
              [vi("x", [3, 13, 2]), vi("i", [4, 5], TP.INT32)], [vi("y", [3, 4, 5, 2])])
    return m, {"x": floats(3, 13, 2), "i": ints(-13, 13, (4, 5), np.int32)}


def gather_scalar_index():
    m = model([helper.make_node("Gather", ["x", "i"], ["y"], axis=0)],
              [vi("x", [7, 3]), vi("i", [], TP.INT64)], [vi("y", [3])])
    return m, {"x": floats(7, 3), "i": np.array(-2, np.int64)}


def gather_elements():
    m = model([helper.make_node("GatherElements", ["x", "i"], ["y"], axis=1)],
              [vi("x", [4, 7, 3]), vi("i", [4, 5, 3], TP.INT64)], [vi("y", [4, 5, 3])])
    return m, {"x": floats(4, 7, 3), "i": ints(-7, 7, (4, 5, 3))}


def gather_elements_big():
    """A [300, 2000] GatherElements along the rows: 1.2e9 elements of compare
    work. (onnx 1.23's reference evaluator gathers only the first column of
    a 2-d GatherElements: `NUMPY_ORACLES` holds numpy's answer.)"""
    m = model([helper.make_node("GatherElements", ["x", "i"], ["y"], axis=1)],
              [vi("x", [300, 2000]), vi("i", [300, 2000], TP.INT32)], [vi("y", [300, 2000])])
    return m, {"x": floats(300, 2000), "i": ints(-2000, 2000, (300, 2000), np.int32)}


def gather_nd_batch():
    m = model([helper.make_node("GatherND", ["x", "i"], ["y"], batch_dims=1)],
              [vi("x", [2, 5, 3, 4]), vi("i", [2, 6, 2], TP.INT64)], [vi("y", [2, 6, 4])])
    i = np.stack([ints(-5, 5, (2, 6)), ints(-3, 3, (2, 6))], axis=-1)
    return m, {"x": floats(2, 5, 3, 4), "i": i}


def gather_nd_rows_and_elements():
    m = model([helper.make_node("GatherND", ["x", "r"], ["rows"]), helper.make_node("GatherND", ["x", "e"], ["elems"])],
              [vi("x", [5, 3]), vi("r", [4, 1], TP.INT64), vi("e", [2, 3, 2], TP.INT64)],
              [vi("rows", [4, 3]), vi("elems", [2, 3])])
    e = np.stack([ints(-5, 5, (2, 3)), ints(-3, 3, (2, 3))], axis=-1)
    return m, {"x": floats(5, 3), "r": ints(-5, 5, (4, 1)), "e": e}


def reverse_long_dim():
    """A Slice with step -1 over a dim of 5000 (past SLICE_LIMIT slices)."""
    c = [onnx.numpy_helper.from_array(np.array(v, np.int64), k)
         for k, v in (("s", [-1]), ("e", [-(2**62)]), ("a", [1]), ("t", [-1]))]
    m = model([helper.make_node("Slice", ["x", "s", "e", "a", "t"], ["y"])],
              [vi("x", [8, 5000])], [vi("y", [8, 5000])], c)
    return m, {"x": floats(8, 5000)}


def reverse_sequence():
    lens = onnx.numpy_helper.from_array(np.array([4, 1, 3], np.int64), "lens")
    m = model([helper.make_node("ReverseSequence", ["x", "lens"], ["y"], time_axis=1, batch_axis=0)],
              [vi("x", [3, 5, 2])], [vi("y", [3, 5, 2])], [lens])
    return m, {"x": floats(3, 5, 2)}


CASES = {f.__name__: f for f in (big_embedding, gather_axis1_i32, gather_scalar_index, gather_elements,
                                  gather_elements_big, gather_nd_batch, gather_nd_rows_and_elements,
                                  reverse_long_dim, reverse_sequence)}


#: Cases whose expected outputs numpy computes instead of onnx's reference.
NUMPY_ORACLES = {"gather_elements_big": lambda f: [np.take_along_axis(f["x"], f["i"], axis=1)]}


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("name", sorted(CASES))
def test_gathers_match_onnx_reference(name: str, device: str) -> None:
    m, feeds = CASES[name]()
    got = AccyBackend.for_device(device).prepare(m).run(feeds)
    want = NUMPY_ORACLES[name](feeds) if name in NUMPY_ORACLES else reference_outputs(m, feeds)
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        assert g.shape == w.shape and g.dtype == w.dtype
        np.testing.assert_array_equal(g, w)  # a gather moves elements: exact


@pytest.mark.parametrize("name", sorted(CASES))
def test_gathers_import_as_accy_gather(name: str) -> None:
    m, _ = CASES[name]()
    ops = [op for op in import_model(m).walk()]
    assert any(isinstance(op, A.GatherOp) for op in ops)
    assert not any(isinstance(op, A.ReduceOp) for op in ops)  # no compare-and-max left
