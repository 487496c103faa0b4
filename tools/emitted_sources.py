"""Emitted kernel sources of a corpus, for checking a refactor keeps kernels
byte-identical: every `.mlir` program under tests/programs and examples,
kernelized for the CPU and GPU profiles and printed as OpenCL C, and for the
CPU profile as LLVM IR, written one file per (program, profile, backend).

    python tools/emitted_sources.py DIR            # write the sources
    python tools/emitted_sources.py DIR --random 300   # and 300 drawn programs
    diff -r BEFORE AFTER                           # compare two runs

`--random N` adds N programs drawn by the conformance suite's generator
(tests/conformance/program_gen.py), derandomized: the same N every run.
A program a profile cannot kernelize is written as its error message, so a
change in what declines shows too.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path

from xdsl.dialects.builtin import ModuleOp

from accy.backends.llvm.emitter import emit_llvm
from accy.backends.opencl.emitter import emit_opencl
from accy.dialects.parse import parse_module
from accy.passes.kernelization.kernelize import KernelizePass
from accy.passes.loop_invariants import LoopInvariantCodeMotionPass
from accy.passes.pass_manager import PassManager
from accy.passes.target import SetTargetPass
from accy.passes.widen_accumulation import WidenAccumulationPass

ROOT = Path(__file__).resolve().parent.parent
CORPUS = [*sorted((ROOT / "tests/programs").glob("*.mlir")), *sorted((ROOT / "examples").glob("*.mlir"))]
BUILDS = [("cpu", "opencl-c", emit_opencl), ("gpu", "opencl-c", emit_opencl), ("cpu", "llvm-ir", emit_llvm)]


def emitted(text: str, profile: str, fmt: str, emit: Callable[[ModuleOp], str]) -> str:
    """The sources of program `text` for one profile and backend, or its error."""
    module = parse_module(text)
    passes = [
        SetTargetPass(profile=profile, format=fmt),
        LoopInvariantCodeMotionPass(),
        WidenAccumulationPass(),
        KernelizePass(verify_bounds=True),
    ]
    try:
        PassManager(passes).run(module)
        return emit(module)
    except Exception as e:  # noqa: BLE001 (a decline is part of what is compared)
        return f"error: {type(e).__name__}: {e}\n"


def drawn_programs(count: int) -> list[tuple[str, str]]:
    """`count` programs of the conformance generator, the same every run."""
    if count <= 0:  # hypothesis refuses max_examples=0
        return []
    sys.path.insert(0, str(ROOT / "tests/conformance"))
    from hypothesis import HealthCheck, given, settings
    from program_gen import programs

    texts: list[str] = []

    @settings(derandomize=True, max_examples=count, database=None, deadline=None,
              suppress_health_check=list(HealthCheck))
    @given(programs())
    def draw(program) -> None:
        texts.append(program.text)

    draw()
    return [(f"drawn{i:04d}", text) for i, text in enumerate(texts)]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--random", type=int, default=0, metavar="N")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    corpus = [(path.stem, path.read_text()) for path in CORPUS] + drawn_programs(args.random)
    for stem, text in corpus:
        for profile, fmt, emit in BUILDS:
            ext = "cl" if fmt == "opencl-c" else "ll"
            (args.out / f"{stem}.{profile}.{ext}").write_text(emitted(text, profile, fmt, emit))
    print(f"{len(corpus) * len(BUILDS)} sources in {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
