"""Target profiles: what a lowering may assume about the device it lowers for.

A profile travels in the IR as the module attribute `accy.target`, so an
`.mlir` file carries its own target and a pass reads it from the module:

    builtin.module attributes {accy.target = #accy.target<profile = "cpu",
        format = "opencl-c", math = "exact", max_work_group_size = 4096,
        local_mem_bytes = 65536, vector_width = 16, compute_units = 2,
        cheap_barriers = false>} { ... }

When parsed, omitted fields take the defaults of the named `profile` (`cpu`
or `gpu`), so `#accy.target<profile = "gpu", math = "fast">` is complete.

- `profile`: "cpu" (one work-item owns a row or tile and loops over it,
  vectorised, no barriers) or "gpu" (work-groups cooperate in local memory);
- `format`: the artifact a backend prints, "opencl-c" or "llvm-ir";
- `math`: "exact" (correctly rounded or library-grade math) or "fast"
  (documented approximations and contractions);
- device limits: `max_work_group_size` (work-items), `local_mem_bytes`,
  `vector_width` (elements per vector load/store), `compute_units`, and
  `cheap_barriers` (whether a work-group barrier costs little);
- element types: `fp16` and `fp64`, whether kernels may compute in half and
  double precision (OpenCL's cl_khr_fp16 / cl_khr_fp64). A work item that
  needs one the target lacks is not lowered: it runs on the host reference
  path under `exact`, and is an error under `fast` or strict kernelization.
  Both default to true (a file without a target assumes a capable device);
  the runtime fills them in from its device.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from xdsl.dialects.builtin import IntAttr, ModuleOp, StringAttr
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
_BOOL_FIELDS = {"cheap_barriers", "fp16", "fp64"}


@dataclass(frozen=True)
class TargetProfile:
    """The device assumptions a lowering shapes its kernels by (module docstring)."""

    profile: str = "cpu"
    format: str = "opencl-c"
    math: str = "exact"
    max_work_group_size: int = 4096
    local_mem_bytes: int = 65536
    vector_width: int = 16
    compute_units: int = 2
    cheap_barriers: bool = False
    fp16: bool = True
    fp64: bool = True

    def __post_init__(self) -> None:
        self.validate()

    def validate(self) -> None:
        """Raises ValueError naming the first field out of its domain."""
        for field, allowed in (("profile", PROFILES), ("format", FORMATS), ("math", MATH_TIERS)):
            value = getattr(self, field)
            if value not in allowed:
                raise ValueError(f"target {field} must be one of {', '.join(allowed)}; got '{value}'")
        for field in ("max_work_group_size", "local_mem_bytes", "vector_width", "compute_units"):
            value = getattr(self, field)
            if isinstance(value, bool) or not isinstance(value, int) or value < (0 if field == "local_mem_bytes" else 1):
                raise ValueError(f"target {field} must be a positive integer; got {value!r}")
        if self.vector_width not in (1, 2, 4, 8, 16):
            raise ValueError(f"target vector_width must be 1, 2, 4, 8 or 16; got {self.vector_width}")
        for field in _BOOL_FIELDS:
            if not isinstance(getattr(self, field), bool):
                raise ValueError(f"target {field} must be a bool; got {getattr(self, field)!r}")

    def replace(self, **changes: Any) -> TargetProfile:
        """A copy with some fields changed (validated)."""
        return dataclasses.replace(self, **changes)

    def to_attr(self) -> TargetAttr:
        return TargetAttr(
            StringAttr(self.profile),
            StringAttr(self.format),
            StringAttr(self.math),
            IntAttr(self.max_work_group_size),
            IntAttr(self.local_mem_bytes),
            IntAttr(self.vector_width),
            IntAttr(self.compute_units),
            IntAttr(int(self.cheap_barriers)),
            IntAttr(int(self.fp16)),
            IntAttr(int(self.fp64)),
        )

    @staticmethod
    def from_attr(attr: Attribute) -> TargetProfile:
        if not isinstance(attr, TargetAttr):
            raise ValueError(f"'{TARGET_KEY}' must be a #accy.target<...> attribute, got {attr}")
        return attr.profile_value()

    @staticmethod
    def of_module(module: ModuleOp) -> TargetProfile:
        """The module's profile; the CPU profile when it carries none."""
        attr = module.attributes.get(TARGET_KEY)
        return CPU_PROFILE if attr is None else TargetProfile.from_attr(attr)

    def attach(self, module: ModuleOp) -> None:
        """Sets (or replaces) the module's `accy.target` attribute."""
        module.attributes[TARGET_KEY] = self.to_attr()


CPU_PROFILE = TargetProfile()
GPU_PROFILE = TargetProfile(
    profile="gpu",
    max_work_group_size=1024,
    local_mem_bytes=49152,
    vector_width=4,
    compute_units=132,
    cheap_barriers=True,
)
DEFAULTS = {"cpu": CPU_PROFILE, "gpu": GPU_PROFILE}

_FIELDS = [f.name for f in dataclasses.fields(TargetProfile)]
_STR_FIELDS = {"profile", "format", "math"}


@irdl_attr_definition
class TargetAttr(ParametrizedAttribute):
    """`#accy.target<key = value, ...>`: a `TargetProfile` as an attribute."""

    name = "accy.target"

    profile: StringAttr
    format: StringAttr
    math: StringAttr
    max_work_group_size: IntAttr
    local_mem_bytes: IntAttr
    vector_width: IntAttr
    compute_units: IntAttr
    cheap_barriers: IntAttr
    fp16: IntAttr
    fp64: IntAttr

    def profile_value(self) -> TargetProfile:
        """The `TargetProfile` this attribute holds (booleans are stored as 0/1)."""
        values: dict[str, Any] = {}
        for field in _FIELDS:
            data = getattr(self, field).data
            values[field] = bool(data) if field in _BOOL_FIELDS else data
        return TargetProfile(**values)

    def verify(self) -> None:
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
            if key not in _FIELDS:
                parser.raise_error(f"unknown #accy.target field '{key}' (known: {', '.join(_FIELDS)})", pos)
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
        base = DEFAULTS.get(values.get("profile", "cpu"), CPU_PROFILE)
        try:
            profile = base.replace(**values)
        except ValueError as e:
            parser.raise_error(str(e), start, parser.pos)
        return list(profile.to_attr().parameters)

    def print_parameters(self, printer: Printer) -> None:
        p = self.profile_value()
        parts = []
        for field in _FIELDS:
            value = getattr(p, field)
            if field in _STR_FIELDS:
                parts.append(f'{field} = "{value}"')
            elif field in _BOOL_FIELDS:
                parts.append(f"{field} = {'true' if value else 'false'}")
            else:
                parts.append(f"{field} = {value}")
        printer.print_string("<" + ", ".join(parts) + ">")

