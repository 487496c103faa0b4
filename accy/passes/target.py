"""`set-target`: attaches or changes the module's target profile (`accy.target`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp

from accy.dialects.target import FIELDS, TARGET_KEY, TargetAttr, target_fields
from accy.passes.analyses.bufferization import BufferPlan
from accy.passes.analyses.outlining import Outlining
from accy.passes.analyses.schedule import Schedule
from accy.passes.analyses.shape_layout import ShapeLayout
from accy.passes.pass_manager import AccyPass, AnalysisManager, PreservedAnalyses


@dataclass(frozen=True)
class SetTargetPass(AccyPass):
    """Sets the module's target profile (`accy.target`), field by field.

    The module's attribute says which fields it sets (accy/dialects/target.py);
    this pass sets the given ones. With `profile` ("cpu" or "gpu") the module
    starts over from that profile: the fields it set before are dropped. Without
    it, the fields the module sets are kept and the given ones change, e.g.
    `set-target{profile=gpu math=fast}`, `set-target{vector_width=8}`,
    `set-target{fp16=false}` or `set-target{reduce_threads=64 dot_tile=8}`.
    Options are the profile's fields: `format`, `math`; the device limits
    `max_work_group_size`, `local_mem_bytes`, `static_local_bytes`, `vector_width`, `fp16`, `fp64`;
    the GPU dot's matrix instructions `mma` (`mma=sm80`, `mma=emulate`, or
    `mma=""` to clear what a device would set); the tile and work-group sizes `group_size`, `reduce_threads`,
    `reduce_chunk`, `row_threads`, `row_segment`, `scan_vectors`, `query_rows`, `key_tile`,
    `attention_lanes`, `dot_rows`, `dot_vectors`, `dot_tile`, `stream_bytes`. A
    field set here is kept when a device compiles the module. The analyses
    stay valid: they read the functions, never the target (the lowerings
    do)."""

    name: ClassVar[str] = "set-target"
    version: ClassVar[int] = 8  # 5: stream_bytes; 6: mma; 7: row_segment; 8: static_local_bytes

    profile: str | None = None
    """Start over from this profile, cpu or gpu (the fields the module set are dropped); unset: keep them."""
    format: str | None = None
    """The artifact a backend prints: opencl-c or llvm-ir (llvm-ir needs the cpu profile)."""
    math: str | None = None
    """The math tier: exact (correctly rounded or library-grade) or fast (documented approximations)."""
    max_work_group_size: int | None = None
    """The device's limit on work-items per work-group."""
    local_mem_bytes: int | None = None
    """The device's local memory per work-group, in bytes."""
    static_local_bytes: int | None = None
    """Local memory a work-group's fixed-size arrays may take where the driver allows more than
    local_mem_bytes (NVIDIA's); 0: no more. The tensor-core dot tiles use it."""
    vector_width: int | None = None
    """Elements per vector load and store: 1, 2, 4, 8 or 16."""
    fp16: bool | None = None
    """Whether kernels may compute in half precision (OpenCL's cl_khr_fp16);
    without it f16 is stored in 16 bits and computed in f32."""
    fp64: bool | None = None
    """Whether kernels may compute in double precision (OpenCL's cl_khr_fp64)."""
    mma: str | None = None
    """The GPU dot's warp matrix instructions: "" (none), sm80 (mma.sync as inline PTX) or emulate (for tests)."""
    group_size: int | None = None
    """Work-items per work-group of one-work-item-per-element kernels."""
    reduce_threads: int | None = None
    """Work-items of a GPU work-group that shares one reduction output."""
    reduce_chunk: int | None = None
    """Elements one accumulator lane takes before a long reduction is split into partials."""
    row_threads: int | None = None
    """Work-items of a GPU work-group that shares one row of a row pipeline, or a scan's lines."""
    row_segment: int | None = None
    """Work-items of a GPU row pipeline's segment that shares one short row (several rows a work-group)."""
    scan_vectors: int | None = None
    """Vectors each work-item of a GPU scan takes per tile of a line."""
    query_rows: int | None = None
    """Query rows of a flash attention's block (CPU: register tiles of a work-item; GPU: a work-group)."""
    key_tile: int | None = None
    """Keys of a flash attention's tile."""
    attention_lanes: int | None = None
    """Floats a local load of a GPU flash attention's f32 register tiles takes: 1 or 4."""
    dot_rows: int | None = None
    """Rows of a dot register tile (GPU: each work-item's tile is dot_rows x dot_rows)."""
    dot_vectors: int | None = None
    """Vectors per row of a CPU dot register tile."""
    dot_tile: int | None = None
    """Edge of a GPU dot's square work-group."""
    stream_bytes: int | None = None
    """A CPU kernel stores an output of at least this many bytes with streaming (non-temporal) stores."""

    def __post_init__(self) -> None:
        # Validate at construction, so a bad pipeline string fails before any pass runs.
        self.target_for({})

    def given(self) -> dict[str, Any]:
        """The fields this pass sets."""
        return {name: getattr(self, name) for name in FIELDS if getattr(self, name) is not None}

    def target_for(self, current: dict[str, Any]) -> TargetAttr:
        """The attribute this pass attaches to a module that sets `current`."""
        kept = {} if self.profile is not None else current
        try:
            return TargetAttr.from_fields({**kept, **self.given()})
        except ValueError as e:
            raise ValueError(f"set-target: {e}") from None

    def run(self, ctx: Context, module: ModuleOp, am: AnalysisManager) -> PreservedAnalyses:
        new = self.target_for(target_fields(module))
        if module.attributes.get(TARGET_KEY) == new:
            return PreservedAnalyses.all()
        module.attributes[TARGET_KEY] = new
        # The analyses are of functions and read their bodies, never the
        # module's target (what a target changes is decided by the lowerings
        # that read it): only the attribute changed, so all of them stay valid.
        # An analysis that comes to read the target leaves this list;
        # tests/lit/analysis-cache/set-target.mlir checks it with --check-preserved.
        return PreservedAnalyses.of(ShapeLayout, Schedule, Outlining, BufferPlan)
