"""Every kernel the kernelize pass builds for the program corpus
(tests/programs), under both profiles, verifies, uses only the ops of
docs/kernel-ir.md, prints as OpenCL C, and is already tidy: xDSL's CSE finds
nothing left to merge (each address and value is computed once)."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import PROFILES
from xdsl.transforms.common_subexpression_elimination import cse

import accy
from accy.backends.opencl.emitter import emit_opencl, kernel_funcs
from accy.passes.kernelization.kernelize import KernelizePass
from accy.passes.pass_manager import PassManager

PROGRAMS = sorted((Path(__file__).parents[1] / "programs").glob("*.mlir"))

#: The kernel-body ops of docs/kernel-ir.md.
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
    *(f"vector.{n}" for n in ("load", "store", "broadcast", "reduction", "extract", "insert")),
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
        body = [op for op in kernel.walk() if op is not kernel]
        outside = {op.name for op in body} - CONVENTION_OPS
        assert not outside, f"@{kernel.sym_name.data} uses {sorted(outside)}"
        tidied = kernel.clone()
        cse(tidied)
        assert len(list(tidied.walk())) == len(body) + 1, f"@{kernel.sym_name.data} computes something twice"
    assert "__kernel" in emit_opencl(module) or not kernel_funcs(module)
