"""Memory a program cannot have, said once and plainly (issue 19): sizes in
`$ACCY_MEMORY_LIMIT` as people write them, a plan peaking past the device's
memory refused before anything is allocated, random inputs drawn in their
own dtype, PoCL's failed allocations as `DeviceMemoryError` instead of an
abort, and accy-run reporting all of them as user errors."""

from __future__ import annotations

import gc
import os
import subprocess
import sys
import textwrap
import tracemalloc
import warnings
from pathlib import Path

import numpy as np
import pytest

import accy
from accy.cli.run import main
from accy.reference.constants import numpy_dtype
from accy.runtime.disk_cache import DiskCache
from accy.runtime.executable import RANDOM_CHUNK, random_array
from accy.runtime.host_memory import DeviceMemoryWarning, parse_bytes
from accy.runtime.reference_device import ReferenceDevice

ROOT = Path(__file__).resolve().parents[2]

# 10^10 floats: 40 GB of input, 80 GB of plan, on no machine these tests run on.
HUGE = """\
func.func @main(%a: tensor<100000x100000xf32>) -> tensor<100000x100000xf32> {
  %e = "accy.exp"(%a) : (tensor<100000x100000xf32>) -> tensor<100000x100000xf32>
  func.return %e : tensor<100000x100000xf32>
}
"""

# 1,000 odd-sized floats in, 1,000 out: a plan of 8,000 bytes.
SMALL = """\
func.func @main(%a: tensor<8x125xf32>) -> tensor<8x125xf32> {
  %e = "accy.exp"(%a) : (tensor<8x125xf32>) -> tensor<8x125xf32>
  %f = "accy.mul"(%e, %a) : (tensor<8x125xf32>, tensor<8x125xf32>) -> tensor<8x125xf32>
  func.return %f : tensor<8x125xf32>
}
"""


def _opencl():
    pytest.importorskip("pyopencl")
    from accy.runtime import opencl as ocl

    if not ocl.opencl_devices():
        pytest.skip("no OpenCL device")
    return ocl.OpenCLDevice()


@pytest.fixture(scope="module", params=["opencl", "llvm"])
def kernel_device(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory):
    """A fresh device (its own pool) of each kind that plans buffers."""
    if request.param == "opencl":
        return _opencl()
    pytest.importorskip("llvmlite.binding")
    from accy.runtime import llvm as llvm_runtime

    cache = DiskCache(llvm_runtime.OBJECT_CACHE_NAMESPACE, tmp_path_factory.mktemp("accy-cache"))
    return llvm_runtime.LLVMDevice(object_cache=cache)


def _accy_run(*argv: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """accy-run in a fresh process (devices read the environment once per process)."""
    return subprocess.run(
        [sys.executable, "-m", "accy.cli.run", *argv],
        cwd=ROOT,
        env={**os.environ, **(env or {})},
        capture_output=True,
        text=True,
        timeout=300,
    )


# -- $ACCY_MEMORY_LIMIT ---------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("4096", 4096),
        ("0", 0),
        ("1e9", 10**9),
        ("2.5e3", 2500),
        ("1GB", 10**9),
        ("1 gb", 10**9),
        ("1GiB", 1 << 30),
        ("1Gi", 1 << 30),
        ("512M", 512 * 10**6),
        ("512MiB", 512 << 20),
        ("1.5KiB", 1536),
        ("3T", 3 * 10**12),
        ("12345678901234567890", 12345678901234567890),  # exact past float precision
    ],
)
def test_sizes_as_people_write_them(text: str, value: int) -> None:
    assert parse_bytes(text) == value


@pytest.mark.parametrize("text", ["lots", "-1", "1e", "1e400", "nan", "inf", "1XB", "GB", "1 2", "0x10"])
def test_what_is_not_a_size(text: str) -> None:
    assert parse_bytes(text) is None


def test_memory_limit_from_the_environment_takes_units(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ACCY_MEMORY_LIMIT", "1e9")
    assert ReferenceDevice().memory_limit == 10**9
    monkeypatch.setenv("ACCY_MEMORY_LIMIT", "512MiB")
    assert ReferenceDevice().memory_limit == 512 << 20
    monkeypatch.setenv("ACCY_POOL_MAX_BYTES", "1GB")
    assert ReferenceDevice().pool.max_free_bytes == 10**9
    monkeypatch.setenv("ACCY_MEMORY_LIMIT", "1e9 bytes please")
    with pytest.raises(ValueError, match=r"^ACCY_MEMORY_LIMIT='1e9 bytes please': expected a number of bytes"):
        ReferenceDevice()


def test_accy_run_reads_units_and_names_a_bad_value(tmp_path: Path) -> None:
    prog = tmp_path / "small.mlir"
    prog.write_text(SMALL)
    good = _accy_run(str(prog), "--device", "llvm", "--stats", env={"ACCY_MEMORY_LIMIT": "1e9"})
    assert good.returncode == 0, good.stderr
    bad = _accy_run(str(prog), "--device", "llvm", env={"ACCY_MEMORY_LIMIT": "1e9x"})
    assert bad.returncode == 1
    assert bad.stderr.strip().splitlines() == [
        "accy-run: error: ACCY_MEMORY_LIMIT='1e9x': expected a number of bytes, such as 4096, 1e9, 512M, 1GB or 1GiB"
    ]


# -- a plan past the device's memory ---------------------------------------------


def test_a_plan_past_the_limit_warns_at_compile_and_fails_before_allocating(kernel_device) -> None:
    limit = kernel_device.memory_limit
    try:
        kernel_device.memory_limit = 4000  # the plan peaks at 8,000 bytes
        with pytest.warns(DeviceMemoryWarning, match=r"@main's buffers peak at 8,000 bytes \(7.8 KiB\), more than device"):
            exe = accy.compile(SMALL, device=kernel_device)
        assert exe.peak_bytes == 8000
        (x,) = exe.random_inputs(0)
        created = kernel_device.pool.stats.created
        with pytest.raises(accy.DeviceMemoryError, match=r"^calling @main \(its buffers peak at 8,000 bytes\): device") as info:
            exe(x)
        assert "nothing was allocated" in str(info.value) and "($ACCY_MEMORY_LIMIT)" in str(info.value)
        assert info.value.requested == 8000
        assert kernel_device.pool.stats.created == created  # refused before any buffer
        kernel_device.memory_limit = None  # the limit raised: the same executable runs
        (y,) = exe(x)
        np.testing.assert_allclose(y, exe.reference_outputs([x])[0], rtol=1e-5, atol=1e-6)
    finally:
        kernel_device.memory_limit = limit
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeviceMemoryWarning)  # a plan that fits: not a word
        accy.compile(SMALL, device=kernel_device)


def test_a_buffer_larger_than_the_device_makes_is_a_device_memory_error() -> None:
    device = _opencl()
    largest = int(device.cl_device.max_mem_alloc_size)
    with pytest.raises(accy.DeviceMemoryError, match="is larger than the largest buffer the device makes"):
        device.pool.acquire(largest + 1)  # the driver's INVALID_BUFFER_SIZE, asked before it
    assert device.memory_report().in_use == 0
    # Host memory the device uses in place (an input, a result) is bounded the same way.
    exe = accy.compile(SMALL, device=device)
    (x,) = exe.random_inputs(1)
    device.pool.max_buffer_bytes = 1024
    with pytest.raises(accy.DeviceMemoryError, match=r"a buffer of 4,000 bytes .* is larger than the largest buffer"):
        exe(x)
    gc.collect()
    assert device.memory_report().held["call"] == 0
    device.pool.max_buffer_bytes = largest
    np.testing.assert_allclose(exe(x)[0], exe.reference_outputs([x])[0], rtol=1e-5, atol=1e-6)


def test_an_allocation_pocl_cannot_make_is_a_device_memory_error_not_an_abort() -> None:
    """PoCL allocates a buffer's memory at its first use and aborts when
    that fails; in a process whose address space is nearly full, accy's pool
    must raise DeviceMemoryError instead (run apart: without the fix the
    process dies of SIGABRT)."""
    _opencl()
    script = textwrap.dedent(
        """
        import resource
        import numpy as np, pyopencl as cl
        import accy
        device = accy.get_device("opencl")
        device.memory_limit = None
        status = open("/proc/self/status").read().split("VmSize:")[1].split()[0]
        vm = int(status) * 1024
        resource.setrlimit(resource.RLIMIT_AS, (vm + (768 << 20), resource.RLIM_INFINITY))
        held = []
        try:
            for i in range(16):
                buf = device.pool.acquire(256 << 20)
                held.append(buf)
                cl.enqueue_fill_buffer(device.queue, buf, np.uint8(1), 0, 256 << 20)
                device.queue.finish()
                print("filled", i, flush=True)
        except accy.DeviceMemoryError as e:
            print("DeviceMemoryError:", e, flush=True)
        """
    )
    done = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, (done.returncode, done.stdout, done.stderr[-2000:])
    assert "filled 0" in done.stdout
    assert "DeviceMemoryError: device 'opencl' is out of memory: a buffer of 268,435,456 bytes" in done.stdout


# -- accy-run --------------------------------------------------------------------


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    try:
        code = main(list(argv))
    except SystemExit as e:
        code = int(e.code or 0)
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("device", ["llvm", "opencl", "reference"])
def test_accy_run_random_on_a_huge_tensor_is_one_clear_error(
    device: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    if device == "opencl":
        _opencl()
    prog = tmp_path / "huge.mlir"
    prog.write_text(HUGE)
    code, out, err = _run(capsys, str(prog), "--device", device, "--random", "0")
    assert code == 1 and out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("accy-run: error: "), err
    assert "internal error" not in err and "Traceback" not in err
    if device == "reference":  # plans no buffers: its inputs alone do not fit in the host
        assert "random arguments of @main take 40,000,000,000 bytes (37.3 GiB), more than the host's memory" in err
    else:
        assert "calling @main (its buffers peak at 80,000,000,000 bytes)" in err and "nothing was allocated" in err


def test_accy_run_device_memory_error_is_a_user_error(tmp_path: Path) -> None:
    prog = tmp_path / "small.mlir"
    prog.write_text(SMALL)
    done = _accy_run(str(prog), "--device", "llvm", "--random", "0", env={"ACCY_MEMORY_LIMIT": "1KiB"})
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr.startswith("accy-run: error: calling @main (its buffers peak at 8,000 bytes): device 'llvm'"), done.stderr
    assert "internal error" not in done.stderr and len(done.stderr.strip().splitlines()) == 1


# -- random inputs -----------------------------------------------------------------


@pytest.mark.parametrize("element", ["f16", "f32", "f64", "i1", "i8", "i32", "i64"])
def test_random_arrays_are_drawn_in_their_dtype(element: str) -> None:
    from xdsl.dialects.builtin import Float16Type, Float32Type, Float64Type, IntegerType, TensorType

    types = {"f16": Float16Type(), "f32": Float32Type(), "f64": Float64Type(), "i1": IntegerType(1)}
    element_type = types.get(element) or IntegerType(int(element[1:]))
    t = TensorType(element_type, [3, RANDOM_CHUNK // 3 + 5])  # past one chunk, not a multiple of it
    a = random_array(t, np.random.default_rng(5))
    assert a.dtype == numpy_dtype(element_type) and a.shape == (3, RANDOM_CHUNK // 3 + 5)
    np.testing.assert_array_equal(a, random_array(t, np.random.default_rng(5)))  # a seed, one draw
    assert not np.array_equal(a, random_array(t, np.random.default_rng(6)))
    flat = a.reshape(-1)
    assert not np.array_equal(flat[:64], flat[RANDOM_CHUNK : RANDOM_CHUNK + 64])  # chunks differ
    if element == "i1":
        assert 0.45 < flat.mean() < 0.55
    elif element.startswith("i"):
        assert flat.min() == -5 and flat.max() == 5
    else:
        assert abs(float(flat.astype(np.float64).mean())) < 0.01 and 0.98 < float(flat.astype(np.float64).std()) < 1.02
    # Empty and rank-0 tensors.
    assert random_array(TensorType(element_type, [0, 4]), np.random.default_rng(0)).shape == (0, 4)
    assert random_array(TensorType(element_type, []), np.random.default_rng(0)).shape == ()


def test_random_inputs_cost_their_own_bytes_not_float64s() -> None:
    exe = accy.compile(
        """func.func @main(%a: tensor<4096x1024xf32>) -> tensor<4096x1024xf32> {
          %e = "accy.neg"(%a) : (tensor<4096x1024xf32>) -> tensor<4096x1024xf32>
          func.return %e : tensor<4096x1024xf32>
        }""",
        device="reference",
    )
    nbytes = 4096 * 1024 * 4
    tracemalloc.start()
    try:
        (x,) = exe.random_inputs(0)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert x.nbytes == nbytes
    # Drawing float64s first and casting peaked at 3x the array.
    assert peak < nbytes * 1.25, peak
