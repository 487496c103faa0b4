"""Work-groups as loops: a kernel whose work-items cooperate (barriers,
work-group memory) or that is launched over 2 or 3 dimensions, rewritten
into one that runs each whole work-group in one work-item of a 1-D launch.
This is how such a custom kernel runs on the LLVM device, whose kernel ABI
runs x-dimension launches of independent work-items (PoCL does the same to
OpenCL kernels: it splits a work-group's loop at each barrier).

`serialize_work_groups(func, launch, name)` returns the new kernel, launched
over `launch`'s work-groups (flattened, x fastest) in blocks of 1:

- the code between barriers becomes a loop over the work-group's work-items
  (`t` = 0 .. block size - 1, x fastest), so everything before a barrier
  happens, for every work-item, before anything after it;
- `gpu.thread_id` / `global_id` / `block_id` become the loop's and the
  work-group's coordinates, `block_dim` / `grid_dim` constants;
- work-group memory becomes the one work-item's private memory; private
  memory becomes one slice per work-item (index `t * n + i`);
- a value computed before a barrier and used after it is kept per
  work-item in a private array (a spill), unless it is uniform (the same
  for every work-item: constants and arithmetic on them and on work-group
  ids), which is computed once per work-group instead, or arithmetic on
  ids, which the later loop computes again;
- an `scf.for` or `scf.if` holding a barrier stays a loop or branch of the
  work-group; its bounds or condition must be uniform, and it may carry no
  values (`KernelShapeError` otherwise: such a kernel has no defined result
  on any device).
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.builder import Builder
from xdsl.dialects import arith, gpu, memref, scf, vector
from xdsl.dialects.builtin import IndexType, IntegerType, MemRefType, StringAttr, VectorType, i8
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.rewriter import InsertPoint
from xdsl.transforms.dead_code_elimination import region_dce

from accy.dialects.host import AddressSpace, AddressSpaceAttr
from accy.dialects.kernel import WORK_ITEM_OPS
from accy.passes.kernel_ir.bounds import LaunchSizes

#: Pure ops whose result is uniform when their operands are.
_PURE_ARITH = (
    arith.ConstantOp, arith.AddiOp, arith.SubiOp, arith.MuliOp, arith.DivSIOp, arith.DivUIOp, arith.RemSIOp,
    arith.RemUIOp, arith.MinSIOp, arith.MaxSIOp, arith.CmpiOp, arith.SelectOp, arith.IndexCastOp, arith.AndIOp,
    arith.OrIOp, arith.XOrIOp, arith.ExtSIOp, arith.TruncIOp,
)  # fmt: skip


class KernelShapeError(ValueError):
    """A kernel whose barriers cannot be run as work-group loops."""


def needs_serializing(func: gpu.FuncOp, launch: LaunchSizes) -> bool:
    """Whether `func` under `launch` needs `serialize_work_groups` to run
    where work-items run one after the other in x only."""
    if launch.grid[1:] != (1, 1) or launch.block[1:] != (1, 1):
        return True
    for op in func.walk():
        if isinstance(op, gpu.BarrierOp) or isinstance(op, memref.AllocaOp) and _workgroup(op.memref.type):
            return True
    return False


def _workgroup(t: Attribute) -> bool:
    space = t.memory_space if isinstance(t, MemRefType) else None
    return isinstance(space, AddressSpaceAttr) and space.data == AddressSpace.WORKGROUP


def _has_barrier(op: Operation) -> bool:
    return any(isinstance(o, gpu.BarrierOp) for o in op.walk())


def serialize_work_groups(func: gpu.FuncOp, launch: LaunchSizes, name: str) -> gpu.FuncOp:
    """The kernel `name` that runs `func`'s launch one work-group per work-item
    (see the module docstring); launch it over `launch`'s work-group count in
    blocks of 1."""
    return _Serializer(func, launch, name).build()


class _Serializer:
    def __init__(self, func: gpu.FuncOp, launch: LaunchSizes, name: str) -> None:
        self.src = func
        self.launch = launch
        self.items = launch.block[0] * launch.block[1] * launch.block[2]
        types = list(func.function_type.inputs.data)
        self.func = gpu.FuncOp(name, (types, []), kernel=True)
        self.func.attributes["accy.kind"] = func.attributes.get("accy.kind", StringAttr("custom"))
        entry = self.func.body.block
        self.top = Builder(InsertPoint.at_end(entry))
        # Group-level values: the old kernel's arguments and uniform values.
        self.uniform: dict[SSAValue, SSAValue] = dict(zip(func.body.block.args, entry.args, strict=True))
        self.consts: dict[tuple[int, Attribute], SSAValue] = {}
        self.spills: dict[SSAValue, SSAValue] = {}
        self.private: dict[SSAValue, int] = {}  # new private array -> elements per work-item
        self.group: list[SSAValue] = []

    def const(self, value: int, t: Attribute | None = None) -> SSAValue:
        """An integer constant (index by default) at the top of the kernel."""
        t = t if t is not None else IndexType()
        key = (value, t)
        if key not in self.consts:
            op = arith.ConstantOp.from_int_and_width(value, t)
            entry = self.func.body.block
            if entry.first_op is None:
                entry.add_op(op)
            else:
                entry.insert_op_before(op, entry.first_op)
            self.consts[key] = op.result
        return self.consts[key]

    def build(self) -> gpu.FuncOp:
        g = self.launch.grid
        b = self.top
        flat = b.insert(gpu.BlockIdOp(gpu.DimensionAttr(gpu.DimensionEnum("x")))).results[0]
        gx = b.insert(arith.RemSIOp(flat, self.const(g[0]))).results[0]
        rest = b.insert(arith.DivSIOp(flat, self.const(g[0]))).results[0]
        gy = b.insert(arith.RemSIOp(rest, self.const(g[1]))).results[0]
        gz = b.insert(arith.DivSIOp(rest, self.const(g[1]))).results[0]
        self.group = [gx, gy, gz]
        self.region(self.src.body.block, b)
        b.insert(gpu.ReturnOp([]))
        region_dce(self.func.body)  # the ids a work-item loop does not use
        return self.func

    # -- regions -------------------------------------------------------------

    def region(self, block: Block, at: Builder) -> None:
        """Rewrites the ops of `block` (without its terminator) at `at`, at work-group level."""
        segment: list[Operation] = []
        ops = [op for op in block.ops if not isinstance(op, gpu.ReturnOp | scf.YieldOp)]
        for op in ops:
            if isinstance(op, memref.AllocaOp):
                self.alloca(op)
            elif isinstance(op, gpu.BarrierOp):
                self.segment(segment, at)
                segment = []
            elif _has_barrier(op):
                self.segment(segment, at)
                segment = []
                self.barrier_op(op, at)
            else:
                segment.append(op)
        self.segment(segment, at)

    def barrier_op(self, op: Operation, at: Builder) -> None:
        """An scf.for / scf.if holding a barrier, kept at work-group level."""
        if isinstance(op, scf.ForOp):
            if op.iter_args:
                raise KernelShapeError(f"@{self.src.sym_name.data}: a loop holding a barrier may carry no values")
            lb, ub, step = (self.uniform_value(v, at, "the bounds of a loop holding a barrier") for v in (op.lb, op.ub, op.step))
            body = Block(arg_types=[IndexType()])
            self.uniform[op.body.block.args[0]] = body.args[0]
            at.insert(scf.ForOp(lb, ub, step, [], Region(body)))
            inner = Builder(InsertPoint.at_end(body))
            self.region(op.body.block, inner)
            inner.insert(scf.YieldOp())
        elif isinstance(op, scf.IfOp):
            if op.results:
                raise KernelShapeError(f"@{self.src.sym_name.data}: an scf.if holding a barrier may yield no values")
            cond = self.uniform_value(op.cond, at, "the condition of an scf.if holding a barrier")
            regions = []
            for region in (op.true_region, op.false_region):
                if not region.blocks:
                    regions.append(Region())
                    continue
                body = Block()
                inner = Builder(InsertPoint.at_end(body))
                self.region(region.block, inner)
                inner.insert(scf.YieldOp())
                regions.append(Region(body))
            at.insert(scf.IfOp(cond, [], regions[0], regions[1]))
        else:
            raise KernelShapeError(f"@{self.src.sym_name.data}: a barrier inside '{op.name}' (only scf.for and scf.if may hold one)")

    def uniform_value(self, v: SSAValue, at: Builder, what: str) -> SSAValue:
        """`v` computed at work-group level (it is the same for every work-item)."""
        if v in self.uniform:
            return self.uniform[v]
        op = v.owner
        if isinstance(op, gpu.BlockIdOp | gpu.BlockDimOp | gpu.GridDimOp):
            d = "xyz".index(op.dimension.data.value)
            if isinstance(op, gpu.BlockIdOp):
                value = self.group[d]
            else:
                value = self.const((self.launch.block if isinstance(op, gpu.BlockDimOp) else self.launch.grid)[d])
        elif isinstance(op, arith.ConstantOp) and isinstance(op.result.type, IndexType | IntegerType):
            value = self.const(op.value.value.data, op.result.type)  # type: ignore[attr-defined]
        elif isinstance(op, _PURE_ARITH) and not op.regions:
            operands = [self.uniform_value(o, at, what) for o in op.operands]
            value = at.insert(op.clone(value_mapper=dict(zip(op.operands, operands, strict=True)))).results[0]
        else:
            raise KernelShapeError(
                f"@{self.src.sym_name.data}: {what} must be the same for every work-item of a work-group "
                f"(it depends on '{getattr(op, 'name', 'a block argument')}')"
            )
        # Not cached: computed at `at`, it may not dominate a later use elsewhere.
        return value

    def recomputable(self, v: SSAValue, depth: int = 0) -> bool:
        """Whether `v` is arithmetic on ids and uniform values, which a later
        work-item loop computes again rather than keeping it across a
        barrier (cheaper, and its range stays known to the bounds verifier)."""
        if v in self.uniform or isinstance(v.owner, WORK_ITEM_OPS):
            return True
        op = v.owner
        return (
            depth < 32 and isinstance(op, _PURE_ARITH) and not op.regions
            and all(self.recomputable(o, depth + 1) for o in op.operands)
        )

    def recompute(self, v: SSAValue, b: Builder, local: list[SSAValue], glob: list[SSAValue]) -> SSAValue:
        """`v` (`recomputable`) computed again at `b`, in the work-item loop of `local`, `glob`."""
        if v in self.uniform:
            return self.uniform[v]
        op = v.owner
        assert isinstance(op, Operation)
        if isinstance(op, WORK_ITEM_OPS):
            return self.id_value(op, local, glob)
        operands = [self.recompute(o, b, local, glob) for o in op.operands]
        return b.insert(op.clone(value_mapper=dict(zip(op.operands, operands, strict=True)))).results[0]

    def is_uniform(self, v: SSAValue, depth: int = 0) -> bool:
        """Whether `v` is the same for every work-item (see `uniform_value`)."""
        if v in self.uniform:
            return True
        op = v.owner
        if isinstance(op, gpu.BlockIdOp | gpu.BlockDimOp | gpu.GridDimOp):
            return True
        return (
            depth < 32 and isinstance(op, _PURE_ARITH) and not op.regions
            and all(self.is_uniform(o, depth + 1) for o in op.operands)
        )

    # -- memory ----------------------------------------------------------------

    def alloca(self, op: memref.AllocaOp) -> None:
        t = op.memref.type
        n = 1
        for d in t.get_shape():
            n *= d
        if _workgroup(t):
            new = memref.AllocaOp.get(t.element_type, shape=[n])
        else:
            new = memref.AllocaOp.get(t.element_type, shape=[n * self.items])
            self.private[new.memref] = n
        self._at_top(new)
        self.uniform[op.memref] = new.memref

    def _at_top(self, op: Operation) -> None:
        entry = self.func.body.block
        first = next((o for o in entry.ops if not isinstance(o, arith.ConstantOp)), None)
        if first is None:
            entry.add_op(op)
        else:
            entry.insert_op_before(op, first)

    def spill(self, v: SSAValue) -> SSAValue:
        """The private array holding `v` per work-item (made on first use)."""
        if v not in self.spills:
            t = v.type
            et, w = (t.element_type, t.get_shape()[0]) if isinstance(t, VectorType) else (t, 1)
            stored = i8 if et == IntegerType(1) else et
            array = memref.AllocaOp.get(stored, shape=[w * self.items])
            self._at_top(array)
            self.spills[v] = array.memref
        return self.spills[v]

    # -- segments: the code between barriers -----------------------------------

    def segment(self, ops: Sequence[Operation], at: Builder) -> None:
        """`ops` (no barriers) in a loop over the work-items of the work-group."""
        if not ops:
            return
        body = Block(arg_types=[IndexType()])
        at.insert(scf.ForOp(self.const(0), self.const(self.items), self.const(1), [], Region(body)))
        b = Builder(InsertPoint.at_end(body))
        t = body.args[0]
        bx, by = self.launch.block[0], self.launch.block[1]
        tx = b.insert(arith.RemSIOp(t, self.const(bx))).results[0]
        rest = b.insert(arith.DivSIOp(t, self.const(bx))).results[0]
        ty = b.insert(arith.RemSIOp(rest, self.const(by))).results[0]
        tz = b.insert(arith.DivSIOp(rest, self.const(by))).results[0]
        local = [tx, ty, tz]
        glob = []
        for d in range(3):
            base = b.insert(arith.MuliOp(self.group[d], self.const(self.launch.block[d]))).results[0]
            glob.append(b.insert(arith.AddiOp(base, local[d])).results[0])
        inside = {o for op in ops for o in op.walk()}
        mapping: dict[SSAValue, SSAValue] = {}
        for op in ops:
            for inner in op.walk():
                for v in inner.operands:
                    if v in mapping or (isinstance(v.owner, Operation) and v.owner in inside) or _defined_inside(v, inside):
                        continue
                    mapping[v] = self.outside(v, b, t, at, local, glob)
        for op in ops:
            if isinstance(op, WORK_ITEM_OPS):
                mapping[op.results[0]] = self.id_value(op, local, glob)
                continue
            new = op.clone(value_mapper=mapping)
            b.insert(new)
            for old_r, new_r in zip(op.results, new.results, strict=True):
                mapping[old_r] = new_r
            self.patch(new, local, glob, t, b)
            for r in op.results:
                if not self.recomputable(r) and any(u.operation not in inside for u in r.uses):
                    self.store_spill(r, new.results[list(op.results).index(r)], t, b)
        b.insert(scf.YieldOp())

    def id_value(self, op: Operation, local: list[SSAValue], glob: list[SSAValue]) -> SSAValue:
        """What id op `op` is in the work-item loop whose ids are `local`, `glob`."""
        d = "xyz".index(op.dimension.data.value)  # type: ignore[attr-defined]
        if isinstance(op, gpu.ThreadIdOp):
            return local[d]
        if isinstance(op, gpu.GlobalIdOp):
            return glob[d]
        if isinstance(op, gpu.BlockIdOp):
            return self.group[d]
        return self.const((self.launch.block if isinstance(op, gpu.BlockDimOp) else self.launch.grid)[d])

    def outside(
        self, v: SSAValue, b: Builder, t: SSAValue, at: Builder, local: list[SSAValue], glob: list[SSAValue]
    ) -> SSAValue:
        """A value a segment uses that is defined elsewhere: an id (of this
        work-item), uniform (an argument, memory, a group-level loop
        variable, arithmetic on constants and work-group ids), or a spill of
        an earlier segment."""
        if v in self.uniform:
            return self.uniform[v]
        if self.is_uniform(v):
            return self.uniform_value(v, at, "a value used across a barrier")
        if self.recomputable(v):
            return self.recompute(v, b, local, glob)
        if v in self.spills:
            return self.load_spill(v, t, b)
        raise KernelShapeError(f"@{self.src.sym_name.data}: a value is used where it is not defined")

    def store_spill(self, old: SSAValue, value: SSAValue, t: SSAValue, b: Builder) -> None:
        if isinstance(old.type, MemRefType):
            raise KernelShapeError(f"@{self.src.sym_name.data}: a memref value is used across a barrier")
        array = self.spill(old)
        w = old.type.get_shape()[0] if isinstance(old.type, VectorType) else 1
        at = b.insert(arith.MuliOp(t, self.const(w))).results[0] if w > 1 else t
        if isinstance(old.type, VectorType):
            b.insert(vector.StoreOp(value, array, [at]))
        elif old.type == IntegerType(1):
            byte = b.insert(arith.SelectOp(value, self.const(1, i8), self.const(0, i8))).results[0]
            b.insert(memref.StoreOp.get(byte, array, [at]))
        else:
            b.insert(memref.StoreOp.get(value, array, [at]))

    def load_spill(self, old: SSAValue, t: SSAValue, b: Builder) -> SSAValue:
        array = self.spills[old]
        w = old.type.get_shape()[0] if isinstance(old.type, VectorType) else 1
        at = b.insert(arith.MuliOp(t, self.const(w))).results[0] if w > 1 else t
        if isinstance(old.type, VectorType):
            return b.insert(vector.LoadOp(array, [at], old.type)).results[0]
        x = b.insert(memref.LoadOp.get(array, [at])).results[0]
        if old.type == IntegerType(1):
            return b.insert(arith.CmpiOp(x, self.const(0, i8), "ne")).results[0]
        return x

    def patch(self, new: Operation, local: list[SSAValue], glob: list[SSAValue], t: SSAValue, b: Builder) -> None:
        """Ids and private memory accesses inside a cloned op."""
        for op in list(new.walk()):
            if isinstance(op, WORK_ITEM_OPS):
                op.results[0].replace_all_uses_with(self.id_value(op, local, glob))
                op.detach()
                op.erase()
            elif isinstance(op, memref.LoadOp | memref.StoreOp | vector.LoadOp | vector.StoreOp):
                mem_index = 1 if isinstance(op, memref.StoreOp | vector.StoreOp) else 0
                n = self.private.get(op.operands[mem_index])
                if n is not None:
                    block = op.parent_block()
                    assert block is not None
                    offset = arith.MuliOp(t, self.const(n))
                    index = arith.AddiOp(offset.result, op.operands[mem_index + 1])
                    block.insert_op_before(offset, op)
                    block.insert_op_before(index, op)
                    op.operands[mem_index + 1] = index.result


def _defined_inside(v: SSAValue, inside: set[Operation]) -> bool:
    """Whether block argument `v` belongs to a block of an op in `inside`."""
    block = getattr(v, "block", None)
    parent = block.parent_op() if block is not None else None
    return parent is not None and parent in inside
