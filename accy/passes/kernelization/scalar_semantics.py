"""The scalar semantics of every elementwise op of the tensor dialect in
kernel IR: one implementation per op (`apply_elementwise`), on scalars or
lane-wise on vectors. Integer division, integer powers and float->int
casts give the reference interpreter's results where C leaves them
undefined (`int_div`, `int_pow`, `float_to_int`).
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects import arith
from xdsl.dialects import math as mathd
from xdsl.ir import Attribute, Operation, SSAValue

from accy.dialects import accy
from accy.dialects.kernel import convert_op
from accy.dialects.types import element_bytes
from accy.passes.kernelization.kernel_builder import KernelBuilder, cmp, element_type_of, like_type
from accy.passes.kernelization.lowered import Decline

SQRT1_2 = 0.7071067811865476


def _is_float_t(t: Attribute) -> bool:
    return accy.is_float(element_type_of(t))


def int_pow(kb: KernelBuilder, base: SSAValue, exp: SSAValue) -> SSAValue:
    """base ** exp for integers by squaring, wrapping on overflow (the reference's rule)."""
    t = base.type
    bits = element_type_of(t).width.data
    one, zero, two = kb.const(1, t), kb.const(0, t), kb.const(2, t)

    def step(_: SSAValue, c: list[SSAValue]) -> list[SSAValue]:
        r, b, e = c
        odd = cmp(kb, "ne", kb.val(arith.RemSIOp(e, two)), zero, integer=True)
        r = kb.select(odd, kb.val(arith.MuliOp(r, b)), r)
        return [r, kb.val(arith.MuliOp(b, b)), kb.val(arith.DivSIOp(e, two))]

    r = kb.for_(0, bits, 1, [one, base, exp], step)[0]
    # A negative exponent: 1/base^|exp| truncated (1, +-1 for base -1, else 0).
    minus_one = kb.const(-1, t)
    odd = cmp(kb, "ne", kb.val(arith.RemSIOp(exp, two)), zero, integer=True)
    for_minus_one = kb.select(odd, minus_one, one)
    inverse = kb.select(cmp(kb, "eq", base, minus_one, integer=True), for_minus_one, zero)
    inverse = kb.select(cmp(kb, "eq", base, one, integer=True), one, inverse)
    return kb.select(cmp(kb, "lt", exp, zero, integer=True), inverse, r)


def int_div(kb: KernelBuilder, a: SSAValue, b: SSAValue) -> SSAValue:
    """a / b truncating toward zero, defined everywhere as the reference
    defines it (a / 0 = 0, INT_MIN / -1 = INT_MIN): kernel IR's
    `arith.divsi` is defined so on every backend (docs/kernel-ir.md), which
    guards it where OpenCL C and LLVM leave it undefined."""
    return kb.val(arith.DivSIOp(a, b))


def float_to_int(kb: KernelBuilder, x: SSAValue, dst: Attribute) -> SSAValue:
    """Float -> signed integer truncating toward zero and saturating as the
    reference (and LLVM's fptosi.sat): NaN -> 0, values at or beyond the
    type's range -> its min / max. Out-of-range inputs never reach
    `arith.fptosi` (undefined there), they are replaced by 0 first."""
    t = x.type
    bits = dst.width.data
    rt = like_type(t, dst)
    # +-2^(bits-1) are exact in every float type wide enough to reach them
    # (f16 rounds them to +-inf, beyond which nothing lies).
    hi = cmp(kb, "ge", x, kb.const(float(2 ** (bits - 1)), t), integer=False)
    lo = cmp(kb, "le", x, kb.const(-float(2 ** (bits - 1)), t), integer=False)
    nan = cmp(kb, "ne", x, x, integer=False)
    bad = kb.val(arith.OrIOp(kb.val(arith.OrIOp(hi, lo)), nan))
    r = kb.val(convert_op("fptosi", kb.select(bad, kb.const(0.0, t), x), dst))
    r = kb.select(hi, kb.const(2 ** (bits - 1) - 1, rt), r)
    return kb.select(lo, kb.const(-(2 ** (bits - 1)), rt), r)


def cast(kb: KernelBuilder, x: SSAValue, src: Attribute, dst: Attribute) -> SSAValue:
    """accy.cast of a scalar or lane-wise of a vector `x` of element type
    `src`: float->int truncates and saturates (`float_to_int`), i1 -> 1/0,
    x -> i1 is x != 0, int->int wraps."""
    if src == dst:
        return x
    rt = like_type(x.type, dst)
    if accy.is_bool(dst):
        return cmp(kb, "ne", x, kb.const(0, x.type), integer=not accy.is_float(src))
    if accy.is_bool(src):
        return kb.select(x, kb.const(1, rt), kb.const(0, rt))
    if accy.is_float(src) and accy.is_float(dst):
        wider = element_bytes(dst) > element_bytes(src)
        return kb.val(arith.ExtFOp(x, rt) if wider else arith.TruncFOp(x, rt))
    if accy.is_float(src):
        return float_to_int(kb, x, dst)
    if accy.is_float(dst):
        return kb.val(convert_op("sitofp", x, dst))
    return kb.val(convert_op("extsi" if element_bytes(dst) > element_bytes(src) else "trunci", x, dst))


def apply_elementwise(kb: KernelBuilder, op: Operation, args: Sequence[SSAValue]) -> SSAValue:
    """Kernel IR for one elementwise tensor op on scalars or vectors `args`."""
    if isinstance(op, accy.CmpOp):
        return apply_scalar(kb, accy.CmpOp, args, predicate=op.predicate.data)
    if isinstance(op, accy.CastOp):
        return cast(kb, args[0], accy.elem_of(op.x), accy.elem_of(op.result))
    return apply_scalar(kb, type(op), args)


def apply_scalar(
    kb: KernelBuilder, op: type[Operation], args: Sequence[SSAValue], predicate: str | None = None
) -> SSAValue:
    """Kernel IR for the elementwise tensor op of class `op` (an
    `accy.ELEMENTWISE_OPS` class other than `accy.CastOp`: see `cast`) on
    scalars or vectors `args`, with the op's semantics (docs/op-contract.md);
    `predicate` is `accy.cmp`'s ("eq", "lt", ...)."""
    x = args[0]
    t = x.type
    fl = _is_float_t(t)

    def c(v: float) -> SSAValue:
        return kb.const(v, t)

    match op:
        case accy.NegOp:
            return kb.val(arith.NegfOp(x) if fl else arith.SubiOp(c(0), x))
        case accy.AbsOp:
            return kb.val(mathd.AbsFOp(x) if fl else mathd.AbsIOp(x))
        case accy.ReluOp:
            return kb.val(arith.MaximumfOp(x, c(0.0)) if fl else arith.MaxSIOp(x, c(0)))
        case accy.SigmoidOp:
            e = kb.val(mathd.ExpOp(kb.val(arith.NegfOp(x))))
            return kb.val(arith.DivfOp(c(1.0), kb.val(arith.AddfOp(c(1.0), e))))
        case accy.GeluOp:
            erf = kb.val(mathd.ErfOp(kb.val(arith.MulfOp(x, c(SQRT1_2)))))
            half_x = kb.val(arith.MulfOp(x, c(0.5)))
            return kb.val(arith.MulfOp(half_x, kb.val(arith.AddfOp(c(1.0), erf))))
        case accy.ReciprocalOp:
            return kb.val(arith.DivfOp(c(1.0), x))
        case accy.RsqrtOp:
            # 1/sqrt: correctly rounded parts; OpenCL's rsqrt is a 2-ulp approximation.
            if kb.profile.math == "fast":
                return kb.val(mathd.RsqrtOp(x))
            return kb.val(arith.DivfOp(c(1.0), kb.val(mathd.SqrtOp(x))))
        case accy.NotOp:
            return kb.val(arith.XOrIOp(x, kb.const(1, t)))
        case accy.CmpOp:
            assert predicate is not None
            return cmp(kb, predicate, x, args[1], integer=not fl)
        case accy.SelectOp:
            return kb.select(args[0], args[1], args[2])
        case accy.DivOp if not fl:
            return int_div(kb, x, args[1])
        case accy.PowOp if not fl:
            return int_pow(kb, x, args[1])
    if op in _UNARY_MATH:
        return kb.val(_UNARY_MATH[op](x))
    pair = _BINARY.get(op)
    if pair is None:
        raise Decline(f"no kernel form for {op.name}")
    cls = pair[0] if fl else pair[1]
    if cls is None:
        raise Decline(f"{op.name} does not take {element_type_of(t)}")
    return kb.val(cls(x, args[1]))


_UNARY_MATH: dict[type, type[Operation]] = {
    accy.ExpOp: mathd.ExpOp,
    accy.LogOp: mathd.LogOp,
    accy.SqrtOp: mathd.SqrtOp,
    accy.TanhOp: mathd.TanhOp,
    accy.SinOp: mathd.SinOp,
    accy.CosOp: mathd.CosOp,
    accy.ErfOp: mathd.ErfOp,
    accy.FloorOp: mathd.FloorOp,
    accy.CeilOp: mathd.CeilOp,
}
_BINARY: dict[type, tuple[type[Operation] | None, type[Operation] | None]] = {
    accy.AddOp: (arith.AddfOp, arith.AddiOp),
    accy.SubOp: (arith.SubfOp, arith.SubiOp),
    accy.MulOp: (arith.MulfOp, arith.MuliOp),
    accy.DivOp: (arith.DivfOp, None),  # integers: int_div
    accy.MaxOp: (arith.MaximumfOp, arith.MaxSIOp),
    accy.MinOp: (arith.MinimumfOp, arith.MinSIOp),
    accy.PowOp: (mathd.PowFOp, None),
    accy.AndOp: (None, arith.AndIOp),
    accy.OrOp: (None, arith.OrIOp),
    accy.XorOp: (None, arith.XOrIOp),
}
