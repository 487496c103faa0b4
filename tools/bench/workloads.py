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


def _conv_shapes(dims: Shape) -> list[Shape]:
    """dims (N, C, H, W, M, k, groups): the input and the k x k weights."""
    n, c, h, w, m, k, g = dims
    return [(n, c, h, w), (m, c // g, k, k)]


def _conv(dims: Shape) -> str:
    """A k x k conv, stride 1, pads k // 2 (the output keeps H x W)."""
    n, c, h, w, m, k, g = dims
    x, wt = _conv_shapes(dims)
    p = k // 2
    props = (f"strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, pads_low = array<i64: {p}, {p}>, "
             f"pads_high = array<i64: {p}, {p}>, groups = {g} : i64")
    return function_text([x, wt], (n, m, h, w), [generic_op("%r", "conv", ["%a0", "%a1"], [x, wt], (n, m, h, w), props)])


def _max_pool_shapes(dims: Shape) -> list[Shape]:
    return [dims]


def _max_pool(dims: Shape) -> str:
    """A 3 x 3 max pool, stride 2, pads 1 (ResNet's stem)."""
    n, c, h, w = dims
    out = (n, c, (h - 1) // 2 + 1, (w - 1) // 2 + 1)
    props = ('kind = "max", window = array<i64: 3, 3>, strides = array<i64: 2, 2>, dilations = array<i64: 1, 1>, '
             "pads_low = array<i64: 1, 1>, pads_high = array<i64: 1, 1>")
    return function_text([dims], out, [generic_op("%r", "pool", ["%a0"], [dims], out, props)])


# --------------------------------------------------------------------------
# The same computations in numpy and torch (the way a user would write them)
# --------------------------------------------------------------------------


def _np_conv(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    """im2col (a copy of the padded input's windows) and one matmul per
    group (one einsum of a copy per tap for a depthwise conv)."""
    n, c, h, wd = x.shape
    m, cg, k, _ = w.shape
    g, p = c // cg, k // 2
    xp = np.pad(x, ((0, 0), (0, 0), (p, p), (p, p)))
    if cg == 1 and m == c:  # depthwise: a multiply-add per tap, no product to speak of
        out = np.zeros((n, c, h, wd), np.float32)
        for i in range(k):
            for j in range(k):
                out += xp[:, :, i : i + h, j : j + wd] * w[None, :, 0, i, j, None, None]
        return out
    windows = np.lib.stride_tricks.sliding_window_view(xp, (k, k), axis=(2, 3))  # [n, c, h, w, k, k]
    cols = np.ascontiguousarray(windows.reshape(n, g, cg, h, wd, k, k).transpose(1, 2, 5, 6, 0, 3, 4))
    cols = cols.reshape(g, cg * k * k, n * h * wd)
    out = np.matmul(w.reshape(g, m // g, cg * k * k), cols)  # [g, m/g, n*h*w]
    return out.reshape(m, n, h, wd).transpose(1, 0, 2, 3)


def _np_max_pool(x: np.ndarray) -> np.ndarray:
    n, c, h, w = x.shape
    xp = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)), constant_values=-np.inf)
    ho, wo = (h - 1) // 2 + 1, (w - 1) // 2 + 1
    out = xp[:, :, 0 : 2 * ho : 2, 0 : 2 * wo : 2].copy()
    for i in range(3):
        for j in range(3):
            np.maximum(out, xp[:, :, i : i + 2 * ho : 2, j : j + 2 * wo : 2], out=out)
    return out


def _torch_conv(torch: Any, x: Any, w: Any) -> Any:
    return torch.nn.functional.conv2d(x, w, padding=w.shape[-1] // 2, groups=x.shape[1] // w.shape[1])


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
    Workload(
        "conv",
        "3x3 conv, pads 1, N C H W -> M",
        {"quick": (1, 32, 28, 28, 32, 3, 1), "default": (1, 64, 56, 56, 64, 3, 1)},
        _conv_shapes,
        _conv,
        _np_conv,
        _torch_conv,
    ),
    Workload(
        "conv_depthwise",
        "3x3 depthwise conv, pads 1",
        {"quick": (1, 32, 28, 28, 32, 3, 32), "default": (1, 64, 56, 56, 64, 3, 64)},
        _conv_shapes,
        _conv,
        _np_conv,
        _torch_conv,
    ),
    Workload(
        "max_pool",
        "3x3 max pool, stride 2, pads 1",
        {"quick": (1, 32, 56, 56), "default": (1, 64, 112, 112)},
        _max_pool_shapes,
        _max_pool,
        _np_max_pool,
        lambda torch, x: torch.nn.functional.max_pool2d(x, 3, 2, 1),
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
