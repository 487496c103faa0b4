"""The kernelize pass: tensor functions -> kernels plus a host schedule.

For each `func.func` the pass asks the analysis manager for the `Outlining`
(one kernel per work item, with its kind, ops, inputs and outputs) and the
`BufferPlan` (a buffer per value crossing a kernel boundary; views are
offsets and strides into their base's buffer), reads the module's
`TargetProfile`, and hands each outlined kernel to the one lowering of its
kind. What comes out (see the kernel IR conventions):

- one `gpu.module @kernels` holding a `gpu.func @<kernel> kernel` per lowered
  kernel (attribute `accy.kind`);
- the function rewritten over flat `memref<NxT>` buffers: arguments and
  results are buffers (the original tensor types are kept as the attribute
  `accy.signature`); `memref.alloc` / `memref.dealloc` follow the plan (an
  allocation per plan buffer, freed after its last use); constants become
  `accy_host.constant`; each kernel is a `gpu.launch_func`; a kernel whose
  lowering declined becomes `accy_host.fallback` holding its tensor ops (plus
  the view ops that lead from whole buffers to its inputs, and a clone of
  each constant it reads), run by the runtime on the host reference path;
- `accy.peak_bytes` on the function: the plan's peak, plus the largest
  scratch buffer a lowering keeps between its launches (`Scratch`).

A decline under the `exact` math tier prints a remark to stderr (the
`remark` hook); with `strict=true`, or under the `fast` tier, it is an error.

With `verify-bounds=true` (or `$ACCY_VERIFY_BOUNDS` set, as the test suite
does), every kernel is proved in bounds under its launch by the bounds
verifier (bounds.py); a kernel that is not is an error (a lowering's bug).
"""

from __future__ import annotations

import struct
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import ClassVar

from xdsl.context import Context
from xdsl.dialects import arith, func, gpu, memref, scf
from xdsl.dialects.builtin import (
    BFloat16Type,
    BytesAttr,
    DenseIntOrFPElementsAttr,
    Float16Type,
    Float32Type,
    Float64Type,
    IndexType,
    IntegerAttr,
    MemRefType,
    ModuleOp,
    StringAttr,
    SymbolRefAttr,
    TensorType,
    UnitAttr,
    i64,
)
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.traits import SymbolTable

from accy.dialects import accy
from accy.dialects.dense import storage_format
from accy.dialects.host import (
    KERNELS_MODULE,
    PEAK_BYTES_ATTR,
    SIGNATURE_ATTR,
    CopyOp,
    FallbackOp,
    YieldOp,
    buffer_element_type,
    used_arguments,
    written_arguments,
)
from accy.dialects.host import ConstantOp as HostConstantOp
from accy.dialects.target import TargetProfile
from accy.dialects.types import RUNNABLE_ELEMENTS, element_bytes, is_row_major, is_runnable_element, numel
from accy.passes.analyses import kinds
from accy.passes.analyses.bufferization import BufferPlan, BufferRef
from accy.passes.analyses.outlining import OutlinedKernel, Outlining
from accy.passes.decompose import DECOMPOSED_BY_KERNELIZE, decompose_ops
from accy.passes.half_compute import STORAGE_OPS, narrow_types
from accy.passes.kernel_ir.bounds import LaunchSizes, bounds_requested_by_env, verify_bounds
from accy.passes.kernel_ir.kernel_checks import check_dominance, simplify_kernel
from accy.passes.kernelization.conv import lower_conv
from accy.passes.kernelization.dot import lower_dot
from accy.passes.kernelization.elementwise import lower_elementwise
from accy.passes.kernelization.flash_attention import lower_flash_attention
from accy.passes.kernelization.iterate import iterate_functions
from accy.passes.kernelization.kernel_builder import buffer_type
from accy.passes.kernelization.kernel_call import drop_serialized, lower_kernel_call
from accy.passes.kernelization.lowered import Decline, LoweredKernel, Scratch
from accy.passes.kernelization.reduction import lower_reduction
from accy.passes.kernelization.row_pipeline import lower_row_pipeline
from accy.passes.kernelization.scan import lower_scan
from accy.passes.pass_manager import AccyPass, AnalysisManager, PreservedAnalyses
from accy.progress import Bar

Lowering = Callable[[OutlinedKernel, BufferPlan, TargetProfile], LoweredKernel]

#: kind -> its lowering, as the kind declares it (kinds.py; tests/unit/test_kinds.py
#: checks the two agree). `iterate` has none: `_HostBuilder._iterate` makes it a loop of kernels.
LOWERINGS: dict[str, Lowering] = {
    kinds.ELEMENTWISE.name: lower_elementwise,
    kinds.SHAPE.name: lower_elementwise,
    kinds.REDUCTION.name: lower_reduction,
    kinds.SCAN.name: lower_scan,
    kinds.DOT_GENERAL.name: lower_dot,
    kinds.CONV.name: lower_conv,
    kinds.ROW_PIPELINE.name: lower_row_pipeline,
    kinds.FLASH_ATTENTION.name: lower_flash_attention,
    kinds.KERNEL_CALL.name: lower_kernel_call,
}


def print_remark(text: str) -> None:
    print(f"remark: {text}", file=sys.stderr)


#: Where decline remarks go; tests and tools may replace it.
remark: Callable[[str], None] = print_remark


@dataclass(frozen=True)
class KernelizePass(AccyPass):
    """Lowers each tensor function to kernels (one `gpu.func` per work item, by
    kind) and a host schedule of buffers, launches and host fallbacks."""

    name: ClassVar[str] = "kernelize"
    version: ClassVar[int] = 8  # 4: GPU scans tiled; 5: accy.kernel_call is launched, not a host fallback; 6: CPU streaming stores, softmax exp kept in the output row; 7: accy.iterate is a loop of kernels, GPU dots split k; 8: accy.conv is a kind (conv.py)

    strict: bool = False
    """Fail where a work item would run on the host reference path (a lowering declines it)."""
    verify_bounds: bool = False
    """Prove every load and store of every kernel in bounds under its launch (also `$ACCY_VERIFY_BOUNDS`)."""

    def run(self, ctx: Context, module: ModuleOp, am: AnalysisManager) -> PreservedAnalyses:
        profile = TargetProfile.of_module(module)
        funcs = [op for op in module.ops if isinstance(op, func.FuncOp) and SIGNATURE_ATTR not in op.attributes]
        if not funcs:
            return PreservedAnalyses.all()
        for f in funcs:
            _check_runnable_elements(f)
        # accy.pool seeds no kind: its primitive form (decompose.py) makes the kernel.
        if decompose_ops(module, DECOMPOSED_BY_KERNELIZE):
            am.invalidate(PreservedAnalyses.none())
        kernels = _kernels_module(module)
        bodies = [f for f in funcs if f.body.blocks and not f.is_declaration]
        work = sum(len(am.get(Outlining, f).kernels) for f in bodies)
        with Bar("kernelize", work, "kernels") as bar:  # one update per work item
            for f in bodies:
                outlining = am.get(Outlining, f)
                plan = am.get(BufferPlan, f)
                host = _HostBuilder(f, outlining.kernels, plan, profile, kernels, self.strict, ctx, am)
                # The variable is read either way: a value it does not take is an error wherever it is set.
                host.verify_bounds = bounds_requested_by_env() or self.verify_bounds
                host.progress = bar
                host.build()
        drop_serialized(module)
        module.attributes["gpu.container_module"] = UnitAttr()
        return PreservedAnalyses.none()


class ElementTypeError(ValueError):
    """A function computes in an element type accy does not run (`i7`): the
    user's program, refused before any lowering builds a vector of it. `op`
    is the function or op whose type it is (for a located diagnostic)."""

    def __init__(self, message: str, op: Operation) -> None:
        super().__init__(message)
        self.op = op


def _check_runnable_elements(f: func.FuncOp) -> None:
    """Raises ElementTypeError at the first argument or op result of `f` whose
    element type accy does not run (`accy.compile` refuses it the same way)."""
    name = f.sym_name.data
    typed: list[tuple[str, Attribute, Operation]] = [
        (f"argument #{i} of @{name}", t, f) for i, t in enumerate(f.function_type.inputs.data)
    ]
    typed += [
        (f"'{op.name}' (result #{i}) in @{name}", r.type, op)
        for op in f.walk() if op is not f for i, r in enumerate(op.results)
    ]
    for where, t, op in typed:
        if isinstance(t, TensorType) and not is_runnable_element(t.element_type):
            raise ElementTypeError(
                f"{where} has type {t}: accy runs no element type {t.element_type} (only {RUNNABLE_ELEMENTS})", op
            )


class LoweringRefused(ValueError):
    """A work item that cannot be lowered where no host fallback is allowed
    (strict kernelization or the fast tier): the user's choice, not a bug."""


#: Element types a target may lack: (type, profile field, OpenCL extension).
OPTIONAL_TYPES = ((Float16Type, "fp16", "cl_khr_fp16"), (Float64Type, "fp64", "cl_khr_fp64"))


def check_element_types(k: OutlinedKernel, profile: TargetProfile) -> None:
    """Declines a kernel that computes in an element type the target cannot
    compute in (`fp64` false; f16 with `fp16` false and bf16 are stored in
    16 bits and may only be loaded, stored, moved and cast to or from f32,
    which is what compute-half-in-f32 leaves of them)."""
    values = [*k.inputs, *k.outputs, *(v for op in k.ops for v in (*op.operands, *op.results))]
    narrow = narrow_types(profile)
    for op in k.ops:
        if isinstance(op, STORAGE_OPS) or not any(
            isinstance(v.type, TensorType) and isinstance(v.type.element_type, narrow) for v in (*op.operands, *op.results)
        ):
            continue
        if isinstance(op, accy.CastOp) and _half_storage_cast(op):
            continue
        if any(isinstance(getattr(v.type, "element_type", None), BFloat16Type) for v in (*op.operands, *op.results)):
            raise Decline(f"'{op.name}' computes in bfloat16, which no backend does (compute-half-in-f32 widens it)")
        raise Decline("float16 needs the OpenCL extension cl_khr_fp16, which the target lacks (fp16 = false)")
    for t, field, extension in OPTIONAL_TYPES:
        if getattr(profile, field) or t is Float16Type:  # f16 without fp16 is storage (above)
            continue
        if any(isinstance(v.type, TensorType) and isinstance(v.type.element_type, t) for v in values):
            name = "float16" if field == "fp16" else "float64"
            raise Decline(f"{name} needs the OpenCL extension {extension}, which the target lacks ({field} = false)")


def _half_storage_cast(op: accy.CastOp) -> bool:
    """A cast the backends convert 16-bit floats by: with f32 on the other
    side, or f64 -> f16."""
    src, dst = (getattr(v.type, "element_type", None) for v in (op.operands[0], op.result))
    return isinstance(src, Float32Type) or isinstance(dst, Float32Type) or (
        isinstance(src, Float64Type) and isinstance(dst, Float16Type)
    )


def _kernels_module(module: ModuleOp) -> gpu.ModuleOp:
    for op in module.ops:
        if isinstance(op, gpu.ModuleOp) and op.sym_name.data == KERNELS_MODULE:
            return op
    kernels = gpu.ModuleOp(StringAttr(KERNELS_MODULE), Region(Block()))  # type: ignore[arg-type]
    module.body.block.add_op(kernels)
    return kernels


def _contiguous(ref: BufferRef) -> bool:
    return ref.offset == 0 and is_row_major(ref.shape, ref.strides)


class _HostBuilder:
    """Rewrites one function into its host schedule."""

    def __init__(
        self, f: func.FuncOp, kernels: list[OutlinedKernel], plan: BufferPlan, profile: TargetProfile,
        module: gpu.ModuleOp, strict: bool, ctx: Context, am: AnalysisManager,
    ) -> None:
        self.f, self.kernels, self.plan, self.profile = f, kernels, plan, profile
        self.module, self.strict, self.ctx, self.am = module, strict, ctx, am
        self.block = Block()
        self.buffers: dict[tuple[int, Attribute], SSAValue] = {}
        self.pinned: set[tuple[int, Attribute]] = set()
        #: The largest scratch buffer of a lowering (split reductions), on top of the plan's peak.
        self.scratch_bytes = 0
        #: Whether each kernel is proved in bounds (bounds.py) as it is made.
        self.verify_bounds = False
        self.progress: Bar | None = None  # counts the work items scheduled

    def _key(self, v: SSAValue) -> tuple[int, Attribute]:
        """A host memref per (plan buffer, stored element type)."""
        return (self.plan.refs[v].buffer, buffer_element_type(accy.elem_of(v)))

    def _type(self, v: SSAValue) -> MemRefType:
        if v in self.plan.refs:
            return buffer_type(self.plan.buffer_of(v), accy.elem_of(v))
        # An argument the plan does not place (unused): a buffer of its own size.
        return MemRefType(buffer_element_type(accy.elem_of(v)), [max(1, numel(accy.shape_of(v)))])

    def _buffer(self, v: SSAValue) -> SSAValue:
        """The host memref holding `v`'s buffer, allocated on first use."""
        key = self._key(v)
        if key not in self.buffers:
            owner = v.owner
            if isinstance(owner, accy.ConstantOp):
                op: Operation = HostConstantOp(_fit(owner.value, self._type(v)), self._type(v))
            else:
                op = memref.AllocOp.get(self._type(v).element_type, shape=self._type(v).get_shape())
            self.block.add_op(op)
            self.buffers[key] = op.results[0]
        return self.buffers[key]

    def build(self) -> None:
        """Replaces the function by its host schedule."""
        f = self.f
        old_type = f.function_type
        outs = self.build_block()
        new = func.FuncOp(
            f.sym_name.data, ([a.type for a in self.block.args], [o.type for o in outs]), Region(self.block)
        )
        new.attributes |= {k: v for k, v in f.attributes.items() if k not in ("sym_name", "function_type")}
        new.attributes[SIGNATURE_ATTR] = old_type
        new.attributes[PEAK_BYTES_ATTR] = IntegerAttr(self.peak_bytes, i64)
        if f.sym_visibility is not None:
            new.sym_visibility = f.sym_visibility
        parent = f.parent_block()
        assert parent is not None
        parent.insert_op_before(new, f)
        f.detach()
        f.erase()

    @property
    def peak_bytes(self) -> int:
        return self.plan.peak_bytes + self.scratch_bytes

    def build_block(self) -> list[SSAValue]:
        """Fills `self.block` with the schedule, ending in `func.return` of
        the result buffers (returned)."""
        f, plan = self.f, self.plan
        for arg in f.args:
            barg = self.block.insert_arg(self._type(arg), len(self.block.args))
            if arg in plan.refs:
                self.buffers[self._key(arg)] = barg
                self.pinned.add(self._key(arg))
        ret = f.body.block.last_op
        assert isinstance(ret, func.ReturnOp)
        results = list(ret.arguments)
        self.pinned |= {self._key(r) for r in results if r in plan.refs}

        last_use: dict[tuple[int, Attribute], int] = {}
        for i, k in enumerate(self.kernels):
            for v in (*k.inputs, *k.outputs):
                if v in plan.refs:
                    last_use[self._key(v)] = i

        for i, k in enumerate(self.kernels):
            self._schedule(k)
            if self.progress is not None:
                self.progress.update()
            for key, last in last_use.items():
                if last == i and key not in self.pinned and key in self.buffers:
                    self.block.add_op(memref.DeallocOp.get(self.buffers[key]))

        for r in results:
            if r not in plan.refs:
                raise ValueError(f"the buffer plan of @{f.sym_name.data} places no buffer for a returned value")
        outs = [self._buffer(r) for r in results]
        self.block.add_op(func.ReturnOp(*outs))
        return outs

    def _schedule(self, k: OutlinedKernel) -> None:
        if isinstance(k.anchor, accy.IterateOp):
            self._iterate(k, k.anchor)
            return
        lower = LOWERINGS.get(k.kind)
        try:
            if lower is None:
                raise Decline(f"{k.kind} work items have no kernel lowering")
            check_element_types(k, self.profile)
            lowered = lower(k, self.plan, self.profile)
        except Decline as e:
            self._decline(k, str(e))
            return
        stages = [lowered]
        while stages[0].before is not None:
            stages.insert(0, stages[0].before)
        scratch: dict[Scratch, SSAValue] = {}
        held = 0  # bytes of this work item's scratch buffers, all live at once
        for stage in stages:
            for v in stage.values:
                if isinstance(v, Scratch) and v not in scratch:
                    st = buffer_element_type(v.element_type)
                    alloc = memref.AllocOp.get(st, shape=[max(1, v.size)])
                    self.block.add_op(alloc)
                    scratch[v] = alloc.results[0]
                    held += max(1, v.size) * element_bytes(st)
        self.scratch_bytes = max(self.scratch_bytes, held)
        for stage in stages:
            if not stage.existing:
                simplify_kernel(stage.func, self.ctx)
                check_dominance(stage.func, "after simplify_kernel")
                if self.verify_bounds:
                    verify_bounds(stage.func, LaunchSizes(stage.grid, stage.block))
                self.module.body.block.add_op(stage.func)
            args = [scratch[v] if isinstance(v, Scratch) else self._buffer(v) for v in stage.values]
            sizes = [self._index(n) for n in (*stage.grid, *stage.block)]
            holder = stage.func.parent_op()
            where = holder.sym_name.data if isinstance(holder, gpu.ModuleOp) else KERNELS_MODULE
            name = SymbolRefAttr(where, [stage.func.sym_name.data])
            self.block.add_op(gpu.LaunchFuncOp(name, sizes[:3], sizes[3:], kernelOperands=args))
        for buf in scratch.values():
            self.block.add_op(memref.DeallocOp.get(buf))

    def _iterate(self, k: OutlinedKernel, loop: accy.IterateOp) -> None:
        """An `accy.iterate` as a loop of kernels (iterate.py): its prologue
        fills one buffer per carried value, then an `scf.for` runs the body's
        schedule `count` times. Each carried value has two buffers that swap
        roles every trip (the loop's iter_args): the body reads the one and
        writes the other, so no trip copies. The buffer the body's plan
        stores a yielded value in is the second one; where the body yields
        no buffer of its own (a carried or outer value, a literal, a value
        yielded twice), it copies the value in. Every buffer of the body is
        allocated before the loop and freed after it, so no trip allocates.
        The last trip's values are copied to the item's outputs."""
        fns = iterate_functions(loop, k.name, self._source)
        bases = [self._buffer(b) for b in fns.bases]

        init_block, inits, _ = self._nested(fns.prologue)
        mapping: dict[SSAValue, SSAValue] = dict(zip(init_block.args, bases, strict=True))
        for op in init_block.ops:
            if not isinstance(op, func.ReturnOp):
                self.block.add_op(op.clone(value_mapper=mapping))
        made = [mapping[v] for v in dict.fromkeys(inits) if isinstance(v.owner, memref.AllocOp)]
        inits = [mapping[v] for v in inits]

        body_block, yielded, body_peak = self._nested(fns.body)
        carried = body_block.args[: len(loop.inits)]
        counts = [numel(accy.shape_of(v)) for v in loop.inits]
        # Each carried value: the buffer the body yields it in (a partner), or None.
        partners: list[SSAValue | None] = []
        for v in yielded:
            own = isinstance(v.owner, memref.AllocOp) and v not in partners
            partners.append(v if own else None)
        hoisted = [op for op in body_block.ops if isinstance(op, memref.AllocOp | HostConstantOp | arith.ConstantOp)]
        inner = dict(zip(body_block.args[len(carried) :], bases, strict=True))
        for op in hoisted:
            if op.results[0] not in partners:
                self.block.add_op(clone := op.clone(value_mapper=inner))
                inner[op.results[0]] = clone.results[0]

        pairs: list[tuple[SSAValue, SSAValue]] = []
        extra = body_peak
        for arg, partner, init, n in zip(carried, partners, inits, counts, strict=True):
            size = max(_size(arg), _size(partner) if partner is not None else 0)
            element = _element(arg)
            first, second = (memref.AllocOp.get(element, shape=[size]) for _ in range(2))
            self.block.add_ops([first, second])
            self.block.add_op(CopyOp(init, first.memref, n))
            pairs.append((first.memref, second.memref))
            extra += 2 * size * element_bytes(element)
        for buf in made:
            self.block.add_op(memref.DeallocOp.get(buf))
        self.scratch_bytes = max(self.scratch_bytes, extra)

        body = Block(arg_types=[IndexType(), *(p[0].type for p in pairs), *(p[0].type for p in pairs)])
        current, following = body.args[1 : 1 + len(pairs)], body.args[1 + len(pairs) :]
        trip = [op for op in body_block.ops if op not in hoisted and not isinstance(op, memref.DeallocOp | func.ReturnOp)]
        # A hoisted stage is still passed the carried buffers it does not use: any of their pairs does.
        outside = {**inner, **dict(zip(carried, (a for a, _ in pairs), strict=True))}
        outside.update((p, b) for p, (_, b) in zip(partners, pairs, strict=True) if p is not None)
        for op in _invariant_launches(trip, {*carried, *(p for p in partners if p is not None)}, self._kernel):
            trip.remove(op)
            self.block.add_op(op.clone(value_mapper=outside))
        inner.update(zip(carried, current, strict=True))
        inner.update((p, f) for p, f in zip(partners, following, strict=True) if p is not None)
        for op in trip:
            body.add_op(op.clone(value_mapper=inner))
        for v, partner, target, n in zip(yielded, partners, following, counts, strict=True):
            if partner is None:
                body.add_op(CopyOp(inner[v], target, n))
        body.add_op(scf.YieldOp(*following, *current))
        trips = scf.ForOp(self._index(0), self._index(fns.count), self._index(1), [*(a for a, _ in pairs), *(b for _, b in pairs)], body)
        self.block.add_op(trips)

        for result, last, n in zip(loop.res, trips.results[: len(pairs)], counts, strict=True):
            if result in self.plan.refs and result in k.outputs:
                self.block.add_op(CopyOp(last, self._buffer(result), n))
        for buf in [*(v for pair in pairs for v in pair), *(inner[op.results[0]] for op in hoisted if isinstance(op, memref.AllocOp) and op.results[0] not in partners)]:
            self.block.add_op(memref.DeallocOp.get(buf))

    def _kernel(self, launch: gpu.LaunchFuncOp) -> gpu.FuncOp:
        """The `gpu.func` a launch of this module names."""
        top = self.module.parent_op()
        assert top is not None
        found = SymbolTable.lookup_symbol(top, launch.kernel)
        if not isinstance(found, gpu.FuncOp):
            raise ValueError(f"kernelize: a launch names {launch.kernel}, which is not a kernel of the module")
        return found

    def _nested(self, fn: func.FuncOp) -> tuple[Block, list[SSAValue], int]:
        """`fn`'s host schedule (its block, result buffers and peak bytes),
        lowered like a top-level function: its kernels join the module."""
        parent = self.f.parent_block()
        assert parent is not None
        parent.insert_op_before(fn, self.f)
        try:
            sub = _HostBuilder(
                fn, self.am.get(Outlining, fn).kernels, self.am.get(BufferPlan, fn), self.profile,
                self.module, self.strict, self.ctx, self.am,
            )
            sub.verify_bounds = self.verify_bounds
            outs = sub.build_block()
        finally:
            fn.detach()
        return sub.block, outs, sub.peak_bytes

    def _index(self, n: int) -> SSAValue:
        c = arith.ConstantOp.from_int_and_width(n, IndexType())
        self.block.add_op(c)
        return c.result

    def _decline(self, k: OutlinedKernel, reason: str) -> None:
        message = f"kernel {k.name} ({k.kind}) runs on the host reference path: {reason}"
        if self.strict or self.profile.math == "fast":
            why = "strict kernelization" if self.strict else "the fast math tier"
            raise LoweringRefused(f"kernel {k.name} ({k.kind}) cannot be lowered ({why}): {reason}")
        remark(message)
        # Region inputs are whole buffers; views of them and literals are recomputed inside.
        bases: list[SSAValue] = []
        chain: list[Operation] = []
        for v in k.inputs:
            base, ops = self._source(v)
            if base is not None and base not in bases:
                bases.append(base)
            chain.extend(op for op in ops if op not in chain)
        body = Block(arg_types=[b.type for b in bases])
        mapping: dict[SSAValue, SSAValue] = dict(zip(bases, body.args, strict=False))
        for op in [*chain, *k.ops]:
            body.add_op(op.clone(value_mapper=mapping))
        body.add_op(YieldOp([mapping[o] for o in k.outputs]))
        for o in k.outputs:
            if not _contiguous(self.plan.refs[o]):
                raise ValueError(f"output of host fallback {k.name} is not a contiguous buffer")
        self.block.add_op(
            FallbackOp([self._buffer(b) for b in bases], [self._buffer(o) for o in k.outputs], Region(body), k.name, reason)
        )

    def _source(self, v: SSAValue) -> tuple[SSAValue | None, list[Operation]]:
        """Where a host fallback gets its input `v`: the value whose whole
        buffer holds `v` (None when the region rebuilds `v` from a literal),
        and the ops that lead from there to `v` (views, and first the
        `accy.constant` of a literal). Constants are always cloned into the
        region: a splat's buffer holds one element (read with strides 0),
        which is no whole tensor, and any literal costs the region nothing
        to rebuild."""
        ops: list[Operation] = []
        cur = v
        while True:
            owner = cur.owner
            if isinstance(owner, accy.ConstantOp):
                return None, [owner, *ops]
            if cur in self.plan.refs and _contiguous(self.plan.refs[cur]):
                return cur, ops
            if not isinstance(owner, accy.VIEW_OPS):
                # The plan gives strided refs to views and splat constants only.
                raise ValueError(f"input {v.name_hint or v} of a host fallback is not reachable from a whole buffer")
            ops.insert(0, owner)
            cur = owner.operands[0]


def _invariant_launches(
    trip: list[Operation], carried: set[SSAValue], kernel: Callable[[gpu.LaunchFuncOp], gpu.FuncOp]
) -> list[Operation]:
    """The launches of a loop's trip that compute the same every trip (a
    packed invariant operand, say), in order: each reads no carried buffer
    and no buffer another op of the trip writes, and no op before it in the
    trip reads what it writes. Hoisted in order, a chain of them goes out."""

    def used(op: Operation) -> set[SSAValue]:
        if isinstance(op, gpu.LaunchFuncOp):
            args = list(op.kernelOperands)
            return {args[i] for i in used_arguments(kernel(op))}
        return {v for inner in op.walk() for v in inner.operands if isinstance(v.type, MemRefType)}

    def written(op: Operation) -> set[SSAValue]:
        if isinstance(op, gpu.LaunchFuncOp):
            args = list(op.kernelOperands)
            return {args[i] for i in written_arguments(kernel(op))}
        if isinstance(op, FallbackOp):
            return set(op.outputs)
        if isinstance(op, CopyOp):
            return {op.target}
        return used(op)  # a nested loop: anything it touches

    rest, out = list(trip), []
    for op in trip:
        if not isinstance(op, gpu.LaunchFuncOp):
            continue
        reads, writes = used(op), written(op)
        others = [o for o in rest if o is not op]
        earlier = others[: rest.index(op)]
        if reads & carried or any(reads & written(o) for o in others) or any(writes & used(o) for o in earlier):
            continue
        rest.remove(op)
        out.append(op)
    return out


def _size(buffer: SSAValue) -> int:
    t = buffer.type
    assert isinstance(t, MemRefType)
    return t.get_shape()[0]


def _element(buffer: SSAValue) -> Attribute:
    t = buffer.type
    assert isinstance(t, MemRefType)
    return t.element_type


def _fit(value: DenseIntOrFPElementsAttr, t: MemRefType) -> DenseIntOrFPElementsAttr:
    """A splat constant the plan stores as one element becomes a one-element literal."""
    n = t.get_shape()[0]
    if n >= numel(value.get_shape()):
        return value
    # The first n elements' bytes: a splat is never unpacked.
    data = value.data.data[: n * struct.calcsize(storage_format(value))]
    return DenseIntOrFPElementsAttr(TensorType(value.get_element_type(), [n]), BytesAttr(data))
