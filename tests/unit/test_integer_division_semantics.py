"""Integer division and remainder are defined on every input, alike on every
device (docs/op-contract.md, docs/kernel-ir.md): x / 0 = 0, x % 0 = x,
INT_MIN / -1 = INT_MIN, INT_MIN % -1 = 0, unsigned x / 0 = 0 and x % 0 = x.
LLVM leaves these undefined and x86 traps (SIGFPE killed the process), so
the LLVM device runs in a subprocess here: a signal is a failure, not a
dead test run. Kernel IR `arith.divsi/remsi/divui/remui` (scalar and
vector, i8 to i64 and index) in an `accy.kernel_call`, and `div` / `rem`
of custom kernels, on the reference, LLVM and OpenCL devices."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

import accy

TYPES = ["i8", "i16", "i32", "i64"]


def _pairs(bits: int) -> tuple[list[int], list[int]]:
    """Dividends and divisors: the undefined-in-C cases, signs, and random ones."""
    lo, hi = -(2 ** (bits - 1)), 2 ** (bits - 1) - 1
    a = [lo, lo, lo, 7, -7, 0, hi, hi, -1, lo, 5, -5, 7, -7, 1]
    b = [-1, 0, 1, 0, 0, 0, -1, 0, 0, 2, 3, 3, -2, -2, lo]
    rng = np.random.default_rng(bits)
    a += [int(v) for v in rng.integers(lo, hi, 17, endpoint=True)]
    b += [int(v) for v in rng.integers(-3, 3, 17, endpoint=True)]
    return a, b


def _expected(a: list[int], b: list[int], bits: int) -> dict[str, list[int]]:
    """The contract's results, from Python's exact integers."""
    def wrap(x: int) -> int:
        return (x + 2 ** (bits - 1)) % 2**bits - 2 ** (bits - 1)

    def tdiv(x: int, y: int) -> int:
        return 0 if y == 0 else wrap(abs(x) // abs(y) * (1 if (x < 0) == (y < 0) else -1))

    def unsigned(x: int) -> int:
        return x % 2**bits

    out: dict[str, list[int]] = {"divsi": [], "remsi": [], "divui": [], "remui": []}
    for x, y in zip(a, b, strict=True):
        q = tdiv(x, y)
        out["divsi"].append(q)
        out["remsi"].append(wrap(x - q * y))
        ux, uy = unsigned(x), unsigned(y)
        out["divui"].append(wrap(0 if uy == 0 else ux // uy))
        out["remui"].append(wrap(ux if uy == 0 else ux % uy))
    return out


def _program(t: str, n: int, width: int, index: bool) -> str:
    """`main(a, b) -> (a divsi b, a remsi b, a divui b, a remui b)` through a
    kernel over `width`-lane vectors (1: scalars); with `index`, the i64
    values are cast to index and divided as indices (signed ops only)."""
    ops = ["divsi", "remsi"] if index else ["divsi", "remsi", "divui", "remui"]
    mem = f"memref<{n}x{t}>"
    vt = f"vector<{width}x{t}>" if width > 1 else t
    load = (lambda buf: f"vector.load %{buf}[%at] : {mem}, {vt}") if width > 1 else (lambda buf: f"memref.load %{buf}[%at] : {mem}")
    store = (lambda v, buf: f"vector.store {v}, %{buf}[%at] : {mem}, {vt}") if width > 1 else (lambda v, buf: f"memref.store {v}, %{buf}[%at] : {mem}")
    body = [
        '%i = "gpu.global_id"() <{dimension = #gpu<dim x>}> : () -> index',
        f"%w = arith.constant {width} : index",
        "%at = arith.muli %i, %w : index",
        f"%x = {load('a')}",
        f"%y = {load('b')}",
    ]
    if index:
        body += ["%xi = arith.index_cast %x : i64 to index", "%yi = arith.index_cast %y : i64 to index"]
    for op in ops:
        if index:
            body += [f"%{op}i = arith.{op} %xi, %yi : index", f"%{op} = arith.index_cast %{op}i : index to i64"]
        else:
            body.append(f"%{op} = arith.{op} %x, %y : {vt}")
        body.append(store(f"%{op}", f"o_{op}"))
    tensor = f"tensor<{n}x{t}>"
    outs = ", ".join([tensor] * len(ops))
    args = ", ".join(f"%o_{op}: {mem}" for op in ops)
    return f'''
func.func @main(%a: {tensor}, %b: {tensor}) -> ({outs}) {{
  %r:{len(ops)} = "accy.kernel_call"(%a, %b) <{{callee = @kernels::@divide, global_size = array<i64: {n // width}>,
      local_size = array<i64: 1>}}> : ({tensor}, {tensor}) -> ({outs})
  func.return {", ".join(f"%r#{k}" for k in range(len(ops)))} : {outs}
}}
"gpu.module"() <{{sym_name = "kernels"}}> ({{
  "gpu.func"() <{{function_type = ({mem}, {mem}, {", ".join([mem] * len(ops))}) -> (), kernel}}> ({{
  ^bb0(%a: {mem}, %b: {mem}, {args}):
    {chr(10).join("    " + line for line in body).strip()}
    "gpu.return"() : () -> ()
  }}) {{sym_name = "divide"}} : () -> ()
}}) : () -> ()
'''


CASES = [(t, w, False) for t in TYPES for w in (1, 4)] + [("i64", 1, True)]


def _run_all(device: str) -> dict[str, dict[str, list[int]]]:
    """Every case on `device`: results by case and op."""
    out = {}
    for t, width, index in CASES:
        bits = int(t[1:])
        a, b = _pairs(bits)
        n = len(a) // 4 * 4
        dt = np.dtype(f"int{bits}")
        exe = accy.compile(_program(t, n, width, index), device=device)
        results = exe(np.array(a[:n], dt), np.array(b[:n], dt))
        ops = ["divsi", "remsi"] if index else ["divsi", "remsi", "divui", "remui"]
        out[f"{t}x{width}{'-index' if index else ''}"] = {op: [int(v) for v in r] for op, r in zip(ops, results, strict=True)}
    return out


def _check(results: dict[str, dict[str, list[int]]]) -> None:
    for t, width, index in CASES:
        bits = int(t[1:])
        a, b = _pairs(bits)
        n = len(a) // 4 * 4
        want = _expected(a[:n], b[:n], bits)
        got = results[f"{t}x{width}{'-index' if index else ''}"]
        for op, values in got.items():
            assert values == want[op], f"{op} on {t} x{width}{' as index' if index else ''}: a={a[:n]} b={b[:n]}"


def test_the_reference_device_divides_as_the_contract_says() -> None:
    _check(_run_all("reference"))


def test_opencl_divides_as_the_contract_says() -> None:
    from accy.runtime.opencl import opencl_devices

    if not opencl_devices():
        pytest.skip("no OpenCL device")
    _check(_run_all("opencl"))


def test_llvm_divides_as_the_contract_says_without_a_signal() -> None:
    code = (
        "import json, sys; sys.path.insert(0, 'tests/unit'); "
        "from test_integer_division_semantics import _run_all; print(json.dumps(_run_all('llvm')))"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, f"the LLVM device died (exit {proc.returncode}): {proc.stderr[-2000:]}"
    _check(json.loads(proc.stdout.strip().splitlines()[-1]))


_CUSTOM = '''
import json, sys
import numpy as np
from accy.kernel import Kernel, MemScope

def run(device, dtype):
    """A custom kernel's integer div and rem, and index div and rem of the
    same loaded values, per element."""
    a, b = ARGS[dtype]
    n = len(a)
    k = Kernel(device, name="divide")
    x = k.define(dtype, MemScope.GLOBAL, read_only=True, size=n)
    y = k.define(dtype, MemScope.GLOBAL, read_only=True, size=n)
    outs = [k.define(dtype, MemScope.GLOBAL, size=n) for _ in range(4)]
    i = k.group_index(0, n)
    xv, yv = k.load(x, i), k.load(y, i)
    xi, yi = k.index(xv), k.index(yv)
    for out, v in zip(outs, [k.div(xv, yv), k.rem(xv, yv), k.cast(xi / yi, dtype), k.cast(xi % yi, dtype)]):
        k.store(out, v, i)
    res = k.compile().forward([np.array(a, dtype), np.array(b, dtype)], [n] * 4)
    return [[int(v) for v in r] for r in res]
'''


@pytest.mark.parametrize("device", ["reference", "llvm", "opencl"])
def test_custom_kernel_div_and_rem_of_loaded_zeros(device: str) -> None:
    """`k.div`, `k.rem` and index `/ %` (the issue: an index div by a loaded
    0 killed the process on LLVM), in a subprocess."""
    if device == "opencl":
        from accy.runtime.opencl import opencl_devices

        if not opencl_devices():
            pytest.skip("no OpenCL device")
    args = {}
    for t in TYPES:
        bits = int(t[1:])
        a, b = _pairs(bits)
        args[f"int{bits}"] = (a, b)
    code = _CUSTOM + f"ARGS = {json.dumps(args)}\nprint(json.dumps({{t: run({device!r}, t) for t in ARGS}}))"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, f"the {device} device died (exit {proc.returncode}): {proc.stderr[-2000:]}"
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    for t in TYPES:
        bits = int(t[1:])
        a, b = _pairs(bits)
        want = _expected(a, b, bits)
        # The index forms divide the values sign-extended to 64 bits, then truncate.
        wide = _expected(a, b, 64)
        wrap = [(v + 2 ** (bits - 1)) % 2**bits - 2 ** (bits - 1) for v in wide["divsi"]]
        div, rem, idiv, irem = got[f"int{bits}"]
        assert div == want["divsi"], f"div on i{bits}"
        assert rem == want["remsi"], f"rem on i{bits}"
        assert idiv == wrap, f"index div on i{bits}"
        assert irem == [(v + 2 ** (bits - 1)) % 2**bits - 2 ** (bits - 1) for v in wide["remsi"]], f"index rem on i{bits}"
