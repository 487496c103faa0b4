"""Differential fuzzing of the whole compiler: random well-typed programs
(`program_gen.programs`), compiled from their text by `accy.compile` for the
OpenCL runtime (poisoned buffers, CPU and GPU profiles) and run on random
inputs, must agree with the reference interpreter.

Floats agree within RTOL / ATOL, ATOL scaled by the output's largest
magnitude (the generator keeps every value tame, so that is a fair bound on
float32 reassociation and libm differences); integers and i1 exactly. On a
failure hypothesis shrinks the program and prints its text.

The default suite draws a fixed set of programs (`derandomize`: the same
kernels every run, so PoCL's cache keeps it fast) and leaves out the
patterns of known bugs (`KNOWN_BUGS`, each pinned by a strict xfail in
test_fuzz_regressions.py). The slow variant, for `make conformance`, draws
many more programs afresh each run, known bugs included.
"""

from __future__ import annotations

import numpy as np
import pytest
from check import assert_matches
from hypothesis import HealthCheck, given, note, settings
from hypothesis import strategies as st
from program_gen import Program, programs, random_inputs

import accy
from accy.dialects.target import TARGET_KEY, TargetAttr
from accy.runtime.device import Device

RTOL, ATOL = 2e-3, 2e-4

#: Generator features that hit known, open bugs (see test_fuzz_regressions.py).
KNOWN_BUGS: frozenset[str] = frozenset()

_COMMON = dict(
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow, HealthCheck.data_too_large],
)


def check_text(text: str, seed: int, device: Device) -> None:
    """Compiles program `text` for `device`, runs it on inputs drawn from
    `seed` (`random_inputs`) and compares every result with the reference
    interpreter's."""
    exe = accy.compile(text, device=device)
    inputs = random_inputs(exe.input_types, seed)
    outputs = exe(*inputs)
    expected = exe.reference_outputs(inputs)
    assert len(outputs) == len(expected)
    for i, (got, want) in enumerate(zip(outputs, expected, strict=True)):
        try:
            assert_matches(got, want, rtol=RTOL, atol=ATOL)
        except AssertionError as e:
            raise AssertionError(f"result #{i} differs from the reference on\n{text}\n{e}") from None


def check_program(program: Program, seed: int, device: Device) -> None:
    note(f"device: {device.name}, input seed: {seed}")  # only inside a Hypothesis test
    check_text(program.text, seed, device)


@settings(max_examples=40, derandomize=True, **_COMMON)
@given(program=programs(avoid=KNOWN_BUGS), seed=st.integers(0, 2**16))
def test_random_program(program: Program, seed: int, device: Device) -> None:
    check_program(program, seed, device)


#: Ops of the row patterns and what feeds them, for the square-size fuzzing.
ROW_PATTERN_OPS = ("row_primitive", "attention", "softmax", "layer_norm", "reduce", "broadcast", "unary", "binary")


@settings(max_examples=30, derandomize=True, **_COMMON)
@given(program=programs(ops=("row_primitive", "attention", "binary"), square=True, min_ops=1, max_ops=4),
       seed=st.integers(0, 2**16))
def test_row_patterns_square(program: Program, seed: int, device: Device) -> None:
    """Softmax, layer norm and attention forms on square and cubic tensors,
    their reductions and broadcasts along every dim that fits."""
    check_program(program, seed, device)


def streamed(text: str) -> str:
    """`text` (a module) with a target that streams every output, however
    small (`stream_bytes`; CPU kernels only)."""
    module = accy.parse_module(text)
    module.attributes[TARGET_KEY] = TargetAttr.from_fields({"stream_bytes": 4})
    return str(module)


@settings(max_examples=40, derandomize=True, **_COMMON)
@given(program=programs(ops=("row_primitive", "softmax", "layer_norm", "scan", "binary"), square=True, min_ops=1,
                        max_ops=5),
       seed=st.integers(0, 2**16))
def test_random_program_streamed(program: Program, seed: int, device: Device) -> None:
    """Row pipelines and scans with every output stored by streaming stores
    wherever a kernel can take them (whole vectors at multiples of W: here
    the programs of size 16, a few of the 40)."""
    note(f"device: {device.name}, input seed: {seed}")
    check_text(streamed(program.text), seed, device)


#: Pads, arg reductions and window ops among what feeds and reads them.
WINDOW_PROGRAM_OPS = ("pad", "argreduce", "conv", "pool", "unary", "binary", "reduce", "broadcast", "slice", "cast")


@settings(max_examples=40, derandomize=True, **_COMMON)
@given(program=programs(ops=WINDOW_PROGRAM_OPS, min_ops=2, max_ops=6), seed=st.integers(0, 2**16))
def test_pads_arg_reductions_and_windows(program: Program, seed: int, device: Device) -> None:
    """accy.pad in every mode (negative pads, pads past the dim), argmax and
    argmin over ties and NaNs (i32 and i64), accy.conv (groups, strides,
    dilations, pads) and accy.pool (max, sum, average, count_include_pad)
    in small sizes, fused with their producers and consumers."""
    check_program(program, seed, device)


@pytest.mark.slow
@settings(max_examples=1500, **_COMMON)
@given(program=programs(ops=ROW_PATTERN_OPS, square=True, min_ops=1, max_ops=6), seed=st.integers(0, 2**16))
def test_row_patterns_square_many(program: Program, seed: int, device: Device) -> None:
    check_program(program, seed, device)


@pytest.mark.slow
@settings(max_examples=400, **_COMMON)
@given(program=programs(), seed=st.integers(0, 2**16))
def test_random_program_many(program: Program, seed: int, device: Device) -> None:
    check_program(program, seed, device)


def test_inputs_are_what_the_bounds_assume() -> None:
    """The generator's bounds hold for the inputs it is run on."""
    from program_gen import FLOAT_INPUT, INT_INPUT, f32, i32

    from accy.dialects.accy import tensor

    x, n = random_inputs([tensor([33, 17], f32), tensor([5], i32)], seed=3)
    assert x.dtype == np.float32 and np.abs(x).max() <= FLOAT_INPUT
    assert n.dtype == np.int32 and np.abs(n).max() <= INT_INPUT


@settings(max_examples=40, derandomize=True, **_COMMON)
@given(program=programs(ops=("iterate", "unary", "binary", "dot", "reduce"), min_ops=2, max_ops=6),
       seed=st.integers(0, 2**16))
def test_loops(program: Program, seed: int, device: Device) -> None:
    """accy.iterate as loops of kernels: bodies of dots, reductions, scans,
    softmaxes and nested loops, carried values yielded unchanged, outer
    values or one value twice, and 0 to 3 trips."""
    check_program(program, seed, device)
