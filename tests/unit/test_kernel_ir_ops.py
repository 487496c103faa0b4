"""One list of the kernel-IR ops and one check of a kernel's shape
(accy/backends/kernels.py), read by both backends and by docs/kernel-ir.md:
each backend handles exactly the ops of `KERNEL_OPS`, the doc lists exactly
them, and both backends decline an op outside them, or one of the wrong
form, with the same diagnostic naming the kernel and the op."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pytest
from xdsl.dialects.builtin import ModuleOp
from xdsl.parser import Parser

from accy.backends import kernels
from accy.backends.kernels import KERNEL_OP_SET, KERNEL_OPS, TERMINATORS, KernelModuleError, check_kernel
from accy.backends.llvm import emitter as llvm_emitter
from accy.backends.opencl import emitter as opencl_emitter
from accy.dialects.context import make_context

DOC = Path(__file__).parents[2] / "docs" / "kernel-ir.md"

#: (backend module, its emit function, the target format it prints, its error prefix).
BACKENDS = {
    "opencl": (opencl_emitter, opencl_emitter.emit_opencl, "opencl-c", "opencl"),
    "llvm": (llvm_emitter, llvm_emitter.emit_llvm, "llvm-ir", "llvm"),
}


# --------------------------------------------------------------------------
# The list
# --------------------------------------------------------------------------


def test_kernel_ops_are_grouped_by_their_dialect() -> None:
    for dialect, ops in KERNEL_OPS.items():
        assert len(set(ops)) == len(ops), f"{dialect} lists an op twice"
        assert all(op.name.startswith(dialect + ".") for op in ops), dialect
    assert sum(len(ops) for ops in KERNEL_OPS.values()) == len(KERNEL_OP_SET)


@pytest.mark.parametrize("backend", sorted(BACKENDS))
def test_each_backend_handles_exactly_the_kernel_ops(backend: str) -> None:
    """A handler per op of KERNEL_OPS but the terminators (which the block
    walk reads), and none for another op: so a backend neither misses an op
    the list has nor accepts one it does not."""
    handlers = set(BACKENDS[backend][0]._HANDLERS)
    assert not handlers & set(TERMINATORS)
    handled = handlers | set(TERMINATORS)
    missing = sorted(op.name for op in KERNEL_OP_SET - handled)
    extra = sorted(op.name for op in handled - KERNEL_OP_SET)
    assert not missing, f"{backend} has no handler for {missing}"
    assert not extra, f"{backend} handles {extra}, which KERNEL_OPS does not hold"


def doc_kernel_ops() -> dict[str, list[str]]:
    """docs/kernel-ir.md's op list by dialect: between its markers, a line a
    dialect (its name in backticks, a colon, then its ops in backticks);
    parenthesised notes are not ops."""
    text = DOC.read_text()
    begin, end = "<!-- kernel-ops: begin -->", "<!-- kernel-ops: end -->"
    assert text.count(begin) == 1 and text.count(end) == 1, "docs/kernel-ir.md has no single marked op list"
    section = text.split(begin)[1].split(end)[0]
    ops: dict[str, list[str]] = {}
    for line in section.strip().splitlines():
        while (bare := re.sub(r"\([^()]*\)", "", line)) != line:
            line = bare
        match = re.fullmatch(r"\s*- `(\w+)`\s*:(.*)", line)
        assert match, f"not a dialect line of the op list: {line!r}"
        dialect, names = match.group(1), re.findall(r"`(\w+)`", match.group(2))
        assert dialect not in ops, f"the doc lists dialect {dialect} twice"
        assert len(set(names)) == len(names), f"the doc lists an op of {dialect} twice"
        ops[dialect] = names
    return ops


def test_the_doc_lists_exactly_the_kernel_ops() -> None:
    documented = {dialect: sorted(names) for dialect, names in doc_kernel_ops().items()}
    listed = {dialect: sorted(op.name.removeprefix(dialect + ".") for op in ops) for dialect, ops in KERNEL_OPS.items()}
    for dialect in sorted(documented.keys() | listed.keys()):
        doc, code = set(documented.get(dialect, [])), set(listed.get(dialect, []))
        assert doc == code, (
            f"{dialect}: docs/kernel-ir.md lacks {sorted(code - doc)} and lists {sorted(doc - code)} "
            "beyond KERNEL_OPS (accy/backends/kernels.py)"
        )


# --------------------------------------------------------------------------
# The check: one diagnostic, both backends
# --------------------------------------------------------------------------

_MODULE = """builtin.module attributes {accy.target = #accy.target<format = "FORMAT">} {
  "gpu.module"() <{sym_name = "kernels"}> ({
    "gpu.func"() <{function_type = (memref<16xf32>, SECOND) -> ()KERNEL}> ({
    ^bb0(%a: memref<16xf32>, %b: SECOND):
      %c0 = arith.constant 0 : index
      %v = vector.load %a[%c0] : memref<16xf32>, vector<4xf32>
      BODY
      "gpu.return"() : () -> ()
    }) {sym_name = "k"} : () -> ()
  }) : () -> ()
}"""


def kernel_module(
    body: str, fmt: str, kernel: bool = True, second: str = "memref<16xi32>", verify: bool = True
) -> ModuleOp:
    """A kernel @k of two buffers (%a: 16 f32, %b: `second`) loading a vector
    of %a (%v), then `body`, for a backend of format `fmt`."""
    text = _MODULE.replace("FORMAT", fmt).replace("KERNEL", ", kernel" if kernel else "")
    module = Parser(make_context(), text.replace("SECOND", second).replace("BODY", body)).parse_module()
    if verify:
        module.verify()
    return module


def body(text: str, verify: bool = True) -> Callable[[str], ModuleOp]:
    return lambda fmt: kernel_module(text, fmt, verify=verify)


_INTS = "%i = vector.load %b[%c0] : memref<16xi32>, vector<4xi32>\n      "
_NOT_KERNEL_IR = "': " + kernels.NOT_KERNEL_IR

# (the kernel for a backend of a format, the diagnostic check_kernel gives)
DECLINED: dict[str, tuple[Callable[[str], ModuleOp], str]] = {
    "a helper function": (
        lambda fmt: kernel_module("", fmt, kernel=False),
        "gpu.func @k is not a kernel (helper functions are not supported)",
    ),
    "an argument that is not a flat buffer": (
        lambda fmt: kernel_module("", fmt, second="memref<4x4xi32>"),
        "kernel @k argument 1 has type memref<4x4xi32>; kernel arguments are flat 1-D memrefs",
    ),
    "a return before the end": (  # xDSL's verifier refuses it too: unverified
        body('"gpu.return"() : () -> ()\n      %z = arith.constant 1 : index', verify=False),
        "kernel @k: cannot emit 'gpu.return': a return before the end of the kernel (kernels are structured)",
    ),
    "an op of no listed dialect": (
        body("%m = memref.alloc() : memref<4xf32>"),
        "kernel @k: cannot emit 'memref.alloc" + _NOT_KERNEL_IR,
    ),
    "an unlisted math op": (body("%n = math.ctlz %c0 : index"), "kernel @k: cannot emit 'math.ctlz" + _NOT_KERNEL_IR),
    "an unlisted arith op": (
        body(_INTS + "%m = arith.maxui %i, %i : vector<4xi32>"),
        "kernel @k: cannot emit 'arith.maxui" + _NOT_KERNEL_IR,
    ),
    "a tensor constant": (
        body("%t = arith.constant dense<1.0> : tensor<4xf32>"),
        "kernel @k: cannot emit 'arith.constant': constant dense<1.000000e+00> : tensor<4xf32> of type "
        "tensor<4xf32> is not a scalar or a vector",
    ),
    "a dynamic alloca": (
        body("%n = arith.constant 4 : index\n      %p = memref.alloca(%n) : memref<?xf32>"),
        "kernel @k: cannot emit 'memref.alloca': memref<?xf32> is not statically shaped",
    ),
    "an alloca of global memory": (
        body("%p = memref.alloca() : memref<4xf32, #gpu.address_space<global>>"),
        "kernel @k: cannot emit 'memref.alloca': global memory cannot be allocated inside a kernel",
    ),
    "a load of a memref carried by scf.if": (
        body(
            "%t = arith.constant true\n      %m = scf.if %t -> (memref<16xf32>) { scf.yield %a : memref<16xf32> } "
            "else { scf.yield %a : memref<16xf32> }\n      %x = memref.load %m[%c0] : memref<16xf32>"
        ),
        "kernel @k: cannot emit 'memref.load': its memref is neither a kernel argument nor a memref.alloca",
    ),
    "a vector broadcast to another shape": (
        body("%w = vector.broadcast %v : vector<4xf32> to vector<2x4xf32>"),
        "kernel @k: cannot emit 'vector.broadcast': only scalar -> vector broadcasts are supported, "
        "got vector<4xf32> -> vector<2x4xf32>",
    ),
    "a lane of dynamic position": (
        body("%e = vector.extract %v[%c0] : f32 from vector<4xf32>"),
        "kernel @k: cannot emit 'vector.extract': only a single constant lane position is supported",
    ),
    "a reduction of an unlisted kind": (
        body(_INTS + "%r = vector.reduction <maxui>, %i : vector<4xi32> into i32"),
        "kernel @k: cannot emit 'vector.reduction': reduction kind 'maxui' is not supported",
    ),
    "a shuffle of an unknown lane": (
        body("%s = vector.shuffle %v, %v [0, -1] : vector<4xf32>, vector<4xf32>"),
        "kernel @k: cannot emit 'vector.shuffle': only shuffles of two equal vectors by a mask of known lanes "
        "are supported",
    ),
}


@pytest.mark.parametrize("backend", sorted(BACKENDS))
def test_the_template_kernel_is_kernel_ir(backend: str) -> None:
    _, emit, fmt, _ = BACKENDS[backend]
    module = kernel_module(_INTS + "%s = arith.addi %i, %i : vector<4xi32>", fmt)
    check_kernel(kernels.kernel_funcs(module, "")[0])
    assert emit(module)


@pytest.mark.parametrize("backend", sorted(BACKENDS))
@pytest.mark.parametrize("case", sorted(DECLINED))
def test_both_backends_decline_with_one_diagnostic_naming_the_op(case: str, backend: str) -> None:
    make, message = DECLINED[case]
    _, emit, fmt, prefix = BACKENDS[backend]
    module = make(fmt)
    with pytest.raises(KernelModuleError) as checked:
        check_kernel(kernels.kernel_funcs(module, "")[0])
    assert str(checked.value) == message
    with pytest.raises(ValueError) as emitted:
        emit(module)
    assert str(emitted.value) == f"{prefix}: {message}"


def test_a_backend_declines_a_form_it_cannot_emit_saying_why() -> None:
    """gpu.barrier, workgroup memory and gpu.grid_dim x are kernel IR, which
    OpenCL C prints and the LLVM kernel ABI cannot run (docs/kernel-ir.md)."""
    cases = {
        '"gpu.barrier"() : () -> ()': r"kernel @k uses gpu\.barrier: .*profile=cpu",
        "%l = memref.alloca() : memref<4xf32, #gpu.address_space<workgroup>>": r"kernel @k uses workgroup memory .*profile=cpu",
        '%g = "gpu.grid_dim"() <{dimension = #gpu<dim x>}> : () -> index':
            r"kernel @k: cannot emit 'gpu\.grid_dim': the number of work-groups \(x\) is not passed",
    }  # fmt: skip
    for text, refusal in cases.items():
        assert "__kernel" in opencl_emitter.emit_opencl(kernel_module(text, "opencl-c"))
        with pytest.raises(llvm_emitter.LLVMEmitError, match="^llvm: " + refusal):
            llvm_emitter.emit_llvm(kernel_module(text, "llvm-ir"))
