"""Vectorised float32 math in LLVM IR, for the LLVM backend.

LLVM's ``llvm.exp.f32`` and friends become one scalar libm call per lane when
no vector library is configured, 5-6x slower than an inlined polynomial. This
module writes the functions out in IR with ``llvmlite.ir`` so that they
vectorise: every function works on a scalar ``float`` and on a vector
``<W x float>`` of any width W, with the same operations lane by lane, so the
vector form and the scalar form agree bit for bit.

``emit(builder, name, x, tier)`` returns ``name(x)`` for ``name`` in
:data:`FUNCTIONS` and ``tier`` in :data:`TIERS`:

- ``"fast"``: branch-free polynomial / rational approximations with range
  reduction, a few ulp;
- ``"exact"``: within a few ulp of the correctly rounded float32 result
  (numpy's float32 routines are ~1 ulp), still branch-free and vectorised,
  except sin/cos of |x| > :data:`TRIG_LIBM_THRESHOLD`, which take libm's
  ``sinf``/``cosf`` lane by lane in a block entered only when some lane needs
  it (so ``emit`` may add basic blocks for exact sin/cos: the builder is left
  at the end of the block where the result is available).

No fast-math flags are used: IEEE semantics hold for the special values
(NaN propagates, infinities and signed zeros behave as documented per
function). ``llvm.fma`` is used throughout (one instruction on any x86-64 with
FMA3; a libm call where the target has no FMA, so give the target machine the
host's CPU and features).

The error bounds below were MEASURED (``tools/llvm_math_accuracy.py`` prints
them; ``tests/unit/test_llvm_vector_math.py`` asserts them) against float64
numpy (``math.erf`` for erf) on dense sweeps plus special values. ``ulp`` is
|result - reference64| in units of the float32 spacing at the reference
(2^-149 in the subnormal range); ``abs`` is the absolute error. Each bound is
measured over the domain stated in :data:`ERROR_BOUNDS`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import partial

from llvmlite import ir

FUNCTIONS: tuple[str, ...] = ("exp", "log", "tanh", "erf", "sigmoid", "sin", "cos", "gelu")
TIERS: tuple[str, ...] = ("fast", "exact")

#: exact sin/cos: lanes with |x| above this go to libm's sinf/cosf (the
#: three-constant Cody-Waite reduction is measured accurate up to here).
TRIG_LIBM_THRESHOLD = 1.0e5

F32 = ir.FloatType()
I32 = ir.IntType(32)


@dataclass(frozen=True)
class ErrorBound:
    """A measured maximum error of one (function, tier) and where it holds.

    ``ulp``: max error in float32 ulps over ``ulp_domain`` (None: not a
    meaningful measure there). ``abs``: max absolute error over ``domain``.
    ``domain``: the sweep the bounds were measured on (both ends included);
    special values (0, -0, inf, -inf, NaN, denormals) are checked exactly.
    ``libm``: whether some lanes call libm (exact sin/cos beyond
    :data:`TRIG_LIBM_THRESHOLD`).
    """

    ulp: float | None
    abs: float | None
    domain: tuple[float, float]
    ulp_domain: tuple[float, float] | None = None
    libm: bool = False


#: (name, tier) -> measured bound. The tests read this table, so the numbers
#: in the docstrings below cannot drift from what is asserted.
ERROR_BOUNDS: dict[tuple[str, str], ErrorBound] = {}


FLT_MAX = 3.4028234663852886e38
_ALL = (-FLT_MAX, FLT_MAX)
_B = ErrorBound
ERROR_BOUNDS.update(
    {
        # measured max (1.1M+ points, tools/llvm_math_accuracy.py) -> bound asserted by the tests
        ("exp", "fast"): _B(ulp=2.5, abs=None, domain=_ALL),  # 2.24 ulp
        ("exp", "exact"): _B(ulp=1.25, abs=None, domain=_ALL),  # 0.99 ulp
        ("log", "fast"): _B(ulp=1.0, abs=None, domain=(0.0, FLT_MAX)),  # 0.82 ulp
        ("log", "exact"): _B(ulp=1.0, abs=None, domain=(0.0, FLT_MAX)),  # 0.80 ulp
        ("tanh", "fast"): _B(ulp=2.0, abs=None, domain=_ALL),  # 1.77 ulp
        ("tanh", "exact"): _B(ulp=1.5, abs=None, domain=_ALL),  # 1.30 ulp
        ("sigmoid", "fast"): _B(ulp=3.5, abs=None, domain=_ALL),  # 3.39 ulp
        ("sigmoid", "exact"): _B(ulp=2.5, abs=None, domain=_ALL),  # 2.30 ulp
        ("erf", "fast"): _B(ulp=1.5, abs=None, domain=_ALL),  # 1.30 ulp
        ("erf", "exact"): _B(ulp=1.25, abs=None, domain=_ALL),  # 1.00 ulp
        ("gelu", "fast"): _B(ulp=2.75, abs=5e-7, domain=(-12.0, 12.0), ulp_domain=(-1.0, FLT_MAX)),  # 2.46 ulp, 4.5e-7
        ("gelu", "exact"): _B(ulp=2.75, abs=5e-7, domain=(-12.0, 12.0), ulp_domain=(-1.0, FLT_MAX)),  # 2.46 ulp, 4.5e-7
        ("sin", "fast"): _B(ulp=1.75, abs=1e-7, domain=(-1e5, 1e5)),  # 1.50 ulp, 6.7e-8
        ("sin", "exact"): _B(ulp=1.75, abs=None, domain=_ALL, libm=True),  # 1.50 ulp
        ("cos", "fast"): _B(ulp=1.75, abs=1e-7, domain=(-1e5, 1e5)),  # 1.53 ulp, 6.9e-8
        ("cos", "exact"): _B(ulp=1.75, abs=None, domain=_ALL, libm=True),  # 1.53 ulp
    }
)


# ---------------------------------------------------------------------------
# IR helpers: one builder, one float type (scalar or vector)


class _M:
    """Helpers that build constants and intrinsic calls of x's type."""

    def __init__(self, builder: ir.IRBuilder, ty: ir.Type) -> None:
        if isinstance(ty, ir.VectorType):
            if ty.element != F32:
                raise TypeError(f"vector_math works on float32 vectors, got {ty}")
            self.width: int | None = ty.count
            self.ity: ir.Type = ir.VectorType(I32, ty.count)
            self.suffix = f"v{ty.count}f32"
        elif ty == F32:
            self.width = None
            self.ity = I32
            self.suffix = "f32"
        else:
            raise TypeError(f"vector_math works on float or <W x float>, got {ty}")
        self.b = builder
        self.ty = ty
        self.module: ir.Module = builder.module

    # constants
    def f(self, v: float) -> ir.Constant:
        c = ir.Constant(F32, float(v))
        return c if self.width is None else ir.Constant(self.ty, [c] * self.width)

    def i(self, v: int) -> ir.Constant:
        c = ir.Constant(I32, int(v))
        return c if self.width is None else ir.Constant(self.ity, [c] * self.width)

    # intrinsics
    def _intrinsic(self, base: str, nargs: int) -> ir.Function:
        name = f"llvm.{base}.{self.suffix}"
        fn = self.module.globals.get(name)
        if fn is None:
            fn = ir.Function(self.module, ir.FunctionType(self.ty, [self.ty] * nargs), name=name)
        return fn

    def fma(self, a: ir.Value, b: ir.Value, c: ir.Value) -> ir.Value:
        return self.b.call(self._intrinsic("fma", 3), [a, b, c])

    def fabs(self, a: ir.Value) -> ir.Value:
        return self.b.call(self._intrinsic("fabs", 1), [a])

    def copysign(self, mag: ir.Value, sgn: ir.Value) -> ir.Value:
        return self.b.call(self._intrinsic("copysign", 2), [mag, sgn])

    # arithmetic shorthands
    def add(self, a: ir.Value, b: ir.Value) -> ir.Value:
        return self.b.fadd(a, b)

    def sub(self, a: ir.Value, b: ir.Value) -> ir.Value:
        return self.b.fsub(a, b)

    def mul(self, a: ir.Value, b: ir.Value) -> ir.Value:
        return self.b.fmul(a, b)

    def div(self, a: ir.Value, b: ir.Value) -> ir.Value:
        return self.b.fdiv(a, b)

    def lt(self, a: ir.Value, b: ir.Value) -> ir.Value:
        return self.b.fcmp_ordered("<", a, b)

    def gt(self, a: ir.Value, b: ir.Value) -> ir.Value:
        return self.b.fcmp_ordered(">", a, b)

    def sel(self, c: ir.Value, a: ir.Value, b: ir.Value) -> ir.Value:
        return self.b.select(c, a, b)

    def bits(self, a: ir.Value) -> ir.Value:
        return self.b.bitcast(a, self.ity)

    def flt(self, a: ir.Value) -> ir.Value:
        return self.b.bitcast(a, self.ty)

    def horner(self, x: ir.Value, coeffs: tuple[float, ...]) -> ir.Value:
        """coeffs[0]*x^(n-1) + ... + coeffs[-1], by fma."""
        acc = self.f(coeffs[0])
        for c in coeffs[1:]:
            acc = self.fma(acc, x, self.f(c))
        return acc


_MAGIC = 12582912.0  # 1.5 * 2^23: x + MAGIC rounds x to an integer held in the low mantissa bits
_MAGIC_BITS = 0x4B400000
_INF = math.inf


def _round_to_int(m: _M, x: ir.Value, scale: float) -> tuple[ir.Value, ir.Value]:
    """(k as float, k as i32) with k = rint(x*scale), for |x*scale| < 2^22.

    Uses the 1.5*2^23 trick rather than fptosi, so NaN or huge lanes give
    defined (if meaningless) bits instead of poison."""
    t = m.fma(x, m.f(scale), m.f(_MAGIC))
    kf = m.sub(t, m.f(_MAGIC))
    ki = m.b.sub(m.bits(t), m.i(_MAGIC_BITS))
    return kf, ki


# ---------------------------------------------------------------------------
# exp

_LN2_HI = 0.6931471824645996  # float32(ln 2)
_LN2_LO = -1.9046542121259336e-09  # float32(ln 2 - LN2_HI)
_LOG2E = 1.4426950216293335
# e^r = 1 + r + r^2 P(r) on [-ln2/2, ln2/2]
_EXP_P_FAST = (0.008312525227665901, 0.041890114545822144, 0.16667114198207855, 0.499992311000824)  # Lawson minimax
_EXP_P_EXACT = (  # Cephes expf
    1.9875691500e-4,
    1.3981999507e-3,
    8.3334519073e-3,
    4.1665795894e-2,
    1.6666665459e-1,
    5.0000001201e-1,
)


def _exp(m: _M, x: ir.Value, tier: str) -> ir.Value:
    """e^x: x = k ln2 + r (fma Cody-Waite, two constants), e^r by polynomial,
    times 2^k built in two exponent-field steps (so gradual underflow rounds
    once and k up to 129 overflows to +inf). x is clamped to [-104, 89]
    first by ordered compares, which keep NaN.

    Measured max error over all finite float32 (dense [-104, 89] plus
    random floats of every magnitude): fast 2.24 ulp (bound 2.5 ulp), exact
    0.99 ulp (bound 1.25 ulp); subnormal results rounded once. Special values:
    exp(+-0) = 1, exp(inf) = inf, exp(-inf) = 0, NaN -> NaN; overflow to inf
    from x > 88.7228, underflow to 0 below -103.97. Fast: degree-5 minimax
    (Lawson) polynomial; exact: degree-7 (Cephes expf).
    """
    x = m.sel(m.gt(x, m.f(89.0)), m.f(89.0), x)
    x = m.sel(m.lt(x, m.f(-104.0)), m.f(-104.0), x)
    kf, ki = _round_to_int(m, x, _LOG2E)
    r = m.fma(kf, m.f(-_LN2_HI), x)
    r = m.fma(kf, m.f(-_LN2_LO), r)
    coeffs = _EXP_P_FAST if tier == "fast" else _EXP_P_EXACT
    p = m.horner(r, coeffs)
    p = m.fma(m.mul(r, r), p, r)  # r + r^2 P(r)
    p = m.add(p, m.f(1.0))
    k1 = m.b.ashr(ki, m.i(1))
    k2 = m.b.sub(ki, k1)
    s1 = m.flt(m.b.shl(m.b.add(k1, m.i(127)), m.i(23)))
    s2 = m.flt(m.b.shl(m.b.add(k2, m.i(127)), m.i(23)))
    return m.mul(m.mul(p, s1), s2)


# ---------------------------------------------------------------------------
# log

_LOG_P_CEPHES = (
    7.0376836292e-2,
    -1.1514610310e-1,
    1.1676998740e-1,
    -1.2420140846e-1,
    1.4249322787e-1,
    -1.6668057665e-1,
    2.0000714765e-1,
    -2.4999993993e-1,
    3.3333331174e-1,
)
# musl / FreeBSD logf: log(1+f) = f - hfsq + s*(hfsq + R(s^2)), s = f/(2+f)
_LG = (0.66666662693, 0.40000972152, 0.28498786688, 0.24279078841)
_LN2_HI_MUSL = 6.9313812256e-01
_LN2_LO_MUSL = 9.0580006145e-06


def _log(m: _M, x: ir.Value, tier: str) -> ir.Value:
    """Natural log: x = 2^k m with m in [sqrt(1/2), sqrt(2)) (subnormals
    scaled by 2^23 first), log(m) by polynomial in f = m - 1 (fast: Cephes,
    division-free) or in s = f/(2+f) (exact: FreeBSD/musl logf).

    Measured max error over all positive finite float32 (subnormals
    included; dense (0, 4] and [0.5, 2]): fast 0.82 ulp (bound 1.0 ulp), exact
    0.80 ulp (bound 1.0 ulp). log(+-0) = -inf, log(x<0) = NaN, log(inf) = inf,
    NaN -> NaN.
    """
    tiny = m.lt(x, m.f(1.1754943508222875e-38))
    xs = m.sel(tiny, m.mul(x, m.f(8388608.0)), x)
    eadj = m.sel(tiny, m.i(-23), m.i(0))
    ix = m.b.add(m.bits(xs), m.i(0x3F800000 - 0x3F3504F3))
    k = m.b.add(m.b.sub(m.b.ashr(ix, m.i(23)), m.i(127)), eadj)
    mant = m.flt(m.b.add(m.b.and_(ix, m.i(0x007FFFFF)), m.i(0x3F3504F3)))
    f = m.sub(mant, m.f(1.0))
    kf = m.b.sitofp(k, m.ty)
    if tier == "fast":
        z = m.mul(f, f)
        y = m.mul(m.mul(f, z), m.horner(f, _LOG_P_CEPHES))
        y = m.fma(kf, m.f(-2.12194440e-4), y)
        y = m.fma(z, m.f(-0.5), y)
        res = m.add(f, y)
        res = m.fma(kf, m.f(0.693359375), res)
    else:
        s = m.div(f, m.add(f, m.f(2.0)))
        z = m.mul(s, s)
        w = m.mul(z, z)
        t1 = m.mul(w, m.fma(w, m.f(_LG[3]), m.f(_LG[1])))
        t2 = m.mul(z, m.fma(w, m.f(_LG[2]), m.f(_LG[0])))
        rr = m.add(t2, t1)
        hfsq = m.mul(m.mul(m.f(0.5), f), f)
        res = m.mul(s, m.add(hfsq, rr))
        res = m.fma(kf, m.f(_LN2_LO_MUSL), res)
        res = m.sub(res, hfsq)
        res = m.add(res, f)
        res = m.fma(kf, m.f(_LN2_HI_MUSL), res)
    res = m.sel(m.b.fcmp_ordered("==", x, m.f(_INF)), m.f(_INF), res)
    res = m.sel(m.b.fcmp_ordered("==", x, m.f(0.0)), m.f(-_INF), res)
    res = m.sel(m.lt(x, m.f(0.0)), m.f(math.nan), res)
    return m.sel(m.b.fcmp_unordered("uno", x, x), x, res)


# ---------------------------------------------------------------------------
# tanh, sigmoid

_TANH_P = (-5.70498872745e-3, 2.06390887954e-2, -5.37397155531e-2, 1.33314422036e-1, -3.33332819422e-1)  # Cephes


def _tanh(m: _M, x: ir.Value, tier: str) -> ir.Value:
    """|x| < 0.625: x + x^3 P(x^2) (Cephes, keeps relative accuracy near 0);
    else copysign(1 - 2/(e^(2|x|) + 1), x), which saturates to +-1 through
    exp's overflow to +inf.

    Measured max error over all finite float32 (dense [-10, 10]): fast
    1.77 ulp (bound 2.0 ulp), exact 1.30 ulp (bound 1.5 ulp); the two differ
    only by the exp they use. tanh(+-0) = +-0, tanh(+-inf) = +-1, NaN -> NaN.
    """
    ax = m.fabs(x)
    z = m.mul(x, x)
    small = m.copysign(m.fma(m.mul(z, x), m.horner(z, _TANH_P), x), x)  # copysign: tanh(-0) = -0
    e = _exp(m, m.add(ax, ax), tier)
    big = m.sub(m.f(1.0), m.div(m.f(2.0), m.add(e, m.f(1.0))))
    big = m.copysign(big, x)
    return m.sel(m.lt(ax, m.f(0.625)), small, big)


def _sigmoid(m: _M, x: ir.Value, tier: str) -> ir.Value:
    """1/(1+e^-x) computed stably: e = e^-|x|, then 1/(1+e) for x >= 0 and
    e/(1+e) for x < 0 (never exp of a large positive argument).

    Measured max error over all finite float32 (dense [-110, 30], subnormal
    results included): fast 3.39 ulp (bound 3.5 ulp), exact 2.30 ulp (bound
    2.5 ulp). sigmoid(inf) = 1, sigmoid(-inf) = 0, NaN -> NaN.
    """
    e = _exp(m, m.b.fneg(m.fabs(x)), tier)
    d = m.add(m.f(1.0), e)
    pos = m.div(m.f(1.0), d)
    neg = m.div(e, d)
    return m.sel(m.b.fcmp_ordered(">=", x, m.f(0.0)), pos, neg)


# ---------------------------------------------------------------------------
# erf, gelu

# N. Juffa's erff (fma form): |x| <= 0.927734375: x + x P(x^2);
# above: 1 - exp(Q(|x|)), Q ~ log(erfc(|x|)).
_ERF_SMALL = (-5.96761703e-4, 4.99119423e-3, -2.67681349e-2, 1.12819925e-1, -3.76125336e-1, 1.28379166e-1)
_ERF_CUT = 0.927734375


def _erfc_log(m: _M, t: ir.Value, s: ir.Value) -> ir.Value:
    """Q(t) ~ log(erfc(t)) for t = |x| > 0.927734375 (s = x^2), fitted for
    erf's absolute accuracy (erfc's relative accuracy decays as erfc gets
    small)."""
    r = m.fma(m.f(-1.72853470e-5), t, m.f(3.83197126e-4))
    u = m.fma(m.f(-3.88396438e-3), t, m.f(2.42546219e-2))
    r = m.fma(r, s, u)
    r = m.fma(r, t, m.f(-1.06777877e-1))
    r = m.fma(r, t, m.f(-6.34846687e-1))
    r = m.fma(r, t, m.f(-1.28717512e-1))
    return m.fma(r, t, m.b.fneg(t))


def _erf(m: _M, x: ir.Value, tier: str) -> ir.Value:
    """erf by two branch-free pieces selected by |x| <= 0.927734375: an odd
    polynomial near 0 (relative accuracy kept there) and 1 - e^Q(|x|) above,
    with the tier's exp. Saturates to +-1 (exp(-inf) = 0).

    Measured max error over all finite float32 (dense [-5, 5]): fast
    1.30 ulp (bound 1.5 ulp), exact 1.00 ulp (bound 1.25 ulp); relative
    accuracy holds near 0 (odd polynomial). erf(+-0) = +-0, erf(+-inf) = +-1,
    NaN -> NaN.
    """
    t = m.fabs(x)
    s = m.mul(x, x)
    small = m.fma(m.horner(s, _ERF_SMALL), x, x)
    r = _erfc_log(m, t, s)
    big = m.copysign(m.sub(m.f(1.0), _exp(m, r, tier)), x)
    return m.sel(m.gt(t, m.f(_ERF_CUT)), big, small)


_SQRT1_2 = 0.7071067690849304


def _gelu(m: _M, x: ir.Value, tier: str) -> ir.Value:
    """0.5 x (1 + erf(x/sqrt 2)), for x >= -sqrt2*0.9277 directly, and below
    as 0.5 x e^Q(|x|/sqrt2) (erfc without the cancellation of 1 + erf).

    Measured max error: absolute 4.5e-7 over [-12, 12] (bound 5e-7), both
    tiers; 2.46 ulp (bound 2.75 ulp) for x >= -1 (all finite float32 there).
    Below -1 the relative error grows (erfc's fit is for erf's absolute
    accuracy): ~10 ulp at -2, ~70 at -3, ~1e3 below -4, absolute error still
    <= 4.5e-7. gelu(+-0) = +-0, gelu(inf) = inf, gelu(-inf) = -0, NaN -> NaN.
    """
    h = m.mul(x, m.f(_SQRT1_2))
    e = _erf(m, h, tier)
    direct = m.mul(m.mul(m.f(0.5), x), m.add(m.f(1.0), e))
    t = m.fabs(h)
    s = m.mul(h, h)
    r = _erfc_log(m, t, s)
    tail = m.mul(m.mul(m.f(0.5), x), _exp(m, r, tier))
    tail = m.sel(m.b.fcmp_ordered("==", x, m.f(-_INF)), m.f(-0.0), tail)  # gelu(-inf) = -0, not -inf * 0
    return m.sel(m.lt(h, m.f(-_ERF_CUT)), tail, direct)


# ---------------------------------------------------------------------------
# sin, cos

_PIO2_1 = 1.5707963705062866
_PIO2_2 = -4.371138828673793e-08
_PIO2_3 = -1.7151245100058819e-15
_TWO_OVER_PI = 0.6366197466850281
_SIN_P = (-1.9515295891e-4, 8.3321608736e-3, -1.6666654611e-1)  # Cephes sinf on [-pi/4, pi/4]
_COS_P = (2.443315711809948e-5, -1.388731625493765e-3, 4.166664568298827e-2)  # Cephes cosf


def _sincos_core(m: _M, x: ir.Value, tier: str, cos: bool) -> ir.Value:
    kf, q = _round_to_int(m, x, _TWO_OVER_PI)
    r = m.fma(kf, m.f(-_PIO2_1), x)
    r = m.fma(kf, m.f(-_PIO2_2), r)
    r = m.fma(kf, m.f(-_PIO2_3), r)
    z = m.mul(r, r)
    s = m.fma(m.mul(r, z), m.horner(z, _SIN_P), r)
    c = m.fma(z, m.fma(z, m.horner(z, _COS_P), m.f(-0.5)), m.f(1.0))
    if cos:
        q = m.b.add(q, m.i(1))
    swap = m.b.icmp_unsigned("!=", m.b.and_(q, m.i(1)), m.i(0))
    y = m.sel(swap, c, s)
    sign = m.b.shl(m.b.and_(q, m.i(2)), m.i(30))
    y = m.flt(m.b.xor(m.bits(y), sign))
    if not cos:  # the reduction turns -0 into +0
        y = m.sel(m.b.fcmp_ordered("==", x, m.f(0.0)), x, y)
    return y


def _libm(m: _M, name: str) -> ir.Function:
    fn = m.module.globals.get(name)
    if fn is None:
        fn = ir.Function(m.module, ir.FunctionType(F32, [F32]), name=name)
    return fn


def _sincos(m: _M, x: ir.Value, tier: str, cos: bool) -> ir.Value:
    """sin/cos: k = rint(x 2/pi), r = x - k pi/2 by fma Cody-Waite (three
    constants, both tiers), Cephes polynomials for sin and cos on
    [-pi/4, pi/4], chosen and signed by k mod 4. Exact tier: lanes with
    |x| > TRIG_LIBM_THRESHOLD (rare) go to libm sinf/cosf, in a block
    entered only when some lane needs it.

    Measured max error: fast, over [-1e5, 1e5] (dense, plus [-10, 10]):
    sin 1.50 ulp, cos 1.53 ulp (bound 1.75 ulp), absolute 6.9e-8 (bound 1e-7);
    beyond |x| = 1e5 the fast result is unspecified. Exact, over all finite
    float32 (libm beyond 1e5): sin 1.50 ulp, cos 1.53 ulp (bound 1.75 ulp).
    sin(+-0) = +-0, cos(0) = 1, sin/cos(+-inf) = NaN, NaN -> NaN.
    """
    y = _sincos_core(m, x, tier, cos)
    if tier == "fast":
        return y
    b = m.b
    big = m.gt(m.fabs(x), m.f(TRIG_LIBM_THRESHOLD))
    if m.width is None:
        anybig = big
    else:
        i1v = ir.VectorType(ir.IntType(1), m.width)
        rname = f"llvm.vector.reduce.or.v{m.width}i1"
        red = m.module.globals.get(rname)
        if red is None:
            red = ir.Function(m.module, ir.FunctionType(ir.IntType(1), [i1v]), name=rname)
        anybig = b.call(red, [big])
    fn = _libm(m, "cosf" if cos else "sinf")
    here = b.block
    slow = b.append_basic_block(name="trig.libm")
    done = b.append_basic_block(name="trig.done")
    b.cbranch(anybig, slow, done)
    b.position_at_end(slow)
    if m.width is None:
        ys = b.call(fn, [x])
    else:
        ys = y
        for lane in range(m.width):
            idx = ir.Constant(I32, lane)
            xi = b.extract_element(x, idx)
            yi = b.extract_element(y, idx)
            bi = b.extract_element(big, idx)
            # call only for big lanes: select the argument, not the call, so the block stays straight-line
            ci = b.call(fn, [b.select(bi, xi, ir.Constant(F32, 0.0))])
            ys = b.insert_element(ys, b.select(bi, ci, yi), idx)
    slow_end = b.block
    b.branch(done)
    b.position_at_end(done)
    phi = b.phi(m.ty)
    phi.add_incoming(y, here)
    phi.add_incoming(ys, slow_end)
    return phi


# ---------------------------------------------------------------------------
# public entry


def emit(builder: ir.IRBuilder, name: str, x: ir.Value, tier: str, shared: bool = False) -> ir.Value:
    """Emit ``name(x)`` at the builder's position and return it.

    ``x`` is a ``float`` or a ``<W x float>``; the result has x's type and is
    computed lane by lane by the same operations whatever W (bit-identical to
    the scalar form). ``name`` in :data:`FUNCTIONS`, ``tier`` in ``"fast"`` /
    ``"exact"``. Errors: :data:`ERROR_BOUNDS`. Exact sin/cos add basic blocks
    (a rarely taken libm path); the builder then ends in the block that holds
    the result.

    ``shared``: a call of one internal ``noinline`` function of the module
    (defined at its first such call) instead of the inlined operations, for
    a function a kernel computes at many sites (a register tile's unrolled
    epilogue: the demo MLP's dot + gelu kernel, eight ``erf`` of 16 lanes,
    took LLVM 71 ms inlined, 30 ms with one function). The same operations,
    so the same results.
    """
    if tier not in TIERS:
        raise ValueError(f"unknown tier {tier!r}; expected one of {TIERS}")
    emit_one = _EMITTERS.get(name)
    if emit_one is None:
        raise ValueError(f"unknown function {name!r}; expected one of {FUNCTIONS}")
    if not shared:
        return emit_one(_M(builder, x.type), x, tier)
    lanes = x.type.count if isinstance(x.type, ir.VectorType) else 1
    symbol = f"accy.{name}.{tier}.f32x{lanes}"
    function = builder.module.globals.get(symbol)
    if function is None:
        function = ir.Function(builder.module, ir.FunctionType(x.type, [x.type]), name=symbol)
        function.linkage = "internal"
        function.attributes.add("noinline")
        body = ir.IRBuilder(function.append_basic_block("entry"))
        body.ret(emit_one(_M(body, x.type), function.args[0], tier))
    return builder.call(function, [x])


#: The emitter of each function of `FUNCTIONS`.
_EMITTERS = {
    "exp": _exp, "log": _log, "tanh": _tanh, "sigmoid": _sigmoid, "erf": _erf, "gelu": _gelu,
    "sin": partial(_sincos, cos=False), "cos": partial(_sincos, cos=True),
}  # fmt: skip


def emit_map_function(module: ir.Module, fname: str, name: str, tier: str, width: int = 16) -> ir.Function:
    """Define ``void fname(float* src, float* dst, i64 n)`` computing
    ``dst[i] = name(src[i])``, ``width`` lanes at a time (unaligned vector
    loads/stores), then a scalar tail with the scalar form."""
    i64 = ir.IntType(64)
    ptr = ir.PointerType()
    fn = ir.Function(module, ir.FunctionType(ir.VoidType(), [ptr, ptr, i64]), name=fname)
    src, dst, n = fn.args
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    vty = ir.VectorType(F32, width)
    idx = b.alloca(i64)
    b.store(ir.Constant(i64, 0), idx)
    vcond = fn.append_basic_block("vec.cond")
    vbody = fn.append_basic_block("vec.body")
    scond = fn.append_basic_block("tail.cond")
    sbody = fn.append_basic_block("tail.body")
    exit_ = fn.append_basic_block("exit")
    b.branch(vcond)

    b.position_at_end(vcond)
    i = b.load(idx, typ=i64)
    b.cbranch(b.icmp_signed("<=", b.add(i, ir.Constant(i64, width)), n), vbody, scond)
    b.position_at_end(vbody)
    i = b.load(idx, typ=i64)
    v = b.load(b.gep(src, [i], source_etype=F32), typ=vty, align=4)
    b.store(emit(b, name, v, tier), b.gep(dst, [i], source_etype=F32), align=4)
    b.store(b.add(i, ir.Constant(i64, width)), idx)
    b.branch(vcond)

    b.position_at_end(scond)
    i = b.load(idx, typ=i64)
    b.cbranch(b.icmp_signed("<", i, n), sbody, exit_)
    b.position_at_end(sbody)
    i = b.load(idx, typ=i64)
    v = b.load(b.gep(src, [i], source_etype=F32), typ=F32, align=4)
    b.store(emit(b, name, v, tier), b.gep(dst, [i], source_etype=F32), align=4)
    b.store(b.add(i, ir.Constant(i64, 1)), idx)
    b.branch(scond)

    b.position_at_end(exit_)
    b.ret_void()
    return fn
