"""The numpy reference interpreter of the accy tensor dialect: the oracle.

`run(module, fn, *arrays)` interprets `func.func @fn` (and the `func.call`s it
makes) on numpy arrays; `evaluate_op(op, args)` gives the meaning of one op
(constant folding and the runtime's host fallback use it). Every other part of
accy is tested against these two, so the code says the semantics plainly and
favours being right over being fast.

Semantics (docs/op-contract.md states them for users):
- Results have the op's result element type exactly (float32 in, float32 out):
  arithmetic runs in that type with numpy's float32 kernels; reductions use
  numpy's own summation (pairwise for sum/mean).
- `erf` and `gelu` are computed in float64 (a Taylor series below 1.5, the
  Laplace continued fraction of erfc above; within ~1e-14 relative of libm's
  erf/erfc) and rounded once to the element type. gelu uses
  0.5·x·erfc(-x/√2), which does not cancel for negative x.
- `sigmoid` is evaluated as 1/(1+e^-|x|) or e^-|x|/(1+e^-|x|) so that it never
  overflows; `rsqrt` is 1/sqrt(x).
- Integers wrap on overflow (two's complement). Integer `div` truncates toward
  zero and defines x/0 = 0 (and INT_MIN/-1 = INT_MIN). Integer `pow` with a
  negative exponent is 1/a^|b| truncated: 1 for a = 1, ±1 for a = -1, else 0.
- `max`/`min` propagate NaN (np.maximum/np.minimum); `cmp` is IEEE: "ne" is
  true when either side is NaN, every other predicate false.
- `cast`: float->int truncates toward zero and saturates (NaN -> 0, out of
  range -> the type's min/max, as LLVM's fptosi.sat); int->int wraps; i1 -> 1/0;
  to i1 means != 0 (NaN is true).
- `scan` identities (exclusive scans start with them): sum 0, prod 1, max -inf
  (the type's minimum for integers), min +inf (the type's maximum).
- `attention` with `causal` masks score (i, j) when key index j > query index
  i (top-left aligned, as PyTorch's is_causal).
- bf16 (`ml_dtypes.bfloat16`) computes in float32: every op but a cast reads
  its bf16 operands as float32 (exact) and its result is rounded to bf16
  (nearest, ties to even). A cast to bf16 goes through float32 too (from
  f64 and wide integers that rounds twice, as PyTorch's does).
"""

from __future__ import annotations

import functools
import itertools
import math
from collections import ChainMap
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

import numpy as np
from xdsl.dialects.builtin import ModuleOp, TensorType
from xdsl.dialects.func import CallOp, FuncOp, ReturnOp
from xdsl.ir import Attribute, Block, Operation, SSAValue
from xdsl.traits import ConstantLike, SymbolTable

from accy.dialects.accy import (
    ARG_KINDS,
    AbsOp,
    AddOp,
    AndOp,
    AttentionOp,
    BroadcastOp,
    CastOp,
    CeilOp,
    CmpOp,
    ConcatOp,
    ConstantOp,
    ConvOp,
    CosOp,
    DivOp,
    DotGeneralOp,
    ErfOp,
    ExpOp,
    FloorOp,
    GatherOp,
    GeluOp,
    IotaOp,
    IterateOp,
    KernelCallOp,
    LayerNormOp,
    LogOp,
    LogSoftmaxOp,
    MaxOp,
    MinOp,
    MulOp,
    NegOp,
    NotOp,
    OrOp,
    PadOp,
    PoolOp,
    PowOp,
    ReciprocalOp,
    ReduceOp,
    ReluOp,
    ReshapeOp,
    RsqrtOp,
    ScanOp,
    SelectOp,
    SigmoidOp,
    SinOp,
    SliceOp,
    SoftmaxOp,
    SqrtOp,
    SubOp,
    TanhOp,
    TransposeOp,
    XorOp,
    YieldOp,
)
from accy.dialects.types import is_bfloat16
from accy.reference.constants import dense_view, numpy_dtype

#: numpy's view of accy's bf16.

Env = ChainMap[SSAValue, np.ndarray]

# --------------------------------------------------------------------------
# Numerics numpy does not provide as accy defines them.
# --------------------------------------------------------------------------

# Below |x| = 1.5 erf's Taylor series (its 30th term is below 1e-23 there);
# above, erfc's continued fraction, which needs ~120 terms at x = 1.5 for full
# float64 accuracy (measured against math.erfc).
_SERIES_LIMIT = 1.5
_TAYLOR_TERMS = 30
_CF_TERMS = 120
_ERF_TAYLOR = tuple((-1.0) ** n / (math.factorial(n) * (2 * n + 1)) for n in range(_TAYLOR_TERMS))


def _erf_series(x: np.ndarray) -> np.ndarray:
    """erf(x) = 2/√π Σ (-1)^n x^(2n+1) / (n! (2n+1)), for |x| < 1.5 (float64)."""
    z = x * x
    acc = np.zeros_like(x)
    for c in reversed(_ERF_TAYLOR):
        acc = acc * z + c
    return (2.0 / math.sqrt(math.pi)) * x * acc


def _erfc_fraction(x: np.ndarray) -> np.ndarray:
    """erfc(x) = e^(-x²)/√π · 1/(x + (1/2)/(x + 1/(x + (3/2)/(x + ...)))), for
    x >= 1.5 (float64), evaluated backwards from a fixed depth."""
    f = x.copy()
    for k in range(_CF_TERMS, 0, -1):
        f = x + (k / 2.0) / f
    return np.exp(-x * x) / (math.sqrt(math.pi) * f)


def _erf_and_erfc(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """erf(x) and erfc(x) in float64; each is within a few ulps of libm's
    (erfc of a negative argument is computed as 2 - erfc(|x|) or 1 - erf(x),
    never as a difference that cancels)."""
    x = np.asarray(x, dtype=np.float64)
    erf, erfc = np.empty_like(x), np.empty_like(x)
    small = np.abs(x) < _SERIES_LIMIT  # NaN is not small, and stays NaN below
    erf[small] = _erf_series(x[small])
    erfc[small] = 1.0 - erf[small]
    tail = _erfc_fraction(np.abs(x[~small]))
    sign = np.sign(x[~small])
    erf[~small] = sign * (1.0 - tail)
    erfc[~small] = np.where(sign > 0, tail, 2.0 - tail)
    return erf, erfc


def erf(x: np.ndarray) -> np.ndarray:
    """The error function, computed in float64 and rounded to x's dtype.

    A Taylor series below |x| = 1.5 and Laplace's continued fraction of erfc
    above; within a few float64 ulps of libm's erf.
    """
    return _erf_and_erfc(x)[0].astype(np.asarray(x).dtype)


def gelu(x: np.ndarray) -> np.ndarray:
    """0.5·x·(1 + erf(x/√2)) = 0.5·x·erfc(-x/√2), computed in float64 (via
    erfc, which does not cancel for negative x) and rounded once."""
    x64 = np.asarray(x, dtype=np.float64)
    return (0.5 * x64 * _erf_and_erfc(-x64 / math.sqrt(2.0))[1]).astype(x.dtype)


def sigmoid(x: np.ndarray) -> np.ndarray:
    """1/(1+e^-x) without overflow: e^-|x| is at most 1."""
    e = np.exp(-np.abs(x))
    one = x.dtype.type(1)
    return np.where(x >= 0, one / (one + e), e / (one + e))


def int_div(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Integer division truncating toward zero; x/0 is defined as 0."""
    zero = b == 0
    safe = np.where(zero, 1, b).astype(b.dtype)
    q = np.floor_divide(a, safe)
    # floor and trunc differ by one where the division is inexact and the
    # signs differ.
    q = q + ((np.remainder(a, safe) != 0) & ((a < 0) != (safe < 0))).astype(q.dtype)
    return np.where(zero, 0, q).astype(a.dtype)


def int_pow(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """a ** b wrapping on overflow; a negative b gives 1/a^|b| truncated."""
    neg = b < 0
    pos = np.power(a, np.where(neg, 0, b).astype(b.dtype))
    odd = (b % 2) != 0
    inverse = np.where(a == 1, 1, np.where(a == -1, np.where(odd, -1, 1), 0))
    return np.where(neg, inverse, pos).astype(a.dtype)


def cast(x: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """Element-type conversion with accy's rules (see the module docstring)."""
    if is_bfloat16(x.dtype):
        x = x.astype(np.float32)  # exact
    if is_bfloat16(dtype) and x.dtype not in (np.float16, np.float32):
        return cast(x, np.dtype(np.float32)).astype(dtype)
    if dtype == np.bool_:
        return x != 0
    if x.dtype.kind == "f" and dtype.kind == "i":
        info = np.iinfo(dtype)
        t = np.trunc(x.astype(np.float64))
        # float(info.max) rounds up to 2^63 for int64, so `>=` catches exactly
        # the values that do not fit; float(info.min) is exact.
        hi, lo, nan = t >= float(info.max), t <= float(info.min), np.isnan(t)
        out = np.where(hi | lo | nan, 0, t).astype(dtype)
        out[hi] = info.max
        out[lo] = info.min
        return out
    return x.astype(dtype)


def scan_identity(kind: str, dtype: np.dtype) -> np.generic:
    """The value an exclusive scan starts with (and reductions of nothing give)."""
    if kind == "sum":
        return dtype.type(0)
    if kind == "prod":
        return dtype.type(1)
    if dtype.kind == "f":
        return dtype.type(-np.inf if kind == "max" else np.inf)
    info = np.iinfo(dtype)
    return dtype.type(info.min if kind == "max" else info.max)


def _row_max(x: np.ndarray, axis: int) -> np.ndarray:
    # `initial` lets an empty axis (whose softmax is empty) have a max.
    return np.max(x, axis=axis, keepdims=True, initial=-np.inf)


def softmax(x: np.ndarray, axis: int) -> np.ndarray:
    e = np.exp(x - _row_max(x, axis))
    return e / np.sum(e, axis=axis, keepdims=True)


def log_softmax(x: np.ndarray, axis: int) -> np.ndarray:
    shifted = x - _row_max(x, axis)
    return shifted - np.log(np.sum(np.exp(shifted), axis=axis, keepdims=True))


# --------------------------------------------------------------------------
# One op -> its value. Each entry takes the op and its operand arrays (already
# of the operand element types) and returns its single result.
# --------------------------------------------------------------------------

_Semantics = Callable[[Any, list[np.ndarray]], np.ndarray]
_SEMANTICS: dict[type[Operation], _Semantics] = {}


def _semantics(*classes: type[Operation]) -> Callable[[_Semantics], _Semantics]:
    def register(fn: _Semantics) -> _Semantics:
        for cls in classes:
            _SEMANTICS[cls] = fn
        return fn

    return register


_UNARY: dict[type[Operation], Callable[[np.ndarray], np.ndarray]] = {
    NegOp: np.negative,
    AbsOp: np.abs,
    ExpOp: np.exp,
    LogOp: np.log,
    SqrtOp: np.sqrt,
    RsqrtOp: lambda x: np.reciprocal(np.sqrt(x)),
    TanhOp: np.tanh,
    SigmoidOp: sigmoid,
    ReluOp: lambda x: np.maximum(x, x.dtype.type(0)),
    GeluOp: gelu,
    SinOp: np.sin,
    CosOp: np.cos,
    ErfOp: erf,
    ReciprocalOp: np.reciprocal,
    FloorOp: np.floor,
    CeilOp: np.ceil,
    NotOp: np.logical_not,
}

# (float or bool semantics, integer semantics)
_BINARY: dict[type[Operation], tuple[Callable[..., np.ndarray], Callable[..., np.ndarray]]] = {
    AddOp: (np.add, np.add),
    SubOp: (np.subtract, np.subtract),
    MulOp: (np.multiply, np.multiply),
    DivOp: (np.divide, int_div),
    MaxOp: (np.maximum, np.maximum),
    MinOp: (np.minimum, np.minimum),
    PowOp: (np.power, int_pow),
    AndOp: (np.bitwise_and, np.bitwise_and),
    OrOp: (np.bitwise_or, np.bitwise_or),
    XorOp: (np.bitwise_xor, np.bitwise_xor),
}

_CMP: dict[str, Callable[..., np.ndarray]] = {
    "eq": np.equal,
    "ne": np.not_equal,
    "lt": np.less,
    "le": np.less_equal,
    "gt": np.greater,
    "ge": np.greater_equal,
}


@_semantics(*_UNARY)
def _unary(op: Operation, args: list[np.ndarray]) -> np.ndarray:
    return _UNARY[type(op)](args[0])


@_semantics(*_BINARY)
def _binary(op: Operation, args: list[np.ndarray]) -> np.ndarray:
    a, b = args
    float_fn, int_fn = _BINARY[type(op)]
    return (int_fn if a.dtype.kind == "i" else float_fn)(a, b)


@_semantics(ConstantOp)
def _constant(op: ConstantOp, args: list[np.ndarray]) -> np.ndarray:
    # A view (a splat broadcast from its one element): the semantics read
    # their operands and never write them.
    return dense_view(op.value)


@_semantics(CmpOp)
def _cmp(op: CmpOp, args: list[np.ndarray]) -> np.ndarray:
    return _CMP[op.predicate.data](*args)


@_semantics(SelectOp)
def _select(op: SelectOp, args: list[np.ndarray]) -> np.ndarray:
    return np.where(*args)


@_semantics(CastOp)
def _cast(op: CastOp, args: list[np.ndarray]) -> np.ndarray:
    return cast(args[0], _result_dtype(op.result.type))


@_semantics(ReshapeOp)
def _reshape(op: ReshapeOp, args: list[np.ndarray]) -> np.ndarray:
    return np.reshape(args[0], _shape(op.result.type))


@_semantics(TransposeOp)
def _transpose(op: TransposeOp, args: list[np.ndarray]) -> np.ndarray:
    return np.transpose(args[0], op.permutation.get_values())


@_semantics(BroadcastOp)
def _broadcast(op: BroadcastOp, args: list[np.ndarray]) -> np.ndarray:
    (x,) = args
    dims = op.dims.get_values()
    out = _shape(op.result.type)
    # Put the operand's dims in result order, give them their result
    # positions with size-1 dims elsewhere, then let numpy stretch.
    order = sorted(range(len(dims)), key=lambda i: dims[i])
    x = np.transpose(x, order)
    placed = [1] * len(out)
    for i in order:
        placed[dims[i]] = args[0].shape[i]
    return np.broadcast_to(x.reshape(placed), out)


@_semantics(SliceOp)
def _slice(op: SliceOp, args: list[np.ndarray]) -> np.ndarray:
    bounds = zip(op.start.get_values(), op.limit.get_values(), op.stride.get_values(), strict=True)
    return args[0][tuple(slice(a, b, s) for a, b, s in bounds)]


@_semantics(ConcatOp)
def _concat(op: ConcatOp, args: list[np.ndarray]) -> np.ndarray:
    return np.concatenate(args, axis=op.axis.value.data)


def gather_positions(indices: np.ndarray, size: int) -> np.ndarray:
    """Where `accy.gather` reads along its axis of `size` elements: an index
    in [-size, 0) counts from the end, and what is still outside [0, size)
    is clamped to the nearest end (docs/op-contract.md)."""
    i = indices.astype(np.int64)
    return np.clip(np.where(i < 0, i + size, i), 0, max(size - 1, 0))


@_semantics(GatherOp)
def _gather(op: GatherOp, args: list[np.ndarray]) -> np.ndarray:
    x, indices = args
    axis = op.norm_axis()
    return np.take(x, gather_positions(indices, x.shape[axis]), axis=axis)


@_semantics(IotaOp)
def _iota(op: IotaOp, args: list[np.ndarray]) -> np.ndarray:
    shape, dim = _shape(op.result.type), op.norm_dimension()
    values = cast(np.arange(shape[dim], dtype=np.int64), _result_dtype(op.result.type))
    placed = [1] * len(shape)
    placed[dim] = shape[dim]
    return np.ascontiguousarray(np.broadcast_to(values.reshape(placed), shape))


@_semantics(PadOp)
def _pad(op: PadOp, args: list[np.ndarray]) -> np.ndarray:
    """Crop by the negative pads, then numpy.pad by the positive ones."""
    x, value = args
    low, high = op.low.get_values(), op.high.get_values()
    kept = x[tuple(slice(max(-lo, 0), n - max(-hi, 0)) for n, lo, hi in zip(x.shape, low, high, strict=True))]
    widths = [(max(lo, 0), max(hi, 0)) for lo, hi in zip(low, high, strict=True)]
    mode = op.mode.data
    if mode == "constant":
        return np.pad(kept, widths, mode="constant", constant_values=value[()])
    return np.pad(kept, widths, mode=mode)


@_semantics(DotGeneralOp)
def _dot_general(op: DotGeneralOp, args: list[np.ndarray]) -> np.ndarray:
    a, b = args
    lhs_batch, rhs_batch, lhs_contract, rhs_contract = op.dims()
    lhs_free = [d for d in range(a.ndim) if d not in (*lhs_batch, *lhs_contract)]
    rhs_free = [d for d in range(b.ndim) if d not in (*rhs_batch, *rhs_contract)]

    def size(x: np.ndarray, dims: Sequence[int]) -> int:
        return math.prod(x.shape[d] for d in dims)

    # [batch, free, contract] @ [batch, contract, free] as one batched matmul.
    lhs = np.transpose(a, [*lhs_batch, *lhs_free, *lhs_contract]).reshape(
        size(a, lhs_batch), size(a, lhs_free), size(a, lhs_contract)
    )
    rhs = np.transpose(b, [*rhs_batch, *rhs_contract, *rhs_free]).reshape(
        size(b, rhs_batch), size(b, rhs_contract), size(b, rhs_free)
    )
    return np.matmul(lhs, rhs).reshape(_shape(op.result.type))


@_semantics(ReduceOp)
def _reduce(op: ReduceOp, args: list[np.ndarray]) -> np.ndarray:
    (x,) = args
    axes = op.norm_axes() if x.ndim else ()
    kind = op.kind.data
    if kind == "sum":
        return np.sum(x, axis=axes, dtype=accumulator(x.dtype)).astype(x.dtype)
    if kind == "prod":
        return np.prod(x, axis=axes, dtype=accumulator(x.dtype)).astype(x.dtype)
    if kind == "mean":
        return np.mean(x, axis=axes)
    if kind in ARG_KINDS:
        # The reduced dims last, flattened: numpy's argmax/argmin take the
        # first extreme, and the first NaN (half floats compared in f32).
        kept = [d for d in range(x.ndim) if d not in axes]
        count = math.prod(x.shape[d] for d in axes)
        rows = np.transpose(x, [*kept, *axes]).reshape(*(x.shape[d] for d in kept), count)
        if rows.dtype == np.float16 or is_bfloat16(rows.dtype):
            rows = rows.astype(np.float32)
        where = np.argmax(rows, axis=-1) if kind == "argmax" else np.argmin(rows, axis=-1)
        return np.asarray(where).astype(_result_dtype(op.result.type))
    ufunc = np.maximum if kind == "max" else np.minimum
    return ufunc.reduce(x, axis=axes, initial=scan_identity(kind, x.dtype))


def accumulator(dtype: np.dtype) -> np.dtype:
    """The type sums and products of `dtype` accumulate in: float32 for
    float16 (rounded once at the end, as numpy's sum and matmul and torch do),
    else the type itself (integers wrap)."""
    return np.dtype(np.float32) if dtype == np.float16 or is_bfloat16(dtype) else dtype


_ACCUMULATE: dict[str, Callable[[np.ndarray, int], np.ndarray]] = {
    "sum": lambda x, axis: np.cumsum(x, axis=axis, dtype=accumulator(x.dtype)).astype(x.dtype),
    "prod": lambda x, axis: np.cumprod(x, axis=axis, dtype=accumulator(x.dtype)).astype(x.dtype),
    "max": lambda x, axis: np.maximum.accumulate(x, axis=axis),
    "min": lambda x, axis: np.minimum.accumulate(x, axis=axis),
}


@_semantics(ScanOp)
def _scan(op: ScanOp, args: list[np.ndarray]) -> np.ndarray:
    (x,) = args
    if x.ndim == 0:
        # A scalar is its own inclusive scan; the exclusive scan is the identity.
        return np.asarray(scan_identity(op.kind.data, x.dtype) if op.exclusive.value else x)
    axis = op.axis.value.data % x.ndim
    if op.reverse.value:
        x = np.flip(x, axis)
    out = _ACCUMULATE[op.kind.data](x, axis)
    if op.exclusive.value and x.shape[axis]:  # over an empty axis, nothing to shift
        first = np.full_like(np.take(out, [0], axis=axis), scan_identity(op.kind.data, x.dtype))
        out = np.concatenate([first, np.take(out, range(x.shape[axis] - 1), axis=axis)], axis=axis)
    return np.flip(out, axis) if op.reverse.value else out


@_semantics(SoftmaxOp)
def _softmax(op: SoftmaxOp, args: list[np.ndarray]) -> np.ndarray:
    return softmax(args[0], op.axis.value.data)


@_semantics(LogSoftmaxOp)
def _log_softmax(op: LogSoftmaxOp, args: list[np.ndarray]) -> np.ndarray:
    return log_softmax(args[0], op.axis.value.data)


@_semantics(LayerNormOp)
def _layer_norm(op: LayerNormOp, args: list[np.ndarray]) -> np.ndarray:
    x, gamma, beta = args
    eps = x.dtype.type(op.epsilon.value.data)
    centred = x - np.mean(x, axis=-1, keepdims=True)
    var = np.mean(centred * centred, axis=-1, keepdims=True)
    return centred / np.sqrt(var + eps) * gamma + beta


@_semantics(AttentionOp)
def _attention(op: AttentionOp, args: list[np.ndarray]) -> np.ndarray:
    q, k, v = args
    scores = np.matmul(q, np.swapaxes(k, -1, -2)) * q.dtype.type(op.scale.value.data)
    if op.causal.value:
        sq, sk = scores.shape[-2:]
        above = np.arange(sk)[None, :] > np.arange(sq)[:, None]
        scores = np.where(above, q.dtype.type(-np.inf), scores)
    return np.matmul(softmax(scores, -1), v)


def _window_taps(
    xp: np.ndarray, window: Sequence[int], strides: Sequence[int], dilations: Sequence[int], out: Sequence[int]
) -> Iterator[tuple[tuple[int, ...], np.ndarray]]:
    """Each tap of the window (row-major) with the strided view of the padded
    `xp` [..., spatial] it reads at every output position."""
    for tap in itertools.product(*(range(k) for k in window)):
        index = tuple(
            slice(t * d, t * d + (o - 1) * s + 1, s) for t, d, o, s in zip(tap, dilations, out, strides, strict=True)
        )
        yield tap, xp[(..., *index)]


def _pad_spatial(x: np.ndarray, pads_low: Sequence[int], pads_high: Sequence[int], value: Any) -> np.ndarray:
    return np.pad(x, [(0, 0), (0, 0), *zip(pads_low, pads_high, strict=True)], constant_values=value)


@_semantics(ConvOp)
def _conv(op: ConvOp, args: list[np.ndarray]) -> np.ndarray:
    x, w = args
    g = op.geometry()
    out = _shape(op.result.type)
    N, C, *_ = x.shape
    M, Cg, *kernel = w.shape
    G = op.groups.value.data
    xp = _pad_spatial(x, g["pads_low"], g["pads_high"], 0)
    xg = xp.reshape(N, G, Cg, *xp.shape[2:])
    wg = w.reshape(G, M // G, Cg, *kernel).astype(accumulator(w.dtype))
    acc = np.zeros((N, G, M // G, *out[2:]), dtype=accumulator(x.dtype))
    for tap, view in _window_taps(xg, kernel, g["strides"], g["dilations"], out[2:]):
        # [N, G, Cg, y...] by [G, Mg, Cg] -> [N, G, Mg, y...]
        acc += np.einsum("ngc...,gmc->ngm...", view.astype(acc.dtype), wg[(..., *tap)])
    return acc.reshape(out).astype(x.dtype)


@_semantics(PoolOp)
def _pool(op: PoolOp, args: list[np.ndarray]) -> np.ndarray:
    (x,) = args
    g = op.geometry()
    out = _shape(op.result.type)[2:]
    window = op.window.get_values()
    kind = op.kind.data
    if kind == "max":
        xp = _pad_spatial(x, g["pads_low"], g["pads_high"], scan_identity("max", x.dtype))
        views = [v for _, v in _window_taps(xp, window, g["strides"], g["dilations"], out)]
        return functools.reduce(np.maximum, views)
    acc_t = accumulator(x.dtype)
    xp = _pad_spatial(x.astype(acc_t), g["pads_low"], g["pads_high"], 0)
    total = functools.reduce(np.add, [v for _, v in _window_taps(xp, window, g["strides"], g["dilations"], out)])
    if kind == "sum":
        return total.astype(x.dtype)
    if op.count_include_pad.value:
        count = np.full(out, math.prod(window), dtype=acc_t)
    else:
        inside = _pad_spatial(np.ones((1, 1, *x.shape[2:]), dtype=acc_t), g["pads_low"], g["pads_high"], 0)
        count = functools.reduce(np.add, [v for _, v in _window_taps(inside, window, g["strides"], g["dilations"], out)])
    with np.errstate(invalid="ignore", divide="ignore"):
        return (total / count).astype(x.dtype)


# --------------------------------------------------------------------------
# Blocks, regions and calls.
# --------------------------------------------------------------------------


def _shape(t: Attribute) -> tuple[int, ...]:
    assert isinstance(t, TensorType)
    return tuple(t.get_shape())


def _result_dtype(t: Attribute) -> np.dtype:
    if not isinstance(t, TensorType):
        raise ValueError(f"the reference interpreter only handles tensor values, got {t}")
    return numpy_dtype(t.element_type)


def _as_value(array: Any, t: Attribute, op: Operation) -> np.ndarray:
    """`array` as a value of type `t`: its dtype exactly, its shape checked."""
    out = np.asarray(array).astype(_result_dtype(t), copy=False)
    if out.shape != _shape(t):
        raise ValueError(f"reference interpreter bug: '{op.name}' produced shape {out.shape} for {t}")
    return out


def _lookup(env: Env, value: SSAValue, user: Operation) -> np.ndarray:
    if value in env:
        return env[value]
    owner = value.owner
    if isinstance(owner, Operation) and owner.has_trait(ConstantLike) and not owner.operands:
        # A constant from an enclosing scope: its value does not depend on one.
        return evaluate_op(owner, [])[value.index]
    raise ValueError(
        f"'{user.name}' uses a value defined outside what the reference interpreter "
        "was given (evaluate the enclosing function with `run` instead)"
    )


def _run_block(block: Block, args: Sequence[np.ndarray], env: Env) -> list[np.ndarray]:
    """Runs `block` on `args`; returns the operands of its terminator."""
    scope = env.new_child(dict(zip(block.args, args, strict=True)))
    for op in block.ops:
        operands = [_lookup(scope, v, op) for v in op.operands]
        if isinstance(op, ReturnOp | YieldOp):
            return operands
        scope.update(zip(op.results, _evaluate(op, operands, scope), strict=True))
    parent = block.parent_op()
    raise ValueError(f"a block of '{parent.name if parent else '?'}' has no terminator")


def _call(func: FuncOp, args: Sequence[np.ndarray]) -> list[np.ndarray]:
    if not func.body.blocks:
        raise ValueError(f"@{func.sym_name.data} is only declared; the reference interpreter needs its body")
    return _run_block(func.body.block, args, ChainMap())


def _evaluate(op: Operation, args: list[np.ndarray], env: Env) -> list[np.ndarray]:
    """The results of `op` on `args`, inside the scope `env` (for regions)."""
    if isinstance(op, IterateOp):
        carried = args
        for _ in range(op.count.value.data):
            carried = _run_block(op.body.block, carried, env)
        return [_as_value(c, r.type, op) for c, r in zip(carried, op.res, strict=True)]
    if isinstance(op, CallOp):
        callee = SymbolTable.lookup_symbol(op, op.callee)
        if not isinstance(callee, FuncOp):
            raise ValueError(f"func.call: no function @{op.callee.string_value()} in the module")
        return [_as_value(r, t, op) for r, t in zip(_call(callee, args), op.result_types, strict=True)]
    if isinstance(op, KernelCallOp):
        return _kernel_call(op, args)
    semantics = _SEMANTICS.get(type(op))
    if semantics is None:
        raise ValueError(f"the reference interpreter has no semantics for '{op.name}'")
    if not isinstance(op, ConstantOp | CastOp):
        # bf16 computes in float32; `_as_value` rounds the result back.
        args = [a.astype(np.float32) if is_bfloat16(a.dtype) else a for a in args]
    with np.errstate(all="ignore"):  # inf/NaN and integer wrap-around are defined results here
        result = semantics(op, args)
    return [_as_value(result, op.results[0].type, op)]


def _kernel_call(op: KernelCallOp, args: list[np.ndarray]) -> list[np.ndarray]:
    """Runs the callee's kernel IR (kernel_interpreter.py) on the inputs'
    buffers and fresh, zeroed output buffers, over the call's launch."""
    from accy.reference.kernel_interpreter import run_kernel

    callee = SymbolTable.lookup_symbol(op, op.callee)
    assert callee is not None  # the op's verifier resolved it
    global_size, local_size = op.launch_sizes(callee)  # type: ignore[arg-type]
    storage = [np.ascontiguousarray(a).reshape(-1) for a in args]
    storage = [a.view(np.int8) if a.dtype == np.bool_ else a.copy() for a in storage]
    outs = []
    for r in op.outs:
        dtype = numpy_dtype(r.type.element_type)  # type: ignore[attr-defined]
        outs.append(np.zeros(math.prod(_shape(r.type)), np.int8 if dtype == np.bool_ else dtype))
    run_kernel(callee, [*storage, *outs], global_size, local_size)  # type: ignore[arg-type]
    results = []
    for buf, r in zip(outs, op.outs, strict=True):
        value = buf.reshape(_shape(r.type))
        results.append(_as_value(value != 0 if value.dtype == np.int8 and numpy_dtype(r.type.element_type) == np.bool_ else value, r.type, op))  # type: ignore[attr-defined]
    return results


def evaluate_op(
    op: Operation, args: Sequence[np.ndarray], scope: Mapping[SSAValue, np.ndarray] | None = None
) -> list[np.ndarray]:
    """The results of one accy op on operand arrays, one array per result.

    `args` are converted to the operand element types (no copy when they
    already are). `scope` holds the values of the enclosing block that the
    op's regions may read (an `accy.iterate` body reads any value defined
    before it); constants need not be in it. Raises ValueError for a wrong
    operand count, an op without reference semantics, or a region reading an outside value that is neither in `scope` nor a
    constant.
    """
    if len(args) != len(op.operands):
        raise ValueError(f"'{op.name}' takes {len(op.operands)} operand(s), got {len(args)}")
    arrays = [np.asarray(a, dtype=_result_dtype(v.type)) for a, v in zip(args, op.operands, strict=True)]
    for i, (a, v) in enumerate(zip(arrays, op.operands, strict=True)):
        if a.shape != _shape(v.type):
            raise ValueError(f"operand #{i} of '{op.name}' must have shape {_shape(v.type)}, got {a.shape}")
    return _evaluate(op, arrays, ChainMap(dict(scope or {})))


# --------------------------------------------------------------------------
# Entry point.
# --------------------------------------------------------------------------


def _describe(t: Attribute) -> str:
    if isinstance(t, TensorType):
        try:
            return f"{t} ({numpy_dtype(t.element_type)}, shape {_shape(t)})"
        except ValueError:
            pass
    return str(t)


def find_function(module: ModuleOp, fn: str) -> FuncOp:
    """`func.func @fn` of `module`; ValueError naming the functions there if none."""
    name = fn.removeprefix("@")
    funcs = [op for op in module.ops if isinstance(op, FuncOp)]
    for func in funcs:
        if func.sym_name.data == name:
            return func
    known = ", ".join(f"@{f.sym_name.data}" for f in funcs) or "none"
    raise ValueError(f"the module has no function @{name} (functions: {known})")


def check_arguments(func: FuncOp, arrays: Sequence[Any]) -> None:
    """Raises ValueError naming the first argument whose count, dtype or shape
    does not match `func`'s signature."""
    name = func.sym_name.data
    inputs = func.function_type.inputs.data
    if len(arrays) != len(inputs):
        types = ", ".join(str(t) for t in inputs) or "none"
        raise ValueError(f"@{name} takes {len(inputs)} argument(s) ({types}), got {len(arrays)}")
    for i, (a, t) in enumerate(zip(arrays, inputs, strict=True)):
        if not isinstance(t, TensorType):
            raise ValueError(f"argument #{i} of @{name} has type {t}; the reference interpreter takes only tensors")
        want = (numpy_dtype(t.element_type), _shape(t))
        if isinstance(a, np.generic):
            a = np.asarray(a)  # a numpy scalar is a 0-d array
        if not isinstance(a, np.ndarray):
            raise ValueError(
                f"argument #{i} of @{name} expects {_describe(t)}, got {type(a).__name__} (pass a numpy array)"
            )
        if (a.dtype, a.shape) != want:
            raise ValueError(f"argument #{i} of @{name} expects {_describe(t)}, got {a.dtype} array of shape {a.shape}")


def run(module: ModuleOp, fn: str = "main", *arrays: np.ndarray) -> tuple[np.ndarray, ...]:
    """Interprets `func.func @fn` of `module` on `arrays`, returning its
    results as fresh arrays (none aliases an input).

    The arguments must match the signature exactly (count, dtype, shape);
    otherwise ValueError says which one is wrong and how.
    """
    func = find_function(module, fn)
    check_arguments(func, arrays)
    results = _call(func, [np.asarray(a) for a in arrays])
    outputs = func.function_type.outputs.data
    return tuple(np.array(_as_value(r, t, func), copy=True) for r, t in zip(results, outputs, strict=True))
