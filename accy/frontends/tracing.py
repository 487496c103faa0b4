"""Tracing: a Python function of numpy-style arrays, run on tracers, becomes a
`func.func` of the accy dialect.

    from accy.frontends import tracing
    traced = tracing.trace(lambda x, y: tracing.exp(x) * 2.0 + y, [np.ones((4, 3), np.float32), np.ones(3, np.float32)])
    print(traced.module)        # func.func @main(%x: tensor<4x3xf32>, %y: tensor<3xf32>) -> tensor<4x3xf32>

Each argument becomes a `Tracer`: a value of the function being built, with
a static shape and a numpy dtype. Operators and the functions of this module
(re-exported as `accy.numpy`) append accy ops and return new tracers; the
values the function returns are the function's results. Nothing runs: what
compiles and calls the function is `accy.jit`, at the face.

Numpy's rules are followed and made explicit, since the dialect has none:

- **Broadcasting** (numpy's rules) becomes `accy.broadcast` of each operand
  to the common shape; elementwise ops take operands of one shape.
- **Dtypes**: an operation's operand and result dtypes are those of the numpy
  ufunc it stands for (`ufunc.resolve_dtypes`, so `int8 / int8` is float64,
  `bool + bool` is bool, `exp(int16)` is float32), with a `accy.cast` where
  an operand's dtype differs. Python scalars are *weak*, as in numpy 2 (NEP
  50) and JAX: `x_f32 * 2.0` is float32, `x_i8 + 1` is int8, `x_i8 + 1.5` is
  float64. A Python scalar argument of a traced function is a weak rank-0
  tracer (stored as bool, int64 or float64), and Python arithmetic between
  weak values stays weak, as it does between Python numbers.
- **Reductions** take numpy's accumulator dtypes (`sum` of int8 is int64,
  `mean` of an integer is float64); `max`/`min` of nothing raise, as numpy does.
- The dialect's i1 takes no arithmetic: `bool + bool` is `accy.or`, `bool *
  bool` is `accy.and`, `max`/`min` of bools go through i8.

The accy dtypes are f16, f32, f64, bool (i1), i8, i16, i32 and i64; unsigned
and complex dtypes are refused. Integer-array indexing (one integer array, with
basic indexing around it) and `take` are `accy.gather`s: a traced index out
of range is clamped to the nearest end (numpy raises; accy cannot look at
run-time values), a literal one raises as numpy does. Where numpy needs an
op the dialect lacks (boolean indexing, a reverse for negative slice steps,
fmod for float `%`, numpy.pad's 'symmetric' mode), the function raises
`UnsupportedError` naming the function and what is missing. Python control
flow on a traced value (`if x > 0:`, `bool(x)`, `float(x)`, iterating)
raises `TracerConversionError`. Both name the user's file and line.

Differences from numpy that the dialect defines (docs/op-contract.md):
integer division by zero is 0 (numpy: 0 with a warning), integer powers with
negative exponents are defined rather than an error, a float cast to an
integer saturates (NaN to 0) where numpy's is undefined, and floats sum in
another order.

A frontend imports only the dialects (and numpy): it builds IR and never
runs it (accy/frontends/__init__.py).
"""

from __future__ import annotations

import builtins
import inspect
import math
import operator
import os
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

# First: the ops of xDSL's dialects imported below then read their formats lazily.
import accy.dialects.lazy_formats  # noqa: F401

# isort: split
import numpy as np
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
)
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue

from accy.dialects.accy import (
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
    CosOp,
    DivOp,
    DotGeneralOp,
    ErfOp,
    ExpOp,
    FloorOp,
    GatherOp,
    GeluOp,
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
    PowOp,
    ReciprocalOp,
    ReduceOp,
    ReluOp,
    ReshapeOp,
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
)
from accy.dialects.types import is_bfloat16, tensor

Shape = tuple[int, ...]

# --------------------------------------------------------------------------
# Errors, located at the user's line
# --------------------------------------------------------------------------

# Frames in these folders are accy's or numpy's, never the user's.
_NOT_USER = (os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep, os.path.dirname(np.__file__) + os.sep)


def user_location() -> str:
    """`file:line` of the innermost frame outside accy and numpy: the line of
    the traced function (or its caller) that asked for what failed."""
    frame = sys._getframe(1)
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(_NOT_USER):
        frame = frame.f_back
    return "<unknown>" if frame is None else f"{frame.f_code.co_filename}:{frame.f_lineno}"


class TracerConversionError(TypeError):
    """Python asked for a traced value's contents (`if`, `bool()`, `float()`,
    `int()`, iterating, `np.asarray`) while the function was being traced, when
    only its shape and dtype are known."""


class UnsupportedError(NotImplementedError):
    """A numpy function, or a form of one, that the accy dialect cannot express
    (yet): the message names it and the op that is missing."""


def _located(cls: type[Exception], message: str) -> Exception:
    return cls(f"{user_location()}: {message}")


def unsupported(what: str, why: str) -> UnsupportedError:
    """The error for numpy function `what`, which needs `why`."""
    return _located(UnsupportedError, f"{what} is not supported by accy tracing: {why}")  # type: ignore[return-value]


#: numpy functions that need an op the dialect lacks: why, for the message.
MISSING: dict[str, str] = {
    "take_along_axis": "the dialect has no gather along an axis by indices of the array's rank",
    "flip": "the dialect has no reverse op (accy.slice strides are positive)",
    "sort": "the dialect has no sort op",
    "argsort": "the dialect has no sort op",
    "nonzero": "its result's shape depends on the values (shapes are static)",
    "unique": "its result's shape depends on the values (shapes are static)",
}


# --------------------------------------------------------------------------
# Element types
# --------------------------------------------------------------------------

# The frontends may not import the reference interpreter, whose
# `numpy_dtype` is the inverse of this table.
_ELEMENT_TYPES: dict[np.dtype, Attribute] = {
    np.dtype(np.float16): Float16Type(),
    np.dtype(np.float32): Float32Type(),
    np.dtype(np.float64): Float64Type(),
    np.dtype(np.bool_): IntegerType(1),
    np.dtype(np.int8): IntegerType(8),
    np.dtype(np.int16): IntegerType(16),
    np.dtype(np.int32): IntegerType(32),
    np.dtype(np.int64): IntegerType(64),
}
BOOL = np.dtype(np.bool_)
INT64 = np.dtype(np.int64)
FLOAT64 = np.dtype(np.float64)
#: The storage of a weak (Python scalar) argument, by its Python type.
WEAK_STORAGE: dict[type, np.dtype] = {bool: BOOL, int: INT64, float: FLOAT64}


def element_type(dtype: np.dtype | type | str) -> Attribute:
    """The accy element type of numpy `dtype`; TypeError for one accy lacks."""
    dt = np.dtype(dtype)
    found = BFloat16Type() if is_bfloat16(dt) else _ELEMENT_TYPES.get(dt.newbyteorder("=") if dt.byteorder not in "=|" else dt)
    if found is None:
        raise _located(TypeError, f"accy has no element type for numpy dtype {dt} (accy's: float16/32/64, bfloat16, bool, int8/16/32/64)")
    return found


# --------------------------------------------------------------------------
# The trace: the block being built
# --------------------------------------------------------------------------


class _Active(threading.local):
    def __init__(self) -> None:
        self.traces: list[Trace] = []


_active = _Active()


class Trace:
    """The function being built: a block of accy ops, its arguments first."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.block = Block()
        self.done = False
        # Rank-0 literals by (dtype, bytes): one op per distinct scalar.
        self._scalars: dict[tuple[str, bytes], SSAValue] = {}

    def emit(self, op: Operation) -> SSAValue:
        self.block.add_op(op)
        return op.results[0]

    def argument(self, shape: Shape, dtype: np.dtype, weak: bool, name: str | None) -> Tracer:
        value = self.block.insert_arg(tensor(shape, element_type(dtype)), len(self.block.args))
        if name is not None and SSAValue.is_valid_name(name):
            value.name_hint = name
        return Tracer(self, value, shape, dtype, weak)

    def literal(self, array: np.ndarray) -> Tracer:
        """`array` (an accy dtype) as an `accy.constant`, its bytes as they are."""
        dtype = array.dtype
        et = element_type(dtype)
        if dtype == BOOL:
            data = np.where(array, np.int8(-1), np.int8(0)).tobytes()  # xDSL stores i1 `true` as -1
        else:
            data = np.ascontiguousarray(array, dtype.newbyteorder("<")).tobytes()
        shape = tuple(array.shape)
        key = (dtype.str, data)
        if not shape and key in self._scalars:
            return Tracer(self, self._scalars[key], shape, dtype)
        value = self.emit(ConstantOp(DenseIntOrFPElementsAttr(tensor(shape, et), BytesAttr(data))))
        if not shape:
            self._scalars[key] = value
        return Tracer(self, value, shape, np.dtype(dtype))

    def finish(self, outputs: Sequence[Tracer]) -> ModuleOp:
        """The module of one function `@main` returning `outputs`; ops whose
        results nothing reads are dropped (every op is pure)."""
        self.block.add_op(func.ReturnOp(*[t.value for t in outputs]))
        for op in reversed(list(self.block.ops)):
            if op.results and not builtins.any(r.uses for r in op.results):
                self.block.erase_op(op)
        types = ([a.type for a in self.block.args], [t.value.type for t in outputs])
        module = ModuleOp([func.FuncOp("main", types, Region(self.block))])
        self.done = True
        module.verify()
        return module


def _current() -> Trace | None:
    return _active.traces[-1] if _active.traces else None


# --------------------------------------------------------------------------
# Tracers
# --------------------------------------------------------------------------


def _operator(ufunc: np.ufunc, reflected: bool = False, weak: bool = True) -> Callable[[Tracer, Any], Tracer]:
    """A binary operator of tracers: numpy's `ufunc`, traced (`_binary`);
    `reflected` for `__radd__` and its kind; `weak` where Python's
    arithmetic between weak operands stays weak."""
    if reflected:
        return lambda self, other: _binary(ufunc, other, self, weak)
    return lambda self, other: _binary(ufunc, self, other, weak)


def _unary_operator(ufunc: np.ufunc) -> Callable[[Tracer], Tracer]:
    return lambda self: _unary(ufunc, self, True)


class Tracer:
    """A value of the function being traced: an SSA value of a tensor of
    static `shape` and numpy `dtype`. `weak` marks a Python scalar (an
    argument or Python arithmetic on one), which takes the other operand's
    dtype as numpy 2's Python scalars do. Operators and methods follow
    numpy's; Python control flow on it is an error (TracerConversionError)."""

    __slots__ = ("dtype", "shape", "trace", "value", "weak")
    # numpy defers to __array_ufunc__ (ndarray + tracer is add(ndarray, tracer)).
    __array_priority__ = 1000

    def __init__(self, trace: Trace, value: SSAValue, shape: Shape, dtype: np.dtype, weak: bool = False) -> None:
        self.trace = trace
        self.value = value
        self.shape = shape
        self.dtype = dtype
        self.weak = weak

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    @property
    def T(self) -> Tracer:  # noqa: N802 (numpy's name)
        return transpose(self)

    def __repr__(self) -> str:
        return f"Tracer(shape={self.shape}, dtype={self.dtype}{', weak' if self.weak else ''})"

    def __len__(self) -> int:
        if not self.shape:
            raise _located(TypeError, "len() of a 0-d traced array")
        return self.shape[0]

    # Python needs the value: not known while tracing.
    def _concrete(self, what: str) -> TracerConversionError:
        return _located(  # type: ignore[return-value]
            TracerConversionError,
            f"{what} needs the value of a traced array ({self.dtype}, shape {self.shape}), which is not known while "
            f"accy.jit traces '{self.trace.name}': Python control flow cannot depend on it. Use accy.numpy.where to "
            "choose element by element, or pass the value as a static argument (static_argnums)",
        )

    def __bool__(self) -> bool:
        raise self._concrete("`if`, `while`, `and`/`or`, `not` or bool()")

    def __float__(self) -> float:
        raise self._concrete("float()")

    def __int__(self) -> int:
        raise self._concrete("int()")

    def __complex__(self) -> complex:
        raise self._concrete("complex()")

    def __index__(self) -> int:
        raise self._concrete("using it as an index or size (__index__)")

    def __iter__(self) -> Iterator[Tracer]:
        raise self._concrete("iterating over it")

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        raise self._concrete("converting it to a numpy array (np.asarray, or a numpy function accy does not trace)")

    def item(self, *args: Any) -> Any:
        raise self._concrete("item()")

    def tolist(self) -> Any:
        raise self._concrete("tolist()")

    def __setitem__(self, key: object, value: object) -> None:
        raise unsupported("item assignment (x[i] = v)", "traced arrays are immutable and the dialect has no scatter")

    # numpy's entry points: numpy functions and ufuncs on tracers trace.
    def __array_ufunc__(self, ufunc: np.ufunc, method: str, *inputs: Any, **kwargs: Any) -> Any:
        name = f"numpy.{ufunc.__name__}" + ("" if method == "__call__" else f".{method}")
        if method == "reduce" and ufunc in _UFUNC_REDUCTIONS:
            return _UFUNC_REDUCTIONS[ufunc](*inputs, **kwargs)
        if kwargs:
            raise unsupported(f"{name} with {', '.join(sorted(kwargs))}=", "only the plain call is traced")
        impl = _UFUNCS.get(ufunc)
        if method != "__call__" or impl is None:
            raise unsupported(name, "accy.numpy has no counterpart")
        return impl(*inputs)

    def __array_function__(self, fn: Callable[..., Any], types: Any, args: Any, kwargs: Any) -> Any:
        impl = NUMPY_FUNCTIONS.get(fn.__name__)
        if impl is None:
            raise unsupported(f"numpy.{fn.__name__}", MISSING.get(fn.__name__, "accy.numpy has no counterpart"))
        return impl(*args, **kwargs)

    # Python's operators. Between weak operands (Python scalars) arithmetic
    # stays weak, as it does on Python numbers; comparisons give bools.
    __add__, __radd__ = _operator(np.add), _operator(np.add, reflected=True)
    __sub__, __rsub__ = _operator(np.subtract), _operator(np.subtract, reflected=True)
    __mul__, __rmul__ = _operator(np.multiply), _operator(np.multiply, reflected=True)
    __truediv__, __rtruediv__ = _operator(np.true_divide), _operator(np.true_divide, reflected=True)
    __floordiv__, __rfloordiv__ = _operator(np.floor_divide), _operator(np.floor_divide, reflected=True)
    __mod__, __rmod__ = _operator(np.remainder), _operator(np.remainder, reflected=True)
    __pow__, __rpow__ = _operator(np.power), _operator(np.power, reflected=True)
    __and__, __rand__ = _operator(np.bitwise_and), _operator(np.bitwise_and, reflected=True)
    __or__, __ror__ = _operator(np.bitwise_or), _operator(np.bitwise_or, reflected=True)
    __xor__, __rxor__ = _operator(np.bitwise_xor), _operator(np.bitwise_xor, reflected=True)
    __eq__ = _operator(np.equal, weak=False)  # type: ignore[assignment]
    __ne__ = _operator(np.not_equal, weak=False)  # type: ignore[assignment]
    __lt__, __le__ = _operator(np.less, weak=False), _operator(np.less_equal, weak=False)
    __gt__, __ge__ = _operator(np.greater, weak=False), _operator(np.greater_equal, weak=False)
    __neg__, __pos__ = _unary_operator(np.negative), _unary_operator(np.positive)
    __abs__, __invert__ = _unary_operator(np.absolute), _unary_operator(np.invert)

    def __matmul__(self, other: Any) -> Tracer:
        return matmul(self, other)

    def __rmatmul__(self, other: Any) -> Tracer:
        return matmul(other, self)

    __hash__ = None  # type: ignore[assignment]  (unhashable, as numpy arrays are)

    def __getitem__(self, key: Any) -> Tracer:
        return _getitem(self, key)

    # numpy's methods
    def astype(self, dtype: Any) -> Tracer:
        return astype(self, dtype)

    def reshape(self, *shape: Any, order: str = "C") -> Tracer:
        return reshape(self, shape[0] if len(shape) == 1 and not isinstance(shape[0], int) else shape, order=order)

    def transpose(self, *axes: Any) -> Tracer:
        return transpose(self, axes[0] if len(axes) == 1 and not isinstance(axes[0], int) else (axes or None))

    def swapaxes(self, axis1: int, axis2: int) -> Tracer:
        return swapaxes(self, axis1, axis2)

    def squeeze(self, axis: Any = None) -> Tracer:
        return squeeze(self, axis)

    def ravel(self) -> Tracer:
        return ravel(self)

    flatten = ravel

    def sum(self, axis: Any = None, dtype: Any = None, keepdims: bool = False) -> Tracer:
        return sum(self, axis, dtype, keepdims=keepdims)

    def prod(self, axis: Any = None, dtype: Any = None, keepdims: bool = False) -> Tracer:
        return prod(self, axis, dtype, keepdims=keepdims)

    def mean(self, axis: Any = None, dtype: Any = None, keepdims: bool = False) -> Tracer:
        return mean(self, axis, dtype, keepdims=keepdims)

    def max(self, axis: Any = None, keepdims: bool = False) -> Tracer:
        return max(self, axis, keepdims=keepdims)

    def min(self, axis: Any = None, keepdims: bool = False) -> Tracer:
        return min(self, axis, keepdims=keepdims)

    def any(self, axis: Any = None, keepdims: bool = False) -> Tracer:
        return any(self, axis, keepdims=keepdims)

    def all(self, axis: Any = None, keepdims: bool = False) -> Tracer:
        return all(self, axis, keepdims=keepdims)

    def argmax(self, axis: Any = None, out: Any = None, *, keepdims: bool = False) -> Tracer:
        return argmax(self, axis, out, keepdims=keepdims)

    def argmin(self, axis: Any = None, out: Any = None, *, keepdims: bool = False) -> Tracer:
        return argmin(self, axis, out, keepdims=keepdims)

    def cumsum(self, axis: int | None = None, dtype: Any = None) -> Tracer:
        return cumsum(self, axis, dtype)

    def cumprod(self, axis: int | None = None, dtype: Any = None) -> Tracer:
        return cumprod(self, axis, dtype)

    def dot(self, other: Any) -> Tracer:
        return dot(self, other)

    def clip(self, min: Any = None, max: Any = None) -> Tracer:  # noqa: A002 (numpy's names)
        return clip(self, min, max)


# --------------------------------------------------------------------------
# Operands: tracers, Python scalars (weak) and arrays (constants)
# --------------------------------------------------------------------------

Operand = Any  # a Tracer, a Python bool/int/float, or anything np.asarray takes


def _trace_of(*values: Operand) -> Trace | None:
    """The trace of the tracers among `values` (None if there are none);
    an error for a tracer that escaped its trace (one that has ended, or another than the current one)."""
    found: Trace | None = None
    for v in values:
        if isinstance(v, Tracer):
            if v.trace.done or v.trace is not _current():
                raise _located(TracerConversionError, f"a traced value of '{v.trace.name}' is used outside its trace (it escaped, e.g. into a global)")
            found = v.trace
    return found


def _python_scalar(v: Any) -> bool:
    """A Python bool, int or float (weak); numpy's float64 subclasses float but is not."""
    return type(v) in WEAK_STORAGE


def _prepare(v: Operand) -> Operand:
    """A Tracer or Python scalar as it is; anything else as a numpy array of an accy dtype."""
    if isinstance(v, Tracer) or _python_scalar(v):
        return v
    array = np.asarray(v)
    element_type(array.dtype)
    return array


def _is_weak(v: Operand) -> bool:
    return v.weak if isinstance(v, Tracer) else _python_scalar(v)


def _typing(v: Operand) -> np.dtype | type:
    """How numpy's type resolution sees `v`: a Python scalar (or a weak
    tracer) as its Python type, weak; anything else as its dtype."""
    if isinstance(v, Tracer):
        if v.weak and v.dtype != BOOL:
            return int if v.dtype.kind == "i" else float
        return v.dtype
    if type(v) is bool:  # the lowest kind: weak or not, the same result
        return BOOL
    if _python_scalar(v):
        return type(v)
    return v.dtype


def _resolve(ufunc: np.ufunc, operands: Sequence[Operand]) -> tuple[np.dtype, ...]:
    """numpy's loop dtypes for `ufunc` on `operands`: the inputs', then the output's."""
    try:
        return ufunc.resolve_dtypes((*[_typing(v) for v in operands], None))
    except TypeError as e:
        raise _located(TypeError, f"numpy.{ufunc.__name__}: {e}") from None


def _at(trace: Trace, v: Operand, dtype: np.dtype) -> Tracer:
    """`v` as a tracer of `dtype`: a tracer cast, a scalar or array made a literal."""
    if isinstance(v, Tracer):
        return v if v.dtype == dtype else Tracer(trace, trace.emit(CastOp(v.value, element_type(dtype))), v.shape, dtype)
    try:
        with np.errstate(all="ignore"):
            array = np.asarray(v, dtype)
    except OverflowError as e:
        raise _located(OverflowError, str(e)) from None
    return trace.literal(array)


def _cast(t: Tracer, dtype: np.dtype) -> Tracer:
    return _at(t.trace, t, np.dtype(dtype))


def broadcast_shapes(*shapes: Shape) -> Shape:
    """numpy's broadcast of `shapes`; ValueError naming them."""
    try:
        return tuple(np.broadcast_shapes(*shapes))
    except ValueError:
        raise _located(ValueError, f"operands could not be broadcast together with shapes {' '.join(map(str, shapes))}") from None


def _broadcast(t: Tracer, shape: Shape) -> Tracer:
    """`t` broadcast to `shape` by numpy's rule (trailing dims aligned), as
    an explicit `accy.broadcast`; `t` itself when it has that shape."""
    if t.shape == shape:
        return t
    lead = len(shape) - t.ndim
    if lead < 0 or builtins.any(n not in (1, shape[lead + i]) for i, n in enumerate(t.shape)):
        raise _located(ValueError, f"cannot broadcast an array of shape {t.shape} to {shape}")
    value = t.trace.emit(BroadcastOp(t.value, list(range(lead, len(shape))), shape))
    return Tracer(t.trace, value, shape, t.dtype)


def _broadcast_all(tracers: Sequence[Tracer]) -> list[Tracer]:
    shape = broadcast_shapes(*[t.shape for t in tracers])
    return [_broadcast(t, shape) for t in tracers]


def _splat(trace: Trace, value: float | int | bool, shape: Shape, dtype: np.dtype) -> Tracer:
    """`value` at every element of `shape`: a rank-0 literal broadcast (one element, whatever the shape)."""
    return _broadcast(_at(trace, value, dtype), shape)


def _tracer(v: Operand, trace: Trace) -> Tracer:
    """`v` as a tracer of `trace`: a Python scalar or array becomes a literal of its numpy dtype."""
    if isinstance(v, Tracer):
        return v
    array = np.asarray(v)
    element_type(array.dtype)
    return trace.literal(array)


# --------------------------------------------------------------------------
# Elementwise ops, typed as numpy's ufuncs
# --------------------------------------------------------------------------

Builder = Callable[[Tracer, Tracer], SSAValue]


def _same(cls: type[Operation]) -> Callable[..., SSAValue]:
    """An op of operands of one type, emitted into their trace."""
    return lambda *ts: ts[0].trace.emit(cls(*[t.value for t in ts]))


def _bool_or(numeric: type[Operation], logical: type[Operation]) -> Builder:
    """`numeric` on numbers, `logical` on bools (i1 takes no arithmetic)."""
    return lambda x, y: _same(logical if x.dtype == BOOL else numeric)(x, y)


def _int_division(x: Tracer, y: Tracer, remainder: bool) -> SSAValue:
    """numpy's floor division (or remainder) of integers from accy.div, which
    truncates: q = trunc(x / y), less one where the remainder is nonzero and
    of the other sign than y; x // 0 and x % 0 are 0, as numpy's are."""
    if x.dtype.kind == "f":
        name = "numpy.remainder (%)" if remainder else "numpy.floor_divide (//)"
        raise unsupported(f"{name} of floats", "the dialect has no fmod (exact float division remainders)")
    trace, emit = x.trace, x.trace.emit
    a, b = x.value, y.value
    zero = _splat(trace, 0, x.shape, x.dtype).value
    q = emit(DivOp(a, b))
    r = emit(SubOp(a, emit(MulOp(q, b))))
    signs_differ = emit(XorOp(emit(CmpOp("lt", r, zero)), emit(CmpOp("lt", b, zero))))
    adjust = emit(AndOp(emit(AndOp(emit(CmpOp("ne", r, zero)), signs_differ)), emit(CmpOp("ne", b, zero))))
    if not remainder:
        return emit(SelectOp(adjust, emit(SubOp(q, _splat(trace, 1, x.shape, x.dtype).value)), q))
    floored = emit(SelectOp(adjust, emit(AddOp(r, b)), r))
    return emit(SelectOp(emit(CmpOp("eq", b, zero)), zero, floored))


def _compare(predicate: str) -> Builder:
    return lambda x, y: x.trace.emit(CmpOp(predicate, x.value, y.value))


_BINARY: dict[np.ufunc, Builder] = {
    np.add: _bool_or(AddOp, OrOp),
    np.subtract: _same(SubOp),
    np.multiply: _bool_or(MulOp, AndOp),
    np.true_divide: _same(DivOp),
    np.power: _same(PowOp),
    np.maximum: _bool_or(MaxOp, OrOp),
    np.minimum: _bool_or(MinOp, AndOp),
    np.floor_divide: lambda x, y: _int_division(x, y, remainder=False),
    np.remainder: lambda x, y: _int_division(x, y, remainder=True),
    np.bitwise_and: _same(AndOp),
    np.bitwise_or: _same(OrOp),
    np.bitwise_xor: _same(XorOp),
    np.logical_and: _same(AndOp),
    np.logical_or: _same(OrOp),
    np.logical_xor: _same(XorOp),
    np.equal: _compare("eq"),
    np.not_equal: _compare("ne"),
    np.less: _compare("lt"),
    np.less_equal: _compare("le"),
    np.greater: _compare("gt"),
    np.greater_equal: _compare("ge"),
}


def _binary(ufunc: np.ufunc, a: Operand, b: Operand, operator: bool = False) -> Any:
    """numpy's `ufunc(a, b)` traced: operands cast to the loop's dtypes and
    broadcast to one shape. Without a tracer among them, numpy computes it.
    From an operator (`operator=True`), weak operands give a weak result,
    as Python's arithmetic on Python numbers does."""
    trace = _trace_of(a, b)
    if trace is None:
        return ufunc(a, b)
    a, b = _prepare(a), _prepare(b)
    in_a, in_b, out = _resolve(ufunc, (a, b))
    if ufunc is np.power and out.kind in "iu" and not isinstance(b, Tracer) and np.any(np.asarray(b) < 0):
        raise _located(ValueError, "Integers to negative integer powers are not allowed.")  # numpy's, for a known exponent
    x, y = _broadcast_all([_at(trace, a, in_a), _at(trace, b, in_b)])
    value = _BINARY[ufunc](x, y)
    return Tracer(trace, value, x.shape, out, operator and _is_weak(a) and _is_weak(b))


def _identity(x: Tracer) -> SSAValue:
    return x.value


def _unary_op(cls: type[Operation], bool_identity: bool = False, int_identity: bool = False) -> Callable[[Tracer], SSAValue]:
    """`cls` on its operand; the operand itself where numpy's loop keeps the
    value (abs of a bool, floor of an integer)."""

    def build(x: Tracer) -> SSAValue:
        if (bool_identity and x.dtype == BOOL) or (int_identity and x.dtype.kind in "bi"):
            return x.value
        return x.trace.emit(cls(x.value))

    return build


def _reciprocal(x: Tracer) -> SSAValue:
    if x.dtype.kind == "f":
        return x.trace.emit(ReciprocalOp(x.value))
    if x.dtype == BOOL:
        return x.value
    return x.trace.emit(DivOp(_splat(x.trace, 1, x.shape, x.dtype).value, x.value))  # numpy's integer 1 // x (x = 0: 0)


def _invert(x: Tracer) -> SSAValue:
    if x.dtype == BOOL:
        return x.trace.emit(NotOp(x.value))
    return x.trace.emit(XorOp(x.value, _splat(x.trace, -1, x.shape, x.dtype).value))


_UNARY: dict[np.ufunc, Callable[[Tracer], SSAValue]] = {
    np.negative: _unary_op(NegOp),
    np.positive: _identity,
    np.absolute: _unary_op(AbsOp, bool_identity=True),
    np.exp: _unary_op(ExpOp),
    np.log: _unary_op(LogOp),
    np.sqrt: _unary_op(SqrtOp),
    np.tanh: _unary_op(TanhOp),
    np.sin: _unary_op(SinOp),
    np.cos: _unary_op(CosOp),
    np.floor: _unary_op(FloorOp, int_identity=True),
    np.ceil: _unary_op(CeilOp, int_identity=True),
    np.reciprocal: _reciprocal,
    np.square: lambda x: _bool_or(MulOp, AndOp)(x, x),
    np.logical_not: _unary_op(NotOp),
    np.invert: _invert,
}


def _unary(ufunc: np.ufunc, a: Operand, operator: bool = False) -> Any:
    """numpy's `ufunc(a)` traced (see `_binary`)."""
    trace = _trace_of(a)
    if trace is None:
        return ufunc(a)
    a = _prepare(a)
    in_a, out = _resolve(ufunc, (a,))
    x = _at(trace, a, in_a)
    return Tracer(trace, _UNARY[ufunc](x), x.shape, out, operator and _is_weak(a))


def _float_dtype(t: Tracer | np.dtype) -> np.dtype:
    """The float dtype numpy computes a transcendental function of `t` in (exp's loop)."""
    return np.exp.resolve_dtypes((t.dtype if isinstance(t, Tracer) else t, None))[0]


def _accy_unary(cls: type[Operation], name: str, floats: bool = True) -> Callable[[Operand], Any]:
    """An accy op with no numpy ufunc: floats as numpy's exp types them, or
    any number (relu; of a bool, the bool)."""

    def apply(x: Operand) -> Any:
        trace = _trace_of(x) or _current()
        if trace is None:
            raise _located(TypeError, f"accy.numpy.{name} traces: call it on traced values (inside accy.jit)")
        t = _tracer(_prepare(x), trace)
        if floats:
            t = _cast(t, _float_dtype(t))
        elif t.dtype == BOOL:
            return t
        return Tracer(trace, trace.emit(cls(t.value)), t.shape, t.dtype)

    apply.__name__ = apply.__qualname__ = name
    apply.__doc__ = f"Elementwise accy.{name} (docs/op-contract.md){'; integers computed in numpy’s float dtype for them' if floats else ''}."
    return apply


def _ufunc_function(ufunc: np.ufunc) -> Callable[..., Any]:
    """The accy.numpy function of `ufunc`: numpy's, traced."""
    if ufunc.nin == 1:

        def apply(x: Operand) -> Any:
            return _unary(ufunc, x)

    else:

        def apply(x: Operand, y: Operand) -> Any:  # type: ignore[misc]
            return _binary(ufunc, x, y)

    apply.__name__ = apply.__qualname__ = ufunc.__name__
    apply.__doc__ = f"numpy.{ufunc.__name__}, traced (numpy's dtypes and broadcasting)."
    return apply


add = _ufunc_function(np.add)
subtract = _ufunc_function(np.subtract)
multiply = _ufunc_function(np.multiply)
divide = true_divide = _ufunc_function(np.true_divide)
floor_divide = _ufunc_function(np.floor_divide)
remainder = mod = _ufunc_function(np.remainder)
power = _ufunc_function(np.power)
maximum = _ufunc_function(np.maximum)
minimum = _ufunc_function(np.minimum)
bitwise_and = _ufunc_function(np.bitwise_and)
bitwise_or = _ufunc_function(np.bitwise_or)
bitwise_xor = _ufunc_function(np.bitwise_xor)
logical_and = _ufunc_function(np.logical_and)
logical_or = _ufunc_function(np.logical_or)
logical_xor = _ufunc_function(np.logical_xor)
equal = _ufunc_function(np.equal)
not_equal = _ufunc_function(np.not_equal)
less = _ufunc_function(np.less)
less_equal = _ufunc_function(np.less_equal)
greater = _ufunc_function(np.greater)
greater_equal = _ufunc_function(np.greater_equal)
negative = _ufunc_function(np.negative)
positive = _ufunc_function(np.positive)
abs = absolute = _ufunc_function(np.absolute)
exp = _ufunc_function(np.exp)
log = _ufunc_function(np.log)
sqrt = _ufunc_function(np.sqrt)
tanh = _ufunc_function(np.tanh)
sin = _ufunc_function(np.sin)
cos = _ufunc_function(np.cos)
floor = _ufunc_function(np.floor)
ceil = _ufunc_function(np.ceil)
reciprocal = _ufunc_function(np.reciprocal)
square = _ufunc_function(np.square)
logical_not = _ufunc_function(np.logical_not)
invert = bitwise_not = _ufunc_function(np.invert)

sigmoid = _accy_unary(SigmoidOp, "sigmoid")
gelu = _accy_unary(GeluOp, "gelu")
erf = _accy_unary(ErfOp, "erf")
relu = _accy_unary(ReluOp, "relu", floats=False)


def _float_class(ufunc: np.ufunc, test: Callable[[Tracer], Tracer], others: bool, how: str) -> Callable[[Operand], Any]:
    """numpy's isnan / isinf / isfinite: `test` of a float tracer, `others` for integers and bools."""

    def apply(x: Operand) -> Any:
        trace = _trace_of(x)
        if trace is None:
            return ufunc(x)
        return test(x) if x.dtype.kind == "f" else _splat(trace, others, x.shape, BOOL)

    apply.__name__ = apply.__qualname__ = ufunc.__name__
    apply.__doc__ = f"numpy.{ufunc.__name__}: {how} ({others} for integers and bools)."
    return apply


isnan = _float_class(np.isnan, lambda x: not_equal(x, x), False, "x != x")
isinf = _float_class(np.isinf, lambda x: equal(absolute(x), math.inf), False, "|x| == inf")
isfinite = _float_class(np.isfinite, lambda x: less(absolute(x), math.inf), True, "|x| < inf (NaN is not)")


def where(condition: Operand, x: Operand = None, y: Operand = None) -> Any:
    """numpy.where(condition, x, y): x where condition (its truth: nonzero)
    else y, all three broadcast; x and y take numpy's common dtype."""
    if x is None or y is None:
        raise unsupported("numpy.where(condition) with one argument", MISSING["nonzero"])
    trace = _trace_of(condition, x, y)
    if trace is None:
        return np.where(condition, x, y)
    c, a, b = _prepare(condition), _prepare(x), _prepare(y)
    dtype = result_type(a, b)
    cond = _at(trace, c, BOOL)
    cond, ta, tb = _broadcast_all([cond, _at(trace, a, dtype), _at(trace, b, dtype)])
    value = trace.emit(SelectOp(cond.value, ta.value, tb.value))
    return Tracer(trace, value, ta.shape, dtype)


def clip(a: Operand, a_min: Operand = None, a_max: Operand = None) -> Any:
    """numpy.clip: minimum(maximum(a, a_min), a_max) (NaN stays NaN)."""
    if _trace_of(a, a_min, a_max) is None:
        return np.clip(a, a_min, a_max)
    out = a if a_min is None else maximum(a, a_min)
    return out if a_max is None else minimum(out, a_max)


def result_type(*values: Operand) -> np.dtype:
    """numpy.result_type of tracers, arrays, dtypes and Python scalars (weak)."""
    stand_ins: list[Any] = []
    for v in values:
        if isinstance(v, np.dtype | type):
            stand_ins.append(np.dtype(v))
            continue
        kind = _typing(_prepare(v))
        stand_ins.append(kind(0) if kind is int or kind is float else kind)  # a Python scalar is weak to result_type
    try:
        return np.result_type(*stand_ins)
    except TypeError as e:
        raise _located(TypeError, str(e)) from None


def shape(a: Operand) -> tuple[int, ...]:
    """numpy.shape: static while tracing."""
    return a.shape if isinstance(a, Tracer) else np.shape(a)


def ndim(a: Operand) -> int:
    """numpy.ndim."""
    return a.ndim if isinstance(a, Tracer) else np.ndim(a)


def size(a: Operand) -> int:
    """numpy.size (of the whole array)."""
    return a.size if isinstance(a, Tracer) else np.size(a)


def asarray(a: Any, dtype: Any = None) -> Any:
    """numpy.asarray: a tracer as it is (cast to `dtype`); a (nested) list
    or tuple holding tracers stacked along new leading axes."""
    if isinstance(a, list | tuple) and _current() is not None and _holds_tracer(a):
        out = stack([asarray(v) for v in a])
    elif isinstance(a, Tracer):
        out = a
    else:
        return np.asarray(a, dtype)
    return out if dtype is None else astype(out, dtype)


def _holds_tracer(items: list[Any] | tuple[Any, ...]) -> bool:
    return builtins.any(isinstance(v, Tracer) or (isinstance(v, list | tuple) and _holds_tracer(v)) for v in items)


def array(a: Any, dtype: Any = None) -> Any:
    """numpy.array (of a tracer: the tracer, values being immutable)."""
    return asarray(a, dtype) if isinstance(a, Tracer | list | tuple) else np.array(a, dtype)


def copy(a: Any) -> Any:
    """numpy.copy (of a tracer: the tracer)."""
    return a if isinstance(a, Tracer) else np.copy(a)


def astype(x: Operand, dtype: Any) -> Any:
    """x as `dtype` (accy.cast: floats to integers truncate and saturate)."""
    trace = _trace_of(x)
    if trace is None:
        return np.asarray(x).astype(dtype)
    dt = np.dtype(dtype)
    element_type(dt)
    t = _cast(x, dt)
    return Tracer(t.trace, t.value, t.shape, t.dtype) if t.weak else t


# --------------------------------------------------------------------------
# Reductions and scans
# --------------------------------------------------------------------------


def _axes(axis: Any, ndim: int, what: str) -> tuple[int, ...]:
    """`axis` (None, an int or a tuple) as sorted non-negative axes; numpy's AxisError / ValueError."""
    if axis is None:
        return tuple(range(ndim))
    try:
        return tuple(sorted(np.lib.array_utils.normalize_axis_tuple(axis, ndim)))
    except np.exceptions.AxisError as e:
        raise _located(np.exceptions.AxisError, f"{what}: {e}") from None
    except ValueError as e:  # a repeated axis
        raise _located(ValueError, f"{what}: {e}") from None


def _reduce(name: str, kind: str, a: Operand, axis: Any, dtype: Any, keepdims: bool) -> Any:
    """numpy's reduction `name` over `axis` as accy.reduce `kind`, in
    numpy's accumulator dtype (what `np.<name>` of one element of a's dtype gives)."""
    if _trace_of(a) is None:
        extra = {} if dtype is None else {"dtype": dtype}
        return getattr(np, name)(a, axis=axis, keepdims=keepdims, **extra)
    x: Tracer = a
    axes = _axes(axis, x.ndim, f"numpy.{name}")
    probe = np.zeros((1,), x.dtype)
    out = np.dtype(getattr(probe, name)(**({} if dtype is None else {"dtype": dtype})).dtype)
    if kind == "mean" and out.kind != "f":
        raise unsupported(f"numpy.mean with dtype {out}", "accy.reduce's mean takes floats")
    count = math.prod(x.shape[d] for d in axes)
    if kind in ("max", "min") and count == 0:
        raise _located(ValueError, f"numpy.{name}: zero-size array to reduction operation {'maximum' if kind == 'max' else 'minimum'} which has no identity")
    if out == BOOL:
        # i1 takes no arithmetic: any/all (and sums or products into bool) as max/min of 0/1 bytes.
        kind = {"sum": "max", "prod": "min"}.get(kind, kind)
        t = _cast(_cast(x, BOOL), np.dtype(np.int8))
    else:
        t = _cast(x, out)
    value = t.trace.emit(ReduceOp(t.value, kind, list(axes)))
    shape = tuple(n for d, n in enumerate(x.shape) if d not in axes)
    result = Tracer(t.trace, value, shape, t.dtype)
    if out == BOOL:
        result = _cast(result, BOOL)
    if keepdims:
        result = _reshape(result, tuple(1 if d in axes else n for d, n in enumerate(x.shape)))
    return result


def sum(a: Operand, axis: Any = None, dtype: Any = None, keepdims: bool = False) -> Any:  # noqa: A001
    """numpy.sum (integers and bools accumulate in int64, as numpy's do)."""
    return _reduce("sum", "sum", a, axis, dtype, keepdims)


def prod(a: Operand, axis: Any = None, dtype: Any = None, keepdims: bool = False) -> Any:
    """numpy.prod."""
    return _reduce("prod", "prod", a, axis, dtype, keepdims)


def mean(a: Operand, axis: Any = None, dtype: Any = None, keepdims: bool = False) -> Any:
    """numpy.mean (integers in float64; float16 accumulates in float32); of nothing, NaN."""
    return _reduce("mean", "mean", a, axis, dtype, keepdims)


def max(a: Operand, axis: Any = None, keepdims: bool = False) -> Any:  # noqa: A001
    """numpy.max (NaN propagates); over no elements, ValueError as numpy's."""
    return _reduce("max", "max", a, axis, None, keepdims)


def min(a: Operand, axis: Any = None, keepdims: bool = False) -> Any:  # noqa: A001
    """numpy.min (NaN propagates); over no elements, ValueError as numpy's."""
    return _reduce("min", "min", a, axis, None, keepdims)


amax, amin = max, min


def any(a: Operand, axis: Any = None, keepdims: bool = False) -> Any:  # noqa: A001
    """numpy.any: whether some element is nonzero."""
    if _trace_of(a) is None:
        return np.any(a, axis=axis, keepdims=keepdims)
    return _reduce("max", "max", _cast(a, BOOL), axis, None, keepdims) if a.size else _empty_logical(a, axis, keepdims, False)


def all(a: Operand, axis: Any = None, keepdims: bool = False) -> Any:  # noqa: A001
    """numpy.all: whether every element is nonzero."""
    if _trace_of(a) is None:
        return np.all(a, axis=axis, keepdims=keepdims)
    return _reduce("min", "min", _cast(a, BOOL), axis, None, keepdims) if a.size else _empty_logical(a, axis, keepdims, True)


def _empty_logical(a: Tracer, axis: Any, keepdims: bool, value: bool) -> Tracer:
    """any/all of an empty array: numpy's identities (False / True) at the result's shape."""
    axes = _axes(axis, a.ndim, "numpy.any" if not value else "numpy.all")
    shape = tuple(1 if d in axes else n for d, n in enumerate(a.shape)) if keepdims else tuple(
        n for d, n in enumerate(a.shape) if d not in axes
    )
    return _splat(a.trace, value, shape, BOOL)


def _scan(name: str, kind: str, a: Operand, axis: int | None, dtype: Any) -> Any:
    """numpy's cumsum / cumprod as accy.scan, in numpy's accumulator dtype;
    `axis=None` scans the flattened array."""
    if _trace_of(a) is None:
        return getattr(np, name)(a, axis=axis, dtype=dtype)
    x: Tracer = a
    if axis is None:
        x, axis = ravel(x), 0
    (ax,) = _axes(axis, x.ndim, f"numpy.{name}")
    out = np.dtype(getattr(np.zeros((1,), x.dtype), name)(dtype=dtype).dtype)
    if out == BOOL:
        t = _cast(_cast(x, BOOL), np.dtype(np.int8))
        kind = {"sum": "max", "prod": "min"}[kind]
    else:
        t = _cast(x, out)
    result = Tracer(t.trace, t.trace.emit(ScanOp(t.value, kind, ax)), t.shape, t.dtype)
    return _cast(result, BOOL) if out == BOOL else result


def cumsum(a: Operand, axis: int | None = None, dtype: Any = None) -> Any:
    """numpy.cumsum (an inclusive accy.scan)."""
    return _scan("cumsum", "sum", a, axis, dtype)


def cumprod(a: Operand, axis: int | None = None, dtype: Any = None) -> Any:
    """numpy.cumprod."""
    return _scan("cumprod", "prod", a, axis, dtype)


def _arg(name: str, kind: str, a: Operand, axis: Any, out: Any, keepdims: bool) -> Any:
    """numpy's argmax / argmin as accy.reduce `kind`: the first extreme (the
    first NaN, as numpy's), int64; `axis=None` over every dim, which is the
    flat index numpy gives (the op's position is row-major over the reduced dims)."""
    if _trace_of(a, out) is None:
        return getattr(np, name)(a, axis=axis, out=out, keepdims=keepdims)
    if out is not None:
        raise unsupported(f"numpy.{name} with out=", "traced arrays are immutable")
    x: Tracer = a
    axes = tuple(range(x.ndim)) if axis is None else (_axis(axis, x.ndim, f"numpy.{name}"),)
    if math.prod(x.shape[d] for d in axes) == 0:
        raise _located(ValueError, f"numpy.{name}: attempt to get {name} of an empty sequence")
    t = _cast(x, np.dtype(np.int8)) if x.dtype == BOOL else x
    value = t.trace.emit(ReduceOp(t.value, kind, list(axes), index_type=element_type(INT64)))
    result = Tracer(t.trace, value, tuple(n for d, n in enumerate(x.shape) if d not in axes), INT64)
    if keepdims:
        result = _reshape(result, tuple(1 if d in axes else n for d, n in enumerate(x.shape)))
    return result


def argmax(a: Operand, axis: Any = None, out: Any = None, *, keepdims: bool = False) -> Any:
    """numpy.argmax: the index of the first greatest element (of the first
    NaN), over the flattened array when `axis` is None."""
    return _arg("argmax", "argmax", a, axis, out, keepdims)


def argmin(a: Operand, axis: Any = None, out: Any = None, *, keepdims: bool = False) -> Any:
    """numpy.argmin: the index of the first least element (of the first NaN)."""
    return _arg("argmin", "argmin", a, axis, out, keepdims)


# --------------------------------------------------------------------------
# Shapes
# --------------------------------------------------------------------------


def _reshape(t: Tracer, shape: Shape) -> Tracer:
    if t.shape == shape:
        return t
    return Tracer(t.trace, t.trace.emit(ReshapeOp(t.value, shape)), shape, t.dtype)


def _ints(shape: Any, what: str) -> tuple[int, ...]:
    """A shape argument (an int or a sequence of ints) as a tuple; a traced one is an error."""
    items = (shape,) if isinstance(shape, int | np.integer) or isinstance(shape, Tracer) else tuple(shape)
    for n in items:
        if isinstance(n, Tracer):
            raise n._concrete(f"{what} with a traced size")
    return tuple(operator.index(n) for n in items)


def _traced(a: Operand) -> Tracer | None:
    """`a` as a tracer of the current trace; None when nothing is being traced
    and `a` is no tracer (numpy computes the function then)."""
    trace = _trace_of(a) or _current()
    return None if trace is None else _tracer(_prepare(a), trace)


def reshape(a: Operand, shape: Any, order: str = "C") -> Any:
    """numpy.reshape in row-major order; one entry may be -1."""
    t = _traced(a)
    if t is None:
        return np.reshape(a, shape, order=order)
    if order != "C":
        raise unsupported(f"numpy.reshape(order={order!r})", "accy.reshape keeps row-major order")
    dims = list(_ints(shape, "numpy.reshape"))
    known = math.prod(n for n in dims if n != -1)
    if dims.count(-1) > 1 or builtins.any(n < -1 for n in dims):
        raise _located(ValueError, f"numpy.reshape: bad shape {tuple(dims)} (at most one -1, no other negative size)")
    if -1 in dims:
        if known == 0 or t.size % known:
            raise _located(ValueError, f"cannot reshape array of size {t.size} into shape {tuple(dims)}")
        dims[dims.index(-1)] = t.size // known
    if math.prod(dims) != t.size:
        raise _located(ValueError, f"cannot reshape array of size {t.size} into shape {tuple(dims)}")
    return _reshape(t, tuple(dims))


def ravel(a: Operand) -> Any:
    """numpy.ravel: the elements in row-major order, one dim."""
    t = _traced(a)
    return np.ravel(a) if t is None else _reshape(t, (t.size,))


def transpose(a: Operand, axes: Any = None) -> Any:
    """numpy.transpose: dims reversed, or permuted by `axes` (result dim i is dim axes[i])."""
    t = _traced(a)
    if t is None:
        return np.transpose(a, axes)
    if axes is None:
        perm = list(range(t.ndim))[::-1]
    else:
        given = _ints(axes, "numpy.transpose")
        perm = [d % t.ndim for d in given if -t.ndim <= d < t.ndim]
        if len(perm) != len(given) or sorted(perm) != list(range(t.ndim)):
            raise _located(ValueError, f"numpy.transpose: axes {given} don't match an array of {t.ndim} dims")
    if perm == list(range(t.ndim)):
        return t
    shape = tuple(t.shape[d] for d in perm)
    return Tracer(t.trace, t.trace.emit(TransposeOp(t.value, perm)), shape, t.dtype)


def _axis(axis: int, ndim: int, what: str) -> int:
    (ax,) = _axes(operator.index(axis), ndim, what)
    return ax


def swapaxes(a: Operand, axis1: int, axis2: int) -> Any:
    """numpy.swapaxes."""
    t = _traced(a)
    if t is None:
        return np.swapaxes(a, axis1, axis2)
    i, j = _axis(axis1, t.ndim, "numpy.swapaxes"), _axis(axis2, t.ndim, "numpy.swapaxes")
    perm = list(range(t.ndim))
    perm[i], perm[j] = perm[j], perm[i]
    return transpose(t, perm)


def moveaxis(a: Operand, source: Any, destination: Any) -> Any:
    """numpy.moveaxis."""
    t = _traced(a)
    if t is None:
        return np.moveaxis(a, source, destination)
    src = [_axis(s, t.ndim, "numpy.moveaxis") for s in _ints(source, "numpy.moveaxis")]
    dst = [_axis(d, t.ndim, "numpy.moveaxis") for d in _ints(destination, "numpy.moveaxis")]
    if len(src) != len(dst):
        raise _located(ValueError, "numpy.moveaxis: `source` and `destination` must have the same number of elements")
    order = [d for d in range(t.ndim) if d not in src]
    for d, s in sorted(zip(dst, src, strict=True)):
        order.insert(d, s)
    return transpose(t, order)


def expand_dims(a: Operand, axis: Any) -> Any:
    """numpy.expand_dims: size-1 dims inserted at `axis` (of the result)."""
    t = _traced(a)
    if t is None:
        return np.expand_dims(a, axis)
    axes = _axes(axis, t.ndim + len(_ints(axis, "numpy.expand_dims")), "numpy.expand_dims")
    dims = iter(t.shape)
    return _reshape(t, tuple(1 if d in axes else next(dims) for d in range(t.ndim + len(axes))))


def squeeze(a: Operand, axis: Any = None) -> Any:
    """numpy.squeeze: size-1 dims removed (those of `axis`, which must be 1)."""
    t = _traced(a)
    if t is None:
        return np.squeeze(a, axis)
    axes = tuple(d for d, n in enumerate(t.shape) if n == 1) if axis is None else _axes(axis, t.ndim, "numpy.squeeze")
    if builtins.any(t.shape[d] != 1 for d in axes):
        raise _located(ValueError, "cannot select an axis to squeeze out which has size not equal to one")
    return _reshape(t, tuple(n for d, n in enumerate(t.shape) if d not in axes))


def broadcast_to(a: Operand, shape: Any) -> Any:
    """numpy.broadcast_to (an accy.broadcast)."""
    t = _traced(a)
    if t is None:
        return np.broadcast_to(a, shape)
    return _broadcast(t, _ints(shape, "numpy.broadcast_to"))


def concatenate(arrays: Sequence[Operand], axis: int | None = 0, dtype: Any = None) -> Any:
    """numpy.concatenate (axis None: of the flattened arrays), in numpy's common dtype."""
    items = list(arrays)
    trace = _trace_of(*items) or _current()
    if trace is None:
        return np.concatenate(items, axis=axis, dtype=dtype)
    if not items:
        raise _located(ValueError, "need at least one array to concatenate")
    ts = [_tracer(_prepare(v), trace) for v in items]
    out = np.dtype(dtype) if dtype is not None else np.result_type(*[t.dtype for t in ts])
    if axis is None:
        ts, axis = [_reshape(t, (t.size,)) for t in ts], 0
    if ts[0].ndim == 0:
        raise _located(ValueError, "zero-dimensional arrays cannot be concatenated")
    ax = _axis(axis, ts[0].ndim, "numpy.concatenate")
    for i, t in enumerate(ts[1:], 1):
        if t.ndim != ts[0].ndim or builtins.any(a != b for d, (a, b) in enumerate(zip(t.shape, ts[0].shape, strict=True)) if d != ax):
            raise _located(
                ValueError,
                f"numpy.concatenate: array {i} has shape {t.shape}, which does not match {ts[0].shape} off axis {ax}",
            )
    ts = [_cast(t, out) for t in ts]
    if len(ts) == 1:
        return ts[0]
    shape = list(ts[0].shape)
    shape[ax] = builtins.sum(t.shape[ax] for t in ts)
    return Tracer(trace, trace.emit(ConcatOp([t.value for t in ts], ax)), tuple(shape), out)


def stack(arrays: Sequence[Operand], axis: int = 0) -> Any:
    """numpy.stack: arrays of one shape joined along a new axis."""
    items = list(arrays)
    trace = _trace_of(*items) or _current()
    if trace is None:
        return np.stack(items, axis=axis)
    ts = [_tracer(_prepare(v), trace) for v in items]
    if not ts or builtins.any(t.shape != ts[0].shape for t in ts):
        raise _located(ValueError, "all input arrays must have the same shape")
    ax = _axis(axis, ts[0].ndim + 1, "numpy.stack")
    return concatenate([expand_dims(t, ax) for t in ts], axis=ax)


#: numpy.pad's modes and accy.pad's (docs/op-contract.md): numpy's reflect
#: mirrors about the edge element without repeating it, as accy.pad's does.
_PAD_MODES = {"constant": "constant", "edge": "edge", "reflect": "reflect", "wrap": "wrap"}


def _pad_widths(pad_width: Any, ndim: int) -> list[tuple[int, int]]:
    """numpy.pad's pad_width (an int, (before, after), or a pair per dim) as
    a (before, after) per dim; numpy's errors for negative or ill-shaped ones."""
    def items(v: Any) -> list[Any]:
        return [x for item in v for x in items(item)] if isinstance(v, list | tuple) else [v]

    for w in items(pad_width):
        if isinstance(w, Tracer):
            raise w._concrete("numpy.pad with a traced pad width")
    widths = np.asarray(pad_width)
    if widths.dtype.kind not in "iu":
        raise _located(TypeError, "numpy.pad: `pad_width` must be of integral type.")
    try:
        pairs = np.broadcast_to(widths, (ndim, 2))
    except ValueError:
        raise _located(ValueError, f"numpy.pad: pad_width {pad_width!r} does not fit an array of {ndim} dims") from None
    if (pairs < 0).any():
        raise _located(ValueError, "numpy.pad: index can't contain negative values")
    return [(int(b), int(e)) for b, e in pairs]


def pad(array: Operand, pad_width: Any, mode: str = "constant", **kwargs: Any) -> Any:
    """numpy.pad as one accy.pad: modes constant (one `constant_values`, a
    scalar or a traced rank-0 value), edge, reflect (numpy's default
    reflect_type 'even') and wrap. 'symmetric' (which repeats the edge
    element, unlike reflect), 'odd' reflections and the statistic modes do
    not trace."""
    trace = _trace_of(array, *kwargs.values())
    if trace is None:
        return np.pad(array, pad_width, mode, **kwargs)
    t = _tracer(_prepare(array), trace)
    if not isinstance(mode, str) or mode not in _PAD_MODES:
        why = ("accy.pad's reflect is numpy's 'reflect' (the edge element is not repeated); 'symmetric' repeats it"
               if mode == "symmetric" else "accy.pad's modes are constant, edge, reflect and wrap")
        raise unsupported(f"numpy.pad(mode={mode!r})", why)
    value: Any = kwargs.pop("constant_values", 0) if mode == "constant" else 0
    reflect_type = kwargs.pop("reflect_type", "even") if mode == "reflect" else "even"
    if reflect_type != "even":
        raise unsupported(f"numpy.pad(reflect_type={reflect_type!r})", "accy.pad reflects evenly (numpy's default)")
    if kwargs:
        raise _located(ValueError, f"numpy.pad: unsupported keyword arguments for mode '{mode}': {set(kwargs)}")
    widths = _pad_widths(pad_width, t.ndim)
    if mode != "constant":
        for d, (n, (b, e)) in enumerate(zip(t.shape, widths, strict=True)):
            if n == 0 and (b or e):
                raise _located(ValueError, f"numpy.pad: can't extend empty axis {d} using modes other than 'constant' or 'empty'")
    if isinstance(value, Tracer):
        if value.shape != ():
            raise unsupported("numpy.pad with traced constant_values of a shape", "accy.pad pads with one value")
        fill = _cast(value, t.dtype)
    else:
        values = np.asarray(value)
        if values.size and (values != values.reshape(-1)[0]).any():
            raise unsupported("numpy.pad with constant_values per axis", "accy.pad pads with one value")
        with np.errstate(all="ignore"):
            fill = t.trace.literal(np.asarray(values.reshape(-1)[0] if values.size else 0).astype(t.dtype))
    low, high = [b for b, _ in widths], [e for _, e in widths]
    shape = tuple(b + n + e for n, (b, e) in zip(t.shape, widths, strict=True))
    return Tracer(t.trace, t.trace.emit(PadOp(t.value, fill.value, low, high, _PAD_MODES[mode])), shape, t.dtype)


def _index_array(item: Any) -> bool:
    """Whether an index item is an array (a tracer, a numpy array, a list),
    which makes the indexing numpy's advanced indexing."""
    return isinstance(item, Tracer | np.ndarray | list | bool | np.bool_)


def _gather(t: Tracer, indices: Any, axis: int, what: str) -> Tracer:
    """`t` taken at `indices` along `axis` (numpy.take), one accy.gather.
    Literal indices must lie in [-n, n) (numpy's IndexError otherwise);
    traced ones are clamped into the dim by the op (docs/op-contract.md)."""
    n = t.shape[axis]
    if isinstance(indices, Tracer):
        if indices.dtype == BOOL:
            raise unsupported("boolean indexing", "its result's shape depends on the values (shapes are static)")
        if indices.dtype.kind != "i":
            raise _located(IndexError, f"{what}: arrays used as indices must be of integer type, not {indices.dtype}")
        idx = indices if indices.dtype in (np.dtype(np.int32), np.dtype(np.int64)) else _cast(indices, np.dtype(np.int64))
    else:
        array = np.asarray(indices)
        if array.dtype == BOOL or (array.size and array.dtype.kind not in "iu"):
            raise unsupported("boolean indexing" if array.dtype == BOOL else f"{what} with a {array.dtype} index array",
                              "only integer arrays index (a boolean mask's result has a shape that depends on the values)")
        array = array.astype(np.int64)
        bad = array[(array < -n) | (array >= n)]
        if bad.size:
            raise _located(IndexError, f"index {int(bad[0])} is out of bounds for axis {axis} with size {n}")
        idx = t.trace.literal(array)
    value = t.trace.emit(GatherOp(t.value, idx.value, axis))
    return Tracer(t.trace, value, (*t.shape[:axis], *idx.shape, *t.shape[axis + 1 :]), t.dtype)


def take(a: Operand, indices: Any, axis: int | None = None) -> Any:
    """numpy.take: one accy.gather (the array flattened first when `axis` is
    None); see `_gather` for indices out of range."""
    t = _trace_of(a, indices)
    if t is None:
        return np.take(a, indices, axis=axis)
    x = _tracer(_prepare(a), t)
    if axis is None:
        x, axis = _reshape(x, (math.prod(x.shape),)), 0
    if x.ndim == 0:
        raise _located(IndexError, "numpy.take: cannot take from a 0-d array along an axis")
    return _gather(x, indices, _axis(axis, x.ndim, "numpy.take"), "numpy.take")


def _advanced(t: Tracer, items: list[Any]) -> Tracer:
    """Indexing with one integer array among basic items: the basic indexing
    with the array's dim kept whole, then a gather along where that dim
    went. Integer items must sit next to the array (numpy moves the array's
    dims to the front otherwise), and two arrays are not supported."""
    arrays = [i for i, item in enumerate(items) if _index_array(item)]
    if len(arrays) > 1:
        raise unsupported("indexing with several index arrays", "one integer array with basic indexing around it is supported")
    (at,) = arrays
    ints = [i for i, item in enumerate(items) if not _index_array(item) and isinstance(item, int | np.integer)]
    block = sorted([at, *ints])
    if ints and block != list(range(block[0], block[-1] + 1)):
        raise unsupported("integers apart from the index array", "numpy moves the array's dims first then; keep integers next to the array")
    if builtins.sum(item is Ellipsis for item in items) == 1:
        used = builtins.sum(item is not None and item is not Ellipsis for item in items)
        e = next(i for i, item in enumerate(items) if item is Ellipsis)
        items = [*items[:e], *[slice(None)] * builtins.max(t.ndim - used, 0), *items[e + 1 :]]
        at = next(i for i, item in enumerate(items) if _index_array(item))
    array = items[at]
    basic = [*items[:at], slice(None), *items[at + 1 :]]
    # The array's dim lands after the dims the items before it keep (slices,
    # None); integers drop theirs.
    axis = builtins.sum(not isinstance(item, int | np.integer) for item in items[:at])
    return _gather(_getitem(t, tuple(basic)), array, axis, "indexing")


def _getitem(t: Tracer, key: Any) -> Tracer:
    """Basic indexing: ints, slices with positive steps, None and `...`, as
    one accy.slice and one accy.reshape; with one integer array among them,
    also one accy.gather (`_advanced`)."""
    items = list(key) if isinstance(key, tuple) else [key]
    if builtins.any(_index_array(item) for item in items):
        return _advanced(t, items)
    if builtins.sum(item is Ellipsis for item in items) > 1:
        raise _located(IndexError, "an index can only have a single ellipsis ('...')")
    used = builtins.sum(item is not None and item is not Ellipsis for item in items)
    if used > t.ndim:
        raise _located(IndexError, f"too many indices for array: array is {t.ndim}-dimensional, but {used} were indexed")
    rest = [slice(None)] * (t.ndim - used)
    at = next((i for i, item in enumerate(items) if item is Ellipsis), len(items))
    items[at : at + 1] = rest
    start, limit, stride, shape = [], [], [], []
    dim = 0
    for item in items:
        if item is None:
            shape.append(1)
            continue
        n = t.shape[dim]
        if isinstance(item, slice):
            lo, hi, step = item.indices(n)
            count = len(range(lo, hi, step))
            if step < 0 and count > 1:
                raise unsupported("slicing with a negative step", MISSING["flip"])
            if count == 0:
                lo, step = 0, 1
            elif step < 0:
                step = 1
            start.append(lo)
            limit.append(lo + (count - 1) * step + 1 if count else 0)
            stride.append(step)
            shape.append(count)
        else:
            i = operator.index(item)
            if not -n <= i < n:
                raise _located(IndexError, f"index {i} is out of bounds for axis {dim} with size {n}")
            i %= n
            start.append(i)
            limit.append(i + 1)
            stride.append(1)
        dim += 1
    out = t
    if (start, limit, stride) != ([0] * t.ndim, list(t.shape), [1] * t.ndim):
        value = t.trace.emit(SliceOp(t.value, start, limit, stride))
        out = Tracer(t.trace, value, tuple((b - a + s - 1) // s for a, b, s in zip(start, limit, stride, strict=True)), t.dtype)
    return _reshape(out, tuple(shape))


# --------------------------------------------------------------------------
# Contractions
# --------------------------------------------------------------------------


def _dot_general(a: Tracer, b: Tracer, batch: Sequence[int], a_contract: int, b_contract: int, out: np.dtype) -> Tracer:
    """accy.dot_general in numpy's result dtype; bools as the truth of an
    i32 count (numpy's boolean matmul is an or of ands)."""
    compute = np.dtype(np.int32) if out == BOOL else out
    x, y = _cast(a, compute), _cast(b, compute)
    op = DotGeneralOp(x.value, y.value, batch, batch, [a_contract], [b_contract])
    value = a.trace.emit(op)
    result = Tracer(a.trace, value, tuple(op.result.type.get_shape()), compute)  # type: ignore[attr-defined]
    if out == BOOL:
        result = not_equal(result, _splat(a.trace, 0, result.shape, compute))
    return result


def _contraction_operands(a: Operand, b: Operand) -> tuple[Tracer, Tracer, np.dtype] | None:
    trace = _trace_of(a, b)
    if trace is None:
        return None
    x, y = _tracer(_prepare(a), trace), _tracer(_prepare(b), trace)
    return x, y, _resolve(np.multiply, (x, y))[2]


def _mismatch(name: str, a: Tracer, b: Tracer, ka: int, kb: int) -> None:
    if a.shape[ka] != b.shape[kb]:
        raise _located(
            ValueError,
            f"{name}: shapes {a.shape} and {b.shape} not aligned: {a.shape[ka]} (dim {ka}) != {b.shape[kb]} (dim {kb})",
        )


def matmul(a: Operand, b: Operand) -> Any:
    """numpy.matmul (`@`): a 1-d operand is a row (a) or column (b) vector
    dropped from the result; leading dims broadcast as batch dims."""
    found = _contraction_operands(a, b)
    if found is None:
        return np.matmul(a, b)
    x, y, out = found
    if x.ndim == 0 or y.ndim == 0:
        raise _located(ValueError, "matmul: Input operand does not have enough dimensions (0-d operands: use *)")
    x2 = _reshape(x, (1, *x.shape)) if x.ndim == 1 else x
    y2 = _reshape(y, (*y.shape, 1)) if y.ndim == 1 else y
    _mismatch("matmul", x2, y2, x2.ndim - 1, y2.ndim - 2)
    if y2.ndim == 2:
        # x's leading dims are free dims of one dot: [..., M, K] x [K, N] -> [..., M, N].
        result = _dot_general(x2, y2, [], x2.ndim - 1, 0, out)
    elif x2.ndim == 2:
        # [M, K] x [..., K, N] -> [M, ..., N], then M moved after the batch dims.
        r = _dot_general(x2, y2, [], 1, y2.ndim - 2, out)
        nb = y2.ndim - 2
        result = transpose(r, [*range(1, nb + 1), 0, nb + 1])
    else:
        batch = broadcast_shapes(x2.shape[:-2], y2.shape[:-2])
        x3, y3 = _broadcast(x2, (*batch, *x2.shape[-2:])), _broadcast(y2, (*batch, *y2.shape[-2:]))
        nb = len(batch)
        result = _dot_general(x3, y3, list(range(nb)), nb + 1, nb, out)
    shape = result.shape
    if x.ndim == 1:
        shape = shape[:-2] + shape[-1:]
    if y.ndim == 1:
        shape = shape[:-1]
    return _reshape(result, shape)


def dot(a: Operand, b: Operand) -> Any:
    """numpy.dot: a product for a 0-d operand; otherwise the sum over a's last
    dim and b's second-to-last (b's only, for a 1-d b)."""
    found = _contraction_operands(a, b)
    if found is None:
        return np.dot(a, b)
    x, y, out = found
    if x.ndim == 0 or y.ndim == 0:
        return multiply(x, y)
    kb = 0 if y.ndim == 1 else y.ndim - 2
    _mismatch("dot", x, y, x.ndim - 1, kb)
    return _dot_general(x, y, [], x.ndim - 1, kb, out)


# --------------------------------------------------------------------------
# Named ops
# --------------------------------------------------------------------------


def _float_operands(name: str, *values: Operand) -> list[Tracer]:
    """`values` as tracers of one float dtype: numpy's common dtype (Python
    scalars weak), made a float as numpy's exp would."""
    trace = _trace_of(*values) or _current()
    if trace is None:
        raise _located(TypeError, f"accy.numpy.{name} traces: call it on traced values (inside accy.jit)")
    prepared = [_prepare(v) for v in values]
    dtype = _float_dtype(result_type(*prepared))
    return [_at(trace, v, dtype) for v in prepared]


def _row_op(cls: type[Operation], x: Operand, axis: int, name: str) -> Tracer:
    (t,) = _float_operands(name, x)
    if t.ndim == 0:  # over a rank-0 array: its one element is the whole row
        return _reshape(_row_op(cls, _reshape(t, (1,)), 0, name), ())
    ax = _axis(axis, t.ndim, f"accy.numpy.{name}")
    return Tracer(t.trace, t.trace.emit(cls(t.value, ax)), t.shape, t.dtype)


def softmax(x: Operand, axis: int = -1) -> Tracer:
    """exp(x - max) / sum(exp(x - max)) along `axis` (accy.softmax)."""
    return _row_op(SoftmaxOp, x, axis, "softmax")


def log_softmax(x: Operand, axis: int = -1) -> Tracer:
    """x - max - log(sum(exp(x - max))) along `axis` (accy.log_softmax)."""
    return _row_op(LogSoftmaxOp, x, axis, "log_softmax")


def layer_norm(x: Operand, gamma: Operand = None, beta: Operand = None, epsilon: float = 1e-5) -> Tracer:
    """(x - mean) / sqrt(var + epsilon) * gamma + beta over the last dim, with
    the population variance (accy.layer_norm); gamma and beta broadcast to
    the last dim (default 1 and 0)."""
    t, g, b = _float_operands("layer_norm", x, 1.0 if gamma is None else gamma, 0.0 if beta is None else beta)
    if t.ndim == 0:
        raise _located(ValueError, "accy.numpy.layer_norm needs an array of rank >= 1")
    row = t.shape[-1:]
    g, b = _broadcast(g, row), _broadcast(b, row)
    value = t.trace.emit(LayerNormOp(t.value, g.value, b.value, float(epsilon)))
    return Tracer(t.trace, value, t.shape, t.dtype)


def attention(q: Operand, k: Operand, v: Operand, scale: float | None = None, causal: bool = False) -> Tracer:
    """softmax(scale · q·kᵀ) · v over the keys (accy.attention): q [..., Sq, D],
    k [..., Sk, D], v [..., Sk, Dv] -> [..., Sq, Dv], leading dims broadcast.
    `scale` defaults to 1/sqrt(D); `causal` masks key j > query i."""
    tq, tk, tv = _float_operands("attention", q, k, v)
    if builtins.min(tq.ndim, tk.ndim, tv.ndim) < 2:
        raise _located(ValueError, "accy.numpy.attention needs q, k and v of rank >= 2")
    batch = broadcast_shapes(tq.shape[:-2], tk.shape[:-2], tv.shape[:-2])
    tq, tk, tv = (_broadcast(t, (*batch, *t.shape[-2:])) for t in (tq, tk, tv))
    if tq.shape[-1] != tk.shape[-1] or tk.shape[-2] != tv.shape[-2]:
        raise _located(ValueError, f"accy.numpy.attention: q {tq.shape}, k {tk.shape} and v {tv.shape} do not fit")
    d = tq.shape[-1]
    s = (1.0 / math.sqrt(d) if d else 1.0) if scale is None else float(scale)
    value = tq.trace.emit(AttentionOp(tq.value, tk.value, tv.value, s, bool(causal)))
    return Tracer(tq.trace, value, (*tq.shape[:-1], tv.shape[-1]), tq.dtype)


# --------------------------------------------------------------------------
# Literals
# --------------------------------------------------------------------------


def full(shape: Any, fill_value: Any, dtype: Any = None) -> Any:
    """numpy.full; in a trace, one element broadcast (never a literal of the whole shape)."""
    trace = _current()
    if trace is None:
        return np.full(shape, fill_value, dtype)
    dt = np.dtype(dtype) if dtype is not None else np.asarray(fill_value).dtype
    return _splat(trace, fill_value, _ints(shape, "numpy.full"), dt)


def zeros(shape: Any, dtype: Any = float) -> Any:
    """numpy.zeros (see `full`)."""
    return full(shape, 0, dtype)


def ones(shape: Any, dtype: Any = float) -> Any:
    """numpy.ones (see `full`)."""
    return full(shape, 1, dtype)


def full_like(a: Operand, fill_value: Any, dtype: Any = None) -> Any:
    """numpy.full_like."""
    t = _traced(a)
    if t is None:
        return np.full_like(a, fill_value, dtype)
    return _splat(t.trace, fill_value, t.shape, np.dtype(dtype) if dtype is not None else t.dtype)


def zeros_like(a: Operand, dtype: Any = None) -> Any:
    """numpy.zeros_like."""
    return full_like(a, 0, dtype)


def ones_like(a: Operand, dtype: Any = None) -> Any:
    """numpy.ones_like."""
    return full_like(a, 1, dtype)


def arange(*args: Any, dtype: Any = None) -> Any:
    """numpy.arange of static bounds: a literal."""
    for a in args:
        if isinstance(a, Tracer):
            raise a._concrete("numpy.arange with a traced bound")
    return np.arange(*args, dtype=dtype)


def _unsupported_function(name: str) -> Callable[..., Any]:
    """numpy's `name`, which does not trace: numpy's own on values that are not traced."""

    def refuse(*args: Any, **kwargs: Any) -> Any:
        if not builtins.any(isinstance(a, Tracer) for a in (*args, *kwargs.values())):
            return getattr(np, name)(*args, **kwargs)
        raise unsupported(f"numpy.{name}", MISSING[name])

    refuse.__name__ = refuse.__qualname__ = name
    refuse.__doc__ = f"numpy.{name}; on a traced value, not supported: {MISSING[name]}."
    return refuse


take_along_axis = _unsupported_function("take_along_axis")
flip = _unsupported_function("flip")
sort = _unsupported_function("sort")
argsort = _unsupported_function("argsort")

_UFUNC_REDUCTIONS: dict[np.ufunc, Callable[..., Any]] = {
    np.add: lambda a, axis=0, dtype=None, keepdims=False: sum(a, axis, dtype, keepdims),
    np.multiply: lambda a, axis=0, dtype=None, keepdims=False: prod(a, axis, dtype, keepdims),
    np.maximum: lambda a, axis=0, keepdims=False: max(a, axis, keepdims),
    np.minimum: lambda a, axis=0, keepdims=False: min(a, axis, keepdims),
}

#: The numpy namespace accy traces: name -> function (accy.numpy re-exports
#: these; numpy functions called on tracers dispatch here by name).
NUMPY_FUNCTIONS: dict[str, Callable[..., Any]] = {
    name: globals()[name]
    for name in (
        "add subtract multiply divide true_divide floor_divide remainder mod power maximum minimum bitwise_and "
        "bitwise_or bitwise_xor logical_and logical_or logical_xor equal not_equal less less_equal greater "
        "greater_equal negative positive abs absolute exp log sqrt tanh sin cos floor ceil reciprocal square "
        "logical_not invert bitwise_not isnan isinf isfinite where clip result_type shape ndim size asarray array "
        "copy astype sum prod mean max min "
        "amax amin any all cumsum cumprod reshape ravel transpose swapaxes moveaxis expand_dims squeeze "
        "broadcast_to concatenate stack matmul dot full zeros ones full_like zeros_like ones_like arange argmax "
        "argmin pad take take_along_axis flip sort argsort"
    ).split()
}
#: ufunc -> its accy.numpy function (numpy's ufuncs called on tracers dispatch here).
_UFUNCS: dict[np.ufunc, Callable[..., Any]] = {
    getattr(np, name): f for name, f in NUMPY_FUNCTIONS.items() if isinstance(getattr(np, name, None), np.ufunc)
}
#: accy's named ops and elementwise ops without a numpy function.
ACCY_FUNCTIONS: dict[str, Callable[..., Any]] = {
    f.__name__: f for f in (softmax, log_softmax, layer_norm, attention, sigmoid, gelu, erf, relu)
}


# --------------------------------------------------------------------------
# Tracing a function
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class ShapeDtype:
    """An argument given by shape and dtype alone (for `trace` and
    `accy.jit(...).lower`), as `jax.ShapeDtypeStruct`."""

    shape: Shape
    dtype: np.dtype

    def __init__(self, shape: Sequence[int], dtype: Any) -> None:
        object.__setattr__(self, "shape", tuple(int(n) for n in shape))
        object.__setattr__(self, "dtype", np.dtype(dtype))


@dataclass(frozen=True)
class TreeDef:
    """How leaves nest in tuples, lists, dicts and None (JAX's pytrees, in
    small): `kind` is "leaf", "none", "tuple", "list" or "dict"; `node` the
    tuple type (namedtuples) or the dict's sorted keys."""

    kind: str
    children: tuple[TreeDef, ...] = ()
    node: Any = None

    def unflatten(self, leaves: Iterator[Any] | Sequence[Any]) -> Any:
        it = iter(leaves)
        return self._build(it)

    def _build(self, it: Iterator[Any]) -> Any:
        if self.kind == "leaf":
            return next(it)
        if self.kind == "none":
            return None
        values = [c._build(it) for c in self.children]
        if self.kind == "dict":
            return dict(zip(self.node, values, strict=True))
        if self.kind == "list":
            return values
        return self.node(*values) if self.node is not tuple else tuple(values)


LEAF = TreeDef("leaf")


def tree_flatten(tree: Any) -> tuple[list[Any], TreeDef]:
    """The leaves of `tree` in order (dicts by sorted key) and its shape."""
    leaves: list[Any] = []
    return leaves, _flatten(tree, leaves)


def _flatten(tree: Any, leaves: list[Any]) -> TreeDef:
    if tree is None:
        return TreeDef("none")
    if isinstance(tree, tuple | list):
        children = tuple(_flatten(c, leaves) for c in tree)
        return TreeDef("list", children) if isinstance(tree, list) else TreeDef("tuple", children, type(tree))
    if isinstance(tree, dict):
        keys = tuple(sorted(tree))
        return TreeDef("dict", tuple(_flatten(tree[k], leaves) for k in keys), keys)
    leaves.append(tree)
    return LEAF


def leaf_spec(leaf: Any, where: str) -> tuple[Shape, np.dtype, bool]:
    """(shape, dtype, weak) of an argument leaf: an array (anything with a
    shape and dtype: numpy, accy.Array, ShapeDtype), a numpy scalar, or a
    Python bool/int/float (weak, rank 0)."""
    if _python_scalar(leaf):
        return (), WEAK_STORAGE[type(leaf)], True
    if isinstance(leaf, np.generic):
        leaf = np.asarray(leaf)
    shape, dtype = getattr(leaf, "shape", None), getattr(leaf, "dtype", None)
    if shape is None or dtype is None:
        raise TypeError(
            f"{where} is a {type(leaf).__name__}, not an array or a number: pass arrays (numpy or accy.Array), or "
            "make it a static argument (static_argnums)"
        )
    dt = np.dtype(dtype)
    if dt not in _ELEMENT_TYPES and not is_bfloat16(dt):
        raise TypeError(f"{where} has dtype {dt}, which accy has no element type for (accy's: float16/32/64, bfloat16, bool, int8/16/32/64)")
    return tuple(int(n) for n in shape), dt, False


@dataclass
class Traced:
    """A traced function: its module (one `func.func @main` whose arguments
    are the dynamic argument leaves in order), the leaves' specs, and how
    the results nest (`out_tree.unflatten(results)`)."""

    module: ModuleOp
    in_specs: list[tuple[Shape, np.dtype, bool]]
    out_tree: TreeDef


def dynamic_leaves(
    args: Sequence[Any], kwargs: dict[str, Any], static_argnums: frozenset[int], static_argnames: frozenset[str]
) -> tuple[list[Any], list[str], tuple[Any, ...]]:
    """The dynamic argument leaves in order (positional arguments, then
    keyword arguments by name), a name for each, and the structure key: the
    tree of every dynamic argument and the value of every static one."""
    leaves: list[Any] = []
    names: list[str] = []
    structure: list[Any] = []
    n = len(args)
    for i, a in enumerate(args):
        if i in static_argnums or i - n in static_argnums:
            structure.append(("static", i, type(a), a))
            continue
        before = len(leaves)
        structure.append(_flatten(a, leaves))
        names += [f"arg{i}"] * (len(leaves) - before)
    for name in sorted(kwargs):
        a = kwargs[name]
        if name in static_argnames:
            structure.append(("static", name, type(a), a))
            continue
        before = len(leaves)
        structure.append((name, _flatten(a, leaves)))
        names += [name] * (len(leaves) - before)
    return leaves, names, tuple(structure)


def trace(
    fn: Callable[..., Any],
    args: Sequence[Any],
    kwargs: dict[str, Any] | None = None,
    static_argnums: Sequence[int] = (),
    static_argnames: Sequence[str] = (),
) -> Traced:
    """Runs `fn(*args, **kwargs)` on tracers and returns the function it
    builds. Dynamic arguments (all but `static_argnums` / `static_argnames`,
    which `fn` gets as they are) may nest arrays in tuples, lists and dicts;
    each array leaf (numpy, accy.Array, ShapeDtype, a numpy scalar) is an
    argument of its shape and dtype, and a Python bool/int/float a weak
    rank-0 one. `fn` returns a tracer, an array or number (a literal), or
    tuples, lists and dicts of them."""
    kwargs = kwargs or {}
    name = getattr(fn, "__name__", "fn")
    leaves, names, _ = dynamic_leaves(args, kwargs, frozenset(static_argnums), frozenset(static_argnames))
    specs = [leaf_spec(leaf, f"argument {n} of {name}") for leaf, n in zip(leaves, names, strict=True)]
    params = _parameter_names(fn)
    t = Trace(name)
    tracers = iter([t.argument(s, d, w, _hint(n, params)) for (s, d, w), n in zip(specs, names, strict=True)])
    n = len(args)
    static = frozenset(static_argnums)
    call_args = [a if (i in static or i - n in static) else _replace_leaves(a, tracers) for i, a in enumerate(args)]
    call_kwargs = {k: v if k in static_argnames else _replace_leaves(v, tracers) for k, v in sorted(kwargs.items())}
    _active.traces.append(t)
    try:
        result = fn(*call_args, **call_kwargs)
        out_leaves, out_tree = tree_flatten(result)
        outputs = [_tracer(_prepare(v), t) for v in out_leaves]
    finally:
        _active.traces.pop()
    if not outputs:
        raise TypeError(f"{name} returns no arrays: a traced function must return at least one")
    for i, o in enumerate(outputs):
        if o.trace is not t:
            raise TypeError(f"result #{i} of {name} is a traced value of another function ('{o.trace.name}')")
    return Traced(t.finish(outputs), specs, out_tree)


def _replace_leaves(tree: Any, tracers: Iterator[Tracer]) -> Any:
    leaves, tree_def = tree_flatten(tree)
    return tree_def.unflatten([next(tracers) for _ in leaves])


def _parameter_names(fn: Callable[..., Any]) -> list[str]:
    try:
        return [p.name for p in inspect.signature(fn).parameters.values() if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    except (TypeError, ValueError):
        return []


def _hint(name: str, params: list[str]) -> str | None:
    """The SSA name of an argument: its parameter's name where it has one."""
    if name.startswith("arg") and name[3:].isdigit():
        i = int(name[3:])
        return params[i] if i < len(params) else None
    return name
