"""The kinds of work item: the one declaration of what kernels a schedule makes.

Each kind names the ops that start an item of it (and whether that op is the
item's anchor), whether it takes elementwise work in, and the lowering that
turns its items into kernels. The schedule (schedule.py) tags ops and fuses
by these declarations; kernelize's `LOWERINGS` is keyed by them; a
`WorkItem.kind`, an `OutlinedKernel.kind` and a kernel's default name
(`@<fn>_k<N>_<kind>`) are a kind's `name`. tests/unit/test_kinds.py checks
that every kind with a lowering has it in `LOWERINGS` (from the module named
here), that nothing else has one, and that the schedule tags only these kinds.

A new kind: declare it here (and in `KINDS`), give the fusion rules that form
it in schedule.py, and write its lowering, a module of
`accy.passes.kernelization` that imports no other lowering, entered in
kernelize's `LOWERINGS`.
"""

from __future__ import annotations

from dataclasses import KW_ONLY, dataclass

from xdsl.ir import Operation

from accy.dialects.accy import (
    ELEMENTWISE_OPS,
    AttentionOp,
    ConcatOp,
    ConvOp,
    DotGeneralOp,
    GatherOp,
    IotaOp,
    IterateOp,
    KernelCallOp,
    LayerNormOp,
    LogSoftmaxOp,
    PadOp,
    ReduceOp,
    ScanOp,
    SoftmaxOp,
)


@dataclass(frozen=True)
class Kind:
    """A kind of work item: the kernel (or, for `iterate`, the loop of
    kernels) that an item of it becomes."""

    name: str
    _: KW_ONLY
    seeds: tuple[type[Operation], ...]
    """The ops each of which starts an item of this kind before fusion (the
    schedule's rules then merge items, and make row pipelines and flash
    attention of reductions and dots: they have more ways in)."""
    anchored: bool
    """Whether the seed is the item's anchor (`WorkItem.anchor`, the op the
    lowering builds around); elementwise items have none."""
    takes_elementwise: bool
    """Whether elementwise work fuses into it as a prologue (rule 5, computed
    as the kernel reads its inputs) and an epilogue (rule 3, on its result),
    and cheap shared values are recomputed in it (rule 6). Elementwise items
    merge with each other instead (rule 4), and recompute shared values too."""
    lowering: str | None
    """`module.function` in `accy.passes.kernelization` that lowers an item
    of this kind (kernelize's `LOWERINGS[name]`); None: no lowering of its
    own (an `iterate` is a host loop over its body's kernels, which
    kernelize lowers like a function's)."""


# A gather loads its index and reads its table there; an iota computes its
# value from the coordinates; a pad reads its operand at a computed position:
# all are computed per element, as elementwise ops are, and fuse with them (rule 4).
ELEMENTWISE = Kind(
    "elementwise", seeds=(*ELEMENTWISE_OPS, GatherOp, IotaOp, PadOp), anchored=False, takes_elementwise=False,
    lowering="elementwise.lower_elementwise",
)
# A copy (a returned view, a reshape strides cannot express, a concat): a
# pointwise kernel of views and concats.
SHAPE = Kind(
    "shape", seeds=(ConcatOp,), anchored=True, takes_elementwise=False, lowering="elementwise.lower_elementwise"
)
DOT_GENERAL = Kind("dot_general", seeds=(DotGeneralOp,), anchored=True, takes_elementwise=True, lowering="dot.lower_dot")
# An implicit product on the dot's register tiles (its im2col is never a tensor).
CONV = Kind("conv", seeds=(ConvOp,), anchored=True, takes_elementwise=True, lowering="conv.lower_conv")
REDUCTION = Kind(
    "reduction", seeds=(ReduceOp,), anchored=True, takes_elementwise=True, lowering="reduction.lower_reduction"
)
# Rule 1 also makes one of reductions along the rows and their elementwise work.
ROW_PIPELINE = Kind(
    "row_pipeline", seeds=(SoftmaxOp, LogSoftmaxOp, LayerNormOp), anchored=True, takes_elementwise=True,
    lowering="row_pipeline.lower_row_pipeline",
)
SCAN = Kind("scan", seeds=(ScanOp,), anchored=True, takes_elementwise=True, lowering="scan.lower_scan")
# Rule 2 also makes one of a row pipeline between two dots.
FLASH_ATTENTION = Kind(
    "flash_attention", seeds=(AttentionOp,), anchored=True, takes_elementwise=True,
    lowering="flash_attention.lower_flash_attention",
)
ITERATE = Kind("iterate", seeds=(IterateOp,), anchored=True, takes_elementwise=False, lowering=None)
KERNEL_CALL = Kind(
    "kernel_call", seeds=(KernelCallOp,), anchored=True, takes_elementwise=False,
    lowering="kernel_call.lower_kernel_call",
)

#: Every kind, by name.
KINDS: dict[str, Kind] = {
    k.name: k
    for k in (ELEMENTWISE, SHAPE, DOT_GENERAL, CONV, REDUCTION, ROW_PIPELINE, SCAN, FLASH_ATTENTION, ITERATE, KERNEL_CALL)
}
