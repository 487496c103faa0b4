"""The benchmark's workloads: each is one accy program (generic-form `.mlir`
text) and the same computation written for numpy and for torch, at a quick,
a default and (for some) a large size.

Inputs are float32 standard-normal draws from `numpy.random.default_rng(seed)`
in signature order, so every process that asks for a workload's inputs with
the same seed gets the same arrays: accy and its baselines, timed in
different processes, compute on identical data.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

Shape = tuple[int, ...]
SIZES = ("quick", "default")
LAYER_NORM_EPSILON = 1e-5


def tensor_type(shape: Shape) -> str:
    """`tensor<AxBxf32>` (`tensor<f32>` for a scalar)."""
    return "tensor<" + "".join(f"{d}x" for d in shape) + "f32>"


def function_text(inputs: Sequence[Shape], result: Shape, body: Sequence[str]) -> str:
    """`func.func @main` over float32 tensors `%a0, %a1, ...` of `inputs`'
    shapes, whose `body` lines end by defining `%r` of shape `result`."""
    args = ", ".join(f"%a{i}: {tensor_type(s)}" for i, s in enumerate(inputs))
    lines = [f"func.func @main({args}) -> {tensor_type(result)} {{"]
    lines += [f"  {line}" for line in body]
    lines += [f"  func.return %r : {tensor_type(result)}", "}"]
    return "\n".join(lines) + "\n"


def generic_op(
    result: str, name: str, operands: Sequence[str], types: Sequence[Shape], out: Shape, props: str = ""
) -> str:
    """One op in the generic form: `%result = "accy.name"(operands) <{props}> : (types) -> out`."""
    ins = ", ".join(tensor_type(t) for t in types)
    properties = f" <{{{props}}}>" if props else ""
    return f'{result} = "accy.{name}"({", ".join(operands)}){properties} : ({ins}) -> {tensor_type(out)}'


@dataclass(frozen=True)
class Workload:
    """One benchmark program. `dims` (per size name) parameterise `shapes`
    (the input shapes), `program` (the accy function text), `numpy_fn` and
    `torch_fn` (the same computation, taking the inputs in order; `torch_fn`
    gets the torch module first). `large_only` workloads run only with
    `--large`."""

    name: str
    description: str
    dims: dict[str, Shape]
    shapes: Callable[[Shape], list[Shape]]
    program: Callable[[Shape], str]
    numpy_fn: Callable[..., np.ndarray]
    torch_fn: Callable[..., Any]
    large_only: bool = False

    def size_dims(self, size: str) -> Shape:
        """The dims at `size` ("quick" or "default")."""
        return self.dims[size]

    def inputs(self, size: str, seed: int = 0) -> list[np.ndarray]:
        rng = np.random.default_rng(seed)
        return [rng.standard_normal(s, dtype=np.float32) for s in self.shapes(self.size_dims(size))]

    def label(self, size: str) -> str:
        return "x".join(str(d) for d in self.size_dims(size))


# --------------------------------------------------------------------------
# Programs
# --------------------------------------------------------------------------


def _exp_mul_add(dims: Shape) -> str:
    s = dims
    return function_text(
        [s, s, s],
        s,
        [
            generic_op("%e", "exp", ["%a0"], [s], s),
            generic_op("%m", "mul", ["%e", "%a1"], [s, s], s),
            generic_op("%r", "add", ["%m", "%a2"], [s, s], s),
        ],
    )


def _matmul(dims: Shape) -> str:
    (n,) = dims
    s = (n, n)
    props = "lhs_batch = array<i64>, rhs_batch = array<i64>, lhs_contract = array<i64: 1>, rhs_contract = array<i64: 0>"
    return function_text([s, s], s, [generic_op("%r", "dot_general", ["%a0", "%a1"], [s, s], s, props)])


def _matmul_bias_relu(dims: Shape) -> str:
    """relu(a @ b + bias), the bias broadcast along rows."""
    (n,) = dims
    s = (n, n)
    props = "lhs_batch = array<i64>, rhs_batch = array<i64>, lhs_contract = array<i64: 1>, rhs_contract = array<i64: 0>"
    body = [
        generic_op("%d", "dot_general", ["%a0", "%a1"], [s, s], s, props),
        generic_op("%b", "broadcast", ["%a2"], [(n,)], s, "dims = array<i64: 1>"),
        generic_op("%s", "add", ["%d", "%b"], [s, s], s),
        generic_op("%r", "relu", ["%s"], [s], s),
    ]
    return function_text([s, s, (n,)], s, body)


def _row_sum(dims: Shape) -> str:
    return function_text(
        [dims], dims[:1], [generic_op("%r", "reduce", ["%a0"], [dims], dims[:1], 'kind = "sum", axes = array<i64: 1>')]
    )


def _cumsum(dims: Shape) -> str:
    return function_text(
        [dims], dims, [generic_op("%r", "scan", ["%a0"], [dims], dims, 'kind = "sum", axis = 1 : i64')]
    )


def _softmax(dims: Shape) -> str:
    return function_text([dims], dims, [generic_op("%r", "softmax", ["%a0"], [dims], dims, "axis = -1 : i64")])


def _layer_norm(dims: Shape) -> str:
    row = dims[-1:]
    props = f"epsilon = {LAYER_NORM_EPSILON:.1e} : f32"
    op = generic_op("%r", "layer_norm", ["%a0", "%a1", "%a2"], [dims, row, row], dims, props)
    return function_text([dims, row, row], dims, [op])


def _attention_shapes(dims: Shape) -> list[Shape]:
    return [dims, dims, dims]


def _attention_program(causal: bool) -> Callable[[Shape], str]:
    def program(dims: Shape) -> str:
        props = f"scale = {1.0 / math.sqrt(dims[-1])!r} : f32, causal = {'true' if causal else 'false'}"
        return function_text(
            [dims] * 3, dims, [generic_op("%r", "attention", ["%a0", "%a1", "%a2"], [dims] * 3, dims, props)]
        )

    return program


# --------------------------------------------------------------------------
# The same computations in numpy and torch (the way a user would write them)
# --------------------------------------------------------------------------


def _np_softmax(x: np.ndarray) -> np.ndarray:
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def _np_layer_norm(x: np.ndarray, g: np.ndarray, b: np.ndarray) -> np.ndarray:
    mean = x.mean(axis=-1, keepdims=True)
    var = x.var(axis=-1, keepdims=True)
    return (x - mean) / np.sqrt(var + np.float32(LAYER_NORM_EPSILON)) * g + b


def _np_attention(q: np.ndarray, k: np.ndarray, v: np.ndarray, causal: bool = False) -> np.ndarray:
    scores = (q @ np.swapaxes(k, -1, -2)) * np.float32(1.0 / math.sqrt(q.shape[-1]))
    if causal:  # top-left aligned, as torch's is_causal: query i sees keys 0..i
        sq, sk = scores.shape[-2:]
        scores = np.where(np.tri(sq, sk, dtype=bool), scores, np.float32(-np.inf))
    return _np_softmax(scores) @ v


def _torch_layer_norm(torch: Any, x: Any, g: Any, b: Any) -> Any:
    return torch.nn.functional.layer_norm(x, x.shape[-1:], g, b, LAYER_NORM_EPSILON)


def _torch_attention(torch: Any, q: Any, k: Any, v: Any, causal: bool = False) -> Any:
    return torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal)


def _square(dims: Shape) -> list[Shape]:
    (n,) = dims
    return [(n, n), (n, n)]


WORKLOADS: list[Workload] = [
    Workload(
        "exp_mul_add",
        "exp(a)*b+c",
        {"quick": (1 << 20,), "default": (1 << 22,)},
        lambda d: [d, d, d],
        _exp_mul_add,
        lambda a, b, c: np.exp(a) * b + c,
        lambda torch, a, b, c: torch.exp(a) * b + c,
    ),
    Workload(
        "matmul",
        "a @ b, square",
        {"quick": (512,), "default": (1024,)},
        _square,
        _matmul,
        lambda a, b: a @ b,
        lambda torch, a, b: a @ b,
    ),
    Workload(
        "matmul_large",
        "a @ b, square (--large)",
        {"quick": (2048,), "default": (2048,)},
        _square,
        _matmul,
        lambda a, b: a @ b,
        lambda torch, a, b: a @ b,
        large_only=True,
    ),
    Workload(
        "matmul_bias_relu",
        "relu(a @ b + bias), square",
        {"quick": (512,), "default": (1024,)},
        lambda d: [*_square(d), d],
        _matmul_bias_relu,
        lambda a, b, bias: np.maximum(a @ b + bias, np.float32(0)),
        lambda torch, a, b, bias: torch.relu(a @ b + bias),
    ),
    Workload(
        "row_sum",
        "sum along rows",
        {"quick": (1024, 1024), "default": (4096, 4096)},
        lambda d: [d],
        _row_sum,
        lambda x: x.sum(axis=1),
        lambda torch, x: x.sum(dim=1),
    ),
    Workload(
        "cumsum",
        "cumsum along rows",
        {"quick": (1024, 1024), "default": (4096, 4096)},
        lambda d: [d],
        _cumsum,
        lambda x: np.cumsum(x, axis=1),
        lambda torch, x: torch.cumsum(x, dim=1),
    ),
    Workload(
        "softmax",
        "softmax along rows",
        {"quick": (1024, 1024), "default": (4096, 4096)},
        lambda d: [d],
        _softmax,
        _np_softmax,
        lambda torch, x: torch.softmax(x, dim=-1),
    ),
    Workload(
        "layer_norm",
        "layer norm along rows",
        {"quick": (1024, 1024), "default": (4096, 4096)},
        lambda d: [d, d[-1:], d[-1:]],
        _layer_norm,
        _np_layer_norm,
        _torch_layer_norm,
    ),
    Workload(
        "attention",
        "softmax(q k^T/sqrt(D)) v, B H S D",
        {"quick": (1, 2, 256, 64), "default": (1, 8, 1024, 64)},
        _attention_shapes,
        _attention_program(causal=False),
        _np_attention,
        _torch_attention,
    ),
    Workload(
        "attention_causal",
        "attention with a causal mask, B H S D",
        {"quick": (1, 2, 256, 64), "default": (1, 8, 1024, 64)},
        _attention_shapes,
        _attention_program(causal=True),
        lambda q, k, v: _np_attention(q, k, v, causal=True),
        lambda torch, q, k, v: _torch_attention(torch, q, k, v, causal=True),
    ),
]

BY_NAME: dict[str, Workload] = {w.name: w for w in WORKLOADS}


def select(names: Sequence[str], large: bool) -> list[Workload]:
    """The workloads named in `names` (all when empty; `large_only` ones only
    with `large` unless named); ValueError naming an unknown one."""
    unknown = [n for n in names if n not in BY_NAME]
    if unknown:
        raise ValueError(f"unknown workload {', '.join(unknown)} (known: {', '.join(BY_NAME)})")
    if names:
        return [w for w in WORKLOADS if w.name in names]
    return [w for w in WORKLOADS if large or not w.large_only]
