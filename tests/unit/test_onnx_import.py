"""The ONNX importer (accy/frontends/onnx.py) and backend (accy/cli/onnx_backend.py).

- Models built with onnx.helper (an MLP, a layer norm as the op and written
  out, an attention block of MatMul/Softmax, reductions with keepdims,
  broadcasting, a Reshape(Shape(...)) that folds away, a small CNN, an
  embedding lookup, unsigned integers) run on every device and match onnx's
  own reference evaluator on random inputs.
- What the importer does not import is one error naming the node, the op and
  what is missing: an op, an attribute, a dtype, a shape known only at run time.
- Literals are stored as bytes (a splat as one element), never as lists.
- A fixed slice of onnx's node tests, chosen for breadth, passes on every
  device through onnx's own runner (the whole suite: `make onnx`).
- `accy-opt model.onnx` prints the module; `accy-run model.onnx --check`
  runs it against onnx's reference evaluator.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
from onnx import TensorProto as TP  # noqa: E402
from onnx import helper  # noqa: E402
from onnx_graphs import model, vi  # noqa: E402
from xdsl.dialects.builtin import BytesAttr  # noqa: E402

from accy.cli.onnx_backend import AccyBackend, reference_outputs  # noqa: E402
from accy.dialects import accy as A  # noqa: E402
from accy.frontends.onnx import NeedsConstant, OnnxImportError, import_model, import_onnx  # noqa: E402

ROOT = Path(__file__).parents[2]
sys.path.insert(0, str(ROOT / "tools"))

import onnx_node_tests  # noqa: E402

DEVICES = ["reference", "llvm", "opencl"]
BIN = Path(sys.executable).parent
RNG = np.random.default_rng(22)




def weight(name, array):
    return onnx.numpy_helper.from_array(np.asarray(array), name)


def random_feeds(m):
    feeds = {}
    inits = {t.name for t in m.graph.initializer}
    for info in m.graph.input:
        if info.name in inits:
            continue
        tt = info.type.tensor_type
        shape = [d.dim_value for d in tt.shape.dim]
        dtype = helper.tensor_dtype_to_np_dtype(tt.elem_type)
        if dtype == np.bool_:
            feeds[info.name] = RNG.random(shape) < 0.5
        elif np.issubdtype(dtype, np.integer):
            feeds[info.name] = RNG.integers(0 if np.issubdtype(dtype, np.unsignedinteger) else -9, 200, shape).astype(dtype)
        else:
            feeds[info.name] = RNG.standard_normal(shape).astype(dtype)
    return feeds


def check_against_onnx(m, device, rtol=1e-4, atol=1e-5):
    feeds = random_feeds(m)
    got = AccyBackend.for_device(device).prepare(m).run(feeds)
    want = reference_outputs(m, feeds)
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        assert g.dtype == w.dtype and g.shape == w.shape
        np.testing.assert_allclose(g, w, rtol=rtol, atol=atol)


# --------------------------------------------------------------------------
# Models
# --------------------------------------------------------------------------


def mlp():
    return model(
        [
            helper.make_node("Gemm", ["x", "w1", "b1"], ["h"], transB=1),
            helper.make_node("Relu", ["h"], ["r"]),
            helper.make_node("MatMul", ["r", "w2"], ["o"]),
            helper.make_node("Add", ["o", "b2"], ["z"]),
            helper.make_node("Softmax", ["z"], ["y"], axis=-1),
        ],
        [vi("x", [8, 16])],
        [vi("y", [8, 4])],
        [
            weight("w1", RNG.standard_normal((32, 16)).astype(np.float32)),
            weight("b1", RNG.standard_normal(32).astype(np.float32)),
            weight("w2", RNG.standard_normal((32, 4)).astype(np.float32)),
            weight("b2", RNG.standard_normal(4).astype(np.float32)),
        ],
    )


def layer_norm_op():
    return model(
        [helper.make_node("LayerNormalization", ["x", "g", "b"], ["y"], axis=-1, epsilon=1e-5)],
        [vi("x", [6, 32])],
        [vi("y", [6, 32])],
        [weight("g", RNG.standard_normal(32).astype(np.float32)), weight("b", RNG.standard_normal(32).astype(np.float32))],
        opset=17,
    )


def layer_norm_written_out():
    two = weight("two", np.float32(2))
    eps = weight("eps", np.float32(1e-5))
    return model(
        [
            helper.make_node("ReduceMean", ["x", "axes"], ["m"], keepdims=1),
            helper.make_node("Sub", ["x", "m"], ["c"]),
            helper.make_node("Pow", ["c", "two"], ["c2"]),
            helper.make_node("ReduceMean", ["c2", "axes"], ["v"], keepdims=1),
            helper.make_node("Add", ["v", "eps"], ["ve"]),
            helper.make_node("Sqrt", ["ve"], ["s"]),
            helper.make_node("Div", ["c", "s"], ["y"]),
        ],
        [vi("x", [5, 24])],
        [vi("y", [5, 24])],
        [weight("axes", np.array([-1], dtype=np.int64)), two, eps],
    )


def attention_block():
    s, d = 16, 8
    return model(
        [
            helper.make_node("Transpose", ["k"], ["kt"], perm=[0, 2, 1]),
            helper.make_node("MatMul", ["q", "kt"], ["qk"]),
            helper.make_node("Mul", ["qk", "scale"], ["sc"]),
            helper.make_node("Softmax", ["sc"], ["p"], axis=-1),
            helper.make_node("MatMul", ["p", "v"], ["y"]),
        ],
        [vi("q", [2, s, d]), vi("k", [2, s, d]), vi("v", [2, s, d])],
        [vi("y", [2, s, d])],
        [weight("scale", np.float32(1 / np.sqrt(d)))],
    )


def reductions():
    return model(
        [
            helper.make_node("ReduceSum", ["x", "a1"], ["s"], keepdims=1),
            helper.make_node("ReduceMax", ["x", "a02"], ["mx"], keepdims=0),
            helper.make_node("ReduceMean", ["x"], ["mean"], keepdims=1),
            helper.make_node("ReduceL2", ["x", "a1"], ["l2"], keepdims=0),
            helper.make_node("ReduceLogSumExp", ["x", "a02"], ["lse"], keepdims=1),
            helper.make_node("ArgMin", ["x"], ["am"], axis=2, keepdims=0),
        ],
        [vi("x", [3, 5, 7])],
        [
            vi("s", [3, 1, 7]),
            vi("mx", [5]),
            vi("mean", [1, 1, 1]),
            vi("l2", [3, 7]),
            vi("lse", [1, 5, 1]),
            vi("am", [3, 5], TP.INT64),
        ],
        [weight("a1", np.array([1], dtype=np.int64)), weight("a02", np.array([0, 2], dtype=np.int64))],
    )


def broadcasting():
    return model(
        [
            helper.make_node("Add", ["a", "b"], ["s"]),
            helper.make_node("Greater", ["s", "c"], ["g"]),
            helper.make_node("Where", ["g", "a", "c"], ["y"]),
            helper.make_node("Mul", ["i", "j"], ["k"]),
        ],
        [vi("a", [3, 1, 5]), vi("b", [4, 5]), vi("c", [5]), vi("i", [2, 1], TP.INT32),
         vi("j", [3], TP.INT32)],
        [vi("y", [3, 4, 5]), vi("k", [2, 3], TP.INT32)],
    )  # fmt: skip


def reshape_of_shape():
    """x [2,3,4] reshaped to [Shape(x)[0], -1] via Shape, Gather, Unsqueeze, Concat."""
    return model(
        [
            helper.make_node("Shape", ["x"], ["sh"]),
            helper.make_node("Gather", ["sh", "zero"], ["d0"], axis=0),
            helper.make_node("Unsqueeze", ["d0", "axes"], ["d0v"]),
            helper.make_node("Concat", ["d0v", "minus1"], ["target"], axis=0),
            helper.make_node("Reshape", ["x", "target"], ["y"]),
            helper.make_node("ConstantOfShape", ["target_fixed"], ["ones"], value=helper.make_tensor("v", TP.FLOAT, [1], [1.0])),
            helper.make_node("Add", ["y", "ones"], ["z"]),
        ],
        [vi("x", [2, 3, 4])],
        [vi("z", [2, 12])],
        [
            weight("zero", np.array(0, dtype=np.int64)),
            weight("axes", np.array([0], dtype=np.int64)),
            weight("minus1", np.array([-1], dtype=np.int64)),
            weight("target_fixed", np.array([2, 12], dtype=np.int64)),
        ],
    )


def small_cnn():
    return model(
        [
            helper.make_node("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1]),
            helper.make_node("Relu", ["c"], ["r"]),
            helper.make_node("MaxPool", ["r"], ["p"], kernel_shape=[2, 2], strides=[2, 2]),
            helper.make_node("GlobalAveragePool", ["p"], ["g"]),
            helper.make_node("Flatten", ["g"], ["y"]),
        ],
        [vi("x", [2, 3, 8, 8])],
        [vi("y", [2, 4])],
        [weight("w", RNG.standard_normal((4, 3, 3, 3)).astype(np.float32)), weight("b", RNG.standard_normal(4).astype(np.float32))],
    )


def embedding():
    return model(
        [helper.make_node("Gather", ["table", "ids"], ["y"], axis=0)],
        [vi("ids", [2, 5], TP.INT64)],
        [vi("y", [2, 5, 8])],
        [weight("table", RNG.standard_normal((200, 8)).astype(np.float32))],
    )


def unsigned():
    return model(
        [helper.make_node("Add", ["a", "b"], ["s"]), helper.make_node("Mul", ["s", "b"], ["y"])],
        [vi("a", [16], TP.UINT8), vi("b", [16], TP.UINT8)],
        [vi("y", [16], TP.UINT8)],
    )


MODELS = {
    "mlp": mlp,
    "layer_norm_op": layer_norm_op,
    "layer_norm_written_out": layer_norm_written_out,
    "attention_block": attention_block,
    "reductions": reductions,
    "broadcasting": broadcasting,
    "reshape_of_shape": reshape_of_shape,
    "small_cnn": small_cnn,
    "embedding": embedding,
    "unsigned": unsigned,
}


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("name", list(MODELS))
def test_models_match_onnx_reference(name: str, device: str) -> None:
    rtol = 1e-3 if name in ("small_cnn", "attention_block") else 1e-4
    check_against_onnx(MODELS[name](), device, rtol=rtol)


def ops_of(module) -> list[str]:
    return [op.name for op in module.walk() if op.name.startswith("accy.")]


def test_shape_computations_fold_at_import() -> None:
    ops = ops_of(import_model(reshape_of_shape()))
    # Shape, Gather, Unsqueeze, Concat and ConstantOfShape leave no op behind: a reshape, a literal and an add.
    assert sorted(ops) == ["accy.add", "accy.constant", "accy.reshape"]


def test_the_function_takes_the_inputs_that_are_not_initializers() -> None:
    imported = import_onnx(mlp())
    assert imported.inputs == ["x"] and imported.outputs == ["y"]
    fn = imported.module.ops.first
    assert [str(t) for t in fn.function_type.inputs.data] == ["tensor<8x16xf32>"]


def test_large_initializers_are_bytes_and_splats_one_element() -> None:
    big = RNG.standard_normal((64, 64)).astype(np.float32)
    m = model(
        [helper.make_node("MatMul", ["x", "w"], ["h"]), helper.make_node("Add", ["h", "ones"], ["y"])],
        [vi("x", [4, 64])],
        [vi("y", [4, 64])],
        [weight("w", big), weight("ones", np.ones((4, 64), dtype=np.float32))],
    )
    literals = [op.value for op in import_model(m).walk() if isinstance(op, A.ConstantOp)]
    stored = sorted(len(v.data.data) for v in literals)
    assert all(isinstance(v.data, BytesAttr) for v in literals)
    assert stored == [4, big.nbytes]  # the splat of ones as its one element
    assert any(v.data.data == big.tobytes() for v in literals)


# --------------------------------------------------------------------------
# What is not imported
# --------------------------------------------------------------------------


def one_node(node, inputs, outputs, opset=18):
    return model([node], inputs, outputs, opset=opset)


def test_an_unsupported_op_names_the_node_the_op_and_what_is_missing() -> None:
    m = one_node(helper.make_node("NonZero", ["x"], ["y"], name="nz"), [vi("x", [4, 8])], [vi("y", [2, 3], TP.INT64)])
    with pytest.raises(OnnxImportError) as e:
        import_model(m)
    assert e.value.kind == "op" and e.value.node == "nz" and e.value.op_type == "NonZero"
    assert str(e.value) == (
        "node 'nz' (NonZero): operator NonZero is not supported (it needs data-dependent shapes, which the dialect does not have)"
    )


def test_an_attribute_no_handler_reads_is_refused_not_ignored() -> None:
    node = helper.make_node("Relu", ["x"], ["y"], name="r")
    node.attribute.append(helper.make_attribute("alpha", 0.5))  # not Relu's: silently ignoring it could be wrong
    with pytest.raises(OnnxImportError, match=r"node 'r' \(Relu\): attribute alpha is not supported") as e:
        import_model(one_node(node, [vi("x", [3])], [vi("y", [3])]))
    assert e.value.kind == "attribute"


def test_an_attribute_value_outside_what_is_imported_is_refused() -> None:
    node = helper.make_node("Gelu", ["x"], ["y"], name="g", approximate="sigmoid")
    with pytest.raises(OnnxImportError, match="approximate='sigmoid' is not supported"):
        import_model(one_node(node, [vi("x", [3])], [vi("y", [3])], opset=20))


@pytest.mark.parametrize("elem", [TP.UINT64, TP.STRING])
def test_a_dtype_the_dialect_lacks_is_refused(elem: int) -> None:
    m = one_node(helper.make_node("Identity", ["x"], ["y"]), [vi("x", [3], elem)], [vi("y", [3], elem)])
    with pytest.raises(OnnxImportError, match="graph input 'x' is") as e:
        import_model(m)
    assert e.value.kind == "dtype"


def test_a_shape_operand_computed_at_run_time_says_which_inputs_it_needs() -> None:
    m = one_node(
        helper.make_node("Reshape", ["x", "s"], ["y"], name="rs"),
        [vi("x", [2, 6]), vi("s", [2], TP.INT64)],
        [vi("y", [3, 4])],
    )
    with pytest.raises(NeedsConstant) as e:
        import_model(m)
    assert e.value.inputs == {"s"} and "shape (graph input 's') must be known at import" in str(e.value)
    # Given its value, the function is specialised on it and takes only x.
    imported = import_onnx(m, static_inputs={"s": np.array([3, 4])})
    assert imported.inputs == ["x"]
    # The backend does so itself, from the arrays of the call.
    x = RNG.standard_normal((2, 6)).astype(np.float32)
    rep = AccyBackend.for_device("reference").prepare(m)
    (y,) = rep.run([x, np.array([3, 4], dtype=np.int64)])
    np.testing.assert_array_equal(y, x.reshape(3, 4))
    assert rep.static_inputs == {"s"}


def test_a_shape_operand_computed_from_data_is_refused_never_specialised() -> None:
    """Specialising on a float input would fold the model's arithmetic away at import."""
    m = model(
        [
            helper.make_node("Abs", ["y"], ["ay"]),
            helper.make_node("Cast", ["ay"], ["s"], to=TP.INT64),
            helper.make_node("Reshape", ["x", "s"], ["z"], name="rs"),
        ],
        [vi("x", [2, 6]), vi("y", [2])],
        [vi("z", [3, 4])],
    )
    with pytest.raises(OnnxImportError) as e:
        import_model(m)
    assert e.value.kind == "constant" and not isinstance(e.value, NeedsConstant)
    assert "computed at run time from graph input(s) y" in str(e.value)
    with pytest.raises(OnnxImportError):
        AccyBackend.for_device("reference").prepare(m).run([np.zeros((2, 6), np.float32), np.array([3, 4], np.float32)])


def test_a_symbolic_dim_needs_its_shape() -> None:
    m = one_node(helper.make_node("Relu", ["x"], ["y"]), [vi("x", ["N", 3])], [vi("y", ["N", 3])])
    with pytest.raises(OnnxImportError, match="graph input 'x' has a dim 'N'"):
        import_model(m)
    assert "tensor<5x3xf32>" in str(import_model(m, input_shapes={"x": (5, 3)}))
    x = RNG.standard_normal((5, 3)).astype(np.float32)
    (y,) = AccyBackend.for_device("reference").prepare(m).run([x])
    np.testing.assert_array_equal(y, np.maximum(x, 0))


def test_training_dropout_is_refused_not_run_as_identity() -> None:
    m = model(
        [helper.make_node("Dropout", ["x", "r", "t"], ["y"], name="d")],
        [vi("x", [4])],
        [vi("y", [4])],
        [weight("r", np.float32(0.5)), weight("t", np.array(True))],
    )
    with pytest.raises(OnnxImportError, match="drops at random"):
        import_model(m)


# --------------------------------------------------------------------------
# onnx's node tests: a representative slice on every device
# --------------------------------------------------------------------------

#: A breadth-first slice of onnx's node tests: elementwise math and compares,
#: casts, logic, contraction, reductions, normalizations, shapes, gathers,
#: windows, attention, unsigned ints, a function-expanded test.
NODE_SLICE = """
test_add_bcast test_relu test_sigmoid test_gelu_tanh_2 test_erf test_div_int8 test_pow_types_int64_float32
test_mod_mixed_sign_int32 test_sign test_clip test_where_long_example test_cast_FLOAT_to_FLOAT16 test_equal_bcast
test_not_2d test_xor_bcast3v1d test_leakyrelu test_selu test_hardswish test_softplus test_mish test_matmul_4d
test_gemm_all_attributes test_einsum_batch_matmul test_reduce_sum_keepdims_example
test_reduce_l2_do_not_keepdims_example test_reduce_log_sum_exp_keepdims_random
test_argmax_keepdims_example_select_last_index test_cumsum_2d_axis_0 test_layer_normalization_4d_axis1
test_batchnorm_epsilon test_softmax_axis_1 test_logsoftmax_large_number test_reshape_negative_extended_dims
test_transpose_all_permutations_3 test_flatten_axis2 test_squeeze test_unsqueeze_two_axes test_expand_dim_changed
test_concat_2d_axis_negative_1 test_slice_negative_axes test_split_variable_parts_1d_opset18 test_tile test_gather_1
test_constant_pad test_tril_neg test_shape_start_1 test_constantofshape_int_zeros test_range_int32_type_negative_delta
test_maxpool_2d_pads test_averagepool_2d_pads_count_include_pad test_basic_conv_with_padding test_globalaveragepool
test_attention_4d_causal test_bitshift_left_uint8 test_layer_normalization_2d_axis0_expanded
test_gather_elements_negative_indices
""".split()


@pytest.mark.parametrize("device", DEVICES)
def test_a_slice_of_onnx_node_tests_passes(device: str) -> None:
    outcomes = onnx_node_tests.run_tests(device, NODE_SLICE)
    assert len(outcomes) == len(NODE_SLICE)
    failed = [(o.name, o.status, o.detail) for o in outcomes if o.status != "pass"]
    assert not failed


def test_the_runner_classifies_what_does_not_pass() -> None:
    outcomes = {o.name: o for o in onnx_node_tests.run_tests("reference", ["test_nonzero_example", "test_equal_string_broadcast"])}
    assert outcomes["test_nonzero_example"].status == "unsupported op"
    assert outcomes["test_equal_string_broadcast"].status == "unsupported dtype"
    assert outcomes["test_nonzero_example"].op == "NonZero" and outcomes["test_nonzero_example"].detail.startswith("node ")


# --------------------------------------------------------------------------
# The tools
# --------------------------------------------------------------------------


def run_tool(tool: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(BIN / tool), *args], capture_output=True, text=True, timeout=300, check=False)


def test_accy_opt_prints_the_imported_module(tmp_path: Path) -> None:
    path = tmp_path / "mlp.onnx"
    onnx.save(mlp(), path)
    done = run_tool("accy-opt", str(path))
    assert done.returncode == 0, done.stderr
    assert "func.func @main(%0: tensor<8x16xf32>) -> tensor<8x4xf32>" in done.stdout and "accy.softmax" in done.stdout


def test_accy_opt_reports_what_it_cannot_import(tmp_path: Path) -> None:
    path = tmp_path / "bad.onnx"
    m = one_node(helper.make_node("Det", ["x"], ["y"], name="det"), [vi("x", [3, 3])], [vi("y", [])])
    onnx.save(m, path)
    done = run_tool("accy-opt", str(path))
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr == f"{path}: error: node 'det' (Det): operator Det is not supported\n"


@pytest.mark.parametrize("device", ["llvm", "opencl"])
def test_accy_run_checks_a_model_against_onnx_reference(device: str, tmp_path: Path) -> None:
    path = tmp_path / "cnn.onnx"
    onnx.save(small_cnn(), path)
    done = run_tool("accy-run", str(path), "--device", device, "--check", "--random", "3")
    assert done.returncode == 0, done.stderr
    assert "check out0:" in done.stdout and ": ok" in done.stdout
