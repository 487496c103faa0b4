"""The bounds verifier: proves every load and store of a kernel in bounds.

`check_bounds(func, launch)` runs a value-range analysis of the kernel's
integer and index values over its launch sizes and loop bounds, and checks
that the index of every `memref.load` / `memref.store` (and every element of
a `vector.load` / `vector.store`) lies inside its memref (a global buffer,
local or private memory). What it cannot prove is a `BoundsProblem`, with a
message naming the kernel, the op, the buffer, the index expression and the
range found; `verify_bounds` raises `OutOfBoundsError` with all of them.

The ranges are intervals, computed as MLIR's integer range analysis does,
with these sources of facts:

- work-item ids from the launch (`LaunchSizes`): `gpu.global_id` in
  [0, grid*block - 1], `gpu.thread_id` in [0, block - 1], `gpu.block_id` in
  [0, grid - 1]; `gpu.block_dim` / `gpu.grid_dim` exact;
- `scf.for`: the induction variable from the bounds (exactly the last value
  reached when lower bound, upper bound and step are constants); integer
  loop-carried values by iterating the body to a fixed point (widened to
  the type's range when they keep growing);
- guards: inside `scf.if %c`, and for the operands of `arith.select %c`,
  what `%c` says holds (`arith.cmpi` of two values, `arith.andi` of such
  conditions in the taken branch, `arith.ori` in the other; negated for
  else). A bound learnt of a value also bounds the values it was computed
  from through `+`, `-` and multiplication by a positive constant, so
  `if (i * 4 + 3 < n) load(a, i * 4)` is proved;
- an `accy_kernel.async_copy` reads its source only where its `valid`
  holds (elsewhere it writes zeros), so the source is checked under it;
- bitwise ops of non-negative values: `x & y` at most the smaller, `x | y`
  and `x ^ y` no wider than the wider (an XOR-swizzled index stays inside
  its row), each keeping the low zero bits its operands share;
- `(x / n) * n + x % n` is `x` (what a flat index delinearized and read
  row-major again is).

Anything else (a loaded integer, an integer argument, a float cast to an
integer) ranges over its whole type, so an access indexed by it is proved
only under a guard. The verifier is sound for these ops and conservative:
an index it cannot bound is an error, never a pass.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from xdsl.dialects import arith, gpu, memref, scf, vector
from xdsl.dialects.builtin import IndexType, IntegerAttr, IntegerType, MemRefType, ModuleOp, SymbolRefAttr, VectorType
from xdsl.ir import Block, BlockArgument, Operation, SSAValue

from accy.dialects.accy import KERNEL_GLOBAL_SIZE_ATTR, KernelCallOp
from accy.dialects.kernel import ASYNC_COPY_BYTES, BUFFER_ALIGN_BYTES, AsyncCopyOp, LdMatrixOp, WgmmaOp, alignment_of
from accy.dialects.types import element_bytes
from accy.env import env_flag

#: This yes/no environment variable (on: 1, true, yes, on; read by
#: accy/env.py) makes the kernelize pass verify every kernel it produces in
#: `accy-opt` pipelines too (the test suite sets it); `accy.compile` always
#: verifies them.
VERIFY_BOUNDS_ENV = "ACCY_VERIFY_BOUNDS"

INF = math.inf


def bounds_requested_by_env() -> bool:
    """Whether `$ACCY_VERIFY_BOUNDS` asks every kernelize run to verify bounds."""
    return env_flag(VERIFY_BOUNDS_ENV)


@dataclass(frozen=True)
class Interval:
    """The integers lo..hi (inclusive; infinite ends for unbounded; empty
    when lo > hi: a value on a path that never runs)."""

    lo: float
    hi: float

    @property
    def empty(self) -> bool:
        return self.lo > self.hi

    def __and__(self, other: Interval) -> Interval:
        return Interval(max(self.lo, other.lo), min(self.hi, other.hi))

    def __or__(self, other: Interval) -> Interval:
        if self.empty:
            return other
        if other.empty:
            return self
        return Interval(min(self.lo, other.lo), max(self.hi, other.hi))

    def shift(self, d: Interval) -> Interval:
        return Interval(self.lo + d.lo, self.hi + d.hi)

    def __str__(self) -> str:
        def end(x: float) -> str:
            return str(int(x)) if math.isfinite(x) else ("-inf" if x < 0 else "+inf")

        return f"[{end(self.lo)}, {end(self.hi)}]"


FULL = Interval(-INF, INF)
EMPTY = Interval(INF, -INF)


def type_range(t: object) -> Interval:
    """The values of an integer type (index is 64-bit); FULL for others."""
    if isinstance(t, IntegerType):
        bits = t.width.data
        if bits == 1:
            return Interval(-1, 0)
        return Interval(-(2 ** (bits - 1)), 2 ** (bits - 1) - 1)
    if isinstance(t, IndexType):
        return Interval(-(2**63), 2**63 - 1)
    return FULL


def _bits(t: object) -> int:
    """The width of an integer type (index is 64-bit)."""
    return t.width.data if isinstance(t, IntegerType) else 64


def _fits(r: Interval, t: object) -> bool:
    """Whether every value of `r` is a value of type `t` (nothing wraps)."""
    full = type_range(t)
    return full.lo <= r.lo and r.hi <= full.hi


def _power_of_two(n: int) -> bool:
    return n > 0 and n & (n - 1) == 0


def _wrapped_multiple(m: int, t: object) -> int:
    """What a multiple of m is still a multiple of after wrapping modulo
    2^width: the power of two in m (0, the constant 0, stays 0 only unwrapped)."""
    return math.gcd(m, 2 ** _bits(t))


def _low_zero_bits(m: int, t: object) -> int:
    """The power of two in m, a multiple (of the constant 0: 2^width, every bit zero)."""
    return m & -m if m else 2 ** _bits(t)


def _with_residues(x: Interval, c: int, lo: int, hi: int) -> Interval:
    """The smallest interval holding every value of `x` (finite, >= 0) whose
    residue modulo c lies in [lo, hi] (0 <= lo <= hi < c)."""
    a, b = int(x.lo), int(x.hi)
    ra, rb = a % c, b % c
    a += lo - ra if ra < lo else (c - ra + lo if ra > hi else 0)
    b -= rb - hi if rb > hi else (rb + c - hi if rb < lo else 0)
    return Interval(a, b)


def _clamp(r: Interval, t: object) -> Interval:
    """`r` when the type holds all of it, else the type's whole range (wraps)."""
    full = type_range(t)
    return r if full.lo <= r.lo and r.hi <= full.hi else full


def _corners(a: Interval, b: Interval, f: Callable[[float, float], float]) -> Interval:
    vals = []
    for x in (a.lo, a.hi):
        for y in (b.lo, b.hi):
            try:
                v = f(x, y)
            except (ZeroDivisionError, OverflowError, ValueError):
                return FULL
            if math.isnan(v):
                return FULL
            vals.append(v)
    return Interval(min(vals), max(vals))


def _mul(x: float, y: float) -> float:
    return 0 if x == 0 or y == 0 else x * y


def _tdiv(x: float, y: float) -> float:
    """Division truncating toward zero (arith.divsi), on possibly infinite ends."""
    if math.isinf(x) or math.isinf(y):
        q = x / y
        return q if math.isinf(q) else 0 if math.isinf(y) else q
    q = abs(int(x)) // abs(int(y))
    return q if (x >= 0) == (y > 0) else -q


def _ceil_div(x: float, y: float) -> float:
    """ceil(x / y) for x >= 0, y > 0, on possibly infinite ends."""
    if math.isinf(x):
        return x
    if math.isinf(y):
        return 0 if x == 0 else 1
    return -((-x) // y)


@dataclass(frozen=True)
class LaunchSizes:
    """Work-groups per dimension (`grid`) and work-items per work-group (`block`)."""

    grid: tuple[int, int, int]
    block: tuple[int, int, int]

    def describe(self) -> str:
        glob = [g * b for g, b in zip(self.grid, self.block, strict=True)]
        dims = max([1] + [i + 1 for i in range(3) if glob[i] != 1 or self.block[i] != 1])
        return f"global size {'x'.join(map(str, glob[:dims]))}, local size {'x'.join(map(str, self.block[:dims]))}"


@dataclass
class BoundsProblem:
    """An access the verifier could not prove in bounds."""

    kernel: str
    op: Operation
    message: str


class OutOfBoundsError(ValueError):
    """A kernel has loads or stores that are not proved in bounds."""

    def __init__(self, problems: list[BoundsProblem]) -> None:
        self.problems = problems
        super().__init__("\n".join(p.message for p in problems))


# --------------------------------------------------------------------------
# Ranges under facts
# --------------------------------------------------------------------------


@dataclass
class _Env:
    """What holds on a path: refined ranges of values (from guards), over
    the facts of the enclosing path."""

    parent: _Env | None = None
    refined: dict[SSAValue, Interval] = field(default_factory=dict)
    memo: dict[SSAValue, Interval] = field(default_factory=dict)
    multiples: dict[SSAValue, int] = field(default_factory=dict)
    #: A guard no value satisfies: the path never runs.
    dead: bool = False

    def unreachable(self) -> bool:
        env: _Env | None = self
        while env is not None:
            if env.dead:
                return True
            env = env.parent
        return False

    def lookup(self, v: SSAValue) -> Interval | None:
        env: _Env | None = self
        while env is not None:
            r = env.refined.get(v)
            if r is not None:
                return r
            env = env.parent
        return None


_CMP_SWAP = {"slt": "sgt", "sle": "sge", "sgt": "slt", "sge": "sle", "eq": "eq", "ne": "ne",
             "ult": "ugt", "ule": "uge", "ugt": "ult", "uge": "ule"}  # fmt: skip
_CMP_NOT = {"slt": "sge", "sle": "sgt", "sgt": "sle", "sge": "slt", "eq": "ne", "ne": "eq",
            "ult": "uge", "ule": "ugt", "ugt": "ule", "uge": "ult"}  # fmt: skip


class _Ranges:
    """The value ranges of one kernel under one launch."""

    def __init__(self, launch: LaunchSizes) -> None:
        self.launch = launch
        #: Ranges of block arguments and region results, set as the walk reaches them.
        self.facts: dict[SSAValue, Interval] = {}
        #: Loops whose variable is proved not to wrap (nor the step to be <= 0).
        self.no_wrap: set[scf.ForOp] = set()
        #: Loop variable -> its loop, whose bounds `symbolic_hi` reads.
        self.upper: dict[SSAValue, scf.ForOp] = {}

    def of(self, v: SSAValue, env: _Env) -> Interval:
        refined = env.lookup(v)
        if refined is not None:
            return refined
        hit = env.memo.get(v)
        if hit is not None:
            return hit
        env.memo[v] = type_range(v.type)  # a cycle (never in SSA) stays unbounded
        r = self._compute(v, env) & type_range(v.type)
        env.memo[v] = r
        return r

    def _compute(self, v: SSAValue, env: _Env) -> Interval:
        if v in self.facts:
            r = self.facts[v]
            if v in self.upper and not r.empty:
                return Interval(r.lo, min(r.hi, self.symbolic_hi(v, env)))
            return r
        if isinstance(v, BlockArgument):
            return type_range(v.type)
        op = v.owner
        assert isinstance(op, Operation)
        t = v.type
        if isinstance(op, arith.ConstantOp) and isinstance(op.value, IntegerAttr):
            x = op.value.value.data
            return Interval(x, x)
        if isinstance(op, gpu.GlobalIdOp | gpu.ThreadIdOp | gpu.BlockIdOp | gpu.BlockDimOp | gpu.GridDimOp):
            d = "xyz".index(op.dimension.data.value)
            g, b = self.launch.grid[d], self.launch.block[d]
            return {
                gpu.GlobalIdOp: Interval(0, g * b - 1),
                gpu.ThreadIdOp: Interval(0, b - 1),
                gpu.BlockIdOp: Interval(0, g - 1),
                gpu.BlockDimOp: Interval(b, b),
                gpu.GridDimOp: Interval(g, g),
            }[type(op)]
        if isinstance(op, arith.IndexCastOp | arith.ExtSIOp | arith.TruncIOp):
            return _clamp(self.of(op.operands[0], env), t)
        if isinstance(op, arith.ExtUIOp):
            r = self.of(op.operands[0], env)
            return r if r.lo >= 0 else type_range(t)
        if isinstance(op, arith.SelectOp):
            true_env, false_env = self.assume(op.cond, env)
            return self.of(op.lhs, true_env) | self.of(op.rhs, false_env)
        if isinstance(op, arith.CmpiOp):
            return Interval(-1, 0)
        if len(op.operands) == 2 and isinstance(t, IntegerType | IndexType):
            return self._binary(op, env, t)
        return type_range(t)

    def _binary(self, op: Operation, env: _Env, t: object) -> Interval:
        a_v, b_v = op.operands
        a, b = self.of(a_v, env), self.of(b_v, env)
        if a.empty or b.empty:
            return EMPTY
        if isinstance(op, arith.AddiOp):
            same = _delinearized(a_v, b_v) or _delinearized(b_v, a_v)
            if same is not None:
                # x, and no more than its parts allow (a guard may bound x % n alone).
                return self.of(same, env) & _clamp(a.shift(b), t)
        if isinstance(op, arith.AddiOp | arith.SubiOp | arith.MuliOp):
            exact = self.exact(op, env)
            if exact is None:
                return type_range(t)  # it may wrap: any value of the type
            return exact if isinstance(op, arith.MuliOp) else self._symbolic(op.results[0], exact, env)
        if isinstance(op, arith.DivSIOp | arith.DivUIOp | arith.FloorDivSIOp):
            if isinstance(op, arith.DivUIOp | arith.FloorDivSIOp) and (a.lo < 0 or b.lo < 0):
                return type_range(t)
            if b.lo <= 0 <= b.hi:
                return type_range(t)
            return _clamp(_corners(a, b, _tdiv), t)
        if isinstance(op, arith.CeilDivSIOp | arith.CeilDivUIOp):
            if a.lo < 0 or b.lo <= 0:
                return type_range(t)
            return _clamp(_corners(a, b, _ceil_div), t)
        if isinstance(op, arith.RemSIOp | arith.RemUIOp):
            if b.lo <= 0:
                return type_range(t)
            # A multiple of b leaves 0; unsigned, only where the bits of a
            # negative a are a multiple too (b a power of two divides 2^w).
            if b.lo == b.hi and self.multiple(a_v, env) % b.lo == 0 and (
                isinstance(op, arith.RemSIOp) or a.lo >= 0 or _power_of_two(int(b.lo))
            ):
                return Interval(0, 0)
            # The remainder is a multiple of what a and b share (r = a - q*b,
            # exactly): its ends round inward to it (`col % 16` with col a
            # multiple of 4 is at most 12).
            g = self.multiple(op.results[0], env)
            if a.lo >= 0:
                r = Interval(0, min(a.hi, b.hi - 1)) if a.hi >= b.lo else a
            elif isinstance(op, arith.RemUIOp):
                return type_range(t)
            else:
                r = Interval(max(a.lo, -(b.hi - 1)), min(max(a.hi, 0), b.hi - 1))
            return Interval(-((-r.lo) // g) * g, (r.hi // g) * g) if g > 1 else r
        if isinstance(op, arith.MaxSIOp) or isinstance(op, arith.MaxUIOp | arith.MinUIOp) and a.lo >= 0 and b.lo >= 0:
            # Unsigned max and min are the signed ones where both are >= 0.
            if isinstance(op, arith.MinUIOp):
                return Interval(min(a.lo, b.lo), min(a.hi, b.hi))
            return Interval(max(a.lo, b.lo), max(a.hi, b.hi))
        if isinstance(op, arith.MinSIOp):
            return Interval(min(a.lo, b.lo), min(a.hi, b.hi))
        if isinstance(op, arith.MinUIOp) and (a.lo >= 0 or b.lo >= 0):
            # A negative operand is a huge unsigned value: the other is less.
            return Interval(0, min(x.hi for x in (a, b) if x.lo >= 0))
        if isinstance(op, arith.AndIOp) and (a.lo >= 0 or b.lo >= 0):
            return Interval(0, min(x.hi for x in (a, b) if x.lo >= 0))
        if isinstance(op, arith.XOrIOp | arith.OrIOp) and a.lo >= 0 and b.lo >= 0 and max(a.hi, b.hi) < INF:
            # No bit above the higher operand's highest (an XOR-swizzled
            # index, `chunk ^ (row % 4)`, stays inside its row), and no bit
            # below the low zero bits both have (`col ^ (row % 4) * 8`, col
            # a multiple of 8, is at most the row's last multiple of 8).
            top = 2 ** int(max(a.hi, b.hi)).bit_length() - 1
            g = self.multiple(op.results[0], env)
            lo = max(a.lo, b.lo) if isinstance(op, arith.OrIOp) else 0
            return _clamp(Interval(-((-lo) // g) * g, (top // g) * g), t)
        # A shift by the width or more is poison: any value.
        if isinstance(op, arith.ShLIOp) and b.lo >= 0 and b.hi < _bits(t):
            return _clamp(_corners(a, b, lambda x, y: x * 2**y), t)
        if isinstance(op, arith.ShRSIOp | arith.ShRUIOp) and a.lo >= 0 and b.lo >= 0 and b.hi < _bits(t):
            return Interval(a.lo // 2**b.hi, a.hi)
        return type_range(t)

    # -- guards ------------------------------------------------------------

    def assume(self, cond: SSAValue, env: _Env) -> tuple[_Env, _Env]:
        """The paths where `cond` (an i1) holds and where it does not."""
        yes, no = _Env(env), _Env(env)
        self._learn(cond, True, yes, env)
        self._learn(cond, False, no, env)
        return yes, no

    def _learn(self, cond: SSAValue, holds: bool, into: _Env, env: _Env, depth: int = 0) -> None:
        op = cond.owner
        if depth > 8 or not isinstance(op, Operation):
            return
        if isinstance(op, arith.AndIOp) and holds or isinstance(op, arith.OrIOp) and not holds:
            for c in op.operands:
                self._learn(c, holds, into, env, depth + 1)
        elif isinstance(op, arith.XOrIOp):
            a, b = op.operands
            for x, other in ((a, b), (b, a)):
                r = self.of(other, env)
                if r.lo == r.hi == -1 or r.lo == r.hi == 1:  # xor with true: not
                    self._learn(x, not holds, into, env, depth + 1)
        elif isinstance(op, arith.CmpiOp):
            pred = arith.CMPI_COMPARISON_OPERATIONS[op.predicate.value.data]
            if not holds:
                pred = _CMP_NOT[pred]
            a, b = op.lhs, op.rhs
            self._compare(a, pred, b, into, env)
            self._compare(b, _CMP_SWAP[pred], a, into, env)

    def _compare(self, a: SSAValue, pred: str, b: SSAValue, into: _Env, env: _Env) -> None:
        """Learns what `a pred b` says of `a`."""
        rb = self.of(b, env)
        if pred in ("ult", "ule"):
            if rb.lo < 0:
                return  # b may be a huge unsigned value
            pred = "slt" if pred == "ult" else "sle"
            self.refine(a, Interval(0, INF), into)
        bound = {
            "slt": Interval(-INF, rb.hi - 1),
            "sle": Interval(-INF, rb.hi),
            "sgt": Interval(rb.lo + 1, INF),
            "sge": Interval(rb.lo, INF),
            "eq": rb,
        }.get(pred)
        if bound is not None:
            self.refine(a, bound, into)

    def exact(self, op: Operation, env: _Env) -> Interval | None:
        """The range of `+`, `-` or `*` op `op` as a sum or product of
        integers, when no values of its operands' ranges make it wrap in its
        type; None when some may (or for another op). Only then is the op
        the integer operation that guards are inverted through and linear
        forms add up."""
        if not isinstance(op, arith.AddiOp | arith.SubiOp | arith.MuliOp):
            return None
        a, b = (self.of(x, env) for x in op.operands)
        if a.empty or b.empty:
            return EMPTY
        if isinstance(op, arith.AddiOp):
            r = a.shift(b)
        elif isinstance(op, arith.SubiOp):
            r = Interval(a.lo - b.hi, a.hi - b.lo)
        else:
            r = _corners(a, b, _mul)
        return r if _fits(r, op.results[0].type) else None

    def _exact_in(self, env: _Env) -> Callable[[Operation], bool]:
        return lambda op: self.exact(op, env) is not None

    def refine(self, v: SSAValue, bound: Interval, into: _Env, depth: int = 0) -> None:
        """Records that `v` lies within `bound` on the path `into`, and what
        that says of the values `v` was computed from: through `+`, `-`, `*`
        only where the op cannot wrap on its operands' ranges (x + 1 <= 16
        says nothing of x when x may be INT_MAX), through casts only where
        the operand's range fits the result type."""
        r = self.of(v, into) & bound
        m = self.multiple(v, into)
        if m > 1 and not r.empty:
            # v is a multiple of m: its ends are too (`col < 48` with col a
            # multiple of 16 is col <= 32).
            r = Interval(r.lo if math.isinf(r.lo) else -((-r.lo) // m) * m, r.hi if math.isinf(r.hi) else (r.hi // m) * m)
        into.refined[v] = r
        into.memo.clear()
        into.multiples.clear()
        if r.empty:
            into.dead = True
        op = v.owner
        if depth > 4 or not isinstance(op, Operation) or r.empty:
            return
        if isinstance(op, arith.AddiOp | arith.SubiOp | arith.MuliOp) and self.exact(op, into) is None:
            return  # it may wrap: v says nothing of its operands
        if isinstance(op, arith.AddiOp | arith.SubiOp):
            x, y = op.operands
            rx, ry = self.of(x, into), self.of(y, into)
            if isinstance(op, arith.AddiOp):
                self.refine(x, Interval(r.lo - ry.hi, r.hi - ry.lo), into, depth + 1)
                self.refine(y, Interval(r.lo - rx.hi, r.hi - rx.lo), into, depth + 1)
            else:
                self.refine(x, Interval(r.lo + ry.lo, r.hi + ry.hi), into, depth + 1)
        elif isinstance(op, arith.MuliOp):
            for x, y in (op.operands, reversed(op.operands)):
                c = self.of(y, into)
                if c.lo == c.hi and c.lo > 0:
                    lo = -INF if math.isinf(r.lo) else -((-r.lo) // c.lo)
                    hi = INF if math.isinf(r.hi) else r.hi // c.lo
                    self.refine(x, Interval(lo, hi), into, depth + 1)
        elif isinstance(op, arith.DivSIOp | arith.DivUIOp):
            c = self.of(op.operands[1], into)
            if isinstance(op, arith.DivUIOp) and self.of(op.operands[0], into).lo < 0:
                return  # a negative x is a huge unsigned one
            if c.lo == c.hi and c.lo > 0:
                n = c.lo
                lo = -INF if math.isinf(r.lo) else r.lo * n if r.lo > 0 else r.lo * n - (n - 1)
                hi = INF if math.isinf(r.hi) else r.hi * n + (n - 1) if r.hi >= 0 else r.hi * n
                self.refine(op.operands[0], Interval(lo, hi), into, depth + 1)
        elif isinstance(op, arith.RemSIOp | arith.RemUIOp):
            # x % c in [lo, hi] for x >= 0: x's ends move to the nearest
            # values with such a residue (`gid % 2 < 1` with gid <= 113 is
            # gid <= 112: a concat's piece read at gid + 1).
            x = op.operands[0]
            c, rx = self.of(op.operands[1], into), self.of(x, into)
            if c.lo == c.hi and c.lo > 0 and rx.lo >= 0 and not math.isinf(rx.hi) and 0 <= r.lo <= r.hi < c.lo:
                self.refine(x, _with_residues(rx, int(c.lo), int(r.lo), int(r.hi)), into, depth + 1)
        elif isinstance(op, arith.IndexCastOp | arith.ExtSIOp | arith.TruncIOp):
            # Exact where x's values are all values of the result type (a
            # truncating cast of j = 2^32 + 1 to i32 is 1, and bounds no j).
            x = op.operands[0]
            if _fits(self.of(x, into), op.results[0].type):
                self.refine(x, r, into, depth + 1)

    def multiple(self, v: SSAValue, env: _Env, depth: int = 0) -> int:
        """A number `v` is always a multiple of (1 when nothing is known; 0
        for the constant 0): from constants, sums, products, casts, and loop
        variables whose start and step are multiples, left shifts. Through an op that may
        wrap (on the ranges of `env`), only the power of two in it stays:
        43 * 3 wraps to -127 in i8."""
        hit = env.multiples.get(v)
        if hit is not None:
            return hit
        m = 1
        op = v.owner
        t = v.type
        if isinstance(op, arith.ConstantOp) and isinstance(op.value, IntegerAttr):
            m = abs(op.value.value.data)
        elif depth < 12 and isinstance(op, arith.AddiOp | arith.SubiOp | arith.MuliOp):
            a, b = (self.multiple(x, env, depth + 1) for x in op.operands)
            m = a * b if isinstance(op, arith.MuliOp) else math.gcd(a, b)
            if self.exact(op, env) is None:
                m = _wrapped_multiple(m, t)
        elif depth < 12 and isinstance(op, arith.RemSIOp | arith.RemUIOp):
            # a % b = a - q*b exactly, so it is a multiple of whatever divides
            # both; unsigned, a negative a is a + 2^width, of which only the
            # power of two in a's multiple survives.
            a_v, b_v = op.operands
            a = self.multiple(a_v, env, depth + 1)
            if isinstance(op, arith.RemUIOp) and self.of(a_v, env).lo < 0:
                a = _wrapped_multiple(a, t)
            m = math.gcd(a, self.multiple(b_v, env, depth + 1))
        elif depth < 12 and isinstance(op, arith.XOrIOp | arith.OrIOp | arith.AndIOp):
            # Bitwise: the low zero bits both operands have (AND: either has).
            a, b = (_low_zero_bits(self.multiple(x, env, depth + 1), t) for x in op.operands)
            m = max(a, b) if isinstance(op, arith.AndIOp) else min(a, b)
        elif depth < 12 and isinstance(op, arith.ShLIOp):
            # x << c is x * 2^c; wrapped, the power of two in it stays (a
            # shift by the width or more is poison: nothing known).
            c = self.of(op.operands[1], env)
            if c.lo == c.hi and 0 <= c.lo < _bits(t):
                m = _wrapped_multiple(self.multiple(op.operands[0], env, depth + 1) * 2 ** int(c.lo), t)
        elif depth < 12 and isinstance(op, arith.IndexCastOp | arith.ExtSIOp | arith.TruncIOp):
            x = op.operands[0]
            m = self.multiple(x, env, depth + 1)
            if not _fits(self.of(x, env), t):
                m = _wrapped_multiple(m, t)
        elif isinstance(v, BlockArgument) and isinstance(v.block.parent_op(), scf.ForOp) and v.index == 0:
            loop = v.block.parent_op()
            assert isinstance(loop, scf.ForOp)
            m = math.gcd(self.multiple(loop.lb, env, depth + 1), self.multiple(loop.step, env, depth + 1))
            if loop not in self.no_wrap:
                m = _wrapped_multiple(m, t)
        env.multiples[v] = m
        return m

    # -- loop variables below a bound that depends on other values ---------

    def _symbolic(self, v: SSAValue, r: Interval, env: _Env) -> Interval:
        """`r` (the interval of a sum) tightened by the interval of its
        linear form (where terms cancel) and `symbolic_lo` / `symbolic_hi`."""
        form = _linear(v, exact=self._exact_in(env))
        if form is not None and v not in form[0]:
            lo = hi = float(form[1])
            for a, k in form[0].items():
                ra = self.of(a, env)
                lo += k * (ra.lo if k > 0 else ra.hi) if not math.isinf(ra.lo if k > 0 else ra.hi) else -INF
                hi += k * (ra.hi if k > 0 else ra.lo) if not math.isinf(ra.hi if k > 0 else ra.lo) else INF
            r = r & Interval(lo, hi)
        hi = min(r.hi, self.symbolic_hi(v, env)) if self.upper else r.hi
        return Interval(max(r.lo, self.symbolic_lo(v, env)), hi)

    def symbolic_lo(self, v: SSAValue, env: _Env) -> float:
        """A lower bound of `v` found by replacing a `min(a, b)` in its linear
        form (with a positive coefficient) by a and by b in turn, so that
        `min(x + 4096, n) - x` is at least min(4096, n - x.hi)."""
        exact = self._exact_in(env)
        form = _linear(v, exact=exact)
        if form is None:
            return -INF
        coefs, const = form
        for atom, c in coefs.items():
            choices = _min_operands(atom)
            if c <= 0 or len(choices) < 2:
                continue
            lows = []
            for choice in choices[1:]:
                sub = _linear(choice, exact=exact)
                if sub is None:
                    return -INF
                terms = dict(coefs)
                del terms[atom]
                for a, k in sub[0].items():
                    terms[a] = terms.get(a, 0) + c * k
                lo = const + c * sub[1]
                for a, k in terms.items():
                    if k:
                        r = self.of(a, env)
                        lo += k * (r.lo if k > 0 else r.hi)
                lows.append(lo)
            return min(lows)
        return -INF

    def symbolic_hi(self, v: SSAValue, env: _Env) -> float:
        """An upper bound of `v` found by replacing each loop variable in its
        linear form by its loop's upper bound minus the step when the trip
        covers whole steps, else minus one (each bound of a `min`), so that
        `i0 + i1` with `i1 < min(4, 7 - i0)` is at most 6. In the upper
        bound, `(x / c) * c` (x >= 0) counts as x."""
        def nonneg(x: SSAValue) -> bool:
            return self.of(x, env).lo >= 0

        exact = self._exact_in(env)
        form = _linear(v, exact=exact)
        if form is None:
            return INF
        coefs, const = form
        best = INF
        for iv, c in coefs.items():
            loop = self.upper.get(iv)
            if loop is None or c <= 0:
                continue
            step = 1
            st = self.of(loop.step, env)
            lin_lb, lin_ub = _linear(loop.lb, exact=exact), _linear(loop.ub, exact=exact)
            if st.lo == st.hi and st.lo > 1 and lin_lb is not None and lin_ub is not None:
                diff = dict(lin_ub[0])
                for a, k in lin_lb[0].items():
                    diff[a] = diff.get(a, 0) - k
                if all(k % st.lo == 0 for k in diff.values()) and (lin_ub[1] - lin_lb[1]) % st.lo == 0:
                    step = int(st.lo)
            for bound in _min_operands(loop.ub):
                sub = _linear(bound, upper=nonneg, exact=exact)
                if sub is None:
                    continue
                terms = dict(coefs)
                del terms[iv]
                for a, k in sub[0].items():
                    terms[a] = terms.get(a, 0) + c * k
                hi = const + c * (sub[1] - step)
                for a, k in terms.items():
                    if k:
                        r = self.of(a, env)
                        hi += k * (r.hi if k > 0 else r.lo)
                best = min(best, hi)
        return best


def _delinearized(prod: SSAValue, rem: SSAValue) -> SSAValue | None:
    """x when `prod` is (x / n) * n and `rem` is x % n (n a constant > 0)."""
    p, r = prod.owner, rem.owner
    if not isinstance(p, arith.MuliOp) or not isinstance(r, arith.RemSIOp | arith.RemUIOp):
        return None
    x, n = r.operands
    for q, m in (p.operands, reversed(p.operands)):
        d = q.owner
        if isinstance(d, arith.DivSIOp | arith.DivUIOp) and d.operands[0] is x and _same_constant(d.operands[1], n) and _same_constant(m, n):
            return x
    return None


def _linear(
    v: SSAValue, depth: int = 0, upper: Callable[[SSAValue], bool] | None = None, sign: int = 1,
    exact: Callable[[Operation], bool] = lambda op: False,
) -> tuple[dict[SSAValue, int], int] | None:
    """`v` as sum(coefficient * value) + constant over `+`, `-` and products
    with constants that `exact` says cannot wrap (an op that may is a term
    of its own). With `upper` (which says whether a value is >= 0), an
    upper bound of `v` instead: where a term counts positively, `(x / c) * c`
    with `upper(x)` becomes x."""
    op = v.owner
    if isinstance(op, arith.ConstantOp) and isinstance(op.value, IntegerAttr):
        return {}, op.value.value.data
    if depth < 8 and isinstance(op, arith.AddiOp | arith.SubiOp | arith.MuliOp) and exact(op):
        if isinstance(op, arith.MuliOp):
            if upper is not None and sign > 0:
                for q, m in (op.operands, reversed(op.operands)):
                    d = q.owner
                    if isinstance(d, arith.DivSIOp | arith.DivUIOp) and _same_constant(d.operands[1], m) and upper(d.operands[0]):
                        return _linear(d.operands[0], depth + 1, upper, sign, exact)
            a, b = (_linear(x, depth + 1, exact=exact) for x in op.operands)
            if a is None or b is None or a[0] and b[0]:
                return {v: 1}, 0
            (terms, k), c = (a, b[1]) if not b[0] else (b, a[1])
            if upper is not None:
                inner = _linear(op.operands[0] if not b[0] else op.operands[1], depth + 1, upper, sign * (1 if c >= 0 else -1), exact)
                if inner is not None:
                    terms, k = inner
            return {x: n * c for x, n in terms.items()}, k * c
        s = 1 if isinstance(op, arith.AddiOp) else -1
        a = _linear(op.operands[0], depth + 1, upper, sign, exact)
        b = _linear(op.operands[1], depth + 1, upper, sign * s, exact)
        if a is None or b is None:
            return {v: 1}, 0
        terms = dict(a[0])
        for x, n in b[0].items():
            terms[x] = terms.get(x, 0) + s * n
        return _merge_div_rem(terms), a[1] + s * b[1]
    return {v: 1}, 0


def _merge_div_rem(terms: dict[SSAValue, int]) -> dict[SSAValue, int]:
    """`terms` with each c * n * (x / n) + c * (x % n) replaced by c * x (n a
    positive constant; true of truncating division at any sign)."""
    for r, c in list(terms.items()):
        op = r.owner
        if not c or not isinstance(op, arith.RemSIOp) or r not in terms:
            continue
        x, n = op.operands
        nv = n.owner
        if not isinstance(nv, arith.ConstantOp) or not isinstance(nv.value, IntegerAttr) or nv.value.value.data <= 0:
            continue
        for d, k in list(terms.items()):
            dop = d.owner
            if isinstance(dop, arith.DivSIOp) and dop.operands[0] is x and _same_constant(dop.operands[1], n) and k == c * nv.value.value.data:
                del terms[d]
                del terms[r]
                terms[x] = terms.get(x, 0) + c
                break
    return {x: k for x, k in terms.items() if k}


def _min_operands(v: SSAValue) -> list[SSAValue]:
    """Values `v` is at most: itself, and both operands of a `min`
    (`arith.minsi`, or `select(a < b, a, b)` as the builders write it)."""
    op = v.owner
    if isinstance(op, arith.MinSIOp):
        return [v, *op.operands]
    if isinstance(op, arith.SelectOp) and isinstance(op.cond.owner, arith.CmpiOp):
        cmp = op.cond.owner
        pred = arith.CMPI_COMPARISON_OPERATIONS[cmp.predicate.value.data]
        if pred in ("slt", "sle") and (cmp.lhs, cmp.rhs) == (op.lhs, op.rhs):
            return [v, op.lhs, op.rhs]
        if pred in ("sgt", "sge") and (cmp.lhs, cmp.rhs) == (op.rhs, op.lhs):
            return [v, op.lhs, op.rhs]
    return [v]


def _same_constant(a: SSAValue, b: SSAValue) -> bool:
    if a is b:
        return True
    ca, cb = a.owner, b.owner
    return (
        isinstance(ca, arith.ConstantOp) and isinstance(cb, arith.ConstantOp) and ca.value == cb.value
        and isinstance(ca.value, IntegerAttr) and ca.value.value.data > 0
    )


# --------------------------------------------------------------------------
# The walk
# --------------------------------------------------------------------------


class _Names:
    """How the messages spell values: loop variables i0, i1, ..., ids by name."""

    def __init__(self, func: gpu.FuncOp) -> None:
        self.func = func
        self.loops: dict[SSAValue, str] = {}
        for op in func.walk():
            if isinstance(op, scf.ForOp):
                body = op.body.block
                self.loops[body.args[0]] = f"i{len([n for n in self.loops.values() if n.startswith('i')])}"
                for k, a in enumerate(body.args[1:]):
                    self.loops[a] = f"{self.loops[body.args[0]]}.carried{k}"

    def expr(self, v: SSAValue, depth: int = 0) -> str:
        if v in self.loops:
            return self.loops[v]
        if isinstance(v, BlockArgument):
            return f"arg{v.index}" if v.block is self.func.body.block else f"%{v.name_hint or 'arg'}"
        op = v.owner
        assert isinstance(op, Operation)
        if isinstance(op, arith.ConstantOp) and isinstance(op.value, IntegerAttr):
            return str(op.value.value.data)
        if depth > 6:
            return "..."
        ids = {gpu.GlobalIdOp: "global_id", gpu.ThreadIdOp: "local_id", gpu.BlockIdOp: "group_id",
               gpu.BlockDimOp: "local_size", gpu.GridDimOp: "num_groups"}  # fmt: skip
        if type(op) in ids:
            return f"{ids[type(op)]}({op.dimension.data.value})"  # type: ignore[attr-defined]
        sub = [self.expr(o, depth + 1) for o in op.operands]
        infix = {arith.AddiOp: "+", arith.SubiOp: "-", arith.MuliOp: "*", arith.DivSIOp: "/", arith.DivUIOp: "/",
                 arith.RemSIOp: "%", arith.RemUIOp: "%", arith.AndIOp: "&", arith.OrIOp: "|"}  # fmt: skip
        if type(op) in infix:
            return f"({sub[0]} {infix[type(op)]} {sub[1]})" if depth else f"{sub[0]} {infix[type(op)]} {sub[1]}"
        if isinstance(op, arith.IndexCastOp | arith.ExtSIOp | arith.ExtUIOp):
            return sub[0]
        if isinstance(op, arith.CmpiOp):
            sym = {"eq": "==", "ne": "!=", "slt": "<", "sle": "<=", "sgt": ">", "sge": ">=",
                   "ult": "<u", "ule": "<=u", "ugt": ">u", "uge": ">=u"}  # fmt: skip
            return f"({sub[0]} {sym[arith.CMPI_COMPARISON_OPERATIONS[op.predicate.value.data]]} {sub[1]})"
        if isinstance(op, arith.SelectOp):
            return f"select{tuple(sub)}".replace("'", "")
        short = op.name.split(".")[-1]
        if isinstance(op, memref.LoadOp):
            return f"{self.buffer(op.memref)}[{sub[1]}]"
        return f"{short}({', '.join(sub)})"

    def buffer(self, mem: SSAValue) -> str:
        if isinstance(mem, BlockArgument) and mem.block is self.func.body.block:
            return f"buffer #{mem.index}"
        op = mem.owner
        if isinstance(op, memref.AllocaOp):
            space = op.memref.type.memory_space
            local = "workgroup" in str(space)
            return "local memory" if local else "private memory"
        return "memory"


def check_bounds(
    func: gpu.FuncOp, launch: LaunchSizes, where: Callable[[Operation], str | None] | None = None
) -> list[BoundsProblem]:
    """The loads and stores of kernel `func` not proved in bounds when it
    runs with `launch` (empty: all proved). `where(op)` may name the
    source of an op (a file and line) for the messages."""
    ranges = _Ranges(launch)
    names = _Names(func)
    problems: list[BoundsProblem] = []
    kernel = func.sym_name.data

    def check(op: Operation, mem: SSAValue, index: list[SSAValue], width: int, env: _Env) -> None:
        t = mem.type
        if not isinstance(t, MemRefType):
            return
        shape = t.get_shape()
        if len(index) != len(shape):
            return
        for d, (i, n) in enumerate(zip(index, shape, strict=True)):
            w = width if d == len(shape) - 1 else 1
            r = ranges.of(i, env)
            if r.empty or env.unreachable():
                continue  # a path that never runs
            if n < 0 or r.lo < 0 or r.hi + w - 1 > n - 1:
                problems.append(BoundsProblem(kernel, op, _message(kernel, op, mem, t, names, i, r, n, w, d, launch, where)))

    def check_alignment(op: Operation, claim: int, mem: SSAValue, index: list[SSAValue], env: _Env) -> None:
        """An aligned access's promise (accy_kernel's `aligned_access`,
        ldmatrix's rows, async copies): a base at least as aligned (a buffer
        argument, or an alloca of that alignment) and a flat index whose
        multiple of the element's bytes is a multiple of the alignment."""
        t = mem.type
        assert isinstance(t, MemRefType)
        alloca = mem.owner if isinstance(mem.owner, memref.AllocaOp) else None
        if isinstance(mem, BlockArgument) and mem.block is func.body.block:
            base = BUFFER_ALIGN_BYTES % claim == 0
        else:
            base = alloca is not None and alloca.alignment is not None and alloca.alignment.value.data >= claim
        step = ranges.multiple(index[-1], env) if len(index) == 1 else 1
        nbytes = element_bytes(t.element_type)
        if base and (step * nbytes) % claim == 0:
            return
        what = "its base" if not base else f"its index ({names.expr(index[-1])}, a multiple of {step})"
        message = f"kernel @{kernel}: {op.name} promises {claim}-byte alignment in {names.buffer(mem)}, but {what} does not prove it"
        problems.append(BoundsProblem(kernel, op, message))

    def walk(block: Block, env: _Env) -> None:
        for op in block.ops:
            if isinstance(op, memref.LoadOp):
                check(op, op.memref, list(op.indices), 1, env)
            elif isinstance(op, memref.StoreOp):
                check(op, op.memref, list(op.indices), 1, env)
            elif isinstance(op, vector.LoadOp | vector.StoreOp):
                vt = op.result.type if isinstance(op, vector.LoadOp) else op.vector.type
                width = vt.get_shape()[-1] if isinstance(vt, VectorType) else 1
                check(op, op.base, list(op.indices), width, env)
                if alignment_of(op):
                    check_alignment(op, alignment_of(op), op.base, list(op.indices), env)
            elif isinstance(op, LdMatrixOp):  # this work-item's row: 16 bytes, 16-byte aligned
                check(op, op.tile, [op.index], op.row_elements, env)
                check_alignment(op, LdMatrixOp.ROW_BYTES, op.tile, [op.index], env)
            elif isinstance(op, WgmmaOp):  # each operand's whole swizzled rows, from an aligned atom
                for tile, index, span in zip((op.a_tile, op.b_tile), (op.a_index, op.b_index), op.spans(), strict=True):
                    check(op, tile, [index], span, env)
                    check_alignment(op, WgmmaOp.ATOM_BYTES, tile, [index], env)
            elif isinstance(op, AsyncCopyOp):  # the source is read only where valid
                check(op, op.dst, [op.dst_index], op.elements, env)
                check(op, op.src, [op.src_index], op.elements, ranges.assume(op.valid, env)[0])
                check_alignment(op, ASYNC_COPY_BYTES, op.dst, [op.dst_index], env)
                check_alignment(op, ASYNC_COPY_BYTES, op.src, [op.src_index], env)
            elif isinstance(op, scf.ForOp):
                _loop(op, env)
            elif isinstance(op, scf.IfOp):
                yes, no = ranges.assume(op.cond, env)
                outs: list[Interval] = [EMPTY] * len(op.results)
                for region, path in ((op.true_region, yes), (op.false_region, no)):
                    for blk in region.blocks:
                        walk(blk, path)
                        outs = [o | ranges.of(y, path) for o, y in zip(outs, _yielded(blk), strict=False)]
                for res, r in zip(op.results, outs, strict=False):
                    ranges.facts[res] = r if op.false_region.blocks else type_range(res.type)
            else:
                for region in op.regions:
                    for blk in region.blocks:
                        walk(blk, env)

    def _loop(op: scf.ForOp, env: _Env) -> None:
        lb, ub, step = (ranges.of(v, env) for v in (op.lb, op.ub, op.step))
        body = op.body.block
        iv = body.args[0]
        top = type_range(iv.type).hi
        if env.unreachable() or lb.empty or ub.empty or step.empty:
            ranges.facts[iv] = EMPTY  # a loop on a path that never runs
        elif step.lo <= 0:
            problems.append(BoundsProblem(kernel, op, _loop_message(
                kernel, op, names, where, f"steps by `{names.expr(op.step)}`, which ranges over {step}: with a step "
                "that may be 0 or negative it may never end (the step must be proved positive)", launch)))
            ranges.facts[iv] = type_range(iv.type)
        elif ub.hi - 1 + step.hi > top and ub.hi > lb.lo:
            # The last value below the bound plus the step passes the
            # type's end: the variable wraps around, and the loop goes on.
            problems.append(BoundsProblem(kernel, op, _loop_message(
                kernel, op, names, where, f"may never end: its variable (up to {int(ub.hi) - 1}) plus its step "
                f"(up to {int(step.hi)}) passes the largest {iv.type} ({int(top)}) and wraps around", launch)))
            ranges.facts[iv] = type_range(iv.type)
        else:
            ranges.no_wrap.add(op)
            if lb.lo == lb.hi and ub.lo == ub.hi and step.lo == step.hi:
                trips = max(0, -(-(ub.lo - lb.lo) // step.lo))
                ranges.facts[iv] = Interval(lb.lo, lb.lo + (trips - 1) * step.lo) if trips else EMPTY
            else:
                # A variable that is always a multiple of m (its start and
                # step are) stays below the bound by a whole multiple: at
                # most the largest multiple of m below it.
                m = ranges.multiple(iv, env)
                hi = ub.hi - 1 if m <= 1 else (ub.hi - 1) // m * m
                ranges.facts[iv] = Interval(lb.lo, hi)
                ranges.upper[iv] = op
        carried = list(body.args[1:])
        current = [ranges.of(v, env) for v in op.iter_args]
        # The carried values' fixed point: round after round, the body's
        # values computed afresh for the carried ranges so far, until no
        # range grows. From the fourth round on, an end that still grows is
        # widened to its type's end, so it ends after a few more rounds;
        # never stopped short of the fixed point (an under-approximation).
        for attempt in itertools.count():
            for a, r in zip(carried, current, strict=True):
                ranges.facts[a] = r
            inner = _Env(env)
            nxt = [c | ranges.of(y, inner) for c, y in zip(current, _yielded(body), strict=True)]
            if nxt == current:
                break
            if attempt >= 3:
                nxt = [_widened(c, n, a.type) for c, n, a in zip(current, nxt, carried, strict=True)]
            if attempt >= 3 + 2 * len(carried):  # cannot happen: each end widens once
                nxt = [type_range(a.type) for a in carried]
            current = nxt
        for a, r in zip(carried, current, strict=True):
            ranges.facts[a] = r
        walk(body, _Env(env))
        for res, r in zip(op.results, current, strict=True):
            ranges.facts[res] = r

    for block in func.body.blocks:
        walk(block, _Env())
    return problems


def _widened(old: Interval, new: Interval, t: object) -> Interval:
    """`new`, with each end that moved past `old`'s at the type's end."""
    full = type_range(t)
    return Interval(full.lo if new.lo < old.lo else new.lo, full.hi if new.hi > old.hi else new.hi)


def _loop_message(
    kernel: str, op: Operation, names: _Names, where: Callable[[Operation], str | None] | None, what: str,
    launch: LaunchSizes,
) -> str:
    source = where(op) if where is not None else None
    at = f" ({source})" if source else ""
    return f"kernel @{kernel}: 'scf.for'{at} {what} ({launch.describe()})"


def _yielded(block: Block) -> list[SSAValue]:
    last = block.last_op
    return list(last.operands) if isinstance(last, scf.YieldOp) else []


def _message(
    kernel: str, op: Operation, mem: SSAValue, t: MemRefType, names: _Names, index: SSAValue, r: Interval,
    n: int, width: int, dim: int, launch: LaunchSizes, where: Callable[[Operation], str | None] | None,
) -> str:
    stores = isinstance(op, memref.StoreOp | vector.StoreOp) or (isinstance(op, AsyncCopyOp) and mem is op.dst)
    what = "stores to" if stores else "loads from"
    lanes = f" {width} elements" if width > 1 else ""
    dims = f" (dimension {dim})" if len(t.get_shape()) > 1 else ""
    valid = f"[0, {n - width}]" if n - width >= 0 else "none"
    need = f"a {width}-wide access needs its first index in {valid}" if width > 1 else f"valid indices are {valid}"
    source = where(op) if where is not None else None
    at = f" ({source})" if source else ""
    return (
        f"kernel @{kernel}: '{op.name}'{at} {what} {names.buffer(mem)} ({t}){lanes} at index "
        f"`{names.expr(index)}`{dims}, which ranges over {r}; {need} ({launch.describe()})"
    )


def verify_bounds(func: gpu.FuncOp, launch: LaunchSizes, where: Callable[[Operation], str | None] | None = None) -> None:
    """Raises `OutOfBoundsError` naming every access of `func` not proved in bounds."""
    problems = check_bounds(func, launch, where)
    if problems:
        raise OutOfBoundsError(problems)


# --------------------------------------------------------------------------
# Kernels of a module and their launches
# --------------------------------------------------------------------------

#: The launch sizes a hand-written kernel states (`accy.kernel` writes them):
#: `accy.global_size = array<i64: ...>` with `gpu.known_block_size`.
GLOBAL_SIZE_ATTR = KERNEL_GLOBAL_SIZE_ATTR


def stated_launch(func: gpu.FuncOp) -> LaunchSizes | None:
    """The launch a kernel states (`accy.global_size`, `gpu.known_block_size`),
    if any; ValueError where its global size is not a multiple of its block."""
    glob = func.attributes.get(GLOBAL_SIZE_ATTR)
    if glob is None:
        return None
    g = list(glob.get_values())  # type: ignore[attr-defined]
    known = func.known_block_size
    b = list(known.get_values()) if known is not None else [1] * len(g)
    if any(x % y for x, y in zip(g, b, strict=False)):
        raise ValueError(f"its {GLOBAL_SIZE_ATTR} {g} is not a multiple of its gpu.known_block_size {b}")
    return launch_of(g, b)


def launch_of(global_size: list[int], local_size: list[int]) -> LaunchSizes:
    """The launch of an NDRange: global and local sizes per dimension (1 to 3)."""
    g = [*global_size, 1, 1, 1][:3]
    b = [*local_size, 1, 1, 1][:3]
    return LaunchSizes(
        (g[0] // b[0], g[1] // b[1], g[2] // b[2]), (b[0], b[1], b[2])
    )


def module_launches(module: ModuleOp) -> Iterator[tuple[gpu.FuncOp, LaunchSizes | str | None]]:
    """Every kernel of `module` with each launch it gets: from the host
    schedule's `gpu.launch_func`s (constant sizes) and the `accy.kernel_call`s
    of it, else the sizes it states; for a kernel without any, None, or why
    the sizes it was given cannot be a launch (a global size that is not a
    multiple of the work-group size)."""
    kernels: dict[str, gpu.FuncOp] = {}
    for op in module.walk():
        if isinstance(op, gpu.FuncOp):
            kernels[op.sym_name.data] = op
    seen: dict[str, set[LaunchSizes]] = {name: set() for name in kernels}
    #: Why a kernel's launch sizes are unusable, where they are.
    unusable: dict[str, str] = {}
    for op in module.walk():
        if isinstance(op, gpu.LaunchFuncOp):
            ref: SymbolRefAttr = op.kernel
            name = (ref.nested_references.data[-1] if ref.nested_references.data else ref.root_reference).data
            sizes = [_constant(v) for v in (op.gridSizeX, op.gridSizeY, op.gridSizeZ, op.blockSizeX, op.blockSizeY, op.blockSizeZ)]
            if name in seen and all(s is not None for s in sizes):
                seen[name].add(LaunchSizes(tuple(sizes[:3]), tuple(sizes[3:])))  # type: ignore[arg-type]
        if isinstance(op, KernelCallOp):
            callee = kernels.get(op.callee.nested_references.data[-1].data if op.callee.nested_references.data else "")
            if callee is not None:
                try:
                    seen[callee.sym_name.data].add(launch_of(*op.launch_sizes(callee)))
                except ValueError as e:  # reported below unless another call or the kernel states a launch
                    unusable.setdefault(callee.sym_name.data, str(e))
    for name, func in kernels.items():
        launches = seen[name]
        if not launches:
            try:
                stated = stated_launch(func)
            except ValueError as e:
                stated, unusable[name] = None, str(e)
            launches = {stated} if stated is not None else set()
        if not launches:
            yield func, unusable.get(name)
        for launch in sorted(launches, key=lambda x: (x.grid, x.block)):
            yield func, launch


def _constant(v: SSAValue) -> int | None:
    op = v.owner
    if isinstance(op, arith.ConstantOp) and isinstance(op.value, IntegerAttr):
        return op.value.value.data
    return None


def verify_module_bounds(module: ModuleOp) -> None:
    """Proves every kernel of `module` in bounds under each of its launches;
    `OutOfBoundsError` names every access that is not proved, and every
    kernel whose launch sizes are unknown."""
    problems: list[BoundsProblem] = []
    for func, launch in module_launches(module):
        if not isinstance(launch, LaunchSizes):
            name = func.sym_name.data
            why = (
                launch if launch is not None
                else f"no launch states its sizes (no gpu.launch_func of it with constant sizes, no {GLOBAL_SIZE_ATTR} on it)"
            )
            problems.append(BoundsProblem(name, func, f"kernel @{name}: {why}; its accesses cannot be proved"))
            continue
        problems += check_bounds(func, launch)
    if problems:
        raise OutOfBoundsError(problems)
