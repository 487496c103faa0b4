"""Every pass and analysis accy knows, by name.

Entries are lazy (`module:Class`), so importing the registry costs nothing and
a tool lists what exists without loading every lowering. The dialects accy
loads are in `accy.dialects.context`.

Named pipelines (`PIPELINES`) are MLIR's registered pass pipelines: a name,
with options of its own, for a sequence of registered passes. A pipeline is
no pass: it is expanded into its passes where pipeline text is read
(`accy-opt -p`) and where a runtime builds it (`Pipeline.passes`), so the pass
manager runs, times, prints, dumps and checks each of its passes, and a
reproducer names the one that failed.

Passes from elsewhere are registered beside accy's own (`PASSES` stays
accy's): a package declares one as an entry point of the group
`accy.passes` (name: the pass's name; value: `module:Class`), loaded when a
pipeline names it or a listing shows it; `register_pass(cls)` registers a
class from Python, `load_pass("module:Class")` one named on a command line
(`accy-opt --load-pass`). Such a pass is an `AccyPass` (cached analyses,
preserved analyses) or a plain xDSL `ModulePass`; it takes its options from
pipeline text, and the pass manager runs, times and checks it as accy's own.
A pass that cannot be registered (no such module, not a pass class, a name
taken) raises `PluginError`, one line saying which and why.

Pipeline text (`pipeline_specs`, `passes_from_text`) is xDSL's `a,b{opt=1}`,
and MLIR's nesting `builtin.module(func.func(canonicalize),cse)`: accy's
passes are module passes, so the anchors are read and dropped.
"""

from __future__ import annotations

import dataclasses
import difflib
import inspect
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass
from importlib import import_module
from typing import ClassVar

from xdsl.passes import ModulePass
from xdsl.utils.arg_spec import ArgSpec, ArgSpecConvertible, parse_pipeline
from xdsl.utils.exceptions import ArgSpecParseError

from accy.passes.options import from_spec
from accy.passes.pass_manager import Analysis, summary

# name -> "module:Class". Each accy class documents itself (its docstring's
# first paragraph is what `accy-opt --list-passes` prints); xDSL's own passes
# are described in `XDSL_PASS_SUMMARIES`.
PASSES: dict[str, str] = {
    "canonicalize": "accy.passes.canonicalize:CanonicalizePass",
    "cse": "xdsl.transforms.common_subexpression_elimination:CommonSubexpressionElimination",
    "dce": "xdsl.transforms.dead_code_elimination:DeadCodeElimination",
    "decompose": "accy.passes.decompose:DecomposePass",
    "inline": "accy.passes.inline:InlinePass",
    "loop-invariant-code-motion": "accy.passes.loop_invariants:LoopInvariantCodeMotionPass",
    "widen-accumulation": "accy.passes.widen_accumulation:WidenAccumulationPass",
    "compute-half-in-f32": "accy.passes.half_compute:ComputeHalfInF32Pass",
    "print-analysis": "accy.passes.print_analysis:PrintAnalysisPass",
    "test-analysis-cache": "accy.passes.testing:TestAnalysisCachePass",
    "test-rewrite-claiming-preserved": "accy.passes.testing:TestRewriteClaimingPreservedPass",
    "test-diagnostics": "accy.passes.testing:TestDiagnosticsPass",
    "test-fail": "accy.passes.testing:TestFailPass",
    "set-target": "accy.passes.target:SetTargetPass",
    "kernelize": "accy.passes.kernelization.kernelize:KernelizePass",
}

#: What the xDSL passes accy registers do (their classes carry no docstring).
XDSL_PASS_SUMMARIES: dict[str, str] = {
    "cse": "xDSL's common-subexpression elimination: an op equal to one that dominates it (same name, operands, "
    "properties, attributes and regions; no effects but reads that no write separates) is erased, and its uses "
    "read the earlier one; ops that are dead already are erased on the way.",
    "dce": "xDSL's dead-code elimination: erases ops without side effects whose results are unused, "
    "innermost first, until none is left.",
}

# The optional tensor passes: any subset in any order must keep results.
TENSOR_PASSES = ("canonicalize", "cse", "dce", "decompose")

ANALYSES: dict[str, str] = {
    "test-analysis": "accy.passes.testing:TestAnalysis",
    "test-dependent-analysis": "accy.passes.testing:TestDependentAnalysis",
    "shape-layout": "accy.passes.analyses.shape_layout:ShapeLayout",
    "schedule": "accy.passes.analyses.schedule:Schedule",
    "outlining": "accy.passes.analyses.outlining:Outlining",
    "bufferization": "accy.passes.analyses.bufferization:BufferPlan",
}


def _load(entry: str) -> type:
    module, cls = entry.split(":")
    return getattr(import_module(module), cls)


def pass_factories() -> dict[str, Callable[[], type[ModulePass]]]:
    """Every registered pass, accy's and those from elsewhere, by name: a
    function loading its class."""
    return {name: (lambda n=name: get_pass(n)) for name in pass_names()}


def get_pass(name: str) -> type[ModulePass]:
    """The class of registered pass `name` (KeyError when there is none)."""
    if name in PASSES:
        return _load(PASSES[name])
    plugin = _plugins().get(name)
    if plugin is None:
        raise KeyError(f"unknown pass '{name}'")
    return plugin.load()


def get_analysis(name: str) -> type[Analysis]:
    if name not in ANALYSES:
        raise KeyError(f"unknown analysis '{name}' (known: {', '.join(ANALYSES)})")
    return _load(ANALYSES[name])


def pass_summary(name: str) -> str:
    """The one-paragraph description of pass `name`."""
    if name in XDSL_PASS_SUMMARIES:
        return XDSL_PASS_SUMMARIES[name]
    cls = get_pass(name)
    # A dataclass without a docstring is given its signature as one.
    own = cls.__doc__ if "__doc__" in vars(cls) and not _is_signature(cls) else None
    return summary(cls) if own else "(no description: the pass class has no docstring)"


def _is_signature(cls: type) -> bool:
    return dataclasses.is_dataclass(cls) and (cls.__doc__ or "").startswith(f"{cls.__name__}(")


# --------------------------------------------------------------------------
# Named pipelines
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class Pipeline(ArgSpecConvertible):
    """A named pipeline: its dataclass fields are its options (parsed from
    `name{opt=value ...}` as a pass's are), `specs()` the passes it stands
    for, each a registered pass name with its options."""

    name: ClassVar[str]

    def specs(self) -> list[ArgSpec]:
        """Its passes in the order they run, each as a registered name and options."""
        raise NotImplementedError

    def passes(self) -> list[ModulePass]:
        """The passes, made as `accy-opt -p` makes them from their specs."""
        return [get_pass(spec.name).from_pass_spec(spec) for spec in self.specs()]


@dataclass(frozen=True)
class DevicePipeline(Pipeline):
    """What `accy.compile` runs on a kernel device (OpenCL, LLVM):
    loop-invariant-code-motion, widen-accumulation, compute-half-in-f32, then kernelize with the
    options strict and verify-bounds (on by default: every compile proves its
    kernels in bounds).

    The runtime builds its passes from here (runtime/device.py), so
    `accy-opt -p accy-device-pipeline` and a compile cannot drift apart.
    """

    name: ClassVar[str] = "accy-device-pipeline"

    strict: bool = False
    """Fail where a work item would run on the host reference path (kernelize's `strict`)."""
    verify_bounds: bool = True
    """Prove every load and store of every kernel in bounds (kernelize's `verify-bounds`)."""

    def specs(self) -> list[ArgSpec]:
        kernelize = {"strict": (self.strict,), "verify-bounds": (self.verify_bounds,)}
        return [
            ArgSpec("loop-invariant-code-motion", {}), ArgSpec("widen-accumulation", {}),
            ArgSpec("compute-half-in-f32", {}), ArgSpec("kernelize", kernelize),
        ]


#: name -> pipeline (`accy-opt --list-passes` prints each with its docstring's first paragraph).
PIPELINES: dict[str, type[Pipeline]] = {DevicePipeline.name: DevicePipeline}




# --------------------------------------------------------------------------
# Passes from elsewhere
# --------------------------------------------------------------------------

#: The entry-point group a package declares its passes in.
ENTRY_POINT_GROUP = "accy.passes"
#: What a pass name may be: what pipeline text reads as one.
_PASS_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*")


class PluginError(ValueError):
    """A pass from elsewhere that cannot be registered or loaded; the message
    names it, where it came from, and what is wrong."""


@dataclass
class _Plugin:
    """A pass registered from elsewhere: its class, or `module:Class` until
    it is first needed, and where it came from (for messages and listings)."""

    name: str
    entry: str | type[ModulePass]
    origin: str

    def load(self) -> type[ModulePass]:
        if isinstance(self.entry, str):
            cls = _import_class(self.entry, self.origin)
            _check_pass_class(cls, self.origin)
            if cls.name != self.name:
                raise PluginError(f"{self.origin}: names pass '{self.name}', but {self.entry}'s name is '{cls.name}'")
            self.entry = cls
        return self.entry


#: name -> pass registered from elsewhere; the entry points are read into it
#: on first need (`_plugins`).
_REGISTERED: dict[str, _Plugin] = {}
_entry_points_read = False


def _plugins() -> dict[str, _Plugin]:
    """The passes registered from elsewhere, the installed packages' entry
    points first read (once: reading them costs a scan of `sys.path`)."""
    global _entry_points_read
    if not _entry_points_read:
        _entry_points_read = True
        from importlib.metadata import entry_points

        seen: set[tuple[str, str]] = set()
        for ep in entry_points(group=ENTRY_POINT_GROUP):
            if (ep.name, ep.value) in seen:  # one distribution found twice on sys.path
                continue
            seen.add((ep.name, ep.value))
            dist = f"package '{ep.dist.name}'" if ep.dist is not None else "an installed package"
            _add(_Plugin(ep.name, ep.value, f"entry point '{ep.name}' of {dist} ({ep.group})"))
    return _REGISTERED


def _add(plugin: _Plugin) -> None:
    name = plugin.name
    if not _PASS_NAME.fullmatch(name):
        raise PluginError(f"{plugin.origin}: '{name}' is not a pass name pipeline text can write (letters, digits, '-', '_')")
    taken = _taken_by(name)
    if taken is not None:
        previous = _REGISTERED.get(name)
        if previous is not None and previous.entry is plugin.entry:
            return  # the same class, registered twice
        raise PluginError(f"{plugin.origin}: pass name '{name}' is taken by {taken}")
    _REGISTERED[name] = plugin


def _taken_by(name: str) -> str | None:
    if name in PASSES:
        return "accy's own pass"
    if name in PIPELINES:
        return "accy's named pipeline"
    if name in _REGISTERED:
        return f"the pass of {_REGISTERED[name].origin}"
    return None


def _import_class(entry: str, origin: str) -> type:
    module_name, _, attr = entry.partition(":")
    if not module_name or not attr:
        raise PluginError(f"{origin}: '{entry}' is not module:Class (as in my_package.passes:MyPass)")
    try:
        module = import_module(module_name)
    except ModuleNotFoundError as e:
        if e.name is not None and (module_name == e.name or module_name.startswith(e.name + ".")):
            raise PluginError(f"{origin}: no module named '{e.name}' (is its package installed, or on PYTHONPATH?)") from None
        raise PluginError(f"{origin}: importing '{module_name}' failed: {e}") from None
    except Exception as e:
        raise PluginError(f"{origin}: importing '{module_name}' failed: {type(e).__name__}: {e}") from None
    try:
        return getattr(module, attr)
    except AttributeError:
        raise PluginError(f"{origin}: module '{module_name}' has no attribute '{attr}'") from None


def _check_pass_class(cls: object, origin: str) -> None:
    what = f"{cls.__module__}:{cls.__qualname__}" if isinstance(cls, type) else repr(cls)
    if not (isinstance(cls, type) and issubclass(cls, ModulePass)):
        kind = "a class" if isinstance(cls, type) else f"a {type(cls).__name__}"
        raise PluginError(
            f"{origin}: {what} is {kind}, not a pass (a subclass of xdsl.passes.ModulePass, "
            "or of accy.passes.pass_manager.AccyPass, decorated with @dataclass(frozen=True))"
        )
    name = vars(cls).get("name", getattr(cls, "name", None))
    if not isinstance(name, str) or not name:
        raise PluginError(f"{origin}: {what} has no pass name (set `name: ClassVar[str] = \"my-pass\"`)")
    if inspect.isabstract(cls):
        missing = ", ".join(sorted(cls.__abstractmethods__))
        raise PluginError(f"{origin}: {what} is abstract (it does not define {missing})")
    if not dataclasses.is_dataclass(cls):
        raise PluginError(f"{origin}: {what} is not a dataclass (decorate it with @dataclass(frozen=True))")


def register_pass(cls: type[ModulePass], origin: str = "accy.register_pass") -> type[ModulePass]:
    """Registers pass class `cls` under its `name`, beside accy's passes, so
    that pipeline text (`accy-opt -p`, `passes_from_text`) and listings see
    it; returns `cls` (it may decorate the class). `PluginError` when `cls`
    is no pass class or its name is taken (registering one class twice is
    no error)."""
    _check_pass_class(cls, origin)
    _plugins()
    _add(_Plugin(cls.name, cls, origin))
    return cls


def load_pass(entry: str) -> type[ModulePass]:
    """Imports and registers the pass class named `module:Class`, as
    `accy-opt --load-pass` does; returns it. `PluginError` as `register_pass`,
    and when the module or the class is not found."""
    origin = f"--load-pass {entry}"
    return register_pass(_import_class(entry, origin), origin)


def pass_names() -> list[str]:
    """Every registered pass: accy's, then those from elsewhere."""
    return [*PASSES, *(name for name in _plugins() if name not in PASSES)]


def pass_origin(name: str) -> str | None:
    """Where pass `name` was registered from (None for accy's own)."""
    plugin = _plugins().get(name) if name not in PASSES else None
    return plugin.origin if plugin is not None else None


# --------------------------------------------------------------------------
# Pipeline text
# --------------------------------------------------------------------------

#: MLIR anchors `accy` reads in nested pipeline text (its passes run on the module).
ANCHORS = ("builtin.module", "func.func", "any")


class PipelineError(ValueError):
    """Pipeline text that names no registered pass or pipeline, nests under an
    anchor accy does not read, or gives a pass options it does not take."""


def pipeline_specs(text: str) -> list[ArgSpec]:
    """The passes `text` stands for, in order: xDSL's form (`a,b{opt=1}`),
    MLIR's nesting flattened (`builtin.module(func.func(a),b)` is `a,b`:
    accy's passes are module passes), named pipelines expanded into their
    passes. `PipelineError` for text that does not parse, an anchor other
    than `ANCHORS` or a pipeline option it lacks."""
    specs: list[ArgSpec] = []
    for start, element in _flatten(text):
        try:
            parsed = list(parse_pipeline(element))
        except ArgSpecParseError as e:
            raise PipelineError(_syntax_error(text, start, e)) from None
        for spec in parsed:
            try:
                specs += expand(spec)
            except ValueError as e:
                raise PipelineError(f"invalid options for pipeline '{spec.name}': {_text(e)}") from None
    return specs


def expand(spec: ArgSpec) -> list[ArgSpec]:
    """The pass specs that `spec`, one element of pipeline text, stands for:
    a named pipeline's passes with its options given, any other spec itself.
    A pipeline option it does not have, or a value of the wrong type, raises
    `ValueError` (`OptionError`) naming the option."""
    pipeline = PIPELINES.get(spec.name)
    return [spec] if pipeline is None else from_spec(pipeline, spec).specs()




def make_pass(spec: ArgSpec) -> ModulePass:
    """The registered pass `spec` names, with its options. `PipelineError`
    for an unknown name or a bad option (naming the pass and the option);
    `PluginError` for a pass from elsewhere that does not load."""
    try:
        cls = get_pass(spec.name)
    except KeyError:
        near = difflib.get_close_matches(spec.name, [*pass_names(), *PIPELINES], n=1)
        hint = f"; did you mean '{near[0]}'?" if near else ""
        raise PipelineError(f"unknown pass '{spec.name}' (`accy-opt --list-passes` lists them{hint})") from None
    try:
        return from_spec(cls, spec)
    except Exception as e:  # a pass validates its options its own way (its __post_init__)
        raise PipelineError(f"invalid options for pass '{spec.name}': {_text(e)}") from None


def passes_from_text(text: str) -> list[ModulePass]:
    """The passes of pipeline text, made as `accy-opt -p` makes them (for
    `PassManager(passes_from_text("canonicalize,my-pass{factor=3}"))`)."""
    return [make_pass(spec) for spec in pipeline_specs(text)]


def _text(error: Exception) -> str:
    return str(error).strip() or type(error).__name__


def _syntax_error(text: str, start: int, error: ArgSpecParseError) -> str:
    """xDSL's parse error of the element at `start` of pipeline `text` (its
    location line, the element, a caret, the message) as one line."""
    lines = [line for line in str(error).split("\n") if line.strip()]
    where = re.search(r":\d+:(\d+)$", lines[1]) if len(lines) > 1 else None
    message = lines[-1].strip()
    message = message[:1].lower() + message[1:]
    column = f"column {start + int(where[1])} of " if where else ""
    return f"invalid pass pipeline: {message} ({column}'{text}')"


def _flatten(text: str) -> list[tuple[int, str]]:
    """The elements of pipeline `text` with MLIR's anchors removed, each an
    xDSL pipeline element (`name` or `name{...}`) with where it starts."""
    elements: list[tuple[int, str]] = []
    depth: list[str] = []
    i, start = 0, 0

    def flush(end: int) -> None:
        piece = text[start:end]
        if piece.strip():
            elements.append((start + len(piece) - len(piece.lstrip()), piece.strip()))

    while i < len(text):
        c = text[i]
        if c in "{[":
            i = _closing(text, i)
        elif c == "(":
            anchor = text[start:i].strip()
            if anchor not in ANCHORS:
                shown = f"'{anchor}'" if anchor else "nothing"
                raise PipelineError(
                    f"invalid pass pipeline: '(' after {shown} at column {i + 1}: accy reads the anchors "
                    f"{', '.join(ANCHORS)} (its passes run on the whole module)"
                )
            depth.append(anchor)
            start = i + 1
        elif c in ",)":
            flush(i)
            if c == ")":
                if not depth:
                    raise PipelineError(f"invalid pass pipeline: ')' at column {i + 1} closes no '('")
                depth.pop()
            start = i + 1
        i += 1
    if depth:
        raise PipelineError(f"invalid pass pipeline: the '{depth[-1]}(' is never closed with ')' ('{text}')")
    flush(len(text))
    return elements


def _closing(text: str, i: int) -> int:
    """The index of the `}` (`]`) closing the `{` (`[`) at `i`, strings
    skipped; `PipelineError` when none does."""
    close = "}" if text[i] == "{" else "]"
    j = i + 1
    while j < len(text) and text[j] != close:
        if text[j] == '"':
            j += 1
            while j < len(text) and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
        j += 1
    if j >= len(text):
        raise PipelineError(f"invalid pass pipeline: the '{text[i]}' at column {i + 1} is never closed with '{close}' ('{text}')")
    return j


# --------------------------------------------------------------------------
# The user's errors
# --------------------------------------------------------------------------

#: Exceptions a pass raises when its input is wrong, not the pass: reported
#: as the user's error (at the exception's `op` when it has one), never as a
#: pass that crashed. A pass from elsewhere raises DiagnosticError (or xDSL's
#: PassFailedException).
INPUT_ERRORS = (
    "accy.passes.diagnostics:DiagnosticError",
    "xdsl.utils.exceptions:PassFailedException",
    "accy.passes.kernelization.kernelize:ElementTypeError",
    "accy.passes.kernelization.kernelize:LoweringRefused",
    "accy.passes.kernelization.kernel_call:KernelCallError",
    "accy.passes.kernel_ir.bounds:OutOfBoundsError",
    "accy.passes.inline:CallError",
)


def is_input_error(error: BaseException) -> bool:
    """Whether a pass raised `error` because its input is wrong (`INPUT_ERRORS`)."""
    for entry in INPUT_ERRORS:
        module_name, _, cls = entry.partition(":")
        # A class whose module was never imported raised nothing.
        module = sys.modules.get(module_name)
        if module is not None and isinstance(error, getattr(module, cls)):
            return True
    return False
