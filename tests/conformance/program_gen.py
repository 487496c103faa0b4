"""Random well-typed accy programs, for differential testing of the whole
compiler against the reference interpreter.

`programs(...)` is a hypothesis strategy of `Program`s: a `func.func @main`
with 1-4 arguments of small odd shapes (dims from `DIMS`, rank 1-3; f32
mostly, some i32, i8, i16, i64) and 2-12 random ops from the whole tensor dialect
(elementwise, cmp/select/cast, views, concat, gather, iota, pad, reduce
with argmax/argmin, scan, softmax, log_softmax, layer_norm, dot_general,
conv, pool, constants, iterate), returning several
of the values it computed. Values are reused by several consumers. The IR is
built with the op builders of `accy.dialects.accy` and printed to text (the
custom or the generic form), which is what a user hands `accy.compile`.

Sizes that only dims tell apart are drawn on purpose: 1 program in 3 has
one size in every dim of every argument (square and cubic tensors,
`SQUARE_DIMS`), attention often has Sk = Sq and Dv = D and k or v stored
transposed, and the row patterns (softmax, log_softmax and layer_norm
written with primitives, and the softmax between two dots) reduce along
another dim of the same size and broadcast their row values back along any
dims that fit, 1 time in 3 or 4: programs of the same types as the usual
form that must not be fused as if they were it.

Every program is meaningful in float32 on any correct implementation: each
value carries a bound on its magnitude (`Val.mag`), a lower bound when it is
known positive (`Val.lo`) and whether every correct implementation computes
it bit for bit (`Val.exact`: no rounding, or rounding that IEEE fixes, on
the way). Ops with a restricted domain or a discontinuity ask for what they
need first, inserting ops that provide it:
- log, sqrt, rsqrt, reciprocal, pow's base and div's divisor get a value
  bounded away from 0 (`abs(x) + 1`, or `exp` of a tamed value);
- exp, sin/cos, softmax, layer_norm, dot_general, products and reductions get
  a tamed value (`tanh(x)`, or a clamp `min(max(x, -c), c)` when x is exact,
  which also removes the infinities of an exclusive max/min scan);
- floor, ceil, cmp, argmax/argmin and casts to integers (where one ulp can
  flip the answer) only take exact values;
- integer values stay far from overflow (C leaves signed overflow undefined).

Inputs are standard normal float32 clipped to [-4, 4] and integers in
[-5, 5] (`random_inputs`), which is what the bounds assume.
"""

from __future__ import annotations

import io
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from hypothesis import strategies as st
from xdsl.dialects.builtin import Float32Type, FunctionType, IntegerType, ModuleOp, TensorType, i1
from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.printer import Printer

from accy.dialects import accy as A
from accy.reference.constants import numpy_dtype, numpy_to_dense

f32 = Float32Type()
i32 = IntegerType(32)
#: Integer widths besides i32 that arguments take now and then (their
#: constants beside a char or a long once made OpenCL's max/min ambiguous).
OTHER_INTS = (IntegerType(8), IntegerType(16), IntegerType(64))

#: Dimension sizes: 1 (folds away), tiny, odd, around a vector width.
DIMS = (1, 2, 3, 5, 16, 17, 33)
#: Sizes of the programs whose arguments have one size in every dim.
SQUARE_DIMS = (2, 3, 5, 16, 17)
#: Largest tensor a program may hold (rank 3 of 33s is 35937).
MAX_ELEMENTS = 40_000
MAX_RANK = 4
#: Inputs are clipped to this magnitude; integers lie in [-INT_INPUT, INT_INPUT].
FLOAT_INPUT = 4.0
INT_INPUT = 5
#: Magnitude bounds past which a value is tamed before arithmetic.
FLOAT_LIMIT = 1e6
INT_LIMIT = 2**20


@dataclass
class Val:
    """A value of the program and what is known of it."""

    ssa: SSAValue
    mag: float  # |x| <= mag (inf: may hold infinities or INT_MIN)
    exact: bool  # bit-identical on every correct implementation
    lo: float = 0.0  # x >= lo > 0 when lo > 0

    @property
    def shape(self) -> tuple[int, ...]:
        return A.shape_of(self.ssa)

    @property
    def et(self):
        return A.elem_of(self.ssa)

    @property
    def is_dense_constant(self) -> bool:
        """An `accy.constant` whose elements are not all equal."""
        op = self.ssa.owner
        return isinstance(op, A.ConstantOp) and len(set(op.value.get_values())) > 1

    @property
    def is_float(self) -> bool:
        return A.is_float(self.et)

    @property
    def is_int(self) -> bool:
        return A.is_int(self.et)

    @property
    def is_bool(self) -> bool:
        return A.is_bool(self.et)


@dataclass
class Program:
    """A drawn program: its text and what it is made of."""

    text: str
    arg_types: list[TensorType]
    features: frozenset[str]
    ops: int

    def __repr__(self) -> str:
        # Hypothesis prints the falsifying example with repr: show the program.
        return f"Program(ops={self.ops}, features={sorted(self.features)}):\n{self.text}"


def random_inputs(arg_types: Sequence[TensorType], seed: int) -> list[np.ndarray]:
    """The argument values the generator's bounds assume."""
    rng = np.random.default_rng(seed)
    out = []
    for t in arg_types:
        shape, dtype = tuple(t.get_shape()), numpy_dtype(t.element_type)
        if dtype.kind == "f":
            out.append(np.clip(rng.standard_normal(shape), -FLOAT_INPUT, FLOAT_INPUT).astype(dtype))
        elif dtype == np.bool_:
            out.append(rng.integers(0, 2, shape).astype(np.bool_))
        else:
            out.append(rng.integers(-INT_INPUT, INT_INPUT + 1, shape).astype(dtype))
    return out


def _size(shape: Sequence[int]) -> int:
    return math.prod(shape)


class _Builder:
    """Draws one program op by op into a block, tracking what each value is."""

    def __init__(self, draw: Callable, avoid: frozenset[str]) -> None:
        self.draw = draw
        self.avoid = avoid
        self.features: set[str] = set()
        self.block: Block = Block()
        self.pool: list[Val] = []
        self.count = 0
        self.depth = 0  # loops around the block being drawn

    # -- drawing helpers ----------------------------------------------------

    def choice(self, options: Sequence):
        return self.draw(st.sampled_from(list(options)))

    def flag(self) -> bool:
        return self.draw(st.booleans())

    def integer(self, lo: int, hi: int) -> int:
        return self.draw(st.integers(lo, hi))

    def subset(self, items: Sequence[int], min_size: int = 0) -> list[int]:
        picked = self.draw(st.lists(st.sampled_from(list(items)), min_size=min_size, max_size=len(items), unique=True))
        return sorted(picked)

    def allowed(self, feature: str) -> bool:
        return feature not in self.avoid

    def returnable(self, v: Val) -> bool:
        """Whether `v` may be a result; a broadcast of a reduction (a row
        value brought back onto the rows) is the feature "returned_row_broadcast"."""
        op = v.ssa.owner
        return not (isinstance(op, A.BroadcastOp) and _from_reduce(op.x)) or self.allowed("returned_row_broadcast")

    def pick(self, pred: Callable[[Val], bool] = lambda v: True) -> Val | None:
        """A value satisfying `pred`: often the latest one (chains of ops,
        which is what fusion works on), else any (shared values)."""
        cands = [v for v in self.pool if pred(v)]
        if not cands:
            return None
        return cands[-1] if self.flag() else self.choice(cands)

    # -- emitting -----------------------------------------------------------

    def emit(
        self, op: Operation, mag: float, exact: bool, lo: float = 0.0, feature: str | None = None, pooled: bool = True
    ) -> Val:
        """Appends `op`; its value joins the pool others draw from unless not `pooled`."""
        self.block.add_op(op)
        self.count += 1
        self.features.add(feature or op.name.removeprefix("accy."))
        v = Val(op.results[0], mag, exact, lo)
        if pooled:
            self.pool.append(v)
        return v

    def constant(self, shape: Sequence[int], et, value: float | None = None) -> Val:
        """A splat of `value`, or (value None) a dense constant of small
        values exact in float32 (multiples of 1/8 in [-2, 2]; integers in
        [-3, 3])."""
        dtype = numpy_dtype(et)
        if value is not None:
            array = np.full(tuple(shape), value, dtype)
            feature = "splat"
        else:
            rng = np.random.default_rng(self.integer(0, 2**16))
            if dtype.kind == "f":
                array = (rng.integers(-16, 17, tuple(shape)) / 8).astype(dtype)
            elif dtype == np.bool_:
                array = rng.integers(0, 2, tuple(shape)).astype(dtype)
            else:
                array = rng.integers(-3, 4, tuple(shape)).astype(dtype)
            feature = "dense"
        mag = float(np.abs(array.astype(np.float64)).max(initial=0))
        lo = float(array.min(initial=0)) if dtype.kind != "b" else 0.0
        return self.emit(A.ConstantOp(numpy_to_dense(array, et)), mag, True, max(lo, 0.0), feature)

    def some_constant(self, shape: Sequence[int], et) -> Val:
        if _size(shape) <= 256 and self.flag():
            return self.constant(shape, et)
        if A.is_bool(et):
            return self.constant(shape, et, self.choice([0, 1]))
        if A.is_float(et):
            return self.constant(shape, et, self.choice([0.5, -1.5, 2.0, 0.25]))
        return self.constant(shape, et, self.choice([1, -2, 3]))

    # -- making values fit a consumer ------------------------------------------

    def tame(self, v: Val, limit: float) -> Val:
        """`v`, or a bounded function of it when |v| may exceed `limit`."""
        if v.mag <= limit:
            return v
        if v.is_float and not (v.exact and self.flag()):
            return self.emit(A.TanhOp(v.ssa), 1.0, False)
        c = min(limit, 4.0 if v.is_float else 8.0)
        lo = self.constant(v.shape, v.et, -c)
        hi = self.constant(v.shape, v.et, c)
        clamped = self.emit(A.MaxOp(v.ssa, lo.ssa), v.mag, v.exact)
        return self.emit(A.MinOp(clamped.ssa, hi.ssa), c, v.exact)

    def positive(self, v: Val) -> Val:
        """`v` if it is known positive, else a positive function of it."""
        if v.lo > 0 and v.mag <= FLOAT_LIMIT:
            return v
        if v.is_float and self.flag():
            t = self.tame(v, 4.0)
            return self.emit(A.ExpOp(t.ssa), math.exp(t.mag), False, math.exp(-t.mag))
        v = self.tame(v, FLOAT_LIMIT if v.is_float else INT_LIMIT)
        a = self.emit(A.AbsOp(v.ssa), v.mag, v.exact)
        one = self.constant(v.shape, v.et, 1)
        return self.emit(A.AddOp(a.ssa, one.ssa), v.mag + 1, v.exact and v.is_int, 1.0)

    def partner(self, v: Val, pred: Callable[[Val], bool] = lambda w: True) -> Val:
        """A second operand of `v`'s type: another value (often `v` itself:
        shared values) or a constant."""
        cands = [w for w in self.pool if w.ssa.type == v.ssa.type and pred(w)]
        if cands and self.integer(0, 3):
            return self.choice(cands)
        return self.some_constant(v.shape, v.et)

    # -- ops ----------------------------------------------------------------

    def op_unary(self) -> Val | None:
        v = self.pick(lambda w: not w.is_bool)
        if v is None:
            return None
        if v.is_int:
            cls = self.choice([A.NegOp, A.AbsOp, A.ReluOp])
            v = self.tame(v, INT_LIMIT)
            return self.emit(cls(v.ssa), v.mag, True)
        cls = self.choice(
            [A.NegOp, A.AbsOp, A.ReluOp, A.ExpOp, A.TanhOp, A.SigmoidOp, A.GeluOp, A.ErfOp, A.SinOp, A.CosOp,
             A.LogOp, A.SqrtOp, A.RsqrtOp, A.ReciprocalOp, A.FloorOp, A.CeilOp]
        )  # fmt: skip
        if cls in (A.FloorOp, A.CeilOp) and not v.exact:
            cls = A.AbsOp
        if cls in (A.NegOp, A.AbsOp, A.ReluOp, A.FloorOp, A.CeilOp):
            v = self.tame(v, FLOAT_LIMIT)
            return self.emit(cls(v.ssa), v.mag + (cls in (A.FloorOp, A.CeilOp)), v.exact)
        if cls is A.ExpOp:
            v = self.tame(v, 4.0)
            return self.emit(cls(v.ssa), math.exp(v.mag), False, math.exp(-v.mag))
        if cls in (A.TanhOp, A.ErfOp):
            return self.emit(cls(self.tame(v, FLOAT_LIMIT).ssa), 1.0, False)
        if cls is A.SigmoidOp:
            v = self.tame(v, 20.0)
            return self.emit(cls(v.ssa), 1.0, False, 1 / (1 + math.exp(v.mag)))
        if cls is A.GeluOp:
            v = self.tame(v, FLOAT_LIMIT)
            return self.emit(cls(v.ssa), v.mag, False)
        if cls in (A.SinOp, A.CosOp):
            return self.emit(cls(self.tame(v, 10.0).ssa), 1.0, False)
        p = self.positive(v)
        if cls is A.LogOp:
            return self.emit(cls(p.ssa), max(abs(math.log(p.lo)), math.log(p.mag)), False)
        if cls is A.SqrtOp:
            return self.emit(cls(p.ssa), math.sqrt(p.mag), False, math.sqrt(p.lo))
        if cls is A.RsqrtOp:
            return self.emit(cls(p.ssa), 1 / math.sqrt(p.lo), False, 1 / math.sqrt(p.mag))
        return self.emit(A.ReciprocalOp(p.ssa), 1 / p.lo, False, 1 / p.mag)

    def op_binary(self) -> Val | None:
        v = self.pick()
        if v is None:
            return None
        if v.is_bool:
            cls = self.choice([A.AndOp, A.OrOp, A.XorOp, A.NotOp])
            if cls is A.NotOp:
                return self.emit(A.NotOp(v.ssa), 1, True)
            return self.emit(cls(v.ssa, self.partner(v).ssa), 1, True)
        if v.is_int:
            cls = self.choice([A.AddOp, A.SubOp, A.MulOp, A.DivOp, A.MaxOp, A.MinOp, A.AndOp, A.OrOp, A.XorOp, A.PowOp])
        else:
            cls = self.choice([A.AddOp, A.SubOp, A.MulOp, A.DivOp, A.MaxOp, A.MinOp, A.PowOp])
        limit = FLOAT_LIMIT if v.is_float else INT_LIMIT
        if cls in (A.MulOp, A.PowOp):
            limit = 1e3 if v.is_float else 2**10
        a = self.tame(v, limit)
        if cls is A.DivOp:
            b = self.positive(self.partner(v))
            mag = a.mag / b.lo if v.is_float else a.mag
            return self.emit(cls(a.ssa, b.ssa), mag, v.is_int)
        if cls is A.PowOp:
            if v.is_int:
                # Small non-negative exponents only: a^b stays in range.
                b = self.emit(A.AbsOp(self.tame(self.partner(v), 2).ssa), 2, True)
                return self.emit(cls(a.ssa, b.ssa), max(a.mag, 1) ** 2, True)
            base = self.positive(a)
            b = self.tame(self.partner(v), 1.0)
            return self.emit(cls(base.ssa, b.ssa), max(base.mag, 1 / base.lo), False)
        b = self.tame(self.partner(v), limit)
        if cls in (A.AddOp, A.SubOp):
            return self.emit(cls(a.ssa, b.ssa), a.mag + b.mag, v.is_int)
        if cls is A.MulOp:
            return self.emit(cls(a.ssa, b.ssa), a.mag * b.mag, v.is_int)
        if cls in (A.MaxOp, A.MinOp):
            return self.emit(cls(a.ssa, b.ssa), max(a.mag, b.mag), a.exact and b.exact)
        # Bitwise ops on integers: results stay below the next power of two.
        bound = 2 ** math.ceil(math.log2(max(a.mag, b.mag) + 1)) * 2
        return self.emit(cls(a.ssa, b.ssa), bound, True)

    def op_cmp(self) -> Val | None:
        v = self.pick(lambda w: w.exact)
        if v is None:
            return None
        pred = self.choice(A.CMP_PREDICATES if not v.is_bool else ("eq", "ne"))
        b = self.partner(v, lambda w: w.exact)
        return self.emit(A.CmpOp(pred, v.ssa, b.ssa), 1, True)

    def op_select(self) -> Val | None:
        c = self.pick(lambda w: w.is_bool)
        if c is None:
            c = self.op_cmp()
            if c is None:
                return None
        a = self.pick(lambda w: w.shape == c.shape and w is not c) or self.some_constant(c.shape, f32)
        b = self.partner(a)
        return self.emit(A.SelectOp(c.ssa, a.ssa, b.ssa), max(a.mag, b.mag), a.exact and b.exact and c.exact)

    def op_cast(self) -> Val | None:
        v = self.pick()
        if v is None:
            return None
        if v.is_bool:
            return self.emit(A.CastOp(v.ssa, self.choice([f32, i32])), 1, True)
        if v.is_int:
            to = self.choice([f32, i1])
            v = self.tame(v, 2**24)
            return self.emit(A.CastOp(v.ssa, to), 1 if to == i1 else v.mag, True)
        to = self.choice([i32, i1]) if v.exact else None
        if to is None:
            return None
        v = self.tame(v, 2**24)
        return self.emit(A.CastOp(v.ssa, to), 1 if to == i1 else v.mag, True)

    def op_broadcast(self) -> Val | None:
        v = self.pick(lambda w: len(w.shape) < MAX_RANK)
        if v is None:
            return None
        shape, n = v.shape, self.choice(DIMS)
        ones = [d for d, s in enumerate(shape) if s == 1]
        hows = ["leading", "trailing", "inner", "stretch", "identity"]
        how = self.choice([h for h in hows if (h != "stretch" or ones) and self.allowed("broadcast_" + h)])
        if how == "identity":
            out, dims = list(shape), list(range(len(shape)))
        elif how == "stretch":
            d = self.choice(ones)
            out = list(shape)
            out[d] = n
            dims = list(range(len(shape)))
        elif how == "leading":
            out, dims = [n, *shape], [d + 1 for d in range(len(shape))]
        elif how == "inner":  # a new dim between two of the operand's
            at = self.integer(0, len(shape))
            out = [*shape[:at], n, *shape[at:]]
            dims = [d if d < at else d + 1 for d in range(len(shape))]
        else:
            out, dims = [*shape, n], list(range(len(shape)))
        if tuple(out) == shape:
            how = "identity"  # a stretch of a size-1 dim to 1
            if not self.allowed("broadcast_identity"):
                return None
        if _size(out) > MAX_ELEMENTS:
            return None
        return self.emit(A.BroadcastOp(v.ssa, dims, out), v.mag, v.exact, v.lo, feature="broadcast_" + how)

    def op_transpose(self) -> Val | None:
        v = self.pick(lambda w: len(w.shape) >= 2)
        if v is None:
            return None
        perm = self.draw(st.permutations(list(range(len(v.shape)))))
        return self.emit(A.TransposeOp(v.ssa, perm), v.mag, v.exact, v.lo)

    def op_reshape(self) -> Val | None:
        v = self.pick()
        if v is None:
            return None
        n = _size(v.shape)
        factors = [p for p in _prime_factors(n)]
        rank = self.integer(0 if n == 1 else 1, min(3, max(1, len(factors))))
        out = [1] * rank
        for p in factors:
            out[self.integer(0, rank - 1)] *= p
        return self.emit(A.ReshapeOp(v.ssa, out), v.mag, v.exact, v.lo)

    def op_slice(self) -> Val | None:
        v = self.pick(lambda w: len(w.shape) >= 1)
        if v is None:
            return None
        start, limit, stride = [], [], []
        for n in v.shape:
            a = self.integer(0, n - 1)
            b = self.integer(a + 1, n)
            start.append(a)
            limit.append(b)
            stride.append(self.choice([1, 1, 2, 3]))
        return self.emit(A.SliceOp(v.ssa, start, limit, stride), v.mag, v.exact, v.lo)

    def op_concat(self) -> Val | None:
        v = self.pick(lambda w: len(w.shape) >= 1)
        if v is None:
            return None
        axis = self.integer(0, len(v.shape) - 1)

        def fits(w: Val) -> bool:
            s, t = w.shape, v.shape
            return w.et == v.et and len(s) == len(t) and all(a == b for d, (a, b) in enumerate(zip(s, t, strict=True)) if d != axis)

        others = [self.pick(fits) for _ in range(self.integer(1, 2))]
        vals = [v, *[w for w in others if w is not None]]
        shape = list(v.shape)
        shape[axis] = sum(w.shape[axis] for w in vals)
        if _size(shape) > MAX_ELEMENTS:
            return None
        return self.emit(
            A.ConcatOp([w.ssa for w in vals], axis),
            max(w.mag for w in vals),
            all(w.exact for w in vals),
            min(w.lo for w in vals),
        )

    def op_gather(self) -> Val | None:
        """numpy.take of a value by indices: an i32/i64 value of the program
        (inputs in [-5, 5]: negative and out-of-range indices, which wrap
        and clamp) or a dense literal of indices in [-2d, 2d)."""
        v = self.pick(lambda w: len(w.shape) >= 1)
        if v is None:
            return None
        axis = self.integer(0, len(v.shape) - 1)
        d = v.shape[axis]
        index_types = (i32, IntegerType(64))
        idx = self.pick(lambda w: w.et in index_types and w.exact and len(w.shape) <= 2) if self.flag() else None
        if idx is None:
            shape = [self.choice(DIMS) for _ in range(self.integer(0, 2))]
            rng = np.random.default_rng(self.integer(0, 2**16))
            et = self.choice(index_types)
            array = rng.integers(-2 * d, 2 * d, tuple(shape)).astype(numpy_dtype(et))
            idx = self.emit(A.ConstantOp(numpy_to_dense(array, et)), 2 * d, True, feature="dense")
        out = (*v.shape[:axis], *idx.shape, *v.shape[axis + 1 :])
        if _size(out) > MAX_ELEMENTS or len(out) > MAX_RANK:
            return None
        return self.emit(A.GatherOp(v.ssa, idx.ssa, axis - len(v.shape) * self.flag()), v.mag, v.exact, v.lo)

    def op_iota(self) -> Val | None:
        """Positions along one dim, as f32 or i32 (exact either way)."""
        shape = [self.choice(DIMS) for _ in range(self.integer(1, 3))]
        dim = self.integer(0, len(shape) - 1)
        return self.emit(A.IotaOp(shape, self.choice([f32, i32]), dim), shape[dim] - 1, True)

    def op_pad(self) -> Val | None:
        """accy.pad in every mode: per dim a pad of -(size-1) .. size+2 at
        each end (negative ones crop; edge, reflect and wrap pads longer than
        the dim repeat it), constant mode also cropping a dim to nothing."""
        v = self.pick(lambda w: len(w.shape) >= 1)
        if v is None:
            return None
        mode = self.choice(A.PAD_MODES)
        low, high = [], []
        for n in v.shape:
            lo = self.integer(-(n - 1), n + 2)
            # What the low pad leaves: the high pad crops at most all of it
            # (constant), or all but one element (the others repeat one).
            keep = n - max(-lo, 0)
            hi = self.integer(-(keep - (mode != "constant")), n + 2)
            low.append(lo)
            high.append(hi)
        out = A.infer_pad(v.shape, low, high)
        if _size(out) > MAX_ELEMENTS or 0 in out:
            return None
        value = self.constant((), v.et, 0.0 if v.is_bool else self.choice([0.0, -1.5, 3.0]) if v.is_float else self.choice([0, 2, -3]))
        if mode != "constant":
            value = Val(value.ssa, 0.0, True, v.lo)
        mag, lo = max(v.mag, value.mag), min(v.lo, value.lo) if value.lo > 0 else 0.0
        long = any(max(a, b) > n for a, b, n in zip(low, high, v.shape, strict=True))
        feature = "pad_" + mode + "_crop" * (min(low + high) < 0) + "_long" * long
        return self.emit(A.PadOp(v.ssa, value.ssa, low, high, mode), mag, v.exact and value.exact, lo, feature=feature)

    def op_argreduce(self) -> Val | None:
        """argmax / argmin (i32 or i64) over some dims of an exact value (one
        ulp could move the answer), often with ties on purpose (a clamp to
        [-0.5, 0.5] or a small integer range) or NaNs (a select of NaN where
        the value is large: the first NaN wins)."""
        v = self.pick(lambda w: not w.is_bool and w.exact and len(w.shape) >= 1)
        if v is None:
            return None
        how = self.choice(["plain", "ties", "nan"] if v.is_float else ["plain", "ties"])
        if how == "ties":
            c = 0.5 if v.is_float else 1
            lo, hi = self.constant(v.shape, v.et, -c), self.constant(v.shape, v.et, c)
            v = self.emit(A.MinOp(self.emit(A.MaxOp(v.ssa, lo.ssa), v.mag, True).ssa, hi.ssa), c, True)
        elif how == "nan":
            big = self.emit(A.CmpOp("gt", v.ssa, self.constant(v.shape, v.et, 0.5).ssa), 1, True)
            nan = self.constant(v.shape, v.et, math.nan)
            # NaNs stay out of the pool: only the arg reduction reads them.
            v = self.emit(A.SelectOp(big.ssa, nan.ssa, v.ssa), math.inf, True, pooled=False)
        kind = self.choice(A.ARG_KINDS)
        axes = self.subset(range(len(v.shape)), min_size=1)
        et = self.choice([i32, IntegerType(64)])
        count = _size([v.shape[a] for a in axes])
        feature = f"{kind}_{how}"
        return self.emit(A.ReduceOp(v.ssa, kind, axes, index_type=et), count - 1, True, feature=feature)

    def _window(self, spatial: Sequence[int], least_pads: bool) -> tuple[list[int], list[int], list[int], list[int], list[int]]:
        """A window, strides, dilations and pads over `spatial` that fit
        (the window's span at most the padded dim, each window holding an
        input element when `least_pads`)."""
        window, strides, dil, low, high = [], [], [], [], []
        for n in spatial:
            d = self.choice([1, 1, 2]) if n >= 3 else 1
            k = self.integer(1, min(3, (n - 1) // d + 1))
            window.append(k)
            dil.append(d)
            strides.append(self.choice([1, 1, 2, 3]))
            span = d * (k - 1) + 1
            low.append(self.integer(0, min(2, span - 1)))
            high.append(self.integer(0, min(2, span - 1)))
        if least_pads:
            inside = np.pad(np.ones(tuple(spatial)), list(zip(low, high, strict=True)))
            out = A.infer_window(spatial, window, strides, dil, low, high)
            count = np.zeros(out)
            for tap in np.ndindex(*window):
                count += inside[tuple(slice(t * dd, t * dd + (o - 1) * s + 1, s)
                                      for t, dd, o, s in zip(tap, dil, out, strides, strict=True))]
            if count.min() == 0:  # a window wholly in the padding (-inf, or 0/0)
                low, high = [0] * len(spatial), [0] * len(spatial)
        return window, strides, dil, low, high

    def op_conv(self) -> Val | None:
        """accy.conv of a small [N, C, x...] float value (1 or 2 spatial
        dims) by a dense literal of weights, over groups that divide C."""
        v = self.pick(lambda w: w.is_float and len(w.shape) in (3, 4) and _size(w.shape) <= 4096)
        if v is None:
            return None
        N, C, *spatial = v.shape
        groups = self.choice([g for g in range(1, C + 1) if C % g == 0 and g <= 4])
        M = groups * self.integer(1, 3)
        window, strides, dil, low, high = self._window(spatial, least_pads=False)
        wshape = (M, C // groups, *window)
        if _size(wshape) > 2048:
            return None
        out = (N, M, *A.infer_window(spatial, window, strides, dil, low, high))
        taps = C // groups * _size(window)
        if _size(out) > MAX_ELEMENTS or _size(out) * taps > 400_000:
            return None
        x = self.tame(v, 4.0)
        w = self.constant(wshape, f32)
        feature = "conv" + "_grouped" * (groups > 1) + "_strided" * (max(strides) > 1) + "_dilated" * (max(dil) > 1)
        return self.emit(A.ConvOp(x.ssa, w.ssa, strides, dil, low, high, groups), x.mag * w.mag * taps, False, feature=feature)

    def op_pool(self) -> Val | None:
        """accy.pool max, sum or average (floats), with or without
        count_include_pad, over a small [N, C, x...] value."""
        v = self.pick(lambda w: not w.is_bool and len(w.shape) in (3, 4))
        if v is None:
            return None
        kind = self.choice(A.POOL_KINDS if v.is_float else ("max", "sum"))
        window, strides, dil, low, high = self._window(v.shape[2:], least_pads=True)
        taps = _size(window)
        include = kind == "average" and self.flag()
        if kind == "max":
            x, mag, exact, lo = v, v.mag, v.exact, v.lo
        else:
            x = self.tame(v, (FLOAT_LIMIT if v.is_float else INT_LIMIT) / taps)
            mag, exact = x.mag * (taps if kind == "sum" else 1), x.is_int
            lo = x.lo if kind == "average" and not include else 0.0
        op = A.PoolOp(x.ssa, kind, window, strides, dil, low, high, include)
        return self.emit(op, mag, exact, lo, feature=f"pool_{kind}" + "_include_pad" * include)

    def _near_one(self, v: Val, n: int) -> Val:
        """A function of `v` whose products over `n` elements stay in range:
        exp(c·tanh(v)) for floats, a clamp to [-1, 1] (or [-c, c]) for ints."""
        if v.is_int:
            c = 1
            while (c + 1) ** n <= INT_LIMIT and c < 4:
                c += 1
            return self.tame(v, c)
        t = self.emit(A.TanhOp(self.tame(v, FLOAT_LIMIT).ssa), 1.0, False)
        c = self.constant(v.shape, v.et, min(0.125, 12.0 / max(n, 1)))
        m = self.emit(A.MulOp(t.ssa, c.ssa), 1.0, False)
        bound = math.exp(min(0.125, 12.0 / max(n, 1)))
        return self.emit(A.ExpOp(m.ssa), bound, False, 1 / bound)

    def _accumulate(self, v: Val, kind: str, n: int) -> tuple[Val, float]:
        """The operand for a reduction or scan of `kind` over `n` elements,
        and a bound on the result."""
        if kind == "prod":
            v = self._near_one(v, n)
            return v, v.mag**n
        if kind in ("sum", "mean"):
            v = self.tame(v, (FLOAT_LIMIT if v.is_float else INT_LIMIT) / max(n, 1))
            return v, v.mag * (n if kind == "sum" else 1)
        return v, v.mag

    def op_reduce(self) -> Val | None:
        v = self.pick(lambda w: not w.is_bool)
        if v is None:
            return None
        rank = len(v.shape)
        kind = self.choice(A.REDUCE_KINDS if v.is_float else ("sum", "prod", "max", "min"))
        axes = self.subset(range(rank), min_size=0 if self.integer(0, 9) == 0 else 1) if rank else []
        n = _size([v.shape[a] for a in axes])
        v, mag = self._accumulate(v, kind, n)
        # Negative axes are legal: spell some that way.
        spelled = [a - rank if self.integer(0, 3) == 0 else a for a in axes]
        exact = v.exact and (kind in ("max", "min") or v.is_int)
        return self.emit(A.ReduceOp(v.ssa, kind, spelled), mag, exact, v.lo if kind in ("max", "min", "mean") else 0.0)

    def op_scan(self) -> Val | None:
        v = self.pick(lambda w: not w.is_bool)
        if v is None:
            return None
        kind = self.choice(A.SCAN_KINDS)
        axis = self.integer(0, max(len(v.shape) - 1, 0))
        exclusive, reverse = self.flag(), self.flag()
        v, mag = self._accumulate(v, kind, v.shape[axis] if v.shape else 1)
        if exclusive and kind in ("max", "min"):
            mag = math.inf  # the identity is -inf / +inf (INT_MIN / INT_MAX)
        exact = v.exact and (kind in ("max", "min") or v.is_int)
        op = A.ScanOp(v.ssa, kind, axis, exclusive, reverse)
        return self.emit(op, mag, exact, feature=f"scan_{kind}" + "_exclusive" * exclusive + "_reverse" * reverse)

    def row_input(self, w: Val) -> bool:
        """Whether `w` may be the row operand of softmax / layer_norm."""
        return not w.is_dense_constant or self.allowed("row_op_of_dense_constant")

    def op_softmax(self) -> Val | None:
        v = self.pick(lambda w: w.is_float and len(w.shape) >= 1 and self.row_input(w))
        if v is None:
            return None
        if v.is_dense_constant:
            self.features.add("row_op_of_dense_constant")
        log = self.flag()
        rank = len(v.shape)
        axis = self.integer(-rank, rank - 1)
        v = self.tame(v, 20.0)
        n = v.shape[axis]
        if log:
            return self.emit(A.LogSoftmaxOp(v.ssa, axis), 2 * v.mag + math.log(n) + 1, False)
        return self.emit(A.SoftmaxOp(v.ssa, axis), 1.0, False)

    def op_layer_norm(self) -> Val | None:
        min_rank = 1 if self.allowed("layer_norm_rank1") else 2
        v = self.pick(lambda w: w.is_float and len(w.shape) >= min_rank and self.row_input(w))
        if v is None:
            return None
        if v.is_dense_constant:
            self.features.add("row_op_of_dense_constant")
        n = v.shape[-1]
        x = self.tame(v, 10.0)
        vec = (n,)
        gamma = self.tame(self.pick(lambda w: w.is_float and w.shape == vec) or self.some_constant(vec, f32), 4.0)
        beta = self.tame(self.pick(lambda w: w.is_float and w.shape == vec) or self.some_constant(vec, f32), 4.0)
        eps = self.choice([1e-5, 1e-3])
        op = A.LayerNormOp(x.ssa, gamma.ssa, beta.ssa, eps)
        feature = "layer_norm_rank1" if len(v.shape) == 1 else "layer_norm"
        return self.emit(op, math.sqrt(n) * gamma.mag + beta.mag, False, feature=feature)

    def op_dot(self) -> Val | None:
        a = self.pick(lambda w: not w.is_bool and len(w.shape) >= 1)
        if a is None:
            return None
        sa = a.shape
        b = self.pick(lambda w: w.et == a.et and len(w.shape) >= 1 and bool(set(w.shape) & set(sa)))
        how = self.choice(["pool", "matmul", "batched"]) if b is not None else self.choice(["matmul", "batched"])
        if how == "pool":
            sb = b.shape
            pairs = [(i, j) for i in range(len(sa)) for j in range(len(sb)) if sa[i] == sb[j]]
            chosen: list[tuple[int, int]] = []
            for i, j in self.draw(st.lists(st.sampled_from(pairs), min_size=1, max_size=3, unique=True)):
                if all(i != x and j != y for x, y in chosen):
                    chosen.append((i, j))
            nb = self.integer(0, len(chosen) - 1)
            batch, contract = chosen[:nb], chosen[nb:]
            lb, rb = [i for i, _ in batch], [j for _, j in batch]
            lc, rc = [i for i, _ in contract], [j for _, j in contract]
        else:
            # a [.., K] · b [K, N] or a [B, .., K] · b [B, K, N], b a constant.
            k = sa[-1]
            n = self.choice(DIMS)
            if how == "batched" and len(sa) >= 2:
                sb, lb, rb, lc, rc = (sa[0], k, n), [0], [0], [len(sa) - 1], [1]
            else:
                sb, lb, rb, lc, rc = (k, n), [], [], [len(sa) - 1], [0]
            if _size(sb) > 1024:
                return None
            b = self.constant(sb, a.et) if self.flag() or _size(sb) > 256 else self.some_constant(sb, a.et)
        shape = A.infer_dot_general(sa, b.shape, lb, rb, lc, rc)
        if len(shape) > MAX_RANK or _size(shape) > MAX_ELEMENTS:
            return None
        k = _size([sa[i] for i in lc])
        if a.is_float:
            a, b = self.tame(a, 4.0), self.tame(b, 4.0)
        else:
            lim = max(1, int(math.sqrt(INT_LIMIT / max(k, 1))))
            a, b = self.tame(a, lim), self.tame(b, lim)
        op = A.DotGeneralOp(a.ssa, b.ssa, lb, rb, lc, rc)
        feature = "dot_batched" if lb else "dot"
        return self.emit(op, a.mag * b.mag * k, a.is_int, feature=feature)

    #: Ops a loop body draws from (an iterate in a body makes a nested loop).
    BODY_OPS = ("unary", "binary", "dot", "reduce", "scan", "softmax", "transpose", "iterate")
    #: Loops nest at most this deep.
    MAX_LOOP_DEPTH = 2

    def op_iterate(self) -> Val | None:
        v = self.pick(lambda w: not w.is_bool)
        if v is None or self.depth >= self.MAX_LOOP_DEPTH:
            return None
        inits = [v]
        w = self.pick(lambda u: u is not v and not u.is_bool and u.shape == v.shape)
        if w is not None and self.flag():
            inits.append(w)
        # Carried values stay bounded: tamed in, tamed at the end of the body.
        inits = [self.tame(u, 1.0 if u.is_float else 8) for u in inits]
        count = self.integer(0, 3)
        body = Block(arg_types=[u.ssa.type for u in inits])
        outer_block, outer_pool = self.block, self.pool
        # From the second trip on, a block argument is what the body yielded.
        args = [Val(a, u.mag, u.is_int) for a, u in zip(body.args, inits, strict=True)]
        # The body sees its block arguments and the outer values of their shape.
        outer = [u for u in outer_pool if u.shape == v.shape]
        self.block, self.pool = body, args + outer
        self.depth += 1
        drawn = [o for o in self.BODY_OPS if self.allowed(o)]
        for _ in range(self.integer(1, 3)):
            before = self.count
            getattr(self, "op_" + self.choice(drawn))()
            if self.count == before:
                self.op_binary() if self.flag() else self.op_unary()
        self.depth -= 1
        yields: list[SSAValue] = []
        for a in args:
            bound = 1.0 if a.is_float else 8
            how = self.integer(0, 7)
            same_type = [y for y in yields if y.type == a.ssa.type]
            tame_outer = [u for u in outer if u.ssa.type == a.ssa.type and u.mag <= bound]
            if how == 0:
                yields.append(a.ssa)  # carried unchanged
                self.features.add("iterate_yields_carried")
            elif how == 1 and tame_outer:
                yields.append(self.choice(tame_outer).ssa)  # an outer value
                self.features.add("iterate_yields_outer")
            elif how == 2 and same_type:
                yields.append(self.choice(same_type))  # one value for two carried values
                self.features.add("iterate_yields_twice")
            else:
                last = self.pick(lambda u, a=a: u.ssa.type == a.ssa.type and all(u is not x for x in args)) or a
                yields.append(self.tame(last, bound).ssa)
        body.add_op(A.YieldOp(yields))
        self.block, self.pool = outer_block, outer_pool
        op = A.IterateOp([u.ssa for u in inits], count, Region(body))
        self.block.add_op(op)
        self.features.add("iterate" if self.depth == 0 else "iterate_nested")
        vals = [Val(r, max(u.mag, 1.0 if u.is_float else 8), u.is_int) for r, u in zip(op.results, inits, strict=True)]
        self.pool.extend(vals)
        return vals[0]

    # -- composite patterns that the schedule must recognise ------------------

    def _rows(self, r: Val, shape: tuple[int, ...]) -> SSAValue:
        """Row value `r` (one dim fewer than `shape`) broadcast back onto
        `shape`: usually along the rows (`dims` 0..r-1, the new dim last),
        1 in 3 along any other dims whose sizes fit (the column of a square
        score matrix, say), which is a different program of the same types
        that the schedule must not fuse as the usual one."""
        rank = len(shape)
        usual = list(range(rank - 1))
        candidates = [[d for d in range(rank) if d != new_dim] for new_dim in range(rank)]
        fits = [dims for dims in candidates if [shape[d] for d in dims] == list(r.shape)]
        others = [dims for dims in fits if dims != usual]
        # The usual dims fit unless r was reduced along another dim than the last.
        wanted = self.integer(0, 2) == 0 and self.allowed("broadcast_rows_permuted")
        permuted = bool(others) and (usual not in fits or wanted)
        dims = self.choice(others) if permuted else usual
        op = A.BroadcastOp(r.ssa, dims, shape)
        return self.emit(op, r.mag, r.exact, r.lo, feature="broadcast_rows_permuted" if permuted else "broadcast_rows").ssa

    def _last(self, x: Val, kind: str, mag: float, lo: float = 0.0) -> Val:
        """A reduction of `x` along its last dim, or 1 in 4 along another dim
        of the same size (a column reduction of a square matrix)."""
        rank = len(x.shape)
        same = [d for d in range(rank - 1) if x.shape[d] == x.shape[-1]]
        if same and self.integer(0, 3) == 0 and self.allowed("reduce_rows_permuted"):
            return self.emit(A.ReduceOp(x.ssa, kind, [self.choice(same)]), mag, False, lo, feature="reduce_rows_permuted")
        return self.emit(A.ReduceOp(x.ssa, kind, [rank - 1]), mag, False, lo, feature="reduce_rows")

    def primitive_softmax(self, v: Val, log: bool) -> Val:
        """softmax / log_softmax over the last dim, written with max, sub,
        exp, sum and div (or log and sub): one row pipeline all the same.
        With a reduction or a broadcast along another dim (`_last`, `_rows`)
        it is some other program, whose magnitudes are bounded here."""
        x = self.tame(v, 20.0)
        s, n = x.shape, x.shape[-1]
        mx = self._last(x, "max", x.mag)
        mxb = self._rows(mx, s)
        d = self.emit(A.SubOp(x.ssa, mxb), 2 * x.mag, False)
        usual = _usual(mx) and _usual(mxb)
        e = self.emit(A.ExpOp(d.ssa), 1.0 if usual else math.exp(d.mag), False, math.exp(-d.mag))
        sm = self._last(e, "sum", n * e.mag, e.lo * n if not usual else 1.0)
        smb = self._rows(sm, s) if not log else None
        usual = usual and _usual(sm) and (smb is None or _usual(smb))
        if log:
            lg = self.emit(A.LogOp(sm.ssa), math.log(n) if usual else d.mag + math.log(n), False)
            out = self.emit(A.SubOp(d.ssa, self._rows(lg, s)), d.mag + lg.mag, False, feature="log_softmax_primitive")
            return out
        assert smb is not None
        mag = 1.0 if usual else e.mag / (e.lo * n)
        return self.emit(A.DivOp(e.ssa, smb), mag, False, feature="softmax_primitive")

    def op_row_primitive(self) -> Val | None:
        v = self.pick(lambda w: w.is_float and len(w.shape) >= 1 and self.row_input(w))
        if v is None:
            return None
        if v.is_dense_constant:
            self.features.add("row_op_of_dense_constant")
        if self.flag():
            return self.primitive_softmax(v, self.flag())
        # layer_norm without gamma and beta: (x - mean) * rsqrt(var + eps).
        x = self.tame(v, 10.0)
        s = x.shape
        mu = self._last(x, "mean", x.mag)
        c = self.emit(A.SubOp(x.ssa, self._rows(mu, s)), 2 * x.mag, False)
        c2 = self.emit(A.MulOp(c.ssa, c.ssa), 4 * x.mag**2, False)
        var = self._last(c2, "mean", 4 * x.mag**2)
        eps = self.constant(var.shape, var.et, 1e-3)
        ve = self.emit(A.AddOp(var.ssa, eps.ssa), var.mag + 1e-3, False, 1e-3)
        inv = self.emit(A.RsqrtOp(ve.ssa), 1e-3**-0.5, False)
        invb = self._rows(inv, s)
        usual = all(_usual(w) for w in (mu, var, invb, c.ssa.owner.operands[1]))
        mag = math.sqrt(s[-1]) if usual else c.mag * inv.mag
        return self.emit(A.MulOp(c.ssa, invb), mag, False, feature="layer_norm_primitive")

    def _operand(self, shape: tuple[int, ...]) -> Val:
        """A tamed float operand of `shape`: a value of the pool or a constant."""
        v = self.pick(lambda w: w.is_float and w.shape == shape)
        if v is None:
            v = self.constant(shape, f32) if _size(shape) <= 2048 else self.some_constant(shape, f32)
        return self.tame(v, 2.0)

    def op_attention(self) -> Val | None:
        """q·kᵀ, softmax, ·v: as `accy.attention`, or as two dot_generals
        around a softmax (named or primitive), which the schedule should
        fuse into one flash-attention kernel."""
        q = self.pick(lambda w: w.is_float and len(w.shape) in (2, 3))
        if q is None:
            return None
        *batch, sq, d = q.shape
        # Often Sk = Sq and Dv = D: square scores, where only dims tell rows from columns.
        sk = sq if self.flag() else self.choice(DIMS)
        dv = d if self.flag() else self.choice(DIMS)
        if _size([*batch, sq, max(sk, dv)]) > MAX_ELEMENTS:
            return None
        q = self.tame(q, 2.0)
        scale = 1 / math.sqrt(d)
        form = self.choice(["named", "dots_named_softmax", "dots_primitive_softmax"])
        if form == "named":
            k = self._operand((*batch, sk, d))
            v = self._operand((*batch, sk, dv))
            op = A.AttentionOp(q.ssa, k.ssa, v.ssa, scale, causal=self.flag())
            return self.emit(op, v.mag, False, feature="attention_causal" if op.causal.value else "attention")
        # k as [.., Sk, D] or stored transposed [.., D, Sk]; v as [.., Sk, Dv] or [.., Dv, Sk].
        nb = len(batch)
        bdims = list(range(nb))
        k_t, v_t = self.flag(), self.flag()
        k = self._operand((*batch, d, sk) if k_t else (*batch, sk, d))
        v = self._operand((*batch, dv, sk) if v_t else (*batch, sk, dv))
        qk = A.DotGeneralOp(q.ssa, k.ssa, bdims, bdims, [nb + 1], [nb if k_t else nb + 1])
        s = self.emit(qk, 4 * d, False, feature="dot_qk" + "_kt" * k_t)
        c = self.constant(s.shape, f32, scale)
        s = self.emit(A.MulOp(s.ssa, c.ssa), 4 * d * scale, False)
        if form == "dots_named_softmax":
            p = self.emit(A.SoftmaxOp(s.ssa, -1), 1.0, False)
        else:
            p = self.primitive_softmax(s, log=False)
        op = A.DotGeneralOp(p.ssa, v.ssa, bdims, bdims, [nb + 1], [nb + 1 if v_t else nb])
        return self.emit(op, p.mag * v.mag * sk, False, feature="attention_" + form + "_vt" * v_t)

    OPS: tuple[str, ...] = (
        "unary", "binary", "cmp", "select", "cast", "broadcast", "transpose", "reshape", "slice", "concat",
        "reduce", "scan", "softmax", "layer_norm", "dot", "iterate", "row_primitive", "attention", "gather", "iota",
        "pad", "argreduce", "conv", "pool",
    )  # fmt: skip


def _usual(v: Val | SSAValue) -> bool:
    """A reduction along the last dim, or a broadcast of a row value along
    the rows (the new dim last): the usual form of a row pattern."""
    op = (v.ssa if isinstance(v, Val) else v).owner
    if isinstance(op, A.ReduceOp):
        return list(op.norm_axes()) == [len(A.shape_of(op.x)) - 1]
    if isinstance(op, A.BroadcastOp):
        return list(op.dims.get_values()) == list(range(len(A.shape_of(op.x))))
    return True


def _from_reduce(v: SSAValue) -> bool:
    """Whether `v` is a reduction or elementwise work on one (a row value)."""
    op = v.owner
    if isinstance(op, A.ReduceOp):
        return True
    return isinstance(op, A.ELEMENTWISE_OPS) and any(_from_reduce(o) for o in op.operands)


def _prime_factors(n: int) -> list[int]:
    out, p = [], 2
    while n > 1:
        while n % p == 0:
            out.append(p)
            n //= p
        p += 1
    return out


@st.composite
def arg_types(draw: Callable, square: int | None = None) -> TensorType:
    """A function argument's type: rank 1-3 over `DIMS` (every dim `square`
    when given), f32 (2 in 3), i32 (2 in 9) or i8, i16, i64 (1 in 27 each)."""
    rank = draw(st.integers(1, 3))
    sizes = st.just(square) if square is not None else st.sampled_from(DIMS)
    shape = draw(st.lists(sizes, min_size=rank, max_size=rank))
    et = draw(st.sampled_from([f32] * 18 + [i32] * 6 + list(OTHER_INTS)))
    return A.tensor(shape, et)


@st.composite
def programs(
    draw: Callable, avoid: frozenset[str] = frozenset(), min_ops: int = 2, max_ops: int = 12,
    ops: Sequence[str] = (), square: bool | None = None,
) -> Program:
    """A random well-typed program (see the module docstring). Patterns named
    in `avoid` (features, see `_Builder.allowed`) are not drawn; `ops` limits
    the ops drawn to those of `_Builder.OPS` named; `square` True gives every
    argument one size in all dims, False never (None: 1 program in 3)."""
    # Square and repeated sizes, 1 program in 3: where every dim has one
    # size, only the dims tell a row from a column, a matcher that compares
    # sizes goes wrong there.
    if square is None:
        square = draw(st.integers(0, 2)) == 0
    size = draw(st.sampled_from(SQUARE_DIMS)) if square else None
    types = draw(st.lists(arg_types(size), min_size=1, max_size=4))
    b = _Builder(draw, avoid)
    b.block = Block(arg_types=types)
    for arg in b.block.args:
        bound = FLOAT_INPUT if A.is_float(A.elem_of(arg)) else INT_INPUT
        b.pool.append(Val(arg, bound, True))
    drawn = [op for op in _Builder.OPS if b.allowed(op) and (not ops or op in ops)]
    # min_ops..max_ops drawn ops (each may add a few ops that tame its operands).
    for _ in range(draw(st.integers(min_ops, max_ops))):
        before = b.count
        getattr(b, "op_" + draw(st.sampled_from(drawn)))()
        if b.count == before:
            # Nothing fitted: a plain unary op always does (given a non-i1).
            b.op_unary() or b.op_binary()
    returnable = [v for v in b.pool if b.returnable(v)]
    computed = [v for v in returnable if isinstance(v.ssa.owner, Operation)] or returnable
    results = draw(st.lists(st.sampled_from(computed), min_size=1, max_size=3, unique_by=id))
    if draw(st.integers(0, 9)) == 0:
        results.append(b.choice(returnable))  # an argument or a value returned twice
    for v in results:
        if isinstance(v.ssa.owner, A.BroadcastOp) and _from_reduce(v.ssa.owner.x):
            b.features.add("returned_row_broadcast")
    ret = [v.ssa for v in results]
    b.block.add_op(ReturnOp(*ret))
    fn = FuncOp("main", FunctionType.from_lists(types, [r.type for r in ret]), Region(b.block))
    module = ModuleOp([fn])
    stream = io.StringIO()
    Printer(stream=stream, print_generic_format=draw(st.integers(0, 4)) == 0).print_op(module)
    return Program(stream.getvalue(), list(types), frozenset(b.features), b.count)

