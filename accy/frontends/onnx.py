"""The ONNX importer: an ONNX model as one `func.func @main` of the accy dialect.

    from accy.frontends.onnx import import_model
    module = import_model("model.onnx")          # or a ModelProto, or its bytes
    exe = accy.compile(module, device="llvm")    # (at the face: this module never compiles)

The function takes the graph's inputs that are not initializers, in the
graph's order, and returns the graph's outputs. Every shape is static: a
graph input with a symbolic dim needs its shape given (`input_shapes`).

What happens to each node:

- **Folded.** A node whose inputs are all known at import (initializers,
  `Constant`s, the results of other folded nodes, `static_inputs`) is
  evaluated once with onnx's own reference implementation
  (`onnx.reference`), so it has ONNX's semantics by definition, and its
  results are literals. `Shape`, `Size` and `EyeLike` of any tensor are
  known from its static shape, so shape computations (Shape, Gather of a
  shape, Concat of shapes, Reshape with -1 and 0, ConstantOfShape, Range of
  constants) fold away. Literals are dense attributes built from the
  array's bytes (a splat as its one element), never Python lists.
- **Imported.** Otherwise a handler below writes it with the dialect's ops
  (docs/op-contract.md), making numpy's broadcasting explicit with
  `accy.broadcast`. A handler reads exactly the attributes and inputs it
  understands: one it did not read, an element type the dialect does not
  have (uint64, strings; 8- and 4-bit floats and 4- and 2-bit integers
  anywhere but Cast, CastLike and Identity), an operand that
  must be known at import but is not (a Reshape's shape computed from
  data), or an op the dialect cannot express yet is an
  `OnnxImportError` naming the node, the op and what is missing, never a
  wrong answer. Each op built is verified as it is built.
- **Expanded.** An op with no handler whose schema defines it as an ONNX
  function (HardSwish, Mish, MeanVarianceNormalization, Attention, ...) is
  replaced by that function's body, whose nodes are then imported.

Handlers cover every opset onnx defines for their ops (where an attribute
became an input, both). Gather, GatherElements, GatherND, ReverseSequence
and reversals are `accy.gather`s (the last three over a flattened view at
computed linear indices); Pad is `accy.pad`, ArgMax/ArgMin `accy.reduce`'s
argmax/argmin, Conv (ConvTranspose, ConvInteger) `accy.conv`, the pools
`accy.pool`. Where the dialect has no op yet (scatter, sort), the handler
writes an exact composition of the ops it has, up to a size past which it
refuses naming the op it needs (docs/onnx.md, "Decompositions"): scatters
by run-time indices as compares and reductions (GATHER_LIMIT), MaxPool's
Indices output as strided slices of the padded input (TAP_LIMIT),
recurrences and loops unrolled (STEP_LIMIT, UNROLL_LIMIT), Resize as each
axis's interpolation matrix, TopK as K rounds of an extreme (TOPK_LIMIT).
An unsigned type is held in the signed type
twice as wide (UNSIGNED); a narrow type (float8, float4, int4, ...) as its
codes (`accy/frontends/onnx_narrow.py`).

This module imports only `accy.dialects`, numpy, onnx and xDSL
(tests/unit/test_layering.py): running the imported function happens at the
face (`accy/cli/onnx_backend.py`, `accy-run model.onnx`).
"""

from __future__ import annotations

import itertools
import math
import os
import string
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import IO, Any, ClassVar

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import (
    BFloat16Type,
    BytesAttr,
    DenseIntOrFPElementsAttr,
    Float16Type,
    Float32Type,
    Float64Type,
    IntegerType,
    ModuleOp,
    TensorType,
)
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.utils.exceptions import VerifyException
from xdsl.utils.frontend import Frontend

from accy.dialects import accy as A
from accy.dialects.dense import splat_literal
from accy.dialects.types import elem_of, is_bool, is_float, is_int, shape_of, tensor
from accy.frontends import onnx_narrow
from accy.frontends.onnx_narrow import NARROW
from accy.frontends.onnx_narrow import round_half_even as _round_half_even

# --------------------------------------------------------------------------
# Errors
# --------------------------------------------------------------------------


class OnnxImportError(ValueError):
    """What the importer cannot import, with `kind`: "op" (an operator it
    does not import), "attribute" (an attribute or input of it, or a value
    of one), "dtype" (an element type the dialect lacks), "constant" (an
    operand that must be known at import), "shape" (a dim that is not
    static) or "model" (the model itself is malformed)."""

    def __init__(self, kind: str, message: str, node: str | None = None, op_type: str | None = None) -> None:
        where = f"node '{node}' ({op_type}): " if node is not None else ""
        super().__init__(where + message)
        self.kind = kind
        self.node = node
        self.op_type = op_type


class NeedsConstant(OnnxImportError):
    """An operand that must be known at import (a shape, axes, pads) is a
    graph input: `inputs` names it. Importing again with it in
    `static_inputs` specialises the function on its value (what the ONNX
    backend does, recompiling when it changes). An operand computed from
    graph inputs is an OnnxImportError of kind "constant" instead: the
    function is never specialised on the data it computes with."""

    def __init__(self, message: str, inputs: frozenset[str], node: str, op_type: str) -> None:
        super().__init__("constant", message, node, op_type)
        self.inputs = inputs


# --------------------------------------------------------------------------
# Element types
# --------------------------------------------------------------------------

#: ONNX element types the dialect has, with their accy types.
ELEMENT_TYPES: dict[int, Attribute] = {
    TensorProto.FLOAT: Float32Type(),
    TensorProto.DOUBLE: Float64Type(),
    TensorProto.FLOAT16: Float16Type(),
    TensorProto.BFLOAT16: BFloat16Type(),
    TensorProto.BOOL: IntegerType(1),
    TensorProto.INT8: IntegerType(8),
    TensorProto.INT16: IntegerType(16),
    TensorProto.INT32: IntegerType(32),
    TensorProto.INT64: IntegerType(64),
}
#: Unsigned ONNX types: held in the signed type twice as wide, whose values
#: stay in 0 .. 2**bits - 1 (every result that could leave that range is
#: masked back into it, so arithmetic wraps as the unsigned type's does).
UNSIGNED: dict[int, tuple[Attribute, int]] = {
    TensorProto.UINT8: (IntegerType(16), 8),
    TensorProto.UINT16: (IntegerType(32), 16),
    TensorProto.UINT32: (IntegerType(64), 32),
}
SUPPORTED_DTYPES = (
    "float32, float64, float16, bfloat16, bool, int8, int16, int32, int64, uint8, uint16, uint32"
    " (and float8/float4/e8m0/int4/uint4/int2/uint2 through Cast, CastLike and Identity only)"
)


def _dtype_name(elem_type: int) -> str:
    try:
        return TensorProto.DataType.Name(elem_type).lower()
    except ValueError:
        return f"element type {elem_type}"


def element_type(elem_type: int) -> Attribute:
    """The accy element type that holds ONNX element type `elem_type`; KeyError if none."""
    if elem_type in NARROW:
        return NARROW[elem_type]
    return ELEMENT_TYPES[elem_type] if elem_type in ELEMENT_TYPES else UNSIGNED[elem_type][0]


def held_dtype(elem_type: int) -> np.dtype:
    """The numpy dtype of the arrays the imported function takes or returns
    for ONNX element type `elem_type` (int16 for uint8, ...)."""
    return numpy_dtype_of(element_type(elem_type))


def _onnx_type_of(et: Attribute) -> int:
    for k, v in ELEMENT_TYPES.items():
        if v == et:
            return k
    raise KeyError(et)


def numpy_dtype_of(et: Attribute) -> np.dtype:
    """The numpy dtype of an accy element type this importer writes."""
    return np.dtype(helper.tensor_dtype_to_np_dtype(_onnx_type_of(et)))


def _element_of_dtype(dtype: np.dtype) -> Attribute | None:
    """The accy type that holds numpy `dtype` (an unsigned one widened), or None."""
    try:
        t = helper.np_dtype_to_tensor_dtype(np.dtype(dtype))
    except (KeyError, TypeError, ValueError):
        return None
    return element_type(t) if t in ELEMENT_TYPES or t in UNSIGNED else None


def dense_literal(array: np.ndarray, et: Attribute) -> DenseIntOrFPElementsAttr:
    """`array` as a dense attribute of `tensor<shape x et>`, built from its
    bytes (i1 stored as a byte, true as -1, as xDSL stores it); a splat is
    stored as its one element whatever its size."""
    t = tensor(array.shape, et)
    dtype = numpy_dtype_of(et)
    data = np.ascontiguousarray(array.astype(dtype, copy=False))
    if dtype == np.bool_:
        data = np.where(data, -1, 0).astype("<i1")
    else:
        data = data.astype(dtype.newbyteorder("<"), copy=False)
    flat = data.reshape(-1)
    if flat.size > 1:
        bits = flat.view(f"<u{flat.itemsize}") if flat.itemsize in (1, 2, 4, 8) else flat
        if bool((bits == bits[0]).all()):
            return splat_literal(t, flat[:1].tobytes())
    return DenseIntOrFPElementsAttr(t, BytesAttr(flat.tobytes()))


# --------------------------------------------------------------------------
# The import
# --------------------------------------------------------------------------

#: The most elements a graph input of integers may have for an operand that
#: must be known at import to be computed from it (`_Importer.is_metadata`).
METADATA_LIMIT = 64
#: Ops whose results are random: never folded, never imported.
NONDETERMINISTIC = frozenset(
    {"Bernoulli", "Multinomial", "RandomNormal", "RandomNormalLike", "RandomUniform", "RandomUniformLike"}
)
#: Inputs of a folded node beyond this many elements in all are imported
#: as literals instead (folding evaluates on the host, at import).
FOLD_LIMIT = 1 << 22
#: The most slices one decomposition (a Gather of known indices, a reflect
#: Pad, a Slice with a negative step) writes before it is refused.
SLICE_LIMIT = 1024

Value = SSAValue | np.ndarray


@dataclass
class ImportedModel:
    """An imported model: the module, and which graph inputs the function
    takes (in order) and which graph outputs it returns."""

    module: ModuleOp
    inputs: list[str]
    outputs: list[str]
    #: The ONNX element type of each input and output (an unsigned one is
    #: held in a wider signed type: `held_dtype`).
    input_types: list[int] = field(default_factory=list)
    output_types: list[int] = field(default_factory=list)


def load(model_or_path: onnx.ModelProto | str | os.PathLike[str] | bytes) -> onnx.ModelProto:
    """The model: a ModelProto as it is, bytes parsed, a path loaded (with
    its external data)."""
    if isinstance(model_or_path, onnx.ModelProto):
        return model_or_path
    if isinstance(model_or_path, bytes):
        return onnx.load_model_from_string(model_or_path)
    return onnx.load(os.fspath(model_or_path))


def import_model(
    model_or_path: onnx.ModelProto | str | os.PathLike[str] | bytes,
    *,
    input_shapes: Mapping[str, Sequence[int]] | None = None,
    static_inputs: Mapping[str, np.ndarray] | None = None,
) -> ModuleOp:
    """The model as a module holding one `func.func @main` of the accy
    dialect (see the module docstring). `input_shapes` gives the shapes of
    graph inputs (needed where the graph declares a symbolic dim);
    `static_inputs` gives graph inputs known at import, which the function
    then does not take. Raises `OnnxImportError`."""
    return import_onnx(model_or_path, input_shapes=input_shapes, static_inputs=static_inputs).module


def import_onnx(
    model_or_path: onnx.ModelProto | str | os.PathLike[str] | bytes,
    *,
    input_shapes: Mapping[str, Sequence[int]] | None = None,
    static_inputs: Mapping[str, np.ndarray] | None = None,
) -> ImportedModel:
    """`import_model`, also saying which graph inputs the function takes and
    which outputs it returns."""
    model = load(model_or_path)
    return _Importer(model, dict(input_shapes or {}), dict(static_inputs or {})).run()


class _Importer:
    def __init__(self, model: onnx.ModelProto, input_shapes: dict[str, Sequence[int]], static: dict[str, np.ndarray]):
        self.model = model
        self.input_shapes = input_shapes
        self.static = static
        self.values: dict[str, Value] = {}
        #: SSA value -> the graph inputs it is computed from.
        self.sources: dict[SSAValue, frozenset[str]] = {}
        #: The function's arguments -> the graph inputs they are.
        self.graph_inputs: dict[SSAValue, str] = {}
        #: SSA value -> the width of the unsigned type it holds (see UNSIGNED).
        self.unsigned: dict[SSAValue, int] = {}
        #: SSA value -> the narrow ONNX type whose codes it holds (onnx_narrow.NARROW).
        self.narrow: dict[SSAValue, int] = {}
        self.literals: dict[str, SSAValue] = {}
        self.ops: list[Operation] = []
        self.functions = {(f.domain, f.name): f for f in model.functions}
        self.counter = 0
        self.opsets = {(o.domain or ""): o.version for o in model.opset_import}
        if "ai.onnx" in self.opsets:
            self.opsets.setdefault("", self.opsets["ai.onnx"])

    def run(self) -> ImportedModel:
        graph = self.model.graph
        inits = {t.name for t in graph.initializer}
        for t in graph.initializer:
            self.values[t.name] = _tensor_value(t)
        for s in graph.sparse_initializer:
            raise OnnxImportError("model", f"sparse initializer '{s.values.name}' is not supported")
        block = Block()
        names: list[str] = []
        in_types: list[int] = []
        for vi in graph.input:
            if vi.name in inits:
                continue  # an input with a default (IR < 4): the initializer is its value
            if vi.name in self.static:
                self.values[vi.name] = np.asarray(self.static[vi.name])
                continue
            t = self._input_type(vi)
            arg = block.insert_arg(t, len(block.args))
            self.values[vi.name] = arg
            self.sources[arg] = frozenset({vi.name})
            self.graph_inputs[arg] = vi.name
            elem_type = vi.type.tensor_type.elem_type
            if elem_type in UNSIGNED:
                self.unsigned[arg] = UNSIGNED[elem_type][1]
            if elem_type in NARROW:
                self.narrow[arg] = elem_type
            names.append(vi.name)
            in_types.append(elem_type)
        self.run_nodes(graph.node, self.opsets)
        results: list[SSAValue] = []
        out_types: list[int] = []
        for vo in graph.output:
            if vo.name not in self.values:
                raise OnnxImportError("model", f"graph output '{vo.name}' is computed by no node")
            v = self.ssa(vo.name)
            computed = self.onnx_type(v)
            declared = vo.type.tensor_type.elem_type if vo.type.HasField("tensor_type") else 0
            if declared and computed != declared:
                raise OnnxImportError(
                    "model", f"graph output '{vo.name}' is declared {_dtype_name(declared)}, computed as {_dtype_name(computed)}"
                )
            results.append(v)
            out_types.append(computed)
        block.add_ops([*self.ops, func.ReturnOp(*results)])
        fn = func.FuncOp("main", ([a.type for a in block.args], [r.type for r in results]), Region(block))
        return ImportedModel(ModuleOp([fn]), names, [vo.name for vo in graph.output], in_types, out_types)

    def is_metadata(self, name: str) -> bool:
        """Whether graph input `name` is a small integer or bool tensor, as
        shapes, axes and counts are: what an operand that must be known at
        import may be computed from (NeedsConstant), unlike data."""
        v = self.values.get(name)
        return (
            isinstance(v, SSAValue)
            and (is_int(elem_of(v)) or is_bool(elem_of(v)))
            and math.prod(shape_of(v)) <= METADATA_LIMIT
        )

    def onnx_type(self, v: Value) -> int:
        """The ONNX element type of a value."""
        if isinstance(v, SSAValue):
            if v in self.narrow:
                return self.narrow[v]
            bits = self.unsigned.get(v)
            if bits is not None:
                return next(k for k, (_, b) in UNSIGNED.items() if b == bits)
            return _onnx_type_of(elem_of(v))
        return helper.np_dtype_to_tensor_dtype(v.dtype)

    def _input_type(self, vi: onnx.ValueInfoProto) -> TensorType:
        if not vi.type.HasField("tensor_type"):
            kind = vi.type.WhichOneof("value")
            raise OnnxImportError("dtype", f"graph input '{vi.name}' is a {kind}, not a tensor: only tensors are supported")
        tt = vi.type.tensor_type
        if tt.elem_type not in ELEMENT_TYPES and tt.elem_type not in UNSIGNED and tt.elem_type not in NARROW:
            raise OnnxImportError(
                "dtype", f"graph input '{vi.name}' is {_dtype_name(tt.elem_type)}: accy has {SUPPORTED_DTYPES}"
            )
        given = self.input_shapes.get(vi.name)
        if given is not None:
            shape = [int(d) for d in given]
            declared = list(tt.shape.dim) if tt.HasField("shape") else None
            if declared is not None and (
                len(declared) != len(shape)
                or any(d.HasField("dim_value") and d.dim_value != s for d, s in zip(declared, shape, strict=True))
            ):
                raise OnnxImportError("shape", f"graph input '{vi.name}': shape {shape} does not match the declared one")
        else:
            if not tt.HasField("shape"):
                raise OnnxImportError("shape", f"graph input '{vi.name}' has no declared shape: give it in input_shapes")
            shape = []
            for d in tt.shape.dim:
                if not d.HasField("dim_value"):
                    what = f"'{d.dim_param}'" if d.dim_param else "of unknown size"
                    raise OnnxImportError(
                        "shape", f"graph input '{vi.name}' has a dim {what}: give its shape in input_shapes (accy's shapes are static)"
                    )
                shape.append(d.dim_value)
        return tensor(shape, element_type(tt.elem_type))

    # -- values ----------------------------------------------------------

    def ssa(self, name: str) -> SSAValue:
        """The SSA value of `name`, a literal for a known value."""
        v = self.values[name]
        if isinstance(v, SSAValue):
            return v
        if name not in self.literals:
            self.literals[name] = self.literal(v)
        return self.literals[name]

    def literal(self, array: np.ndarray, et: Attribute | None = None) -> SSAValue:
        narrow = _narrow_type_of(array.dtype) if et is None else None
        if narrow is not None:
            v = self.emit(A.ConstantOp(dense_literal(onnx_narrow.to_held(array, narrow), NARROW[narrow])))
            self.narrow[v] = narrow
            return v
        if et is None:
            et = _element_of_dtype(array.dtype)
            if et is None:
                raise OnnxImportError("dtype", f"a literal of {array.dtype} is not supported: accy has {SUPPORTED_DTYPES}")
        v = self.emit(A.ConstantOp(dense_literal(np.asarray(array), et)))
        if array.dtype.kind == "u":
            self.unsigned[v] = array.dtype.itemsize * 8
        return v

    def emit(self, op: Operation) -> SSAValue:
        op.verify()
        self.ops.append(op)
        result = op.results[0]
        self.sources[result] = frozenset().union(*(self.sources.get(o, frozenset()) for o in op.operands))
        return result

    def fresh(self, base: str) -> str:
        self.counter += 1
        return f"{base}__accy{self.counter}"

    # -- nodes -----------------------------------------------------------

    def run_nodes(self, nodes: Iterable[onnx.NodeProto], opsets: Mapping[str, int]) -> None:
        for index, node in enumerate(nodes):
            self.run_node(node, opsets, index)

    def run_node(self, node: onnx.NodeProto, opsets: Mapping[str, int], index: int = 0) -> None:
        label = node.name or (f"{node.op_type}->{node.output[0]}" if node.output else f"{node.op_type}#{index}")
        domain = node.domain if node.domain != "ai.onnx" else ""
        for name in node.input:
            if name and name not in self.values:
                raise OnnxImportError("model", f"input '{name}' is not computed before it is used", label, node.op_type)
        local = self.functions.get((node.domain, node.op_type))
        if local is not None:
            self.expand(node, local, label, _function_opsets(local, opsets))
            return
        if domain != "":
            # Another domain's op is imported only as the function its schema defines (ai.onnx.preview's).
            found = _schema_function(node, opsets.get(domain, 1), self, domain)
            if found is None:
                raise OnnxImportError(
                    "op", f"operator domain '{node.domain}' is not supported (only the default ONNX domain)", label, node.op_type
                )
            self.expand(node, found[0], label, _function_opsets(found[0], opsets), found[1])
            return
        if "" not in opsets:
            raise OnnxImportError("model", "the model imports no version of the default ONNX domain", label, node.op_type)
        opset = opsets[""]
        if self.try_fold(node, opset, label):
            return
        handler = HANDLERS.get(node.op_type)
        if handler is None:
            found = _schema_function(node, opset, self)
            if found is not None:
                body, defaults = found
                self.expand(node, body, label, _function_opsets(body, opsets), defaults)
                return
            raise OnnxImportError("op", f"operator {node.op_type} is not supported{_missing_op(node.op_type)}", label, node.op_type)
        if node.op_type not in NARROW_OPS:
            for name in node.input:
                v = self.values[name] if name else None
                if isinstance(v, SSAValue) and v in self.narrow:
                    raise OnnxImportError(
                        "dtype",
                        f"input '{name}' is {_dtype_name(self.narrow[v])}, which accy carries only through "
                        f"{', '.join(sorted(NARROW_OPS))}",
                        label,
                        node.op_type,
                    )
        ctx = _Node(self, node, opset, label, opsets)
        outputs = handler(ctx)
        ctx.finish(outputs)

    def try_fold(self, node: onnx.NodeProto, opset: int, label: str) -> bool:
        if node.op_type in NONDETERMINISTIC or node.op_type in NO_FOLD:
            return False
        if any(a.type in (onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS) for a in node.attribute):
            return False
        if node.op_type in SHAPE_ONLY and node.input and node.input[0]:
            v = self.values[node.input[0]]
            if isinstance(v, SSAValue):
                # What these read of their input is its shape and type: a zero-strided stand-in holds them.
                dtype = helper.tensor_dtype_to_np_dtype(self.onnx_type(v))
                v = np.broadcast_to(np.zeros((), dtype), shape_of(v))
            feeds = {node.input[0]: v}
        else:
            feeds = {}
            for name in node.input:
                if not name:
                    continue
                v = self.values[name]
                if isinstance(v, SSAValue):
                    return False
                feeds[name] = v
            if sum(np.size(v) for v in feeds.values()) > FOLD_LIMIT:
                return False
        try:
            results = _evaluate(node, feeds, opset)
        except Exception:  # noqa: BLE001 - onnx's reference could not: the handler decides
            return False
        if len(results) < len([o for o in node.output if o]) or not all(isinstance(r, np.ndarray | np.generic) for r in results):
            return False
        for name, r in zip(node.output, results, strict=False):
            if name:
                self.values[name] = np.asarray(r)
        return True

    def expand(
        self,
        node: onnx.NodeProto,
        fn: onnx.FunctionProto,
        label: str,
        opsets: Mapping[str, int],
        defaults: Mapping[str, onnx.AttributeProto] | None = None,
    ) -> None:
        """Imports `fn`'s body in place of `node`: its formal inputs and
        outputs are the node's, its other names fresh, its attribute
        references the node's attributes (else the function's defaults, else
        the schema's `defaults`)."""
        renamed: dict[str, str] = {}
        for formal, actual in zip(fn.input, node.input, strict=False):
            renamed[formal] = actual
        for formal in fn.input[len(node.input):]:
            renamed[formal] = ""
        for formal, actual in zip(fn.output, node.output, strict=False):
            renamed[formal] = actual or self.fresh(formal)
        for formal in fn.output[len(node.output):]:
            renamed[formal] = self.fresh(formal)
        attrs = dict(defaults or {})
        attrs.update({a.name: a for a in fn.attribute_proto})
        attrs.update({a.name: a for a in node.attribute})
        for inner in fn.node:
            for name in inner.output:
                if name and name not in renamed:
                    renamed[name] = self.fresh(name)
        for inner in fn.node:
            copy = _renamed_node(inner, renamed, attrs)
            copy.name = f"{label}/{inner.name or inner.op_type}"
            self.run_node(copy, opsets)

    def run_subgraph(self, graph: onnx.GraphProto, bindings: Sequence[Value], opsets: Mapping[str, int], label: str) -> list[Value]:
        """Imports one run of `graph` (an If branch, a loop body) with its
        inputs bound to `bindings`, under fresh names (so that a body can run
        many times); it reads outer values by their names. Its outputs."""
        if len(bindings) != len(graph.input):
            raise OnnxImportError("model", f"a subgraph takes {len(graph.input)} inputs, given {len(bindings)}", label)
        renamed: dict[str, str] = {}
        for vi, v in zip(graph.input, bindings, strict=True):
            renamed[vi.name] = self.fresh(vi.name)
            self.values[renamed[vi.name]] = v
        for t in graph.initializer:
            renamed[t.name] = self.fresh(t.name)
            self.values[renamed[t.name]] = _tensor_value(t)
        for inner in graph.node:
            for name in inner.output:
                if name:
                    renamed[name] = self.fresh(name)
        for inner in graph.node:
            copy = _renamed_node(inner, renamed)
            copy.name = f"{label}/{inner.name or inner.op_type}"
            self.run_node(copy, opsets)
        return [self.values[renamed.get(o.name, o.name)] for o in graph.output]


def _renamed_node(
    node: onnx.NodeProto, renamed: Mapping[str, str], refs: Mapping[str, onnx.AttributeProto] | None = None
) -> onnx.NodeProto:
    """A copy of `node` reading and writing the names `renamed` maps (others
    as they are), its subgraphs reading them too, and (with `refs`) its
    attribute references resolved from `refs` (dropped where it has none)."""
    copy = onnx.NodeProto()
    copy.CopyFrom(node)
    del copy.input[:]
    copy.input.extend(renamed.get(n, n) if n else "" for n in node.input)
    del copy.output[:]
    copy.output.extend(renamed.get(n, n) if n else "" for n in node.output)
    del copy.attribute[:]
    for a in node.attribute:
        if a.ref_attr_name and refs is not None:
            if a.ref_attr_name in refs:
                given = onnx.AttributeProto()
                given.CopyFrom(refs[a.ref_attr_name])
                given.name = a.name
                copy.attribute.append(given)
            continue
        given = onnx.AttributeProto()
        given.CopyFrom(a)
        if a.type == onnx.AttributeProto.GRAPH:
            given.g.CopyFrom(_renamed_graph(a.g, renamed, refs))
        elif a.type == onnx.AttributeProto.GRAPHS:
            del given.graphs[:]
            given.graphs.extend(_renamed_graph(g, renamed, refs) for g in a.graphs)
        copy.attribute.append(given)
    return copy


def _renamed_graph(
    graph: onnx.GraphProto, renamed: Mapping[str, str], refs: Mapping[str, onnx.AttributeProto] | None
) -> onnx.GraphProto:
    """`graph` reading the outer names `renamed` maps; the names it defines
    itself (inputs, initializers, node outputs) stay its own."""
    own = {vi.name for vi in graph.input} | {t.name for t in graph.initializer}
    own |= {o for n in graph.node for o in n.output}
    outer = {k: v for k, v in renamed.items() if k not in own}
    copy = onnx.GraphProto()
    copy.CopyFrom(graph)
    del copy.node[:]
    copy.node.extend(_renamed_node(n, outer, refs) for n in graph.node)
    for o in copy.output:
        o.name = outer.get(o.name, o.name)
    return copy


def _function_opsets(fn: onnx.FunctionProto, outer: Mapping[str, int]) -> dict[str, int]:
    opsets = dict(outer)
    for o in fn.opset_import:
        opsets[o.domain if o.domain != "ai.onnx" else ""] = o.version
    return opsets


def _schema_function(
    node: onnx.NodeProto, opset: int, importer: _Importer, domain: str = ""
) -> tuple[onnx.FunctionProto, dict[str, onnx.AttributeProto]] | None:
    """The function body the schema of `node`'s op gives for `opset`, and
    the schema's attribute defaults; None when it gives none."""
    try:
        schema = onnx.defs.get_schema(node.op_type, opset, domain)
    except onnx.defs.SchemaError:
        return None
    defaults = {
        name: a.default_value
        for name, a in schema.attributes.items()
        if a.default_value.type != onnx.AttributeProto.UNDEFINED
    }
    body = _schema_body(schema, node, opset, importer)
    return None if body is None else (body, defaults)


def _schema_body(schema: Any, node: onnx.NodeProto, opset: int, importer: _Importer) -> onnx.FunctionProto | None:
    if schema.has_function:
        versions = [v for v in schema.function_opset_versions if v <= opset] or list(schema.function_opset_versions)
        fn = schema.get_function_with_opset_version(max(versions))
        if isinstance(fn, bytes):
            parsed = onnx.FunctionProto()
            parsed.ParseFromString(fn)
            return parsed
        return fn
    if schema.has_context_dependent_function:
        types = []
        for name in node.input:
            if not name:
                types.append(onnx.TypeProto().SerializeToString())
                continue
            v = importer.values[name]
            shape = shape_of(v) if isinstance(v, SSAValue) else v.shape
            types.append(helper.make_tensor_type_proto(importer.onnx_type(v), list(shape)).SerializeToString())
        versions = [v for v in schema.context_dependent_function_opset_versions if v <= opset] or list(
            schema.context_dependent_function_opset_versions
        )
        try:
            data = schema.get_context_dependent_function_with_opset_version(max(versions), node.SerializeToString(), types)
        except Exception:  # noqa: BLE001 - the schema could not build one for these inputs
            return None
        if not data:
            return None
        parsed = onnx.FunctionProto()
        parsed.ParseFromString(data)
        return parsed if parsed.node else None
    return None


def _evaluate(node: onnx.NodeProto, feeds: dict[str, np.ndarray], opset: int) -> list[np.ndarray]:
    """`node`'s results on `feeds` by onnx's reference, as of `opset` (a
    one-node model: given a bare node, the evaluator takes the newest opset)."""
    from onnx.reference import ReferenceEvaluator  # loaded only when a node folds

    inputs = [helper.make_tensor_value_info(k, helper.np_dtype_to_tensor_dtype(v.dtype), v.shape) for k, v in feeds.items()]
    outputs = [helper.make_empty_tensor_value_info(o) for o in node.output if o]
    graph = helper.make_graph([node], "fold", inputs, outputs)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    evaluator = ReferenceEvaluator(model)
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        return list(evaluator.run(None, feeds))


def _tensor_value(t: TensorProto) -> np.ndarray:
    """A tensor's value (of any type numpy holds: only a literal the
    function keeps must be of a type accy has)."""
    if t.data_type in (TensorProto.STRING, TensorProto.UNDEFINED):
        raise OnnxImportError("dtype", f"tensor '{t.name}' is {_dtype_name(t.data_type)}: accy has {SUPPORTED_DTYPES}")
    return numpy_helper.to_array(t)


#: Ops the folding never evaluates (their handler knows better, or they read only shapes).
NO_FOLD = frozenset({"Constant", "Identity"})
#: Ops that read only their first input's shape (and type): folded whatever its value.
SHAPE_ONLY = frozenset({"Shape", "Size", "EyeLike"})

#: What a missing op needs, for its error.
_NEEDS = {
    "QLinearConv": "accy.conv",
    "DeformConv": "accy.conv",
    "MaxRoiPool": "accy.pool",
    "MaxUnpool": "a scatter op",
    "Unique": "data-dependent shapes",
    "NonZero": "data-dependent shapes",
    "Compress": "data-dependent shapes",
    "NonMaxSuppression": "data-dependent shapes",
    "Loop": "control flow over tensors",
    "Scan": "control flow over tensors",
}


def _missing_op(op_type: str) -> str:
    need = _NEEDS.get(op_type)
    return f" (it needs {need}, which the dialect does not have)" if need else ""


# --------------------------------------------------------------------------
# A node being imported
# --------------------------------------------------------------------------


class _Node:
    """The node a handler imports: its inputs and attributes, each marked as
    read, so that `finish` can refuse what no handler understood."""

    def __init__(self, importer: _Importer, node: onnx.NodeProto, opset: int, label: str, opsets: Mapping[str, int]) -> None:
        self.im = importer
        self.opsets = opsets
        self.node = node
        self.op = node.op_type
        self.opset = opset
        self.label = label
        self.attrs = {a.name: a for a in node.attribute}
        self.read_attrs: set[str] = set()
        self.read_inputs: set[int] = set()

    # -- errors --

    def error(self, kind: str, message: str) -> OnnxImportError:
        return OnnxImportError(kind, message, self.label, self.op)

    def unsupported(self, message: str) -> OnnxImportError:
        return self.error("attribute", message)

    # -- inputs --

    def n_inputs(self) -> int:
        return len(self.node.input)

    def has(self, i: int) -> bool:
        return i < len(self.node.input) and bool(self.node.input[i])

    def name(self, i: int) -> str:
        if not self.has(i):
            raise self.error("model", f"input #{i} is required")
        self.read_inputs.add(i)
        return self.node.input[i]

    def raw(self, i: int) -> Value:
        return self.im.values[self.name(i)]

    def value(self, i: int) -> SSAValue:
        try:
            v = self.im.ssa(self.name(i))
        except OnnxImportError as e:
            raise self.error(e.kind, f"input #{i}: {e}") from None
        self.check_dtype(v, f"input #{i}")
        return v

    def values(self, start: int = 0) -> list[SSAValue]:
        return [self.value(i) for i in range(start, self.n_inputs()) if self.has(i)]

    def const(self, i: int, what: str) -> np.ndarray | None:
        """Input `i` as an array known at import (None when absent)."""
        if not self.has(i):
            return None
        v = self.raw(i)
        if isinstance(v, SSAValue):
            name = self.node.input[i]
            graph_input = self.im.graph_inputs.get(v)
            sources = self.im.sources.get(v, frozenset())
            if graph_input is not None or (sources and all(self.im.is_metadata(s) for s in sources)):
                named = frozenset({graph_input}) if graph_input is not None else sources
                where = f"graph input '{graph_input}'" if graph_input is not None else (
                    f"input '{name}', computed from graph input(s) {', '.join(sorted(named))}"
                )
                raise NeedsConstant(f"{what} ({where}) must be known at import", named, self.label, self.op)
            raise self.error(
                "constant",
                f"{what} (input '{name}') must be known at import, but it is computed at run time from graph input(s) "
                f"{', '.join(sorted(sources)) or '(none)'}",
            )
        return v

    def const_ints(self, i: int, what: str) -> list[int] | None:
        v = self.const(i, what)
        return None if v is None else [int(x) for x in np.asarray(v).reshape(-1)]

    def shape(self, i: int) -> tuple[int, ...]:
        v = self.raw(i)
        return shape_of(v) if isinstance(v, SSAValue) else tuple(v.shape)

    def elem(self, i: int) -> Attribute:
        v = self.raw(i)
        if isinstance(v, SSAValue):
            return elem_of(v)
        et = _element_of_dtype(v.dtype)
        if et is None:
            raise self.error("dtype", f"input #{i} is {v.dtype}: accy has {SUPPORTED_DTYPES}")
        return et

    def check_dtype(self, v: SSAValue, what: str) -> None:
        if _onnx_type_or_none(elem_of(v)) is None:
            raise self.error("dtype", f"{what} is {elem_of(v)}: accy has {SUPPORTED_DTYPES}")

    # -- attributes --

    def has_attr(self, name: str) -> bool:
        return name in self.attrs

    def attr(self, name: str, default: Any = None) -> Any:
        self.read_attrs.add(name)
        a = self.attrs.get(name)
        if a is None:
            return default
        value = helper.get_attribute_value(a)
        if isinstance(value, bytes):
            return value.decode()
        return value

    def int_attr(self, name: str, default: int) -> int:
        return int(self.attr(name, default))

    def float_attr(self, name: str, default: float) -> float:
        return float(self.attr(name, default))

    def ints_attr(self, name: str, default: Sequence[int] | None = None) -> list[int] | None:
        v = self.attr(name, None)
        return [int(x) for x in v] if v is not None else (list(default) if default is not None else None)

    def ignore(self, *names: str) -> None:
        """Attributes that do not change the result (a seed, a hint)."""
        self.read_attrs.update(names)

    def axis_or_input(self, attr: str, index: int, since: int, what: str) -> list[int] | None:
        """A list of ints that opset `since` moved from attribute `attr` to input `index`."""
        if self.opset >= since:
            return self.const_ints(index, what)
        return self.ints_attr(attr)

    # -- building --

    def emit(self, op: Operation) -> SSAValue:
        try:
            return self.im.emit(op)
        except VerifyException as e:
            raise self.error("dtype" if "element type" in str(e) else "attribute", f"cannot be written as {op.name}: {e}") from None

    def finish(self, outputs: Sequence[Value | None]) -> None:
        extra = sorted(set(self.attrs) - self.read_attrs)
        if extra:
            raise self.unsupported(f"attribute {', '.join(extra)} is not supported")
        unread = [i for i in range(self.n_inputs()) if self.has(i) and i not in self.read_inputs]
        if unread:
            raise self.unsupported(f"input #{', #'.join(map(str, unread))} is not supported")
        for i, name in enumerate(self.node.output):
            if not name:
                continue
            if i >= len(outputs) or outputs[i] is None:
                raise self.unsupported(f"output #{i} ('{name}') is not supported")
            out = outputs[i]
            if isinstance(out, SSAValue):
                self.check_dtype(out, f"output #{i}")
                out = self.keep_unsigned(out)
            self.im.values[name] = out

    def unsigned_bits(self, i: int) -> int | None:
        """The width of the unsigned type input `i` holds, or None."""
        if not self.has(i):
            return None
        v = self.im.values[self.node.input[i]]
        if isinstance(v, SSAValue):
            return self.im.unsigned.get(v)
        return v.dtype.itemsize * 8 if v.dtype.kind == "u" else None

    def keep_unsigned(self, out: SSAValue) -> SSAValue:
        """An integer result of an op on an unsigned operand is of that
        unsigned type (ONNX's ops keep their operands' type): masked back to
        its width, unless the op cannot leave the operands' range."""
        if out in self.im.unsigned or self.op in OWN_RESULT_TYPE or not is_int(elem_of(out)):
            return out
        bits = self.unsigned_bits(1 if self.op == "Where" else 0)
        if bits is None or UNSIGNED_HOLDER[bits] != elem_of(out):
            return out
        if self.op not in RANGE_KEEPING:
            out = self.emit(A.AndOp(out, self.scalar((1 << bits) - 1, out)))
        self.im.unsigned[out] = bits
        return out

    # -- helpers writing ops --

    def lit(self, array: np.ndarray | float | int | bool, et: Attribute) -> SSAValue:
        return self.emit(A.ConstantOp(dense_literal(np.asarray(array), et)))

    def full(self, value: float | int | bool, like: SSAValue | tuple[int, ...], et: Attribute | None = None) -> SSAValue:
        """A splat literal of `like`'s shape (and element type, unless `et`)."""
        shape = shape_of(like) if isinstance(like, SSAValue) else like
        et = et if et is not None else elem_of(like)  # type: ignore[arg-type]
        return self.lit(np.full(shape, value, dtype=numpy_dtype_of(et)), et)

    def reshape(self, v: SSAValue, shape: Sequence[int]) -> SSAValue:
        if tuple(shape) == shape_of(v):
            return v
        return self.emit(A.ReshapeOp(v, list(shape)))

    def transpose(self, v: SSAValue, perm: Sequence[int]) -> SSAValue:
        if list(perm) == list(range(len(perm))):
            return v
        return self.emit(A.TransposeOp(v, list(perm)))

    def cast(self, v: SSAValue, et: Attribute) -> SSAValue:
        if elem_of(v) == et:
            return v
        return self.emit(A.CastOp(v, et))

    def broadcast_to(self, v: SSAValue, shape: Sequence[int]) -> SSAValue:
        """numpy's broadcast of `v` to `shape` (right-aligned)."""
        shape = tuple(shape)
        have = shape_of(v)
        if have == shape:
            return v
        if len(have) > len(shape) or any(h not in (1, s) for h, s in zip(have, shape[len(shape) - len(have):], strict=True)):
            raise self.error("attribute", f"shape {list(have)} does not broadcast to {list(shape)}")
        dims = list(range(len(shape) - len(have), len(shape)))
        return self.emit(A.BroadcastOp(v, dims, shape))

    def broadcast_all(self, vs: Sequence[SSAValue]) -> list[SSAValue]:
        try:
            shape = np.broadcast_shapes(*(shape_of(v) for v in vs))
        except ValueError:
            raise self.error("attribute", f"shapes {', '.join(str(list(shape_of(v))) for v in vs)} do not broadcast") from None
        return [self.broadcast_to(v, shape) for v in vs]

    def reduce(self, v: SSAValue, kind: str, axes: Sequence[int], keepdims: bool) -> SSAValue:
        rank = len(shape_of(v))
        axes = sorted({a % rank for a in axes}) if rank else []
        r = self.emit(A.ReduceOp(v, kind, axes))
        if keepdims:
            r = self.reshape(r, [1 if d in axes else n for d, n in enumerate(shape_of(v))])
        return r

    def binary(self, cls: type[A.BinaryOp], a: SSAValue, b: SSAValue) -> SSAValue:
        a, b = self.broadcast_all([a, b])
        return self.emit(cls(a, b))

    def cmp(self, predicate: str, a: SSAValue, b: SSAValue) -> SSAValue:
        a, b = self.broadcast_all([a, b])
        return self.emit(A.CmpOp(predicate, a, b))

    def select(self, cond: SSAValue, a: SSAValue, b: SSAValue) -> SSAValue:
        cond, a, b = self.broadcast_all([cond, a, b])
        return self.emit(A.SelectOp(cond, a, b))

    def scalar(self, value: float | int, like: SSAValue) -> SSAValue:
        """`value` in `like`'s element type, broadcast to its shape."""
        return self.full(value, like)

    def axis(self, axis: int, rank: int, what: str = "axis") -> int:
        if not -max(rank, 1) <= axis < max(rank, 1):
            raise self.unsupported(f"{what} {axis} is out of range for rank {rank}")
        return axis % rank if rank else 0

    def slice(self, v: SSAValue, axis: int, start: int, limit: int, stride: int = 1) -> SSAValue:
        shape = shape_of(v)
        lo = [0] * len(shape)
        hi = list(shape)
        st = [1] * len(shape)
        lo[axis], hi[axis], st[axis] = start, limit, stride
        if lo == [0] * len(shape) and hi == list(shape) and st == [1] * len(shape):
            return v
        return self.emit(A.SliceOp(v, lo, hi, st))

    def concat(self, vs: Sequence[SSAValue], axis: int) -> SSAValue:
        vs = [v for v in vs if shape_of(v)[axis] > 0] or list(vs[:1])
        return vs[0] if len(vs) == 1 else self.emit(A.ConcatOp(list(vs), axis))

    def pad(
        self, v: SSAValue, low: Sequence[int], high: Sequence[int], mode: str = "constant",
        value: SSAValue | float | int = 0,
    ) -> SSAValue:
        """One `accy.pad` of `v` (negative pads crop); `value`, a literal or a
        one-element tensor, fills the padding in mode constant."""
        if not any(low) and not any(high):
            return v
        et = elem_of(v)
        fill = self.reshape(self.cast(value, et), ()) if isinstance(value, SSAValue) else self.full(value, (), et)
        return self.emit(A.PadOp(v, fill, low, high, mode))

    def pick(self, v: SSAValue, axis: int, indices: Sequence[int]) -> SSAValue:
        """The elements at `indices` along `axis` (each in range), as runs of
        strided slices joined by a concat (views, no index load), or one
        `accy.gather` of them when they make more than SLICE_LIMIT runs."""
        pieces: list[SSAValue] = []
        i = 0
        while i < len(indices):
            j = i + 1
            step = indices[j] - indices[i] if j < len(indices) else 1
            if step >= 1:
                while j < len(indices) and indices[j] - indices[j - 1] == step:
                    j += 1
            else:
                step = 1
            pieces.append(self.slice(v, axis, indices[i], indices[j - 1] + 1, step))
            i = j
            if len(pieces) > SLICE_LIMIT:  # scattered indices: one gather of them
                return self.emit(A.GatherOp(v, self.lit(np.asarray(indices, np.int64), IntegerType(64)), axis))
        if not pieces:
            return self.slice(v, axis, 0, 0)
        return self.concat(pieces, axis)


#: unsigned width -> the accy type that holds it.
UNSIGNED_HOLDER = {bits: held for held, bits in UNSIGNED.values()}
#: Ops whose result type is their own (an attribute's, or fixed), not their operands'.
OWN_RESULT_TYPE = frozenset({"Cast", "CastLike", "ArgMax", "ArgMin", "Shape", "Size", "OneHot", "EyeLike", "ConstantOfShape"})
#: Ops whose integer results lie in the range of their operands: nothing to mask.
RANGE_KEEPING = frozenset(
    """Identity Reshape Transpose Flatten Squeeze Unsqueeze Expand Concat Slice Split Tile Gather GatherElements Pad
    Where Max Min Div Mod ReduceMax ReduceMin Clip Relu Abs Trilu DepthToSpace SpaceToDepth Dropout BitShift
    BitwiseAnd BitwiseOr BitwiseXor If MaxPool""".split()
)


#: The ops that take a value of a narrow type (onnx_narrow): any other refuses it.
NARROW_OPS = frozenset({"Cast", "CastLike", "Identity"})


def _narrow_type_of(dtype: np.dtype) -> int | None:
    """The narrow ONNX type of an ml_dtypes dtype, or None."""
    try:
        t = helper.np_dtype_to_tensor_dtype(np.dtype(dtype))
    except (KeyError, TypeError, ValueError):
        return None
    return t if t in NARROW else None


def _onnx_type_or_none(et: Attribute) -> int | None:
    try:
        return _onnx_type_of(et)
    except KeyError:
        return None


# --------------------------------------------------------------------------
# Handlers
# --------------------------------------------------------------------------

Handler = Callable[[_Node], Sequence[Value | None]]
HANDLERS: dict[str, Handler] = {}


def handles(*names: str) -> Callable[[Handler], Handler]:
    def register(fn: Handler) -> Handler:
        for name in names:
            HANDLERS[name] = fn
        return fn

    return register


def _float_only(n: _Node, v: SSAValue) -> None:
    if not is_float(elem_of(v)):
        raise n.error("dtype", f"{elem_of(v)} is not supported (it takes a float)")


# -- elementwise -----------------------------------------------------------

UNARY: dict[str, type[A.UnaryOp] | type[A.NotOp]] = {
    "Abs": A.AbsOp,
    "Neg": A.NegOp,
    "Exp": A.ExpOp,
    "Log": A.LogOp,
    "Sqrt": A.SqrtOp,
    "Tanh": A.TanhOp,
    "Sigmoid": A.SigmoidOp,
    "Relu": A.ReluOp,
    "Sin": A.SinOp,
    "Cos": A.CosOp,
    "Erf": A.ErfOp,
    "Reciprocal": A.ReciprocalOp,
    "Floor": A.FloorOp,
    "Ceil": A.CeilOp,
    "Not": A.NotOp,
}


@handles(*UNARY)
def _unary(n: _Node) -> list[Value]:
    n.ignore("consumed_inputs")  # opset 1's in-place hint
    return [n.emit(UNARY[n.op](n.value(0)))]


BINARY: dict[str, type[A.BinaryOp]] = {
    "Add": A.AddOp,
    "Sub": A.SubOp,
    "Mul": A.MulOp,
    "Div": A.DivOp,
    "And": A.AndOp,
    "Or": A.OrOp,
    "Xor": A.XorOp,
    "BitwiseAnd": A.AndOp,
    "BitwiseOr": A.OrOp,
    "BitwiseXor": A.XorOp,
}


def _legacy_broadcast(n: _Node, a: SSAValue, b: SSAValue) -> SSAValue:
    """Opsets before 7 broadcast `b` only when `broadcast=1`, aligned at `axis`."""
    n.ignore("consumed_inputs")
    if n.opset >= 7:
        return b
    if not n.int_attr("broadcast", 0):
        if shape_of(a) != shape_of(b):
            raise n.unsupported("operands of different shapes without broadcast=1")
        return b
    ra, rb = len(shape_of(a)), len(shape_of(b))
    axis = n.int_attr("axis", ra - rb) % max(ra, 1)
    shape = [1] * ra
    shape[axis : axis + rb] = shape_of(b)
    return n.reshape(b, shape)


CMP = {"Equal": "eq", "Greater": "gt", "Less": "lt", "GreaterOrEqual": "ge", "LessOrEqual": "le"}


@handles(*BINARY, *CMP)
def _binary(n: _Node) -> list[Value]:
    a, b = n.value(0), n.value(1)
    b = _legacy_broadcast(n, a, b)
    if n.op in CMP:
        return [n.cmp(CMP[n.op], a, b)]
    # Integer Div: ONNX and accy both truncate toward zero.
    return [n.binary(BINARY[n.op], a, b)]


@handles("BitwiseNot")
def _bitwise_not(n: _Node) -> list[Value]:
    x = n.value(0)
    return [n.emit(A.XorOp(x, n.scalar(-1, x)))]


@handles("Pow")
def _pow(n: _Node) -> list[Value]:
    x, y = n.value(0), n.value(1)
    y = _legacy_broadcast(n, x, y)
    ex, ey = elem_of(x), elem_of(y)
    if is_float(ex):
        return [n.binary(A.PowOp, x, n.cast(y, ex))]
    if is_float(ey):
        # numpy's power of an integer by a float computes in float64, then ONNX casts back.
        f64 = Float64Type()
        return [n.cast(n.binary(A.PowOp, n.cast(x, f64), n.cast(y, f64)), ex)]
    return [n.binary(A.PowOp, x, n.cast(y, ex))]


@handles("Mod")
def _mod(n: _Node) -> list[Value]:
    a, b = n.broadcast_all([n.value(0), n.value(1)])
    fmod = n.int_attr("fmod", 0)
    et = elem_of(a)
    if is_float(et):
        # fmod: x - trunc(x / y)·y, in f64 (f16 and f32 operands are exact there).
        wide = Float64Type()
        x, y = n.cast(a, wide), n.cast(b, wide)
        q = n.emit(A.DivOp(x, y))
        t = n.select(n.cmp("lt", q, n.scalar(0, q)), n.emit(A.CeilOp(q)), n.emit(A.FloorOp(q)))
        r = n.emit(A.SubOp(x, n.emit(A.MulOp(t, y))))
        # fmod keeps the sign of x, and is NaN for y = 0 or x infinite, x for y infinite.
        inf = n.cmp("eq", n.emit(A.AbsOp(y)), n.scalar(math.inf, y))
        r = n.select(inf, x, r)
        if not fmod:
            r = _floored(n, r, y)
        return [n.cast(r, et)]
    if not is_int(et):
        raise n.error("dtype", f"{et} is not supported")
    zero = n.scalar(0, a)
    r = n.emit(A.SubOp(a, n.emit(A.MulOp(n.emit(A.DivOp(a, b)), b))))  # truncated remainder
    if not fmod:
        r = _floored(n, r, b)
    return [n.select(n.cmp("eq", b, zero), zero, r)]


def _floored(n: _Node, r: SSAValue, y: SSAValue) -> SSAValue:
    """numpy's mod from C's fmod `r` of x by `y`: the divisor's sign, so y is
    added where r is nonzero and of the other sign (for floats: an infinite
    y gives y there, as numpy's)."""
    zero = n.scalar(0, r)
    differ = n.emit(A.XorOp(n.cmp("lt", r, zero), n.cmp("lt", y, zero)))
    fix = n.emit(A.AndOp(differ, n.cmp("ne", r, zero)))
    return n.select(fix, n.emit(A.AddOp(r, y)), r)


@handles("Max", "Min", "Sum", "Mean")
def _variadic(n: _Node) -> list[Value]:
    n.ignore("consumed_inputs")
    vs = n.broadcast_all(n.values())
    cls = {"Max": A.MaxOp, "Min": A.MinOp, "Sum": A.AddOp, "Mean": A.AddOp}[n.op]
    acc = vs[0]
    for v in vs[1:]:
        acc = n.emit(cls(acc, v))
    if n.op == "Mean":
        _float_only(n, acc)
        if len(vs) > 1:
            acc = n.emit(A.DivOp(acc, n.scalar(len(vs), acc)))
    return [acc]


@handles("Where")
def _where(n: _Node) -> list[Value]:
    return [n.select(n.value(0), n.value(1), n.value(2))]


@handles("Sign")
def _sign(n: _Node) -> list[Value]:
    x = n.value(0)
    zero = n.scalar(0, x)
    # select(x < 0, -1, select(x > 0, 1, x)): 0 stays 0 and NaN stays NaN.
    pos = n.select(n.cmp("gt", x, zero), n.scalar(1, x), x if is_float(elem_of(x)) else zero)
    return [n.select(n.cmp("lt", x, zero), n.scalar(-1, x), pos)]


def _activation(
    n: _Node, x: SSAValue, op: str | None = None, param: Callable[[str, float], float] | None = None
) -> SSAValue:
    """The activation `op` (default: the node's op) of x, with parameters
    `param(name, default)` (default: the node's attributes, ONNX's defaults)."""
    _float_only(n, x)
    op = op or n.op
    param = param or n.float_attr
    zero = n.scalar(0, x)

    def s(v: float) -> SSAValue:
        return n.scalar(v, x)

    def mul(a: SSAValue, b: SSAValue) -> SSAValue:
        return n.emit(A.MulOp(a, b))

    def add(a: SSAValue, b: SSAValue) -> SSAValue:
        return n.emit(A.AddOp(a, b))

    def expm1(v: SSAValue) -> SSAValue:
        return n.emit(A.SubOp(n.emit(A.ExpOp(v)), s(1)))

    def softplus(v: SSAValue) -> SSAValue:
        # log(1 + e^v) = max(v, 0) + log(1 + e^-|v|): no overflow.
        t = n.emit(A.LogOp(add(s(1), n.emit(A.ExpOp(n.emit(A.NegOp(n.emit(A.AbsOp(v)))))))))
        return add(n.emit(A.MaxOp(v, zero)), t)

    if op == "LeakyRelu":
        alpha = param("alpha", 0.01)
        return n.select(n.cmp("lt", x, zero), mul(x, s(alpha)), x)
    if op == "Elu":
        alpha = param("alpha", 1.0)
        return n.select(n.cmp("lt", x, zero), mul(s(alpha), expm1(x)), x)
    if op == "Selu":
        alpha = param("alpha", 1.67326319217681884765625)
        gamma = param("gamma", 1.05070102214813232421875)
        neg = mul(s(alpha), expm1(x))
        return mul(s(gamma), n.select(n.cmp("le", x, zero), neg, x))
    if op == "Celu":
        alpha = param("alpha", 1.0)
        neg = mul(s(alpha), expm1(n.emit(A.DivOp(x, s(alpha)))))
        return add(n.emit(A.MaxOp(x, zero)), n.emit(A.MinOp(zero, neg)))
    if op == "HardSigmoid":
        alpha, beta = param("alpha", 0.2), param("beta", 0.5)
        return n.emit(A.MaxOp(zero, n.emit(A.MinOp(s(1), add(mul(x, s(alpha)), s(beta))))))
    if op == "HardSwish":
        hs = n.emit(A.MaxOp(zero, n.emit(A.MinOp(s(1), add(mul(x, s(1 / 6)), s(0.5))))))
        return mul(x, hs)
    if op == "Softplus":
        return softplus(x)
    if op == "Softsign":
        return n.emit(A.DivOp(x, add(s(1), n.emit(A.AbsOp(x)))))
    if op == "ThresholdedRelu":
        alpha = param("alpha", 1.0)
        return n.select(n.cmp("gt", x, s(alpha)), x, zero)
    if op == "Shrink":
        lambd, bias = param("lambd", 0.5), param("bias", 0.0)
        hi = n.select(n.cmp("gt", x, s(lambd)), n.emit(A.SubOp(x, s(bias))), zero)
        return n.select(n.cmp("lt", x, s(-lambd)), add(x, s(bias)), hi)
    if op == "Mish":
        return mul(x, n.emit(A.TanhOp(softplus(x))))
    if op == "Swish":
        alpha = param("alpha", 1.0)
        return mul(x, n.emit(A.SigmoidOp(mul(x, s(alpha)))))
    if op == "Gelu":
        approximate = n.attr("approximate", "none")
        if approximate == "none":
            return n.emit(A.GeluOp(x))
        if approximate != "tanh":
            raise n.unsupported(f"approximate='{approximate}' is not supported")
        inner = mul(s(math.sqrt(2 / math.pi)), add(x, mul(s(0.044715), mul(x, mul(x, x)))))
        return mul(mul(s(0.5), x), add(s(1), n.emit(A.TanhOp(inner))))
    if op in ("Relu", "Tanh", "Sigmoid"):
        return n.emit({"Relu": A.ReluOp, "Tanh": A.TanhOp, "Sigmoid": A.SigmoidOp}[op](x))
    if op == "Affine":
        return add(mul(x, s(param("alpha", 1.0))), s(param("beta", 0.0)))
    if op == "ScaledTanh":
        return mul(s(param("alpha", 1.0)), n.emit(A.TanhOp(mul(x, s(param("beta", 1.0))))))
    if op == "Tan":
        return n.emit(A.DivOp(n.emit(A.SinOp(x)), n.emit(A.CosOp(x))))
    raise n.unsupported(f"activation '{op}'")


ACTIVATIONS = (
    "LeakyRelu", "Elu", "Selu", "Celu", "HardSigmoid", "HardSwish", "Softplus", "Softsign", "ThresholdedRelu",
    "Shrink", "Mish", "Swish", "Gelu", "Tan",
)  # fmt: skip


@handles(*ACTIVATIONS)
def _activation_node(n: _Node) -> list[Value]:
    n.ignore("consumed_inputs")
    return [_activation(n, n.value(0))]


# -- the other elementary functions -------------------------------------------------
#
# Written with exp, log and sqrt, and (for |x| small, where those cancel) the
# first terms of their series; atan (and asin, acos through it) as Cephes'
# atanf: range reduction and a degree-9 polynomial, accurate to about 2e-7
# relative, so for f16 and f32 only.


def _series(n: _Node, x: SSAValue, coeffs: Sequence[float]) -> SSAValue:
    """x·(c0 + c1·x² + c2·x⁴ + ...), by Horner's rule in x²."""
    z = n.emit(A.MulOp(x, x))
    acc = n.scalar(coeffs[-1], x)
    for c in reversed(coeffs[:-1]):
        acc = n.emit(A.AddOp(n.emit(A.MulOp(acc, z)), n.scalar(c, x)))
    return n.emit(A.MulOp(acc, x))


def _small(n: _Node, x: SSAValue) -> SSAValue:
    """|x| below where exp/log formulas lose digits to cancellation (series there)."""
    bound = 1e-3 if isinstance(elem_of(x), Float64Type) else 0.1
    return n.emit(A.CmpOp("lt", n.emit(A.AbsOp(x)), n.scalar(bound, x)))


def _atan(n: _Node, x: SSAValue) -> SSAValue:
    ax = n.emit(A.AbsOp(x))
    one = n.scalar(1, x)
    big = n.emit(A.CmpOp("gt", ax, n.scalar(2.414213562373095, x)))
    mid = n.emit(A.CmpOp("gt", ax, n.scalar(0.4142135623730950, x)))
    t = n.select(big, n.emit(A.NegOp(n.emit(A.DivOp(one, ax)))), n.select(mid, n.emit(A.DivOp(n.emit(A.SubOp(ax, one)), n.emit(A.AddOp(ax, one)))), ax))
    base = n.select(big, n.scalar(math.pi / 2, x), n.select(mid, n.scalar(math.pi / 4, x), n.scalar(0, x)))
    p = _series(n, t, [1.0, -3.33329491539e-1, 1.99777106478e-1, -1.38776856032e-1, 8.05374449538e-2])
    r = n.emit(A.AddOp(base, p))
    return n.select(n.emit(A.CmpOp("lt", x, n.scalar(0, x))), n.emit(A.NegOp(r)), r)


@handles("Sinh", "Cosh", "Asinh", "Acosh", "Atanh", "Atan", "Asin", "Acos")
def _elementary(n: _Node) -> list[Value]:
    x = n.value(0)
    _float_only(n, x)
    if n.op in ("Atan", "Asin", "Acos") and isinstance(elem_of(x), Float64Type):
        raise n.error("dtype", "f64 is not supported (its polynomial is accurate to f32)")
    one, half = n.scalar(1, x), n.scalar(0.5, x)
    e = (lambda: n.emit(A.ExpOp(x)), lambda: n.emit(A.ExpOp(n.emit(A.NegOp(x)))))
    if n.op == "Sinh":
        big = n.emit(A.MulOp(half, n.emit(A.SubOp(e[0](), e[1]()))))
        return [n.select(_small(n, x), _series(n, x, [1, 1 / 6, 1 / 120, 1 / 5040]), big)]
    if n.op == "Cosh":
        return [n.emit(A.MulOp(half, n.emit(A.AddOp(e[0](), e[1]()))))]
    if n.op == "Asinh":
        ax = n.emit(A.AbsOp(x))
        r = n.emit(A.LogOp(n.emit(A.AddOp(ax, n.emit(A.SqrtOp(n.emit(A.AddOp(n.emit(A.MulOp(ax, ax)), one))))))))
        signed = n.select(n.emit(A.CmpOp("lt", x, n.scalar(0, x))), n.emit(A.NegOp(r)), r)
        return [n.select(_small(n, x), _series(n, x, [1, -1 / 6, 3 / 40, -15 / 336]), signed)]
    if n.op == "Acosh":
        root = n.emit(A.SqrtOp(n.emit(A.MulOp(n.emit(A.SubOp(x, one)), n.emit(A.AddOp(x, one))))))
        return [n.emit(A.LogOp(n.emit(A.AddOp(x, root))))]
    if n.op == "Atanh":
        ratio = n.emit(A.DivOp(n.emit(A.AddOp(one, x)), n.emit(A.SubOp(one, x))))
        big = n.emit(A.MulOp(half, n.emit(A.LogOp(ratio))))
        return [n.select(_small(n, x), _series(n, x, [1, 1 / 3, 1 / 5, 1 / 7]), big)]
    if n.op == "Atan":
        return [_atan(n, x)]
    if n.op == "Asin":
        root = n.emit(A.SqrtOp(n.emit(A.MulOp(n.emit(A.SubOp(one, x)), n.emit(A.AddOp(one, x))))))
        return [_atan(n, n.emit(A.DivOp(x, root)))]
    # acos x = 2·atan(sqrt((1 - x) / (1 + x))): no cancellation near 1.
    q = n.emit(A.SqrtOp(n.emit(A.DivOp(n.emit(A.SubOp(one, x)), n.emit(A.AddOp(one, x))))))
    return [n.emit(A.MulOp(n.scalar(2, x), _atan(n, q)))]


@handles("PRelu")
def _prelu(n: _Node) -> list[Value]:
    n.ignore("consumed_inputs")
    x, slope = n.value(0), n.value(1)
    slope = _legacy_broadcast(n, x, slope)
    zero = n.scalar(0, x)
    return [n.select(n.cmp("lt", x, zero), n.binary(A.MulOp, x, slope), x)]


@handles("IsNaN")
def _isnan(n: _Node) -> list[Value]:
    x = n.value(0)
    _float_only(n, x)
    return [n.emit(A.CmpOp("ne", x, x))]


@handles("IsInf")
def _isinf(n: _Node) -> list[Value]:
    x = n.value(0)
    _float_only(n, x)
    pos, neg = n.int_attr("detect_positive", 1), n.int_attr("detect_negative", 1)
    found = n.full(False, x, IntegerType(1))
    if pos:
        found = n.emit(A.OrOp(found, n.emit(A.CmpOp("eq", x, n.scalar(math.inf, x)))))
    if neg:
        found = n.emit(A.OrOp(found, n.emit(A.CmpOp("eq", x, n.scalar(-math.inf, x)))))
    return [found]


@handles("Round")
def _round(n: _Node) -> list[Value]:
    x = n.value(0)
    _float_only(n, x)
    return [_round_half_even(n, x)]


# -- quantization --------------------------------------------------------------

#: The quantized types accy holds, with their ranges.
QUANT_RANGES = {TensorProto.UINT8: (0, 255), TensorProto.INT8: (-128, 127), TensorProto.UINT16: (0, 65535), TensorProto.INT16: (-32768, 32767)}


def _quant_param(n: _Node, v: SSAValue, shape: tuple[int, ...], axis: int, block: int) -> SSAValue:
    """A scale or zero point broadcast to `shape`: one value, one per entry
    of `axis`, or (block_size) one per block of `axis`, as onnx's reference
    reshapes them (_quant_utils.reshape_input)."""
    if math.prod(shape_of(v)) == 1:
        return n.emit(A.BroadcastOp(n.reshape(v, ()), [], shape))
    axis = n.axis(axis, len(shape))
    if not block:
        if len(shape_of(v)) != 1:
            raise n.unsupported(f"a scale or zero point of shape {list(shape_of(v))} without block_size")
        return n.emit(A.BroadcastOp(v, [axis], shape))
    vshape = shape_of(v)
    if len(vshape) != len(shape):
        raise n.unsupported(f"blocked scale of shape {list(vshape)} for input {list(shape)}")
    wide = [*vshape[: axis + 1], block, *vshape[axis + 1 :]]
    spread = n.emit(A.BroadcastOp(v, [d for d in range(len(wide)) if d != axis + 1], wide))
    flat = [*vshape[:axis], vshape[axis] * block, *vshape[axis + 1 :]]
    return n.slice(n.reshape(spread, flat), axis, 0, shape[axis])


def _requantize(n: _Node, q: SSAValue, zp: SSAValue | None, to: int) -> SSAValue:
    """rint(q) + zero point, clamped to the range of ONNX type `to`, in its holding type."""
    lo, hi = QUANT_RANGES[to]
    i32 = IntegerType(32)
    r = n.cast(_round_half_even(n, q), i32)
    if zp is not None:
        r = n.emit(A.AddOp(r, n.cast(zp, i32)))
    r = n.emit(A.MinOp(n.emit(A.MaxOp(r, n.scalar(lo, r))), n.scalar(hi, r)))
    out = n.cast(r, element_type(to))
    if to in UNSIGNED:
        out = n.emit(A.ReshapeOp(out, shape_of(out))) if out is r else out
        n.im.unsigned[out] = UNSIGNED[to][1]
    return out


def _quant_type(n: _Node, i: int, attr: str | None) -> int:
    to = n.im.onnx_type(n.raw(i)) if n.has(i) else int(n.attr(attr, 0) or 0) if attr else 0
    to = to or TensorProto.UINT8
    if to not in QUANT_RANGES:
        raise n.error("dtype", f"quantized type {_dtype_name(to)} is not supported: accy holds uint8, int8, uint16, int16")
    return to


@handles("QuantizeLinear")
def _quantize(n: _Node) -> list[Value]:
    x, scale = n.value(0), n.value(1)
    shape = shape_of(x)
    axis = n.int_attr("axis", 1)  # checked where a scale is per axis
    block = n.int_attr("block_size", 0)
    if n.int_attr("precision", 0):
        raise n.unsupported("precision")
    n.ignore("saturate")  # float8 outputs only
    to = _quant_type(n, 2, "output_dtype" if n.opset >= 21 else None)
    # x / scale in numpy's promoted type: f16 only when both are.
    ct = elem_of(x) if elem_of(x) == elem_of(scale) else Float32Type() if Float64Type() not in (elem_of(x), elem_of(scale)) else Float64Type()
    q = n.emit(A.DivOp(n.cast(x, ct), n.cast(_quant_param(n, scale, shape, axis, block), ct)))
    zp = _quant_param(n, n.value(2), shape, axis, block) if n.has(2) else None
    return [_requantize(n, q, zp, to)]


@handles("DequantizeLinear")
def _dequantize(n: _Node) -> list[Value]:
    x, scale = n.value(0), n.value(1)
    shape = shape_of(x)
    axis = n.int_attr("axis", 1)  # checked where a scale is per axis
    block = n.int_attr("block_size", 0)
    if not is_int(elem_of(x)):
        raise n.error("dtype", f"quantized input of {elem_of(x)} is not supported")
    out = n.attr("output_dtype") if n.opset >= 23 else None
    f32 = Float32Type()
    dx = n.cast(x, f32)
    if n.has(2):
        dx = n.emit(A.SubOp(dx, n.cast(_quant_param(n, n.value(2), shape, axis, block), f32)))
    y = n.emit(A.MulOp(dx, n.cast(_quant_param(n, scale, shape, axis, block), f32)))
    return [n.cast(y, element_type(int(out)) if out else elem_of(scale))]


def _zero_shifted(n: _Node, i: int, zp: int, where: Callable[[SSAValue, SSAValue], SSAValue]) -> SSAValue:
    """Integer input i as i32, less its zero point (input zp; `where` broadcasts a 1-d one)."""
    v = n.cast(n.value(i), IntegerType(32))
    if not n.has(zp):
        return v
    z = n.cast(n.value(zp), IntegerType(32))
    z = n.broadcast_to(n.reshape(z, ()), shape_of(v)) if math.prod(shape_of(z)) == 1 else where(v, z)
    return n.emit(A.SubOp(v, z))


@handles("MatMulInteger")
def _matmul_integer(n: _Node) -> list[Value]:
    def per_row(v: SSAValue, z: SSAValue) -> SSAValue:
        return n.emit(A.BroadcastOp(z, [len(shape_of(v)) - 2], shape_of(v)))

    def per_column(v: SSAValue, z: SSAValue) -> SSAValue:
        return n.emit(A.BroadcastOp(z, [len(shape_of(v)) - 1], shape_of(v)))

    return [_matmul_values(n, _zero_shifted(n, 0, 2, per_row), _zero_shifted(n, 1, 3, per_column))]


@handles("QLinearMatMul")
def _qlinear_matmul(n: _Node) -> list[Value]:
    """As onnx's reference: the integer product, times a_scale·b_scale/y_scale
    in float64 (numpy's int32 by float32), rounded, plus y's zero point."""
    for i in (1, 2, 4, 5, 6, 7):
        if n.has(i) and math.prod(n.shape(i)) != 1:
            raise n.unsupported("per-row or per-column scales and zero points")

    def scalar_only(v: SSAValue, z: SSAValue) -> SSAValue:
        raise AssertionError("checked above: one value each")

    c = _matmul_values(n, _zero_shifted(n, 0, 2, scalar_only), _zero_shifted(n, 3, 5, scalar_only))
    f32, f64 = Float32Type(), Float64Type()
    scale = [n.reshape(n.cast(n.value(i), f32), ()) for i in (1, 4, 6)]
    mult = n.emit(A.DivOp(n.emit(A.MulOp(scale[0], scale[1])), scale[2]))
    d = n.emit(A.MulOp(n.cast(c, f64), n.emit(A.BroadcastOp(n.cast(mult, f64), [], shape_of(c)))))
    to = n.im.onnx_type(n.raw(7)) if n.has(7) else n.im.onnx_type(n.raw(0))
    if to not in QUANT_RANGES:
        raise n.error("dtype", f"quantized type {_dtype_name(to)} is not supported")
    zp = n.emit(A.BroadcastOp(n.reshape(n.value(7), ()), [], shape_of(d))) if n.has(7) else None
    return [_requantize(n, d, zp, to)]


@handles("Cast", "CastLike")
def _cast(n: _Node) -> list[Value]:
    x = n.value(0)
    if n.op == "CastLike":
        to = n.im.onnx_type(n.raw(1))
    else:
        to = n.attr("to")
        if isinstance(to, str):  # opset 1 names the type
            to = getattr(TensorProto, to.upper())
    if to not in ELEMENT_TYPES and to not in UNSIGNED and to not in NARROW:
        raise n.error("dtype", f"cast to {_dtype_name(to)} is not supported: accy has {SUPPORTED_DTYPES}")
    # Both change only a cast to a float8 (saturate) or float8e8m0 (both), as in onnx's reference.
    saturate = n.int_attr("saturate", 1) != 0
    round_mode = n.attr("round_mode", "up")
    source = n.im.narrow.get(x)
    if source is not None and to in NARROW:
        r = onnx_narrow.recode(n, x, source, to, saturate, round_mode)
        n.im.narrow[r] = to
        return [r]
    if source in onnx_narrow.FLOATS or source == onnx_narrow.E8M0:
        x = onnx_narrow.decode(n, x, source)
    if to in onnx_narrow.INTS:
        r = onnx_narrow.to_int(n, x, to)
    elif to in NARROW:
        r = onnx_narrow.encode(n, x, to, saturate, round_mode)
    elif x in n.im.narrow:  # int4/int2 to the i8 that holds them: a value of its own, not marked narrow
        r = n.emit(A.CastOp(x, element_type(to)))
    else:
        r = n.cast(x, element_type(to))
    if to in NARROW:
        n.im.narrow[r] = to
        return [r]
    if to in UNSIGNED:
        held, bits = UNSIGNED[to]
        if n.unsigned_bits(0) != bits:
            r = n.emit(A.AndOp(r, n.scalar((1 << bits) - 1, r)))  # wraps as numpy's astype does
            n.im.unsigned[r] = bits
    return [r]


@handles("BitShift")
def _bit_shift(n: _Node) -> list[Value]:
    x, y = n.broadcast_all([n.value(0), n.value(1)])
    direction = n.attr("direction")
    if direction not in ("LEFT", "RIGHT"):
        raise n.unsupported(f"direction '{direction}'")
    if n.unsigned_bits(0) is None:
        if not is_int(elem_of(x)) or is_bool(elem_of(x)):
            raise n.error("dtype", f"{elem_of(x)} is not supported (it takes an integer type)")
        return [_signed_bit_shift(n, x, y, direction)]
    # x << y = x·2^y (masked to the width); x >> y = x / 2^y (x >= 0). A shift
    # past the holding type's width gives 2^y = 0, and x / 0 = 0 in accy.
    p = n.emit(A.PowOp(n.scalar(2, y), y))
    if direction == "LEFT":
        r = n.emit(A.MulOp(x, p))
        bits = n.unsigned_bits(0)
        assert bits is not None
        return [n.emit(A.AndOp(r, n.scalar((1 << bits) - 1, r)))]
    return [n.emit(A.DivOp(x, p))]


def _signed_bit_shift(n: _Node, x: SSAValue, y: SSAValue, direction: str) -> SSAValue:
    """BitShift of a signed integer type as onnx's reference: a shift by y
    outside [0, width) gives 0 (LEFT) or the sign, -1 or 0 (RIGHT); LEFT
    wraps (x·2^y modulo 2^width: 2^(width-1) wraps to INT_MIN, which is the
    same modulo 2^width); RIGHT is arithmetic, floor(x / 2^y)."""
    width = elem_of(x).width.data
    zero = n.scalar(0, x)
    if direction == "LEFT":
        valid = n.emit(A.AndOp(n.emit(A.CmpOp("ge", y, zero)), n.emit(A.CmpOp("lt", y, n.scalar(width, y)))))
        p = n.emit(A.PowOp(n.scalar(2, y), n.select(valid, y, zero)))
        return n.select(valid, n.emit(A.MulOp(x, p)), zero)
    # A shift by width - 1 or more (or a negative one) leaves the sign; 2^y, y < width - 1, is positive.
    sign = n.select(n.emit(A.CmpOp("lt", x, zero)), n.scalar(-1, x), zero)
    valid = n.emit(A.AndOp(n.emit(A.CmpOp("ge", y, zero)), n.emit(A.CmpOp("lt", y, n.scalar(width - 1, y)))))
    p = n.emit(A.PowOp(n.scalar(2, y), n.select(valid, y, zero)))
    q = n.emit(A.DivOp(x, p))  # truncated: one less where x < 0 leaves a remainder
    inexact = n.emit(A.AndOp(n.emit(A.CmpOp("lt", x, zero)), n.emit(A.CmpOp("ne", n.emit(A.MulOp(q, p)), x))))
    q = n.select(inexact, n.emit(A.SubOp(q, n.scalar(1, q))), q)
    return n.select(valid, q, sign)


@handles("Clip")
def _clip(n: _Node) -> list[Value]:
    n.ignore("consumed_inputs")
    x = n.value(0)
    et = elem_of(x)
    if n.opset < 11:
        lo = n.float_attr("min", -3.4028234663852886e38)
        hi = n.float_attr("max", 3.4028234663852886e38)
        x = n.emit(A.MaxOp(x, n.scalar(lo, x)))
        return [n.emit(A.MinOp(x, n.scalar(hi, x)))]
    for i, cls in ((1, A.MaxOp), (2, A.MinOp)):
        if n.has(i):
            bound = n.value(i)
            if elem_of(bound) != et:
                raise n.error("dtype", f"bound #{i} is {elem_of(bound)}, x is {et}")
            x = n.emit(cls(x, n.broadcast_to(n.reshape(bound, ()) if shape_of(bound) == (1,) else bound, shape_of(x))))
    return [x]


@handles("Identity")
def _identity(n: _Node) -> list[Value]:
    return [n.raw(0)]


@handles("Dropout")
def _dropout(n: _Node) -> list[Value]:
    n.ignore("seed", "consumed_inputs", "is_test")
    x = n.raw(0)
    ratio = n.float_attr("ratio", 0.5) if n.opset < 12 else None
    if n.opset >= 12:
        r = n.const(1, "ratio")
        ratio = 0.5 if r is None else float(np.asarray(r).reshape(-1)[0])
        t = n.const(2, "training_mode")
        training = False if t is None else bool(np.asarray(t).reshape(-1)[0])
        if training and ratio != 0:
            raise n.unsupported("training_mode with a nonzero ratio drops at random")
    shape = shape_of(x) if isinstance(x, SSAValue) else x.shape
    mask = np.ones(shape, dtype=np.bool_)
    return [x, mask]


# -- contraction -----------------------------------------------------------


@handles("MatMul")
def _matmul(n: _Node) -> list[Value]:
    return [_matmul_values(n, n.value(0), n.value(1))]


def _matmul_values(n: _Node, a: SSAValue, b: SSAValue) -> SSAValue:
    """numpy's matmul: 1-d operands promoted and their dim dropped, batch dims broadcast."""
    sa, sb = shape_of(a), shape_of(b)
    if not sa or not sb:
        raise n.unsupported("a rank-0 operand")
    a2 = n.reshape(a, (1, *sa)) if len(sa) == 1 else a
    b2 = n.reshape(b, (*sb, 1)) if len(sb) == 1 else b
    sa2, sb2 = shape_of(a2), shape_of(b2)
    if sa2[-1] != sb2[-2]:
        raise n.unsupported(f"shapes {list(sa)} and {list(sb)} do not multiply")
    ba, bb = sa2[:-2], sb2[:-2]
    if not bb:
        r = n.emit(A.DotGeneralOp(a2, b2, (), (), (len(sa2) - 1,), (0,)))
    else:
        try:
            batch = tuple(np.broadcast_shapes(ba, bb))
        except ValueError:
            raise n.unsupported(f"batch dims {list(ba)} and {list(bb)} do not broadcast") from None
        a3 = n.broadcast_to(a2, (*batch, *sa2[-2:]))
        b3 = n.broadcast_to(b2, (*batch, *sb2[-2:]))
        k = len(batch)
        r = n.emit(A.DotGeneralOp(a3, b3, tuple(range(k)), tuple(range(k)), (k + 1,), (k,)))
    out = list(shape_of(r))
    if len(sa) == 1:
        del out[-2]
    if len(sb) == 1:
        del out[-1]
    return n.reshape(r, out)


@handles("Gemm")
def _gemm(n: _Node) -> list[Value]:
    a, b = n.value(0), n.value(1)
    alpha, beta = n.float_attr("alpha", 1.0), n.float_attr("beta", 1.0)
    ta, tb = n.int_attr("transA", 0), n.int_attr("transB", 0)
    n.ignore("broadcast")  # opsets < 7 asked for C's broadcast; it is always done here
    if len(shape_of(a)) != 2 or len(shape_of(b)) != 2:
        raise n.unsupported("operands must be matrices")
    r = n.emit(A.DotGeneralOp(a, b, (), (), (0 if ta else 1,), (1 if tb else 0,)))
    et = elem_of(r)
    if not is_float(et) and (alpha != 1 or (n.has(2) and beta != 1)):
        raise n.unsupported(f"alpha/beta other than 1 with {et} operands")
    if alpha != 1:
        r = n.emit(A.MulOp(r, n.scalar(alpha, r)))
    if n.has(2):
        c = n.value(2)
        if beta != 1:
            c = n.emit(A.MulOp(c, n.scalar(beta, c)))
        r = n.emit(A.AddOp(r, n.broadcast_to(c, shape_of(r))))
    return [r]


def _einsum_terms(equation: str, ranks: Sequence[int], n: _Node) -> tuple[list[str], str]:
    """The letters of each operand and of the output, with `...` spelled as
    upper-case letters the equation does not use (aligned from the right)."""
    eq = equation.replace(" ", "")
    lhs, arrow, out = eq.partition("->")
    terms = lhs.split(",")
    if len(terms) != len(ranks):
        raise n.unsupported(f"equation '{equation}' has {len(terms)} operands, the node {len(ranks)}")
    spare = [c for c in string.ascii_uppercase if c not in eq]
    ell_rank = 0
    for t, r in zip(terms, ranks, strict=True):
        if "..." in t:
            ell_rank = max(ell_rank, r - (len(t) - 3))
    ell = "".join(spare[:ell_rank])
    spelled = []
    for t, r in zip(terms, ranks, strict=True):
        if "..." in t:
            k = r - (len(t) - 3)
            t = t.replace("...", ell[ell_rank - k :])
        if len(t) != r or not (t.isalpha() or t == ""):
            raise n.unsupported(f"operand term '{t}' of '{equation}' does not match its rank {r}")
        spelled.append(t)
    if arrow:
        out = out.replace("...", ell)
    else:
        letters = "".join(spelled)
        out = ell + "".join(sorted(c for c in set(letters) if letters.count(c) == 1 and c not in ell))
    return spelled, out


@handles("Einsum")
def _einsum(n: _Node) -> list[Value]:
    vs = n.values()
    terms, out = _einsum_terms(n.attr("equation"), [len(shape_of(v)) for v in vs], n)
    sizes: dict[str, int] = {}
    for t, v in zip(terms, vs, strict=True):
        if len(set(t)) != len(t):
            raise n.unsupported(f"a repeated index in one operand ('{t}': a diagonal) is not a contraction")
        for c, d in zip(t, shape_of(v), strict=True):
            if c in sizes and sizes[c] != d and 1 not in (sizes[c], d):
                raise n.unsupported(f"index '{c}' has sizes {sizes[c]} and {d}")
            sizes[c] = d if sizes.get(c, 1) == 1 else sizes[c]
    if any(c not in sizes for c in out) or len(set(out)) != len(out):
        raise n.unsupported(f"output term '{out}' repeats an index or names one no operand has")
    # Size-1 dims broadcast (numpy's einsum does so for ... dims).
    operands = []
    for t, v in zip(terms, vs, strict=True):
        want = tuple(sizes[c] for c in t)
        operands.append((t, n.emit(A.BroadcastOp(v, list(range(len(t))), want)) if want != shape_of(v) else v))

    def needed_later(k: int) -> set[str]:
        """The indices the output or operands k, k+1, ... still need."""
        return set(out).union(*(set(t) for t, _ in operands[k:]))

    def sum_out(t: str, v: SSAValue, keep: set[str]) -> tuple[str, SSAValue]:
        drop = [i for i, c in enumerate(t) if c not in keep]
        if not drop:
            return t, v
        return "".join(c for c in t if c in keep), n.emit(A.ReduceOp(v, "sum", drop))

    t0, acc = operands[0]
    t0, acc = sum_out(t0, acc, needed_later(1))
    for k in range(1, len(operands)):
        t1, v1 = operands[k]
        keep = needed_later(k + 1)
        t1, v1 = sum_out(t1, v1, keep | set(t0))
        t0, acc = sum_out(t0, acc, keep | set(t1))
        batch = [c for c in t0 if c in t1 and c in keep]
        contract = [c for c in t0 if c in t1 and c not in keep]
        acc = n.emit(
            A.DotGeneralOp(
                acc,
                v1,
                [t0.index(c) for c in batch],
                [t1.index(c) for c in batch],
                [t0.index(c) for c in contract],
                [t1.index(c) for c in contract],
            )
        )
        t0 = "".join(batch) + "".join(c for c in t0 if c not in t1) + "".join(c for c in t1 if c not in t0)
    t0, acc = sum_out(t0, acc, set(out))
    return [n.transpose(acc, [t0.index(c) for c in out])]


# -- reductions ------------------------------------------------------------

#: ONNX reduction -> (the accy kind, what is applied before, what after).
REDUCTIONS = {
    "ReduceSum": "sum",
    "ReduceMax": "max",
    "ReduceMin": "min",
    "ReduceMean": "mean",
    "ReduceProd": "prod",
    "ReduceL1": "sum",
    "ReduceL2": "sum",
    "ReduceSumSquare": "sum",
    "ReduceLogSum": "sum",
    "ReduceLogSumExp": "sum",
}


def _reduce_axes(n: _Node) -> list[int] | None:
    """The axes (None: all), from the attribute or (opset 13 for ReduceSum,
    18 for the others) the second input; empty axes with
    noop_with_empty_axes reduce nothing."""
    since = 13 if n.op == "ReduceSum" else 18
    axes = n.axis_or_input("axes", 1, since, "axes")
    if n.opset >= since:
        noop = n.int_attr("noop_with_empty_axes", 0)
        if not axes:
            return [] if noop else None
    return axes


@handles(*REDUCTIONS)
def _reduction(n: _Node) -> list[Value]:
    x = n.value(0)
    rank = len(shape_of(x))
    axes = _reduce_axes(n)
    axes = list(range(rank)) if axes is None else [n.axis(a, rank, "axis") for a in axes]
    keep = bool(n.int_attr("keepdims", 1))
    return [_reduce_value(n, x, axes, keep)]


def _reduce_value(n: _Node, x: SSAValue, axes: list[int], keep: bool) -> SSAValue:
    op = n.op
    kind = REDUCTIONS[op]
    et = elem_of(x)
    if op in ("ReduceL2", "ReduceLogSum", "ReduceLogSumExp") and not is_float(et):
        raise n.error("dtype", f"{et} is not supported (it takes a float)")
    if is_bool(et):
        if op not in ("ReduceMax", "ReduceMin"):
            raise n.error("dtype", "i1 is not supported")
        wide = n.cast(x, IntegerType(8))
        r = n.reduce(wide, kind, axes, keep)
        # > 0, not a cast: the i8 identity of an empty max (-128) is false.
        return n.cmp("gt", r, n.scalar(0, r))
    if op == "ReduceMean" and not is_float(et):
        # ONNX's integer mean truncates the sum's quotient (numpy's mean with an integer dtype).
        s = n.reduce(x, "sum", axes, keep)
        count = math.prod(shape_of(x)[a] for a in axes)
        return n.emit(A.DivOp(s, n.scalar(count, s)))
    if op == "ReduceL1":
        return n.reduce(n.emit(A.AbsOp(x)), kind, axes, keep)
    if op in ("ReduceL2", "ReduceSumSquare"):
        s = n.reduce(n.emit(A.MulOp(x, x)), kind, axes, keep)
        return n.emit(A.SqrtOp(s)) if op == "ReduceL2" else s
    if op == "ReduceLogSum":
        return n.emit(A.LogOp(n.reduce(x, kind, axes, keep)))
    if op == "ReduceLogSumExp":
        # log(sum(exp(x - m))) + m with m the max (a finite one): no overflow.
        m = n.reduce(x, "max", axes, True)
        m = n.select(n.cmp("eq", n.emit(A.AbsOp(m)), n.scalar(math.inf, m)), n.scalar(0, m), m)
        e = n.emit(A.ExpOp(n.emit(A.SubOp(x, n.broadcast_to(m, shape_of(x))))))
        s = n.emit(A.LogOp(n.reduce(e, "sum", axes, True)))
        r = n.emit(A.AddOp(s, m))
        if not keep:
            r = n.reshape(r, [d for i, d in enumerate(shape_of(x)) if i not in axes])
        return r
    return n.reduce(x, kind, axes, keep)


def _arg_along(n: _Node, x: SSAValue, axis: int, kind: str, last: bool = False) -> SSAValue:
    """The index along `axis` of the first (or `last`) greatest (`kind`
    "argmax") or least element of x (the first NaN when there is one), i64,
    keeping the dim: one `accy.reduce`. The op gives the first index on
    ties; the last is the first of the axis reversed (a gather), mirrored."""
    shape = shape_of(x)
    if shape[axis] == 0:
        raise n.unsupported("an empty axis has no arg max")
    if is_bool(elem_of(x)):
        x = n.cast(x, IntegerType(8))
    r = n.reduce(_reverse(n, x, axis) if last else x, kind, [axis], True)
    if last and shape[axis] > 1:
        r = n.emit(A.SubOp(n.scalar(shape[axis] - 1, r), r))
    return r


@handles("ArgMax", "ArgMin")
def _argmax(n: _Node) -> list[Value]:
    x = n.value(0)
    rank = len(shape_of(x))
    axis = n.axis(n.int_attr("axis", 0), rank)
    keep = n.int_attr("keepdims", 1)
    last = bool(n.int_attr("select_last_index", 0))
    r = _arg_along(n, x, axis, "argmax" if n.op == "ArgMax" else "argmin", last)
    if not keep:
        r = n.reshape(r, [d for i, d in enumerate(shape_of(x)) if i != axis])
    return [r]


def _first_index(n: _Node, hit: SSAValue, axis: int) -> SSAValue:
    """The first index along `axis` where `hit` (i1) holds, i64, keeping the
    dim (the axis' size where it never does): a min of the positions hit."""
    shape = shape_of(hit)
    i64 = IntegerType(64)
    idx = n.emit(A.BroadcastOp(n.lit(np.arange(shape[axis], dtype=np.int64), i64), [axis], shape))
    return n.reduce(n.emit(A.SelectOp(hit, idx, n.full(shape[axis], shape, i64))), "min", [axis], True)


#: The most elements TopK selects, one max (or min) over the axis each.
TOPK_LIMIT = 256


@handles("TopK")
def _top_k(n: _Node) -> list[Value]:
    """K rounds of: the extreme of the elements not taken yet, and the first
    index reaching it (ties go to the lower index, as ONNX's), then taken."""
    x = n.value(0)
    shape = shape_of(x)
    axis = n.axis(n.int_attr("axis", -1), len(shape))
    k = int(np.asarray(n.const(1, "K")).reshape(-1)[0]) if n.opset >= 10 else n.int_attr("k", 1)
    largest = n.int_attr("largest", 1) if n.opset >= 11 else 1
    n.ignore("sorted")  # the elements come out sorted either way
    if not 1 <= k <= min(TOPK_LIMIT, shape[axis]):
        raise n.unsupported(f"K={k} (of {shape[axis]}; past {TOPK_LIMIT} it needs a sort)")
    et = elem_of(x)
    if is_bool(et):
        raise n.error("dtype", "i1 is not supported")
    kind = "max" if largest else "min"
    worst = (-math.inf if largest else math.inf) if is_float(et) else (
        -(1 << (et.width.data - 1)) if largest else (1 << (et.width.data - 1)) - 1  # type: ignore[attr-defined]
    )
    iota = n.emit(A.BroadcastOp(n.lit(np.arange(shape[axis], dtype=np.int64), IntegerType(64)), [axis], shape))
    taken = n.full(False, shape, IntegerType(1))
    values, indices = [], []
    for _ in range(k):
        free = n.emit(A.NotOp(taken))
        cand = n.emit(A.SelectOp(taken, n.full(worst, x), x))
        m = n.reduce(cand, kind, [axis], True)
        mb = n.broadcast_to(m, shape)
        hit = n.emit(A.CmpOp("eq", cand, mb))
        if is_float(et):
            hit = n.emit(A.OrOp(hit, n.emit(A.CmpOp("ne", cand, cand))))
        i = _first_index(n, n.emit(A.AndOp(hit, free)), axis)
        values.append(m)
        indices.append(i)
        taken = n.emit(A.OrOp(taken, n.emit(A.CmpOp("eq", iota, n.broadcast_to(i, shape)))))
    return [n.concat(values, axis) if k > 1 else values[0], n.concat(indices, axis) if k > 1 else indices[0]]


@handles("Hardmax")
def _hardmax(n: _Node) -> list[Value]:
    x = n.value(0)
    _float_only(n, x)
    shape = shape_of(x)
    rank = len(shape)
    if n.opset < 13:
        axis = n.axis(n.int_attr("axis", 1), rank)
        flat = n.reshape(x, (math.prod(shape[:axis]), math.prod(shape[axis:])))
        return [n.reshape(_hardmax_along(n, flat, 1), shape)]
    return [_hardmax_along(n, x, n.axis(n.int_attr("axis", -1), rank))]


def _hardmax_along(n: _Node, x: SSAValue, axis: int) -> SSAValue:
    shape = shape_of(x)
    if shape[axis] == 0:
        return x
    first = n.broadcast_to(_arg_along(n, x, axis, "argmax"), shape)
    iota = n.emit(A.BroadcastOp(n.lit(np.arange(shape[axis], dtype=np.int64), IntegerType(64)), [axis], shape))
    return n.cast(n.emit(A.CmpOp("eq", iota, first)), elem_of(x))


def _softmax_like(n: _Node, cls: type[A.SoftmaxOp] | type[A.LogSoftmaxOp]) -> list[Value]:
    x = n.value(0)
    _float_only(n, x)
    shape = shape_of(x)
    rank = len(shape)
    if rank == 0:
        raise n.unsupported("a rank-0 operand")
    if n.opset < 13:
        # Opsets before 13 normalise over every dim from `axis` on, as one.
        axis = n.axis(n.int_attr("axis", 1), rank)
        flat = n.reshape(x, (math.prod(shape[:axis]), math.prod(shape[axis:])))
        return [n.reshape(n.emit(cls(flat, 1)), shape)]
    return [n.emit(cls(x, n.axis(n.int_attr("axis", -1), rank)))]


@handles("Softmax")
def _softmax(n: _Node) -> list[Value]:
    return _softmax_like(n, A.SoftmaxOp)


@handles("LogSoftmax")
def _log_softmax(n: _Node) -> list[Value]:
    return _softmax_like(n, A.LogSoftmaxOp)


@handles("LayerNormalization")
def _layer_norm(n: _Node) -> list[Value]:
    x = n.value(0)
    _float_only(n, x)
    shape = shape_of(x)
    rank = len(shape)
    axis = n.axis(n.int_attr("axis", -1), rank)
    eps = n.float_attr("epsilon", 1e-5)
    stash = n.int_attr("stash_type", 1)
    if stash not in (1, _onnx_type_of(elem_of(x))):
        raise n.error("dtype", f"stash_type {_dtype_name(stash)} is not supported")
    inner = shape[axis:]
    rows, cols = math.prod(shape[:axis]), math.prod(inner)
    et = elem_of(x)
    ct = Float32Type() if stash == 1 and not isinstance(et, Float64Type) else et
    xc = n.cast(n.reshape(x, (rows, cols)), ct)

    def per_row(i: int) -> SSAValue | None:
        if not n.has(i):
            return None
        v = n.value(i)
        return n.cast(n.reshape(n.broadcast_to(v, inner), (cols,)), ct)

    scale, bias = per_row(1), per_row(2)
    want_stats = any(name for name in n.node.output[1:])
    if want_stats or eps < 0:
        mean = n.reduce(xc, "mean", [1], True)
        c = n.emit(A.SubOp(xc, n.broadcast_to(mean, (rows, cols))))
        var = n.reduce(n.emit(A.MulOp(c, c)), "mean", [1], True)
        inv = n.emit(A.RsqrtOp(n.emit(A.AddOp(var, n.scalar(eps, var)))))
        y = n.emit(A.MulOp(c, n.broadcast_to(inv, (rows, cols))))
        if scale is not None:
            y = n.emit(A.MulOp(y, n.broadcast_to(scale, (rows, cols))))
        if bias is not None:
            y = n.emit(A.AddOp(y, n.broadcast_to(bias, (rows, cols))))
    else:
        gamma = scale if scale is not None else n.full(1, (cols,), ct)
        beta = bias if bias is not None else n.full(0, (cols,), ct)
        y = n.emit(A.LayerNormOp(xc, gamma, beta, eps))
        mean = inv = None
    y = n.reshape(n.cast(y, et), shape)
    stats_shape = [*shape[:axis], *[1] * (rank - axis)]
    outs: list[Value | None] = [y]
    if mean is not None and inv is not None:
        outs += [n.reshape(mean, stats_shape), n.reshape(inv, stats_shape)]
    return outs


def _per_channel(n: _Node, v: SSAValue, shape: tuple[int, ...]) -> SSAValue:
    """A (C,) vector broadcast along dim 1 of `shape`."""
    if shape_of(v) == shape[1:] and n.opset < 9:
        return n.emit(A.BroadcastOp(v, list(range(1, len(shape))), shape))
    if len(shape_of(v)) != 1:
        raise n.unsupported(f"a per-channel operand of shape {list(shape_of(v))}")
    return n.emit(A.BroadcastOp(v, [1], shape))


@handles("BatchNormalization")
def _batch_norm(n: _Node) -> list[Value]:
    n.ignore("consumed_inputs", "is_test")
    x = n.value(0)
    _float_only(n, x)
    shape = shape_of(x)
    if len(shape) < 2:
        raise n.unsupported("an input of rank < 2")
    if n.opset < 9 and not n.int_attr("spatial", 1):
        n.read_attrs.add("spatial")
    else:
        n.ignore("spatial")
    eps = n.float_attr("epsilon", 1e-5)
    momentum = n.float_attr("momentum", 0.9)
    training = n.int_attr("training_mode", 0) if n.opset >= 14 else 0
    scale, bias, mean, var = (n.value(i) for i in (1, 2, 3, 4))
    et = elem_of(x)

    def wide(v: SSAValue) -> SSAValue:
        return n.cast(v, et)

    outs: list[Value | None] = []
    if training:
        axes = [0, *range(2, len(shape))]
        bm = n.reduce(x, "mean", axes, False)
        c = n.emit(A.SubOp(x, _per_channel(n, bm, shape)))
        bv = n.reduce(n.emit(A.MulOp(c, c)), "mean", axes, False)
        use_mean, use_var = bm, bv
    else:
        use_mean, use_var = wide(mean), wide(var)
    inv = n.emit(A.RsqrtOp(n.emit(A.AddOp(use_var, n.scalar(eps, use_var)))))
    y = n.emit(A.SubOp(x, _per_channel(n, use_mean, shape)))
    y = n.emit(A.MulOp(y, _per_channel(n, n.emit(A.MulOp(inv, wide(scale))), shape)))
    y = n.emit(A.AddOp(y, _per_channel(n, wide(bias), shape)))
    outs.append(y)
    if training:
        mt = elem_of(mean)

        def running(old: SSAValue, new: SSAValue) -> SSAValue:
            new = n.cast(new, mt)
            a = n.emit(A.MulOp(old, n.scalar(momentum, old)))
            return n.emit(A.AddOp(a, n.emit(A.MulOp(new, n.scalar(1 - momentum, new)))))

        outs += [running(mean, use_mean), running(var, use_var)]
    elif any(name for name in n.node.output[1:]):
        raise n.unsupported("outputs beyond Y outside training mode")
    return outs


@handles("InstanceNormalization")
def _instance_norm(n: _Node) -> list[Value]:
    x = n.value(0)
    _float_only(n, x)
    shape = shape_of(x)
    eps = n.float_attr("epsilon", 1e-5)
    axes = list(range(2, len(shape)))
    mean = n.reduce(x, "mean", axes, True)
    c = n.emit(A.SubOp(x, n.broadcast_to(mean, shape)))
    var = n.reduce(n.emit(A.MulOp(c, c)), "mean", axes, True)
    inv = n.emit(A.RsqrtOp(n.emit(A.AddOp(var, n.scalar(eps, var)))))
    y = n.emit(A.MulOp(c, n.broadcast_to(inv, shape)))
    y = n.emit(A.MulOp(y, _per_channel(n, n.value(1), shape)))
    return [n.emit(A.AddOp(y, _per_channel(n, n.value(2), shape)))]


@handles("LpNormalization")
def _lp_norm(n: _Node) -> list[Value]:
    x = n.value(0)
    _float_only(n, x)
    shape = shape_of(x)
    axis = n.axis(n.int_attr("axis", -1), len(shape))
    p = n.int_attr("p", 2)
    if p == 1:
        norm = n.reduce(n.emit(A.AbsOp(x)), "sum", [axis], True)
    elif p == 2:
        norm = n.emit(A.SqrtOp(n.reduce(n.emit(A.MulOp(x, x)), "sum", [axis], True)))
    else:
        raise n.unsupported(f"p={p} (ONNX defines 1 and 2)")
    norm = n.broadcast_to(norm, shape)
    # A zero norm gives 0, not 0/0 (as onnx's reference).
    return [n.select(n.cmp("eq", norm, n.scalar(0, norm)), n.scalar(0, x), n.emit(A.DivOp(x, norm)))]


@handles("GlobalAveragePool", "GlobalMaxPool")
def _global_pool(n: _Node) -> list[Value]:
    x = n.value(0)
    _float_only(n, x)
    axes = list(range(2, len(shape_of(x))))
    return [n.reduce(x, "mean" if n.op == "GlobalAveragePool" else "max", axes, True)]


# -- shapes ----------------------------------------------------------------


@handles("Reshape")
def _reshape(n: _Node) -> list[Value]:
    x = n.value(0)
    if n.opset < 5:
        n.ignore("consumed_inputs")
        target = n.ints_attr("shape", [])
    else:
        target = n.const_ints(1, "shape")
    allowzero = n.int_attr("allowzero", 0) if n.opset >= 14 else 0
    return [n.reshape(x, _reshaped(n, shape_of(x), list(target or []), bool(allowzero)))]


def _reshaped(n: _Node, shape: tuple[int, ...], target: list[int], allowzero: bool) -> list[int]:
    """ONNX's Reshape target: 0 copies the input's dim (unless allowzero), -1 is inferred."""
    out = [shape[i] if d == 0 and not allowzero and i < len(shape) else d for i, d in enumerate(target)]
    if out.count(-1) > 1 or any(d < -1 for d in out):
        raise n.unsupported(f"shape {target}")
    if -1 in out:
        known = math.prod(d for d in out if d != -1)
        total = math.prod(shape)
        if known == 0 or total % known:
            raise n.unsupported(f"shape {target} does not fit {list(shape)}")
        out[out.index(-1)] = total // known
    if math.prod(out) != math.prod(shape):
        raise n.unsupported(f"shape {target} does not fit {list(shape)}")
    return out


@handles("Transpose")
def _transpose(n: _Node) -> list[Value]:
    x = n.value(0)
    rank = len(shape_of(x))
    perm = n.ints_attr("perm", list(reversed(range(rank))))
    if sorted(perm or []) != list(range(rank)):
        raise n.unsupported(f"perm {perm} is not a permutation of 0..{rank - 1}")
    return [n.transpose(x, perm or [])]


@handles("Flatten")
def _flatten(n: _Node) -> list[Value]:
    x = n.value(0)
    shape = shape_of(x)
    axis = n.int_attr("axis", 1)
    if not -len(shape) <= axis <= len(shape):
        raise n.unsupported(f"axis {axis} is out of range for rank {len(shape)}")
    if axis < 0:
        axis += len(shape)
    return [n.reshape(x, (math.prod(shape[:axis]), math.prod(shape[axis:])))]


@handles("Squeeze")
def _squeeze(n: _Node) -> list[Value]:
    x = n.value(0)
    shape = shape_of(x)
    axes = n.axis_or_input("axes", 1, 13, "axes")
    if axes is None:
        drop = {i for i, d in enumerate(shape) if d == 1}
    else:
        drop = {n.axis(a, len(shape)) for a in axes}
        if any(shape[a] != 1 for a in drop):
            raise n.unsupported(f"axes {axes} name dims of {list(shape)} that are not 1")
    return [n.reshape(x, [d for i, d in enumerate(shape) if i not in drop])]


@handles("Unsqueeze")
def _unsqueeze(n: _Node) -> list[Value]:
    x = n.value(0)
    shape = list(shape_of(x))
    axes = n.axis_or_input("axes", 1, 13, "axes")
    if axes is None:
        raise n.error("model", "axes are required")
    rank = len(shape) + len(axes)
    norm = sorted(n.axis(a, rank) for a in axes)
    if len(set(norm)) != len(norm):
        raise n.unsupported(f"axes {axes} repeat")
    for a in norm:
        shape.insert(a, 1)
    return [n.reshape(x, shape)]


@handles("Expand")
def _expand(n: _Node) -> list[Value]:
    x = n.value(0)
    target = n.const_ints(1, "shape") or []
    try:
        shape = np.broadcast_shapes(shape_of(x), tuple(target))
    except ValueError:
        raise n.unsupported(f"shape {list(shape_of(x))} does not expand to {target}") from None
    return [n.broadcast_to(x, shape)]


@handles("Concat")
def _concat(n: _Node) -> list[Value]:
    vs = n.values()
    rank = len(shape_of(vs[0]))
    axis = n.axis(n.int_attr("axis", 1 if n.opset < 4 else 0), rank)
    return [n.concat(vs, axis) if len(vs) > 1 else vs[0]]


def _slice_params(n: _Node) -> tuple[list[int], list[int], list[int] | None, list[int] | None]:
    if n.opset < 10:
        starts, ends = n.ints_attr("starts"), n.ints_attr("ends")
        return starts or [], ends or [], n.ints_attr("axes"), None
    return (
        n.const_ints(1, "starts") or [],
        n.const_ints(2, "ends") or [],
        n.const_ints(3, "axes"),
        n.const_ints(4, "steps"),
    )


@handles("Slice")
def _slice(n: _Node) -> list[Value]:
    x = n.value(0)
    shape = shape_of(x)
    rank = len(shape)
    starts, ends, axes, steps = _slice_params(n)
    axes = list(range(len(starts))) if axes is None else axes
    steps = [1] * len(starts) if steps is None else steps
    if not len(starts) == len(ends) == len(axes) == len(steps):
        raise n.unsupported("starts, ends, axes and steps of different lengths")
    lo, hi, st = [0] * rank, list(shape), [1] * rank
    flips: list[int] = []
    for s, e, a, k in zip(starts, ends, axes, steps, strict=True):
        a = n.axis(a, rank)
        size = shape[a]
        if k == 0:
            raise n.unsupported("a step of 0")
        indices = range(*slice(s, e, k).indices(size))
        if k > 0:
            lo[a], hi[a], st[a] = (indices.start, max(indices.start, indices.stop), k) if indices else (0, 0, 1)
        else:
            # A negative step: the elements in increasing order, then reversed.
            picked = list(indices)
            if picked:
                lo[a], hi[a], st[a] = picked[-1], picked[0] + 1, -k
            else:
                lo[a], hi[a], st[a] = 0, 0, 1
            flips.append(a)
    r = n.emit(A.SliceOp(x, lo, hi, st)) if (lo, hi, st) != ([0] * rank, list(shape), [1] * rank) else x
    for a in flips:
        r = _reverse(n, r, a)
    return [r]


def _reverse(n: _Node, v: SSAValue, axis: int) -> SSAValue:
    """`v` with `axis` reversed: element i of the result is element size-1-i,
    one `accy.gather` by the reversed positions."""
    size = shape_of(v)[axis]
    if size <= 1:
        return v
    flipped = n.lit(np.arange(size - 1, -1, -1, dtype=np.int64), IntegerType(64))
    return n.emit(A.GatherOp(v, flipped, axis))


@handles("Split")
def _split(n: _Node) -> list[Value]:
    x = n.value(0)
    shape = shape_of(x)
    axis = n.axis(n.int_attr("axis", 0), len(shape))
    count = len(n.node.output)
    if n.opset < 13:
        sizes = n.ints_attr("split")
        if n.opset < 2 and n.has(1):
            sizes = n.const_ints(1, "split")
    else:
        sizes = n.const_ints(1, "split")
    if n.opset >= 18:
        num = n.attr("num_outputs")
        if sizes is None and num is not None:
            chunk = -(-shape[axis] // int(num))
            sizes = [min(chunk, shape[axis] - i * chunk) for i in range(int(num))]
    if sizes is None:
        if shape[axis] % count:
            raise n.unsupported(f"dim {shape[axis]} does not split evenly into {count}")
        sizes = [shape[axis] // count] * count
    if sum(sizes) != shape[axis] or len(sizes) != count:
        raise n.unsupported(f"split {sizes} does not fit dim {shape[axis]} into {count} outputs")
    outs: list[Value | None] = []
    start = 0
    for s in sizes:
        outs.append(n.slice(x, axis, start, start + s))
        start += s
    return outs


@handles("Tile")
def _tile(n: _Node) -> list[Value]:
    x = n.value(0)
    shape = shape_of(x)
    reps = n.const_ints(1, "repeats") or []
    if len(reps) != len(shape) or any(r < 0 for r in reps):
        raise n.unsupported(f"repeats {reps} for rank {len(shape)}")
    # (r0, n0, r1, n1, ...) with each n_i broadcast along its r_i, read row-major.
    wide = [d for pair in zip(reps, shape, strict=True) for d in pair]
    b = n.emit(A.BroadcastOp(x, [2 * i + 1 for i in range(len(shape))], wide))
    return [n.reshape(b, [r * d for r, d in zip(reps, shape, strict=True)])]


@handles("Gather")
def _gather(n: _Node) -> list[Value]:
    """numpy.take: `accy.gather` itself (indices known at import are checked
    in range, as ONNX requires, and taken as slices where they run)."""
    x = n.value(0)
    shape = shape_of(x)
    axis = n.axis(n.int_attr("axis", 0), len(shape))
    if n.has(1) and isinstance(n.raw(1), SSAValue):
        return [n.emit(A.GatherOp(x, _gather_indices(n, n.value(1)), axis))]
    idx = n.const(1, "indices")
    assert idx is not None
    flat = [int(i) for i in np.asarray(idx).reshape(-1)]
    size = shape[axis]
    if any(not -size <= i < size for i in flat):
        raise n.unsupported(f"an index out of range for a dim of {size}")
    picked = n.pick(x, axis, [i % size for i in flat])
    return [n.reshape(picked, [*shape[:axis], *np.shape(idx), *shape[axis + 1 :]])]


#: The most elements of work a scatter by run-time indices does as compares
#: (output elements times the scattered positions): past it, it needs a
#: scatter op.
GATHER_LIMIT = 1 << 24


def _gather_indices(n: _Node, ind: SSAValue) -> SSAValue:
    """Indices as `accy.gather` takes them: i32 or i64 (another integer type
    widened to i64)."""
    et = elem_of(ind)
    if not is_int(et) or is_bool(et):
        raise n.error("dtype", f"indices of {et} are not supported")
    return ind if et.width.data in A.INDEX_WIDTHS else n.cast(ind, IntegerType(64))  # type: ignore[attr-defined]


def _index_of(n: _Node, ind: SSAValue, size: int) -> SSAValue:
    """Indices as i64 in 0..size-1 (a negative one counts from the end)."""
    if not is_int(elem_of(ind)):
        raise n.error("dtype", f"indices of {elem_of(ind)} are not supported")
    ind = n.cast(ind, IntegerType(64))
    return n.select(n.cmp("lt", ind, n.scalar(0, ind)), n.emit(A.AddOp(ind, n.scalar(size, ind))), ind)


def _position(n: _Node, ind: SSAValue, size: int) -> SSAValue:
    """Indices as i64 positions along a dim of `size`: counted from the end
    when negative, then clamped into [0, size-1], as `accy.gather` reads a
    position (docs/op-contract.md): what a linear index built from several
    of them needs to stay inside the data."""
    i = _index_of(n, ind, size)
    return n.emit(A.MinOp(n.emit(A.MaxOp(i, n.scalar(0, i))), n.scalar(max(size - 1, 0), i)))


def _positions_along(n: _Node, shape: Sequence[int], dim: int) -> SSAValue:
    """The coordinate along `dim` of each element of `shape`, i64 (an iota)."""
    return n.emit(A.IotaOp(list(shape), IntegerType(64), dim))


def _scaled(n: _Node, v: SSAValue, stride: int) -> SSAValue:
    return v if stride == 1 else n.emit(A.MulOp(v, n.scalar(stride, v)))


def _sum(n: _Node, terms: Sequence[SSAValue]) -> SSAValue:
    total = terms[0]
    for t in terms[1:]:
        total = n.emit(A.AddOp(total, t))
    return total


@handles("GatherElements")
def _gather_elements(n: _Node) -> list[Value]:
    """out[c] = data[c with c[axis] = indices[c]]: one `accy.gather` from the
    data flattened, at the row-major linear index of those coordinates
    (docs/op-contract.md, "ONNX's GatherElements and GatherND")."""
    x = n.value(0)
    shape = shape_of(x)
    rank = len(shape)
    axis = n.axis(n.int_attr("axis", 0), rank)
    ind = n.value(1)
    ishape = shape_of(ind)
    if len(ishape) != rank or any(i > d for k, (i, d) in enumerate(zip(ishape, shape, strict=True)) if k != axis):
        raise n.unsupported(f"indices of shape {list(ishape)} for data of shape {list(shape)}")
    if math.prod(ishape) == 0:
        return [n.full(0, ishape, elem_of(x))]
    strides = [math.prod(shape[k + 1 :]) for k in range(rank)]
    terms = [
        _scaled(n, _position(n, ind, shape[axis]) if k == axis else _positions_along(n, ishape, k), strides[k])
        for k in range(rank)
        if k == axis or ishape[k] > 1
    ]
    flat = n.reshape(x, (math.prod(shape),))
    return [n.emit(A.GatherOp(flat, _sum(n, terms), 0))]


@handles("ScatterElements", "Scatter")
def _scatter_elements(n: _Node) -> list[Value]:
    """out = data, with out[.., idx[..], ..] = updates[..] along `axis` (or
    combined with `reduction`): for each output element and each update
    position along the axis, whether the update lands there (a compare), then
    a max (or sum, product, min) over those positions. Exact; with
    reduction none, updates landing on one element give the largest."""
    data, ind, upd = n.value(0), n.value(1), n.value(2)
    shape, ushape = shape_of(data), shape_of(ind)
    rank = len(shape)
    axis = n.axis(n.int_attr("axis", 0), rank)
    reduction = n.attr("reduction", "none")
    if shape_of(upd) != ushape or len(ushape) != rank or any(u > d for u, d in zip(ushape, shape, strict=True)):
        raise n.unsupported(f"indices {list(ushape)}, updates {list(shape_of(upd))} for data {list(shape)}")
    work = (*shape, ushape[axis])
    if math.prod(work) > GATHER_LIMIT:
        raise n.error("op", f"a scatter by run-time indices over {math.prod(work)} elements of work needs a scatter op")
    flag = is_bool(elem_of(data))
    if flag:
        data, upd = n.cast(data, IntegerType(8)), n.cast(upd, IntegerType(8))
    others = [d for d in range(rank) if d != axis]

    def spread(v: SSAValue, fill: float | int) -> SSAValue:
        """[U] -> [D..., U_axis]: the axis moved last, the other dims padded out to data's."""
        moved = n.transpose(v, [*others, axis])
        moved = n.pad(moved, [0] * rank, [*(shape[d] - ushape[d] for d in others), 0], "constant", fill)
        return n.emit(A.BroadcastOp(moved, [*others, rank], work))

    idx = spread(_index_of(n, ind, shape[axis]), -1)
    pos = n.emit(A.BroadcastOp(n.lit(np.arange(shape[axis], dtype=np.int64), IntegerType(64)), [axis], work))
    out = _scatter_combine(n, data, n.emit(A.CmpOp("eq", idx, pos)), spread(upd, 0), reduction)
    return [n.cmp("gt", out, n.scalar(0, out)) if flag else out]


def _scatter_combine(n: _Node, data: SSAValue, hit: SSAValue, u: SSAValue, reduction: str) -> SSAValue:
    """`data` with the updates `u` that land on each element (`hit`; both of
    data's shape plus a last axis over the updates) put in, or combined by
    `reduction`."""
    et = elem_of(data)
    last = len(shape_of(data))
    lowest = -math.inf if is_float(et) else -(1 << (et.width.data - 1))  # type: ignore[attr-defined]
    highest = math.inf if is_float(et) else (1 << (et.width.data - 1)) - 1  # type: ignore[attr-defined]

    def over(kind: str, fill: float | int) -> SSAValue:
        return n.emit(A.ReduceOp(n.emit(A.SelectOp(hit, u, n.full(fill, u))), kind, [last]))

    if reduction == "none":
        landed = n.emit(A.ReduceOp(n.cast(hit, IntegerType(8)), "max", [last]))
        return n.select(n.cmp("gt", landed, n.scalar(0, landed)), over("max", lowest), data)
    if reduction == "add":
        return n.emit(A.AddOp(data, over("sum", 0)))
    if reduction == "mul":
        return n.emit(A.MulOp(data, over("prod", 1)))
    if reduction == "max":
        return n.emit(A.MaxOp(data, over("max", lowest)))
    if reduction == "min":
        return n.emit(A.MinOp(data, over("min", highest)))
    raise n.unsupported(f"reduction '{reduction}'")


def _linear_index(n: _Node, ind: SSAValue, dims: Sequence[int], clamp: bool = False) -> SSAValue:
    """Index tuples (the last dim of `ind`, into the leading `dims` of some
    data) as row-major linear indices, i64, the last dim dropped; with
    `clamp`, each component a `_position` first (a gather reads inside the
    data whatever the indices hold)."""
    k = shape_of(ind)[-1]
    lead = shape_of(ind)[:-1]
    lin: SSAValue | None = None
    for j in range(k):
        part = n.reshape(n.slice(ind, len(lead), j, j + 1), lead)
        part = (_position if clamp else _index_of)(n, part, dims[j])
        stride = math.prod(dims[j + 1 : k])
        term = n.emit(A.MulOp(part, n.scalar(stride, part))) if stride != 1 else part
        lin = term if lin is None else n.emit(A.AddOp(lin, term))
    assert lin is not None
    return lin


@handles("ScatterND")
def _scatter_nd(n: _Node) -> list[Value]:
    data, ind, upd = n.value(0), n.value(1), n.value(2)
    shape = shape_of(data)
    k = shape_of(ind)[-1]
    rows, rest = math.prod(shape[:k]), shape[k:]
    count = math.prod(shape_of(ind)[:-1])
    if shape_of(upd) != (*shape_of(ind)[:-1], *rest):
        raise n.unsupported(f"updates {list(shape_of(upd))} for indices {list(shape_of(ind))} into {list(shape)}")
    work = (rows, *rest, count)
    if math.prod(work) > GATHER_LIMIT:
        raise n.error("op", f"a scatter by run-time indices over {math.prod(work)} elements of work needs a scatter op")
    et = elem_of(data)
    flag = is_bool(et)
    if flag:
        data, upd = n.cast(data, IntegerType(8)), n.cast(upd, IntegerType(8))
    lin = n.reshape(_linear_index(n, ind, shape[:k]), (count,))
    hit = n.emit(A.CmpOp(
        "eq",
        n.emit(A.BroadcastOp(lin, [len(work) - 1], work)),
        n.emit(A.BroadcastOp(n.lit(np.arange(rows, dtype=np.int64), IntegerType(64)), [0], work)),
    ))  # fmt: skip
    u = n.reshape(upd, (count, *rest))
    u = n.emit(A.BroadcastOp(n.transpose(u, [*range(1, len(rest) + 1), 0]), list(range(1, len(work))), work))
    out = _scatter_combine(n, n.reshape(data, (rows, *rest)), hit, u, n.attr("reduction", "none"))
    out = n.reshape(out, shape)
    return [n.cmp("gt", out, n.scalar(0, out)) if flag else out]


@handles("GatherND")
def _gather_nd(n: _Node) -> list[Value]:
    """Each index tuple's row-major position in the data flattened over its
    batch dims and the dims the tuples name (the batch entry's rows after
    the previous entry's), one `accy.gather` of those rows (docs/op-contract.md,
    "ONNX's GatherElements and GatherND")."""
    data, ind = n.value(0), n.value(1)
    b = n.int_attr("batch_dims", 0)
    shape, ishape = shape_of(data), shape_of(ind)
    k = ishape[-1] if ishape else 0
    if not ishape or shape[:b] != ishape[:b] or b + k > len(shape) or b >= len(ishape):
        raise n.unsupported(f"indices {list(ishape)} into {list(shape)} with batch_dims {b}")
    _gather_indices(n, ind)
    batch = math.prod(shape[:b])
    rows, rest = math.prod(shape[b : b + k]), shape[b + k :]
    out = (*ishape[:-1], *rest)
    if math.prod(out) == 0:
        return [n.full(0, out, elem_of(data))]
    if rows == 0:
        raise n.unsupported(f"indices {list(ishape)} into the empty dims of {list(shape)}")
    per = (batch, math.prod(ishape[b:-1]))
    lin = n.reshape(_linear_index(n, ind, shape[b : b + k], clamp=True), per) if k else None
    if batch > 1:
        offsets = _scaled(n, _positions_along(n, per, 0), rows)
        lin = offsets if lin is None else n.emit(A.AddOp(lin, offsets))
    if lin is None:  # no tuple components and one batch entry: row 0 each time
        lin = n.full(0, per, IntegerType(64))
    flat = n.reshape(data, (batch * rows, *rest))
    picked = n.emit(A.GatherOp(flat, n.reshape(lin, (math.prod(per),)), 0))
    return [n.reshape(picked, out)]


@handles("ReverseSequence")
def _reverse_sequence(n: _Node) -> list[Value]:
    """Each batch entry's first lens[b] steps reversed: one `accy.gather` of
    the (batch, time) rows at known positions."""
    x = n.value(0)
    shape = shape_of(x)
    lens = n.const_ints(1, "sequence_lens") or []
    t_axis, b_axis = n.int_attr("time_axis", 0), n.int_attr("batch_axis", 1)
    if sorted((t_axis, b_axis)) != [0, 1] or len(lens) != shape[b_axis]:
        raise n.unsupported(f"time_axis {t_axis}, batch_axis {b_axis} and {len(lens)} lengths")
    swap = [1, 0, *range(2, len(shape))] if t_axis == 0 else list(range(len(shape)))
    xb = n.transpose(x, swap)  # (batch, time, ...)
    batch, steps, *rest = shape_of(xb)
    order = np.array([[ln - 1 - t if t < ln else t for t in range(steps)] for ln in lens], dtype=np.int64)
    rows = (np.arange(batch, dtype=np.int64)[:, None] * steps + order).reshape(-1)
    flat = n.reshape(xb, (batch * steps, *rest))
    picked = n.emit(A.GatherOp(flat, n.lit(rows, IntegerType(64)), 0))
    return [n.transpose(n.reshape(picked, (batch, steps, *rest)), swap)]


@handles("Pad")
def _pad(n: _Node) -> list[Value]:
    """One `accy.pad`: its modes are ONNX's (constant, edge, reflect, wrap),
    and a negative pad crops, as ONNX's do."""
    x = n.value(0)
    rank = len(shape_of(x))
    mode = n.attr("mode", "constant")
    if n.opset < 11:
        pads = n.ints_attr("pads" if n.opset >= 2 else "paddings") or []
        n.ignore("pads", "paddings")
        value: SSAValue | float = n.float_attr("value", 0.0)
        axes = list(range(rank))
    else:
        pads = n.const_ints(1, "pads") or []
        value = n.value(2) if n.has(2) else 0.0
        axes_in = n.const_ints(3, "axes") if n.opset >= 18 else None
        axes = list(range(rank)) if axes_in is None else [n.axis(a, rank) for a in axes_in]
    if len(pads) != 2 * len(axes) or len(set(axes)) != len(axes):
        raise n.unsupported(f"pads {pads} for axes {axes}")
    if mode not in A.PAD_MODES:
        raise n.unsupported(f"mode '{mode}'")
    low, high = [0] * rank, [0] * rank
    for k, a in enumerate(axes):
        low[a], high[a] = pads[k], pads[k + len(axes)]
    return [n.pad(x, low, high, mode, value)]


# -- recurrences: RNN, GRU, LSTM (unrolled) --------------------------------------

#: Gates and default activations of each recurrence (ONNX's order of W's rows).
RECURRENCES = {"RNN": (1, ["Tanh"]), "GRU": (3, ["Sigmoid", "Tanh"]), "LSTM": (4, ["Sigmoid", "Tanh", "Tanh"])}
#: The activations a recurrence may name, and those taking alpha / beta
#: (activation_alpha and activation_beta list only theirs, in order).
RECURRENT_ACTIVATIONS = frozenset(
    {"Relu", "Tanh", "Sigmoid", "Affine", "LeakyRelu", "ThresholdedRelu", "ScaledTanh", "HardSigmoid", "Elu", "Softsign", "Softplus"}
)
TAKES_ALPHA = frozenset({"Affine", "LeakyRelu", "ThresholdedRelu", "ScaledTanh", "HardSigmoid", "Elu"})
TAKES_BETA = frozenset({"Affine", "ScaledTanh", "HardSigmoid"})
#: The most time steps a recurrence is unrolled into.
STEP_LIMIT = 1024


@dataclass
class _Recurrence:
    """One direction of a recurrence being unrolled."""

    n: _Node
    hidden: int
    batch: int
    acts: list[Callable[[SSAValue], SSAValue]]
    clip: float | None
    r: SSAValue  # (gates·hidden, hidden)
    wb: SSAValue  # (gates·hidden,)
    rb: SSAValue
    peep: SSAValue | None = None  # LSTM's (3·hidden,): input, output, forget

    def gate(self, v: SSAValue, k: int) -> SSAValue:
        """Gate k's columns of a (batch, gates·hidden) value."""
        return self.n.slice(v, len(shape_of(v)) - 1, k * self.hidden, (k + 1) * self.hidden)

    def rows(self, v: SSAValue) -> SSAValue:
        return self.n.broadcast_to(v, (self.batch, *shape_of(v)))

    def clipped(self, v: SSAValue) -> SSAValue:
        if self.clip is None:
            return v
        n = self.n
        return n.emit(A.MinOp(n.emit(A.MaxOp(v, n.scalar(-self.clip, v))), n.scalar(self.clip, v)))

    def times_r(self, h: SSAValue, rows: SSAValue | None = None) -> SSAValue:
        return self.n.emit(A.DotGeneralOp(h, self.r if rows is None else rows, (), (), (1,), (1,)))

    def add(self, *vs: SSAValue) -> SSAValue:
        acc = vs[0]
        for v in vs[1:]:
            acc = self.n.emit(A.AddOp(acc, v))
        return acc

    def mul(self, a: SSAValue, b: SSAValue) -> SSAValue:
        return self.n.emit(A.MulOp(a, b))

    def rnn(self, xt: SSAValue, h: SSAValue) -> SSAValue:
        return self.acts[0](self.clipped(self.add(xt, self.times_r(h), self.rows(self.wb), self.rows(self.rb))))

    def gru(self, xt: SSAValue, h: SSAValue, linear_before_reset: bool) -> SSAValue:
        n, g = self.n, self.gate
        xw, hr, rb = self.add(xt, self.rows(self.wb)), self.times_r(h), self.rows(self.rb)
        z = self.acts[0](self.clipped(self.add(g(xw, 0), g(hr, 0), g(rb, 0))))
        r = self.acts[0](self.clipped(self.add(g(xw, 1), g(hr, 1), g(rb, 1))))
        if linear_before_reset:
            rec = self.mul(r, self.add(g(hr, 2), g(rb, 2)))
        else:
            rec = self.add(self.times_r(self.mul(r, h), n.slice(self.r, 0, 2 * self.hidden, 3 * self.hidden)), g(rb, 2))
        hh = self.acts[1](self.clipped(self.add(g(xw, 2), rec)))
        return self.add(self.mul(n.emit(A.SubOp(n.scalar(1, z), z)), hh), self.mul(z, h))

    def lstm(self, xt: SSAValue, h: SSAValue, c: SSAValue) -> tuple[SSAValue, SSAValue]:
        g = self.gate
        pre = self.add(xt, self.times_r(h), self.rows(self.wb), self.rows(self.rb))

        def peeped(v: SSAValue, k: int, cell: SSAValue) -> SSAValue:
            if self.peep is None:
                return v
            return self.add(v, self.mul(self.rows(self.n.slice(self.peep, 0, k * self.hidden, (k + 1) * self.hidden)), cell))

        i = self.acts[0](self.clipped(peeped(g(pre, 0), 0, c)))
        f = self.acts[0](self.clipped(peeped(g(pre, 2), 2, c)))
        cc = self.acts[1](self.clipped(g(pre, 3)))
        c = self.add(self.mul(f, c), self.mul(i, cc))
        o = self.acts[0](self.clipped(peeped(g(pre, 1), 1, c)))
        return self.mul(o, self.acts[2](c)), c


def _recurrent_activations(n: _Node, dirs: int, default: list[str]) -> list[Callable[[SSAValue], SSAValue]]:
    names = n.attr("activations") or default * dirs
    alphas, betas = list(n.attr("activation_alpha") or []), list(n.attr("activation_beta") or [])
    if len(names) != len(default) * dirs:
        raise n.unsupported(f"{len(names)} activations for {dirs} direction(s)")
    acts = []
    for k, name in enumerate(names):
        if name not in RECURRENT_ACTIVATIONS:
            raise n.unsupported(f"activation '{name}'")
        ia = sum(m in TAKES_ALPHA for m in names[:k])
        ib = sum(m in TAKES_BETA for m in names[:k])
        alpha = float(alphas[ia]) if name in TAKES_ALPHA and ia < len(alphas) else None
        beta = float(betas[ib]) if name in TAKES_BETA and ib < len(betas) else None

        def param(p: str, default: float, alpha: float | None = alpha, beta: float | None = beta) -> float:
            given = alpha if p == "alpha" else beta if p == "beta" else None
            return default if given is None else given

        acts.append(lambda v, name=name, param=param: _activation(n, v, name, param))
    return acts


@handles("RNN", "GRU", "LSTM")
def _recurrence_node(n: _Node) -> list[Value]:
    """Unrolled over the sequence: the input projections of every step in one
    dot_general per direction, then per step the recurrent one and the gates."""
    gates, default_acts = RECURRENCES[n.op]
    x, w, r = n.value(0), n.value(1), n.value(2)
    _float_only(n, x)
    layout = n.int_attr("layout", 0) if n.opset >= 14 else 0
    if layout:
        x = n.transpose(x, (1, 0, 2))
    seq, batch, _ = shape_of(x)
    if seq > STEP_LIMIT:
        raise n.error("op", f"unrolling {seq} steps is past {STEP_LIMIT}: it needs a loop op")
    direction = n.attr("direction", "forward")
    dirs = 2 if direction == "bidirectional" else 1
    if direction not in ("forward", "reverse", "bidirectional") or shape_of(w)[0] != dirs:
        raise n.unsupported(f"direction '{direction}' with weights for {shape_of(w)[0]} directions")
    hidden = shape_of(r)[-1]
    if n.int_attr("hidden_size", hidden) != hidden:
        raise n.unsupported("hidden_size differs from the weights'")
    lens = n.const_ints(4, "sequence_lens")
    if lens is not None and any(v != seq for v in lens):
        raise n.unsupported("sequence_lens shorter than the sequence (variable lengths)")
    if n.op == "LSTM" and n.int_attr("input_forget", 0):
        raise n.unsupported("input_forget=1")
    clip = n.attr("clip")
    linear_before_reset = bool(n.int_attr("linear_before_reset", 0)) if n.op == "GRU" else False
    acts = _recurrent_activations(n, dirs, default_acts)
    et = elem_of(x)

    def of_direction(i: int, d: int, shape: tuple[int, ...]) -> SSAValue:
        """Direction d of optional input i, else zeros of `shape`."""
        if not n.has(i):
            return n.full(0, shape, et)
        v = n.value(i)
        return n.reshape(n.slice(v, 0, d, d + 1), shape)

    ys, hs, cs = [], [], []
    for d in range(dirs):
        wd = n.reshape(n.slice(w, 0, d, d + 1), shape_of(w)[1:])
        b = of_direction(3, d, (2 * gates * hidden,))
        cell = _Recurrence(
            n, hidden, batch, acts[d * len(default_acts) : (d + 1) * len(default_acts)],
            None if clip is None else float(clip),
            n.reshape(n.slice(r, 0, d, d + 1), shape_of(r)[1:]),
            n.slice(b, 0, 0, gates * hidden), n.slice(b, 0, gates * hidden, 2 * gates * hidden),
            of_direction(7, d, (3 * hidden,)) if n.op == "LSTM" and n.has(7) else None,
        )  # fmt: skip
        proj = n.emit(A.DotGeneralOp(x, wd, (), (), (2,), (1,)))  # (seq, batch, gates·hidden)
        h = of_direction(5, d, (batch, hidden))
        c = of_direction(6, d, (batch, hidden)) if n.op == "LSTM" else None
        steps: list[SSAValue | None] = [None] * seq
        for t in range(seq - 1, -1, -1) if direction == "reverse" or d == 1 else range(seq):
            xt = n.reshape(n.slice(proj, 0, t, t + 1), (batch, gates * hidden))
            if n.op == "RNN":
                h = cell.rnn(xt, h)
            elif n.op == "GRU":
                h = cell.gru(xt, h, linear_before_reset)
            else:
                assert c is not None
                h, c = cell.lstm(xt, h, c)
            steps[t] = h
        ys.append(_stacked(n, [v for v in steps if v is not None], 0, "Y"))  # (seq, batch, hidden)
        hs.append(h)
        if c is not None:
            cs.append(c)
    outs: list[SSAValue] = [_stacked(n, ys, 1, "Y"), _stacked(n, hs, 0, "Y_h")]  # (seq, dirs, batch, hidden), (dirs, ...)
    if n.op == "LSTM":
        outs.append(_stacked(n, cs, 0, "Y_c"))
    if layout:
        outs = [n.transpose(outs[0], (2, 0, 1, 3)), *(n.transpose(v, (1, 0, 2)) for v in outs[1:])]
    return list(outs)


# -- windows: pools and convolutions -------------------------------------------
#
# accy.conv and accy.pool (docs/op-contract.md, "Windows"). What they do not
# cover is written with strided slices of the padded input, one per tap of
# the window: MaxPool's Indices output (the position of each window's first
# max), up to TAP_LIMIT taps.

#: The most taps (window elements) MaxPool's Indices output writes as slices.
TAP_LIMIT = 343


def _window_attrs(n: _Node, rank: int, kernel: Sequence[int]) -> tuple[list[int], list[int], list[int], str]:
    """strides, dilations, pads ([begins..., ends...]) and auto_pad."""
    sp = rank - 2
    strides = n.ints_attr("strides", [1] * sp) or []
    dil = n.ints_attr("dilations", [1] * sp) or []
    pads = n.ints_attr("pads", [0] * 2 * sp) or []
    auto_pad = n.attr("auto_pad", "NOTSET")
    if len(strides) != sp or len(dil) != sp or len(pads) != 2 * sp or len(kernel) != sp:
        raise n.unsupported(f"kernel_shape, strides, dilations or pads for {sp} spatial dims")
    if auto_pad not in ("NOTSET", "VALID", "SAME_UPPER", "SAME_LOWER"):
        raise n.unsupported(f"auto_pad '{auto_pad}'")
    if min([*strides, *dil, *kernel], default=1) < 1:
        raise n.unsupported("a stride, dilation or kernel dim below 1")
    if min(pads, default=0) < 0:
        raise n.unsupported(f"negative pads {pads}")
    return strides, dil, pads, auto_pad


def _spatial_pad(n: _Node, x: SSAValue, pads: Sequence[int], value: float | int) -> SSAValue:
    """x [N, C, spatial...] padded by ONNX's pads ([begins..., ends...]) with `value`."""
    sp = len(pads) // 2
    return n.pad(x, [0, 0, *pads[:sp]], [0, 0, *pads[sp:]], "constant", value)


def _taps(n: _Node, xp: SSAValue, kernel: Sequence[int], strides: Sequence[int], dil: Sequence[int], out: Sequence[int]) -> list[SSAValue]:
    """For each tap of the window (row-major over `kernel`), the strided
    slice of the padded `xp` ([N, C, spatial...]) it reads at every output position."""
    taps = math.prod(kernel)
    if taps > TAP_LIMIT:
        raise n.error("op", f"MaxPool's Indices of a window of {taps} taps (past {TAP_LIMIT}): accy.pool gives no indices")
    shape = shape_of(xp)
    found = []
    for tap in itertools.product(*(range(k) for k in kernel)):
        start = [0, 0, *(t * d for t, d in zip(tap, dil, strict=True))]
        limit = [*shape[:2], *(t * d + (o - 1) * s + 1 for t, d, o, s in zip(tap, dil, out, strides, strict=True))]
        found.append(n.emit(A.SliceOp(xp, start, limit, [1, 1, *strides])))
    return found


def _pool_geometry(
    n: _Node, spatial: Sequence[int], kernel: Sequence[int], strides: Sequence[int], dil: Sequence[int],
    pads: Sequence[int], auto_pad: str, ceil: bool,
) -> tuple[list[int], list[int], list[int]]:
    """(output dims, the pads the windows need, the pads that count as the
    input's), as onnx's reference pools compute them (op_pool_common.py):
    ceil_mode's extra windows need pads past the given ones, split between
    the two ends as onnx's reference splits them."""
    sp = len(spatial)
    if auto_pad != "NOTSET":
        if ceil:
            raise n.unsupported("ceil_mode with auto_pad")
        if auto_pad == "VALID":
            out = [(i - k) // s + 1 for i, k, s in zip(spatial, kernel, strides, strict=True)]
            used = [0] * 2 * sp
        else:
            out = [(i - 1) // s + 1 for i, s in zip(spatial, strides, strict=True)]
            total = [(o - 1) * s + k - i for o, s, k, i in zip(out, strides, kernel, spatial, strict=True)]
            small = [t // 2 for t in total]
            big = [t - t // 2 for t in total]
            used = [*small, *big] if auto_pad == "SAME_UPPER" else [*big, *small]
        return out, list(used), list(used)
    out = []
    for d in range(sp):
        size = (spatial[d] + pads[d] + pads[sp + d] - dil[d] * (kernel[d] - 1) - 1) / strides[d] + 1
        if ceil:
            o = math.ceil(size)
            if (o - 1) * strides[d] >= spatial[d] + pads[d]:
                o -= 1  # the last window starts inside the input or its begin pad
        else:
            o = math.floor(size)
        out.append(o)
    need = list(pads)
    for d in range(sp):
        window = (kernel[d] - 1) * dil[d] + 1
        extra = (out[d] - 1) * strides[d] + window - spatial[d] - pads[d] - pads[sp + d]
        if extra > 0:
            need[d] += extra // 2
            need[sp + d] += extra - extra // 2
    return out, need, list(pads)


def _pool_op(x: SSAValue, kind: str, kernel: Sequence[int], strides: Sequence[int], dil: Sequence[int],
             pads: Sequence[int], include: bool = False) -> A.PoolOp:
    sp = len(kernel)
    return A.PoolOp(x, kind, kernel, strides, dil, pads[:sp], pads[sp:], include)


@handles("MaxPool", "AveragePool", "LpPool")
def _pool(n: _Node) -> list[Value]:
    """One `accy.pool` over the pads the windows need (`_pool_geometry`):
    max, average, or LpPool as (sum of |x|^p)^(1/p) (the padding adds
    |0|^p = 0, so count_include_pad changes nothing there)."""
    x = n.value(0)
    if n.op != "MaxPool" or not is_int(elem_of(x)):
        _float_only(n, x)
    shape = shape_of(x)
    if len(shape) < 3:
        raise n.unsupported("an input of rank < 3")
    kernel = n.ints_attr("kernel_shape") or []
    strides, dil, pads, auto_pad = _window_attrs(n, len(shape), kernel)
    ceil = bool(n.int_attr("ceil_mode", 0))
    spatial = shape[2:]
    out, need, counted = _pool_geometry(n, spatial, kernel, strides, dil, pads, auto_pad, ceil)
    if n.op == "MaxPool":
        n.ignore("storage_order")
        r = n.emit(_pool_op(x, "max", kernel, strides, dil, need))
        if len(n.node.output) < 2 or not n.node.output[1]:
            return [r]
        et = elem_of(x)
        lowest = -math.inf if is_float(et) else -(1 << (et.width.data - 1))  # type: ignore[attr-defined]
        taps = _taps(n, _spatial_pad(n, x, need, lowest), kernel, strides, dil, out)
        return [r, _max_indices(n, shape, taps, need, kernel, strides, dil, out)]
    if n.op == "LpPool":
        n.ignore("count_include_pad")
        p = n.int_attr("p", 2)
        xs = n.emit(A.AbsOp(x))
        if p == 2:
            xs = n.emit(A.MulOp(xs, xs))
        elif p != 1:
            xs = n.emit(A.PowOp(xs, n.scalar(p, xs)))
        acc = n.emit(_pool_op(xs, "sum", kernel, strides, dil, need))
        return [acc if p == 1 else n.emit(A.SqrtOp(acc)) if p == 2 else n.emit(A.PowOp(acc, n.scalar(1.0 / p, acc)))]
    include = bool(n.int_attr("count_include_pad", 0))
    if not include or need == counted:
        return [n.emit(_pool_op(x, "average", kernel, strides, dil, need, include))]
    # count_include_pad with ceil_mode's extra pads: those do not count (as
    # in onnx's reference), so each window's divisor is how many of its taps
    # fall in the input or the given pads, counted on a mask at import.
    acc = n.emit(_pool_op(x, "sum", kernel, strides, dil, need))
    sp = len(spatial)
    padded = [i + need[d] + need[sp + d] for d, i in enumerate(spatial)]
    mask = np.zeros(padded, dtype=np.float64)
    mask[tuple(slice(0, i + counted[d] + counted[sp + d]) for d, i in enumerate(spatial))] = 1
    count = np.zeros(out, dtype=np.float64)
    for tap in itertools.product(*(range(k) for k in kernel)):
        count += mask[tuple(slice(t * dd, t * dd + (o - 1) * s + 1, s) for t, dd, o, s in zip(tap, dil, out, strides, strict=True))]
    divisor = n.emit(A.BroadcastOp(n.lit(count, elem_of(x)), list(range(2, len(shape))), shape_of(acc)))
    return [n.emit(A.DivOp(acc, divisor))]


def _max_indices(
    n: _Node, shape: Sequence[int], taps: Sequence[SSAValue], need: Sequence[int], kernel: Sequence[int],
    strides: Sequence[int], dil: Sequence[int], out: Sequence[int],
) -> SSAValue:
    """MaxPool's Indices: the flat index into x (row-major, or column-major
    over the spatial dims with storage_order=1) of each window's first max."""
    order = n.int_attr("storage_order", 0)
    sp = len(shape) - 2
    spatial = shape[2:]
    grids = np.meshgrid(*(np.arange(o) for o in out), indexing="ij")
    base = (np.arange(shape[0] * shape[1]) * math.prod(spatial)).reshape(shape[0], shape[1], *[1] * sp)
    i64 = IntegerType(64)
    best = taps[0]
    index: SSAValue | None = None
    for k, tap in enumerate(itertools.product(*(range(kk) for kk in kernel))):
        pos = [g * s + t * d - need[i] for i, (g, s, t, d) in enumerate(zip(grids, strides, tap, dil, strict=True))]
        if order:
            flat = sum(p * math.prod(spatial[:i]) for i, p in enumerate(pos))
        else:
            flat = sum(p * math.prod(spatial[i + 1 :]) for i, p in enumerate(pos))
        here = n.lit(np.asarray(base + np.asarray(flat)[None, None], dtype=np.int64), i64)
        if index is None:
            index = here
            continue
        better = n.emit(A.CmpOp("gt", taps[k], best))  # strictly: the first max keeps its index
        best = n.emit(A.MaxOp(best, taps[k]))
        index = n.emit(A.SelectOp(better, here, index))
    assert index is not None
    return index


def _conv_operands(n: _Node) -> tuple[SSAValue, SSAValue, list[int]]:
    """Conv's and ConvTranspose's X and W: X float, both of one rank of at
    least 3 ([N, C, spatial...]), and kernel_shape, when given, W's spatial
    dims (returned as the kernel)."""
    x, w = n.value(0), n.value(1)
    _float_only(n, x)
    shape, wshape = shape_of(x), shape_of(w)
    if len(shape) < 3 or len(wshape) != len(shape):
        raise n.unsupported(f"input {list(shape)} and weights {list(wshape)}")
    kernel = list(wshape[2:])
    given = n.ints_attr("kernel_shape", kernel) or []
    if list(given) != kernel:
        raise n.unsupported(f"kernel_shape {list(given)} differs from the weights' {kernel}")
    return x, w, kernel


def _conv_pads(spatial: Sequence[int], kernel: Sequence[int], strides: Sequence[int], dil: Sequence[int],
               pads: Sequence[int], auto_pad: str) -> list[int]:
    """Conv's pads ([begins..., ends...]) after auto_pad: VALID none, SAME_*
    enough for ceil(x / stride) windows, the odd one at the end (UPPER) or
    the beginning (LOWER)."""
    sp = len(spatial)
    if auto_pad == "VALID":
        return [0] * 2 * sp
    if auto_pad == "NOTSET":
        return list(pads)
    span = [(k - 1) * d + 1 for k, d in zip(kernel, dil, strict=True)]
    need = [max(0, ((i + s - 1) // s - 1) * s + k - i) for i, s, k in zip(spatial, strides, span, strict=True)]
    head = [(p + 1) // 2 if auto_pad == "SAME_LOWER" else p // 2 for p in need]
    return [*head, *(p - h for p, h in zip(need, head, strict=True))]


def _conv_op(x: SSAValue, w: SSAValue, strides: Sequence[int], dil: Sequence[int], pads: Sequence[int], group: int) -> A.ConvOp:
    sp = len(pads) // 2
    return A.ConvOp(x, w, strides, dil, pads[:sp], pads[sp:], group)


def _group(n: _Node, channels: int, weight_channels: int, outputs: int) -> int:
    """The group attribute, checked against C = weight_channels · group and outputs % group."""
    group = n.int_attr("group", 1)
    if group < 1 or channels != weight_channels * group or outputs % group:
        raise n.unsupported(f"{channels} input channels, {weight_channels} per group, {outputs} outputs and group {group}")
    return group


def _bias(n: _Node, r: SSAValue) -> SSAValue:
    """r [N, M, ...] plus input #2 (B [M]) along dim 1, when given."""
    if not n.has(2):
        return r
    return n.emit(A.AddOp(r, n.emit(A.BroadcastOp(n.value(2), [1], shape_of(r)))))


@handles("Conv")
def _conv(n: _Node) -> list[Value]:
    """One `accy.conv`, the bias added after it."""
    x, w, kernel = _conv_operands(n)
    shape, wshape = shape_of(x), shape_of(w)
    strides, dil, pads, auto_pad = _window_attrs(n, len(shape), kernel)
    group = _group(n, shape[1], wshape[1], wshape[0])
    pads = _conv_pads(shape[2:], kernel, strides, dil, pads, auto_pad)
    return [_bias(n, n.emit(_conv_op(x, w, strides, dil, pads, group)))]


@handles("ConvInteger")
def _conv_integer(n: _Node) -> list[Value]:
    """An `accy.conv` in f64 of the zero-shifted integers, cast to int32:
    exact, since 8-bit inputs' products and their sums stay far inside
    f64's 2^53 (accy.conv takes floats)."""
    def per_channel(v: SSAValue, z: SSAValue) -> SSAValue:
        return n.emit(A.BroadcastOp(z, [0], shape_of(v)))

    def scalar_only(v: SSAValue, z: SSAValue) -> SSAValue:
        raise n.unsupported("an x_zero_point of more than one value")

    x = _zero_shifted(n, 0, 2, scalar_only)
    w = _zero_shifted(n, 1, 3, per_channel)
    shape, wshape = shape_of(x), shape_of(w)
    kernel = list(wshape[2:])
    if list(n.ints_attr("kernel_shape", kernel) or []) != kernel:
        raise n.unsupported("kernel_shape differs from the weights'")
    strides, dil, pads, auto_pad = _window_attrs(n, len(shape), kernel)
    group = _group(n, shape[1], wshape[1], wshape[0])
    pads = _conv_pads(shape[2:], kernel, strides, dil, pads, auto_pad)
    f64 = Float64Type()
    r = n.emit(_conv_op(n.cast(x, f64), n.cast(w, f64), strides, dil, pads, group))
    return [n.cast(r, IntegerType(32))]


@handles("ConvTranspose")
def _conv_transpose(n: _Node) -> list[Value]:
    """The input spread out by the strides (zeros between its elements), then
    an `accy.conv` with the flipped, transposed weights over the full extent,
    cut to the output as onnx's col2im places it (the begin pads dropped):
    an `accy.pad` whose negative pads crop."""
    x, w, kernel = _conv_operands(n)
    shape, wshape = shape_of(x), shape_of(w)
    N, C, *spatial = shape
    Mg = wshape[1]
    sp = len(spatial)
    group = n.int_attr("group", 1)
    if group < 1 or wshape[0] != C or C % group:
        raise n.unsupported(f"{C} input channels, weights {list(wshape)} and group {group}")
    strides = n.ints_attr("strides", [1] * sp) or []
    dil = n.ints_attr("dilations", [1] * sp) or []
    extra = n.ints_attr("output_padding", [0] * sp) or []
    auto_pad = n.attr("auto_pad", "NOTSET")
    pads = n.ints_attr("pads")
    given = n.ints_attr("output_shape")
    full = [s * (i - 1) + (k - 1) * d + 1 for s, i, k, d in zip(strides, spatial, kernel, dil, strict=True)]
    if pads is None and auto_pad in ("SAME_UPPER", "SAME_LOWER"):
        target = given or [i * s for i, s in zip(spatial, strides, strict=True)]
        total = [f + e - t for f, e, t in zip(full, extra, target, strict=True)]
        small, big = [t // 2 for t in total], [t - t // 2 for t in total]
        pads = [*small, *big] if auto_pad == "SAME_UPPER" else [*big, *small]
    elif auto_pad not in ("NOTSET", "VALID"):
        raise n.unsupported(f"auto_pad '{auto_pad}'")
    pads = pads or [0] * 2 * sp
    out = given[-sp:] if given else [f + e - pads[d] - pads[sp + d] for d, (f, e) in enumerate(zip(full, extra, strict=True))]
    # Spread: each input element followed by stride - 1 zeros (the last's dropped).
    xs = x
    for d, s in enumerate(strides):
        if s > 1:
            axis = 2 + d
            cur = list(shape_of(xs))
            wide = [*cur[: axis + 1], 1, *cur[axis + 1 :]]
            zeros = list(wide)
            zeros[axis + 1] = s - 1
            joined = n.concat([n.reshape(xs, wide), n.full(0, tuple(zeros), elem_of(x))], axis + 1)
            flat = [*cur[:axis], cur[axis] * s, *cur[axis + 1 :]]
            xs = n.slice(n.reshape(joined, flat), axis, 0, (cur[axis] - 1) * s + 1)
    edge = [(k - 1) * d for k, d in zip(kernel, dil, strict=True)]
    # Weights [C, M/g, k...] -> [M, C/g, k...], each group's block transposed, the taps flipped.
    G, Cg = group, C // group
    wt = n.reshape(n.transpose(n.reshape(w, (G, Cg, Mg, *kernel)), (0, 2, 1, *range(3, 3 + sp))), (G * Mg, Cg, *kernel))
    for d in range(sp):
        wt = _reverse(n, wt, 2 + d)
    r = n.emit(_conv_op(xs, wt, [1] * sp, dil, [*edge, *edge], group))
    r = n.pad(r, [0, 0, *(-p for p in pads[:sp])], [0, 0, *(o - (f - p) for o, f, p in zip(out, full, pads[:sp], strict=True))])
    return [_bias(n, r)]


# -- Resize ------------------------------------------------------------------------


def _resize_axes(n: _Node, shape: tuple[int, ...]) -> list[tuple[int, int, list[float] | None, float | None]]:
    """Per resized axis: (axis, output length, its roi [start, end] or None,
    its scale, or None when sizes set it), as onnx's reference reads them."""
    rank = len(shape)
    axes_attr = n.ints_attr("axes") if n.opset >= 18 else None
    axes = [n.axis(a, rank) for a in axes_attr] if axes_attr is not None else list(range(rank))
    if n.opset >= 18 and n.attr("keep_aspect_ratio_policy", "stretch") != "stretch":
        raise n.unsupported(f"keep_aspect_ratio_policy '{n.attr('keep_aspect_ratio_policy')}'")
    if n.opset < 11:
        roi, scales, sizes = None, n.const(1, "scales"), None
    else:
        roi = n.const(1, "roi")
        scales = n.const(2, "scales")
        sizes = n.const(3, "sizes")
    roi_v = None if roi is None or np.size(roi) == 0 else [float(v) for v in np.asarray(roi).reshape(-1)]
    if sizes is not None and np.size(sizes):
        given = [int(v) for v in np.asarray(sizes).reshape(-1)]
        per = [(a, given[i], None) for i, a in enumerate(axes)]
    elif scales is not None and np.size(scales):
        given_f = [float(v) for v in np.asarray(scales).reshape(-1)]
        per = [(a, int(given_f[i] * shape[a]), given_f[i]) for i, a in enumerate(axes)]
    else:
        raise n.error("model", "neither scales nor sizes")
    out = []
    for i, (a, length, scale) in enumerate(per):
        r = [roi_v[i], roi_v[i + len(axes)]] if roi_v is not None else None
        trivial = r is None or (math.isclose(r[0], 0.0) and math.isclose(r[1], 1.0))
        if length == shape[a] and trivial and (scale is None or math.isclose(scale, 1.0)):
            continue  # the reference skips an identity axis too
        out.append((a, length, r, scale))
    return out


def _resize_matrix(n: _Node, length_in: int, length_out: int, roi: list[float] | None, scale: float | None) -> np.ndarray:
    """The (out × in) interpolation matrix of one axis: onnx's own Resize (with
    this node's attributes) of an identity, the axis alone resized. Rows
    that extrapolate are NaN (the extrapolation_value is put there after)."""
    attrs = [a for a in n.node.attribute if a.name not in ("axes", "keep_aspect_ratio_policy", "extrapolation_value")]
    basis = np.eye(length_in, dtype=np.float64)
    feeds: dict[str, np.ndarray] = {"x": basis}
    names = ["x"]
    if n.opset >= 11:
        feeds["roi"] = np.array([roi[0], 0.0, roi[1], 1.0] if roi is not None else [], dtype=np.float64)
        names.append("roi")
    if scale is not None:
        feeds["scales"] = np.array([scale, 1.0], dtype=np.float32)
        names.append("scales")
    else:
        names += ["", "sizes"]
        feeds["sizes"] = np.array([length_out, length_in], dtype=np.int64)
    node = helper.make_node("Resize", names, ["y"])
    node.attribute.extend(attrs)
    if n.opset >= 11:
        node.attribute.append(helper.make_attribute("extrapolation_value", math.nan))
    (m,) = _evaluate(node, feeds, n.opset)
    if m.shape != (length_out, length_in):
        raise n.unsupported(f"a resize of {length_in} to {length_out} that onnx's reference makes {list(m.shape)}")
    return np.asarray(m, dtype=np.float64)


@handles("Resize")
def _resize(n: _Node) -> list[Value]:
    """Separable, as onnx's reference computes it: per resized axis, its
    interpolation matrix (from the reference itself), applied as a gather by
    known indices when every row picks one element (nearest), else as a
    dot_general contracting the axis (a zero weight times an infinite or NaN
    input is NaN there, where the reference's few taps would not see it)."""
    x = n.value(0)
    shape = shape_of(x)
    n.ignore("mode", "coordinate_transformation_mode", "cubic_coeff_a", "exclude_outside", "nearest_mode", "antialias")
    extrapolation = n.float_attr("extrapolation_value", 0.0)
    for axis, length, roi, scale in _resize_axes(n, shape):
        m = _resize_matrix(n, shape_of(x)[axis], length, roi, scale)
        outside = np.isnan(m).any(axis=1)
        m = np.where(np.isnan(m), 0.0, m)
        picks = bool(((m == 0) | (m == 1)).all() and (m.sum(axis=1)[~outside] == 1).all())
        if picks:
            idx = [int(np.argmax(row)) for row in m]
            x = n.pick(x, axis, idx)
        else:
            _float_only(n, x)
            w = n.lit(m.astype(numpy_dtype_of(elem_of(x))), elem_of(x))
            r = n.emit(A.DotGeneralOp(x, w, (), (), (axis,), (1,)))  # x's other dims, then the new axis
            rank = len(shape_of(r))
            x = n.transpose(r, [*range(axis), rank - 1, *range(axis, rank - 1)])
        if outside.any():
            mask = n.emit(A.BroadcastOp(n.lit(outside, IntegerType(1)), [axis], shape_of(x)))
            x = n.emit(A.SelectOp(mask, n.scalar(extrapolation, x), x))
    return [x]


@handles("Upsample")
def _upsample(n: _Node) -> list[Value]:
    """As the Resize it became (opset 10): asymmetric coordinates, nearest rounds down."""
    n.value(0)
    scales = n.const(1, "scales") if n.opset >= 9 else np.asarray(n.attr("scales"), dtype=np.float32)
    mode = n.attr("mode", "nearest")
    if mode not in ("nearest", "linear", "bilinear"):
        raise n.unsupported(f"mode '{mode}'")
    name = n.im.fresh("scales")
    n.im.values[name] = np.asarray(scales, dtype=np.float32)
    resize = helper.make_node(
        "Resize", [n.node.input[0], "", name], list(n.node.output), name=f"{n.label}/Resize",
        mode="linear" if mode == "bilinear" else mode, coordinate_transformation_mode="asymmetric", nearest_mode="floor",
    )  # fmt: skip
    n.im.run_node(resize, {**n.opsets, "": 11})
    return [n.im.values[o] for o in n.node.output]


@handles("LRN")
def _lrn(n: _Node) -> list[Value]:
    """x / (bias + alpha/size · sum of x² over a window of channels)^beta."""
    x = n.value(0)
    _float_only(n, x)
    size = n.int_attr("size", 0)
    alpha, beta, bias = n.float_attr("alpha", 1e-4), n.float_attr("beta", 0.75), n.float_attr("bias", 1.0)
    if size < 1 or len(shape_of(x)) < 3:
        raise n.unsupported(f"size {size} on rank {len(shape_of(x))}")
    before, after = (size - 1) // 2, size - 1 - (size - 1) // 2
    low, high = [0] * len(shape_of(x)), [0] * len(shape_of(x))
    low[1], high[1] = before, after
    sq = n.pad(n.emit(A.MulOp(x, x)), low, high)
    channels = shape_of(x)[1]
    acc = n.slice(sq, 1, 0, channels)
    for k in range(1, size):
        acc = n.emit(A.AddOp(acc, n.slice(sq, 1, k, k + channels)))
    base = n.emit(A.AddOp(n.scalar(bias, acc), n.emit(A.MulOp(acc, n.scalar(alpha / size, acc)))))
    return [n.emit(A.DivOp(x, n.emit(A.PowOp(base, n.scalar(beta, base)))))]


@handles("DepthToSpace", "SpaceToDepth")
def _depth_space(n: _Node) -> list[Value]:
    x = n.value(0)
    b = n.int_attr("blocksize", 0)
    shape = shape_of(x)
    if len(shape) != 4 or b < 1:
        raise n.unsupported("an input of rank other than 4, or no blocksize")
    N, C, H, W = shape
    if n.op == "DepthToSpace":
        mode = n.attr("mode", "DCR")
        if C % (b * b):
            raise n.unsupported(f"{C} channels for blocksize {b}")
        c = C // (b * b)
        if mode == "DCR":
            t = n.transpose(n.reshape(x, (N, b, b, c, H, W)), (0, 3, 4, 1, 5, 2))
        elif mode == "CRD":
            t = n.transpose(n.reshape(x, (N, c, b, b, H, W)), (0, 1, 4, 2, 5, 3))
        else:
            raise n.unsupported(f"mode '{mode}'")
        return [n.reshape(t, (N, c, H * b, W * b))]
    if H % b or W % b:
        raise n.unsupported(f"spatial dims {H}x{W} for blocksize {b}")
    mode = n.attr("mode", "DCR")
    if mode not in ("DCR", "CRD"):
        raise n.unsupported(f"mode '{mode}'")
    perm = (0, 3, 5, 1, 2, 4) if mode == "DCR" else (0, 1, 3, 5, 2, 4)
    t = n.transpose(n.reshape(x, (N, C, H // b, b, W // b, b)), perm)
    return [n.reshape(t, (N, C * b * b, H // b, W // b))]


@handles("Constant")
def _constant(n: _Node) -> list[Value]:
    for key in ("value", "value_float", "value_floats", "value_int", "value_ints"):
        if n.has_attr(key):
            v = n.attr(key)
            if key == "value":
                return [_tensor_value(v)]
            dtype = np.float32 if "float" in key else np.int64
            return [np.asarray(v, dtype=dtype)]
    for key in ("sparse_value", "value_string", "value_strings"):
        if n.has_attr(key):
            raise n.error("dtype", f"a {key} constant is not supported")
    raise n.error("model", "no value")


@handles("Shape")
def _shape(n: _Node) -> list[Value]:
    shape = n.shape(0)
    n.name(0)
    start, end = n.int_attr("start", 0), n.attr("end", None)
    return [np.asarray(shape[slice(start, None if end is None else int(end))], dtype=np.int64)]


@handles("Size")
def _size(n: _Node) -> list[Value]:
    n.name(0)
    return [np.asarray(math.prod(n.shape(0)), dtype=np.int64)]


@handles("ConstantOfShape", "Range", "EyeLike")
def _needs_constants(n: _Node) -> list[Value]:
    """Reached only when an input is not known at import (else the node
    was folded): the result's shape depends on it."""
    for i in range(n.n_inputs()):
        n.const(i, f"input #{i} (it sets the result's shape)")
    raise n.unsupported("it could not be evaluated at import")


@handles("CumSum", "CumProd")
def _cumsum(n: _Node) -> list[Value]:
    x = n.value(0)
    axis_v = n.const_ints(1, "axis")
    if not axis_v:
        raise n.error("model", "axis is required")
    axis = n.axis(axis_v[0], len(shape_of(x)))
    exclusive, reverse = bool(n.int_attr("exclusive", 0)), bool(n.int_attr("reverse", 0))
    kind = "sum" if n.op == "CumSum" else "prod"
    return [n.emit(A.ScanOp(x, kind, axis, exclusive, reverse))]


@handles("Trilu")
def _trilu(n: _Node) -> list[Value]:
    x = n.value(0)
    shape = shape_of(x)
    if len(shape) < 2:
        raise n.unsupported("an input of rank < 2")
    k_v = n.const_ints(1, "k")
    k = k_v[0] if k_v else 0
    upper = n.int_attr("upper", 1)
    rows, cols = shape[-2:]
    i, j = np.indices((rows, cols))
    mask = (j - i >= k) if upper else (j - i <= k)
    m = n.emit(A.BroadcastOp(n.lit(mask, IntegerType(1)), [len(shape) - 2, len(shape) - 1], shape))
    return [n.emit(A.SelectOp(m, x, n.full(0, x)))]


@handles("OneHot")
def _one_hot(n: _Node) -> list[Value]:
    idx = n.value(0)
    depth_v = n.const(1, "depth")
    assert depth_v is not None
    depth = int(np.asarray(depth_v).reshape(-1)[0])
    values = n.value(2)
    if shape_of(values) != (2,):
        raise n.unsupported("values must hold [off, on]")
    shape = shape_of(idx)
    out_rank = len(shape) + 1
    axis = n.axis(n.int_attr("axis", -1), out_rank)
    out = [*shape[:axis], depth, *shape[axis:]]
    i64 = IntegerType(64)
    ix = n.cast(idx, i64) if is_int(elem_of(idx)) else n.cast(n.emit(A.FloorOp(idx)) if is_float(elem_of(idx)) else idx, i64)
    # A negative index counts from the end.
    ix = n.select(n.cmp("lt", ix, n.scalar(0, ix)), n.emit(A.AddOp(ix, n.scalar(depth, ix))), ix)
    ib = n.emit(A.BroadcastOp(ix, [d for d in range(out_rank) if d != axis], out))
    iota = n.emit(A.BroadcastOp(n.lit(np.arange(depth, dtype=np.int64), i64), [axis], out))
    hit = n.emit(A.CmpOp("eq", ib, iota))
    off = n.emit(A.BroadcastOp(n.reshape(n.slice(values, 0, 0, 1), ()), [], out))
    on = n.emit(A.BroadcastOp(n.reshape(n.slice(values, 0, 1, 2), ()), [], out))
    return [n.emit(A.SelectOp(hit, on, off))]


@handles("If")
def _if(n: _Node) -> list[Value]:
    """A condition known at import picks the branch, which is imported inline."""
    cond = n.const(0, "the condition")
    assert cond is not None
    branch = n.attr("then_branch" if bool(np.asarray(cond).reshape(-1)[0]) else "else_branch")
    n.ignore("then_branch", "else_branch")
    return n.im.run_subgraph(branch, [], n.opsets, n.label)


#: The most body nodes a Loop or Scan is unrolled into.
UNROLL_LIMIT = 20000


def _stacked(n: _Node, items: Sequence[Value], axis: int, what: str) -> SSAValue:
    """`items` (one shape) stacked along a new dim `axis`."""
    if not items:
        raise n.unsupported(f"{what} of no iterations has no known shape")
    vs = [v if isinstance(v, SSAValue) else n.im.literal(np.asarray(v)) for v in items]
    shape = list(shape_of(vs[0]))
    shape.insert(axis, 1)
    return n.concat([n.reshape(v, shape) for v in vs], axis) if len(vs) > 1 else n.reshape(vs[0], shape)


def _check_unroll(n: _Node, trips: int, body: onnx.GraphProto) -> None:
    if trips * max(len(body.node), 1) > UNROLL_LIMIT:
        raise n.error("op", f"unrolling {trips} trips of a {len(body.node)}-node body is past {UNROLL_LIMIT} nodes: it needs a loop op")


@handles("Loop")
def _loop(n: _Node) -> list[Value]:
    """Unrolled: the trip count and the condition must be known at import,
    each trip's condition too (the body is imported once per trip)."""
    trip = n.const(0, "the trip count M")
    cond = n.const(1, "the initial condition")
    body = n.attr("body")
    carried: list[Value] = [n.raw(i) for i in range(2, n.n_inputs())]
    trips = None if trip is None else int(np.asarray(trip).reshape(-1)[0])
    keep = True if cond is None else bool(np.asarray(cond).reshape(-1)[0])
    n_scans = len(body.output) - 1 - len(carried)
    scans: list[list[Value]] = [[] for _ in range(n_scans)]
    i = 0
    while keep and (trips is None or i < trips):
        _check_unroll(n, i + 1, body)
        outs = n.im.run_subgraph(body, [np.array(i, dtype=np.int64), np.array(keep), *carried], n.opsets, f"{n.label}#{i}")
        if isinstance(outs[0], SSAValue):
            raise n.error("constant", "the loop's condition is computed at run time: it needs control flow over tensors")
        keep = bool(np.asarray(outs[0]).reshape(-1)[0])
        carried = list(outs[1 : 1 + len(carried)])
        for k, v in enumerate(outs[1 + len(carried) :]):
            scans[k].append(v)
        i += 1
    return [*carried, *(_stacked(n, items, 0, "a scan output") for items in scans)]


@handles("Scan")
def _scan(n: _Node) -> list[Value]:
    """Unrolled along the scanned axis (opsets 9 and later)."""
    if n.opset < 9:
        raise n.unsupported("Scan before opset 9 (its batch axis and sequence_lens)")
    body = n.attr("body")
    m = n.int_attr("num_scan_inputs", 0)
    values = [n.raw(i) for i in range(n.n_inputs())]
    states, xs = values[: len(values) - m], [n.value(i) for i in range(len(values) - m, len(values))]
    in_axes = n.ints_attr("scan_input_axes", [0] * m) or []
    in_dirs = n.ints_attr("scan_input_directions", [0] * m) or []
    k = len(body.output) - len(states)
    out_axes = n.ints_attr("scan_output_axes", [0] * k) or []
    out_dirs = n.ints_attr("scan_output_directions", [0] * k) or []
    axes = [n.axis(a, len(shape_of(x))) for a, x in zip(in_axes, xs, strict=True)]
    lengths = {shape_of(x)[a] for x, a in zip(xs, axes, strict=True)}
    if len(lengths) != 1:
        raise n.unsupported(f"scan inputs of different lengths {sorted(lengths)}")
    (length,) = lengths
    _check_unroll(n, length, body)
    scans: list[list[Value]] = [[] for _ in range(k)]
    for t in range(length):
        slices = []
        for x, a, d in zip(xs, axes, in_dirs, strict=True):
            at = length - 1 - t if d else t
            piece = n.slice(x, a, at, at + 1)
            slices.append(n.reshape(piece, [s for i, s in enumerate(shape_of(piece)) if i != a]))
        outs = n.im.run_subgraph(body, [*states, *slices], n.opsets, f"{n.label}#{t}")
        states = list(outs[: len(states)])
        for j, v in enumerate(outs[len(states) :]):
            scans[j].append(v)
    stacked = []
    for items, a, d in zip(scans, out_axes, out_dirs, strict=True):
        items = list(reversed(items)) if d else items
        rank = len(shape_of(items[0]) if isinstance(items[0], SSAValue) else np.shape(items[0])) if items else 0
        stacked.append(_stacked(n, items, n.axis(a, rank + 1), "a scan output"))
    return [*states, *stacked]


# --------------------------------------------------------------------------
# xDSL's frontend interface (accy-opt model.onnx)
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class OnnxFrontend(Frontend):
    """Reads an ONNX model (`accy-opt model.onnx`, `-f onnx`) as the module
    `import_model` makes."""

    name: ClassVar[str] = "onnx"

    def parse(self, ctx: Context, input: IO[bytes], input_name: str) -> ModuleOp:
        return import_model(input.read())
