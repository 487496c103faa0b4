"""`Kernel`: a Python builder of one hand-written kernel, as kernel IR.

    k = Kernel(DeviceId.AUTO)
    inp = k.define(np.float32, MemScope.GLOBAL, read_only=True, size=n)
    out = k.define(np.float32, MemScope.GLOBAL, read_only=False, size=n)
    i = k.group_index(0, n)                      # work-group id along x; n groups
    k.store(out, k.add(k.load(inp, i), 1.0), i)
    (y,) = k.compile().forward([x], [(n,)])

The kernel is the same kernel IR that `kernelize` produces (a `gpu.func`
over flat global buffers, built through the lowerings' `KernelBuilder`;
docs/kernel-ir.md), printed by `str(k)`. Values are `Value`s (an SSA value
of a scalar, a vector or an index); Python numbers are constants of the
other operand's type. Every elementwise op of the tensor dialect is a
method with the dialect's semantics (docs/op-contract.md), on scalars or
lane-wise on vectors. Index values (ids, loop variables, `k.index(...)`)
have their own arithmetic (`+ - * / %`, `min`, `max`), which the bounds
verifier reasons about.

Launch sizes: `group_index(dim, n)` declares n work-groups along `dim`,
`local_index(dim, m)` m work-items per work-group; `global_index(dim)` is
group * local size + local id. `launch(global_size, local_size)` states the
sizes directly. Undeclared dimensions have size 1.
"""

from __future__ import annotations

import enum
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
from xdsl.dialects import arith, scf, vector
from xdsl.dialects.builtin import IndexType, IntegerType, MemRefType, ModuleOp, VectorType
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.printer import Printer

from accy.dialects import accy
from accy.dialects.accy import kernel_name_problem
from accy.dialects.host import buffer_element_type
from accy.dialects.target import CPU_PROFILE
from accy.passes.kernelization.combining import vector_total
from accy.passes.kernelization.kernel_builder import Access, KernelBuilder
from accy.passes.kernelization.scalar_semantics import apply_scalar, cast
from accy.reference.constants import element_type_for_dtype, numpy_dtype

if TYPE_CHECKING:
    from accy.kernel.compiled import CompiledKernel
    from accy.runtime.device import Device


class KernelError(ValueError):
    """A hand-written kernel is wrong (a type, an index, a buffer): the
    message says what and where."""


class MemScope(enum.Enum):
    """Where a buffer lives: GLOBAL (a kernel argument: an input when
    read-only, else an output), LOCAL (shared by the work-items of a
    work-group; `barrier()` orders their accesses), PRIVATE (one per work-item)."""

    GLOBAL = "global"
    LOCAL = "local"
    PRIVATE = "private"


class MemLayout(enum.Enum):
    """How a load or store moves data: one element (SCALAR) or `width`
    consecutive elements as one vector (VECTOR)."""

    SCALAR = "scalar"
    VECTOR = "vector"


class DeviceId(enum.StrEnum):
    """The device a kernel runs on: AUTO (the default device: an OpenCL GPU
    when one works, else LLVM), LLVM, OPENCL (the first OpenCL device), or
    REFERENCE (the kernel IR interpreted with numpy). Any device name that
    `accy.get_device` knows (`opencl:1`) may be given as a string."""

    AUTO = "auto"
    LLVM = "llvm"
    OPENCL = "opencl"
    REFERENCE = "reference"


Number = int | float | bool


@dataclass(frozen=True, eq=False)
class Value:
    """A value of the kernel: scalar, vector or index. Arithmetic operators
    (`+ - * /`, `%` and unary `-`) build the kernel's ops."""

    kernel: Kernel
    ssa: SSAValue

    @property
    def type(self) -> Attribute:
        return self.ssa.type

    @property
    def is_index(self) -> bool:
        return isinstance(self.ssa.type, IndexType)

    def __add__(self, other: Value | Number) -> Value:
        return self.kernel.add(self, other)

    def __radd__(self, other: Number) -> Value:
        return self.kernel.add(other, self)

    def __sub__(self, other: Value | Number) -> Value:
        return self.kernel.sub(self, other)

    def __rsub__(self, other: Number) -> Value:
        return self.kernel.sub(other, self)

    def __mul__(self, other: Value | Number) -> Value:
        return self.kernel.mul(self, other)

    def __rmul__(self, other: Number) -> Value:
        return self.kernel.mul(other, self)

    def __truediv__(self, other: Value | Number) -> Value:
        return self.kernel.div(self, other)

    def __mod__(self, other: Value | Number) -> Value:
        return self.kernel.rem(self, other)

    def __neg__(self) -> Value:
        return self.kernel.neg(self)

    def __repr__(self) -> str:
        return f"<accy.kernel.Value {self.type}>"


@dataclass(frozen=True, eq=False)
class Buffer:
    """A buffer `define` made: `size` elements of `dtype` in `scope`;
    `index` is its position among the kernel's global buffers as defined
    (-1 for local and private memory)."""

    kernel: Kernel
    memref: SSAValue
    dtype: np.dtype
    scope: MemScope
    read_only: bool
    size: int
    index: int

    @property
    def element_type(self) -> Attribute:
        return element_type_for_dtype(self.dtype)

    def describe(self) -> str:
        if self.scope is MemScope.GLOBAL:
            return f"global buffer #{self.index} ({self.dtype}, {self.size} elements{', read-only' if self.read_only else ''})"
        return f"{self.scope.value} buffer ({self.dtype}, {self.size} elements)"


_DIMS = "xyz"


def _dim(dim: int) -> str:
    if dim not in (0, 1, 2):
        raise KernelError(f"dimension {dim} is not 0, 1 or 2")
    return _DIMS[dim]


def _user_frame() -> str | None:
    """`file:line` of the first caller outside accy.kernel."""
    here = Path(__file__).parent
    frame = sys._getframe(1)
    while frame is not None:
        path = Path(frame.f_code.co_filename)
        if path.parent != here:
            return f"{path.name}:{frame.f_lineno}"
        frame = frame.f_back  # type: ignore[assignment]
    return None


class Kernel:
    """A kernel under construction for `device` (a `DeviceId`, a device
    name, or a `Device` object such as `LLVMDevice(poison=True)`); `name` is
    its function's name (an identifier, no OpenCL C keyword)."""

    def __init__(self, device: DeviceId | str | Device = DeviceId.AUTO, name: str = "custom_kernel") -> None:
        problem = kernel_name_problem(name)
        if problem is not None:
            raise KernelError(problem)
        self.device: str | Device = device.value if isinstance(device, DeviceId) else device
        self.name = name
        self.kb = KernelBuilder.standalone(name, "custom", CPU_PROFILE)
        self.buffers: list[Buffer] = []
        #: Work-groups and work-items per work-group declared per dimension.
        self.groups: list[int | None] = [None, None, None]
        self.locals: list[int | None] = [None, None, None]
        #: Source line (file:line) of each load and store, for diagnostics.
        self.where: dict[Operation, str] = {}
        self._depth = 0

    # -- buffers -------------------------------------------------------------

    def define(
        self, dtype: np.dtype | type, scope: MemScope, read_only: bool = False, size: int = 1
    ) -> Buffer:
        """A buffer of `size` elements of `dtype` (float16/32/64, int8/16/32/64,
        bool). GLOBAL buffers are the kernel's arguments: read-only ones are
        its inputs, the others its outputs (`forward` takes and returns them
        in the order defined). LOCAL and PRIVATE buffers are scratch memory,
        uninitialised; define them outside loops and conditionals."""
        try:
            et = element_type_for_dtype(dtype)
        except (ValueError, TypeError) as e:
            raise KernelError(f"define: {e}") from None
        if not isinstance(size, int | np.integer) or size < 1:
            raise KernelError(f"define: size must be a positive number of elements, got {size!r}")
        if not isinstance(scope, MemScope):
            raise KernelError(f"define: scope must be a MemScope, got {scope!r}")
        st = buffer_element_type(et)
        if scope is MemScope.GLOBAL:
            memref = self.kb.argument(MemRefType(st, [int(size)]))
            index = len([b for b in self.buffers if b.scope is MemScope.GLOBAL])
        else:
            if read_only:
                raise KernelError(f"define: a {scope.value} buffer cannot be read-only (nothing could write it)")
            if self._depth:
                raise KernelError(f"define: define {scope.value} buffers outside loops and conditionals")
            memref = self.kb.local_array(int(size), st, workgroup=scope is MemScope.LOCAL)
            index = -1
        buf = Buffer(self, memref, numpy_dtype(et), scope, read_only, int(size), index)
        self.buffers.append(buf)
        return buf

    # -- work-item ids and launch sizes ---------------------------------------

    def _declare(self, sizes: list[int | None], dim: int, n: int, what: str) -> None:
        _dim(dim)
        if not isinstance(n, int | np.integer) or n < 1:
            raise KernelError(f"{what}: size must be a positive integer, got {n!r}")
        if sizes[dim] is not None and sizes[dim] != n:
            raise KernelError(f"{what}: dimension {dim} was declared with {sizes[dim]}, now {n}")
        sizes[dim] = int(n)

    def group_index(self, dim: int, size: int) -> Value:
        """The id of the work-group along `dim` (0 <= id < size); the launch
        has `size` work-groups along `dim`."""
        self._declare(self.groups, dim, size, "group_index")
        return self._wrap(self.kb.group_id(_dim(dim)))

    def local_index(self, dim: int, size: int) -> Value:
        """The id of the work-item in its work-group along `dim`
        (0 <= id < size); work-groups have `size` work-items along `dim`."""
        self._declare(self.locals, dim, size, "local_index")
        return self._wrap(self.kb.local_id(_dim(dim)))

    def global_index(self, dim: int) -> Value:
        """group id * work-group size + local id along `dim` (the sizes
        declared by `group_index` / `local_index` / `launch`)."""
        return self._wrap(self.kb.global_id(_dim(dim)))

    def launch(self, global_size: Sequence[int], local_size: Sequence[int] | None = None) -> None:
        """States the launch: `global_size` work-items per dimension (1 to 3),
        in work-groups of `local_size` (default 1 each); each global size
        must be a multiple of its local size."""
        local_size = list(local_size) if local_size is not None else [1] * len(global_size)
        if not 1 <= len(global_size) <= 3 or len(local_size) != len(global_size):
            raise KernelError(f"launch: sizes must have 1 to 3 entries each, got {list(global_size)} and {local_size}")
        for d, (g, b) in enumerate(zip(global_size, local_size, strict=True)):
            if b < 1 or g < 1 or g % b:
                raise KernelError(f"launch: global size {g} of dimension {d} is not a positive multiple of local size {b}")
            self._declare(self.locals, d, b, "launch")
            self._declare(self.groups, d, g // b, "launch")

    def launch_sizes(self) -> tuple[list[int], list[int]]:
        """(global size, local size) per dimension, trailing 1s dropped (at least one)."""
        groups = [g or 1 for g in self.groups]
        local = [b or 1 for b in self.locals]
        glob = [g * b for g, b in zip(groups, local, strict=True)]
        dims = max([1] + [d + 1 for d in range(3) if glob[d] != 1 or local[d] != 1])
        return glob[:dims], local[:dims]

    def barrier(self) -> None:
        """Waits until every work-item of the work-group got here; their
        LOCAL memory accesses before it happen before those after it. Every
        work-item of a work-group must reach the same barriers."""
        self.kb.barrier()

    # -- constants and conversions ---------------------------------------------

    def constant(self, value: Number, dtype: np.dtype | type | str) -> Value:
        """A constant of `dtype` (a numpy dtype, or "index")."""
        return self._wrap(self.kb.const(value, self._type(dtype)))

    def index(self, x: Value | int) -> Value:
        """`x` (an integer value or a Python int) as an index."""
        if isinstance(x, int):
            return self._wrap(self.kb.idx(x))
        v = self._ssa(x)
        if isinstance(v.type, IndexType):
            return x  # type: ignore[return-value]
        if not isinstance(v.type, IntegerType) or v.type.width.data == 1:
            raise KernelError(f"index: expects an integer, got {v.type}")
        return self._op(arith.IndexCastOp(v, IndexType()))

    def cast(self, x: Value, dtype: np.dtype | type | str) -> Value:
        """`x` converted to `dtype` as `accy.cast` does: float -> int
        truncates toward zero and saturates (NaN -> 0), bool -> 1/0, x ->
        bool is x != 0, int -> int wraps. An index converts to and from
        integers (`index_cast`) and to floats through int64."""
        v = self._ssa(x)
        dst = self._type(dtype)
        src = _element(v.type)
        if isinstance(src, IndexType) or isinstance(dst, IndexType):
            if isinstance(dst, IndexType):
                if not accy.is_int(src):
                    raise KernelError(f"cast: only integers convert to an index, got {v.type}")
                return self._op(arith.IndexCastOp(v, IndexType()))
            wide = self.kb.val(arith.IndexCastOp(v, IntegerType(64)))
            return self._wrap(cast(self.kb, wide, IntegerType(64), dst))
        return self._wrap(cast(self.kb, v, src, dst))

    def broadcast(self, x: Value | Number, width: int) -> Value:
        """A vector of `width` lanes, each `x` (a scalar)."""
        v = self._ssa(x) if isinstance(x, Value) else None
        if v is None:
            raise KernelError("broadcast: give a Value (use constant() for a number)")
        if isinstance(v.type, VectorType):
            raise KernelError(f"broadcast: {v.type} is already a vector")
        return self._op(vector.BroadcastOp(v, VectorType(v.type, [width])))

    def extract(self, x: Value, lane: int) -> Value:
        """Lane `lane` of vector `x`."""
        v = self._ssa(x)
        if not isinstance(v.type, VectorType) or not 0 <= lane < v.type.get_shape()[0]:
            raise KernelError(f"extract: lane {lane} is not a lane of {v.type}")
        return self._op(vector.ExtractOp(v, [lane], v.type.element_type))

    def reduce(self, x: Value, kind: str) -> Value:
        """The lanes of vector `x` combined: kind "add", "mul", "max" or "min"
        (max and min for floats, NaN-propagating)."""
        v = self._ssa(x)
        if not isinstance(v.type, VectorType):
            raise KernelError(f"reduce: expects a vector, got {v.type}")
        kinds = {"add": "sum", "mul": "prod", "max": "max", "min": "min"}
        if kind not in kinds:
            raise KernelError(f"reduce: kind must be one of {', '.join(kinds)}, got {kind!r}")
        if kind in ("max", "min") and not accy.is_float(v.type.element_type):
            raise KernelError(f"reduce: {kind} takes float vectors, got {v.type}")
        return self._wrap(vector_total(self.kb, kinds[kind], v))

    # -- memory --------------------------------------------------------------

    def load(self, buf: Buffer, index: Value | int, layout: MemLayout = MemLayout.SCALAR, width: int = 4) -> Value:
        """Element `index` of `buf` (SCALAR), or the `width` elements from
        `index` on as a vector (VECTOR). The bounds verifier of `compile()`
        must prove every element read inside the buffer."""
        i, w = self._access(buf, index, layout, width, "load")
        before = set(self.kb.block.ops)
        x = self.kb.load(self._acc(buf), [i], w)
        self._locate(before, "load")
        return self._wrap(x)

    def store(self, buf: Buffer, value: Value | Number, index: Value | int, layout: MemLayout = MemLayout.SCALAR, width: int = 4) -> None:
        """Writes `value` (a scalar for SCALAR, a vector of `width` lanes for
        VECTOR; a number is a constant of the buffer's type) at `index`."""
        i, w = self._access(buf, index, layout, width, "store")
        if buf.read_only:
            raise KernelError(f"store: {buf.describe()} is read-only (defined with read_only=True)")
        et = buf.element_type
        want: Attribute = VectorType(et, [w]) if w > 1 else et
        if isinstance(value, Value):
            v = value.ssa
        else:
            v = self.kb.const(value, want)
        if v.type != want:
            raise KernelError(f"store: {buf.describe()} takes {want}, got {v.type}")
        before = set(self.kb.block.ops)
        self.kb.store(self._acc(buf), [i], v, w)
        self._locate(before, "store")

    def _acc(self, buf: Buffer) -> Access:
        return Access(buf.memref, 0, (1,), buf.element_type)

    def _access(self, buf: Buffer, index: Value | int, layout: MemLayout, width: int, what: str) -> tuple[SSAValue, int]:
        if not isinstance(buf, Buffer) or buf.kernel is not self:
            raise KernelError(f"{what}: the first argument must be a buffer this kernel defined")
        if not isinstance(layout, MemLayout):
            raise KernelError(f"{what}: layout must be a MemLayout, got {layout!r}")
        if layout is MemLayout.VECTOR and width not in (2, 3, 4, 8, 16):
            raise KernelError(f"{what}: vector width must be 2, 3, 4, 8 or 16, got {width}")
        i = self._ssa(self.index(index) if isinstance(index, int) else index)
        if not isinstance(i.type, IndexType):
            i = self._ssa(self.index(Value(self, i)))
        return i, width if layout is MemLayout.VECTOR else 1

    def _locate(self, before: set[Operation], what: str) -> None:
        where = _user_frame()
        if where is None:
            return
        for op in self.kb.block.ops:
            if op not in before:
                self.where[op] = f"{what} at {where}"

    # -- control flow ---------------------------------------------------------

    @contextmanager
    def loop(self, start: Value | int, stop: Value | int, step: Value | int = 1) -> Iterator[Value]:
        """`with k.loop(start, stop, step) as i:` runs the body for i = start,
        start + step, ... while i < stop (index values; step > 0)."""
        lo, hi, st = (self._ssa(self.index(x) if isinstance(x, int) else x) for x in (start, stop, step))
        for v, name in ((lo, "start"), (hi, "stop"), (st, "step")):
            if not isinstance(v.type, IndexType):
                raise KernelError(f"loop: {name} must be an index, got {v.type} (convert it with index())")
        block = Block(arg_types=[IndexType()])
        self.kb.op(scf.ForOp(lo, hi, st, [], Region(block)))
        with self._inside(block):
            yield self._wrap(block.args[0])
            self.kb.op(scf.YieldOp())

    @contextmanager
    def if_(self, cond: Value) -> Iterator[None]:
        """`with k.if_(c):` runs the body where the i1 value `c` is true; an
        `else_()` right after it runs where it is false."""
        c = self._ssa(cond)
        if c.type != IntegerType(1):
            raise KernelError(f"if_: the condition must be a bool (i1) scalar, got {c.type}")
        block = Block()
        op = scf.IfOp(c, [], Region(block), Region())
        self.kb.op(op)
        with self._inside(block):
            yield
            self.kb.op(scf.YieldOp())

    @contextmanager
    def else_(self) -> Iterator[None]:
        """The else branch of the `if_` just closed."""
        ip = self.kb.builder.insertion_point
        op = ip.insert_before.prev_op if ip.insert_before is not None else ip.block.last_op
        if not isinstance(op, scf.IfOp) or op.false_region.blocks:
            raise KernelError("else_: must directly follow a `with k.if_(...)` block")
        block = Block()
        op.false_region.add_block(block)
        with self._inside(block):
            yield
            self.kb.op(scf.YieldOp())

    @contextmanager
    def _inside(self, block: Block) -> Iterator[None]:
        self._depth += 1
        try:
            with self.kb._into(block):
                yield
        finally:
            self._depth -= 1

    # -- values ----------------------------------------------------------------

    def _wrap(self, v: SSAValue) -> Value:
        return Value(self, v)

    def _op(self, op: Operation) -> Value:
        return self._wrap(self.kb.val(op))

    def _ssa(self, x: Value | Number) -> SSAValue:
        if isinstance(x, Value):
            if x.kernel is not self:
                raise KernelError("a value of another kernel was used")
            return x.ssa
        raise KernelError(f"expected a kernel value, got {x!r}")

    def _type(self, dtype: np.dtype | type | str) -> Attribute:
        if isinstance(dtype, str) and dtype == "index":
            return IndexType()
        try:
            return element_type_for_dtype(dtype)
        except (ValueError, TypeError) as e:
            raise KernelError(str(e)) from None

    def _operands(self, what: str, args: Sequence[Value | Number]) -> list[SSAValue]:
        """The operands of an elementwise op: numbers become constants of the
        values' type; a scalar next to vectors is broadcast."""
        values = [a for a in args if isinstance(a, Value)]
        if not values:
            raise KernelError(f"{what}: at least one operand must be a kernel value (use constant() for numbers)")
        for a in args:
            if not isinstance(a, Value | int | float | bool):
                raise KernelError(f"{what}: expected a kernel value or a number, got {a!r}")
        vec = next((v.type for v in values if isinstance(v.type, VectorType)), None)
        like = vec if vec is not None else values[0].type
        out = []
        for a in args:
            if isinstance(a, Value):
                v = self._ssa(a)
                if vec is not None and not isinstance(v.type, VectorType):
                    v = self.kb.val(vector.BroadcastOp(v, VectorType(v.type, vec.get_shape())))
                out.append(v)
            else:
                if isinstance(a, float) and not a.is_integer() and not accy.is_float(_element(like)):
                    raise KernelError(f"{what}: {a} is no value of {_element(like)} (cast() the other operand to a float)")
                out.append(self.kb.const(a, like))
        return out

    def _elementwise(self, what: str, op: type[Operation], args: Sequence[Value | Number], predicate: str | None = None) -> Value:
        ops = self._operands(what, args)
        data = ops[1:] if op is accy.SelectOp else ops
        types = {_element(v.type) for v in data}
        if len(types) > 1 or len({v.type for v in data}) > 1:
            hint = " (convert integers to an index with index(), or an index with cast())" if IndexType() in types else ""
            raise KernelError(f"{what}: operands have different types ({', '.join(str(v.type) for v in data)}){hint}")
        if op is accy.SelectOp and _element(ops[0].type) != IntegerType(1):
            raise KernelError(f"{what}: the condition must be bool (i1), got {ops[0].type}")
        (et,) = types
        if isinstance(et, IndexType):
            return self._index_op(what, op, ops, predicate)
        allowed = _ALLOWED.get(op)
        if allowed is not None and not allowed(et):
            raise KernelError(f"{what}: does not take {et}")
        if op is _Rem:
            return self._op(arith.RemSIOp(ops[0], ops[1]))
        return self._wrap(apply_scalar(self.kb, op, ops, predicate))

    def _index_op(self, what: str, op: type[Operation], ops: list[SSAValue], predicate: str | None) -> Value:
        """Index arithmetic (folded where constant, as the lowerings fold it)."""
        kb = self.kb
        a = ops[0]
        if op is accy.AddOp:
            return self._wrap(kb.add(a, ops[1]))
        if op is accy.SubOp:
            return self._wrap(kb.sub(a, ops[1]))
        if op is accy.MulOp:
            return self._wrap(kb.mul(a, ops[1]))
        simple = {accy.DivOp: arith.DivSIOp, _Rem: arith.RemSIOp, accy.MaxOp: arith.MaxSIOp, accy.MinOp: arith.MinSIOp}
        if op in simple:
            return self._op(simple[op](a, ops[1]))
        if op is accy.CmpOp:
            assert predicate is not None
            return self._op(arith.CmpiOp(a, ops[1], _ICMP[predicate]))
        if op is accy.SelectOp:
            return self._op(arith.SelectOp(*ops))
        if op is accy.NegOp:
            return self._wrap(kb.sub(0, a))
        raise KernelError(f"{what}: does not take an index")

    # -- text ------------------------------------------------------------------

    def __str__(self) -> str:
        """The kernel IR built so far, as text (`gpu.module @kernels { gpu.func ... }`)."""
        from io import StringIO

        text = StringIO()
        Printer(stream=text).print_op(self.kb.func)
        return text.getvalue()

    def compile(self) -> CompiledKernel:
        """Verifies the kernel (types, values used where defined, stores into
        read-only buffers, at least one output, every load and store proved
        in bounds) and builds it for the device; see `CompiledKernel`.
        Raises `KernelError` saying what is wrong."""
        from accy.kernel.compiled import compile_kernel

        return compile_kernel(self)

    def module(self) -> ModuleOp:
        """The kernel as a module holding `gpu.module @kernels` with the
        verified kernel (launch sizes stated on it), which `accy.kernel_call`
        can call (`@kernels::@<name>`)."""
        from accy.kernel.compiled import kernel_module

        return kernel_module(self)


class _Rem:
    """The remainder op (the tensor dialect has none: for index and integers)."""

    name = "rem"


_ICMP = {"eq": "eq", "ne": "ne", "lt": "slt", "le": "sle", "gt": "sgt", "ge": "sge"}


def _element(t: Attribute) -> Attribute:
    return t.element_type if isinstance(t, VectorType) else t


def _is_float(t: Attribute) -> bool:
    return accy.is_float(t)


def _is_integer(t: Attribute) -> bool:
    return isinstance(t, IntegerType)


_ALLOWED = {
    **{cls: _is_float for cls in (accy.ExpOp, accy.LogOp, accy.SqrtOp, accy.RsqrtOp, accy.TanhOp, accy.SigmoidOp,
                                  accy.GeluOp, accy.SinOp, accy.CosOp, accy.ErfOp, accy.ReciprocalOp, accy.FloorOp,
                                  accy.CeilOp)},
    **{cls: _is_integer for cls in (accy.AndOp, accy.OrOp, accy.XorOp)},
    accy.NotOp: lambda t: t == IntegerType(1),
    _Rem: _is_integer,
}


def _unary(name: str, op: type[Operation], doc: str) -> object:
    def method(self: Kernel, x: Value | Number) -> Value:
        return self._elementwise(name, op, [x])

    method.__name__ = name
    method.__doc__ = doc
    return method


def _binary(name: str, op: type[Operation], doc: str) -> object:
    def method(self: Kernel, a: Value | Number, b: Value | Number) -> Value:
        return self._elementwise(name, op, [a, b])

    method.__name__ = name
    method.__doc__ = doc
    return method


def _compare(name: str, predicate: str) -> object:
    def method(self: Kernel, a: Value | Number, b: Value | Number) -> Value:
        return self._elementwise(name, accy.CmpOp, [a, b], predicate)

    method.__name__ = name
    method.__doc__ = f"`a {predicate} b` as a bool (lane-wise for vectors; NaN compares unequal), as `accy.cmp`."
    return method


#: method name -> (tensor-dialect op, what it computes). Floats only where
#: the op is a float op; integer `div` truncates toward zero (x / 0 = 0).
UNARY: dict[str, tuple[type[Operation], str]] = {
    "neg": (accy.NegOp, "-x"), "abs": (accy.AbsOp, "|x|"), "exp": (accy.ExpOp, "e^x"), "log": (accy.LogOp, "ln x"),
    "sqrt": (accy.SqrtOp, "square root"), "rsqrt": (accy.RsqrtOp, "1 / sqrt(x)"), "tanh": (accy.TanhOp, "tanh"),
    "sigmoid": (accy.SigmoidOp, "1 / (1 + e^-x)"), "relu": (accy.ReluOp, "max(x, 0)"),
    "gelu": (accy.GeluOp, "0.5 x (1 + erf(x / sqrt 2))"), "sin": (accy.SinOp, "sine"), "cos": (accy.CosOp, "cosine"),
    "erf": (accy.ErfOp, "the error function"), "reciprocal": (accy.ReciprocalOp, "1 / x"),
    "floor": (accy.FloorOp, "round down"), "ceil": (accy.CeilOp, "round up"), "not_": (accy.NotOp, "logical not of a bool"),
}  # fmt: skip
BINARY: dict[str, tuple[type[Operation], str]] = {
    "add": (accy.AddOp, "a + b"), "sub": (accy.SubOp, "a - b"), "mul": (accy.MulOp, "a * b"),
    "div": (accy.DivOp, "a / b (integers: truncating toward zero, x / 0 = 0)"),
    "rem": (_Rem, "a % b for integers and indices (sign of a, as C; x % 0 = x, INT_MIN % -1 = 0)"),  # type: ignore[dict-item]
    "max": (accy.MaxOp, "the larger (NaN if either is NaN)"), "min": (accy.MinOp, "the smaller (NaN if either is NaN)"),
    "pow": (accy.PowOp, "a ** b"), "and_": (accy.AndOp, "bitwise / logical and"),
    "or_": (accy.OrOp, "bitwise / logical or"), "xor": (accy.XorOp, "bitwise / logical xor"),
}  # fmt: skip
COMPARISONS = ("eq", "ne", "lt", "le", "gt", "ge")

for _name, (_op, _what) in UNARY.items():
    setattr(Kernel, _name, _unary(_name, _op, f"{_what}, as `accy.{_op.name.split('.')[-1]}` (lane-wise for vectors)."))
for _name, (_op, _what) in BINARY.items():
    setattr(Kernel, _name, _binary(_name, _op, f"{_what}, lane-wise for vectors."))
for _pred in COMPARISONS:
    setattr(Kernel, _pred, _compare(_pred, _pred))


def _cmp(self: Kernel, a: Value | Number, b: Value | Number, predicate: str) -> Value:
    """`a predicate b` for a predicate of `accy.cmp`: eq ne lt le gt ge."""
    if predicate not in COMPARISONS:
        raise KernelError(f"cmp: predicate must be one of {', '.join(COMPARISONS)}, got {predicate!r}")
    return self._elementwise("cmp", accy.CmpOp, [a, b], predicate)


def _select(self: Kernel, cond: Value, a: Value | Number, b: Value | Number) -> Value:
    """`cond ? a : b` (lane-wise with a vector of bools), as `accy.select`."""
    return self._elementwise("select", accy.SelectOp, [cond, a, b])


Kernel.cmp = _cmp  # type: ignore[attr-defined]
Kernel.select = _select  # type: ignore[attr-defined]
