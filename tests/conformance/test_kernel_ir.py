"""Every kernel the kernelize pass builds for the program corpus
(tests/programs), under both profiles, verifies, is valid SSA (every operand
dominates its use: xDSL's verifier does not check it), uses only the ops of
CONVENTION_OPS (below: the kernel-body ops the lowerings may emit, each
described in docs/kernel-ir.md), prints as OpenCL C, and is already tidy: xDSL's CSE finds
nothing left to merge (each address and value is computed once)."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import PROFILES
from xdsl.dialects import arith, scf
from xdsl.dialects.builtin import IndexType
from xdsl.ir import Block, Region
from xdsl.transforms.common_subexpression_elimination import cse

import accy
from accy.backends.opencl.emitter import emit_opencl, kernel_funcs
from accy.passes.kernel_ir.kernel_checks import InvalidKernelError, check_dominance
from accy.passes.kernelization.kernelize import KernelizePass
from accy.passes.pass_manager import PassManager

PROGRAMS = sorted((Path(__file__).parents[1] / "programs").glob("*.mlir"))

#: The kernel-body ops a lowering may emit (each described in docs/kernel-ir.md).
CONVENTION_OPS = {
    *(f"gpu.{n}" for n in ("global_id", "thread_id", "block_id", "block_dim", "grid_dim", "barrier", "return")),
    *(f"arith.{n}" for n in (
        "constant", "addi", "subi", "muli", "divsi", "remsi", "divui", "addf", "subf", "mulf", "divf", "negf",
        "maximumf", "minimumf", "maxsi", "minsi", "cmpi", "cmpf", "select", "index_cast", "sitofp", "fptosi",
        "extf", "truncf", "extsi", "trunci", "uitofp", "andi", "ori", "xori",
    )),
    *(f"math.{n}" for n in (
        "exp", "log", "sqrt", "rsqrt", "tanh", "sin", "cos", "erf", "floor", "ceil", "absf", "absi", "powf", "fma",
    )),
    "scf.for", "scf.if", "scf.yield", "memref.load", "memref.store", "memref.alloca",
    *(f"vector.{n}" for n in ("load", "store", "broadcast", "reduction", "extract", "insert", "shuffle")),
    "accy_kernel.vcmp", "accy_kernel.vselect", "accy_kernel.vcast",
}  # fmt: skip


@pytest.mark.parametrize("profile", sorted(PROFILES))
@pytest.mark.parametrize("path", PROGRAMS, ids=lambda p: p.stem)
def test_kernels_follow_the_conventions(path: Path, profile: str) -> None:
    module = accy.parse_module(path)
    PROFILES[profile].attach(module)
    PassManager([KernelizePass()]).run(module)
    module.verify()
    for kernel in kernel_funcs(module):
        check_dominance(kernel)
        body = [op for op in kernel.walk() if op is not kernel]
        outside = {op.name for op in body} - CONVENTION_OPS
        assert not outside, f"@{kernel.sym_name.data} uses {sorted(outside)}"
        tidied = kernel.clone()
        cse(tidied)
        assert len(list(tidied.walk())) == len(body) + 1, f"@{kernel.sym_name.data} computes something twice"
    assert "__kernel" in emit_opencl(module) or not kernel_funcs(module)


def test_dominance_check_names_the_kernel_and_the_use() -> None:
    """A use of a loop's induction variable after the loop (what the kernel
    builder once produced for a 1x1 reduction) is an internal error naming
    the kernel, the op and the value."""
    module = accy.parse_module(PROGRAMS[0])
    PassManager([KernelizePass()]).run(module)
    kernel = kernel_funcs(module)[0]
    check_dominance(kernel)
    loop = scf.ForOp(*(arith.ConstantOp.from_int_and_width(v, IndexType()).result for v in (0, 1, 1)), [],
                     Region(Block([scf.YieldOp()], arg_types=[IndexType()])))
    entry = kernel.body.block
    assert entry.last_op is not None
    for op in (*(o.owner for o in loop.operands), loop):
        entry.insert_op_before(op, entry.last_op)
    entry.insert_op_before(arith.AddiOp(loop.body.block.args[0], loop.lb), entry.last_op)
    with pytest.raises(InvalidKernelError) as info:
        check_dominance(kernel, "in this test")
    text = str(info.value).splitlines()[0]
    assert f"kernel @{kernel.sym_name.data} is not valid SSA in this test" in text
    assert "operand #0" in text and "arith.addi" in text and "argument #0 of a block of scf.for" in text
