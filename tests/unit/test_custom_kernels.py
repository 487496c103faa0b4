"""Custom kernels (accy.kernel, docs/custom-kernels.md): the issue's example
as written; every scalar op, loops, conditionals, local memory with
barriers, vector loads and stores and a tiled matmul against numpy on random
inputs, odd sizes and poisoned outputs, on every device present (OpenCL,
LLVM, the reference interpreter of kernel IR); the bounds verifier
rejecting off-by-one kernels with a message naming the op, the index and its
range, and accepting guarded ones; `accy.kernel_call` inside a tensor
program; and every kernel of the program corpus proved in bounds."""

from __future__ import annotations

import subprocess
import sys
from functools import cache
from pathlib import Path

import numpy as np
import pytest

import accy
from accy.kernel import DeviceId, Kernel, KernelError, MemLayout, MemScope
from accy.passes.kernel_ir.bounds import check_bounds, launch_of, verify_module_bounds
from accy.runtime.device import Device

ROOT = Path(__file__).parents[1]
EXAMPLE = '''
import numpy as np
from accy.kernel import Kernel, MemScope, MemLayout, DeviceId

k = Kernel(DeviceId.AUTO)
n = 4
inp = k.define(np.float32, MemScope.GLOBAL, read_only=True, size=n)
gidx = k.group_index(0, n)
x = k.load(inp, gidx, MemLayout.SCALAR)
doubled = k.add(x, x)
out = k.define(np.float32, MemScope.GLOBAL, read_only=False, size=n)
k.store(out, doubled, gidx, MemLayout.SCALAR)
compiled = k.compile()
(result,) = compiled.forward([np.array([1, 2, 3, 4], np.float32)], [(n,)])
assert result.tolist() == [2.0, 4.0, 6.0, 8.0]
print(compiled.device_info())
'''


@cache
def _device(name: str) -> Device:
    """A poisoning device (outputs start as NaN / 0x5A bytes: an element no
    kernel writes shows), once per session."""
    if name == "llvm":
        from accy.runtime.llvm import LLVMDevice

        return LLVMDevice(poison=True)
    if name == "opencl":
        from accy.runtime.opencl import OpenCLDevice, opencl_devices

        if not opencl_devices():
            pytest.skip("no OpenCL device")
        return OpenCLDevice(poison=True)
    return accy.get_device(name)


DEVICES = ["llvm", "opencl", "reference"]


@pytest.fixture(params=DEVICES)
def device(request: pytest.FixtureRequest) -> Device:
    return _device(request.param)


def rng() -> np.random.Generator:
    return np.random.default_rng(12)


# --------------------------------------------------------------------------
# The example, as written
# --------------------------------------------------------------------------


def test_example_runs_as_written() -> None:
    run = subprocess.run([sys.executable, "-c", EXAMPLE], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip()  # device_info()


@pytest.mark.parametrize("name", ["llvm", "opencl", "reference", DeviceId.LLVM, DeviceId.REFERENCE])
def test_example_on_each_device(name: str) -> None:
    if "opencl" in str(name):
        _device("opencl")  # skips without OpenCL
    k = Kernel(name)
    n = 4
    inp = k.define(np.float32, MemScope.GLOBAL, read_only=True, size=n)
    gidx = k.group_index(0, n)
    x = k.load(inp, gidx, MemLayout.SCALAR)
    out = k.define(np.float32, MemScope.GLOBAL, read_only=False, size=n)
    k.store(out, k.add(x, x), gidx, MemLayout.SCALAR)
    compiled = k.compile()
    (result,) = compiled.forward([np.array([1, 2, 3, 4], np.float32)], [(n,)])
    assert result.tolist() == [2.0, 4.0, 6.0, 8.0]
    assert compiled.device_info().startswith(str(getattr(name, "value", name)))
    assert '"gpu.func"' in str(k) and "memref.load" in str(compiled)


# --------------------------------------------------------------------------
# Scalar ops against numpy
# --------------------------------------------------------------------------


def _map_kernel(device: Device, dtypes: list[type], out_dtype: type, n: int, body) -> Kernel:
    """out[i] = body(k, x0[i], x1[i], ...) for i < n, over a padded launch
    (work-groups of 8) with a guard."""
    k = Kernel(device)
    ins = [k.define(d, MemScope.GLOBAL, read_only=True, size=n) for d in dtypes]
    out = k.define(out_dtype, MemScope.GLOBAL, size=n)
    groups = -(-n // 8)
    i = k.group_index(0, groups) * 8 + k.local_index(0, 8)
    with k.if_(k.lt(i, n)):
        k.store(out, body(k, *[k.load(b, i) for b in ins]), i)
    return k


def _run(k: Kernel, inputs: list[np.ndarray], n: int) -> np.ndarray:
    (out,) = k.compile().forward(inputs, [(n,)])
    return out


FLOAT_UNARY = {
    "neg": np.negative, "abs": np.abs, "exp": np.exp, "log": np.log, "sqrt": np.sqrt,
    "rsqrt": lambda x: 1 / np.sqrt(x), "tanh": np.tanh, "sigmoid": lambda x: 1 / (1 + np.exp(-x)),
    "relu": lambda x: np.maximum(x, 0), "sin": np.sin, "cos": np.cos, "reciprocal": lambda x: 1 / x,
    "floor": np.floor, "ceil": np.ceil,
}  # fmt: skip
FLOAT_BINARY = {
    "add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide, "max": np.maximum,
    "min": np.minimum, "pow": np.power,
}  # fmt: skip
COMPARE = {"eq": np.equal, "ne": np.not_equal, "lt": np.less, "le": np.less_equal, "gt": np.greater, "ge": np.greater_equal}


@pytest.mark.parametrize("op", sorted(FLOAT_UNARY))
def test_float_unary_ops_match_numpy(device: Device, op: str) -> None:
    n = 37
    x = rng().uniform(0.1, 3.0, n).astype(np.float32) * (1 if op in ("log", "sqrt", "rsqrt") else rng().choice([-1, 1], n).astype(np.float32))
    got = _run(_map_kernel(device, [np.float32], np.float32, n, lambda k, a: getattr(k, op)(a)), [x], n)
    np.testing.assert_allclose(got, FLOAT_UNARY[op](x), rtol=2e-6, atol=1e-6)


def test_erf_and_gelu_match_the_reference(device: Device) -> None:
    from math import erf

    n = 19
    x = rng().standard_normal(n).astype(np.float32)
    want = np.array([erf(v) for v in x.astype(np.float64)], np.float32)
    got = _run(_map_kernel(device, [np.float32], np.float32, n, lambda k, a: k.erf(a)), [x], n)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    got = _run(_map_kernel(device, [np.float32], np.float32, n, lambda k, a: k.gelu(a)), [x], n)
    half = np.array([erf(v / np.sqrt(2)) for v in x.astype(np.float64)])
    np.testing.assert_allclose(got, 0.5 * x * (1 + half), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("op", sorted(FLOAT_BINARY))
def test_float_binary_ops_match_numpy(device: Device, op: str) -> None:
    n = 17
    a = rng().uniform(0.5, 2.0, n).astype(np.float32)
    b = rng().uniform(-2.0, 2.0, n).astype(np.float32)
    got = _run(_map_kernel(device, [np.float32, np.float32], np.float32, n, lambda k, x, y: getattr(k, op)(x, y)), [a, b], n)
    np.testing.assert_allclose(got, FLOAT_BINARY[op](a, b), rtol=2e-6, atol=1e-6)


@pytest.mark.parametrize("op", sorted(COMPARE))
def test_comparisons_and_select_match_numpy(device: Device, op: str) -> None:
    n = 23
    a = rng().integers(-3, 3, n).astype(np.float32)
    b = rng().integers(-3, 3, n).astype(np.float32)
    got = _run(_map_kernel(device, [np.float32, np.float32], np.bool_, n, lambda k, x, y: getattr(k, op)(x, y)), [a, b], n)
    np.testing.assert_array_equal(got, COMPARE[op](a, b))
    got = _run(
        _map_kernel(device, [np.float32, np.float32], np.float32, n, lambda k, x, y: k.select(k.cmp(x, y, op), x, y * 2.0)),
        [a, b], n,
    )
    np.testing.assert_array_equal(got, np.where(COMPARE[op](a, b), a, b * 2))


INT_BINARY = {
    "add": np.add, "sub": np.subtract, "mul": np.multiply, "max": np.maximum, "min": np.minimum,
    "and_": np.bitwise_and, "or_": np.bitwise_or, "xor": np.bitwise_xor,
    "div": lambda a, b: np.where(b == 0, 0, np.trunc(a / np.where(b == 0, 1, b))).astype(np.int32),
    "rem": lambda a, b: np.fmod(a, np.where(b == 0, 1, b)).astype(np.int32),
    "pow": lambda a, b: np.power(a, np.abs(b) % 4),
}  # fmt: skip


@pytest.mark.parametrize("op", sorted(INT_BINARY))
def test_integer_ops_match_numpy(device: Device, op: str) -> None:
    n = 29
    a = rng().integers(-50, 50, n).astype(np.int32)
    b = rng().integers(-6, 6, n).astype(np.int32)
    if op == "rem":
        b = np.where(b == 0, 1, b).astype(np.int32)  # C's remainder by 0 is undefined
    if op == "pow":
        b = (np.abs(b) % 4).astype(np.int32)
    got = _run(_map_kernel(device, [np.int32, np.int32], np.int32, n, lambda k, x, y: getattr(k, op)(x, y)), [a, b], n)
    np.testing.assert_array_equal(got, INT_BINARY[op](a, b))


def test_casts_not_and_integer_unary(device: Device) -> None:
    n = 21
    x = (rng().standard_normal(n) * 10).astype(np.float32)
    got = _run(_map_kernel(device, [np.float32], np.int32, n, lambda k, a: k.cast(a, np.int32)), [x], n)
    np.testing.assert_array_equal(got, np.trunc(x).astype(np.int32))
    i = rng().integers(-9, 9, n).astype(np.int32)
    got = _run(_map_kernel(device, [np.int32], np.float64, n, lambda k, a: k.cast(k.abs(a), np.float64)), [i], n)
    np.testing.assert_array_equal(got, np.abs(i).astype(np.float64))
    m = rng().integers(0, 2, n).astype(bool)
    got = _run(_map_kernel(device, [np.bool_], np.bool_, n, lambda k, a: k.not_(a)), [m], n)
    np.testing.assert_array_equal(got, ~m)
    got = _run(_map_kernel(device, [np.int32], np.int32, n, lambda k, a: k.neg(a) + 3), [i], n)
    np.testing.assert_array_equal(got, -i + 3)


# --------------------------------------------------------------------------
# Loops, conditionals, local memory, vectors
# --------------------------------------------------------------------------


def test_row_sums_with_a_loop_and_a_private_accumulator(device: Device) -> None:
    rows, cols = 13, 37
    k = Kernel(device, name="row_sums")
    x = k.define(np.float32, MemScope.GLOBAL, read_only=True, size=rows * cols)
    out = k.define(np.float32, MemScope.GLOBAL, size=rows)
    acc = k.define(np.float32, MemScope.PRIVATE, size=1)
    r = k.group_index(0, rows)
    k.store(acc, 0.0, 0)
    with k.loop(0, cols) as j:
        k.store(acc, k.load(acc, 0) + k.load(x, r * cols + j), 0)
    k.store(out, k.load(acc, 0), r)
    a = rng().standard_normal((rows, cols)).astype(np.float32)
    (got,) = k.compile().forward([a], [(rows,)])
    np.testing.assert_allclose(got, a.sum(axis=1), rtol=1e-5, atol=1e-5)


def test_if_else_and_a_padded_launch(device: Device) -> None:
    n = 45
    k = Kernel(device)
    x = k.define(np.float32, MemScope.GLOBAL, read_only=True, size=n)
    out = k.define(np.float32, MemScope.GLOBAL, size=n)
    k.launch([64], [16])
    i = k.global_index(0)
    with k.if_(k.lt(i, n)):
        v = k.load(x, i)
        with k.if_(k.gt(v, 0.0)):
            k.store(out, v * 2.0, i)
        with k.else_():
            k.store(out, -1.0, i)
    a = rng().standard_normal(n).astype(np.float32)
    (got,) = k.compile().forward([a], [(5, 9)])
    assert got.shape == (5, 9)
    np.testing.assert_array_equal(got.reshape(-1), np.where(a > 0, a * 2, -1))


def test_local_memory_and_barriers_reverse_each_work_group(device: Device) -> None:
    n, b = 48, 16
    k = Kernel(device, name="reverse_groups")
    inp = k.define(np.float32, MemScope.GLOBAL, read_only=True, size=n)
    out = k.define(np.float32, MemScope.GLOBAL, size=n)
    tile = k.define(np.float32, MemScope.LOCAL, size=b)
    g, t = k.group_index(0, n // b), k.local_index(0, b)
    k.store(tile, k.load(inp, g * b + t), t)
    k.barrier()
    k.store(out, k.load(tile, (b - 1) - t), g * b + t)
    x = rng().standard_normal(n).astype(np.float32)
    (got,) = k.compile().forward([x], [(n,)])
    np.testing.assert_array_equal(got, x.reshape(-1, b)[:, ::-1].reshape(-1))


def test_work_group_tree_reduction_normalises_each_group(device: Device) -> None:
    """Each work-group of 16 sums its elements in local memory (a tree of
    barriers), then every work-item divides its own element, which it
    loaded before the barriers, by the group's sum."""
    groups, b = 7, 16
    n = groups * b
    k = Kernel(device, name="normalise_groups")
    x = k.define(np.float32, MemScope.GLOBAL, read_only=True, size=n)
    out = k.define(np.float32, MemScope.GLOBAL, size=n)
    sums = k.define(np.float32, MemScope.GLOBAL, size=groups)
    tile = k.define(np.float32, MemScope.LOCAL, size=b)
    g, t = k.group_index(0, groups), k.local_index(0, b)
    mine = k.load(x, g * b + t)
    k.store(tile, mine, t)
    k.barrier()
    s = b // 2
    while s:
        with k.if_(k.lt(t, s)):
            k.store(tile, k.load(tile, t) + k.load(tile, t + s), t)
        k.barrier()
        s //= 2
    total = k.load(tile, 0)
    k.store(out, mine / total, g * b + t)
    with k.if_(k.eq(t, 0)):
        k.store(sums, total, g)
    a = rng().uniform(0.5, 1.5, n).astype(np.float32)
    got, got_sums = k.compile().forward([a], [(groups, b), (groups,)])
    want = a.reshape(groups, b).sum(axis=1)
    np.testing.assert_allclose(got_sums, want, rtol=1e-5)
    np.testing.assert_allclose(got, a.reshape(groups, b) / want[:, None], rtol=1e-5)


def tiled_matmul(device: Device | str, m: int, n: int, kk: int, t: int = 4) -> Kernel:
    """C = A @ B with t x t tiles of A and B staged in local memory."""
    k = Kernel(device, name="tiled_matmul")
    a = k.define(np.float32, MemScope.GLOBAL, read_only=True, size=m * kk)
    b = k.define(np.float32, MemScope.GLOBAL, read_only=True, size=kk * n)
    c = k.define(np.float32, MemScope.GLOBAL, size=m * n)
    ta = k.define(np.float32, MemScope.LOCAL, size=t * t)
    tb = k.define(np.float32, MemScope.LOCAL, size=t * t)
    acc = k.define(np.float32, MemScope.PRIVATE, size=1)
    gx, gy = k.group_index(0, n // t), k.group_index(1, m // t)
    lx, ly = k.local_index(0, t), k.local_index(1, t)
    row, col = gy * t + ly, gx * t + lx
    k.store(acc, 0.0, 0)
    with k.loop(0, kk, t) as k0:
        k.store(ta, k.load(a, row * kk + k0 + lx), ly * t + lx)
        k.store(tb, k.load(b, (k0 + ly) * n + col), ly * t + lx)
        k.barrier()
        with k.loop(0, t) as j:
            k.store(acc, k.load(acc, 0) + k.load(ta, ly * t + j) * k.load(tb, j * t + lx), 0)
        k.barrier()
    k.store(c, k.load(acc, 0), row * n + col)
    return k


def test_tiled_matmul_with_local_memory(device: Device) -> None:
    m, n, kk = 12, 8, 16
    a = rng().standard_normal((m, kk)).astype(np.float32)
    b = rng().standard_normal((kk, n)).astype(np.float32)
    (got,) = tiled_matmul(device, m, n, kk).compile().forward([a, b], [(m, n)])
    np.testing.assert_allclose(got, a @ b, rtol=1e-5, atol=1e-5)


def test_a_barrier_in_a_loop_whose_bounds_differ_per_work_item_is_refused_on_llvm() -> None:
    # On the LLVM device a work-group runs as loops between its barriers
    # (work_groups.py): a barrier loop must run alike in every work-item.
    k = Kernel("llvm")
    x = k.define(np.float32, MemScope.GLOBAL, read_only=True, size=8)
    out = k.define(np.float32, MemScope.GLOBAL, size=8)
    t = k.local_index(0, 8)
    with k.loop(0, t):
        k.barrier()
    k.store(out, k.load(x, t), t)
    with pytest.raises(KernelError, match="must be the same for every work-item"):
        k.compile()


def test_vector_loads_and_stores(device: Device) -> None:
    n, w = 40, 4
    k = Kernel(device, name="vec_axpy")
    x = k.define(np.float32, MemScope.GLOBAL, read_only=True, size=n)
    y = k.define(np.float32, MemScope.GLOBAL, read_only=True, size=n)
    out = k.define(np.float32, MemScope.GLOBAL, size=n)
    i = k.group_index(0, n // w) * w
    v = k.load(x, i, MemLayout.VECTOR, w) * 3.0 + k.load(y, i, MemLayout.VECTOR, w)
    k.store(out, v, i, MemLayout.VECTOR, w)
    a, b = (rng().standard_normal(n).astype(np.float32) for _ in range(2))
    (got,) = k.compile().forward([a, b], [(n,)])
    np.testing.assert_allclose(got, 3 * a + b, rtol=1e-6)


def test_elementwise_ops_on_vectors(device: Device) -> None:
    """Compares, selects, math and casts lane-wise on vectors (a scalar next
    to a vector is broadcast)."""
    n, w = 32, 8
    k = Kernel(device, name="vector_ops")
    x = k.define(np.float32, MemScope.GLOBAL, read_only=True, size=n)
    y = k.define(np.float32, MemScope.GLOBAL, size=n)
    z = k.define(np.int32, MemScope.GLOBAL, size=n)
    i = k.group_index(0, n // w) * w
    v = k.load(x, i, MemLayout.VECTOR, w)
    r = k.select(k.gt(v, 0.0), k.exp(v), k.neg(v) * k.load(x, 0))
    k.store(y, r, i, MemLayout.VECTOR, w)
    k.store(z, k.cast(v * 10.0, np.int32), i, MemLayout.VECTOR, w)
    a = rng().standard_normal(n).astype(np.float32)
    got_y, got_z = k.compile().forward([a], [(n,), (n,)])
    np.testing.assert_allclose(got_y, np.where(a > 0, np.exp(a), -a * a[0]), rtol=2e-6)
    np.testing.assert_array_equal(got_z, np.trunc(a * np.float32(10)).astype(np.int32))


def test_vector_reduction_over_a_strided_loop(device: Device) -> None:
    rows, cols, w = 5, 24, 8
    k = Kernel(device)
    x = k.define(np.float32, MemScope.GLOBAL, read_only=True, size=rows * cols)
    out = k.define(np.float32, MemScope.GLOBAL, size=rows)
    acc = k.define(np.float32, MemScope.PRIVATE, size=w)
    r = k.group_index(0, rows)
    k.store(acc, k.broadcast(k.constant(0.0, np.float32), w), 0, MemLayout.VECTOR, w)
    with k.loop(0, cols, w) as j:
        s = k.load(acc, 0, MemLayout.VECTOR, w) + k.load(x, r * cols + j, MemLayout.VECTOR, w)
        k.store(acc, s, 0, MemLayout.VECTOR, w)
    k.store(out, k.reduce(k.load(acc, 0, MemLayout.VECTOR, w), "add"), r)
    a = rng().standard_normal((rows, cols)).astype(np.float32)
    (got,) = k.compile().forward([a], [(rows,)])
    np.testing.assert_allclose(got, a.sum(axis=1), rtol=1e-5, atol=1e-5)


# --------------------------------------------------------------------------
# The bounds verifier
# --------------------------------------------------------------------------


def _copy_kernel(n: int, size: int, stop: int, offset: int = 0, guard: int | None = None) -> Kernel:
    """A work-item copies elements i + offset for i in [0, stop) of a buffer of `size`."""
    k = Kernel(DeviceId.REFERENCE)
    x = k.define(np.float32, MemScope.GLOBAL, read_only=True, size=size)
    out = k.define(np.float32, MemScope.GLOBAL, size=size)
    k.group_index(0, n)
    with k.loop(0, stop) as i:
        j = i + offset
        if guard is None:
            k.store(out, k.load(x, j), j)
        else:
            with k.if_(k.lt(j, guard)):
                k.store(out, k.load(x, j), j)
    return k


def test_an_off_by_one_loop_bound_is_rejected_with_the_index_and_its_range() -> None:
    with pytest.raises(KernelError) as e:
        _copy_kernel(1, 10, 11).compile()
    text = str(e.value)
    assert "memref.load" in text and "buffer #0" in text and "memref<10xf32>" in text
    assert "`i0`" in text and "[0, 10]" in text and "valid indices are [0, 9]" in text
    assert "test_custom_kernels.py" in text  # the line that built the load


def test_an_offset_by_one_is_rejected_and_a_guard_makes_it_safe() -> None:
    with pytest.raises(KernelError, match=r"`i0 \+ 1`.*\[1, 10\]"):
        _copy_kernel(1, 10, 10, offset=1).compile()
    k = _copy_kernel(1, 10, 10, offset=1, guard=10)
    x = np.arange(10, dtype=np.float32)
    (got,) = k.compile().forward([x], [(10,)])
    np.testing.assert_array_equal(got, np.r_[0, x[1:]])


@pytest.mark.parametrize("size,proved", [(2048, True), (2047, False)])
def test_a_strided_vector_loop_is_proved_by_its_multiples(size: int, proved: bool) -> None:
    """Work-item t reads 4 floats at t·4, t·4 + 1024, ... below 2048: the
    loop variable is a multiple of 4, so its last value is at most 2044 and
    the 4-wide loads end at 2047 (a buffer one shorter is refused)."""
    k = Kernel(DeviceId.REFERENCE)
    x = k.define(np.float32, MemScope.GLOBAL, read_only=True, size=size)
    out = k.define(np.float32, MemScope.GLOBAL, size=2048)
    t = k.local_index(0, 256)
    with k.loop(t * 4, 2048, 1024) as i:
        k.store(out, k.load(x, i, MemLayout.VECTOR, 4), i, MemLayout.VECTOR, 4)
    if proved:
        k.compile()
    else:
        with pytest.raises(KernelError, match=r"4 elements at index"):
            k.compile()


def test_ids_past_the_buffer_are_rejected_unless_guarded() -> None:
    for guarded in (False, True):
        k = Kernel(DeviceId.REFERENCE)
        x = k.define(np.float32, MemScope.GLOBAL, read_only=True, size=10)
        out = k.define(np.float32, MemScope.GLOBAL, size=10)
        k.launch([16], [8])
        i = k.global_index(0)
        if guarded:
            with k.if_(k.lt(i, 10)):
                k.store(out, k.load(x, i), i)
            k.compile()
        else:
            k.store(out, k.load(x, i), i)
            with pytest.raises(KernelError, match=r"global_id\(x\).*\[0, 15\].*global size 16, local size 8"):
                k.compile()


def test_a_strided_vector_access_at_the_edge() -> None:
    # Lanes i..i+3 for i = 0, 4, 8 of 10 elements: the last vector overruns.
    def kernel(size: int, guard: bool) -> Kernel:
        k = Kernel(DeviceId.REFERENCE)
        x = k.define(np.float32, MemScope.GLOBAL, read_only=True, size=size)
        out = k.define(np.float32, MemScope.GLOBAL, size=size)
        with k.loop(0, size, 4) as i:
            if guard:
                with k.if_(k.le(i + 4, size)):
                    k.store(out, k.load(x, i, MemLayout.VECTOR, 4), i, MemLayout.VECTOR, 4)
            else:
                k.store(out, k.load(x, i, MemLayout.VECTOR, 4), i, MemLayout.VECTOR, 4)
        return k

    with pytest.raises(KernelError, match=r"vector.load.* 4 elements at index `i0`, which ranges over \[0, 8\]; a 4-wide access needs its first index in \[0, 6\]"):
        kernel(10, guard=False).compile()
    kernel(12, guard=False).compile()
    x = np.arange(10, dtype=np.float32)
    (got,) = kernel(10, guard=True).compile().forward([x], [(10,)])
    np.testing.assert_array_equal(got[:8], x[:8])


def test_a_loaded_index_needs_a_guard() -> None:
    def kernel(guard: bool) -> Kernel:
        k = Kernel(DeviceId.REFERENCE, name="gather")
        idx = k.define(np.int32, MemScope.GLOBAL, read_only=True, size=6)
        x = k.define(np.float32, MemScope.GLOBAL, read_only=True, size=5)
        out = k.define(np.float32, MemScope.GLOBAL, size=6)
        i = k.group_index(0, 6)
        j = k.index(k.load(idx, i))
        if guard:
            with k.if_(k.and_(k.ge(j, 0), k.lt(j, 5))):
                k.store(out, k.load(x, j), i)
        else:
            k.store(out, k.load(x, j), i)
        return k

    with pytest.raises(KernelError, match=r"loads from buffer #1 \(memref<5xf32>\) at index `buffer #0\[group_id\(x\)\]`, which ranges over \[-2147483648, 2147483647\]"):
        kernel(False).compile()
    (got,) = kernel(True).compile().forward([np.array([4, 0, 2, 9, -1, 1], np.int32), np.arange(5, dtype=np.float32)], [(6,)])
    np.testing.assert_array_equal(got[[0, 1, 2, 5]], [4, 0, 2, 1])


def test_a_tiled_matmul_is_proved_and_an_off_by_one_tile_is_not() -> None:
    tiled_matmul(DeviceId.REFERENCE, 12, 8, 16).compile()
    f = tiled_matmul(DeviceId.REFERENCE, 12, 8, 16).kb.func
    assert not check_bounds(f, launch_of([8, 12], [4, 4]))
    problems = check_bounds(f, launch_of([12, 12], [4, 4]))  # a launch one tile too wide
    assert problems and all("tiled_matmul" in p.message for p in problems)


@pytest.mark.parametrize("path", sorted((ROOT / "programs").glob("*.mlir")), ids=lambda p: p.stem)
@pytest.mark.parametrize("profile", ["cpu", "gpu"])
def test_every_generated_kernel_of_the_corpus_is_proved_in_bounds(path: Path, profile: str) -> None:
    from accy.passes.kernelization.kernelize import KernelizePass
    from accy.passes.pass_manager import PassManager
    from accy.passes.target import SetTargetPass

    module = accy.parse_module(path)
    PassManager([SetTargetPass(profile=profile), KernelizePass(verify_bounds=True)]).run(module)
    verify_module_bounds(module)


def test_the_test_suite_verifies_every_kernel_kernelize_makes() -> None:
    import os

    assert os.environ.get("ACCY_VERIFY_BOUNDS") == "1"  # tests/conftest.py


# --------------------------------------------------------------------------
# forward's checks and the builder's errors
# --------------------------------------------------------------------------


def _doubler() -> Kernel:
    k = Kernel(DeviceId.REFERENCE)
    x = k.define(np.float32, MemScope.GLOBAL, read_only=True, size=6)
    out = k.define(np.float32, MemScope.GLOBAL, size=6)
    i = k.group_index(0, 6)
    k.store(out, k.load(x, i) * 2.0, i)
    return k


def test_forward_says_which_input_is_wrong() -> None:
    c = _doubler().compile()
    with pytest.raises(KernelError, match="takes 1 input"):
        c.forward([], [(6,)])
    with pytest.raises(KernelError, match="input #0 .* must be float32 .* got float64"):
        c.forward([np.zeros(6)], [(6,)])
    with pytest.raises(KernelError, match="input #0 .* must have 6 elements .* got 5"):
        c.forward([np.zeros(5, np.float32)], [(6,)])
    with pytest.raises(KernelError, match=r"output #0 .* shape \(7,\) has 7 elements; its buffer holds 6"):
        c.forward([np.zeros(6, np.float32)], [(7,)])
    (got,) = c.forward([np.arange(6, dtype=np.float32).reshape(2, 3)], [(3, 2)])
    np.testing.assert_array_equal(got, (np.arange(6) * 2).reshape(3, 2))
    (got,) = c.forward([np.arange(6, dtype=np.float32)], [6])
    assert got.shape == (6,)
    with pytest.raises(KernelError, match="must be a numpy array or an accy.Array of float32, got list"):
        c.forward([[0.0] * 6], [6])


def test_builder_errors_are_clear() -> None:
    k = Kernel(DeviceId.REFERENCE)
    x = k.define(np.float32, MemScope.GLOBAL, read_only=True, size=4)
    with pytest.raises(KernelError, match="read-only"):
        k.store(x, 1.0, k.group_index(0, 4))
    with pytest.raises(KernelError, match="has no output"):
        k.compile()
    out = k.define(np.int32, MemScope.GLOBAL, size=4)
    with pytest.raises(KernelError, match="takes i32, got f32"):
        k.store(out, k.load(x, 0), 0)
    with pytest.raises(KernelError, match="different types"):
        k.add(k.load(x, 0), k.constant(1, np.int32))
    with pytest.raises(KernelError, match="1.5 is no value of i32"):
        k.add(k.constant(1, np.int32), 1.5)
    with pytest.raises(KernelError, match="no OpenCL C keyword"):
        Kernel(DeviceId.REFERENCE, name="kernel")
    with pytest.raises(KernelError, match="dimension 0 was declared with 4, now 5"):
        k.group_index(0, 5)


def test_a_value_used_outside_its_loop_is_an_error() -> None:
    k = Kernel(DeviceId.REFERENCE)
    x = k.define(np.float32, MemScope.GLOBAL, read_only=True, size=4)
    out = k.define(np.float32, MemScope.GLOBAL, size=4)
    with k.loop(0, 4) as i:
        v = k.load(x, i)
    k.store(out, v, 0)
    with pytest.raises(KernelError, match="PRIVATE buffer"):
        k.compile()


def test_dead_code_is_removed_and_inputs_come_before_outputs() -> None:
    k = Kernel(DeviceId.REFERENCE)
    out = k.define(np.float32, MemScope.GLOBAL, size=4)
    x = k.define(np.float32, MemScope.GLOBAL, read_only=True, size=4)
    i = k.group_index(0, 4)
    k.exp(k.load(x, i))  # unused
    k.store(out, k.load(x, i), i)
    c = k.compile()
    text = str(c)
    assert "math.exp" not in text
    assert "(memref<4xf32>, memref<4xf32>)" in text
    # The input is argument 0 now: loads read %0, the store writes %1.
    assert "memref.load %0" in text and "memref.store %3, %1" in text or "%1[" in text
    (got,) = c.forward([np.arange(4, dtype=np.float32)], [(4,)])
    np.testing.assert_array_equal(got, np.arange(4))


# --------------------------------------------------------------------------
# accy.kernel_call
# --------------------------------------------------------------------------

CALL = """
func.func @main(%x: tensor<3x4xf32>) -> tensor<12xf32> {
  %e = "accy.exp"(%x) : (tensor<3x4xf32>) -> tensor<3x4xf32>
  %r = "accy.reshape"(%e) : (tensor<3x4xf32>) -> tensor<12xf32>
  %y = "accy.kernel_call"(%r) <{callee = @kernels::@twice, global_size = array<i64: 16>, local_size = array<i64: 8>}> : (tensor<12xf32>) -> tensor<12xf32>
  %z = "accy.add"(%y, %r) : (tensor<12xf32>, tensor<12xf32>) -> tensor<12xf32>
  func.return %z : tensor<12xf32>
}
"gpu.module"() <{sym_name = "kernels"}> ({
  "gpu.func"() <{function_type = (memref<12xf32>, memref<12xf32>) -> (), kernel}> ({
  ^bb0(%in: memref<12xf32>, %out: memref<12xf32>):
    %n = arith.constant 12 : index
    %i = "gpu.global_id"() <{dimension = #gpu<dim x>}> : () -> index
    %ok = arith.cmpi slt, %i, %n : index
    scf.if %ok {
      %v = memref.load %in[%i] : memref<12xf32>
      %d = arith.addf %v, %v : f32
      memref.store %d, %out[%i] : memref<12xf32>
    }
    "gpu.return"() : () -> ()
  }) {sym_name = "twice"} : () -> ()
}) : () -> ()
"""


def test_kernel_call_in_a_tensor_program(device: Device) -> None:
    exe = accy.compile(CALL, device=device)
    x = rng().standard_normal((3, 4)).astype(np.float32)
    (got,) = exe(x)
    np.testing.assert_allclose(got, 3 * np.exp(x).reshape(-1), rtol=1e-5)
    (want,) = exe.reference_outputs([x])
    np.testing.assert_allclose(got, want, rtol=1e-5)
    if device.name != "reference":
        assert exe.stats.kernels >= 2 and exe.stats.fallbacks == 0


def test_kernel_call_of_a_kernel_the_builder_wrote() -> None:
    module = _doubler().module()
    text = str(module)
    assert "accy.global_size = array<i64: 6>" in text
    program = text.rstrip().removesuffix("}") + """
  func.func @main(%x: tensor<2x3xf32>) -> tensor<6xf32> {
    %r = "accy.reshape"(%x) : (tensor<2x3xf32>) -> tensor<6xf32>
    %y = "accy.kernel_call"(%r) <{callee = @kernels::@custom_kernel}> : (tensor<6xf32>) -> tensor<6xf32>
    func.return %y : tensor<6xf32>
  }
}
"""
    x = rng().standard_normal((2, 3)).astype(np.float32)
    for name in ("llvm", "reference"):
        (got,) = accy.compile(program, device=_device(name))(x)
        np.testing.assert_allclose(got, 2 * x.reshape(-1))


def test_kernel_call_types_must_match_the_buffers() -> None:
    bad = CALL.replace("memref<12xf32>, memref<12xf32>) -> ()", "memref<12xf32>, memref<12xi32>) -> ()")
    with pytest.raises(Exception, match=r"result #0 is tensor<12xf32>, but buffer #1 of @kernels::@twice is memref<12xi32>"):
        accy.parse_module(bad)


def test_an_out_of_bounds_callee_is_refused() -> None:
    bad = CALL.replace("global_size = array<i64: 16>", "global_size = array<i64: 16>").replace(
        "%ok = arith.cmpi slt, %i, %n : index", "%ok = arith.cmpi sle, %i, %n : index"
    )
    with pytest.raises(ValueError, match=r"kernel @twice: 'memref.load'.*\[0, 12\]"):
        accy.compile(bad, device=_device("llvm"))


def test_accy_run_check_on_a_kernel_call(tmp_path: Path) -> None:
    path = tmp_path / "call.mlir"
    path.write_text(CALL)
    run = subprocess.run(
        [sys.executable, "-m", "accy.cli.run", str(path), "--device", "llvm", "--check"], capture_output=True, text=True, timeout=300
    )
    assert run.returncode == 0, run.stderr


# --------------------------------------------------------------------------
# Debugging: ACCY_DEBUG, ACCY_DUMP_DIR, ACCY_OVERRIDE_DIR
# --------------------------------------------------------------------------

SQUARE_OR_DOUBLE = EXAMPLE.replace("DeviceId.AUTO", "{device!r}").replace("assert result.tolist() == [2.0, 4.0, 6.0, 8.0]\n", "print(result.tolist())\n")


def _run_example(device: str, env: dict[str, str], tmp_path: Path) -> subprocess.CompletedProcess[str]:
    import os

    full = {**os.environ, "ACCY_CACHE_DIR": str(tmp_path / "cache"), **env}
    return subprocess.run(
        [sys.executable, "-c", SQUARE_OR_DOUBLE.format(device=device)], capture_output=True, text=True, timeout=300, env=full
    )


@pytest.mark.parametrize("name,ext,edit", [("llvm", "ll", ("fadd float", "fmul float")), ("opencl", "cl", ("v1 + v1", "v1 * v1"))])
def test_dump_edit_and_override_a_kernel_source(tmp_path: Path, name: str, ext: str, edit: tuple[str, str]) -> None:
    if name == "opencl":
        _device("opencl")  # skips without OpenCL
    dump, override = tmp_path / "dump", tmp_path / "override"
    run = _run_example(name, {"ACCY_DEBUG": "2", "ACCY_DUMP_DIR": str(dump)}, tmp_path)
    assert run.returncode == 0, run.stderr
    assert "[2.0, 4.0, 6.0, 8.0]" in run.stdout
    # ACCY_DEBUG=2: the kernel IR, the generated source and each launch.
    assert '"gpu.func"' in run.stderr and "custom_kernel" in run.stderr and "accy: launch @custom_kernel" in run.stderr
    (dumped,) = dump.glob(f"*.{ext}")
    assert edit[0] in dumped.read_text()
    override.mkdir()
    (override / dumped.name).write_text(dumped.read_text().replace(*edit))
    run = _run_example(name, {"ACCY_OVERRIDE_DIR": str(override)}, tmp_path)
    assert run.returncode == 0, run.stderr
    assert "[1.0, 4.0, 9.0, 16.0]" in run.stdout  # x * x now
    assert "AccyOverrideWarning" in run.stderr and dumped.name in run.stderr


def test_kernelize_refuses_a_generated_kernel_that_is_out_of_bounds(monkeypatch: pytest.MonkeyPatch) -> None:
    """The verifier the test suite turns on (ACCY_VERIFY_BOUNDS) stands
    between every lowering and the module: an elementwise lowering made to
    store one element past its index is refused, naming the store."""
    from xdsl.dialects import arith, memref
    from xdsl.dialects.builtin import IndexType

    from accy.passes.kernelization import kernelize
    from accy.passes.pass_manager import PassFailure, PassManager

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
    module = accy.parse_module(
        'func.func @main(%x: tensor<7xf32>) -> tensor<7xf32> {\n'
        '  %e = "accy.exp"(%x) : (tensor<7xf32>) -> tensor<7xf32>\n'
        "  func.return %e : tensor<7xf32>\n}\n"
    )
    with pytest.raises(PassFailure, match=r"kernel @main_k0_elementwise: 'memref.store' stores to buffer #1 \(memref<7xf32>\) at index `global_id\(x\) \+ 1`, which ranges over \[1, 7\]"):
        PassManager([kernelize.KernelizePass()]).run(module)


def test_the_llvm_work_group_form_is_proved_in_bounds_too() -> None:
    """work_groups.py keeps every access of the kernel it rewrites in bounds:
    private memory per work-item, values kept across barriers, ids from the
    work-item loop (the tiled matmul: a 2-D launch, barriers in a loop)."""
    from accy.passes.kernel_ir.work_groups import needs_serializing, serialize_work_groups

    k = tiled_matmul(DeviceId.REFERENCE, 12, 8, 16)
    k.compile()
    launch = launch_of([8, 12], [4, 4])
    assert needs_serializing(k.kb.func, launch)
    serial = serialize_work_groups(k.kb.func, launch, "serial")
    assert not any(op.name == "gpu.barrier" for op in serial.walk())
    assert not check_bounds(serial, launch_of([launch.grid[0] * launch.grid[1]], [1]))
