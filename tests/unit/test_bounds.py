"""The bounds verifier is sound on kernels written to fool it (issue 19):
each adversarial kernel below reads or writes out of bounds on some input
(the reference interpreter of kernel IR, which checks every access, says
so on that input), and the verifier must refuse it; its honest twin, the
same kernel with the guard written so that nothing wraps, must still be
proved. The families: guards through `+` and `*` that wrap (i32 and
index), a branch made "impossible" by a wrapping guard, the multiple-of
rule under wrap-around, loop-carried values past a few rounds of the fixed
point, a guard on a truncating `index_cast`, loops whose variable wraps or
whose step is not positive, and unsigned max/min."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np
import pytest
from xdsl.dialects import gpu

import accy
from accy.passes.kernel_ir.bounds import check_bounds, launch_of
from accy.reference.kernel_interpreter import KernelRuntimeError, run_kernel

I32_MAX = 2**31 - 1


def _kernel(args: list[tuple[str, str]], body: str) -> gpu.FuncOp:
    """A one-work-item kernel `@k` over buffers `args` (name, memref type)."""
    sig = ", ".join(t for _, t in args)
    names = ", ".join(f"%{a}: {t}" for a, t in args)
    text = f'''"gpu.module"() <{{sym_name = "kernels"}}> ({{
  "gpu.func"() <{{function_type = ({sig}) -> (), kernel}}> ({{
  ^bb0({names}):
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
{body}
    "gpu.return"() : () -> ()
  }}) {{sym_name = "k"}} : () -> ()
}}) : () -> ()'''
    module = accy.parse_module(text)
    return next(op for op in module.walk() if isinstance(op, gpu.FuncOp))


@dataclass
class Case:
    """A kernel, and an input on which it is out of bounds (None: it is
    correct, and must be proved), or on which it never ends (`runs=False`)."""

    args: list[tuple[str, str]]
    body: str
    bad_input: list[np.ndarray] | None = None
    runs: bool = True
    sizes: list[int] = field(default_factory=lambda: [1])


def _guarded_load(cond: str, index: str = "%j") -> str:
    """Loads a[index] under `cond` and stores it to a[0]."""
    return f"""
    scf.if {cond} {{
      %f = memref.load %a[{index}] : memref<16xf32>
      memref.store %f, %a[%c0] : memref<16xf32>
    }}"""


def _rem_load(scale: str, offset: str) -> str:
    """Under 0 <= j < 100: a 4-wide load at (j * scale + offset) % 16, stored at 0."""
    return f"""
    %small = arith.cmpi slt, %j, %c100 : index
    %g = arith.andi %nonneg, %small : i1
    scf.if %g {{
      %p = arith.muli %j, {scale} : index
      %q = arith.addi %p, {offset} : index
      %r = arith.remsi %q, %c16 : index
      %v = vector.load %a[%r] : memref<16xf32>, vector<4xf32>
      vector.store %v, %a[%c0] : memref<16xf32>, vector<4xf32>
    }}"""


def _parity_load(guard: str, bound: str = "%c1") -> str:
    """Loads a[j + 1] where `guard` holds: %g is 0 <= j < 16 and j % 2 < bound,
    %below is j < 16 and j % 2 < bound."""
    return f"""
    %c2 = arith.constant 2 : index
    %lt16 = arith.cmpi slt, %j, %c16 : index
    %parity = arith.remsi %j, %c2 : index
    %even = arith.cmpi slt, %parity, {bound} : index
    %below = arith.andi %lt16, %even : i1
    %inside = arith.andi %nonneg, %lt16 : i1
    %g = arith.andi %inside, %even : i1
    scf.if {guard} {{
      %n = arith.addi %j, %c1 : index
      %f = memref.load %a[%n] : memref<16xf32>
      memref.store %f, %a[%c0] : memref<16xf32>
    }}"""


LOADED_I32 = """
    %z = arith.constant 0 : i32
    %one = arith.constant 1 : i32
    %four = arith.constant 4 : i32
    %c16 = arith.constant 16 : i32
    %c64 = arith.constant 64 : i32
    %c100 = arith.constant 100 : i32
    %x = memref.load %in[%c0] : memref<1xi32>
    %j = arith.index_cast %x : i32 to index
    %nonneg = arith.cmpi sle, %z, %x : i32"""
LOADED_INDEX = """
    %c4 = arith.constant 4 : index
    %c16 = arith.constant 16 : index
    %c64 = arith.constant 64 : index
    %c100 = arith.constant 100 : index
    %raw = memref.load %in[%c0] : memref<1xi64>
    %j = arith.index_cast %raw : i64 to index
    %nonneg = arith.cmpi sle, %c0, %j : index"""
I32_IN = [("in", "memref<1xi32>"), ("a", "memref<16xf32>")]
I64_IN = [("in", "memref<1xi64>"), ("a", "memref<16xf32>")]


def _i32(v: int) -> list[np.ndarray]:
    return [np.array([v], np.int32), np.zeros(16, np.float32)]


def _i64(v: int) -> list[np.ndarray]:
    return [np.array([v], np.int64), np.zeros(16, np.float32)]


# The shift register: six carried values, each the one before it a trip ago.
_SHIFT = """
    %n = arith.constant 100000 : index
    %r:6 = scf.for %i = %c0 to %n step %c1 iter_args(%s0 = %c0, %s1 = %c0, %s2 = %c0, %s3 = %c0, %s4 = %c0, %s5 = %c0)
        -> (index, index, index, index, index, index) {
      %f = memref.load %a[%s5] : memref<16xf32>
      memref.store %f, %a[%c0] : memref<16xf32>
      scf.yield %i, %s0, %s1, %s2, %s3, %s4 : index, index, index, index, index, index
    }"""

CASES: dict[str, Case] = {
    # 0 <= x && x + 1 <= 16: x = INT_MAX passes (x + 1 wraps to INT_MIN).
    "i32 x + 1 <= 16 wraps": Case(I32_IN, LOADED_I32 + """
    %p = arith.addi %x, %one : i32
    %le = arith.cmpi sle, %p, %c16 : i32
    %g = arith.andi %nonneg, %le : i1""" + _guarded_load("%g"), _i32(I32_MAX)),
    # The same guard, with x first bounded so that x + 1 cannot wrap: proved.
    "i32 x + 1 <= 16 after x < 100": Case(I32_IN, LOADED_I32 + """
    %small = arith.cmpi slt, %x, %c100 : i32
    %p = arith.addi %x, %one : i32
    %le = arith.cmpi sle, %p, %c16 : i32
    %g0 = arith.andi %nonneg, %small : i1
    %g = arith.andi %g0, %le : i1""" + _guarded_load("%g")),
    # 0 <= x && x * 4 < 64: x = 2^30 passes (x * 4 wraps to 0).
    "i32 x * 4 < 64 wraps": Case(I32_IN, LOADED_I32 + """
    %p = arith.muli %x, %four : i32
    %lt = arith.cmpi slt, %p, %c64 : i32
    %g = arith.andi %nonneg, %lt : i1""" + _guarded_load("%g"), _i32(2**30)),
    "i32 x * 4 < 64 after x < 100": Case(I32_IN, LOADED_I32 + """
    %small = arith.cmpi slt, %x, %c100 : i32
    %p = arith.muli %x, %four : i32
    %lt = arith.cmpi slt, %p, %c64 : i32
    %g0 = arith.andi %nonneg, %small : i1
    %g = arith.andi %g0, %lt : i1""" + _guarded_load("%g")),
    # The index forms: j = 2^63 - 1 and j = 2^62.
    "index j + 1 <= 16 wraps": Case(I64_IN, LOADED_INDEX + """
    %p = arith.addi %j, %c1 : index
    %le = arith.cmpi sle, %p, %c16 : index
    %g = arith.andi %nonneg, %le : i1""" + _guarded_load("%g"), _i64(2**63 - 1)),
    "index j * 4 < 64 wraps": Case(I64_IN, LOADED_INDEX + """
    %p = arith.muli %j, %c4 : index
    %lt = arith.cmpi slt, %p, %c64 : index
    %g = arith.andi %nonneg, %lt : i1""" + _guarded_load("%g"), _i64(2**62)),
    "index j * 4 < 64 after j < 100": Case(I64_IN, LOADED_INDEX + """
    %small = arith.cmpi slt, %j, %c100 : index
    %p = arith.muli %j, %c4 : index
    %lt = arith.cmpi slt, %p, %c64 : index
    %g0 = arith.andi %nonneg, %small : i1
    %g = arith.andi %g0, %lt : i1""" + _guarded_load("%g")),
    # x >= 0 && x + 1 < 0 is no contradiction: x = INT_MAX takes the branch,
    # which stores far past the buffer.
    "an impossible guard that wraps": Case([("in", "memref<1xi32>"), ("a", "memref<4xf32>")], """
    %z = arith.constant 0 : i32
    %one = arith.constant 1 : i32
    %x = memref.load %in[%c0] : memref<1xi32>
    %nonneg = arith.cmpi sge, %x, %z : i32
    %p = arith.addi %x, %one : i32
    %neg = arith.cmpi slt, %p, %z : i32
    %g = arith.andi %nonneg, %neg : i1
    scf.if %g {
      %j = arith.index_cast %x : i32 to index
      %v = arith.constant 1.0 : f32
      memref.store %v, %a[%j] : memref<4xf32>
    }""", [np.array([I32_MAX], np.int32), np.zeros(4, np.float32)]),
    # A truly impossible guard (x < 0 && x > 10): its branch is dead, proved.
    "a truly impossible guard": Case([("in", "memref<1xi32>"), ("a", "memref<4xf32>")], """
    %z = arith.constant 0 : i32
    %ten = arith.constant 10 : i32
    %x = memref.load %in[%c0] : memref<1xi32>
    %neg = arith.cmpi slt, %x, %z : i32
    %big = arith.cmpi sgt, %x, %ten : i32
    %g = arith.andi %neg, %big : i1
    scf.if %g {
      %j = arith.index_cast %x : i32 to index
      %v = arith.constant 1.0 : f32
      memref.store %v, %a[%j] : memref<4xf32>
    }"""),
    # (x * 3) % 3 in i8 is -1 for x = 43 (43 * 3 = 129 wraps to -127).
    "i8 (x * 3) % 3 wraps": Case([("in", "memref<1xi8>"), ("a", "memref<16xf32>")], """
    %three = arith.constant 3 : i8
    %x = memref.load %in[%c0] : memref<1xi8>
    %p = arith.muli %x, %three : i8
    %r = arith.remsi %p, %three : i8
    %j = arith.index_cast %r : i8 to index
    %f = memref.load %a[%j] : memref<16xf32>
    memref.store %f, %a[%c0] : memref<16xf32>""", [np.array([43], np.int8), np.zeros(16, np.float32)]),
    # (x * 4) % 4 is 0 even when x * 4 wraps (4 divides 2^8): proved.
    "i8 (x * 4) % 4": Case([("in", "memref<1xi8>"), ("a", "memref<16xf32>")], """
    %four = arith.constant 4 : i8
    %x = memref.load %in[%c0] : memref<1xi8>
    %p = arith.muli %x, %four : i8
    %r = arith.remsi %p, %four : i8
    %j = arith.index_cast %r : i8 to index
    %f = memref.load %a[%j] : memref<16xf32>
    memref.store %f, %a[%c0] : memref<16xf32>"""),
    # remui of a negative multiple of 3: (-3 as u32) % 3 = 1.
    "remui of a negative multiple": Case([("in", "memref<1xi32>"), ("a", "memref<1xf32>")], """
    %three = arith.constant 3 : i32
    %ten = arith.constant 10 : i32
    %x = memref.load %in[%c0] : memref<1xi32>
    %small = arith.cmpi slt, %x, %ten : i32
    %mten = arith.constant -10 : i32
    %big = arith.cmpi sgt, %x, %mten : i32
    %g = arith.andi %small, %big : i1
    scf.if %g {
      %p = arith.muli %x, %three : i32
      %r = arith.remui %p, %three : i32
      %j = arith.index_cast %r : i32 to index
      %f = memref.load %a[%j] : memref<1xf32>
      memref.store %f, %a[%c0] : memref<1xf32>
    }""", [np.array([-1], np.int32), np.zeros(1, np.float32)]),
    # A 6-stage shift register: the last stage reaches 99994.
    "a 6-stage shift register": Case([("a", "memref<16xf32>")], _SHIFT, [np.zeros(16, np.float32)]),
    # A guard on index_cast(j : index to i32) does not bound j: j = 2^32 + 1
    # is 1 as an i32.
    "a guard on a truncating index_cast": Case(I64_IN, """
    %z = arith.constant 0 : i32
    %c16 = arith.constant 16 : i32
    %raw = memref.load %in[%c0] : memref<1xi64>
    %j = arith.index_cast %raw : i64 to index
    %t = arith.index_cast %j : index to i32
    %lo = arith.cmpi sge, %t, %z : i32
    %hi = arith.cmpi slt, %t, %c16 : i32
    %g = arith.andi %lo, %hi : i1""" + _guarded_load("%g"), _i64(2**32 + 1)),
    # The same guard where j fits in i32 (j is a 16-bit value): proved.
    "a guard on an index_cast that fits": Case([("in", "memref<1xi16>"), ("a", "memref<16xf32>")], """
    %z = arith.constant 0 : i32
    %c16 = arith.constant 16 : i32
    %raw = memref.load %in[%c0] : memref<1xi16>
    %j = arith.index_cast %raw : i16 to index
    %t = arith.index_cast %j : index to i32
    %lo = arith.cmpi sge, %t, %z : i32
    %hi = arith.cmpi slt, %t, %c16 : i32
    %g = arith.andi %lo, %hi : i1""" + _guarded_load("%g")),
    # An i32 loop 0 .. 2^31 - 1 step 2^30: 0, 2^30, then -2^31 (it wraps,
    # and never ends); i / 2^28 is -8 on the third trip.
    "an i32 loop whose variable wraps": Case([("a", "memref<5xf32>")], """
    %lb = arith.constant 0 : i32
    %ub = arith.constant 2147483647 : i32
    %st = arith.constant 1073741824 : i32
    %d = arith.constant 268435456 : i32
    scf.for %i = %lb to %ub step %st : i32 {
      %q = arith.divsi %i, %d : i32
      %j = arith.index_cast %q : i32 to index
      %f = memref.load %a[%j] : memref<5xf32>
      memref.store %f, %a[%c0] : memref<5xf32>
    }""", [np.zeros(5, np.float32)]),
    # An i32 loop that stops short of wrapping: proved.
    "an i32 loop that does not wrap": Case([("a", "memref<5xf32>")], """
    %lb = arith.constant 0 : i32
    %ub = arith.constant 1073741825 : i32
    %st = arith.constant 268435456 : i32
    %d = arith.constant 268435456 : i32
    scf.for %i = %lb to %ub step %st : i32 {
      %q = arith.divsi %i, %d : i32
      %j = arith.index_cast %q : i32 to index
      %f = memref.load %a[%j] : memref<5xf32>
      memref.store %f, %a[%c0] : memref<5xf32>
    }"""),
    # Step 0 runs for ever.
    "a loop of step 0": Case([("a", "memref<16xf32>")], """
    %c4 = arith.constant 4 : index
    scf.for %i = %c0 to %c4 step %c0 {
      %f = memref.load %a[%i] : memref<16xf32>
      memref.store %f, %a[%c0] : memref<16xf32>
    }""", runs=False),
    # Step 0 with no access through the variable: it still never ends.
    "a loop of step 0 that indexes nothing by it": Case([("a", "memref<16xf32>")], """
    %c4 = arith.constant 4 : index
    scf.for %i = %c0 to %c4 step %c0 {
      %f = memref.load %a[%c1] : memref<16xf32>
      memref.store %f, %a[%c0] : memref<16xf32>
    }""", runs=False),
    # A loaded step (it may be 0 or negative).
    "a loop of a loaded step": Case([("in", "memref<1xi64>"), ("a", "memref<16xf32>")], """
    %c4 = arith.constant 4 : index
    %raw = memref.load %in[%c0] : memref<1xi64>
    %st = arith.index_cast %raw : i64 to index
    scf.for %i = %c0 to %c4 step %st {
      %f = memref.load %a[%i] : memref<16xf32>
      memref.store %f, %a[%c0] : memref<16xf32>
    }""", runs=False),
    # maxui(x, 0) is x for every x (unsigned); min(that, 15) is -1 for x = -1.
    "maxui is not a signed max": Case(I32_IN, """
    %z = arith.constant 0 : i32
    %c15 = arith.constant 15 : i32
    %x = memref.load %in[%c0] : memref<1xi32>
    %m = arith.maxui %x, %z : i32
    %c = arith.minsi %m, %c15 : i32
    %j = arith.index_cast %c : i32 to index
    %f = memref.load %a[%j] : memref<16xf32>
    memref.store %f, %a[%c0] : memref<16xf32>""", _i32(-1)),
    # minui(x, 15) is in [0, 15] for every x: proved.
    "minui is at most its nonnegative operand": Case(I32_IN, """
    %c15 = arith.constant 15 : i32
    %x = memref.load %in[%c0] : memref<1xi32>
    %m = arith.minui %x, %c15 : i32
    %j = arith.index_cast %m : i32 to index
    %f = memref.load %a[%j] : memref<16xf32>
    memref.store %f, %a[%c0] : memref<16xf32>"""),
    # (4j) % 16 is a multiple of 4 in [0, 12]: a 4-wide load there is in
    # bounds (the dot's bias read at vector width 4 and 8, an AVX2 machine's).
    "4-wide load at (4j) % 16": Case(I64_IN, LOADED_INDEX + _rem_load("%c4", "%c0")),
    # (4j + 1) % 16 reaches 13, and 13 + 3 is past the end (j = 3).
    "4-wide load at (4j + 1) % 16": Case(I64_IN, LOADED_INDEX + _rem_load("%c4", "%c1"), _i64(3)),
    # (6j) % 16 is only even: it reaches 14 (j = 5), which a multiple of 6 rounded down would hide.
    "4-wide load at (6j) % 16": Case(I64_IN, LOADED_INDEX + "\n    %c6 = arith.constant 6 : index" + _rem_load("%c6", "%c0"),
                                     _i64(5)),
    # 0 <= j < 16 and j % 2 < 1: j is even, at most 14, so j + 1 <= 15 (a
    # concat's piece of a reversed pair read at its neighbour).
    "j + 1 under j % 2 < 1": Case(I64_IN, LOADED_INDEX + _parity_load("%g")),
    # j % 2 < 2 holds for every j: j = 15 reads a[16].
    "j + 1 under j % 2 < 2": Case(I64_IN, LOADED_INDEX + _parity_load("%g", "%c2"), _i64(15)),
    # Without 0 <= j, an even j may be -2: a[-1].
    "j + 1 under j % 2 < 1, j maybe negative": Case(I64_IN, LOADED_INDEX + _parity_load("%below"), _i64(-2)),
}


@pytest.mark.parametrize("name", [n for n, c in CASES.items() if c.bad_input is not None or not c.runs])
def test_an_adversarial_kernel_is_refused(name: str) -> None:
    case = CASES[name]
    problems = check_bounds(_kernel(case.args, case.body), launch_of(case.sizes, [1]))
    assert problems, f"{name}: proved in bounds"
    assert all(p.message.startswith("kernel @k: ") for p in problems)


@pytest.mark.parametrize("name", [n for n, c in CASES.items() if c.bad_input is not None])
def test_the_reference_interpreter_finds_the_adversarial_access(name: str) -> None:
    """The kernel really is out of bounds on its input: not a false alarm."""
    case = CASES[name]
    assert case.bad_input is not None
    with pytest.raises(KernelRuntimeError, match="out of bounds"):
        run_kernel(_kernel(case.args, case.body), case.bad_input, case.sizes, [1])


@pytest.mark.parametrize("name", [n for n, c in CASES.items() if c.bad_input is None and c.runs])
def test_its_honest_twin_is_proved(name: str) -> None:
    case = CASES[name]
    problems = check_bounds(_kernel(case.args, case.body), launch_of(case.sizes, [1]))
    assert not problems, "\n".join(p.message for p in problems)


@pytest.mark.parametrize("device", ["llvm", "opencl"])
def test_every_compile_proves_its_generated_kernels(monkeypatch: pytest.MonkeyPatch, device: str) -> None:
    """Without ACCY_VERIFY_BOUNDS (the test suite sets it), `accy.compile`
    still refuses a generated kernel that stores past its buffer (an
    elementwise lowering made to store one element on), naming the store,
    rather than running it."""
    from xdsl.dialects import arith, memref
    from xdsl.dialects.builtin import IndexType

    from accy.passes.kernelization import kernelize

    if device == "opencl":
        from accy.runtime.opencl import opencl_devices

        if not opencl_devices():
            pytest.skip("no OpenCL device")
    monkeypatch.delenv("ACCY_VERIFY_BOUNDS", raising=False)
    real = kernelize.LOWERINGS["elementwise"]

    def off_by_one(kernel, plan, profile):  # type: ignore[no-untyped-def]
        lowered = real(kernel, plan, profile)
        store = next(op for op in lowered.func.walk() if isinstance(op, memref.StoreOp))
        one = arith.ConstantOp.from_int_and_width(1, IndexType())
        moved = arith.AddiOp(store.indices[0], one.result)
        block = store.parent_block()
        block.insert_op_before(one, store)
        block.insert_op_before(moved, store)
        store.operands[2] = moved.result
        return lowered

    monkeypatch.setitem(kernelize.LOWERINGS, "elementwise", off_by_one)
    # A shape no other test compiles, so that no cache holds it.
    text = (
        'func.func @main(%x: tensor<13xf32>) -> tensor<13xf32> {\n'
        '  %e = "accy.sin"(%x) : (tensor<13xf32>) -> tensor<13xf32>\n'
        "  func.return %e : tensor<13xf32>\n}\n"
    )
    # The index is the work-item's id, or a loop's variable where the device
    # (its CPU's vector width) gives a work-item several elements.
    with pytest.raises(Exception, match=r"'memref.store' stores to buffer #1 \(memref<13xf32>\) at index `(global_id\(x\)|i\d+) \+ 1`"):
        accy.compile(text, device=device)


def test_the_reference_interpreter_refuses_a_step_of_0() -> None:
    """It would run for ever; it says why instead."""
    case = CASES["a loop of step 0"]
    with pytest.raises(KernelRuntimeError, match="a step that is not positive never ends"):
        run_kernel(_kernel(case.args, case.body), [np.zeros(16, np.float32)], [1], [1])


# -- aligned vector accesses (accy_kernel's `aligned_access`) ----------------------
# A lowering's promise that an address is a multiple of the vector: the
# OpenCL C backend then reads through a vector pointer, which on a
# misaligned address is undefined, so the verifier must prove it.


def _aligned_loads(base: str, index: str, claim: int = 16) -> str:
    """For j in [0, 8): a 4-wide f32 load at `index` (of %j) from `base`, promising `claim` bytes."""
    return f"""
    %c4 = arith.constant 4 : index
    %c8 = arith.constant 8 : index
    %l = memref.alloca() : memref<64xf32, #gpu.address_space<workgroup>>
    %l16 = memref.alloca() {{alignment = 16 : i64}} : memref<64xf32, #gpu.address_space<workgroup>>
    scf.for %j = %c0 to %c8 step %c1 {{
      %s = arith.muli %j, %c4 : index
      %o = arith.addi %s, %c1 : index
      %i = arith.addi {index}, %c0 : index
      %v = vector.load {base}[%i] {{alignment = {claim} : i64}} : memref<64xf32{", #gpu.address_space<workgroup>" if base != "%a" else ""}>, vector<4xf32>
      vector.store %v, %l16[%s] {{alignment = 16 : i64}} : memref<64xf32, #gpu.address_space<workgroup>>, vector<4xf32>
    }}"""


ALIGNED = {
    # (base, index, claim, proved)
    "a buffer at 4j, 16 bytes": ("%a", "%s", 16, True),
    "a buffer at 4j + 1, 16 bytes": ("%a", "%o", 16, False),
    "a buffer at 4j, 32 bytes": ("%a", "%s", 32, False),
    "an aligned alloca at 4j": ("%l16", "%s", 16, True),
    "an alloca of no alignment at 4j": ("%l", "%s", 16, False),
    "an aligned alloca at 4j + 1": ("%l16", "%o", 16, False),
}


@pytest.mark.parametrize("name", list(ALIGNED))
def test_an_alignment_promise_is_proved_or_refused(name: str) -> None:
    base, index, claim, proved = ALIGNED[name]
    kernel = _kernel([("a", "memref<64xf32>")], _aligned_loads(base, index, claim))
    problems = check_bounds(kernel, launch_of([1], [1]))
    if proved:
        assert not problems, "\n".join(p.message for p in problems)
    else:
        assert len(problems) == 1 and f"promises {claim}-byte alignment" in problems[0].message, [p.message for p in problems]


def _ldmatrix(index: str, aligned: bool = True, element: str = "f16") -> str:
    """For j in [0, 8): accy_kernel.ldmatrix of the row at `index` (of %j) in
    a 64-element f16 tile (rows of 8), or a 32-element f32 one (rows of 4:
    the same 16 bytes, so the same indices of %j are in bounds and aligned)."""
    attr = " {alignment = 16 : i64}" if aligned else ""
    t = f"memref<{64 if element == 'f16' else 32}x{element}, #gpu.address_space<workgroup>>"
    pair = "vector<2xf16>" if element == "f16" else "f32"
    step = 8 if element == "f16" else 4
    return f"""
    %c8 = arith.constant 8 : index
    %cs = arith.constant {step} : index
    %c9 = arith.constant {step + 1} : index
    %l = memref.alloca(){attr} : {t}
    scf.for %j = %c0 to %c8 step %c1 {{
      %s = arith.muli %j, %cs : index
      %o = arith.muli %j, %c9 : index
      %i = arith.addi {index}, %c0 : index
      %r:4 = accy_kernel.ldmatrix %l[%i] : {t} -> {pair}, {pair}, {pair}, {pair}
    }}"""


@pytest.mark.parametrize(
    ("index", "aligned", "problem"),
    [
        ("%s", True, None),  # rows 0, 8, ..., 56: each 8 elements in, 16 bytes aligned
        ("%o", True, "promises 16-byte alignment"),  # 9j: misaligned, and j = 7's row ends at 71
        ("%s", False, "promises 16-byte alignment"),  # an alloca of no alignment
        ("%c9", True, "promises 16-byte alignment"),
    ],
)
@pytest.mark.parametrize("element", ["f16", "f32"])
def test_ldmatrix_rows_are_proved_in_bounds_and_aligned(index: str, aligned: bool, problem: str | None, element: str) -> None:
    kernel = _kernel([("a", "memref<64xf32>")], _ldmatrix(index, aligned, element))
    messages = [p.message for p in check_bounds(kernel, launch_of([1], [1]))]
    if problem is None:
        assert not messages, messages
    else:
        assert any(problem in m for m in messages), messages
    if index == "%o":
        assert any("accy_kernel.ldmatrix" in m and "alignment" not in m for m in messages), messages  # out of bounds too


def _async_copies(src: str, dst: str, valid: str) -> str:
    """For j in [0, 8): an async copy of 8 f16 (16 bytes) from %a (60 f16) at
    `src` into a 64-element 16-byte-aligned local tile at `dst`, where
    `valid` (of %s = 8j, %o = 9j), then a commit and a wait."""
    t = "memref<64xf16, #gpu.address_space<workgroup>>"
    return f"""
    %c8 = arith.constant 8 : index
    %c9 = arith.constant 9 : index
    %c56 = arith.constant 56 : index
    %l = memref.alloca() {{alignment = 16 : i64}} : {t}
    scf.for %j = %c0 to %c8 step %c1 {{
      %s = arith.muli %j, %c8 : index
      %o = arith.muli %j, %c9 : index
      %in = arith.cmpi ult, %s, %c56 : index
      %all = arith.cmpi ult, %j, %c9 : index
      accy_kernel.async_copy %a[{src}], %l[{dst}] if {valid} : memref<60xf16>, {t}
      accy_kernel.async_commit
      accy_kernel.async_wait {{pending = 0 : i64}}
    }}"""


@pytest.mark.parametrize(
    ("src", "dst", "valid", "problem"),
    [
        ("%s", "%s", "%in", None),  # source rows 0..48 where 8j < 56: 8 elements each in 60; zeros past
        ("%s", "%s", "%all", "loads from buffer #0 (memref<60xf16>) 8 elements"),  # j = 7 reads 56..63 of 60
        ("%s", "%o", "%in", "stores to local memory"),  # 9j: the destination past the end (and misaligned)
        ("%o", "%s", "%in", "promises 16-byte alignment"),  # 9j: the source misaligned
        ("%c9", "%s", "%in", "promises 16-byte alignment"),
    ],
)
def test_async_copies_are_proved_in_bounds_and_aligned(src: str, dst: str, valid: str, problem: str | None) -> None:
    """The destination always, the source where the copy is valid (else it
    writes zeros and reads nothing), both at 16-byte aligned addresses."""
    kernel = _kernel([("a", "memref<60xf16>")], _async_copies(src, dst, valid))
    messages = [p.message for p in check_bounds(kernel, launch_of([1], [1]))]
    if problem is None:
        assert not messages, messages
    else:
        assert messages and any(problem in m for m in messages), messages


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (  # into a global buffer
            "accy_kernel.async_copy %a[%c0], %b[%c0] if %t : memref<60xf16>, memref<60xf16>",
            "copies from a global buffer into workgroup (local) memory",
        ),
        (
            "%l = memref.alloca() : memref<8xf32, #gpu.address_space<workgroup>>\n"
            "    accy_kernel.async_copy %a[%c0], %l[%c0] if %t : memref<60xf16>, memref<8xf32, #gpu.address_space<workgroup>>",
            "copies between memrefs of one element type",
        ),
        ("accy_kernel.async_wait {pending = -1 : i64}", "waits with pending >= 0 groups"),
    ],
)
def test_async_copy_ops_verify_their_operands(body: str, message: str) -> None:
    with pytest.raises(Exception, match=re.escape(message)):
        _kernel([("a", "memref<60xf16>"), ("b", "memref<60xf16>")], "    %t = arith.constant true\n    " + body)


def test_the_kernel_interpreter_runs_async_copies() -> None:
    """Copies where valid, zeros where not (the reference semantics of
    accy_kernel.async_copy: done at once), through local memory back to a buffer."""
    t = "memref<64xf16, #gpu.address_space<workgroup>>"
    body = _async_copies("%s", "%s", "%in") + f"""
    scf.for %e = %c0 to %c64 step %c1 {{
      %x = memref.load %l[%e] : {t}
      memref.store %x, %out[%e] : memref<64xf16>
    }}"""
    body = body.replace("%c8 = arith.constant 8 : index", "%c8 = arith.constant 8 : index\n    %c64 = arith.constant 64 : index")
    a = np.arange(1, 61, dtype=np.float16)
    out = np.full(64, np.nan, np.float16)
    run_kernel(_kernel([("a", "memref<60xf16>"), ("out", "memref<64xf16>")], body), [a, out], [1], [1])
    np.testing.assert_array_equal(out, np.concatenate([a[:56], np.zeros(8, np.float16)]))


def _swizzled(index: str) -> str:
    """For row in [0, 16) and chunk in [0, 4): a 16-byte aligned vector of 8
    f16 at `index` in a local tile of 16 rows of 32 (an XOR-swizzled layout:
    chunk ^ (row / 2 % 4) within the row)."""
    t = "memref<512xf16, #gpu.address_space<workgroup>>"
    return f"""
    %c2 = arith.constant 2 : index
    %c4 = arith.constant 4 : index
    %c8 = arith.constant 8 : index
    %c16 = arith.constant 16 : index
    %c32 = arith.constant 32 : index
    %l = memref.alloca() {{alignment = 16 : i64}} : {t}
    %z = vector.broadcast %c0f : f16 to vector<8xf16>
    scf.for %row = %c0 to %c16 step %c1 {{
      scf.for %chunk = %c0 to %c4 step %c1 {{
        %h = arith.divsi %row, %c2 : index
        %s = arith.remsi %h, %c4 : index
        %x = arith.xori %chunk, %s : index
        %o = arith.ori %chunk, %c4 : index
        %base = arith.muli %row, %c32 : index
        %col = arith.muli %x, %c8 : index
        %wide = arith.muli %o, %c8 : index
        %odd = arith.addi %x, %c1 : index
        %e = arith.muli %chunk, %c8 : index
        %e4 = arith.muli %chunk, %c4 : index
        %sm = arith.muli %s, %c8 : index
        %xcol = arith.xori %e, %sm : index
        %xquarter = arith.xori %e4, %sm : index
        %c3 = arith.constant 3 : index
        %sh3 = arith.shli %s, %c3 : index
        %sh2 = arith.shli %s, %c2 : index
        %xshift = arith.xori %e, %sh3 : index
        %xshift2 = arith.xori %e, %sh2 : index
        %i = arith.addi %base, {index} : index
        vector.store %z, %l[%i] {{alignment = 16 : i64}} : {t}, vector<8xf16>
      }}
    }}""".replace("%z = vector.broadcast %c0f", "%c0f = arith.constant 0.0 : f16\n    %z = vector.broadcast %c0f")


@pytest.mark.parametrize(
    ("index", "problem"),
    [
        ("%col", None),  # (chunk ^ s) * 8 in [0, 24]: inside the row, 16-byte aligned
        ("%wide", "stores to local memory"),  # (chunk | 4) * 8 reaches 56: past row 15's end
        ("%odd", "promises 16-byte alignment"),  # (chunk ^ s) + 1: not a multiple of 8
        # The XOR of element columns: chunk * 8 ^ s * 8, both multiples of
        # 8 below 32, is at most 24 (the interval of its bits alone reaches 31).
        ("%xcol", None),
        ("%xquarter", "stores to local memory"),  # chunk * 4 ^ s * 8 reaches 28: an 8-wide store past the row
        ("%xshift", None),  # chunk * 8 ^ (s << 3): the shift's multiple of 8
        ("%xshift2", "promises 16-byte alignment"),  # chunk * 8 ^ (s << 2): a multiple of 4 only
    ],
)
def test_xor_swizzled_indices_are_proved_in_bounds_and_aligned(index: str, problem: str | None) -> None:
    kernel = _kernel([("a", "memref<60xf16>")], _swizzled(index))
    messages = [p.message for p in check_bounds(kernel, launch_of([1], [1]))]
    if problem is None:
        assert not messages, messages
    else:
        assert any(problem in m for m in messages), messages


@pytest.mark.parametrize("op", ["xori", "ori", "andi"])
def test_bitwise_index_ranges_are_sound(op: str) -> None:
    """For a in [0, A), b in [0, B) (random A, B): `a op b` is proved inside
    a buffer of the rule's bound + 1 elements (OR, XOR: all bits of the
    wider operand; AND: the smaller one) and refused in one of its true
    maximum's size, one short."""
    rng = np.random.default_rng(sum(map(ord, op)))
    fn = {"xori": np.bitwise_xor, "ori": np.bitwise_or, "andi": np.bitwise_and}[op]
    for _ in range(20):
        a_n, b_n = (int(x) for x in rng.integers(1, 41, 2))
        top = int(fn.outer(np.arange(a_n), np.arange(b_n)).max())
        bound = min(a_n, b_n) - 1 if op == "andi" else 2 ** (max(a_n, b_n) - 1).bit_length() - 1
        for size, proved in ((bound + 1, True), (top, False)):
            if size == 0:
                continue
            body = f"""
    %cA = arith.constant {a_n} : index
    %cB = arith.constant {b_n} : index
    scf.for %a = %c0 to %cA step %c1 {{
      scf.for %b = %c0 to %cB step %c1 {{
        %x = arith.{op} %a, %b : index
        %v = memref.load %m[%x] : memref<{size}xf32>
      }}
    }}"""
            problems = check_bounds(_kernel([("m", f"memref<{size}xf32>")], body), launch_of([1], [1]))
            assert bool(problems) != proved, (op, a_n, b_n, size, [p.message for p in problems])
