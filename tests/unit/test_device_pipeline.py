"""The named device pipeline: `accy-opt -p accy-device-pipeline` runs what
`accy.compile` runs on a kernel device (runtime/device.py builds its passes
from the same `DevicePipeline`), and it is no pass of its own: accy-opt
expands it, so each of its passes is instrumented."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from xdsl.dialects.builtin import ModuleOp
from xdsl.utils.arg_spec import ArgSpec, parse_pipeline

from accy.cli.opt import main
from accy.dialects.parse import parse_module
from accy.dialects.target import TargetProfile
from accy.passes.half_compute import ComputeHalfInF32Pass
from accy.passes.kernelization.kernelize import KernelizePass
from accy.passes.loop_invariants import LoopInvariantCodeMotionPass
from accy.passes.pass_manager import PassManager, print_ir
from accy.passes.registry import PIPELINES, DevicePipeline, expand
from accy.passes.target import SetTargetPass
from accy.passes.widen_accumulation import WidenAccumulationPass
from accy.runtime.device import KernelDevice, Program

PROGRAMS = Path(__file__).resolve().parent.parent / "programs"
#: Between them they give each pass of the pipeline work: an iterate with
#: loop-invariant ops, f16 sums widened, dots, a scan, an attention, and a
#: host fallback (a decline kernelize remarks on, an error when strict).
#: Float16 sums and a dot, which widen-accumulation runs in float32.
HALF = """\
func.func @main(%a: tensor<4x8xf16>, %b: tensor<8x3xf16>) -> (tensor<4x3xf16>, tensor<4xf16>) {
  %d = "accy.dot_general"(%a, %b) <{lhs_batch = array<i64>, rhs_batch = array<i64>, lhs_contract = array<i64: 1>, rhs_contract = array<i64: 0>}> : (tensor<4x8xf16>, tensor<8x3xf16>) -> tensor<4x3xf16>
  %s = "accy.reduce"(%a) <{kind = "sum", axes = array<i64: 1>}> : (tensor<4x8xf16>) -> tensor<4xf16>
  func.return %d, %s : tensor<4x3xf16>, tensor<4xf16>
}
"""
#: (program, profile): a program of tests/programs or `HALF`; None keeps the
#: program's own target (fallback.mlir's has no float64).
CASES = [
    *((name, profile) for name in ("iterate", "mlp", "scan_prologue", "attention_named", "half") for profile in ("cpu", "gpu")),
    ("fallback", None),
]


class _Loaded(Program):
    def run(self, inputs: list[Any], profile: bool = False, to_host: bool = True) -> list[Any]:
        raise AssertionError("never run")


class _CapturingDevice(KernelDevice):
    """A kernel device that keeps the module it is asked to load: what
    `KernelDevice.prepare` made of it, printed."""

    name = "capture"
    FORMAT = "opencl-c"
    ARTIFACT = "OpenCL C"

    def __init__(self) -> None:
        self.loaded: list[str] = []

    def profile_for(self, module: ModuleOp) -> TargetProfile:
        return TargetProfile.of_module(module)

    def load(self, module: ModuleOp, fn: str) -> Program:
        self.loaded.append(print_ir(module))
        return _Loaded()


def targeted(name: str, profile: str | None) -> str:
    """Program `name` of tests/programs with the complete `profile` target
    (None: its own) attached, as a device attaches its own, as text: what
    the pipeline starts from in `KernelDevice.prepare`."""
    module = parse_module(HALF if name == "half" else (PROGRAMS / f"{name}.mlir").read_text())
    if profile is not None:
        PassManager([SetTargetPass(profile=profile)]).run(module)
    TargetProfile.of_module(module).attach(module)
    return print_ir(module)


def through_opt(tmp_path: Path, text: str, pipeline: str) -> tuple[int, str]:
    """accy-opt's exit code and its result, printed as the device's is."""
    source, result = tmp_path / "in.mlir", tmp_path / "out.mlir"
    source.write_text(text)
    code = main([str(source), "-p", pipeline, "-o", str(result)])
    return code, print_ir(parse_module(result.read_text())) if code == 0 else ""


@pytest.mark.parametrize(("name", "profile"), CASES)
def test_opt_and_a_compile_make_the_same_module(name: str, profile: str | None, tmp_path: Path) -> None:
    text = targeted(name, profile)
    device = _CapturingDevice()
    device.prepare(parse_module(text), "main")
    code, opt = through_opt(tmp_path, text, "accy-device-pipeline")
    assert code == 0
    assert device.loaded == [opt]


def test_strict_is_kernelize_strict_in_both(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text = targeted("fallback", None)
    with pytest.raises(Exception, match="strict kernelization"):
        _CapturingDevice().prepare(parse_module(text), "main", strict=True)
    code, _ = through_opt(tmp_path, text, "accy-device-pipeline{strict=true}")
    assert code == 1 and "strict kernelization" in capsys.readouterr().err


def test_the_pipeline_is_these_passes() -> None:
    assert DevicePipeline().passes() == [
        LoopInvariantCodeMotionPass(),
        WidenAccumulationPass(),
        ComputeHalfInF32Pass(),
        KernelizePass(strict=False, verify_bounds=True),
    ]
    assert DevicePipeline(strict=True, verify_bounds=False).passes()[-1] == KernelizePass(strict=True, verify_bounds=False)


def test_opt_expands_it_into_its_passes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = tmp_path / "in.mlir"
    source.write_text(targeted("mlp", "cpu"))
    assert main([str(source), "-p", "accy-device-pipeline{verify-bounds=false}", "--print-ir-after-all", "-o", str(tmp_path / "out")]) == 0
    banners = re.findall(r"// -----// IR after (\S+) //----- //", capsys.readouterr().err)
    assert banners == ["loop-invariant-code-motion", "widen-accumulation", "compute-half-in-f32", "kernelize"]


def _spec(text: str) -> ArgSpec:
    (spec,) = parse_pipeline(text)
    return spec


def test_expand_leaves_passes_alone_and_checks_options() -> None:
    assert expand(_spec("cse{a=1}")) == [_spec("cse{a=1}")]
    assert [str(s) for s in expand(_spec("accy-device-pipeline{strict=true}"))] == [
        "loop-invariant-code-motion",
        "widen-accumulation",
        "compute-half-in-f32",
        "kernelize{strict=true verify-bounds=true}",
    ]
    with pytest.raises(ValueError, match="bogus"):
        expand(_spec("accy-device-pipeline{bogus=1}"))


@pytest.mark.parametrize(
    ("pipeline", "message"),
    [
        ("accy-device-pipeline{bogus=1}", "accy-opt: error: invalid options for pipeline 'accy-device-pipeline': "),
        ("accy-device-pipeline{strict=3}", "accy-opt: error: invalid options for pipeline 'accy-device-pipeline': "),
    ],
)
def test_bad_options_are_one_line(pipeline: str, message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = tmp_path / "in.mlir"
    source.write_text(targeted("mlp", "cpu"))
    assert main([str(source), "-p", pipeline]) == 1
    out, err = capsys.readouterr()
    assert out == "" and err.startswith(message) and len(err.strip().splitlines()) == 1


def test_list_passes_shows_every_pipeline(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--list-passes"]) == 0
    out = capsys.readouterr().out
    listed = out.split("Pipelines:\n", 1)[1].splitlines()
    assert [line.split()[0] for line in listed] == list(PIPELINES)
    assert re.fullmatch(r"  accy-device-pipeline +What `accy\.compile` runs on a kernel device .+", listed[0])
