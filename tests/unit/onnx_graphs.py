"""ONNX models built in a line, for the importer's tests (onnx's helper
functions, with the defaults those tests share)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from onnx import ModelProto, TensorProto, ValueInfoProto, helper


def model(
    nodes: Sequence[Any], inputs: Sequence[ValueInfoProto], outputs: Sequence[ValueInfoProto],
    initializers: Sequence[TensorProto] = (), opset: int = 18,
) -> ModelProto:
    """A model of one graph of `nodes`, at `opset` of the default domain."""
    graph = helper.make_graph(nodes, "g", inputs, outputs, list(initializers))
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def vi(name: str, shape: Sequence[int | str] | None, elem_type: int = TensorProto.FLOAT) -> ValueInfoProto:
    """A graph input's or output's name, shape (None: unknown) and element type."""
    return helper.make_tensor_value_info(name, elem_type, shape)
