"""ONNX's own node tests on an accy device, counted, with every test that does
not pass written down with its reason.

    .venv/bin/python tools/onnx_node_tests.py --device llvm            # all node tests
    .venv/bin/python tools/onnx_node_tests.py --device opencl -k 'test_add|test_relu'
    make onnx                                                          # every device

It runs onnx's runner (`onnx.backend.test.BackendTest`) over accy's backend
(accy/cli/onnx_backend.py), node tests only: their models, inputs and
expected outputs ship with the installed onnx package (nothing is
downloaded). Each test is one of:

- `pass`;
- `unsupported op`, `unsupported attribute`, `unsupported dtype`,
  `data-dependent shape`: the importer refused it (OnnxImportError), saying
  which node, op and what is missing;
- `wrong result`: it ran and onnx's runner found an output wrong;
- `error`: anything else that failed (a compile error, a crash, a timeout).

With `--status FILE` (default docs/onnx-node-tests.md) it rewrites that
device's section of the file: counts for the whole suite and for the
issue's operators (ISSUE_OPS, on float32, float16, bfloat16, int32, int64
and bool data), then every test that does not pass with its reason. The
other devices' sections are kept, so each device can be run on its own.
The file is this tool's output: never edited by hand.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import io
import json
import re
import sys
import time
import unittest
import warnings
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import onnx
from onnx import TensorProto
from onnx.backend.test import BackendTest
from onnx.backend.test.loader import load_model_tests
from time_limit import TimeLimitExceeded, time_limit

from accy.cli.onnx_backend import AccyBackend, AccyBackendRep
from accy.frontends.onnx import NeedsConstant, OnnxImportError

ROOT = Path(__file__).resolve().parents[1]
STATUS = ROOT / "docs" / "onnx-node-tests.md"
DEVICES = ("reference", "llvm", "opencl")

#: The operators issue 22 lists (its "Targets" count the node tests of these).
ISSUE_OPS = frozenset(
    """Abs Add And ArgMax ArgMin AveragePool BatchNormalization Cast Ceil Clip Concat Constant ConstantOfShape Conv
    Cos CumSum Div Dropout Einsum Elu Equal Erf Exp Expand Flatten Floor Gather GatherElements Gelu Gemm
    GlobalAveragePool GlobalMaxPool Greater GreaterOrEqual HardSigmoid HardSwish Identity LayerNormalization
    LeakyRelu Less LessOrEqual Log LogSoftmax MatMul Max MaxPool Mean Min Mod Mul Neg Not Or Pad Pow Range
    Reciprocal ReduceL1 ReduceL2 ReduceLogSumExp ReduceMax ReduceMean ReduceMin ReduceProd ReduceSum
    ReduceSumSquare Relu Reshape Selu Shape Sigmoid Sign Sin Size Slice Softmax Softplus Softsign Split Sqrt
    Squeeze Sub Sum Tanh Tile Transpose Trilu Unsqueeze Where Xor Attention""".split()
)
#: The element types the issue's target counts.
ISSUE_DTYPES = frozenset(
    {TensorProto.FLOAT, TensorProto.FLOAT16, TensorProto.BFLOAT16, TensorProto.INT32, TensorProto.INT64, TensorProto.BOOL}
)

REASONS = {
    "op": "unsupported op",
    "attribute": "unsupported attribute",
    "dtype": "unsupported dtype",
    "constant": "data-dependent shape",
    "shape": "data-dependent shape",
    "model": "unsupported attribute",
}


@dataclass
class Outcome:
    """One test's result: `status` is "pass" or a reason (REASONS' values,
    "wrong result", "error"); `detail` the first line of what failed."""

    name: str
    op: str
    issue: bool
    status: str
    detail: str = ""
    seconds: float = 0.0
    fallbacks: int = 0
    static: bool = False


# --------------------------------------------------------------------------
# Which op a test is about
# --------------------------------------------------------------------------


#: The suffix of a test whose op is expanded into its function body.
_EXPANDED = re.compile(r"_expanded(_ver\d+)?$")


def _norm(text: str) -> str:
    return text.replace("_", "").lower()


def _graph_ops(model: onnx.ModelProto) -> list[str]:
    return [n.op_type for n in model.graph.node]


def op_under_test(name: str, model: onnx.ModelProto, base_ops: dict[str, str]) -> str:
    """The operator a node test is named for: for an `_expanded` (or
    `_expanded_verN`) test its base test's; else the graph's op whose name the test's name starts with
    (the longest), else its only op, else its last."""
    base = _EXPANDED.sub("", name)
    if base != name and base in base_ops:
        return base_ops[base]
    stem = _norm(name.removeprefix("test_"))
    ops = _graph_ops(model)
    matching = [op for op in set(ops) if stem.startswith(_norm(op))]
    if matching:
        return max(matching, key=len)
    return ops[-1] if ops else "?"


def _data_types(model: onnx.ModelProto) -> set[int]:
    g = model.graph
    return {v.type.tensor_type.elem_type for v in [*g.input, *g.output] if v.type.HasField("tensor_type")}


@functools.cache
def node_cases() -> dict[str, Any]:
    """onnx's node test cases by name (their models generated in memory, once)."""
    with warnings.catch_warnings(), contextlib.redirect_stderr(io.StringIO()):
        warnings.simplefilter("ignore")
        cases = load_model_tests(kind="node")
    return {c.name: c for c in cases}


def describe_cases(cases: dict[str, Any]) -> dict[str, tuple[str, bool]]:
    """name -> (the op it tests, whether the issue's target counts it)."""
    base_ops: dict[str, str] = {}
    out: dict[str, tuple[str, bool]] = {}
    for name in sorted(cases, key=lambda n: bool(_EXPANDED.search(n))):
        model = cases[name].model
        op = op_under_test(name, model, base_ops)
        if not _EXPANDED.search(name):
            base_ops[name] = op
        out[name] = (op, op in ISSUE_OPS and _data_types(model) <= ISSUE_DTYPES)
    return out


# --------------------------------------------------------------------------
# Running
# --------------------------------------------------------------------------


class _Result(unittest.TestResult):
    def __init__(self) -> None:
        super().__init__()
        self.error: BaseException | None = None
        self.kind = "pass"

    def addError(self, test: unittest.TestCase, err: Any) -> None:  # noqa: N802 - unittest's name
        self.kind, self.error = "error", err[1]

    def addFailure(self, test: unittest.TestCase, err: Any) -> None:  # noqa: N802
        self.kind, self.error = "failure", err[1]

    def addSkip(self, test: unittest.TestCase, reason: str) -> None:  # noqa: N802
        self.kind, self.error = "skip", None


def classify(kind: str, error: BaseException | None) -> tuple[str, str]:
    """(status, detail) of a test that ended as unittest `kind` with `error`."""
    if kind == "pass":
        return "pass", ""
    text = (str(error) if error is not None else "").strip()
    first = next((line.strip() for line in text.splitlines() if line.strip()), type(error).__name__ if error else kind)
    if kind == "skip":
        return "skipped", first
    if isinstance(error, OnnxImportError):
        return REASONS.get(error.kind, "unsupported op"), first
    if kind == "failure" or isinstance(error, AssertionError):
        # assert_allclose's report: the line saying how many elements differ.
        lines = [line.strip() for line in text.splitlines()]
        detail = next((line for line in lines if line.startswith("Mismatched") or "incorrect shape" in line), first)
        return "wrong result", detail
    return "error", f"{type(error).__name__}: {first}"


def run_tests(
    device: str,
    names: Iterable[str] | None = None,
    pattern: str | None = None,
    timeout: float = 300.0,
    progress: bool = False,
) -> list[Outcome]:
    """onnx's node tests (all, those `names`, or those matching `pattern`)
    on accy device `device`, each run by onnx's own runner."""
    cases = node_cases()
    about = describe_cases(cases)
    wanted = sorted(set(names) if names is not None else cases)
    if pattern:
        wanted = [n for n in wanted if re.search(pattern, n)]
    backend = AccyBackend.for_device(device)
    reps: list[AccyBackendRep] = []
    prepare = backend.prepare

    def recording_prepare(model: Any, device: str = "CPU", **kwargs: Any) -> AccyBackendRep:
        rep = prepare(model, device, **kwargs)
        reps.append(rep)
        return rep

    backend.prepare = recording_prepare  # type: ignore[method-assign]
    with warnings.catch_warnings(), contextlib.redirect_stderr(io.StringIO()):
        warnings.simplefilter("ignore")
        suite = BackendTest(backend, __name__)
        for n in wanted:
            suite.include(f"^{re.escape(n)}_cpu$")
        case_class = suite.test_cases["OnnxBackendNodeModelTest"]
    outcomes = []
    for i, name in enumerate(wanted):
        if name not in about:
            continue
        reps.clear()
        test = case_class(f"{name}_cpu")
        result = _Result()
        start = time.perf_counter()
        try:
            with time_limit(timeout), warnings.catch_warnings():
                warnings.simplefilter("ignore")
                test.run(result)
        except TimeLimitExceeded as e:
            result.kind, result.error = "error", e
        seconds = time.perf_counter() - start
        status, detail = classify(result.kind, result.error)
        op, issue = about[name]
        fallbacks = sum(r.last.stats.fallbacks for r in reps if r.last is not None)
        static = any(r.static_inputs for r in reps)
        outcomes.append(Outcome(name, op, issue, status, detail, seconds, fallbacks, static))
        if progress:
            print(f"[{i + 1}/{len(wanted)}] {name}: {status} ({seconds:.1f} s) {detail[:100]}", file=sys.stderr, flush=True)
    return outcomes


# --------------------------------------------------------------------------
# The status file
# --------------------------------------------------------------------------


def counts(outcomes: Sequence[Outcome]) -> dict[str, Any]:
    issue = [o for o in outcomes if o.issue]
    passed = [o for o in outcomes if o.status == "pass"]
    return {
        "tests": len(outcomes),
        "passed": len(passed),
        "issue_tests": len(issue),
        "issue_passed": sum(o.status == "pass" for o in issue),
        "passed_with_static_inputs": sum(o.static for o in passed),
        "passed_with_fallbacks": sum(o.fallbacks > 0 for o in passed),
        "reasons": dict(Counter(o.status for o in outcomes if o.status != "pass")),
    }


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")[:240]


def device_section(device: str, outcomes: Sequence[Outcome], seconds: float) -> str:
    c = counts(outcomes)
    lines = [
        f"<!-- begin {device} -->",
        f"<!-- counts {json.dumps(c, sort_keys=True)} -->",
        f"## {device}",
        "",
        f"{c['passed']} of {c['tests']} node tests pass ({_pct(c['passed'], c['tests'])}); of the issue's operators on "
        f"its data types, {c['issue_passed']} of {c['issue_tests']} ({_pct(c['issue_passed'], c['issue_tests'])}). "
        f"{c['passed_with_fallbacks']} passing tests ran a work item on the host; "
        f"{c['passed_with_static_inputs']} passed with the function specialised on a shape input. "
        f"Run in {seconds / 60:.1f} min.",
        "",
        "| reason | tests |",
        "|---|---|",
        *[f"| {r} | {k} |" for r, k in sorted(c["reasons"].items(), key=lambda x: -x[1])],
        "",
        "| test | op | issue's list | reason | detail |",
        "|---|---|---|---|---|",
    ]
    for o in sorted(outcomes, key=lambda o: (o.status, o.op, o.name)):
        if o.status != "pass":
            lines.append(f"| {o.name} | {o.op} | {'yes' if o.issue else ''} | {o.status} | {_cell(o.detail)} |")
    lines += ["", f"<!-- end {device} -->", ""]
    return "\n".join(lines)


def _pct(a: int, b: int) -> str:
    return f"{100 * a / b:.1f}%" if b else "-"


_SECTION = re.compile(r"<!-- begin (?P<device>\S+) -->\n(?P<body>.*?)<!-- end (?P=device) -->\n", re.S)
_COUNTS = re.compile(r"<!-- counts (?P<json>.*?) -->")


def write_status(path: Path, device: str, section: str) -> None:
    """Rewrites `path` with `device`'s section replaced (the others kept) and
    the summary table recomputed from every section's counts."""
    sections: dict[str, str] = {}
    if path.exists():
        for m in _SECTION.finditer(path.read_text()):
            sections[m["device"]] = m.group(0)
    sections[device] = section
    order = [d for d in DEVICES if d in sections] + sorted(d for d in sections if d not in DEVICES)
    head = [
        "# ONNX's node tests on accy",
        "",
        "Generated by `tools/onnx_node_tests.py` (`make onnx`): do not edit by hand. onnx "
        f"{onnx.__version__}'s node tests (`onnx.backend.test.BackendTest`, the data shipped with the wheel), run "
        "through accy's ONNX backend (`accy/cli/onnx_backend.py`) on each device. \"Issue's operators\" counts the "
        "tests of the operators issue 22 lists, on float32, float16, bfloat16, int32, int64 and bool data. "
        "docs/onnx.md says what the reasons mean. A host fallback is a work item run by the reference interpreter "
        "(on opencl: float16, which PoCL lacks); a test passing specialised took a shape, axes or count from a graph "
        "input's value.",
        "",
        "| device | whole suite | | issue's operators | | passing with a host fallback | passing specialised on a shape input |",
        "|---|---|---|---|---|---|---|",
    ]
    for d in order:
        m = _COUNTS.search(sections[d])
        if m is None:
            continue
        c = json.loads(m["json"])
        head.append(
            f"| {d} | {c['passed']} / {c['tests']} | {_pct(c['passed'], c['tests'])} | {c['issue_passed']} / "
            f"{c['issue_tests']} | {_pct(c['issue_passed'], c['issue_tests'])} | {c['passed_with_fallbacks']} | "
            f"{c['passed_with_static_inputs']} |"
        )
    path.write_text("\n".join(head) + "\n\n" + "\n".join(sections[d] for d in order))


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--device", action="append", help=f"accy device ({', '.join(DEVICES)}); repeatable; default all")
    p.add_argument("-k", "--pattern", help="only the tests whose name matches this regular expression")
    p.add_argument("--status", default=str(STATUS), help="the status file to update ('-': none)")
    p.add_argument("--timeout", type=float, default=300.0, help="seconds one test may take (default 300)")
    p.add_argument("--json", help="also write every outcome to this JSON file")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress lines")
    args = p.parse_args(argv)
    for device in args.device or DEVICES:
        start = time.perf_counter()
        outcomes = run_tests(device, pattern=args.pattern, timeout=args.timeout, progress=not args.quiet)
        seconds = time.perf_counter() - start
        c = counts(outcomes)
        print(
            f"{device}: {c['passed']}/{c['tests']} passed ({_pct(c['passed'], c['tests'])}); issue's operators "
            f"{c['issue_passed']}/{c['issue_tests']} ({_pct(c['issue_passed'], c['issue_tests'])}); "
            f"{json.dumps(c['reasons'])}; {seconds:.0f} s"
        )
        if args.status != "-" and not args.pattern:
            write_status(Path(args.status), device, device_section(device, outcomes, seconds))
        if args.json:
            path = Path(args.json.replace("{device}", device))
            path.write_text(json.dumps([o.__dict__ for o in outcomes], indent=1))
    return 0


if __name__ == "__main__":
    _ = NeedsConstant  # an OnnxImportError too: classified by its kind
    sys.exit(main())
