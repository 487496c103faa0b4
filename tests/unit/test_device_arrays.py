"""Device arrays and device memory (accy/runtime/array.py, the pools of
host_memory.py / memory.py), on real devices: PoCL through pyopencl, the
LLVM device and the reference device, each made fresh (its own pool) and
poisoning its allocated buffers, so an element no kernel wrote shows up.

Round trips of every dtype and odd sizes; two executables chained through an
`accy.Array` with no host transfer (the `uploads` / `downloads` stats); an
Array of another device copied through the host; results aliasing inputs or
returned twice; argument and dtype errors; the memory limit's error; buffers
back in the pool after `del` (arrays and an executable's constants); DLPack
on CPU devices; custom kernels' `forward` on Arrays."""

from __future__ import annotations

import gc

import ml_dtypes
import numpy as np
import pytest
from templates import EXP_MUL_SUM

import accy
from accy.runtime.disk_cache import DiskCache
from accy.runtime.reference_device import ReferenceDevice


def _opencl():
    pytest.importorskip("pyopencl")
    from accy.runtime import opencl as ocl

    if not ocl.opencl_devices():
        pytest.skip("no OpenCL device")
    return ocl.OpenCLDevice(poison=True)


def _llvm(tmp_path_factory: pytest.TempPathFactory):
    pytest.importorskip("llvmlite.binding")
    from accy.runtime import llvm as llvm_runtime

    cache = DiskCache(llvm_runtime.OBJECT_CACHE_NAMESPACE, tmp_path_factory.mktemp("accy-cache"))
    return llvm_runtime.LLVMDevice(poison=True, object_cache=cache)


@pytest.fixture(scope="module", params=["opencl", "llvm", "reference"])
def device(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory):
    """A fresh device of each kind (its own pool), poisoning its buffers."""
    if request.param == "opencl":
        return _opencl()
    if request.param == "llvm":
        return _llvm(tmp_path_factory)
    return ReferenceDevice()


@pytest.fixture(scope="module", params=["opencl", "llvm"])
def kernel_device(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory):
    """A device that runs kernels (the reference device runs none)."""
    return _opencl() if request.param == "opencl" else _llvm(tmp_path_factory)


def _held(device, holder: str = "array") -> int:
    """Bytes `holder` holds, once every dropped Array is gone."""
    gc.collect()
    return device.memory_report().held[holder]


SIZES = [(), (0,), (1,), (3,), (17,), (1023,), (3, 17), (2, 0, 5)]
DTYPES = [np.float32, np.float64, np.int32, np.bool_, np.float16, ml_dtypes.bfloat16, np.uint8]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", SIZES)
def test_device_put_round_trips(device, shape: tuple[int, ...], dtype: type) -> None:
    rng = np.random.default_rng(len(shape))
    host = (rng.standard_normal(shape) > 0 if dtype is np.bool_ else rng.standard_normal(shape) * 100).astype(dtype)
    a = accy.device_put(host, device)
    assert (a.shape, a.dtype, a.device, a.ndim, a.size) == (host.shape, host.dtype, device, host.ndim, host.size)
    assert a.nbytes == host.nbytes
    for back in (a.numpy(), np.asarray(a), np.array(a)):
        assert back.shape == shape and back.dtype == host.dtype
        np.testing.assert_array_equal(back, host)
    np.testing.assert_array_equal(np.asarray(a, dtype=np.float64), host.astype(np.float64))
    assert accy.device_put(a, device) is a  # already there
    r = repr(a)
    assert r.startswith("accy.Array(") and f"shape={shape}" in r and f"device='{device.name}'" in r


def test_bf16_arrays_feed_a_kernel_and_come_back_rounded_once(device) -> None:
    """bfloat16 has no numpy kind ('V'): device_put once refused it, so a
    bf16 program could not run on device arrays (the GPU bench's bf16 row)."""
    t = "tensor<37x5xbf16>"
    exe = accy.compile(
        f'func.func @main(%a: {t}, %b: {t}) -> {t} {{\n  %s = "accy.add"(%a, %b) : ({t}, {t}) -> {t}\n  func.return %s : {t}\n}}',
        device=device,
    )
    rng = np.random.default_rng(5)
    a, b = (rng.standard_normal((37, 5)).astype(ml_dtypes.bfloat16) for _ in range(2))
    (r,) = exe(accy.device_put(a, device), accy.device_put(b, device), to_host=False)
    want = (a.astype(np.float32) + b.astype(np.float32)).astype(ml_dtypes.bfloat16)
    got = r.numpy()
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got.view(np.uint16), want.view(np.uint16))


def test_device_put_of_a_non_contiguous_array_and_a_bad_dtype(device) -> None:
    host = np.arange(60, dtype=np.float32).reshape(6, 10)[::2, 1::3]
    np.testing.assert_array_equal(accy.device_put(host, device).numpy(), host)
    with pytest.raises(TypeError, match=r"numeric or bool arrays, got an array of <U"):
        accy.device_put(np.array(["a"]), device)


def test_results_stay_on_the_device_and_chain_without_host_transfers(device) -> None:
    # r=5, c=19: odd sizes, a reduction with a ragged tail.
    exe = accy.compile(EXP_MUL_SUM.format(r=5, c=19), device=device)
    x, y = exe.random_inputs(3)
    s, m = exe(x, y, to_host=False)
    assert isinstance(s, accy.Array) and isinstance(m, accy.Array)
    assert (s.shape, m.shape, s.device, m.dtype) == ((5,), (5, 19), device, np.float32)
    assert exe.stats.downloads == 0
    expected = exe.reference_outputs([x, y])
    for got, want in zip((s, m), expected, strict=True):
        np.testing.assert_allclose(got.numpy(), want, rtol=1e-5, atol=1e-6)
    # m feeds a second call as its `y`, and x is put on the device first:
    # nothing crosses between host and device.
    xa = accy.device_put(x, device)
    s2, m2 = exe(xa, m, to_host=False)
    assert (exe.stats.uploads, exe.stats.downloads, exe.stats.upload_bytes, exe.stats.download_bytes) == (0, 0, 0, 0)
    if hasattr(exe.program, "in_place"):
        assert exe.program.in_place == [True, True]  # the Arrays' own buffers were the kernels' arguments
    expected2 = exe.reference_outputs([x, m.numpy()])
    for got, want in zip((s2, m2), expected2, strict=True):
        np.testing.assert_allclose(got.numpy(), want, rtol=1e-5, atol=1e-6)
    # Back to the host, counted when it is a copy.
    exe(xa, m)
    if device.name.startswith("opencl"):
        assert exe.stats.downloads == 2 and exe.stats.download_bytes == s.nbytes + m.nbytes
    assert exe.compare_with_reference([xa, m], exe(xa, m, to_host=False))[0].ok


def test_a_long_chain_of_calls_on_arrays_matches_numpy(device) -> None:
    """30 calls on Arrays, each result the next call's input (asynchronous
    on OpenCL: no wait between them), read once at the end; then a numpy
    input changed right after a call does not change that call's result
    (calls with host inputs complete before they return)."""
    exe = accy.compile(EXP_MUL_SUM.format(r=7, c=33), device=device)
    x, y = exe.random_inputs(5)
    x = x * np.float32(0.1)
    xa = accy.device_put(x, device)
    m = accy.device_put(y, device)
    want = y.astype(np.float64)
    for _ in range(30):
        _, m = exe(xa, m, to_host=False)
        want = np.exp(x.astype(np.float64)) * want
    assert m.block_until_ready() is m
    np.testing.assert_allclose(m.numpy(), want, rtol=1e-4)
    host = y.copy()
    _, m1 = exe(xa, host, to_host=False)
    host[...] = np.float32(1e9)
    np.testing.assert_allclose(m1.numpy(), np.exp(x) * y, rtol=1e-5)


def test_executable_option_to_host(device) -> None:
    exe = accy.compile(EXP_MUL_SUM.format(r=3, c=4), device=device, to_host=False)
    x, y = exe.random_inputs(0)
    assert all(isinstance(r, accy.Array) for r in exe(x, y))
    assert all(isinstance(r, np.ndarray) for r in exe(x, y, to_host=True))


def test_an_array_of_another_device_is_copied_through_the_host(device, tmp_path_factory) -> None:
    other = ReferenceDevice() if device.name != "reference" else _llvm(tmp_path_factory)
    exe = accy.compile(EXP_MUL_SUM.format(r=4, c=7), device=device)
    x, y = exe.random_inputs(1)
    xo = accy.device_put(x, other)
    (s, m) = exe(xo, y)
    assert exe.stats.downloads >= 1 and exe.stats.download_bytes >= x.nbytes  # xo read to the host
    expected = exe.reference_outputs([x, y])
    np.testing.assert_allclose(s, expected[0], rtol=1e-5, atol=1e-6)
    moved = accy.device_put(xo, device)
    assert moved.device is device and moved is not xo
    np.testing.assert_array_equal(moved.numpy(), x)


ALIASES = """
func.func @main(%x: tensor<3x5xf32>) -> (tensor<3x5xf32>, tensor<3x5xf32>, tensor<3x5xf32>, tensor<3x5xf32>) {
  %c = "accy.constant"() <{value = dense<[[1.0, 2.0, 3.0, 4.0, 5.0], [6.0, 7.0, 8.0, 9.0, 10.0], [0.5, 0.5, 0.5, 0.5, 7.0]]> : tensor<3x5xf32>}> : () -> tensor<3x5xf32>
  %y = "accy.add"(%x, %c) : (tensor<3x5xf32>, tensor<3x5xf32>) -> tensor<3x5xf32>
  func.return %y, %y, %x, %c : tensor<3x5xf32>, tensor<3x5xf32>, tensor<3x5xf32>, tensor<3x5xf32>
}
"""


def test_results_that_alias_inputs_constants_or_each_other_are_arrays_of_their_own(device) -> None:
    exe = accy.compile(ALIASES, device=device)
    x = np.arange(15, dtype=np.float32).reshape(3, 5)
    xa = accy.device_put(x, device)
    results = exe(xa, to_host=False)
    expected = exe.reference_outputs([x])
    assert len({id(r.buffer) for r in (*results, xa)}) == 5  # every result owns its buffer
    for got, want in zip(results, expected, strict=True):
        np.testing.assert_array_equal(got.numpy(), want)
    held = _held(device)
    del results, got
    assert _held(device) == held - 4 * x.nbytes


def test_poisoned_buffers_reused_from_dropped_arrays_are_all_written(kernel_device) -> None:
    device = kernel_device
    assert device.poison
    exe = accy.compile(EXP_MUL_SUM.format(r=17, c=33), device=device)
    x, y = exe.random_inputs(7)
    expected = exe.reference_outputs([x, y])
    for _ in range(3):  # the later calls take the buffers the dropped Arrays gave back
        s, m = exe(x, y, to_host=False)
        # np.array copies: no view of the buffers outlives the Arrays, which give them back.
        assert not np.isnan(np.array(m)).any() and not np.isnan(np.array(s)).any()
        np.testing.assert_allclose(np.array(m), expected[1], rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(np.array(s), expected[0], rtol=1e-4, atol=1e-5)
        del s, m
        gc.collect()
    assert device.pool.stats.reused > 0


def test_array_arguments_are_checked_against_the_signature(device) -> None:
    exe = accy.compile(EXP_MUL_SUM.format(r=3, c=4), device=device)
    x, y = exe.random_inputs(0)
    with pytest.raises(ValueError, match=r"^argument #1 of @main expects tensor<3x4xf32> \(float32, shape \(3, 4\)\), "
                       r"got an accy.Array of float64 and shape \(3, 4\)$"):
        exe(x, accy.device_put(y.astype(np.float64), device))
    with pytest.raises(ValueError, match=r"^argument #0 of @main expects .*got an accy.Array of float32 and shape \(4, 3\)$"):
        exe(accy.device_put(x.T.copy(), device), y)
    with pytest.raises(ValueError, match=r"takes 2 argument"):
        exe(accy.device_put(x, device))
    # reshape gives the right shape, sharing the buffer.
    flat = accy.device_put(x.reshape(-1), device)
    shaped = flat.reshape(3, -1)
    assert shaped.shape == (3, 4) and shaped.buffer is flat.buffer
    np.testing.assert_allclose(exe(shaped, y)[1], exe(x, y)[1])
    with pytest.raises(ValueError, match=r"cannot reshape accy.Array of float32 and shape \(12,\) .* to \(5, -1\)"):
        flat.reshape(5, -1)


def test_buffers_go_back_to_the_pool_when_arrays_and_executables_are_dropped(device) -> None:
    gc.collect()
    device.pool.clear()
    before = device.memory_report()
    a = accy.device_put(np.ones((64, 33), np.float32), device)
    view = a.reshape(-1)
    report = device.memory_report()
    assert report.held["array"] == before.held["array"] + a.nbytes
    assert report.buffers["array"] == before.buffers["array"] + 1  # the view shares the buffer
    del a
    gc.collect()
    assert _held(device) == report.held["array"]  # the view keeps its base alive
    del view
    gc.collect()
    after = device.memory_report()
    assert after.held == before.held and after.cached == before.cached + 64 * 33 * 4
    assert "in use" in str(after) and "cached" in str(after)
    # An executable's constants are held while it lives (OpenCL uploads them once).
    exe = accy.compile(ALIASES, device=device)
    exe(np.zeros((3, 5), np.float32))
    if device.name.startswith("opencl"):
        assert _held(device, "constant") >= 60
    del exe
    gc.collect()
    assert _held(device, "constant") == before.held["constant"] and _held(device, "call") == 0


def test_a_call_past_the_memory_limit_says_what_is_held(device) -> None:
    exe = accy.compile(EXP_MUL_SUM.format(r=64, c=128), device=device)
    x, y = exe.random_inputs(0)
    gc.collect()
    keep = accy.device_put(x, device)
    limit = device.memory_limit
    try:
        device.memory_limit = device.pool.in_use_bytes + x.nbytes // 2
        with pytest.raises(accy.DeviceMemoryError) as info:
            accy.device_put(y, device)
        message = str(info.value)
        assert message.startswith(f"device '{device.name}' is out of memory: a buffer of 32,768 bytes (32.0 KiB) for an accy.Array does not fit")
        assert f"limit {device.memory_limit:,} bytes" in message and "accy.Arrays: 32,768 bytes (32.0 KiB) in 1 buffer(s)" in message
        assert "memory_limit ($ACCY_MEMORY_LIMIT)" in message
        assert info.value.requested == y.nbytes and info.value.report.held["array"] >= keep.nbytes
        if device.name != "reference":  # the interpreter's arrays are numpy's, not the pool's
            with pytest.raises(accy.DeviceMemoryError, match=r"^calling @main \(its buffers peak at [\d,]+ bytes\): device"):
                exe(keep, y, to_host=False)
            assert _held(device, "call") == 0  # the failed call gave back what it had taken
        device.memory_limit = None
        (s, m) = exe(keep, y, to_host=False)
        np.testing.assert_allclose(m.numpy(), exe.reference_outputs([x, y])[1], rtol=1e-5, atol=1e-6)
    finally:
        device.memory_limit = limit
    with pytest.raises(ValueError, match="a memory limit is a number of bytes or None"):
        device.memory_limit = -1


def test_memory_limit_from_the_environment(monkeypatch, tmp_path_factory) -> None:
    monkeypatch.setenv("ACCY_MEMORY_LIMIT", "4096")
    assert ReferenceDevice().memory_limit == 4096
    assert ReferenceDevice(memory_limit=8192).memory_limit == 8192
    with pytest.raises(accy.DeviceMemoryError, match="a buffer of 8,000 bytes"):
        accy.device_put(np.zeros(1000), ReferenceDevice())
    monkeypatch.setenv("ACCY_MEMORY_LIMIT", "lots")
    with pytest.raises(ValueError, match=r"ACCY_MEMORY_LIMIT='lots': expected a number of bytes"):
        ReferenceDevice()


def test_cpu_arrays_speak_dlpack(device) -> None:
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    a = accy.device_put(x, device)
    if not device.cpu:
        with pytest.raises(BufferError, match="DLPack exports CPU arrays only"):
            np.from_dlpack(a)
        return
    assert a.__dlpack_device__() == (1, 0)
    d = np.from_dlpack(a)
    np.testing.assert_array_equal(d, x)
    assert d.shape == (3, 4) and d.dtype == np.float32
    if device.host_view(a.buffer) is not None:  # host memory: zero-copy, read-only
        assert np.shares_memory(d, a.buffer) and not d.flags.writeable
        held = _held(device)
        del a
        gc.collect()
        assert _held(device) == held - x.nbytes
        np.testing.assert_array_equal(d, x)  # the view outlives the Array: its memory left the pool
    else:
        with pytest.raises(BufferError, match="needs a copy"):
            a.__dlpack__(copy=False)


def test_numpy_views_of_host_memory_are_read_only_and_outlive_the_array(device) -> None:
    x = np.arange(6, dtype=np.int32)
    a = accy.device_put(x, device)
    v = a.numpy()
    if device.host_view(a.buffer) is None:
        v[0] = 7  # a fresh copy: the Array is untouched
        assert a.numpy()[0] == 0
        return
    with pytest.raises(ValueError, match="read-only"):
        v[0] = 7
    with pytest.raises(ValueError, match="without a copy"):
        np.asarray(a, dtype=np.float32, copy=False)
    del a
    gc.collect()
    accy.device_put(np.full(6, 9, np.int32), device)  # would reuse the buffer if it went back
    np.testing.assert_array_equal(v, x)


def test_custom_kernel_forward_takes_and_returns_arrays(kernel_device) -> None:
    from accy.kernel import Kernel, MemLayout, MemScope

    k = Kernel(kernel_device)
    inp = k.define(np.float32, MemScope.GLOBAL, read_only=True, size=6)
    i = k.group_index(0, 6)
    out = k.define(np.float32, MemScope.GLOBAL, read_only=False, size=6)
    k.store(out, k.add(k.load(inp, i), 1.0), i, MemLayout.SCALAR)
    compiled = k.compile()
    x = accy.device_put(np.arange(6, dtype=np.float32).reshape(2, 3), kernel_device)
    (y,) = compiled.forward([x], [(3, 2)], to_host=False)
    assert isinstance(y, accy.Array) and y.shape == (3, 2)
    assert compiled.executable.stats.uploads == 0 and compiled.executable.stats.downloads == 0
    (z,) = compiled.forward([y], [6])  # chained, back to the host
    np.testing.assert_array_equal(z, np.arange(6, dtype=np.float32) + 2)


SCANS = """
func.func @main(%x: tensor<67xf32>) -> tensor<67xf32> {
  %s0 = "accy.scan"(%x) <{kind = "sum", axis = 0 : i64}> : (tensor<67xf32>) -> tensor<67xf32>
  %s1 = "accy.scan"(%s0) <{kind = "sum", axis = 0 : i64}> : (tensor<67xf32>) -> tensor<67xf32>
  func.return %s1 : tensor<67xf32>
}
"""


def test_an_argument_a_kernel_writes_gets_a_copy_of_the_array(kernel_device) -> None:
    exe = accy.compile(SCANS, device=kernel_device)
    # Today's buffer plans write no argument; a plan that did would treat it so.
    exe.program.schedule.arg_written[0] = True
    x = np.linspace(-1, 1, 67, dtype=np.float32)
    a = accy.device_put(x, kernel_device)
    (y,) = exe(a, to_host=False)
    assert exe.program.in_place == [False] and exe.stats.uploads == 0  # copied on the device
    np.testing.assert_allclose(y.numpy(), np.cumsum(np.cumsum(x)), rtol=1e-4, atol=1e-5)
    np.testing.assert_array_equal(a.numpy(), x)
    assert y.buffer is not a.buffer


def test_threads_chaining_arrays_get_right_results_and_give_every_buffer_back(kernel_device) -> None:
    import threading

    exe = accy.compile(EXP_MUL_SUM.format(r=9, c=31), device=kernel_device)
    before = _held(kernel_device)
    cases = []
    for seed in range(4):
        x, y = exe.random_inputs(seed)
        _, m = exe.reference_outputs([x, y])
        cases.append((x, y, exe.reference_outputs([x, m])))
    failures: list[tuple[int, int]] = []

    def work(t: int) -> None:
        x, y, expected = cases[t]
        xa = accy.device_put(x, kernel_device)
        for i in range(30):
            _, m = exe(xa, y, to_host=False)
            s2, m2 = exe(xa, m, to_host=False)  # chained through the Array
            if not (np.allclose(np.array(m2), expected[1], rtol=1e-4, atol=1e-5) and np.allclose(np.array(s2), expected[0], rtol=1e-4, atol=1e-4)):
                failures.append((t, i))

    threads = [threading.Thread(target=work, args=(t,)) for t in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert failures == []
    assert _held(kernel_device) == before and _held(kernel_device, "call") == 0
