"""The reference semantics of kernel IR: a numpy interpreter of one kernel
launch, which runs the callee of an `accy.kernel_call` on the reference
path (`accy-run --check`, the reference device, host fallbacks).

`run_kernel(func, buffers, global_size, local_size)` runs every work-item
of the launch in lockstep, vectorised with numpy: each SSA value is an
array with one entry per work-item (a trailing axis for vector lanes), and
control flow runs under a mask of the work-items it applies to (`scf.if`
runs each branch for the work-items that take it; `scf.for` runs until no
work-item's loop continues). In lockstep every access before a
`gpu.barrier` happens before every access after it, so a barrier needs no
action; kernels whose work-items race (write one element from two
work-items, or reach barriers unevenly) have no defined result here, nor on
a device.

Memory: `buffers` are the kernel's global buffers, flat numpy arrays in
storage type (i1 as int8), updated in place; local memory
(`#gpu.address_space<workgroup>`) is one array per work-group, private
memory one per work-item, both zero-initialised. A load or store of an
active work-item outside its buffer raises `KernelRuntimeError` naming the
op and the index (the bounds verifier should have refused such a kernel).

Arithmetic follows MLIR's `arith` and `math` semantics on the element
types (integers wrap; `divsi` truncates; float ops in the element type);
`math.erf` and `tanh` use the reference interpreter's definitions.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from xdsl.dialects import arith, gpu, memref, scf, vector
from xdsl.dialects import math as mathd
from xdsl.dialects.builtin import (
    Float32Type,
    FloatAttr,
    IndexType,
    IntegerAttr,
    IntegerType,
    MemRefType,
    VectorType,
)
from xdsl.ir import Attribute, Block, Operation, SSAValue

from accy.dialects import kernel as kd
from accy.dialects.host import MAX_WORK_ITEMS
from accy.reference.constants import numpy_dtype

Array = np.ndarray


class KernelRuntimeError(ValueError):
    """A kernel did something with no defined result (an access out of bounds,
    an op outside the kernel IR conventions)."""


def dtype_of(t: Attribute) -> np.dtype:
    """The numpy dtype of a kernel IR scalar or vector element type (index -> int64)."""
    if isinstance(t, VectorType):
        t = t.element_type
    if isinstance(t, IndexType):
        return np.dtype(np.int64)
    return numpy_dtype(t)


class _Memory:
    """A buffer and how work-items address it (global: shared; local: one
    row per work-group; private: one row per work-item)."""

    def __init__(self, data: Array, row: Array | None, name: str) -> None:
        self.data = data
        self.row = row
        self.name = name

    @property
    def size(self) -> int:
        return self.data.shape[-1]


class _Launch:
    def __init__(self, global_size: Sequence[int], local_size: Sequence[int]) -> None:
        g = [*global_size, 1, 1, 1][:3]
        b = [*local_size, 1, 1, 1][:3]
        self.n = g[0] * g[1] * g[2]
        flat = np.arange(self.n, dtype=np.int64)
        self.global_id = [flat % g[0], (flat // g[0]) % g[1], flat // (g[0] * g[1])]
        self.local_id = [gid % bd for gid, bd in zip(self.global_id, b, strict=True)]
        self.group_id = [gid // bd for gid, bd in zip(self.global_id, b, strict=True)]
        self.num_groups = [gd // bd for gd, bd in zip(g, b, strict=True)]
        self.block = b
        self.group_flat = self.group_id[0] + self.num_groups[0] * (self.group_id[1] + self.num_groups[1] * self.group_id[2])
        self.groups = self.num_groups[0] * self.num_groups[1] * self.num_groups[2]
        self.lanes = flat

    def partner(self, mask: int) -> Array:
        """Per work-item, the flat index of the work-item of its work-group
        whose flat local id is its own XOR `mask` (`accy_kernel.shuffle_xor`)."""
        b = self.block
        local = self.local_id[0] + b[0] * (self.local_id[1] + b[1] * self.local_id[2])
        other = local ^ mask  # past the block: an index past the launch (the caller refuses it)
        other = np.where(other < b[0] * b[1] * b[2], other, self.n)
        ids = [other % b[0], (other // b[0]) % b[1], other // (b[0] * b[1])]
        g = [gd * bd for gd, bd in zip(self.num_groups, b, strict=True)]
        coords = [gid * bd + i for gid, bd, i in zip(self.group_id, b, ids, strict=True)]
        return coords[0] + g[0] * (coords[1] + g[1] * coords[2])


def run_kernel(
    func: gpu.FuncOp, buffers: Sequence[Array], global_size: Sequence[int], local_size: Sequence[int]
) -> None:
    """Runs kernel `func` over the launch on `buffers` (see the module docstring)."""
    items = math.prod(global_size)
    if items > MAX_WORK_ITEMS:
        raise KernelRuntimeError(f"kernel @{func.sym_name.data}: a launch of {items} work-items; at most {MAX_WORK_ITEMS} (2^32)")
    launch = _Launch(global_size, local_size)
    block = func.body.block
    if len(buffers) != len(block.args):
        raise KernelRuntimeError(f"kernel @{func.sym_name.data} takes {len(block.args)} buffers, got {len(buffers)}")
    env: dict[SSAValue, Any] = {}
    for i, (arg, buf) in enumerate(zip(block.args, buffers, strict=True)):
        env[arg] = _Memory(buf, None, f"buffer #{i}")
    with np.errstate(all="ignore"):
        _Interpreter(func.sym_name.data, launch, env).block(block, np.ones(launch.n, bool))


class _Interpreter:
    def __init__(self, name: str, launch: _Launch, env: dict[SSAValue, Any]) -> None:
        self.name = name
        self.launch = launch
        self.env = env

    def block(self, block: Block, mask: Array) -> list[Any]:
        """Runs `block` for the work-items in `mask`; the values it yields."""
        for op in block.ops:
            if isinstance(op, scf.YieldOp):
                return [self.env[v] for v in op.operands]
            if isinstance(op, gpu.ReturnOp):
                return []
            self.op(op, mask)
        return []

    def lanes(self, v: Any, t: Attribute) -> Array:
        """A value as one entry per work-item (a row of lanes for vectors)."""
        width = t.get_shape()[0] if isinstance(t, VectorType) else None
        shape = (self.launch.n, width) if width else (self.launch.n,)
        return np.broadcast_to(np.asarray(v, dtype_of(t)), shape)

    def op(self, op: Operation, mask: Array) -> None:
        env = self.env
        args = [env[v] for v in op.operands]
        if isinstance(op, arith.ConstantOp):
            value = op.value
            t = op.result.type
            if isinstance(value, IntegerAttr):
                v = value.value.data
                env[op.result] = np.asarray(v != 0 if t == IntegerType(1) else v, dtype_of(t))
            elif isinstance(value, FloatAttr):
                env[op.result] = np.asarray(value.value.data, dtype_of(t))
            else:
                raise KernelRuntimeError(f"kernel @{self.name}: constant {value} is not a scalar")
            return
        if isinstance(op, scf.IfOp):
            self._if(op, args[0], mask)
            return
        if isinstance(op, scf.ForOp):
            self._for(op, args, mask)
            return
        if isinstance(op, memref.AllocaOp):
            t = op.memref.type
            n = math.prod(t.get_shape())
            local = "workgroup" in str(t.memory_space)
            rows = self.launch.groups if local else self.launch.n
            row = self.launch.group_flat if local else self.launch.lanes
            env[op.memref] = _Memory(np.zeros((rows, n), dtype_of(t.element_type)), row, "local memory" if local else "private memory")
            return
        if isinstance(op, memref.LoadOp | vector.LoadOp):
            width = op.result.type.get_shape()[0] if isinstance(op, vector.LoadOp) else None
            env[op.results[0]] = self._load(op, args[0], args[1:], width, mask)
            return
        if isinstance(op, memref.StoreOp | vector.StoreOp):
            width = op.operands[0].type.get_shape()[0] if isinstance(op, vector.StoreOp) else None
            self._store(op, args[1], args[2:], self.lanes(args[0], op.operands[0].type), width, mask)
            return
        if isinstance(op, kd.AsyncCopyOp):  # done at once: every later wait finds it complete
            valid = mask & np.broadcast_to(np.asarray(args[4], bool), mask.shape)
            value = self._load(op, args[0], [args[1]], op.elements, valid, op.src.type)  # zeros where not valid
            self._store(op, args[2], [args[3]], value, op.elements, mask, op.dst.type)
            return
        if isinstance(op, kd.NarrowPairOp):  # numpy's rounding: to nearest even, NaN kept
            t = op.result.type
            pair = [self.lanes(x, Float32Type()) for x in args]
            env[op.result] = np.stack(pair, axis=-1).astype(dtype_of(t))
            return
        if isinstance(op, kd.ShuffleXorOp):  # lockstep: every partner's x is there
            partner = self.launch.partner(op.mask.value.data)
            if (partner[mask] >= self.launch.n).any():
                raise KernelRuntimeError(f"kernel @{self.name}: {op.name} names a work-item past its work-group")
            env[op.result] = self.lanes(args[0], op.x.type)[np.minimum(partner, self.launch.n - 1)]
            return
        if isinstance(op, gpu.BarrierOp | kd.AsyncCommitOp | kd.AsyncWaitOp):
            return  # lockstep: see the module docstring
        ids = {gpu.GlobalIdOp: self.launch.global_id, gpu.ThreadIdOp: self.launch.local_id, gpu.BlockIdOp: self.launch.group_id}
        if type(op) in ids:
            env[op.results[0]] = ids[type(op)]["xyz".index(op.dimension.data.value)]  # type: ignore[attr-defined]
            return
        if isinstance(op, gpu.BlockDimOp | gpu.GridDimOp):
            d = "xyz".index(op.dimension.data.value)
            sizes = self.launch.block if isinstance(op, gpu.BlockDimOp) else self.launch.num_groups
            env[op.results[0]] = np.asarray(sizes[d], np.int64)
            return
        if isinstance(op, vector.BroadcastOp):
            t = op.results[0].type
            x = np.asarray(args[0])
            env[op.results[0]] = np.broadcast_to(x[..., None], (*x.shape, t.get_shape()[0])).astype(dtype_of(t))
            return
        if isinstance(op, vector.ExtractOp):
            (lane,) = op.static_position.get_values()
            env[op.results[0]] = np.asarray(args[0])[..., lane]
            return
        if isinstance(op, vector.InsertOp):
            (lane,) = op.static_position.get_values()
            dest = np.array(self.lanes(args[1], op.operands[1].type))
            dest[..., lane] = args[0]
            env[op.results[0]] = dest
            return
        if isinstance(op, vector.ReductionOp):
            data = op.kind.data  # one flag, or a collection of them
            first = data if isinstance(data, str) else next(iter(data))
            kind = str(getattr(first, "value", first))
            fns = {"add": np.sum, "mul": np.prod, "maximumf": np.max, "minimumf": np.min, "maxsi": np.max, "minsi": np.min,
                   "maxnumf": np.nanmax, "minnumf": np.nanmin, "and": np.bitwise_and.reduce, "or": np.bitwise_or.reduce,
                   "xor": np.bitwise_xor.reduce}  # fmt: skip
            fn = fns.get(kind)
            if fn is None:
                raise KernelRuntimeError(f"kernel @{self.name}: vector.reduction <{kind}> is not supported")
            t = op.results[0].type
            env[op.results[0]] = np.asarray(fn(np.asarray(args[0]), axis=-1), dtype_of(t))
            return
        fn = _PURE.get(type(op))
        if fn is None:
            raise KernelRuntimeError(f"kernel @{self.name}: '{op.name}' is not kernel IR this interpreter runs")
        result = fn(op, *args)
        env[op.results[0]] = np.asarray(result).astype(dtype_of(op.results[0].type), copy=False)

    # -- control flow -------------------------------------------------------

    def _if(self, op: scf.IfOp, cond: Any, mask: Array) -> None:
        c = np.broadcast_to(np.asarray(cond, bool), mask.shape)
        outs: list[list[Any]] = []
        for region, taken in ((op.true_region, mask & c), (op.false_region, mask & ~c)):
            if region.blocks and taken.any():
                outs.append(self.block(region.block, taken))
            else:
                outs.append([np.zeros((), dtype_of(r.type)) for r in op.results])
        for r, a, b in zip(op.results, *outs, strict=True):
            shape_c = c[:, None] if isinstance(r.type, VectorType) else c
            self.env[r] = np.where(shape_c, self.lanes(a, r.type), self.lanes(b, r.type))

    def _for(self, op: scf.ForOp, args: list[Any], mask: Array) -> None:
        # The variable in its own type: an i32 loop's variable wraps as the
        # devices' does (and such a loop may never end).
        t = dtype_of(op.body.block.args[0].type)
        lb, ub, step = (np.broadcast_to(np.asarray(a).astype(t), mask.shape) for a in args[:3])
        carried = [self.lanes(a, v.type) for a, v in zip(args[3:], op.iter_args, strict=True)]
        body = op.body.block
        iv = lb.copy()
        active = mask & (iv < ub)
        if (step[active] <= 0).any():
            raise KernelRuntimeError(
                f"kernel @{self.name}: 'scf.for' steps by {step[active & (step <= 0)][0]}: a step that is not positive never ends"
            )
        while active.any():
            self.env[body.args[0]] = iv
            for a, v in zip(body.args[1:], carried, strict=True):
                self.env[a] = v
            yielded = self.block(body, active)
            carried = [
                np.where(active[:, None] if isinstance(v.type, VectorType) else active, self.lanes(y, v.type), c)
                for y, c, v in zip(yielded, carried, op.results, strict=True)
            ]
            iv = iv + step
            active = active & (iv < ub)
        for r, v in zip(op.results, carried, strict=True):
            self.env[r] = v

    # -- memory ---------------------------------------------------------------

    def _address(
        self, op: Operation, mem: _Memory, indices: list[Any], width: int | None, mask: Array, t: Attribute | None = None
    ) -> tuple[Array, Array]:
        """The work-items of `mask` and their flat indices into `mem`, of
        type `t` (by default the memref `op` loads from or stores to)."""
        t = t or op.operands[1 if isinstance(op, memref.StoreOp | vector.StoreOp) else 0].type
        assert isinstance(t, MemRefType)
        shape = t.get_shape()
        w = width or 1
        sel = np.nonzero(mask)[0]
        flat = np.zeros(sel.size, np.int64)
        # Each index inside its dimension (the last with the vector's
        # lanes), compared without arithmetic that could wrap.
        for d, (i, n) in enumerate(zip(indices, shape, strict=True)):
            at = np.broadcast_to(np.asarray(i, np.int64), mask.shape)[sel]
            lanes = w if d == len(shape) - 1 else 1
            bad = (at < 0) | (at > n - lanes)
            if bad.any():
                what = f"{w} elements from index {at[bad][0]}" if width else f"index {at[bad][0]}"
                dim = f" (dimension {d})" if len(shape) > 1 else ""
                raise KernelRuntimeError(
                    f"kernel @{self.name}: '{op.name}' of {mem.name} ({t}) at {what}{dim}: out of bounds (it holds {mem.size})"
                )
            flat = flat * n + at
        return sel, flat

    def _load(
        self, op: Operation, mem: _Memory, indices: list[Any], width: int | None, mask: Array, t: Attribute | None = None
    ) -> Array:
        """The elements at `indices` for the work-items of `mask` (zeros for the others)."""
        sel, first = self._address(op, mem, indices, width, mask, t)
        element = t.element_type if isinstance(t, MemRefType) else op.results[0].type
        out = np.zeros((self.launch.n, width) if width else self.launch.n, dtype_of(element))
        cols = first[:, None] + np.arange(width) if width else first
        rows = mem.row[sel] if mem.row is not None else None
        if rows is not None and width:
            rows = rows[:, None]
        out[sel] = mem.data[rows, cols] if rows is not None else mem.data[cols]
        return out

    def _store(
        self, op: Operation, mem: _Memory, indices: list[Any], value: Array, width: int | None, mask: Array,
        t: Attribute | None = None,
    ) -> None:
        sel, first = self._address(op, mem, indices, width, mask, t)
        cols = first[:, None] + np.arange(width) if width else first
        rows = mem.row[sel] if mem.row is not None else None
        if rows is not None and width:
            rows = rows[:, None]
        v = value[sel].astype(mem.data.dtype)
        if rows is not None:
            mem.data[rows, cols] = v
        else:
            mem.data[cols] = v


# --------------------------------------------------------------------------
# Pure ops
# --------------------------------------------------------------------------


def _safe_divisor(a: Array, b: Array) -> Array:
    """b, with 1 where kernel IR defines the result apart (docs/kernel-ir.md):
    b = 0, and (signed) a = INT_MIN with b = -1; a / 1 and a % 1 are already
    INT_MIN / -1 and INT_MIN % -1."""
    bad = b == 0
    if a.dtype.kind == "i":
        bad = bad | ((a == np.iinfo(a.dtype).min) & (b == -1))
    return np.where(bad, 1, b).astype(b.dtype)


def _int_div(a: Array, b: Array) -> Array:
    """a / b truncating toward zero; x / 0 = 0, INT_MIN / -1 = INT_MIN."""
    a, b = np.asarray(a), np.asarray(b)
    safe = _safe_divisor(a, b)
    q = np.floor_divide(a, safe)
    # floor and trunc differ by one where inexact and the signs differ.
    q = q + ((np.remainder(a, safe) != 0) & ((a < 0) != (safe < 0))).astype(q.dtype)
    return np.where(b == 0, 0, q).astype(a.dtype)


def _int_rem(a: Array, b: Array) -> Array:
    """a % b with a's sign (C's); x % 0 = x, INT_MIN % -1 = 0."""
    a, b = np.asarray(a), np.asarray(b)
    safe = _safe_divisor(a, b)
    return np.where(b == 0, a, np.fmod(a, safe)).astype(a.dtype)


def _unsigned(x: Array) -> Array:
    x = np.asarray(x)
    return x.view(x.dtype.str.replace("i", "u")) if x.dtype.kind == "i" else x


def _compare(pred: str, a: Array, b: Array, is_float: bool) -> Array:
    a, b = np.asarray(a), np.asarray(b)
    if is_float:
        nan = np.isnan(a) | np.isnan(b)
        base = {"eq": a == b, "gt": a > b, "ge": a >= b, "lt": a < b, "le": a <= b, "ne": a != b}
        if pred in ("false", "true"):
            return np.full(np.broadcast(a, b).shape, pred == "true")
        if pred == "ord":
            return ~nan
        if pred == "uno":
            return nan
        r = base[pred[1:]]
        return (r & ~nan) if pred[0] == "o" else (r | nan)
    if pred[0] == "u":
        a, b = _unsigned(a), _unsigned(b)
        pred = pred[1:]
    elif pred[0] == "s":
        pred = pred[1:]
    return {"eq": a == b, "ne": a != b, "lt": a < b, "le": a <= b, "gt": a > b, "ge": a >= b}[pred]


def _cmpi(op: Operation, a: Array, b: Array) -> Array:
    return _compare(arith.CMPI_COMPARISON_OPERATIONS[op.predicate.value.data], a, b, False)  # type: ignore[attr-defined]


def _cmpf(op: Operation, a: Array, b: Array) -> Array:
    return _compare(arith.CMPF_COMPARISON_OPERATIONS[op.predicate.value.data], a, b, True)  # type: ignore[attr-defined]


def _vcmp(op: Operation, a: Array, b: Array) -> Array:
    assert isinstance(op, kd.VCmpOp)
    return _compare(op.predicate.data, a, b, op.is_float)


def _logic(fn: Callable[[Array, Array], Array]) -> Callable[..., Array]:
    def apply(op: Operation, a: Array, b: Array) -> Array:
        a, b = np.asarray(a), np.asarray(b)
        return fn(a, b)

    return apply


def _convert(op: Operation, x: Array) -> Array:
    return np.asarray(x).astype(dtype_of(op.results[0].type))


def _extui(op: Operation, x: Array) -> Array:
    return _unsigned(x).astype(dtype_of(op.results[0].type))


def _erf(op: Operation, x: Array) -> Array:
    from accy.reference.interpreter import _erf_and_erfc

    x = np.asarray(x)
    return _erf_and_erfc(x.astype(np.float64))[0].astype(x.dtype)


def _f(fn: Callable[..., Array]) -> Callable[..., Array]:
    return lambda op, *args: fn(*args)


_PURE: dict[type[Operation], Callable[..., Array]] = {
    arith.AddiOp: _f(np.add), arith.SubiOp: _f(np.subtract), arith.MuliOp: _f(np.multiply),
    arith.AddfOp: _f(np.add), arith.SubfOp: _f(np.subtract), arith.MulfOp: _f(np.multiply),
    arith.DivfOp: _f(np.divide), arith.NegfOp: _f(np.negative),
    arith.DivSIOp: _f(_int_div), arith.RemSIOp: _f(_int_rem),
    arith.DivUIOp: _f(lambda a, b: _int_div(_unsigned(a), _unsigned(b))),
    arith.RemUIOp: _f(lambda a, b: _int_rem(_unsigned(a), _unsigned(b))),
    arith.MaximumfOp: _f(np.maximum), arith.MinimumfOp: _f(np.minimum),
    arith.MaxnumfOp: _f(np.fmax), arith.MinnumfOp: _f(np.fmin),
    arith.MaxSIOp: _f(np.maximum), arith.MinSIOp: _f(np.minimum),
    arith.MaxUIOp: _f(lambda a, b: np.maximum(_unsigned(a), _unsigned(b))),
    arith.MinUIOp: _f(lambda a, b: np.minimum(_unsigned(a), _unsigned(b))),
    arith.AndIOp: _logic(np.bitwise_and), arith.OrIOp: _logic(np.bitwise_or), arith.XOrIOp: _logic(np.bitwise_xor),
    arith.ShLIOp: _f(np.left_shift), arith.ShRSIOp: _f(np.right_shift),
    arith.ShRUIOp: _f(lambda a, b: np.right_shift(_unsigned(a), _unsigned(b))),
    arith.CmpiOp: _cmpi, arith.CmpfOp: _cmpf, kd.VCmpOp: _vcmp,
    arith.SelectOp: _f(np.where), kd.VSelectOp: _f(np.where),
    arith.IndexCastOp: _convert, arith.ExtSIOp: _convert, arith.TruncIOp: _convert, arith.ExtUIOp: _extui,
    arith.SIToFPOp: _convert, arith.FPToSIOp: _convert, arith.ExtFOp: _convert, arith.TruncFOp: _convert,
    arith.UIToFPOp: lambda op, x: _unsigned(x).astype(dtype_of(op.results[0].type)),
    arith.FPToUIOp: _convert, kd.VCastOp: _convert,
    mathd.ExpOp: _f(np.exp), mathd.LogOp: _f(np.log), mathd.SqrtOp: _f(np.sqrt),
    mathd.RsqrtOp: _f(lambda x: 1 / np.sqrt(x)), mathd.TanhOp: _f(np.tanh), mathd.SinOp: _f(np.sin),
    mathd.CosOp: _f(np.cos), mathd.ErfOp: _erf, mathd.FloorOp: _f(np.floor), mathd.CeilOp: _f(np.ceil),
    mathd.AbsFOp: _f(np.abs), mathd.AbsIOp: _f(np.abs), mathd.PowFOp: _f(np.power),
    mathd.FmaOp: _f(lambda a, b, c: a * b + c),
}  # fmt: skip
