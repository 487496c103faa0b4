"""Dense literals are read and printed from their bytes (accy.dialects.dense,
the lowerings' `literal_elements`), and no compile stage expands a large
literal or builds a Python object per element: xDSL's `get_values()` / `is_splat()` are never called on one.

The spy below is no mock: it lets xDSL's own methods run, and fails the test
if accy asks them to unpack a literal of more than `SMALL` elements."""

from __future__ import annotations

import io
import math
import sys
import tracemalloc
from pathlib import Path

import numpy as np
import pytest
from xdsl.dialects.builtin import BytesAttr, DenseIntOrFPElementsAttr, TensorType, f16, f32, i1, i32
from xdsl.printer import Printer

import accy
from accy.backends.opencl.emitter import emit_opencl
from accy.dialects.dense import DensePrinter, splat_value
from accy.passes.kernelization.evaluate import literal_elements
from accy.passes.kernelization.kernelize import KernelizePass
from accy.passes.pass_manager import fingerprint
from accy.passes.registry import get_pass
from accy.reference import dense_to_numpy, numpy_to_dense

sys.path.insert(0, str(Path(__file__).parents[2] / "tools"))
from compile_cost import _attention, _splat_product  # noqa: E402

SMALL = 4096


@pytest.fixture
def no_unpacking(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fails any `get_values()` / `is_splat()` of a literal over SMALL elements."""
    for name in ("get_values", "is_splat"):
        original = getattr(DenseIntOrFPElementsAttr, name)

        def guarded(self: DenseIntOrFPElementsAttr, original=original, name=name):  # type: ignore[no-untyped-def]
            n = math.prod(self.get_shape())
            assert n <= SMALL, f"{name}() unpacked a literal of {n} elements"
            return original(self)

        monkeypatch.setattr(DenseIntOrFPElementsAttr, name, guarded)


# --------------------------------------------------------------------------
# Reading
# --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("values", "element_type", "expected"),
    [
        (np.full(1023, 2.5, np.float32), f32, 2.5),
        (np.full(17, -1.5, np.float16), f16, -1.5),
        (np.full(3, 7, np.int32), i32, 7),
        (np.ones(5, bool), i1, -1),  # i1 true is stored (and unpacked by xDSL) as -1
        (np.zeros(5, bool), i1, 0),
        (np.array([1.0, 1.0, 1.0 + 2**-20], np.float32), f32, None),
        (np.array([0.0, -0.0], np.float32), f32, None),  # equal values, different bits
        (np.array([5, 5, 5, 6], np.int32), i32, None),
    ],
)
def test_splat_value(values: np.ndarray, element_type, expected) -> None:
    attr = numpy_to_dense(values, element_type)
    assert splat_value(attr) == expected
    if expected is not None:
        assert len(set(attr.get_values())) == 1 and attr.get_values()[0] == expected


def test_splat_value_nan_and_chunks() -> None:
    nan = numpy_to_dense(np.full(3_000_001, np.nan, np.float32))
    assert math.isnan(splat_value(nan))  # type: ignore[arg-type]
    # A difference in the last chunk only.
    values = np.zeros(3_000_001, np.float32)
    values[-1] = 1
    assert splat_value(numpy_to_dense(values)) is None
    assert splat_value(numpy_to_dense(np.zeros(0, np.float32))) is None


def test_literal_elements_is_a_view_of_the_bytes() -> None:
    values = np.random.default_rng(0).standard_normal((7, 3)).astype(np.float32)
    attr = numpy_to_dense(values)
    view = literal_elements(attr)
    assert not view.flags.writeable and view.base is not None
    np.testing.assert_array_equal(view.reshape(7, 3), values)
    np.testing.assert_array_equal(dense_to_numpy(attr), values)


# --------------------------------------------------------------------------
# Printing
# --------------------------------------------------------------------------

PROGRAM = """func.func @main(%x: tensor<300xf32>) -> tensor<300xf32> {
  %c = "accy.constant"() <{value = dense<2.5> : tensor<300xf32>}> : () -> tensor<300xf32>
  %b = "accy.constant"() <{value = dense<true> : tensor<300xi1>}> : () -> tensor<300xi1>
  %l = "accy.constant"() <{value = dense<[1.0, 2.0]> : tensor<2xf32>}> : () -> tensor<2xf32>
  %d = "accy.constant"() <{value = dense<"0xHEX"> : tensor<300xf32>}> : () -> tensor<300xf32>
  %s = "accy.select"(%b, %c, %d) : (tensor<300xi1>, tensor<300xf32>, tensor<300xf32>) -> tensor<300xf32>
  %y = "accy.add"(%s, %x) : (tensor<300xf32>, tensor<300xf32>) -> tensor<300xf32>
  func.return %y : tensor<300xf32>
}"""


def _program() -> str:
    values = np.random.default_rng(1).standard_normal(300).astype("<f4")
    return PROGRAM.replace("HEX", values.tobytes().hex().upper())


@pytest.mark.parametrize("generic", [False, True])
def test_dense_printer_prints_what_xdsl_prints(generic: bool) -> None:
    module = accy.parse_module(_program())
    ours, xdsls = io.StringIO(), io.StringIO()
    DensePrinter(stream=ours, print_generic_format=generic).print_op(module)
    Printer(stream=xdsls, print_generic_format=generic).print_op(module)
    assert ours.getvalue() == xdsls.getvalue()
    # ... and it parses back to the same module.
    assert accy.parse_module(ours.getvalue()).is_structurally_equivalent(module)


def test_fingerprint_digests_large_literals() -> None:
    text = _program()
    module = accy.parse_module(text)
    out = io.StringIO()
    DensePrinter(stream=out, print_generic_format=True, digest=True).print_op(module)
    assert "#digest:1200:" in out.getvalue() and 'dense<"0x' not in out.getvalue()
    assert fingerprint(module) == fingerprint(accy.parse_module(text))
    # One changed element changes the fingerprint.
    hex_start = text.index('"0x') + 3
    changed = text[:hex_start] + ("0" if text[hex_start] != "0" else "1") + text[hex_start + 1 :]
    assert fingerprint(accy.parse_module(changed)) != fingerprint(module)


# --------------------------------------------------------------------------
# No stage unpacks a large literal
# --------------------------------------------------------------------------


def _kernelize_and_emit(module) -> str:
    accy.PassManager([KernelizePass(strict=True)], check=True).run(module)
    return emit_opencl(module)


@pytest.mark.parametrize("causal", [False, True])
def test_large_attention_compiles_in_constant_memory(no_unpacking: None, causal: bool) -> None:
    """B4 H16 S4096 D64 attention: the scale and masked score are rank-0
    literals (they used to be 1G-element splats, 23 GB to kernelize), so
    kernelizing costs what it costs at any size: a few MB."""
    module = accy.parse_module(_attention((4, 16, 4096, 64), causal))
    tracemalloc.start()
    try:
        source = _kernelize_and_emit(module)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert source.count("__kernel") == 4  # the CPU blocked attention: three packs and the blocks
    assert peak < 64 * 2**20, f"kernelizing took {peak / 2**20:.0f} MB of Python memory"


def test_decomposed_large_attention_uses_rank0_literals(no_unpacking: None) -> None:
    module = accy.parse_module(_attention((4, 16, 4096, 64), True))
    accy.PassManager([get_pass("decompose")(), get_pass("canonicalize")(), get_pass("cse")()]).run(module)
    constants = [op for op in module.walk() if isinstance(op, accy.dialects.accy.ConstantOp)]
    # scale and masked score (rank 0), one index vector (the key and query
    # iotas are equal at Sq = Sk, and cse merges them).
    assert sorted(math.prod(c.value.get_shape()) for c in constants) == [1, 1, 4096]
    assert _kernelize_and_emit(module).count("__kernel") == 4  # three packs and the blocks


def test_large_splat_literal_is_read_as_one_value(no_unpacking: None) -> None:
    """`x * dense<2.0> : tensor<4096x4096xf32>`: after xDSL's parse, no stage
    reads more than the literal's bytes; the kernel reads the literal from
    a host constant of one element (stride 0)."""
    module = accy.parse_module(_splat_product((4096, 4096)))
    accy.PassManager([get_pass("canonicalize")(), get_pass("cse")()], check=True).run(module)
    assert _kernelize_and_emit(module).count("__kernel") == 1
    host = [op for op in module.walk() if op.name == "accy_host.constant"]
    assert [op.value.get_values() for op in host] == [(2.0,)]


def test_large_splat_literal_runs(no_unpacking: None) -> None:
    """Compiled and run on the OpenCL device, checked against numpy."""
    shape = (1023, 1025)
    exe = accy.compile(_splat_product(shape), device="opencl")
    x = np.random.default_rng(2).standard_normal(shape).astype(np.float32)
    (y,) = exe(x)
    np.testing.assert_array_equal(y, x * np.float32(2.0))


def test_hand_built_one_element_splat_reads() -> None:
    """A literal whose bytes hold one element for a larger shape (not what
    xDSL builds, but a valid reading of a splat) is the splat everywhere."""
    attr = DenseIntOrFPElementsAttr(TensorType(f32, [4, 5]), BytesAttr(np.float32(3.0).tobytes()))
    assert splat_value(attr) == 3.0
    np.testing.assert_array_equal(dense_to_numpy(attr), np.full((4, 5), 3.0, np.float32))
