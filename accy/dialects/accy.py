"""The accy tensor dialect: the program a user writes, before any kernel exists.

Programs are `func.func`s over builtin ranked `tensor<...>` types. Every op here
is pure and value-semantic, like MLIR's `tosa` or StableHLO: there is no
aliasing and no memory at this level. The op and property names are a public
contract (docs/op-contract.md); the generic form
`"accy.op"(operands) <{properties}> : (types) -> types` always parses.

Each op's verifier recomputes the result type from the operands and properties
(the `infer_*` functions below, which builders share) and names the first thing
that is wrong. Elementwise ops take operands of one shape: no implicit
broadcasting (frontends insert `accy.broadcast`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import ClassVar

from xdsl.dialects import gpu
from xdsl.dialects.builtin import (
    BoolAttr,
    DenseArrayBase,
    DenseIntOrFPElementsAttr,
    Float32Type,
    FloatAttr,
    IntegerAttr,
    IntegerType,
    MemRefType,
    StringAttr,
    SymbolRefAttr,
    TensorType,
    i1,
    i64,
)
from xdsl.ir import Attribute, Dialect, Operation, Region, SSAValue
from xdsl.irdl import (
    BaseAttr,
    IRDLOperation,
    ParsePropInAttrDict,
    VarConstraint,
    irdl_op_definition,
    lazy_traits_def,
    operand_def,
    opt_prop_def,
    prop_def,
    region_def,
    result_def,
    traits_def,
    var_operand_def,
    var_result_def,
)
from xdsl.parser import Parser
from xdsl.pattern_rewriter import RewritePattern
from xdsl.printer import Printer
from xdsl.traits import (
    ConstantLike,
    HasCanonicalizationPatternsTrait,
    HasParent,
    IsTerminator,
    Pure,
    RecursiveMemoryEffect,
    SymbolTable,
    SymbolUserOpInterface,
)
from xdsl.utils.exceptions import VerifyException

from accy.dialects.types import elem_of, is_bool, is_float, is_int, numel, shape_of, tensor

# --------------------------------------------------------------------------
# Attribute helpers shared by verifiers and builders (the type helpers are in
# `accy.dialects.types`).
# --------------------------------------------------------------------------


def i64_array(values: Sequence[int]) -> DenseArrayBase:
    return DenseArrayBase.from_list(i64, list(values))


def _ranked_tensor(op: Operation, v: SSAValue, what: str) -> TensorType:
    t = v.type
    if not isinstance(t, TensorType) or any(d < 0 for d in t.get_shape()):
        raise VerifyException(f"'{op.name}' {what} must be a statically shaped tensor, got {t}")
    et = t.element_type
    if not (is_float(et) or isinstance(et, IntegerType)):
        raise VerifyException(f"'{op.name}' {what} has unsupported element type {et}")
    return t


def _expect_type(op: Operation, got: Attribute, want: Attribute, what: str = "result") -> None:
    if got != want:
        raise VerifyException(f"'{op.name}' {what} type should be {want}, got {got}")


def _axis(op: Operation, axis: int, rank: int, what: str = "axis") -> int:
    """Normalises a possibly negative axis, rejecting one out of range."""
    if not -rank <= axis < max(rank, 1):
        raise VerifyException(f"'{op.name}' {what} {axis} is out of range for rank {rank}")
    return axis % rank if rank else 0


def _distinct_axes(op: Operation, axes: Sequence[int], rank: int, what: str) -> list[int]:
    norm = [_axis(op, a, rank, what) for a in axes]
    if len(set(norm)) != len(norm):
        raise VerifyException(f"'{op.name}' {what} {list(axes)} repeat a dimension")
    return norm


def _str_choice(op: Operation, prop: str, choices: Sequence[str]) -> str:
    value = op.properties[prop]
    assert isinstance(value, StringAttr)
    if value.data not in choices:
        raise VerifyException(
            f"'{op.name}' {prop} \"{value.data}\" is not one of {', '.join(choices)}"
        )
    return value.data


# --------------------------------------------------------------------------
# Shape inference: the single source of truth for result shapes.
# --------------------------------------------------------------------------


def infer_transpose(shape: Sequence[int], perm: Sequence[int]) -> tuple[int, ...]:
    if sorted(perm) != list(range(len(shape))):
        raise ValueError(f"permutation {list(perm)} is not a permutation of 0..{len(shape) - 1}")
    return tuple(shape[p] for p in perm)


def infer_slice(
    shape: Sequence[int], start: Sequence[int], limit: Sequence[int], stride: Sequence[int]
) -> tuple[int, ...]:
    if not len(start) == len(limit) == len(stride) == len(shape):
        raise ValueError(f"start, limit and stride must each have {len(shape)} entries")
    out = []
    for d, (n, a, b, s) in enumerate(zip(shape, start, limit, stride, strict=True)):
        if s < 1:
            raise ValueError(f"stride {s} of dim {d} must be positive")
        if not 0 <= a <= b <= n:
            raise ValueError(f"dim {d}: need 0 <= start ({a}) <= limit ({b}) <= size ({n})")
        out.append((b - a + s - 1) // s)
    return tuple(out)


def infer_dot_general(
    a: Sequence[int],
    b: Sequence[int],
    lhs_batch: Sequence[int],
    rhs_batch: Sequence[int],
    lhs_contract: Sequence[int],
    rhs_contract: Sequence[int],
) -> tuple[int, ...]:
    if len(lhs_batch) != len(rhs_batch):
        raise ValueError("lhs_batch and rhs_batch must have the same length")
    if len(lhs_contract) != len(rhs_contract):
        raise ValueError("lhs_contract and rhs_contract must have the same length")
    for side, shape, dims in (("lhs", a, [*lhs_batch, *lhs_contract]), ("rhs", b, [*rhs_batch, *rhs_contract])):
        if any(not 0 <= d < len(shape) for d in dims):
            raise ValueError(f"{side} dimension out of range in {dims} for rank {len(shape)}")
        if len(set(dims)) != len(dims):
            raise ValueError(f"{side} batch and contracting dimensions {dims} repeat a dimension")
    for x, y in zip(lhs_batch, rhs_batch, strict=True):
        if a[x] != b[y]:
            raise ValueError(f"batch dims differ: lhs dim {x} is {a[x]}, rhs dim {y} is {b[y]}")
    for x, y in zip(lhs_contract, rhs_contract, strict=True):
        if a[x] != b[y]:
            raise ValueError(f"contracting dims differ: lhs dim {x} is {a[x]}, rhs dim {y} is {b[y]}")
    lhs_free = [d for d in range(len(a)) if d not in (*lhs_batch, *lhs_contract)]
    rhs_free = [d for d in range(len(b)) if d not in (*rhs_batch, *rhs_contract)]
    return tuple([a[d] for d in lhs_batch] + [a[d] for d in lhs_free] + [b[d] for d in rhs_free])


def infer_reduce(shape: Sequence[int], axes: Sequence[int]) -> tuple[int, ...]:
    norm = {a % len(shape) for a in axes} if shape else set()
    return tuple(n for d, n in enumerate(shape) if d not in norm)


# --------------------------------------------------------------------------
# Canonicalization patterns, per op (the patterns are in
# `accy.dialects.canonicalization`, imported on first use: it imports the ops)
# --------------------------------------------------------------------------


class NeutralOperandPatterns(HasCanonicalizationPatternsTrait):
    """x + 0, x - 0, x * 1, x / 1 (either side where it commutes) -> x."""

    @classmethod
    def get_canonicalization_patterns(cls) -> tuple[RewritePattern, ...]:
        from accy.dialects.canonicalization import DropNeutralOperand

        return (DropNeutralOperand(),)


class NegPatterns(HasCanonicalizationPatternsTrait):
    """neg(neg(x)) -> x."""

    @classmethod
    def get_canonicalization_patterns(cls) -> tuple[RewritePattern, ...]:
        from accy.dialects.canonicalization import DoubleNegation

        return (DoubleNegation(),)


class SelectPatterns(HasCanonicalizationPatternsTrait):
    """select of a splat condition, or of one value twice."""

    @classmethod
    def get_canonicalization_patterns(cls) -> tuple[RewritePattern, ...]:
        from accy.dialects.canonicalization import FoldSelect

        return (FoldSelect(),)


class SameTypePatterns(HasCanonicalizationPatternsTrait):
    """A slice or cast to the operand's own type is the operand."""

    @classmethod
    def get_canonicalization_patterns(cls) -> tuple[RewritePattern, ...]:
        from accy.dialects.canonicalization import DropSameTypeSliceOrCast

        return (DropSameTypeSliceOrCast(),)


class ReshapePatterns(HasCanonicalizationPatternsTrait):
    """Chains of reshapes compose; a reshape to the same shape is dropped."""

    @classmethod
    def get_canonicalization_patterns(cls) -> tuple[RewritePattern, ...]:
        from accy.dialects.canonicalization import ComposeReshapes

        return (ComposeReshapes(),)


class TransposePatterns(HasCanonicalizationPatternsTrait):
    """Chains of transposes compose; an identity permutation is dropped."""

    @classmethod
    def get_canonicalization_patterns(cls) -> tuple[RewritePattern, ...]:
        from accy.dialects.canonicalization import ComposeTransposes

        return (ComposeTransposes(),)


class BroadcastPatterns(HasCanonicalizationPatternsTrait):
    """A broadcast onto the operand's own shape is dropped."""

    @classmethod
    def get_canonicalization_patterns(cls) -> tuple[RewritePattern, ...]:
        from accy.dialects.canonicalization import DropIdentityBroadcast

        return (DropIdentityBroadcast(),)


class IteratePatterns(HasCanonicalizationPatternsTrait):
    """An iterate that runs zero times is its inits."""

    @classmethod
    def get_canonicalization_patterns(cls) -> tuple[RewritePattern, ...]:
        from accy.dialects.canonicalization import FoldZeroTripIterate

        return (FoldZeroTripIterate(),)


# --------------------------------------------------------------------------
# Base classes
# --------------------------------------------------------------------------


class UnaryOp(IRDLOperation):
    """x -> f(x), same type. `float_only` ops need a float element type."""

    FLOAT_ONLY: ClassVar[bool] = True
    T: ClassVar = VarConstraint("T", BaseAttr(TensorType))
    x = operand_def(T)
    result = result_def(T)
    traits = traits_def(Pure())
    assembly_format = "$x attr-dict `:` type($result)"
    irdl_options = (ParsePropInAttrDict(),)

    def __init__(self, x: SSAValue | Operation) -> None:
        x = SSAValue.get(x)
        super().__init__(operands=[x], result_types=[x.type])

    def verify_(self) -> None:
        t = _ranked_tensor(self, self.x, "operand")
        et = t.element_type
        if self.FLOAT_ONLY and not is_float(et):
            raise VerifyException(f"'{self.name}' needs a float element type, got {et}")
        if not self.FLOAT_ONLY and is_bool(et):
            raise VerifyException(f"'{self.name}' does not take i1 operands")
        _expect_type(self, self.result.type, t)


class BinaryOp(IRDLOperation):
    """(a, b) -> f(a, b); both operands and the result share one type."""

    ALLOW_FLOAT: ClassVar[bool] = True
    ALLOW_INT: ClassVar[bool] = True
    ALLOW_BOOL: ClassVar[bool] = False
    T: ClassVar = VarConstraint("T", BaseAttr(TensorType))
    lhs = operand_def(T)
    rhs = operand_def(T)
    result = result_def(T)
    traits = traits_def(Pure())
    assembly_format = "$lhs `,` $rhs attr-dict `:` type($result)"
    irdl_options = (ParsePropInAttrDict(),)

    def __init__(self, lhs: SSAValue | Operation, rhs: SSAValue | Operation) -> None:
        lhs = SSAValue.get(lhs)
        super().__init__(operands=[lhs, rhs], result_types=[lhs.type])

    def verify_(self) -> None:
        t = _ranked_tensor(self, self.lhs, "lhs")
        _ranked_tensor(self, self.rhs, "rhs")
        if self.rhs.type != t:
            raise VerifyException(
                f"'{self.name}' operands must have the same type (no implicit "
                f"broadcasting), got {t} and {self.rhs.type}"
            )
        et = t.element_type
        ok = (
            (is_float(et) and self.ALLOW_FLOAT)
            or (is_int(et) and self.ALLOW_INT)
            or (is_bool(et) and self.ALLOW_BOOL)
        )
        if not ok:
            raise VerifyException(f"'{self.name}' does not take element type {et}")
        _expect_type(self, self.result.type, t)


class FloatUnaryOp(UnaryOp):
    """A unary elementwise op on float tensors."""

    FLOAT_ONLY: ClassVar[bool] = True


class NumericUnaryOp(UnaryOp):
    """A unary elementwise op on float or integer tensors (not i1)."""

    FLOAT_ONLY: ClassVar[bool] = False


class ArithmeticBinaryOp(BinaryOp):
    """A binary elementwise op on float or integer tensors (not i1)."""

    ALLOW_FLOAT: ClassVar[bool] = True
    ALLOW_INT: ClassVar[bool] = True
    ALLOW_BOOL: ClassVar[bool] = False


class LogicalBinaryOp(BinaryOp):
    """A binary elementwise op on i1 (logical) or integer (bitwise) tensors."""

    ALLOW_FLOAT: ClassVar[bool] = False
    ALLOW_INT: ClassVar[bool] = True
    ALLOW_BOOL: ClassVar[bool] = True


# --------------------------------------------------------------------------
# Ops
# --------------------------------------------------------------------------


@irdl_op_definition
class ConstantOp(IRDLOperation):
    """A literal tensor (`arith.constant` on tensors, in MLIR)."""

    name = "accy.constant"
    value = prop_def(DenseIntOrFPElementsAttr)
    result = result_def(TensorType)
    traits = traits_def(Pure(), ConstantLike())

    def print(self, printer: Printer) -> None:
        # `accy.constant dense<1.0> : tensor<4xf32>`: the value carries the type.
        printer.print_string(" ")
        printer.print_attribute(self.value)
        printer.print_op_attributes(self.attributes)

    @classmethod
    def parse(cls, parser: Parser) -> ConstantOp:
        value = parser.parse_attribute()
        if not isinstance(value, DenseIntOrFPElementsAttr):
            parser.raise_error(f"accy.constant expects a dense elements attribute, got {value}")
        op = cls(value)
        op.attributes |= parser.parse_optional_attr_dict()
        return op

    def __init__(self, value: DenseIntOrFPElementsAttr) -> None:
        super().__init__(properties={"value": value}, result_types=[value.type])

    def verify_(self) -> None:
        if self.value.type != self.result.type:
            raise VerifyException(
                f"'{self.name}' value type {self.value.type} does not match result type {self.result.type}"
            )
        _ranked_tensor(self, self.result, "result")


@irdl_op_definition
class NegOp(NumericUnaryOp):
    """Elementwise -x."""

    name = "accy.neg"
    traits = traits_def(Pure(), NegPatterns())


@irdl_op_definition
class AbsOp(NumericUnaryOp):
    """Elementwise |x|."""

    name = "accy.abs"


@irdl_op_definition
class ExpOp(FloatUnaryOp):
    """Elementwise e^x."""

    name = "accy.exp"


@irdl_op_definition
class LogOp(FloatUnaryOp):
    """Elementwise natural logarithm."""

    name = "accy.log"


@irdl_op_definition
class SqrtOp(FloatUnaryOp):
    """Elementwise square root."""

    name = "accy.sqrt"


@irdl_op_definition
class RsqrtOp(FloatUnaryOp):
    """Elementwise 1/sqrt(x)."""

    name = "accy.rsqrt"


@irdl_op_definition
class TanhOp(FloatUnaryOp):
    """Elementwise hyperbolic tangent."""

    name = "accy.tanh"


@irdl_op_definition
class SigmoidOp(FloatUnaryOp):
    """Elementwise 1/(1+e^-x)."""

    name = "accy.sigmoid"


@irdl_op_definition
class ReluOp(NumericUnaryOp):
    """Elementwise max(x, 0)."""

    name = "accy.relu"


@irdl_op_definition
class GeluOp(FloatUnaryOp):
    """Elementwise 0.5·x·(1+erf(x/√2)) (the erf form)."""

    name = "accy.gelu"


@irdl_op_definition
class SinOp(FloatUnaryOp):
    """Elementwise sine."""

    name = "accy.sin"


@irdl_op_definition
class CosOp(FloatUnaryOp):
    """Elementwise cosine."""

    name = "accy.cos"


@irdl_op_definition
class ErfOp(FloatUnaryOp):
    """Elementwise error function."""

    name = "accy.erf"


@irdl_op_definition
class ReciprocalOp(FloatUnaryOp):
    """Elementwise 1/x."""

    name = "accy.reciprocal"


@irdl_op_definition
class FloorOp(FloatUnaryOp):
    """Elementwise round toward -inf."""

    name = "accy.floor"


@irdl_op_definition
class CeilOp(FloatUnaryOp):
    """Elementwise round toward +inf."""

    name = "accy.ceil"


@irdl_op_definition
class AddOp(ArithmeticBinaryOp):
    """Elementwise a + b."""

    name = "accy.add"
    traits = traits_def(Pure(), NeutralOperandPatterns())


@irdl_op_definition
class SubOp(ArithmeticBinaryOp):
    """Elementwise a - b."""

    name = "accy.sub"
    traits = traits_def(Pure(), NeutralOperandPatterns())


@irdl_op_definition
class MulOp(ArithmeticBinaryOp):
    """Elementwise a * b."""

    name = "accy.mul"
    traits = traits_def(Pure(), NeutralOperandPatterns())


@irdl_op_definition
class DivOp(ArithmeticBinaryOp):
    """Elementwise a / b; integer division truncates toward zero."""

    name = "accy.div"
    traits = traits_def(Pure(), NeutralOperandPatterns())


@irdl_op_definition
class MaxOp(ArithmeticBinaryOp):
    """Elementwise max(a, b)."""

    name = "accy.max"


@irdl_op_definition
class MinOp(ArithmeticBinaryOp):
    """Elementwise min(a, b)."""

    name = "accy.min"


@irdl_op_definition
class PowOp(ArithmeticBinaryOp):
    """Elementwise a ** b."""

    name = "accy.pow"


@irdl_op_definition
class AndOp(LogicalBinaryOp):
    """Elementwise logical/bitwise and."""

    name = "accy.and"


@irdl_op_definition
class OrOp(LogicalBinaryOp):
    """Elementwise logical/bitwise or."""

    name = "accy.or"


@irdl_op_definition
class XorOp(LogicalBinaryOp):
    """Elementwise logical/bitwise xor."""

    name = "accy.xor"


UNARY_OPS: tuple[type[UnaryOp], ...] = (
    NegOp, AbsOp, ExpOp, LogOp, SqrtOp, RsqrtOp, TanhOp, SigmoidOp, ReluOp,
    GeluOp, SinOp, CosOp, ErfOp, ReciprocalOp, FloorOp, CeilOp,
)  # fmt: skip
BINARY_OPS: tuple[type[BinaryOp], ...] = (
    AddOp, SubOp, MulOp, DivOp, MaxOp, MinOp, PowOp, AndOp, OrOp, XorOp,
)  # fmt: skip


@irdl_op_definition
class NotOp(IRDLOperation):
    """Elementwise logical not of an i1 tensor."""

    name = "accy.not"
    T: ClassVar = VarConstraint("T", BaseAttr(TensorType))
    x = operand_def(T)
    result = result_def(T)
    traits = traits_def(Pure())
    assembly_format = "$x attr-dict `:` type($result)"
    irdl_options = (ParsePropInAttrDict(),)

    def __init__(self, x: SSAValue | Operation) -> None:
        x = SSAValue.get(x)
        super().__init__(operands=[x], result_types=[x.type])

    def verify_(self) -> None:
        t = _ranked_tensor(self, self.x, "operand")
        if not is_bool(t.element_type):
            raise VerifyException(f"'{self.name}' needs an i1 operand, got {t.element_type}")
        _expect_type(self, self.result.type, t)


CMP_PREDICATES = ("eq", "ne", "lt", "le", "gt", "ge")


@irdl_op_definition
class CmpOp(IRDLOperation):
    """Elementwise comparison of two same-typed tensors; the result is i1."""

    name = "accy.cmp"
    T: ClassVar = VarConstraint("T", BaseAttr(TensorType))
    lhs = operand_def(T)
    rhs = operand_def(T)
    predicate = prop_def(StringAttr)
    result = result_def(TensorType)
    traits = traits_def(Pure())
    assembly_format = "$predicate `,` $lhs `,` $rhs attr-dict `:` type($lhs) `->` type($result)"
    irdl_options = (ParsePropInAttrDict(),)

    def __init__(self, predicate: str, lhs: SSAValue | Operation, rhs: SSAValue | Operation) -> None:
        lhs = SSAValue.get(lhs)
        super().__init__(
            operands=[lhs, rhs],
            properties={"predicate": StringAttr(predicate)},
            result_types=[tensor(shape_of(lhs), i1)],
        )

    def verify_(self) -> None:
        _str_choice(self, "predicate", CMP_PREDICATES)
        t = _ranked_tensor(self, self.lhs, "lhs")
        if self.rhs.type != t:
            raise VerifyException(f"'{self.name}' operands must have the same type, got {t} and {self.rhs.type}")
        _expect_type(self, self.result.type, tensor(t.get_shape(), i1))


@irdl_op_definition
class SelectOp(IRDLOperation):
    """Elementwise cond ? a : b, with an i1 condition of the same shape."""

    name = "accy.select"
    cond = operand_def(TensorType)
    T: ClassVar = VarConstraint("T", BaseAttr(TensorType))
    lhs = operand_def(T)
    rhs = operand_def(T)
    result = result_def(T)
    traits = traits_def(Pure(), SelectPatterns())
    assembly_format = "$cond `,` $lhs `,` $rhs attr-dict `:` type($cond) `,` type($result)"
    irdl_options = (ParsePropInAttrDict(),)

    def __init__(self, cond: SSAValue | Operation, lhs: SSAValue | Operation, rhs: SSAValue | Operation) -> None:
        lhs = SSAValue.get(lhs)
        super().__init__(operands=[cond, lhs, rhs], result_types=[lhs.type])

    def verify_(self) -> None:
        c = _ranked_tensor(self, self.cond, "condition")
        t = _ranked_tensor(self, self.lhs, "lhs")
        if not is_bool(c.element_type):
            raise VerifyException(f"'{self.name}' condition must be i1, got {c.element_type}")
        if self.rhs.type != t:
            raise VerifyException(f"'{self.name}' branches must have the same type, got {t} and {self.rhs.type}")
        if c.get_shape() != t.get_shape():
            raise VerifyException(
                f"'{self.name}' condition shape {list(c.get_shape())} differs from value shape {list(t.get_shape())}"
            )
        _expect_type(self, self.result.type, t)


@irdl_op_definition
class CastOp(IRDLOperation):
    """Element-type conversion; float→int truncates toward zero, i1→1/0."""

    name = "accy.cast"
    x = operand_def(TensorType)
    result = result_def(TensorType)
    traits = traits_def(Pure(), SameTypePatterns())
    assembly_format = "$x attr-dict `:` type($x) `->` type($result)"
    irdl_options = (ParsePropInAttrDict(),)

    def __init__(self, x: SSAValue | Operation, element_type: Attribute) -> None:
        x = SSAValue.get(x)
        super().__init__(operands=[x], result_types=[tensor(shape_of(x), element_type)])

    def verify_(self) -> None:
        t = _ranked_tensor(self, self.x, "operand")
        r = _ranked_tensor(self, self.result, "result")
        if t.get_shape() != r.get_shape():
            raise VerifyException(f"'{self.name}' changes the shape from {list(t.get_shape())} to {list(r.get_shape())}")


class _ShapeOp(IRDLOperation):
    """Shared checks of the single-operand shape ops."""

    x = operand_def(TensorType)
    result = result_def(TensorType)
    traits = traits_def(Pure())
    assembly_format = "$x attr-dict `:` type($x) `->` type($result)"
    irdl_options = (ParsePropInAttrDict(),)

    def infer(self, shape: tuple[int, ...]) -> tuple[int, ...]:
        raise NotImplementedError

    def verify_(self) -> None:
        t = _ranked_tensor(self, self.x, "operand")
        r = _ranked_tensor(self, self.result, "result")
        if r.element_type != t.element_type:
            raise VerifyException(f"'{self.name}' changes the element type from {t.element_type} to {r.element_type}")
        try:
            want = self.infer(tuple(t.get_shape()))
        except ValueError as e:
            raise VerifyException(f"'{self.name}' {e}") from None
        if tuple(r.get_shape()) != want:
            raise VerifyException(f"'{self.name}' result shape should be {list(want)}, got {list(r.get_shape())}")


@irdl_op_definition
class ReshapeOp(_ShapeOp):
    """Row-major reshape; the result type gives the shape."""

    name = "accy.reshape"
    traits = traits_def(Pure(), ReshapePatterns())

    def __init__(self, x: SSAValue | Operation, shape: Sequence[int]) -> None:
        x = SSAValue.get(x)
        super().__init__(operands=[x], result_types=[tensor(shape, elem_of(x))])

    def infer(self, shape: tuple[int, ...]) -> tuple[int, ...]:
        out = shape_of(self.result)
        n_in, n_out = numel(shape), numel(out)
        if n_in != n_out:
            raise ValueError(f"cannot reshape {n_in} elements into {list(out)} ({n_out} elements)")
        return out


@irdl_op_definition
class TransposeOp(_ShapeOp):
    """result dim i = operand dim permutation[i]."""

    name = "accy.transpose"
    traits = traits_def(Pure(), TransposePatterns())
    permutation = prop_def(DenseArrayBase)

    def __init__(self, x: SSAValue | Operation, permutation: Sequence[int]) -> None:
        x = SSAValue.get(x)
        super().__init__(
            operands=[x],
            properties={"permutation": i64_array(permutation)},
            result_types=[tensor(infer_transpose(shape_of(x), permutation), elem_of(x))],
        )

    def infer(self, shape: tuple[int, ...]) -> tuple[int, ...]:
        return infer_transpose(shape, self.permutation.get_values())


@irdl_op_definition
class BroadcastOp(_ShapeOp):
    """StableHLO broadcast_in_dim: operand dim i goes to result dim dims[i]; its
    size is 1 or equal to that result dim."""

    name = "accy.broadcast"
    traits = traits_def(Pure(), BroadcastPatterns())
    dims = prop_def(DenseArrayBase)

    def __init__(self, x: SSAValue | Operation, dims: Sequence[int], shape: Sequence[int]) -> None:
        x = SSAValue.get(x)
        super().__init__(
            operands=[x], properties={"dims": i64_array(dims)}, result_types=[tensor(shape, elem_of(x))]
        )

    def infer(self, shape: tuple[int, ...]) -> tuple[int, ...]:
        out = shape_of(self.result)
        dims = self.dims.get_values()
        if len(dims) != len(shape):
            raise ValueError(f"dims has {len(dims)} entries, operand rank is {len(shape)}")
        if any(not 0 <= d < len(out) for d in dims) or len(set(dims)) != len(dims):
            raise ValueError(f"dims {list(dims)} must be distinct result dims below {len(out)}")
        if list(dims) != sorted(dims):
            raise ValueError(f"dims {list(dims)} must be increasing")
        for i, d in enumerate(dims):
            if shape[i] not in (1, out[d]):
                raise ValueError(f"operand dim {i} of size {shape[i]} cannot broadcast to result dim {d} of size {out[d]}")
        return out


@irdl_op_definition
class SliceOp(_ShapeOp):
    """StableHLO slice: elements start[d], start[d]+stride[d], ... < limit[d]."""

    name = "accy.slice"
    traits = traits_def(Pure(), SameTypePatterns())
    start = prop_def(DenseArrayBase)
    limit = prop_def(DenseArrayBase)
    stride = prop_def(DenseArrayBase)

    def __init__(
        self, x: SSAValue | Operation, start: Sequence[int], limit: Sequence[int], stride: Sequence[int] | None = None
    ) -> None:
        x = SSAValue.get(x)
        stride = list(stride) if stride is not None else [1] * len(start)
        super().__init__(
            operands=[x],
            properties={"start": i64_array(start), "limit": i64_array(limit), "stride": i64_array(stride)},
            result_types=[tensor(infer_slice(shape_of(x), start, limit, stride), elem_of(x))],
        )

    def infer(self, shape: tuple[int, ...]) -> tuple[int, ...]:
        return infer_slice(shape, self.start.get_values(), self.limit.get_values(), self.stride.get_values())


@irdl_op_definition
class ConcatOp(IRDLOperation):
    """Joins tensors of one element type along `axis`; other dims must agree."""

    name = "accy.concat"
    xs = var_operand_def(TensorType)
    axis = prop_def(IntegerAttr)
    result = result_def(TensorType)
    traits = traits_def(Pure())
    assembly_format = "$xs attr-dict `:` `(` type($xs) `)` `->` type($result)"
    irdl_options = (ParsePropInAttrDict(),)

    def __init__(self, xs: Sequence[SSAValue | Operation], axis: int) -> None:
        vals = [SSAValue.get(x) for x in xs]
        shape = list(shape_of(vals[0]))
        shape[axis] = sum(shape_of(v)[axis] for v in vals)
        super().__init__(
            operands=[vals], properties={"axis": IntegerAttr(axis, i64)}, result_types=[tensor(shape, elem_of(vals[0]))]
        )

    def verify_(self) -> None:
        if not self.xs:
            raise VerifyException(f"'{self.name}' needs at least one operand")
        ts = [_ranked_tensor(self, x, f"operand #{i}") for i, x in enumerate(self.xs)]
        rank = len(ts[0].get_shape())
        axis = _axis(self, self.axis.value.data, rank)
        shape = list(ts[0].get_shape())
        for i, t in enumerate(ts[1:], 1):
            if t.element_type != ts[0].element_type:
                raise VerifyException(f"'{self.name}' operand #{i} has element type {t.element_type}, expected {ts[0].element_type}")
            s = list(t.get_shape())
            if len(s) != rank or any(a != b for d, (a, b) in enumerate(zip(s, shape, strict=True)) if d != axis):
                raise VerifyException(f"'{self.name}' operand #{i} shape {s} does not match {shape} off axis {axis}")
        shape[axis] = sum(t.get_shape()[axis] for t in ts)
        _expect_type(self, self.result.type, tensor(shape, ts[0].element_type))


def infer_gather(shape: Sequence[int], index_shape: Sequence[int], axis: int) -> tuple[int, ...]:
    """numpy.take's result shape: shape[:axis] + index_shape + shape[axis+1:]
    (axis already normalised)."""
    return (*shape[:axis], *index_shape, *shape[axis + 1 :])


#: Element types of `accy.gather`'s indices.
INDEX_WIDTHS = (32, 64)


@irdl_op_definition
class GatherOp(IRDLOperation):
    """numpy.take(x, indices, axis) (ONNX Gather, StableHLO's simple gather):
    result[i..., j..., k...] = x[i..., indices[j...], k...], of shape
    x.shape[:axis] + indices.shape + x.shape[axis+1:]. Indices are i32 or
    i64; an index in [-d, 0) counts from the end (d = x.shape[axis]), as
    numpy and ONNX read it, and one outside [-d, d) is clamped to the
    nearest end (after that wrap): the read is always inside `x`."""

    name = "accy.gather"
    x = operand_def(TensorType)
    indices = operand_def(TensorType)
    axis = prop_def(IntegerAttr)
    result = result_def(TensorType)
    traits = traits_def(Pure())
    assembly_format = "$x `,` $indices attr-dict `:` type($x) `,` type($indices) `->` type($result)"
    irdl_options = (ParsePropInAttrDict(),)

    def __init__(self, x: SSAValue | Operation, indices: SSAValue | Operation, axis: int = 0) -> None:
        x, indices = SSAValue.get(x), SSAValue.get(indices)
        shape = shape_of(x)
        ax = axis % len(shape) if shape else 0
        super().__init__(
            operands=[x, indices],
            properties={"axis": IntegerAttr(axis, i64)},
            result_types=[tensor(infer_gather(shape, shape_of(indices), ax), elem_of(x))],
        )

    def norm_axis(self) -> int:
        return self.axis.value.data % len(shape_of(self.x))

    def verify_(self) -> None:
        t = _ranked_tensor(self, self.x, "operand")
        it = _ranked_tensor(self, self.indices, "indices")
        shape, index_shape = tuple(t.get_shape()), tuple(it.get_shape())
        if not shape:
            raise VerifyException(f"'{self.name}' operand must have rank >= 1, got {t}")
        et = it.element_type
        if not (isinstance(et, IntegerType) and et.width.data in INDEX_WIDTHS):
            raise VerifyException(f"'{self.name}' indices must have element type i32 or i64, got {et}")
        axis = _axis(self, self.axis.value.data, len(shape))
        if shape[axis] == 0 and numel(index_shape) > 0:
            raise VerifyException(
                f"'{self.name}' gathers {numel(index_shape)} index(es) from axis {axis} of size 0"
            )
        _expect_type(self, self.result.type, tensor(infer_gather(shape, index_shape, axis), t.element_type))


@irdl_op_definition
class IotaOp(IRDLOperation):
    """StableHLO iota: result[c...] = c[dimension], converted to the result's
    element type (an integer wider than i1, which wraps as `accy.cast` of an
    i64 does, or a float, rounded to nearest)."""

    name = "accy.iota"
    dimension = prop_def(IntegerAttr)
    result = result_def(TensorType)
    traits = traits_def(Pure())
    assembly_format = "attr-dict `:` type($result)"
    irdl_options = (ParsePropInAttrDict(),)

    def __init__(self, shape: Sequence[int], element_type: Attribute, dimension: int = 0) -> None:
        super().__init__(properties={"dimension": IntegerAttr(dimension, i64)}, result_types=[tensor(shape, element_type)])

    def norm_dimension(self) -> int:
        return self.dimension.value.data % len(shape_of(self.result))

    def verify_(self) -> None:
        t = _ranked_tensor(self, self.result, "result")
        if not t.get_shape():
            raise VerifyException(f"'{self.name}' result must have rank >= 1, got {t}")
        if is_bool(t.element_type):
            raise VerifyException(f"'{self.name}' result element type must be an integer wider than i1 or a float, got i1")
        _axis(self, self.dimension.value.data, len(t.get_shape()), "dimension")


#: How `accy.pad` fills the padding (ONNX Pad's modes).
PAD_MODES = ("constant", "edge", "reflect", "wrap")


def pad_extent(size: int, low: int, high: int) -> tuple[int, int, int, int]:
    """One dim of `accy.pad`: (crop start, cropped size, positive low pad,
    result size). A negative pad crops that many elements first."""
    start = max(-low, 0)
    kept = size - start - max(-high, 0)
    lo = max(low, 0)
    return start, kept, lo, lo + max(kept, 0) + max(high, 0)


def infer_pad(shape: Sequence[int], low: Sequence[int], high: Sequence[int]) -> tuple[int, ...]:
    """`accy.pad`'s result shape: low[d] + shape[d] + high[d] per dim."""
    if len(low) != len(shape) or len(high) != len(shape):
        raise ValueError(f"low and high need {len(shape)} entries (the operand rank), got {len(low)} and {len(high)}")
    out = []
    for d, (n, lo, hi) in enumerate(zip(shape, low, high, strict=True)):
        _, kept, _, size = pad_extent(n, lo, hi)
        if kept < 0:
            raise ValueError(f"crops {max(-lo, 0) + max(-hi, 0)} elements of dim {d}, which has {n}")
        out.append(size)
    return tuple(out)


@irdl_op_definition
class PadOp(IRDLOperation):
    """ONNX Pad (StableHLO pad without interior padding): `low[d]` elements
    before and `high[d]` after each dim d. A negative pad crops that many
    elements first (ONNX's negative pads); the kept elements are then padded.
    `mode` fills the padding: "constant" with `value` (a rank-0 tensor of
    x's element type, read only in this mode), "edge" with the nearest kept
    element, "reflect" by mirroring about the edge element without repeating
    it (numpy.pad's reflect, repeated for pads longer than the dim), "wrap"
    periodically (numpy.pad's wrap). Modes other than constant need at least
    one kept element in every padded dim."""

    name = "accy.pad"
    x = operand_def(TensorType)
    value = operand_def(TensorType)
    low = prop_def(DenseArrayBase)
    high = prop_def(DenseArrayBase)
    mode = prop_def(StringAttr)
    result = result_def(TensorType)
    traits = traits_def(Pure())
    assembly_format = "$x `,` $value attr-dict `:` type($x) `,` type($value) `->` type($result)"
    irdl_options = (ParsePropInAttrDict(),)

    def __init__(
        self,
        x: SSAValue | Operation,
        value: SSAValue | Operation,
        low: Sequence[int],
        high: Sequence[int],
        mode: str = "constant",
    ) -> None:
        x, value = SSAValue.get(x), SSAValue.get(value)
        super().__init__(
            operands=[x, value],
            properties={"low": i64_array(low), "high": i64_array(high), "mode": StringAttr(mode)},
            result_types=[tensor(infer_pad(shape_of(x), low, high), elem_of(x))],
        )

    def verify_(self) -> None:
        mode = _str_choice(self, "mode", PAD_MODES)
        t = _ranked_tensor(self, self.x, "operand")
        v = _ranked_tensor(self, self.value, "value")
        if v.get_shape() or v.element_type != t.element_type:
            raise VerifyException(f"'{self.name}' value must be a rank-0 tensor of {t.element_type}, got {v}")
        shape, low, high = t.get_shape(), self.low.get_values(), self.high.get_values()
        try:
            out = infer_pad(shape, low, high)
        except ValueError as e:
            raise VerifyException(f"'{self.name}' {e}") from None
        if mode != "constant":
            for d, (n, lo, hi) in enumerate(zip(shape, low, high, strict=True)):
                if pad_extent(n, lo, hi)[1] == 0 and (lo > 0 or hi > 0):
                    raise VerifyException(f"'{self.name}' mode {mode} pads dim {d}, which keeps no element to repeat")
        _expect_type(self, self.result.type, tensor(out, t.element_type))


@irdl_op_definition
class DotGeneralOp(IRDLOperation):
    """StableHLO dot_general: result dims are the batch dims, then lhs free
    dims, then rhs free dims, each in operand order."""

    name = "accy.dot_general"
    lhs = operand_def(TensorType)
    rhs = operand_def(TensorType)
    lhs_batch = prop_def(DenseArrayBase)
    rhs_batch = prop_def(DenseArrayBase)
    lhs_contract = prop_def(DenseArrayBase)
    rhs_contract = prop_def(DenseArrayBase)
    result = result_def(TensorType)
    traits = traits_def(Pure())
    assembly_format = "$lhs `,` $rhs attr-dict `:` type($lhs) `,` type($rhs) `->` type($result)"
    irdl_options = (ParsePropInAttrDict(),)

    def __init__(
        self,
        lhs: SSAValue | Operation,
        rhs: SSAValue | Operation,
        lhs_batch: Sequence[int] = (),
        rhs_batch: Sequence[int] = (),
        lhs_contract: Sequence[int] = (1,),
        rhs_contract: Sequence[int] = (0,),
    ) -> None:
        lhs, rhs = SSAValue.get(lhs), SSAValue.get(rhs)
        shape = infer_dot_general(shape_of(lhs), shape_of(rhs), lhs_batch, rhs_batch, lhs_contract, rhs_contract)
        super().__init__(
            operands=[lhs, rhs],
            properties={
                "lhs_batch": i64_array(lhs_batch),
                "rhs_batch": i64_array(rhs_batch),
                "lhs_contract": i64_array(lhs_contract),
                "rhs_contract": i64_array(rhs_contract),
            },
            result_types=[tensor(shape, elem_of(lhs))],
        )

    def dims(self) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...], tuple[int, ...]]:
        return (
            self.lhs_batch.get_values(),
            self.rhs_batch.get_values(),
            self.lhs_contract.get_values(),
            self.rhs_contract.get_values(),
        )

    def verify_(self) -> None:
        a = _ranked_tensor(self, self.lhs, "lhs")
        b = _ranked_tensor(self, self.rhs, "rhs")
        if a.element_type != b.element_type or is_bool(a.element_type):
            raise VerifyException(f"'{self.name}' operands must share a numeric element type, got {a.element_type} and {b.element_type}")
        try:
            shape = infer_dot_general(a.get_shape(), b.get_shape(), *self.dims())
        except ValueError as e:
            raise VerifyException(f"'{self.name}' {e}") from None
        _expect_type(self, self.result.type, tensor(shape, a.element_type))


REDUCE_KINDS = ("sum", "prod", "max", "min", "mean", "argmax", "argmin")
#: Reduction kinds whose result is a position (an index of `INDEX_WIDTHS`), not a value.
ARG_KINDS = ("argmax", "argmin")
SCAN_KINDS = ("sum", "prod", "max", "min")


@irdl_op_definition
class ReduceOp(IRDLOperation):
    """Reduces `axes` with `kind`; the reduced dims are removed.

    `argmax` / `argmin` give the position of the first greatest / least
    element (the smallest position on ties), as a row-major flat index over
    the reduced dims, in the result's element type (i32 or i64); a NaN is
    greater and less than every number, so the first NaN wins (numpy's
    argmax/argmin). They need at least one reduced element."""

    name = "accy.reduce"
    x = operand_def(TensorType)
    kind = prop_def(StringAttr)
    axes = prop_def(DenseArrayBase)
    result = result_def(TensorType)
    traits = traits_def(Pure())
    assembly_format = "$x attr-dict `:` type($x) `->` type($result)"
    irdl_options = (ParsePropInAttrDict(),)

    def __init__(
        self, x: SSAValue | Operation, kind: str, axes: Sequence[int], index_type: Attribute = i64
    ) -> None:
        """`index_type` is the result element type of `argmax`/`argmin` (i32 or i64)."""
        x = SSAValue.get(x)
        et = index_type if kind in ARG_KINDS else elem_of(x)
        super().__init__(
            operands=[x],
            properties={"kind": StringAttr(kind), "axes": i64_array(axes)},
            result_types=[tensor(infer_reduce(shape_of(x), axes), et)],
        )

    def norm_axes(self) -> tuple[int, ...]:
        rank = len(shape_of(self.x))
        return tuple(sorted(a % rank for a in self.axes.get_values()))

    def verify_(self) -> None:
        kind = _str_choice(self, "kind", REDUCE_KINDS)
        t = _ranked_tensor(self, self.x, "operand")
        if is_bool(t.element_type) or (kind == "mean" and not is_float(t.element_type)):
            raise VerifyException(f"'{self.name}' {kind} does not take element type {t.element_type}")
        axes = _distinct_axes(self, self.axes.get_values(), len(t.get_shape()), "axes")
        shape = infer_reduce(t.get_shape(), self.axes.get_values())
        if kind not in ARG_KINDS:
            _expect_type(self, self.result.type, tensor(shape, t.element_type))
            return
        count = numel([t.get_shape()[a] for a in axes])
        if count == 0:
            raise VerifyException(f"'{self.name}' {kind} of no element: the reduced dims {axes} have 0 elements")
        r = _ranked_tensor(self, self.result, "result")
        et = r.element_type
        if not (isinstance(et, IntegerType) and et.width.data in INDEX_WIDTHS):
            raise VerifyException(f"'{self.name}' {kind} result element type must be i32 or i64, got {et}")
        if count > 2 ** (et.width.data - 1):
            raise VerifyException(f"'{self.name}' {kind} over {count} elements does not fit result element type {et}")
        _expect_type(self, self.result.type, tensor(shape, et))


@irdl_op_definition
class ScanOp(IRDLOperation):
    """Inclusive scan along `axis` (exclusive: the first element is the identity;
    reverse: scans from the end)."""

    name = "accy.scan"
    T: ClassVar = VarConstraint("T", BaseAttr(TensorType))
    x = operand_def(T)
    kind = prop_def(StringAttr)
    axis = prop_def(IntegerAttr)
    exclusive = prop_def(BoolAttr, default_value=BoolAttr.from_bool(False))
    reverse = prop_def(BoolAttr, default_value=BoolAttr.from_bool(False))
    result = result_def(T)
    traits = traits_def(Pure())
    assembly_format = "$x attr-dict `:` type($result)"
    irdl_options = (ParsePropInAttrDict(),)

    def __init__(self, x: SSAValue | Operation, kind: str, axis: int, exclusive: bool = False, reverse: bool = False) -> None:
        x = SSAValue.get(x)
        super().__init__(
            operands=[x],
            properties={
                "kind": StringAttr(kind),
                "axis": IntegerAttr(axis, i64),
                "exclusive": BoolAttr.from_bool(exclusive),
                "reverse": BoolAttr.from_bool(reverse),
            },
            result_types=[x.type],
        )

    def verify_(self) -> None:
        _str_choice(self, "kind", SCAN_KINDS)
        t = _ranked_tensor(self, self.x, "operand")
        if is_bool(t.element_type):
            raise VerifyException(f"'{self.name}' does not take element type i1")
        _axis(self, self.axis.value.data, len(t.get_shape()))
        _expect_type(self, self.result.type, t)


class _AxisFloatOp(IRDLOperation):
    """softmax / log_softmax along `axis` of a float tensor."""

    T: ClassVar = VarConstraint("T", BaseAttr(TensorType))
    x = operand_def(T)
    axis = prop_def(IntegerAttr)
    result = result_def(T)
    traits = traits_def(Pure())
    assembly_format = "$x attr-dict `:` type($result)"
    irdl_options = (ParsePropInAttrDict(),)

    def __init__(self, x: SSAValue | Operation, axis: int = -1) -> None:
        x = SSAValue.get(x)
        super().__init__(operands=[x], properties={"axis": IntegerAttr(axis, i64)}, result_types=[x.type])

    def verify_(self) -> None:
        t = _ranked_tensor(self, self.x, "operand")
        if not is_float(t.element_type):
            raise VerifyException(f"'{self.name}' needs a float element type, got {t.element_type}")
        if not t.get_shape():
            raise VerifyException(f"'{self.name}' needs an operand of rank >= 1")
        _axis(self, self.axis.value.data, len(t.get_shape()))
        _expect_type(self, self.result.type, t)


@irdl_op_definition
class SoftmaxOp(_AxisFloatOp):
    """exp(x - max) / sum(exp(x - max)) along `axis` (numerically stable)."""

    name = "accy.softmax"


@irdl_op_definition
class LogSoftmaxOp(_AxisFloatOp):
    """x - max - log(sum(exp(x - max))) along `axis` (numerically stable)."""

    name = "accy.log_softmax"


@irdl_op_definition
class LayerNormOp(IRDLOperation):
    """(x - mean) / sqrt(var + epsilon) * gamma + beta over the last dim, with
    the population variance; gamma and beta have the last dim's shape."""

    name = "accy.layer_norm"
    x = operand_def(TensorType)
    gamma = operand_def(TensorType)
    beta = operand_def(TensorType)
    epsilon = prop_def(FloatAttr)
    result = result_def(TensorType)
    traits = traits_def(Pure())
    assembly_format = "$x `,` $gamma `,` $beta attr-dict `:` type($x) `,` type($gamma) `,` type($beta) `->` type($result)"
    irdl_options = (ParsePropInAttrDict(),)

    def __init__(self, x: SSAValue | Operation, gamma: SSAValue | Operation, beta: SSAValue | Operation, epsilon: float = 1e-5) -> None:
        x = SSAValue.get(x)
        super().__init__(
            operands=[x, gamma, beta],
            properties={"epsilon": FloatAttr(epsilon, Float32Type())},
            result_types=[x.type],
        )

    def verify_(self) -> None:
        t = _ranked_tensor(self, self.x, "operand")
        if not is_float(t.element_type) or not t.get_shape():
            raise VerifyException(f"'{self.name}' needs a float operand of rank >= 1, got {t}")
        want = tensor(t.get_shape()[-1:], t.element_type)
        for what, v in (("gamma", self.gamma), ("beta", self.beta)):
            if v.type != want:
                raise VerifyException(f"'{self.name}' {what} must be {want} (the last dim of x), got {v.type}")
        # A negative epsilon can make var + epsilon negative or zero: NaN or inf.
        epsilon = self.epsilon.value.data
        if not (math.isfinite(epsilon) and epsilon >= 0):
            raise VerifyException(f"'{self.name}' epsilon must be a finite number >= 0, got {epsilon:g}")
        _expect_type(self, self.result.type, t)


@irdl_op_definition
class AttentionOp(IRDLOperation):
    """softmax(scale·q·kᵀ [masked where key > query]) · v, with q [..,Sq,D],
    k [..,Sk,D], v [..,Sk,Dv] -> [..,Sq,Dv]."""

    name = "accy.attention"
    q = operand_def(TensorType)
    k = operand_def(TensorType)
    v = operand_def(TensorType)
    scale = prop_def(FloatAttr)
    causal = prop_def(BoolAttr, default_value=BoolAttr.from_bool(False))
    result = result_def(TensorType)
    traits = traits_def(Pure())
    assembly_format = "$q `,` $k `,` $v attr-dict `:` type($q) `,` type($k) `,` type($v) `->` type($result)"
    irdl_options = (ParsePropInAttrDict(),)

    def __init__(
        self, q: SSAValue | Operation, k: SSAValue | Operation, v: SSAValue | Operation, scale: float, causal: bool = False
    ) -> None:
        q, v = SSAValue.get(q), SSAValue.get(v)
        shape = (*shape_of(q)[:-1], shape_of(v)[-1])
        super().__init__(
            operands=[q, k, v],
            properties={"scale": FloatAttr(scale, Float32Type()), "causal": BoolAttr.from_bool(causal)},
            result_types=[tensor(shape, elem_of(q))],
        )

    def verify_(self) -> None:
        q = _ranked_tensor(self, self.q, "q")
        k = _ranked_tensor(self, self.k, "k")
        v = _ranked_tensor(self, self.v, "v")
        qs, ks, vs = q.get_shape(), k.get_shape(), v.get_shape()
        if not is_float(q.element_type) or not (q.element_type == k.element_type == v.element_type):
            raise VerifyException(f"'{self.name}' q, k and v must share a float element type")
        if not (len(qs) == len(ks) == len(vs) >= 2):
            raise VerifyException(f"'{self.name}' q, k and v must have one rank >= 2, got {len(qs)}, {len(ks)}, {len(vs)}")
        if qs[:-2] != ks[:-2] or qs[:-2] != vs[:-2]:
            raise VerifyException(f"'{self.name}' batch dims of q {list(qs[:-2])}, k {list(ks[:-2])}, v {list(vs[:-2])} differ")
        if qs[-1] != ks[-1]:
            raise VerifyException(f"'{self.name}' q and k head dims differ: {qs[-1]} and {ks[-1]}")
        if ks[-2] != vs[-2]:
            raise VerifyException(f"'{self.name}' k and v sequence lengths differ: {ks[-2]} and {vs[-2]}")
        _expect_type(self, self.result.type, tensor((*qs[:-1], vs[-1]), q.element_type))


# --------------------------------------------------------------------------
# Windows: convolution and pooling over [N, C, spatial...] (ONNX's layout)
# --------------------------------------------------------------------------


def infer_window(
    spatial: Sequence[int],
    window: Sequence[int],
    strides: Sequence[int],
    dilations: Sequence[int],
    pads_low: Sequence[int],
    pads_high: Sequence[int],
) -> tuple[int, ...]:
    """The output's spatial dims of a window op: along each spatial dim d,
    floor((spatial + pads_low + pads_high - span) / stride) + 1 windows, where
    span = dilation * (window - 1) + 1 (ONNX Conv/Pool with ceil_mode = 0)."""
    sp = len(spatial)
    for what, values in (("window", window), ("strides", strides), ("dilations", dilations),
                         ("pads_low", pads_low), ("pads_high", pads_high)):
        if len(values) != sp:
            raise ValueError(f"{what} has {len(values)} entries, the operand has {sp} spatial dims")
    for what, values, least in (("window", window, 1), ("strides", strides, 1), ("dilations", dilations, 1),
                                ("pads_low", pads_low, 0), ("pads_high", pads_high, 0)):
        if any(v < least for v in values):
            raise ValueError(f"{what} {list(values)} must be >= {least}")
    out = []
    for d in range(sp):
        span = dilations[d] * (window[d] - 1) + 1
        padded = spatial[d] + pads_low[d] + pads_high[d]
        if span > padded:
            raise ValueError(f"spatial dim {d}: the window spans {span}, more than the padded input's {padded}")
        out.append((padded - span) // strides[d] + 1)
    return tuple(out)


class _WindowOp(IRDLOperation):
    """What accy.conv and accy.pool share: the spatial geometry."""

    strides = prop_def(DenseArrayBase)
    dilations = prop_def(DenseArrayBase)
    pads_low = prop_def(DenseArrayBase)
    pads_high = prop_def(DenseArrayBase)

    def geometry(self) -> dict[str, tuple[int, ...]]:
        """strides, dilations, pads_low and pads_high as tuples."""
        return {p: tuple(getattr(self, p).get_values()) for p in ("strides", "dilations", "pads_low", "pads_high")}

    @staticmethod
    def geometry_properties(
        sp: int,
        strides: Sequence[int] | None,
        dilations: Sequence[int] | None,
        pads_low: Sequence[int] | None,
        pads_high: Sequence[int] | None,
    ) -> dict[str, Attribute]:
        ones, zeros = [1] * sp, [0] * sp
        return {
            "strides": i64_array(ones if strides is None else strides),
            "dilations": i64_array(ones if dilations is None else dilations),
            "pads_low": i64_array(zeros if pads_low is None else pads_low),
            "pads_high": i64_array(zeros if pads_high is None else pads_high),
        }

    def _spatial_out(self, spatial: Sequence[int], window: Sequence[int]) -> tuple[int, ...]:
        try:
            return infer_window(spatial, window, **self.geometry())
        except ValueError as e:
            raise VerifyException(f"'{self.name}' {e}") from None


@irdl_op_definition
class ConvOp(_WindowOp):
    """N-d convolution (ONNX Conv without bias: a bias is an elementwise add
    after it). input [N, C, x...], weight [M, C/groups, k...] -> [N, M, y...]:

        r[n, m, y] = sum over c < C/groups, t < k of
                     input_padded[n, g·C/groups + c, y·strides + t·dilations] · weight[m, c, t]

    with g = m // (M/groups) and input_padded the input with pads_low/pads_high
    zeros before/after each spatial dim; y's sizes are `infer_window`'s.
    Float element types only (input, weight and result share one)."""

    name = "accy.conv"
    input = operand_def(TensorType)
    weight = operand_def(TensorType)
    groups = prop_def(IntegerAttr, default_value=IntegerAttr(1, i64))
    result = result_def(TensorType)
    traits = traits_def(Pure())
    assembly_format = "$input `,` $weight attr-dict `:` type($input) `,` type($weight) `->` type($result)"
    irdl_options = (ParsePropInAttrDict(),)

    def __init__(
        self,
        input: SSAValue | Operation,
        weight: SSAValue | Operation,
        strides: Sequence[int] | None = None,
        dilations: Sequence[int] | None = None,
        pads_low: Sequence[int] | None = None,
        pads_high: Sequence[int] | None = None,
        groups: int = 1,
    ) -> None:
        x, w = SSAValue.get(input), SSAValue.get(weight)
        xs, ws = shape_of(x), shape_of(w)
        props = self.geometry_properties(len(xs) - 2, strides, dilations, pads_low, pads_high)
        props["groups"] = IntegerAttr(groups, i64)
        g = {k: v.get_values() for k, v in props.items() if isinstance(v, DenseArrayBase)}  # type: ignore[union-attr]
        out = infer_window(xs[2:], ws[2:], **g)
        super().__init__(operands=[x, w], properties=props, result_types=[tensor((xs[0], ws[0], *out), elem_of(x))])

    def verify_(self) -> None:
        x = _ranked_tensor(self, self.input, "input")
        w = _ranked_tensor(self, self.weight, "weight")
        xs, ws = x.get_shape(), w.get_shape()
        if not is_float(x.element_type) or w.element_type != x.element_type:
            raise VerifyException(
                f"'{self.name}' input and weight must share a float element type, got {x.element_type} and {w.element_type}"
            )
        if len(xs) < 3 or len(ws) != len(xs):
            raise VerifyException(
                f"'{self.name}' input [N, C, spatial...] and weight [M, C/groups, kernel...] need one rank >= 3, "
                f"got {list(xs)} and {list(ws)}"
            )
        groups = self.groups.value.data
        if groups < 1 or xs[1] % groups or ws[0] % groups:
            raise VerifyException(
                f"'{self.name}' groups {groups} must be >= 1 and divide the input channels ({xs[1]}) and the output channels ({ws[0]})"
            )
        if ws[1] * groups != xs[1]:
            raise VerifyException(
                f"'{self.name}' weight dim 1 is {ws[1]}, expected input channels / groups = {xs[1] // groups}"
            )
        out = self._spatial_out(xs[2:], ws[2:])
        _expect_type(self, self.result.type, tensor((xs[0], ws[0], *out), x.element_type))


POOL_KINDS = ("max", "average", "sum")


@irdl_op_definition
class PoolOp(_WindowOp):
    """N-d pooling (ONNX MaxPool/AveragePool with ceil_mode = 0) of x
    [N, C, x...] over windows of `window` elements -> [N, C, y...] (y's sizes
    are `infer_window`'s), per (n, c):

    - max: the largest element of the window inside the input (the padding
      never wins; a window wholly in the padding gives the element type's
      lowest value, -inf for floats);
    - sum: the sum of the window's elements inside the input;
    - average: that sum divided by how many of the window's elements are
      inside the input, or with count_include_pad by the window's size
      (every window of the floor geometry lies in the padded input); a window
      wholly in the padding without count_include_pad is 0/0 = NaN.

    There is no ceil_mode: a frontend states ONNX's ceil_mode = 1 as larger
    pads_high (the importer does, and corrects an average's divisor where
    those extra pads would count). max and sum take any numeric element type
    but i1; average takes floats."""

    name = "accy.pool"
    x = operand_def(TensorType)
    kind = prop_def(StringAttr)
    window = prop_def(DenseArrayBase)
    count_include_pad = prop_def(BoolAttr, default_value=BoolAttr.from_bool(False))
    result = result_def(TensorType)
    traits = traits_def(Pure())
    assembly_format = "$x attr-dict `:` type($x) `->` type($result)"
    irdl_options = (ParsePropInAttrDict(),)

    def __init__(
        self,
        x: SSAValue | Operation,
        kind: str,
        window: Sequence[int],
        strides: Sequence[int] | None = None,
        dilations: Sequence[int] | None = None,
        pads_low: Sequence[int] | None = None,
        pads_high: Sequence[int] | None = None,
        count_include_pad: bool = False,
    ) -> None:
        x = SSAValue.get(x)
        xs = shape_of(x)
        props = self.geometry_properties(len(xs) - 2, strides, dilations, pads_low, pads_high)
        g = {k: v.get_values() for k, v in props.items()}  # type: ignore[union-attr]
        out = infer_window(xs[2:], window, **g)
        props.update(
            kind=StringAttr(kind), window=i64_array(window), count_include_pad=BoolAttr.from_bool(count_include_pad)
        )
        super().__init__(operands=[x], properties=props, result_types=[tensor((*xs[:2], *out), elem_of(x))])

    def verify_(self) -> None:
        kind = _str_choice(self, "kind", POOL_KINDS)
        t = _ranked_tensor(self, self.x, "operand")
        et, xs = t.element_type, t.get_shape()
        if is_bool(et) or (kind == "average" and not is_float(et)):
            raise VerifyException(f"'{self.name}' {kind} does not take element type {et}")
        if len(xs) < 3:
            raise VerifyException(f"'{self.name}' operand [N, C, spatial...] needs rank >= 3, got {list(xs)}")
        out = self._spatial_out(xs[2:], self.window.get_values())
        _expect_type(self, self.result.type, tensor((*xs[:2], *out), et))


@irdl_op_definition
class YieldOp(IRDLOperation):
    """Terminator of `accy.iterate`: the carried values for the next trip."""

    name = "accy.yield"
    values = var_operand_def(TensorType)
    traits = lazy_traits_def(lambda: (IsTerminator(), Pure(), HasParent(IterateOp)))
    assembly_format = "($values^ `:` type($values))? attr-dict"
    irdl_options = (ParsePropInAttrDict(),)

    def __init__(self, values: Sequence[SSAValue | Operation]) -> None:
        super().__init__(operands=[list(values)])


@irdl_op_definition
class IterateOp(IRDLOperation):
    """Runs its one-block region `count` times (like `scf.for` with
    iter_args): the block arguments are the carried values, starting at
    `inits`; the results are the values yielded by the last trip (the inits
    when count is 0)."""

    name = "accy.iterate"
    inits = var_operand_def(TensorType)
    count = prop_def(IntegerAttr)
    body = region_def("single_block")
    res = var_result_def(TensorType)
    traits = traits_def(RecursiveMemoryEffect(), IteratePatterns())

    def __init__(self, inits: Sequence[SSAValue | Operation], count: int, body: Region) -> None:
        vals = [SSAValue.get(v) for v in inits]
        super().__init__(
            operands=[vals],
            properties={"count": IntegerAttr(count, i64)},
            regions=[body],
            result_types=[[v.type for v in vals]],
        )

    def verify_(self) -> None:
        if self.count.value.data < 0:
            raise VerifyException(f"'{self.name}' count must be >= 0, got {self.count.value.data}")
        types = [v.type for v in self.inits]
        # Lists of attributes print as their Python reprs: spell them as MLIR does.
        shown = f"({', '.join(map(str, types))})"
        block = self.body.block
        if [a.type for a in block.args] != types:
            raise VerifyException(f"'{self.name}' block argument types must match the init types {shown}")
        if [r.type for r in self.res] != types:
            raise VerifyException(f"'{self.name}' result types must match the init types {shown}")
        last = block.last_op
        if not isinstance(last, YieldOp):
            raise VerifyException(f"'{self.name}' body must end in accy.yield")
        if [v.type for v in last.values] != types:
            raise VerifyException(f"'{self.name}' yielded types ({', '.join(str(v.type) for v in last.values)}) must match {shown}")


#: The launch a hand-written kernel states (global size per dimension; its
#: local size is `gpu.known_block_size`), used by a call that gives none.
KERNEL_GLOBAL_SIZE_ATTR = "accy.global_size"


#: Words OpenCL C (and C) reserve, which no kernel may be called.
RESERVED_KERNEL_NAMES = frozenset(
    "kernel global local constant private read_only write_only read_write auto break case char const continue "
    "default do double else enum extern float for goto if inline int long register restrict return short signed "
    "sizeof static struct switch typedef union unsigned void volatile while bool half uchar ushort uint ulong "
    "size_t main".split()
)


def kernel_name_problem(name: str) -> str | None:
    """Why `name` cannot name a kernel (every backend prints it as a C
    function name), or None when it can."""
    if not name.isidentifier() or not name.isascii() or name in RESERVED_KERNEL_NAMES or name.startswith("__"):
        return f"kernel name {name!r} is not usable: give an ASCII identifier that is no OpenCL C keyword"
    return None


class _KernelCallSymbolUser(SymbolUserOpInterface):
    def verify(self, op: Operation) -> None:
        # KernelCallOp.verify_ resolves the callee, after its other checks.
        return None


@irdl_op_definition
class KernelCallOp(IRDLOperation):
    """Runs the custom kernel `callee` on `inputs`, producing tensors of the
    result types. `global_size` / `local_size` are its launch sizes."""

    name = "accy.kernel_call"
    inputs = var_operand_def(TensorType)
    callee = prop_def(SymbolRefAttr)
    global_size = opt_prop_def(DenseArrayBase)
    local_size = opt_prop_def(DenseArrayBase)
    outs = var_result_def(TensorType)
    traits = traits_def(_KernelCallSymbolUser())
    assembly_format = "$callee `(` $inputs `)` attr-dict `:` `(` type($inputs) `)` `->` type($outs)"
    irdl_options = (ParsePropInAttrDict(),)

    def __init__(
        self,
        callee: str,
        inputs: Sequence[SSAValue | Operation],
        result_types: Sequence[Attribute],
        global_size: Sequence[int] | None = None,
        local_size: Sequence[int] | None = None,
    ) -> None:
        props: dict[str, Attribute] = {"callee": SymbolRefAttr(callee)}
        if global_size is not None:
            props["global_size"] = i64_array(global_size)
        if local_size is not None:
            props["local_size"] = i64_array(local_size)
        super().__init__(operands=[list(inputs)], properties=props, result_types=[list(result_types)])

    def verify_(self) -> None:
        for i, v in enumerate(self.inputs):
            _ranked_tensor(self, v, f"input #{i}")
        if not self.outs:
            raise VerifyException(f"'{self.name}' must produce at least one result")
        for name in ("global_size", "local_size"):
            sizes = getattr(self, name)
            if sizes is not None and (not 1 <= len(sizes.get_values()) <= 3 or min(sizes.get_values()) < 1):
                raise VerifyException(f"'{self.name}' {name} must have 1 to 3 positive entries")
        self._verify_callee()

    def launch_sizes(self, callee: gpu.FuncOp) -> tuple[list[int], list[int]]:
        """(global size, local size) per dimension of the call: its own
        `global_size` / `local_size`, else what the callee states
        (`accy.global_size`, `gpu.known_block_size`); local sizes default to
        1. ValueError when neither says the global size, or a global size is
        not a multiple of its local size."""
        stated = callee.attributes.get(KERNEL_GLOBAL_SIZE_ATTR)
        sizes = self.global_size or stated
        if sizes is None:
            raise ValueError(
                f"'{self.name}' of {self.callee} states no launch size: give it global_size (and local_size), "
                f"or put {KERNEL_GLOBAL_SIZE_ATTR} on the kernel"
            )
        glob = list(sizes.get_values())  # type: ignore[attr-defined]
        known = callee.known_block_size
        if self.local_size is not None:
            local = list(self.local_size.get_values())
        elif known is not None and self.global_size is None:
            local = list(known.get_values())[: len(glob)]
        else:
            local = [1] * len(glob)
        local = [*local, *[1] * (len(glob) - len(local))]
        if len(local) != len(glob) or any(g % b for g, b in zip(glob, local, strict=True)):
            raise ValueError(f"'{self.name}' of {self.callee}: global size {glob} is not a multiple of local size {local}")
        return glob, local

    def _verify_callee(self) -> None:
        # The callee is a gpu.func of a gpu.module in the same module, taking
        # the inputs' buffers, then the outputs'.
        callee = SymbolTable.lookup_symbol(self, self.callee)
        if callee is None:
            raise VerifyException(
                f"'{self.name}' callee {self.callee} is not defined in the module (it must name a gpu.func "
                "in a gpu.module, e.g. @kernels::@k)"
            )
        if not isinstance(callee, gpu.FuncOp):
            raise VerifyException(f"'{self.name}' callee {self.callee} is a '{callee.name}', not a gpu.func")
        want = len(self.inputs) + len(self.outs)
        have = len(callee.function_type.inputs.data)
        if have != want:
            raise VerifyException(
                f"'{self.name}' callee {self.callee} takes {have} buffer(s); the call passes "
                f"{len(self.inputs)} input(s) and {len(self.outs)} output(s)"
            )
        # Each buffer holds its tensor flat (i1 stored as i8).
        values = [*self.inputs, *self.outs]
        for i, (v, t) in enumerate(zip(values, callee.function_type.inputs.data, strict=True)):
            what = f"input #{i}" if i < len(self.inputs) else f"result #{i - len(self.inputs)}"
            tt = v.type
            assert isinstance(tt, TensorType)
            et = tt.element_type
            stored = IntegerType(8) if isinstance(et, IntegerType) and et.width.data == 1 else et
            want_t = MemRefType(stored, [math.prod(tt.get_shape())])
            if not isinstance(t, MemRefType) or t.element_type != want_t.element_type or t.get_shape() != want_t.get_shape():
                raise VerifyException(
                    f"'{self.name}' {what} is {tt}, but buffer #{i} of {self.callee} is {t} (expected {want_t})"
                )


ELEMENTWISE_OPS: tuple[type[IRDLOperation], ...] = (*UNARY_OPS, *BINARY_OPS, NotOp, CmpOp, SelectOp, CastOp)
VIEW_OPS: tuple[type[IRDLOperation], ...] = (ReshapeOp, TransposeOp, BroadcastOp, SliceOp)

Accy = Dialect(
    "accy",
    [
        ConstantOp,
        *ELEMENTWISE_OPS,
        *VIEW_OPS,
        ConcatOp,
        GatherOp,
        IotaOp,
        PadOp,
        DotGeneralOp,
        ReduceOp,
        ScanOp,
        SoftmaxOp,
        LogSoftmaxOp,
        LayerNormOp,
        AttentionOp,
        ConvOp,
        PoolOp,
        IterateOp,
        YieldOp,
        KernelCallOp,
    ],
    [],
)

