"""Target profiles: what a lowering may assume about the device it lowers for.

A profile travels in the IR as the module attribute `accy.target`, so an
`.mlir` file carries its own target and a pass reads it from the module:

    builtin.module attributes {accy.target = #accy.target<profile = "gpu",
        math = "fast", reduce_threads = 64>} { ... }

The attribute holds only the fields the module *sets*; the others are
unset, not defaulted. Who reads it fills them in:

- a pass (`TargetProfile.of_module`) takes the defaults of the named
  `profile` (`CPU_PROFILE` or `GPU_PROFILE`; "cpu" when unnamed);
- a device (`TargetProfile.filled_by`) supplies what it knows (its kind, its
  limits and which float types it computes in) and the defaults of the
  profile for the rest, and attaches the complete profile, so that a compiled
  module states every field it was compiled with.

A field the module sets is kept in both cases: a module with hand-set (or
tuned) sizes compiles with them.

- `profile`: "cpu" (one work-item owns a row or tile and loops over it,
  vectorised, no barriers) or "gpu" (work-groups cooperate in local memory);
- `format`: the artifact a backend prints, "opencl-c" or "llvm-ir"; a
  backend refuses a module whose format it does not print;
- `math`: "exact" (correctly rounded or library-grade math) or "fast"
  (documented approximations and contractions);
- device limits: `max_work_group_size` (work-items), `local_mem_bytes`,
  `static_local_bytes` (below) and
  `vector_width` (elements per vector load/store: the device's preferred
  float vector width);
- `static_local_bytes`: the local memory a work-group's fixed-size
  (`__local` array) allocations may take where the driver allows more than
  `local_mem_bytes`; 0 (the default) where it does not. NVIDIA's driver
  reports 48 KiB (`CL_DEVICE_LOCAL_MEM_SIZE`) yet builds and runs kernels
  whose static arrays take up to the multiprocessor's opt-in shared memory
  (probed on an H200: 64, 96 and 160 KiB), which the OpenCL runtime fills
  in (`static_local_limit`). The tensor-core dot tiles take it for deeper
  pipelines and wider blocks, measured to pay (docs/kernel-notes.md);
  every other lowering keeps within `local_mem_bytes`;
- element types: `fp16` and `fp64`, whether kernels may compute in half and
  double precision (OpenCL's cl_khr_fp16 / cl_khr_fp64). Without `fp16`,
  f16 is still stored in 16 bits and kernels compute it in f32 (the pass
  compute-half-in-f32; bf16 always so). A work item that needs f64 the
  target lacks is not lowered: it runs on the host reference path under
  `exact`, and is an error under `fast` or strict kernelization.
  Both default to true (a file without a target assumes a capable device);
  the runtime fills them in from its device.
- `mma`: the warp-level matrix instructions a GPU dot may use: "" (none,
  the default: the SIMT register tiles), "sm80" (NVIDIA's `mma.sync`
  m16n8k16 for f16/bf16 operands and, under `math = "fast"` only, m16n8k8
  TF32 for f32, printed as inline PTX by the OpenCL C backend; compute
  capability 8.0 or later), "sm90" (all of sm80, and f16/bf16 dots whose
  lhs async copies stage (the rhs along n, else along k, packed so first
  where it is not contracted along its last dim), and TF32 dots alike, on
  Hopper's warpgroup `wgmma`, which the runtime builds for sm_90a; compute
  capability 9.0), "emulate" (the
  sm80 kernels with each matrix instruction done by the warp's work-items
  through local memory: any GPU-profile device runs them, to test the
  lowering where no tensor core is) or "emulate-sm90" (so for the sm90
  kernels: each work-item sums its own accumulators from the swizzled
  tiles as the instruction reads them). The OpenCL runtime sets "sm80" on an NVIDIA device of compute
  capability 8 or more whose driver builds a probe kernel of inline
  `mma.sync`, and "sm90" where the device is of 9.0 and a probe `wgmma`
  built for sm_90a runs right too; a module may set either (where the
  device has it) or clear it (`mma = ""`).
- tile and work-group sizes (`TUNING_FIELDS`), the shapes lowerings give
  their kernels; each is at most what it says, lowerings take the largest
  power of two within it and the device's `max_work_group_size` where a
  work-group size must be one:
  - `group_size`: work-items per work-group of one-work-item-per-element
    kernels (elementwise, shape, scan, per-element dot and reduction);
  - `reduce_threads`: work-items of a GPU work-group that shares one
    reduction output;
  - `reduce_chunk`: reduced elements one accumulator lane takes before a
    long reduction is split into partials (bounds float rounding drift);
  - `row_threads`: work-items of a GPU work-group that shares one row of a
    row pipeline (softmax, layer norm, ...), and of one holding the lines of
    a GPU scan; a work-group of a row pipeline's short rows (`row_segment`)
    holds up to this many work-items in all;
  - `row_segment`: work-items of a GPU row pipeline's segment that shares
    one short row, several rows to a work-group: a row of at most
    `row_segment` x 16 elements (each work-item holding up to 16 of them in
    registers) takes one segment, a warp by default (fewer work-items where
    each would hold under 8 elements: 16 for a row of 128); a longer row
    takes a work-group of `row_threads`;
  - `scan_vectors`: vectors (of `vector_width` elements) each work-item of
    a GPU scan takes per tile of a line;
  - `query_rows`: query rows of a flash attention's block (CPU: of one
    work-item's register tiles; GPU: of one work-group);
  - `key_tile`: keys of a flash attention's tile (CPU: of one register
    tile, whole vectors of `vector_width` lanes; GPU: staged in local
    memory at a time, at most 32 when there are 256 work-groups or more);
  - `attention_lanes`: floats a local load of a GPU flash attention's f32
    register tiles takes, 1 or 4 (16-byte vectors from tiles laid out for
    them: flash_attention.py's `_GpuBlocks`); 1 by default, the layout
    measured on the H200, 4 a layout for the tuner to try;
  - `dot_rows`: rows of a dot register tile (CPU: of its rows x
    `dot_vectors` vectors; GPU: each work-item's tile is `dot_rows` x
    `dot_rows` outputs);
  - `dot_vectors`: vectors (of `vector_width` lanes) per row of a CPU dot
    register tile; rows x vectors accumulators are kept within the vector
    registers (24 with 16 lanes, AVX-512's 32 registers; 12 otherwise);
  - `dot_tile`: edge of a GPU dot's square work-group (`dot_tile`²
    work-items, each a register tile);
  - `stream_bytes`: a CPU scan stores an output of at least this many
    bytes with streaming (non-temporal) vector stores, around the caches:
    an output that large would not stay in them, and a streaming store
    saves the read of each cache line a plain first write costs.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from xdsl.dialects.builtin import DictionaryAttr, IntAttr, ModuleOp, StringAttr
from xdsl.ir import Attribute, ParametrizedAttribute
from xdsl.irdl import irdl_attr_definition
from xdsl.parser import AttrParser
from xdsl.printer import Printer
from xdsl.utils.exceptions import VerifyException

#: The module attribute holding the profile.
TARGET_KEY = "accy.target"

PROFILES = ("cpu", "gpu")
FORMATS = ("opencl-c", "llvm-ir")
MATH_TIERS = ("exact", "fast")
MMA_KINDS = ("", "sm80", "sm90", "emulate", "emulate-sm90")

#: Tile and work-group sizes of the lowerings (module docstring).
TUNING_FIELDS = (
    "group_size", "reduce_threads", "reduce_chunk", "row_threads", "row_segment", "scan_vectors", "query_rows",
    "key_tile", "attention_lanes", "dot_rows", "dot_vectors", "dot_tile", "stream_bytes",
)
#: Fields no longer part of a profile, and why (a file that sets one is told).
REMOVED_FIELDS = {
    "compute_units": "no lowering read it",
    "cheap_barriers": "no lowering read it (the profile, cpu or gpu, decides whether kernels use barriers)",
}


@dataclass(frozen=True)
class TargetProfile:
    """A complete profile: every field has a value (module docstring)."""

    profile: str = "cpu"
    format: str = "opencl-c"
    math: str = "exact"
    max_work_group_size: int = 4096
    local_mem_bytes: int = 65536
    static_local_bytes: int = 0
    vector_width: int = 16
    fp16: bool = True
    fp64: bool = True
    mma: str = ""
    group_size: int = 64
    reduce_threads: int = 256
    reduce_chunk: int = 256
    row_threads: int = 256
    row_segment: int = 32
    scan_vectors: int = 4
    query_rows: int = 4
    key_tile: int = 64
    attention_lanes: int = 1
    dot_rows: int = 12
    dot_vectors: int = 2
    dot_tile: int = 16
    stream_bytes: int = 16 << 20

    def __post_init__(self) -> None:
        self.validate()

    def validate(self) -> None:
        """Raises ValueError naming the first field out of its domain."""
        for name, allowed in (("profile", PROFILES), ("format", FORMATS), ("math", MATH_TIERS), ("mma", MMA_KINDS)):
            value = getattr(self, name)
            if value not in allowed:
                names = ", ".join(a or '""' for a in allowed)
                raise ValueError(f"target {name} must be one of {names}; got '{value}'")
        for name in _INT_FIELDS:
            value = getattr(self, name)
            least = 0 if name in ("local_mem_bytes", "static_local_bytes") else 1
            if isinstance(value, bool) or not isinstance(value, int) or value < least:
                kind = "a non-negative" if least == 0 else "a positive"
                raise ValueError(f"target {name} must be {kind} integer; got {value!r}")
        if self.vector_width not in (1, 2, 4, 8, 16):
            raise ValueError(f"target vector_width must be 1, 2, 4, 8 or 16; got {self.vector_width}")
        if self.attention_lanes not in (1, 4):
            raise ValueError(f"target attention_lanes must be 1 or 4; got {self.attention_lanes}")
        for name in _BOOL_FIELDS:
            if not isinstance(getattr(self, name), bool):
                raise ValueError(f"target {name} must be a bool; got {getattr(self, name)!r}")

    @property
    def local_capacity(self) -> int:
        """The most local memory a work-group's kernel may allocate: `local_mem_bytes`, or
        `static_local_bytes` where the driver allows more (module docstring)."""
        return max(self.local_mem_bytes, self.static_local_bytes)

    def replace(self, **changes: Any) -> TargetProfile:
        """A copy with some fields changed (validated)."""
        return dataclasses.replace(self, **changes)

    def fields(self) -> dict[str, Any]:
        """Every field by name."""
        return {name: getattr(self, name) for name in FIELDS}

    def to_attr(self) -> TargetAttr:
        """The attribute setting every field."""
        return TargetAttr.from_fields(self.fields())

    def filled_by(self, fields: Mapping[str, Any]) -> TargetProfile:
        """The profile of a module that sets `fields`, compiled for the device
        whose profile is `self`: the module's fields are kept and the device
        supplies the rest, except that a module naming another `profile` than
        the device's takes that profile's tile and work-group sizes."""
        kind = fields.get("profile", self.profile)
        base = self
        if kind != self.profile:
            base = self.replace(profile=kind, **{name: getattr(_defaults(kind), name) for name in TUNING_FIELDS})
        return base.replace(**fields)

    @staticmethod
    def from_attr(attr: Attribute) -> TargetProfile:
        """The profile an attribute states, unset fields from its profile's defaults."""
        if not isinstance(attr, TargetAttr):
            raise ValueError(f"'{TARGET_KEY}' must be a #accy.target<...> attribute, got {attr}")
        return attr.profile_value()

    @staticmethod
    def of_module(module: ModuleOp) -> TargetProfile:
        """The module's profile; the CPU profile when it carries none."""
        attr = module.attributes.get(TARGET_KEY)
        return CPU_PROFILE if attr is None else TargetProfile.from_attr(attr)

    def attach(self, module: ModuleOp) -> None:
        """Sets (or replaces) the module's `accy.target` with every field of this profile."""
        module.attributes[TARGET_KEY] = self.to_attr()


FIELDS = tuple(f.name for f in dataclasses.fields(TargetProfile))
_STR_FIELDS = ("profile", "format", "math", "mma")
_BOOL_FIELDS = ("fp16", "fp64")
_INT_FIELDS = tuple(name for name in FIELDS if name not in _STR_FIELDS and name not in _BOOL_FIELDS)

CPU_PROFILE = TargetProfile()
GPU_PROFILE = TargetProfile(
    profile="gpu",
    max_work_group_size=1024,
    local_mem_bytes=49152,
    vector_width=4,
    group_size=256,
    scan_vectors=2,
    query_rows=64,
    key_tile=64,
    dot_rows=8,
)
DEFAULTS = {"cpu": CPU_PROFILE, "gpu": GPU_PROFILE}


def _defaults(kind: str) -> TargetProfile:
    if kind not in DEFAULTS:
        raise ValueError(f"target profile must be one of {', '.join(PROFILES)}; got '{kind}'")
    return DEFAULTS[kind]


def _check_combination(profile: TargetProfile) -> TargetProfile:
    """Refuses fields that are valid one by one but not together in a
    module's target: `format = "llvm-ir"` runs a work-group's work-items one
    after the other, so it cannot take the GPU profile's kernels (barriers,
    local memory). (A device's `filled_by` is not checked here: the device
    refuses a format it does not run itself.)"""
    if profile.format == "llvm-ir" and profile.profile == "gpu":
        raise ValueError(
            "target format 'llvm-ir' needs profile 'cpu': the LLVM backend runs a work-group's work-items one after "
            "the other, so it cannot run the GPU profile's kernels (barriers, local memory); "
            "use set-target{profile=cpu format=llvm-ir}"
        )
    return profile


def format_mismatch(module: ModuleOp, backend_format: str, artifact: str) -> str | None:
    """Why a backend printing `backend_format` (an `artifact`, e.g. "OpenCL C")
    refuses `module`, or None when the module's target asks for that format.
    Every backend refuses the same way (its error class, its prefix)."""
    wanted = TargetProfile.of_module(module).format
    if wanted == backend_format:
        return None
    return (
        f"the module's target asks for format '{wanted}', but this backend prints '{backend_format}' "
        f"(set-target{{format={backend_format}}} to print {artifact})"
    )


def target_fields(module: ModuleOp) -> dict[str, Any]:
    """The fields the module's `accy.target` sets (empty when it has none)."""
    attr = module.attributes.get(TARGET_KEY)
    if attr is None:
        return {}
    if not isinstance(attr, TargetAttr):
        raise ValueError(f"'{TARGET_KEY}' must be a #accy.target<...> attribute, got {attr}")
    return attr.fields()


@irdl_attr_definition
class TargetAttr(ParametrizedAttribute):
    """`#accy.target<key = value, ...>`: the profile fields a module sets.

    Stored as a dictionary of the set fields (strings as StringAttr, integers
    and booleans as IntAttr); printed in `FIELDS` order, unset fields left out."""

    name = "accy.target"

    entries: DictionaryAttr

    @staticmethod
    def from_fields(fields: Mapping[str, Any]) -> TargetAttr:
        """The attribute setting `fields` (validated; ValueError naming the problem)."""
        for name in fields:
            _check_known(name)
        _check_combination(_defaults(fields.get("profile", "cpu")).replace(**fields))
        entries: dict[str, Attribute] = {
            name: StringAttr(value) if name in _STR_FIELDS else IntAttr(int(value))
            for name, value in sorted(fields.items(), key=lambda item: FIELDS.index(item[0]))
        }
        return TargetAttr(DictionaryAttr(entries))

    def fields(self) -> dict[str, Any]:
        """The set fields as Python values, in `FIELDS` order."""
        data = self.entries.data
        values: dict[str, Any] = {}
        for name in FIELDS:
            if name in data:
                value = data[name]
                assert isinstance(value, StringAttr | IntAttr)
                values[name] = bool(value.data) if name in _BOOL_FIELDS else value.data
        return values

    def profile_value(self) -> TargetProfile:
        """The complete profile: set fields over the named profile's defaults."""
        fields = self.fields()
        return _check_combination(_defaults(fields.get("profile", "cpu")).replace(**fields))

    def verify(self) -> None:
        for name, value in self.entries.data.items():
            try:
                _check_known(name)
            except ValueError as e:
                raise VerifyException(str(e)) from e
            expected = StringAttr if name in _STR_FIELDS else IntAttr
            if not isinstance(value, expected):
                raise VerifyException(f"#accy.target field '{name}' holds {value}; expected a {expected.name}")
        try:
            self.profile_value()
        except ValueError as e:
            raise VerifyException(str(e)) from e

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> list[Attribute]:
        values: dict[str, Any] = {}

        def parse_entry() -> None:
            pos = parser.pos
            key = parser.parse_identifier(context_msg=" (a #accy.target field)")
            try:
                _check_known(key)
            except ValueError as e:
                parser.raise_error(str(e), pos)
            if key in values:
                parser.raise_error(f"#accy.target field '{key}' given twice", pos)
            parser.parse_punctuation("=")
            if key in _STR_FIELDS:
                values[key] = parser.parse_str_literal(f" for #accy.target field '{key}'")
            elif key in _BOOL_FIELDS:
                values[key] = parser.parse_boolean(f" for #accy.target field '{key}'")
            else:
                values[key] = parser.parse_integer(allow_boolean=False, context_msg=f" for #accy.target field '{key}'")

        start = parser.pos
        parser.parse_comma_separated_list(parser.Delimiter.ANGLE, parse_entry)
        try:
            attr = TargetAttr.from_fields(values)
        except ValueError as e:
            parser.raise_error(str(e), start, parser.pos)
        return list(attr.parameters)

    def print_parameters(self, printer: Printer) -> None:
        parts = []
        for name, value in self.fields().items():
            if name in _STR_FIELDS:
                parts.append(f'{name} = "{value}"')
            elif name in _BOOL_FIELDS:
                parts.append(f"{name} = {'true' if value else 'false'}")
            else:
                parts.append(f"{name} = {value}")
        printer.print_string("<" + ", ".join(parts) + ">")


def _check_known(name: str) -> None:
    if name in REMOVED_FIELDS:
        raise ValueError(f"#accy.target field '{name}' was removed ({REMOVED_FIELDS[name]}): drop it")
    if name not in FIELDS:
        raise ValueError(f"unknown #accy.target field '{name}' (known: {', '.join(FIELDS)})")
