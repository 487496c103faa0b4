"""ONNX's narrow element types, carried by the importer as codes in a type
the dialect has, and Cast to and from them written as dialect arithmetic.

The types: FLOAT8E4M3FN, FLOAT8E4M3FNUZ, FLOAT8E5M2, FLOAT8E5M2FNUZ,
FLOAT4E2M1 and FLOAT8E8M0 (floats), INT4, UINT4, INT2 and UINT2 (integers).
A float of these is held as its bit pattern, a value 0 .. 255 in `i16` (as
uint8 is held: `onnx.UNSIGNED`); an integer of these as its value in `i8`.
At the graph boundary `to_held` and `from_held` convert ml_dtypes' arrays
(one byte an element) to the held arrays and back.

Only Cast and CastLike compute with such a value (Identity passes it on):
`decode` gives a float8/float4/e8m0 code's value as f32 by an `accy.gather`
from the type's table of values, and `encode` computes the code of a float,
bit-exactly as onnx's reference evaluator (ml_dtypes' round to nearest, ties
to even; `saturate`, and e8m0's `round_mode`, as onnx's `cast_to` and
`to_float8e8m0` define them): the exponent of |x| (a log2 estimate corrected
by exact compares with a gathered table of powers of two), the quantum
2^(e - mantissa bits), the magnitude rounded half to even, and the code as
(e - emin)·2^mbits + that integer, then the type's NaN, infinity, overflow
and negative-zero rules. A NaN's sign is not read (the dialect has no
bitcast): every NaN encodes as a positive one.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
from onnx import TensorProto, helper
from xdsl.dialects.builtin import Float32Type, Float64Type, IntegerType
from xdsl.ir import SSAValue

from accy.dialects import accy as A
from accy.dialects.types import elem_of, is_bool, is_float

if TYPE_CHECKING:
    from accy.frontends.onnx import _Node


@dataclass(frozen=True)
class NarrowFloat:
    """A float type of at most 8 bits: `mbits` mantissa bits, exponents of
    normal values emin .. emax, the largest finite value `max` and its code;
    `nan` the code of NaN; `inf` that of +inf (None: none); `neg_zero`
    whether -0 has a code (the *FNUZ types give 0); `sign` the sign bit;
    `float8` whether `saturate` applies (onnx's cast_to: float8 types only;
    float4 always saturates, as ml_dtypes does)."""

    mbits: int
    emin: int
    emax: int
    max: float
    max_code: int
    nan: int
    inf: int | None
    neg_zero: bool
    sign: int
    float8: bool


#: The float types of at most 8 bits, but e8m0 (exponent only, `_encode_e8m0`).
FLOATS: dict[int, NarrowFloat] = {
    TensorProto.FLOAT8E4M3FN: NarrowFloat(3, -6, 8, 448.0, 0x7E, 0x7F, None, True, 0x80, True),
    TensorProto.FLOAT8E4M3FNUZ: NarrowFloat(3, -7, 7, 240.0, 0x7F, 0x80, None, False, 0x80, True),
    TensorProto.FLOAT8E5M2: NarrowFloat(2, -14, 15, 57344.0, 0x7B, 0x7E, 0x7C, True, 0x80, True),
    TensorProto.FLOAT8E5M2FNUZ: NarrowFloat(2, -15, 15, 57344.0, 0x7F, 0x80, None, False, 0x80, True),
    # ml_dtypes' float4_e2m1fn saturates and encodes NaN as 0x8 (its -0).
    TensorProto.FLOAT4E2M1: NarrowFloat(1, 0, 2, 6.0, 0x7, 0x8, None, True, 0x8, False),
}
E8M0 = TensorProto.FLOAT8E8M0
#: The integer types of fewer than 8 bits: (min, max).
INTS: dict[int, tuple[int, int]] = {
    TensorProto.INT4: (-8, 7),
    TensorProto.UINT4: (0, 15),
    TensorProto.INT2: (-2, 1),
    TensorProto.UINT2: (0, 3),
}
#: Every narrow type -> the accy type holding it.
NARROW: dict[int, IntegerType] = {
    **{t: IntegerType(16) for t in [*FLOATS, E8M0]},
    **{t: IntegerType(8) for t in INTS},
}


def _code_count(to: int) -> int:
    return 16 if to == TensorProto.FLOAT4E2M1 else 256


def to_held(array: np.ndarray, t: int) -> np.ndarray:
    """An ml_dtypes array of narrow type `t` as the importer's function takes it."""
    if t in INTS:
        return np.asarray(array).astype(np.int8)
    return np.asarray(array).view(np.uint8).astype(np.int16)


def from_held(array: np.ndarray, t: int) -> np.ndarray:
    """A held array of narrow type `t` as ml_dtypes' array of that type."""
    dtype = helper.tensor_dtype_to_np_dtype(t)
    if t in INTS:
        return np.asarray(array).astype(dtype)
    return np.asarray(array).astype(np.uint8).view(dtype)


def round_half_even(n: _Node, x: SSAValue) -> SSAValue:
    """x rounded to the nearest integer, ties to even (numpy's rint)."""
    # Half to even: floor(x) + (1 where the fraction is above 1/2, or exactly
    # 1/2 and floor(x) is odd). x - floor(x) is exact.
    f = n.emit(A.FloorOp(x))
    d = n.emit(A.SubOp(x, f))
    half = n.scalar(0.5, x)
    two = n.scalar(2, x)
    odd = n.emit(A.CmpOp("ne", n.emit(A.MulOp(n.emit(A.FloorOp(n.emit(A.DivOp(f, two)))), two)), f))
    up = n.emit(A.OrOp(n.emit(A.CmpOp("gt", d, half)), n.emit(A.AndOp(n.emit(A.CmpOp("eq", d, half)), odd))))
    r = n.select(up, n.emit(A.AddOp(f, n.scalar(1, x))), f)
    # Infinities and NaN are their own rounding (x - floor(x) is NaN for them).
    finite = n.emit(A.CmpOp("eq", d, d))
    return n.select(finite, r, x)


def _flat_gather(n: _Node, table: np.ndarray, index: SSAValue) -> SSAValue:
    """table[index] elementwise, `index` (i32) of any shape."""
    et = Float64Type() if table.dtype == np.float64 else Float32Type()
    return n.emit(A.GatherOp(n.lit(table, et), index, 0))


def recode(n: _Node, x: SSAValue, t: int, to: int, saturate: bool, round_mode: str) -> SSAValue:
    """The codes of narrow type `to` of the codes `x` of narrow type `t`: a
    gather from the table of onnx's reference cast of every code (a NaN's
    sign, which `encode` cannot read from a float, is in the code)."""
    from onnx.reference.ops.op_cast import cast_to

    dtype = helper.tensor_dtype_to_np_dtype(t)
    if t in INTS:  # held as values: the table starts at the type's min
        first = INTS[t][0]
        src = np.arange(first, INTS[t][1] + 1).astype(dtype)
    else:
        first = 0
        src = np.arange(_code_count(t), dtype=np.uint8).view(dtype)
    with np.errstate(all="ignore"):
        table = to_held(cast_to(src, to, saturate, round_mode), to)
    index = n.cast(x, IntegerType(32))
    if first:
        index = n.emit(A.SubOp(index, n.scalar(first, index)))
    return n.emit(A.GatherOp(n.lit(table, NARROW[to]), index, 0))


def decode(n: _Node, x: SSAValue, t: int) -> SSAValue:
    """The f32 value of the codes `x` of narrow float type `t` (exact)."""
    codes = np.arange(_code_count(t), dtype=np.uint8)
    values = codes.view(helper.tensor_dtype_to_np_dtype(t)).astype(np.float32)
    return _flat_gather(n, values, n.cast(x, IntegerType(32)))


def _exponent(n: _Node, a: SSAValue, lo: int, hi: int) -> SSAValue:
    """floor(log2 a) as i32 for finite a in [2^lo, 2^(hi+1)) (else clamped
    into [lo, hi]): a log estimate, corrected by exact compares with 2^e."""
    ac = n.emit(A.MinOp(n.emit(A.MaxOp(a, n.scalar(2.0**lo, a))), n.scalar(2.0**hi, a)))
    est = n.emit(A.FloorOp(n.emit(A.MulOp(n.emit(A.LogOp(ac)), n.scalar(1 / math.log(2), a)))))
    e = n.cast(est, IntegerType(32))
    e = n.emit(A.MaxOp(n.emit(A.MinOp(e, n.scalar(hi, e))), n.scalar(lo, e)))
    dtype = np.float64 if isinstance(elem_of(a), Float64Type) else np.float32
    # powers[k] = 2^(lo - 1 + k): e's power, and the next one, both gathered.
    # (2^(hi+1) is +inf in f32 for e8m0's hi = 127: no finite a reaches it, as it should not.)
    with np.errstate(over="ignore"):
        powers = np.array([2.0**k for k in range(lo - 1, hi + 3)]).astype(dtype)
    base = n.scalar(1 - lo, e)
    p = _flat_gather(n, powers, n.emit(A.AddOp(e, base)))
    e = n.select(n.emit(A.CmpOp("gt", p, ac)), n.emit(A.SubOp(e, n.scalar(1, e))), e)
    p2 = _flat_gather(n, powers, n.emit(A.AddOp(n.emit(A.AddOp(e, base)), n.scalar(1, e))))
    e = n.select(n.emit(A.CmpOp("le", p2, ac)), n.emit(A.AddOp(e, n.scalar(1, e))), e)
    return n.emit(A.MaxOp(n.emit(A.MinOp(e, n.scalar(hi, e))), n.scalar(lo, e)))


def _sign(n: _Node, x: SSAValue) -> SSAValue:
    """x < 0, -0 included (1/-0 = -inf); false for NaN."""
    neg = n.emit(A.CmpOp("lt", x, n.scalar(0, x)))
    return n.emit(A.OrOp(neg, n.emit(A.CmpOp("lt", n.emit(A.ReciprocalOp(x)), n.scalar(0, x)))))


def encode(n: _Node, x: SSAValue, t: int, saturate: bool, round_mode: str) -> SSAValue:
    """The codes (i16) of narrow float type `t` of `x` (a float or integer
    tensor), as onnx's reference Cast computes them."""
    if t == E8M0:
        return _encode_e8m0(n, _as_float(n, x, False), saturate, round_mode)
    f = FLOATS[t]
    x = _as_float(n, x, True)
    i16, i32 = IntegerType(16), IntegerType(32)
    a = n.emit(A.AbsOp(x))
    e = _exponent(n, a, f.emin, f.emax)
    # The quantum 2^(e - mbits), gathered exactly; a / q is exact (a power of two).
    dtype = np.float64 if isinstance(elem_of(x), Float64Type) else np.float32
    quanta = np.array([2.0 ** (k - f.mbits) for k in range(f.emin, f.emax + 1)], dtype=dtype)
    q = _flat_gather(n, quanta, n.emit(A.SubOp(e, n.scalar(f.emin, e))))
    k = round_half_even(n, n.emit(A.DivOp(a, q)))
    over = n.emit(A.CmpOp("gt", n.emit(A.MulOp(k, q)), n.scalar(f.max, a)))  # false for NaN
    kk = n.cast(n.emit(A.MinOp(k, n.scalar(1 << (f.mbits + 1), k))), i32)
    mag = n.emit(A.AddOp(n.emit(A.MulOp(n.emit(A.SubOp(e, n.scalar(f.emin, e))), n.scalar(1 << f.mbits, e))), kk))
    if not f.float8 or saturate:
        overflow = f.max_code
    else:
        overflow = f.inf if f.inf is not None else f.nan
    mag = n.select(over, n.scalar(overflow, mag), mag)
    sign = n.select(_sign(n, x), n.scalar(f.sign, mag), n.scalar(0, mag))
    if not f.neg_zero:
        sign = n.select(n.emit(A.CmpOp("eq", mag, n.scalar(0, mag))), n.scalar(0, mag), sign)
    # (An overflow to the *FNUZ types' NaN, 0x80, keeps 0x80 whatever the sign.)
    code = n.emit(A.OrOp(mag, sign))
    nan = n.emit(A.CmpOp("ne", x, x))
    return n.cast(n.select(nan, n.scalar(f.nan, code), code), i16)


def _as_float(n: _Node, x: SSAValue, keep_f64: bool) -> SSAValue:
    """x as the float type the encoding computes in: f64 stays f64 where
    `keep_f64` (ml_dtypes rounds a double once), anything else f32."""
    et = elem_of(x)
    if keep_f64 and isinstance(et, Float64Type):
        return x
    return n.cast(x, Float32Type())


def _encode_e8m0(n: _Node, x: SSAValue, saturate: bool, round_mode: str) -> SSAValue:
    """onnx's to_float8e8m0 of f32 `x`: the f32's exponent field (sign
    ignored), rounded up by its fraction per `round_mode`; NaN and ±inf 255."""
    if round_mode not in ("up", "down", "nearest"):
        raise n.unsupported(f"round_mode '{round_mode}'")
    i32 = IntegerType(32)
    a = n.emit(A.AbsOp(x))
    e = _exponent(n, a, -126, 127)
    normal = n.emit(A.CmpOp("ge", a, n.scalar(2.0**-126, a)))
    field = n.select(normal, n.emit(A.AddOp(e, n.scalar(127, e))), n.scalar(0, e))
    # The fraction bits as a value in [0, 1): a / 2^e - 1 (normal) or a·2^126 (subnormal), exact.
    powers = np.array([2.0**-k for k in range(-127, 128)], dtype=np.float32)  # 2^-e at e + 127
    inv = _flat_gather(n, powers, n.emit(A.AddOp(e, n.scalar(127, e))))
    frac = n.select(normal, n.emit(A.SubOp(n.emit(A.MulOp(a, inv)), n.scalar(1, a))), n.emit(A.MulOp(a, n.scalar(2.0**126, a))))
    zero = n.scalar(0, frac)
    if round_mode == "down":
        up = n.emit(A.CmpOp("ne", zero, zero))
    elif round_mode == "up":
        up = n.emit(A.CmpOp("gt", frac, zero))
    else:
        g = n.emit(A.CmpOp("ge", frac, n.scalar(0.5, frac)))
        f4 = n.emit(A.MulOp(frac, n.scalar(4, frac)))
        fl = n.emit(A.FloorOp(f4))
        r = n.emit(A.CmpOp("ne", n.emit(A.AndOp(n.cast(fl, i32), n.scalar(1, field))), n.scalar(0, field)))
        s = n.emit(A.CmpOp("gt", f4, fl))
        lsb = n.emit(A.CmpOp("gt", field, n.scalar(0, field)))
        up = n.emit(A.AndOp(g, n.emit(A.OrOp(r, n.emit(A.OrOp(s, lsb))))))
    if saturate:
        up = n.emit(A.AndOp(up, n.emit(A.CmpOp("ne", field, n.scalar(0xFE, field)))))
    code = n.select(up, n.emit(A.AddOp(field, n.scalar(1, field))), field)
    special = n.emit(A.OrOp(n.emit(A.CmpOp("ne", a, a)), n.emit(A.CmpOp("eq", a, n.scalar(math.inf, a)))))
    return n.cast(n.select(special, n.scalar(0xFF, code), code), IntegerType(16))


def to_int(n: _Node, x: SSAValue, t: int) -> SSAValue:
    """x as narrow integer type `t` (i8), as ml_dtypes' astype: an integer
    wraps to the width; a float truncates toward zero, and one whose
    truncation is outside the type's range (or NaN) gives 0."""
    lo, hi = INTS[t]
    i8, i32 = IntegerType(8), IntegerType(32)
    if is_float(elem_of(x)):
        tr = n.emit(A.FloorOp(n.emit(A.AbsOp(x))))
        tr = n.select(n.emit(A.CmpOp("lt", x, n.scalar(0, x))), n.emit(A.NegOp(tr)), tr)
        ok = n.emit(A.AndOp(n.emit(A.CmpOp("ge", tr, n.scalar(lo, tr))), n.emit(A.CmpOp("le", tr, n.scalar(hi, tr)))))
        return n.cast(n.select(ok, tr, n.scalar(0, tr)), i8)
    if is_bool(elem_of(x)):
        return n.cast(x, i8)
    # Wrap: the low bits, sign-extended for a signed type.
    width = hi - lo + 1
    v = n.emit(A.AndOp(n.cast(x, IntegerType(64)), n.scalar(width - 1, n.cast(x, IntegerType(64)))))
    v = n.cast(v, i32)
    if lo < 0:
        v = n.select(n.emit(A.CmpOp("gt", v, n.scalar(hi, v))), n.emit(A.SubOp(v, n.scalar(width, v))), v)
    return n.cast(v, i8)
