"""accy/dialects/context.py loads dialects as they are first used, and
accy/dialects/lazy_formats.py reads ops' formats at first use: both must
parse and print exactly what loading everything up front did."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from accy.dialects.context import COMPANIONS, DIALECTS, dialect_named

ROOT = Path(__file__).resolve().parents[2]

# Runs in a fresh process (so that the lazy paths are the ones taken): every
# MLIR text of the lit tests, examples, test programs and docs, each chunk of
# a split file on its own, parsed with the lazy context and with a context
# that loads every dialect first; both outcomes (the generic print, or the
# error) are compared.
_COMPARE = r"""
import io, json, re, sys
from pathlib import Path

root = Path(sys.argv[1])
from accy.dialects.context import DIALECTS, dialect_named, make_context
from xdsl.context import Context
from xdsl.parser import Parser
from xdsl.printer import Printer

def eager_context():
    ctx = Context()
    for name in DIALECTS:
        ctx.load_dialect(dialect_named(name))
    return ctx

def outcome(ctx, text):
    try:
        module = Parser(ctx, text).parse_module()
    except Exception as e:
        return "error: " + type(e).__name__ + ": " + str(e)
    out = io.StringIO()
    Printer(stream=out, print_generic_format=True).print_op(module)
    custom = io.StringIO()
    Printer(stream=custom).print_op(module)
    return out.getvalue() + "\n" + custom.getvalue()

texts = []
for pattern in ("tests/lit/**/*.mlir", "examples/*.mlir", "tests/programs/*.mlir"):
    for path in sorted(root.glob(pattern)):
        texts += [(str(path), chunk) for chunk in path.read_text().split("// -----")]
for path in sorted(root.glob("docs/*.md")):
    texts += [(str(path), m.group(1)) for m in re.finditer(r"```mlir\n(.*?)```", path.read_text(), re.S)]

parsed, differing, loaded = 0, [], set()
for where, text in texts:
    ctx = make_context()
    lazy = outcome(ctx, text)
    loaded |= {d.name for d in ctx.loaded_dialects}
    if lazy != outcome(eager_context(), text):
        differing.append(where)
    parsed += not lazy.startswith("error: ")
print(json.dumps({"texts": len(texts), "parsed": parsed, "differing": differing, "loaded": sorted(loaded)}))
"""


def test_lazy_loading_parses_every_text_as_loading_everything_did() -> None:
    done = subprocess.run([sys.executable, "-c", _COMPARE, str(ROOT)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["differing"] == []
    assert report["parsed"] >= 100, report
    # The texts use every dialect accy registers, each loaded on demand.
    assert report["loaded"] == sorted(DIALECTS), report["loaded"]


def test_companions_cover_every_construct_named_in_another_dialect() -> None:
    """A construct whose name carries another dialect's namespace is only
    found when its own dialect is loaded with that one (COMPANIONS)."""
    for name in DIALECTS:
        dialect = dialect_named(name)
        assert dialect.name == name
        for construct in [*dialect.operations, *dialect.attributes]:
            namespace = construct.name.split(".")[0] if "." in construct.name else "builtin"
            if namespace != name:
                assert name in COMPANIONS.get(namespace, ()), f"{construct.name} of {name} is not loaded with {namespace}"


_FORMATS = r"""
import json
import accy.dialects.parse  # what a compile imports first
from accy.dialects.context import DIALECTS, dialect_named
from accy.dialects.lazy_formats import _LazyProgram

lazy, eager, made = [], [], 0
for name in DIALECTS:
    for op in dialect_named(name).operations:
        definition = getattr(op, "get_irdl_definition", None)
        if definition is None or definition().assembly_format is None:
            continue
        cells = op.parse.__func__.__closure__ or ()
        programs = [c.cell_contents for c in cells if isinstance(c.cell_contents, _LazyProgram)]
        (lazy if programs else eager).append(op.name)
        for program in programs:
            program.get()  # xDSL accepts the format
            made += 1
print(json.dumps({"lazy": len(lazy), "eager": eager, "made": made}))
"""


def test_every_format_is_lazy_and_accepted() -> None:
    """In a process that imports the parser first, every op of accy's
    dialects with an assembly format reads it lazily, and each format is
    one xDSL accepts (a bad format would otherwise surface only at the op's
    first parse or print)."""
    done = subprocess.run([sys.executable, "-c", _FORMATS], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["eager"] == []
    assert report["lazy"] == report["made"] >= 150, report


def test_a_bad_format_is_reported_at_first_use() -> None:
    from xdsl.irdl import IRDLOperation, irdl_op_definition, operand_def
    from xdsl.utils.exceptions import PyRDLOpDefinitionError

    import accy.dialects.lazy_formats  # noqa: F401

    @irdl_op_definition
    class BadFormatOp(IRDLOperation):
        name = "test.bad_format"
        x = operand_def()
        assembly_format = "$x attr-dict"  # the operand's type is missing

    try:
        BadFormatOp.parse(None)  # type: ignore[arg-type]
    except PyRDLOpDefinitionError as e:
        assert "assembly format" in str(e)
    else:
        raise AssertionError("a format xDSL rejects was accepted")
