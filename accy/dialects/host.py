"""The `accy_host` dialect: host-schedule ops that the gpu/memref dialects lack
(`accy_host.fallback`, `accy_host.yield`, `accy_host.constant`,
`accy_host.copy`), plus the
`#accy.target` and `#gpu.address_space` attributes kernel IR uses. It also
names the host-schedule conventions that the kernelize pass writes and the
backends and the runtime read (`KERNELS_MODULE`, `SIGNATURE_ATTR`,
`PEAK_BYTES_ATTR`), so that none of them imports another to agree on a name.

`accy_host.fallback` is one work item that the kernelize pass declined to turn
into a kernel (e.g. a lowering that cannot honour the exact math tier). It
keeps the original tensor ops in its region; the runtime runs them on the host
with the reference interpreter, between kernel launches:

    accy_host.fallback "main_k3_row_pipeline" ins(%in0, %in1 : memref<12xf32>, memref<4xf32>)
        outs(%out0 : memref<12xf32>) reason "no exact lowering" {
    ^bb0(%a : tensor<3x4xf32>, %b : tensor<4xf32>):
      ...
      accy_host.yield %r : tensor<3x4xf32>
    }

Operands are the input buffers, then the output buffers (flat memrefs); the
property `num_inputs` splits them. The region has one block whose arguments
are the inputs as tensors: input i is the first `numel` elements of buffer i
reshaped row-major to argument i's shape (i1 tensors live in i8 buffers as
0/1). The block ends in `accy_host.yield` of one tensor per output buffer,
written the same way. `kernel` names the declined work item, `reason` says why.
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects import gpu, memref, vector
from xdsl.dialects.builtin import (
    I64,
    DenseIntOrFPElementsAttr,
    IntegerAttr,
    IntegerType,
    MemRefType,
    StringAttr,
    TensorType,
    i64,
)
from xdsl.dialects.utils.enum_attribute import EnumAttribute
from xdsl.ir import Attribute, Dialect, Region, SSAValue
from xdsl.irdl import (
    IRDLOperation,
    irdl_attr_definition,
    irdl_op_definition,
    operand_def,
    prop_def,
    region_def,
    result_def,
    traits_def,
    var_operand_def,
)
from xdsl.parser import AttrParser, Parser
from xdsl.printer import Printer
from xdsl.traits import HasParent, IsolatedFromAbove, IsTerminator
from xdsl.utils.exceptions import VerifyException
from xdsl.utils.str_enum import StrEnum

from accy.dialects.target import TargetAttr
from accy.dialects.types import numel

#: The `gpu.module` of a kernelized module that holds its kernels.
KERNELS_MODULE = "kernels"
#: On a kernelized (host) function: its tensor signature before kernelization.
SIGNATURE_ATTR = "accy.signature"
#: On a kernelized (host) function: the buffer plan's peak bytes.
PEAK_BYTES_ATTR = "accy.peak_bytes"
#: The most work-items a hand-written kernel's launch may have on any
#: device: past it a launch is a mistake more often than a plan (PoCL
#: aborted on 2^40 work-groups; the LLVM device would run them for days).
MAX_WORK_ITEMS = 2**32


class AddressSpace(StrEnum):
    GLOBAL = "global"
    WORKGROUP = "workgroup"
    PRIVATE = "private"


@irdl_attr_definition
class AddressSpaceAttr(EnumAttribute[AddressSpace]):
    """MLIR's `#gpu.address_space<global|workgroup|private>`, which xDSL 0.75's
    gpu dialect lacks: the memory space of a `memref.alloca` of local
    (workgroup) memory in a kernel. Registered by this dialect under MLIR's
    name so kernel IR reads as MLIR's."""

    name = "gpu.address_space"

    def print_parameter(self, printer: Printer) -> None:
        printer.print_string(f"<{self.data.value}>")

    @classmethod
    def parse_parameter(cls, parser: AttrParser) -> AddressSpace:
        with parser.in_angle_brackets():
            return parser.parse_str_enum(AddressSpace)


WORKGROUP = AddressSpaceAttr(AddressSpace.WORKGROUP)


def buffer_element_type(tensor_element: Attribute) -> Attribute:
    """The element type of the buffer holding a tensor element (i1 -> i8)."""
    if isinstance(tensor_element, IntegerType) and tensor_element.width.data == 1:
        return IntegerType(8)
    return tensor_element


def written_arguments(func: gpu.FuncOp) -> set[int]:
    """Indices of the kernel arguments (buffers) that `func` stores to: the
    others are read-only, and a runtime may pass them in place."""
    args = list(func.body.block.args)
    return {
        args.index(op.operands[1])
        for op in func.walk()
        if isinstance(op, memref.StoreOp | vector.StoreOp) and op.operands[1] in args
    }


def used_arguments(func: gpu.FuncOp) -> set[int]:
    """Indices of the kernel arguments that `func` reads or writes at all
    (a stage of a lowering is passed every buffer of its work item)."""
    return {i for i, arg in enumerate(func.body.block.args) if arg.uses}


def _check_fits(op: IRDLOperation, buffer: SSAValue, t: Attribute, what: str) -> None:
    """A tensor `t` is stored in (a prefix of) the flat memref `buffer`."""
    if not isinstance(t, TensorType):
        raise VerifyException(f"'{op.name}' {what} must be a tensor, got {t}")
    bt = buffer.type
    if not isinstance(bt, MemRefType) or len(bt.get_shape()) != 1:
        raise VerifyException(f"'{op.name}' buffer for {what} must be a flat 1-D memref, got {bt}")
    if bt.element_type != buffer_element_type(t.element_type):
        raise VerifyException(
            f"'{op.name}' {what} has element type {t.element_type} but its buffer holds {bt.element_type}"
        )
    count = numel(t.get_shape())
    if bt.get_shape()[0] < count:
        raise VerifyException(f"'{op.name}' {what} has {count} elements but its buffer holds {bt.get_shape()[0]}")


@irdl_op_definition
class FallbackOp(IRDLOperation):
    """A declined work item, run on the host (module docstring)."""

    name = "accy_host.fallback"

    buffers = var_operand_def(MemRefType)
    num_inputs = prop_def(IntegerAttr[I64])
    kernel = prop_def(StringAttr)
    reason = prop_def(StringAttr)
    body = region_def("single_block")

    traits = traits_def(IsolatedFromAbove())

    def __init__(
        self,
        inputs: Sequence[SSAValue],
        outputs: Sequence[SSAValue],
        body: Region,
        kernel: str,
        reason: str,
    ) -> None:
        super().__init__(
            operands=[[*inputs, *outputs]],
            properties={
                "num_inputs": IntegerAttr(len(inputs), i64),
                "kernel": StringAttr(kernel),
                "reason": StringAttr(reason),
            },
            regions=[body],
        )

    @property
    def inputs(self) -> tuple[SSAValue, ...]:
        return tuple(self.buffers[: self.num_inputs.value.data])

    @property
    def outputs(self) -> tuple[SSAValue, ...]:
        return tuple(self.buffers[self.num_inputs.value.data :])

    @property
    def yield_op(self) -> YieldOp:
        last = self.body.block.last_op
        assert isinstance(last, YieldOp)
        return last

    def verify_(self) -> None:
        n = self.num_inputs.value.data
        if not 0 <= n <= len(self.buffers):
            raise VerifyException(f"'{self.name}' num_inputs = {n} but it has {len(self.buffers)} buffers")
        block = self.body.block
        if len(block.args) != n:
            raise VerifyException(f"'{self.name}' region takes {len(block.args)} arguments for {n} input buffers")
        for i, (arg, buf) in enumerate(zip(block.args, self.inputs, strict=True)):
            _check_fits(self, buf, arg.type, f"input {i}")
        last = block.last_op
        if not isinstance(last, YieldOp):
            raise VerifyException(f"'{self.name}' region must end in accy_host.yield")
        outs = self.outputs
        if len(last.values) != len(outs):
            raise VerifyException(
                f"'{self.name}' yields {len(last.values)} values for {len(outs)} output buffers"
            )
        for i, (v, buf) in enumerate(zip(last.values, outs, strict=True)):
            _check_fits(self, buf, v.type, f"output {i}")

    def print(self, printer: Printer) -> None:
        def group(keyword: str, values: Sequence[SSAValue]) -> None:
            printer.print_string(f" {keyword}(")
            printer.print_list(values, printer.print_operand)
            if values:
                printer.print_string(" : ")
                printer.print_list([v.type for v in values], printer.print_attribute)
            printer.print_string(")")

        printer.print_string(" ")
        printer.print_attribute(self.kernel)
        group("ins", self.inputs)
        group("outs", self.outputs)
        printer.print_string(" reason ")
        printer.print_attribute(self.reason)
        printer.print_string(" ")
        printer.print_region(self.body, print_entry_block_args=True)
        if self.attributes:
            printer.print_op_attributes(self.attributes, print_keyword=True)

    @classmethod
    def parse(cls, parser: Parser) -> FallbackOp:
        kernel = parser.parse_str_literal(" (the fallback's kernel name)")

        def group(keyword: str) -> list[SSAValue]:
            parser.parse_keyword(keyword)
            parser.parse_punctuation("(")
            if parser.parse_optional_punctuation(")") is not None:
                return []
            pos = parser.pos
            names = parser.parse_comma_separated_list(parser.Delimiter.NONE, parser.parse_unresolved_operand)
            parser.parse_punctuation(":")
            types = parser.parse_comma_separated_list(parser.Delimiter.NONE, parser.parse_type)
            parser.parse_punctuation(")")
            if len(names) != len(types):
                parser.raise_error(f"{len(names)} operands but {len(types)} types", pos, parser.pos)
            return parser.resolve_operands(names, types, pos)

        inputs = group("ins")
        outputs = group("outs")
        parser.parse_keyword("reason")
        reason = parser.parse_str_literal(" (why the work item fell back)")
        body = parser.parse_region()
        op = cls(inputs, outputs, body, kernel, reason)
        if (attrs := parser.parse_optional_attr_dict_with_keyword()) is not None:
            op.attributes |= attrs.data
        return op


@irdl_op_definition
class ConstantOp(IRDLOperation):
    """A buffer holding a constant tensor: `value`'s elements row-major (i1 as
    i8 0/1) in its first numel elements. The buffer is an ordinary buffer of
    the host schedule: a later kernel may reuse it (the runtime refills it on
    every call when one does).

        %c = accy_host.constant dense<[1.0, 2.0]> : tensor<2xf32> -> memref<2xf32>
    """

    name = "accy_host.constant"

    value = prop_def(DenseIntOrFPElementsAttr)
    result = result_def(MemRefType)

    assembly_format = "$value `->` type($result) attr-dict"

    def __init__(self, value: DenseIntOrFPElementsAttr, buffer_type: MemRefType) -> None:
        super().__init__(properties={"value": value}, result_types=[buffer_type])

    def verify_(self) -> None:
        t = self.value.type
        if not isinstance(t, TensorType):
            raise VerifyException(f"'{self.name}' value must be a tensor constant, got {t}")
        _check_fits(self, self.result, t, "value")


@irdl_op_definition
class CopyOp(IRDLOperation):
    """Copies the first `count` elements of one flat buffer into another, on
    the device (`memref.copy`, which needs equal shapes, for buffers of
    different sizes: a loop's carried values live in buffers sized for the
    largest value that shares them).

        accy_host.copy %a to %b count 12 : memref<12xf32> to memref<16xf32>
    """

    name = "accy_host.copy"

    source = operand_def(MemRefType)
    target = operand_def(MemRefType)
    count = prop_def(IntegerAttr[I64])

    assembly_format = "$source `to` $target `count` $count attr-dict `:` type($source) `to` type($target)"

    def __init__(self, source: SSAValue, target: SSAValue, count: int) -> None:
        super().__init__(operands=[source, target], properties={"count": IntegerAttr(count, i64)})

    def verify_(self) -> None:
        n = self.count.value.data
        for what, buf in (("source", self.source), ("target", self.target)):
            t = buf.type
            assert isinstance(t, MemRefType)
            if len(t.get_shape()) != 1:
                raise VerifyException(f"'{self.name}' {what} must be a flat 1-D memref, got {t}")
            if not 0 <= n <= t.get_shape()[0]:
                raise VerifyException(f"'{self.name}' copies {n} elements but its {what} holds {t.get_shape()[0]}")
        if self.source.type.element_type != self.target.type.element_type:  # type: ignore[attr-defined]
            raise VerifyException(f"'{self.name}' source and target element types differ")


@irdl_op_definition
class YieldOp(IRDLOperation):
    """Terminator of `accy_host.fallback`: the output tensors, in output-buffer order."""

    name = "accy_host.yield"

    values = var_operand_def(TensorType)

    traits = traits_def(IsTerminator(), HasParent(FallbackOp))

    assembly_format = "attr-dict ($values^ `:` type($values))?"

    def __init__(self, values: Sequence[SSAValue]) -> None:
        super().__init__(operands=[values])


AccyHost = Dialect("accy_host", [FallbackOp, YieldOp, ConstantOp, CopyOp], [TargetAttr, AddressSpaceAttr])
