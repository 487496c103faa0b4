"""ONNX's backend interface over accy's devices: ONNX's own test runner
(`onnx.backend.test.BackendTest`) and anything else written against
`onnx.backend.base.Backend` runs models on accy.

    from accy.cli.onnx_backend import AccyBackend
    rep = AccyBackend.for_device("llvm").prepare(model)   # import + compile
    outputs = rep.run([x, y])                              # numpy in, numpy out

It sits at the face, beside `accy-run`, because it compiles and runs: the
importer (`accy/frontends/onnx.py`) only builds IR, and frontends never
import the runtime (docs/architecture.md, "Layering"). `accy/cli/` is the
face that the layering rules already name (a module directly in `accy/`
would be a layer of its own, with no rule).

How a model runs: `prepare` imports it with the shapes its graph declares
and compiles the function with `accy.compile` on the backend's device (a
name: `reference`, `llvm`, `opencl`, `opencl:N`). A model whose inputs
have symbolic dims is imported on its first `run`, with the shapes of the
arrays given, and again for each new set of shapes. An operand that must be
known at import (a Reshape's shape, a Slice's starts, reduction axes, a
Tile's repeats) but is itself a graph input is taken from the arrays of the
call: the function is specialised on the values of those inputs only (as
`jax.jit`'s static arguments), imported and compiled again when they
change. `AccyBackendRep.static_inputs` names them. An operand computed at
run time from other inputs is refused (never specialised: that would fold
the model's computation away at import). Everything else is an argument of
the compiled function, computed on the device.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import onnx
from onnx import helper
from onnx.backend.base import Backend, BackendRep

from accy.frontends.onnx import UNSIGNED, ImportedModel, NeedsConstant, held_dtype, import_onnx, load
from accy.frontends.onnx_narrow import NARROW, from_held, to_held
from accy.runtime.executable import Comparison, Executable, compile


@dataclass
class _Compiled:
    imported: ImportedModel
    executable: Executable


class AccyBackendRep(BackendRep):
    """A model prepared for one accy device: `run(inputs)` returns its outputs."""

    def __init__(self, model: onnx.ModelProto, device: str, strict: bool = False) -> None:
        self.model = model
        self.device = device
        self.strict = strict
        inits = {t.name for t in model.graph.initializer}
        #: The graph inputs a call gives, in order.
        self.input_names = [vi.name for vi in model.graph.input if vi.name not in inits]
        #: Graph inputs the function is specialised on (see the module docstring).
        self.static_inputs: set[str] = set()
        self._compiled: dict[tuple[Any, ...], _Compiled] = {}
        #: The executable of the last call, for its statistics (fallbacks, launches).
        self.last: Executable | None = None
        if all(_static_shape(vi) for vi in model.graph.input if vi.name not in inits):
            self._prepare({})

    def _key(self, feeds: Mapping[str, np.ndarray]) -> tuple[Any, ...]:
        shapes = tuple((n, a.shape, a.dtype.str) for n, a in sorted(feeds.items()))
        values = tuple((n, feeds[n].tobytes()) for n in sorted(self.static_inputs))
        return shapes, values

    def _prepare(self, feeds: Mapping[str, np.ndarray]) -> _Compiled | None:
        """The compiled function for these arrays (None for a model whose
        shapes are not known yet); imports and compiles on a new key."""
        while True:
            key = self._key(feeds)
            if key in self._compiled:
                return self._compiled[key]
            shapes = {n: a.shape for n, a in feeds.items()}
            static = {n: feeds[n] for n in self.static_inputs}
            try:
                imported = import_onnx(self.model, input_shapes=shapes, static_inputs=static)
            except NeedsConstant as e:
                new = e.inputs - self.static_inputs
                if not feeds or not new or not new <= set(feeds):
                    if not feeds and new:
                        return None  # known at the first call
                    raise
                self.static_inputs |= new
                continue
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                exe = compile(imported.module, device=self.device, strict=self.strict)
            compiled = _Compiled(imported, exe)
            self._compiled[key] = compiled
            return compiled

    def run(self, inputs: Any, **kwargs: Any) -> tuple[np.ndarray, ...]:
        """The graph's outputs for `inputs`: arrays in the order of the graph
        inputs that are not initializers, or a dict by name."""
        if isinstance(inputs, Mapping):
            given = dict(inputs)
        else:
            if isinstance(inputs, np.ndarray):
                inputs = [inputs]
            given = dict(zip(self.input_names, inputs, strict=False))
        # A sequence or optional input is not an array: the import names it (the importer refuses
        # anything but tensors), as it would at prepare time for a model of static shapes.
        feeds = {k: np.asarray(v) for k, v in given.items() if isinstance(v, np.ndarray | np.generic | int | float | bool)}
        compiled = self._prepare(feeds)
        assert compiled is not None
        imported = compiled.imported
        args = [_held(feeds[n], t) for n, t in zip(imported.inputs, imported.input_types, strict=True)]
        exe = compiled.executable
        outputs = exe(*args)
        self.last = exe
        return tuple(_unheld(o, t) for o, t in zip(outputs, imported.output_types, strict=True))


def _held(a: np.ndarray, t: int) -> np.ndarray:
    """A graph input of ONNX type `t` as the imported function takes it: an
    unsigned type in a wider signed one (accy has none), a narrow type
    (float8, float4, int4, ...) as its codes (accy.frontends.onnx_narrow)."""
    if t in NARROW:
        return to_held(a, t)
    return a.astype(held_dtype(t)) if t in UNSIGNED else a


def _unheld(o: Any, t: int) -> np.ndarray:
    """`_held` undone for a graph output of ONNX type `t`."""
    if t in NARROW:
        return from_held(np.asarray(o), t)
    return np.asarray(o).astype(helper.tensor_dtype_to_np_dtype(t)) if t in UNSIGNED else np.asarray(o)


def _static_shape(vi: onnx.ValueInfoProto) -> bool:
    """Whether the importer can take `vi` as declared (a sequence or an
    optional it refuses at once, which is known without the arrays)."""
    tt = vi.type.tensor_type
    if not vi.type.HasField("tensor_type"):
        return True
    return tt.HasField("shape") and all(d.HasField("dim_value") for d in tt.shape.dim)


class AccyBackend(Backend):
    """ONNX's `Backend` on one accy device (`device_name`). ONNX's runner
    asks for its "CPU" and "CUDA" devices; the accy device runs the CPU tests
    (`for_device` makes the backend of another device)."""

    device_name = "reference"
    strict = False

    @classmethod
    def for_device(cls, name: str, strict: bool = False) -> type[AccyBackend]:
        """A backend class whose models run on accy device `name`;
        `strict` refuses a work item that would run on the host."""
        return type(f"AccyBackend_{name.replace(':', '_')}", (cls,), {"device_name": name, "strict": strict})

    @classmethod
    def supports_device(cls, device: str) -> bool:
        return device.upper() == "CPU"

    @classmethod
    def prepare(cls, model: onnx.ModelProto | str | bytes, device: str = "CPU", **kwargs: Any) -> AccyBackendRep:
        return AccyBackendRep(load(model), cls.device_name, cls.strict)

    @classmethod
    def run_model(cls, model: onnx.ModelProto, inputs: Any, device: str = "CPU", **kwargs: Any) -> tuple[np.ndarray, ...]:
        return cls.prepare(model, device, **kwargs).run(inputs)

    @classmethod
    def run_node(
        cls,
        node: onnx.NodeProto,
        inputs: Any,
        device: str = "CPU",
        outputs_info: Sequence[tuple[Any, tuple[int, ...]]] | None = None,
        **kwargs: Any,
    ) -> tuple[np.ndarray, ...]:
        """One node on `inputs` (arrays, in the node's input order), as a
        one-node model of the opset `opset_version` (default: onnx's newest)."""
        arrays = [np.asarray(a) for a in inputs]
        names = [n for n in node.input if n]
        graph_inputs = [
            helper.make_tensor_value_info(name, helper.np_dtype_to_tensor_dtype(a.dtype), a.shape)
            for name, a in zip(names, arrays, strict=False)
        ]
        graph_outputs = [helper.make_empty_tensor_value_info(o) for o in node.output if o]
        graph = helper.make_graph([node], "node", graph_inputs, graph_outputs)
        opset = kwargs.get("opset_version", onnx.defs.onnx_opset_version())
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
        return cls.prepare(model, device).run(arrays)


def reference_outputs(model: onnx.ModelProto, feeds: Mapping[str, np.ndarray]) -> list[np.ndarray]:
    """The model's outputs as onnx's reference evaluator computes them."""
    from onnx.reference import ReferenceEvaluator

    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        return [np.asarray(o) for o in ReferenceEvaluator(model).run(None, dict(feeds))]


def compare_with_onnx_reference(
    model: onnx.ModelProto, feeds: Mapping[str, np.ndarray], outputs: Sequence[np.ndarray]
) -> list[Comparison]:
    """Each output against onnx's reference evaluator on the same inputs,
    with accy's tolerances (`Comparison`)."""
    expected = reference_outputs(model, feeds)
    return [Comparison.of(np.asarray(got), want) for got, want in zip(outputs, expected, strict=True)]


@dataclass
class OnnxProgram:
    """An ONNX model as `accy-run model.onnx` runs it: the imported module,
    the arrays its function takes, and `--check` against onnx's reference
    evaluator (not accy's interpreter: the model's meaning is ONNX's)."""

    model: onnx.ModelProto
    imported: ImportedModel

    @classmethod
    def read(cls, path: str) -> OnnxProgram:
        """The model at `path`, imported (OnnxImportError, a ValueError, when it cannot be)."""
        model = load(path)
        return cls(model, import_onnx(model))

    @property
    def module(self) -> Any:
        return self.imported.module

    def inputs(self, arrays: Sequence[np.ndarray]) -> list[np.ndarray]:
        """`arrays` as values of the graph's input types: an unsigned input's
        (held in a wider signed type) wrapped into its range, as drawn
        arrays of [-5, 5] would not be."""
        return [
            np.asarray(a).astype(helper.tensor_dtype_to_np_dtype(t)).astype(held_dtype(t)) if t in UNSIGNED else a
            for a, t in zip(arrays, self.imported.input_types, strict=True)
        ]

    def compare(self, inputs: Sequence[np.ndarray], outputs: Sequence[np.ndarray]) -> list[Comparison]:
        """Each output against onnx's reference evaluator on `inputs`."""

        def as_onnx(a: np.ndarray, t: int) -> np.ndarray:
            return np.asarray(a).astype(helper.tensor_dtype_to_np_dtype(t)) if t in UNSIGNED else np.asarray(a)

        feeds = {n: as_onnx(a, t) for n, a, t in zip(self.imported.inputs, inputs, self.imported.input_types, strict=True)}
        got = [as_onnx(o, t) for o, t in zip(outputs, self.imported.output_types, strict=True)]
        return compare_with_onnx_reference(self.model, feeds, got)
