"""Checks and tidying of a built kernel: `simplify_kernel` (xDSL's
canonicalization with folding, dead code, loop-invariant code motion, CSE),
`check_dominance` (every operand defined where it dominates its use:
a kernel that is not valid SSA is a bug in a lowering, reported with the
kernel's text) and `resource_problem` (a hand-written kernel's local
memory and launch against the device's limits).
"""

from __future__ import annotations

import math
from io import StringIO

from xdsl.context import Context
from xdsl.dialects import gpu, memref
from xdsl.dialects.builtin import MemRefType
from xdsl.ir import Block, BlockArgument, Operation, SSAValue
from xdsl.pattern_rewriter import GreedyRewritePatternApplier, PatternRewriteWalker
from xdsl.printer import Printer
from xdsl.transforms.canonicalize import CanonicalizationRewritePattern
from xdsl.transforms.common_subexpression_elimination import cse
from xdsl.transforms.dead_code_elimination import region_dce
from xdsl.transforms.loop_invariant_code_motion import LoopInvariantCodeMotion

from accy.dialects.host import MAX_WORK_ITEMS, AddressSpace, AddressSpaceAttr
from accy.dialects.types import element_bytes


def simplify_kernel(func: gpu.FuncOp, ctx: Context) -> None:
    """Tidies a built kernel in place: xDSL's canonicalization patterns with
    constant folding and dead-op removal (index math of merged dims, loops
    that run once, unused ids), loop-invariant code motion (what a loop body
    computes from values defined outside it moves before the loop), then
    common-subexpression elimination (an address or a value the builders
    computed per operand or per output, or that moved out of a loop, is
    computed once). The patterns only produce ops of the kernel IR
    conventions (`arith.constant`, `arith.xori`, inlined `scf` regions);
    `ctx` is the pass's context, in which the folded constants are built."""
    applier = GreedyRewritePatternApplier([CanonicalizationRewritePattern()], ctx=ctx, folding_enabled=True)
    PatternRewriteWalker(applier, post_walk_func=region_dce).rewrite_region(func.body)
    PatternRewriteWalker(LoopInvariantCodeMotion(), apply_recursively=False, walk_regions_first=True).rewrite_region(
        func.body
    )
    cse(func)


class InvalidKernelError(Exception):
    """A kernel the compiler built is not valid SSA: a bug in a lowering or in
    the kernel tidying, never in the user's program (a hand-written kernel
    reports it its own way: `op` uses `operand` where it is not defined)."""

    def __init__(self, message: str, op: Operation | None = None, operand: SSAValue | None = None) -> None:
        super().__init__(message)
        self.op = op
        self.operand = operand


def check_dominance(func: gpu.FuncOp, stage: str = "") -> None:
    """Checks that every operand of every op of kernel `func` is defined
    before its use in the same block or in a block enclosing it (an op
    result), or is an argument of such a block. xDSL's verifier checks
    neither (a value of a loop body used after the loop verifies, and prints
    as OpenCL C that no compiler accepts). Kernel regions are single blocks,
    so this is all dominance means there.

    Raises `InvalidKernelError` naming the kernel, the op and the operand."""
    visible: set[SSAValue] = set()

    def walk(block: Block) -> None:
        scope = list(block.args)
        visible.update(scope)
        for op in block.ops:
            for i, operand in enumerate(op.operands):
                if operand not in visible:
                    raise InvalidKernelError(_dominance_message(func, stage, op, i, operand), op, operand)
            for region in op.regions:
                for inner in region.blocks:
                    walk(inner)
            visible.update(op.results)
            scope.extend(op.results)
        visible.difference_update(scope)

    for block in func.body.blocks:
        walk(block)


def _dominance_message(func: gpu.FuncOp, stage: str, op: Operation, index: int, operand: SSAValue) -> str:
    """The error text: the use and the definition, named as in the printed
    kernel that follows it."""
    text = StringIO()
    printer = Printer(stream=text)
    printer.print_op(func)
    names = printer._ssa_values  # the names the kernel text above gives

    def name(v: SSAValue) -> str:
        return f"%{names[v]}" if v in names else "<unnamed>"

    def brief(o: Operation) -> str:
        results = ", ".join(name(r) for r in o.results)
        return f"{results} = {o.name}" if results else o.name

    if isinstance(operand, BlockArgument):
        parent = operand.block.parent_op()
        where = f"argument #{operand.index} of a block of {brief(parent) if parent else '?'}"
    else:
        assert isinstance(operand.owner, Operation)
        where = f"defined by {brief(operand.owner)}"
    return (
        f"internal error: kernel @{func.sym_name.data} is not valid SSA{f' {stage}' if stage else ''}: "
        f"operand #{index} ({name(operand)}) of {brief(op)} is {where}, which does not dominate the use "
        f"(defined later, or inside a region that does not enclose it):\n{text.getvalue()}"
    )



#: Private memory a work-group of a hand-written kernel may use, all its
#: work-items together. CPU devices keep it on a thread's stack (the LLVM
#: device and PoCL run a work-group's work-items as a loop in one thread,
#: each with its slice): 64 MiB of it crashed both (SIGSEGV), 4 MiB ran.
MAX_PRIVATE_BYTES = 1 << 20


def resource_problem(
    func: gpu.FuncOp, grid: tuple[int, int, int], block: tuple[int, int, int], local_mem_bytes: int | None = None,
    max_work_group_size: int | None = None,
) -> str | None:
    """What of kernel `func`'s launch (`grid` work-groups of `block`
    work-items) exceeds the device's limits, or None: its work-group
    (`workgroup` memory) allocations against `local_mem_bytes`, its
    work-group size against `max_work_group_size`, its private memory
    against `MAX_PRIVATE_BYTES` a work-group, and its work-items against
    `MAX_WORK_ITEMS` (a limit of None is not checked: the host's reference
    interpreter has none but the launch's)."""
    name = func.sym_name.data
    local = private = 0
    for op in func.walk():
        if isinstance(op, memref.AllocaOp):
            t = op.memref.type
            size = math.prod(t.get_shape()) * element_bytes(t.element_type)
            if _workgroup(t):
                local += size
            else:
                private += size
    if local_mem_bytes is not None and local > local_mem_bytes:
        return (
            f"kernel @{name} uses {local} bytes of local memory per work-group; the device has {local_mem_bytes} "
            "(make its LOCAL buffers smaller)"
        )
    items = math.prod(block)
    if private * items > MAX_PRIVATE_BYTES:
        return (
            f"kernel @{name} uses {private} bytes of private memory per work-item, {private * items} per work-group "
            f"of {items}; at most {MAX_PRIVATE_BYTES} (1 MiB) per work-group (make its PRIVATE buffers smaller, "
            "or keep the data in a GLOBAL buffer)"
        )
    if max_work_group_size is not None and items > max_work_group_size:
        return f"kernel @{name} has work-groups of {items} work-items; the device runs at most {max_work_group_size}"
    total = math.prod(grid) * items
    if total > MAX_WORK_ITEMS:
        return (
            f"kernel @{name} launches {total} work-items ({'x'.join(map(str, grid))} work-groups of "
            f"{'x'.join(map(str, block))}); at most {MAX_WORK_ITEMS} (2^32) may be launched at once"
        )
    return None


def _workgroup(t: object) -> bool:
    space = t.memory_space if isinstance(t, MemRefType) else None
    return isinstance(space, AddressSpaceAttr) and space.data == AddressSpace.WORKGROUP
