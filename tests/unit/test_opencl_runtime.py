"""The OpenCL runtime device: target profile, memory pool, program cache,
in-place inputs, host fallbacks and `accy.compile(..., device="opencl")` end
to end, checked against numpy and the reference interpreter."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("pyopencl")

from templates import EXP_MUL_SUM  # noqa: E402

from accy.backends.opencl.emitter import kernel_funcs  # noqa: E402
from accy.runtime import opencl as ocl  # noqa: E402
from accy.runtime import pocl_threads  # noqa: E402
from accy.runtime.executable import compile as accy_compile  # noqa: E402


@pytest.fixture(scope="module")
def device():
    if not ocl.opencl_devices():
        pytest.skip("no OpenCL device")
    return ocl.OpenCLDevice()


def test_profile_comes_from_the_device(device):
    p = device.target_profile()
    d = device.cl_device
    assert p.max_work_group_size == d.max_work_group_size
    assert p.local_mem_bytes == d.local_mem_size
    assert p.profile in ("cpu", "gpu") and p.vector_width in (1, 2, 4, 8, 16)
    # The preferred float vector width, in floats (16 with AVX-512, 8 with AVX2).
    preferred = int(d.preferred_vector_width_float)
    if p.profile == "cpu":
        assert p.vector_width == max(w for w in (1, 2, 4, 8, 16) if w <= max(preferred, 1))
    else:
        assert p.vector_width >= min(preferred, 16)


def target_module(target: str, body: str = "") -> str:
    """EXP_MUL_SUM (8x32) in a module whose accy.target is `#accy.target<{target}>`."""
    return f"builtin.module attributes {{accy.target = #accy.target<{target}>}} {{\n{body or EXP_MUL_SUM.format(r=8, c=32)}}}\n"


def compiled_target(exe) -> dict:
    from accy.dialects.target import target_fields

    return target_fields(exe.module)


def test_the_device_fills_in_only_what_the_module_does_not_say(device):
    own = device.target_profile()
    # Nothing set: the device's profile, attached whole.
    assert compiled_target(accy_compile(EXP_MUL_SUM.format(r=8, c=32), device=device)) == own.fields()
    # Set fields are kept (math was the only one kept before), the rest is the device's.
    exe = accy_compile(target_module('math = "fast", vector_width = 2, group_size = 32'), device=device)
    assert compiled_target(exe) == own.replace(math="fast", vector_width=2, group_size=32).fields()
    assert "vload2(" in exe.program.source and "vload16(" not in exe.program.source
    x = np.random.default_rng(1).standard_normal((8, 32)).astype(np.float32)
    s, _ = exe(x, x)
    np.testing.assert_allclose(s, (np.exp(x) * x).sum(1), rtol=1e-4)


def test_a_module_naming_another_profile_keeps_it_with_the_device_limits(device):
    other = "gpu" if device.target_profile().profile == "cpu" else "cpu"
    exe = accy_compile(target_module(f'profile = "{other}"'), device=device)
    fields = compiled_target(exe)
    assert fields["profile"] == other
    assert fields["max_work_group_size"] == device.cl_device.max_work_group_size
    assert fields["local_mem_bytes"] == device.cl_device.local_mem_size


def test_hand_set_sizes_are_kept_through_compile(device):
    # The issue's check: a module with hand-set tile sizes keeps them through accy.compile.
    body = EXP_MUL_SUM.format(r=4, c=1024)  # rows long enough for a work-group of 256
    exe = accy_compile(target_module('profile = "gpu", reduce_threads = 64, dot_tile = 8', body), device=device)
    fields = compiled_target(exe)
    assert (fields["profile"], fields["reduce_threads"], fields["dot_tile"]) == ("gpu", 64, 8)
    # 64 work-items an output: the 4 outputs share one work-group of 256.
    reductions = [s for s in exe.program.schedule.steps if isinstance(s, ocl._Launch) and s.kind == "reduction"]
    assert reductions and all((s.global_size, s.local_size) == ((256,), (256,)) for s in reductions)
    assert "% 64;" in exe.program.source
    x = np.random.default_rng(2).standard_normal((4, 1024)).astype(np.float32)
    s, m = exe(x, x)
    np.testing.assert_allclose(s, (np.exp(x) * x).sum(1), rtol=1e-4)
    # The defaults give another kernel (a work-group of 256 an output): the sizes were not ignored.
    default = accy_compile(target_module('profile = "gpu"', body), device=device)
    steps = [s for s in default.program.schedule.steps if isinstance(s, ocl._Launch) and s.kind == "reduction"]
    assert steps and all((s.global_size, s.local_size) == ((1024,), (256,)) for s in steps)


@pytest.mark.parametrize(
    ("target", "message"),
    [
        ('format = "llvm-ir"', r"the module's target asks for format 'llvm-ir', but device 'opencl' runs OpenCL C"),
        ("max_work_group_size = 1000000000", r"sets max_work_group_size = 1000000000, more than device 'opencl'"),
        ("local_mem_bytes = 1000000000000", r"sets local_mem_bytes = 1000000000000, more than device 'opencl'"),
        ("static_local_bytes = 1000000000000", r"sets static_local_bytes = 1000000000000, more than device 'opencl'"),
    ],
)
def test_a_target_the_device_cannot_honour_is_refused(device, target, message):
    with pytest.raises(ocl.TargetMismatch, match=message):
        accy_compile(target_module(target), device=device)



def test_static_local_bytes_within_the_device_is_kept_and_stated(device):
    """A module may ask for static local memory up to what the device builds
    (its local_mem_bytes where the driver allows no more); the device states
    its own (0 off NVIDIA's GPUs, whose probe `static_local_limit` checks)."""
    own = device.target_profile()
    assert own.static_local_bytes == ocl.static_local_limit(device.cl_device)
    if "NVIDIA" not in str(device.cl_device.vendor).upper():
        assert own.static_local_bytes == 0 and own.local_capacity == own.local_mem_bytes
    exe = accy_compile(target_module(f"static_local_bytes = {own.local_capacity}"), device=device)
    assert compiled_target(exe)["static_local_bytes"] == own.local_capacity


@pytest.mark.parametrize(("field", "extension"), [("fp16", "cl_khr_fp16"), ("fp64", "cl_khr_fp64")])
def test_a_target_asking_for_an_element_type_the_device_lacks_is_refused(device, field, extension):
    """Not a build error of the kernels: one message naming the extension
    (where the device has it, the module keeps the field)."""
    if extension in device.cl_device.extensions:
        exe = accy_compile(target_module(f"{field} = true"), device=device)
        assert compiled_target(exe)[field] is True
        return
    with pytest.raises(ocl.TargetMismatch, match=rf"sets {field} = true, but device 'opencl' .* lacks {extension}"):
        accy_compile(target_module(f"{field} = true"), device=device)

GROUP_KERNELS = """
builtin.module {
  "gpu.module"() <{sym_name = "kernels"}> ({
    "gpu.func"() <{function_type = (memref<4xf32>) -> (), kernel}> ({
    ^bb0(%a: memref<4xf32>):
      %i = "gpu.global_id"() <{dimension = #gpu<dim x>}> : () -> index
      "gpu.return"() : () -> ()
    }) {sym_name = "plain"} : () -> ()
    "gpu.func"() <{function_type = (memref<4xf32>) -> (), kernel}> ({
    ^bb0(%a: memref<4xf32>):
      %l = memref.alloca() : memref<8xf32, #gpu.address_space<workgroup>>
      "gpu.return"() : () -> ()
    }) {sym_name = "local_memory"} : () -> ()
    "gpu.func"() <{function_type = (memref<4xf32>) -> (), kernel}> ({
    ^bb0(%a: memref<4xf32>):
      "gpu.barrier"() : () -> ()
      "gpu.return"() : () -> ()
    }) {sym_name = "barrier"} : () -> ()
    "gpu.func"() <{function_type = (memref<4xf32>) -> (), kernel}> ({
    ^bb0(%a: memref<4xf32>):
      "gpu.return"() : () -> ()
    }) {sym_name = "stated", gpu.known_block_size = array<i32: 2, 1, 1>} : () -> ()
  }) : () -> ()
}
"""


def test_launch_work_group_is_read_from_the_kernel_ir():
    from accy.dialects.parse import parse_module

    funcs = {f.sym_name.data: f for f in kernel_funcs(parse_module(GROUP_KERNELS))}
    assert ocl.launch_work_group(funcs["plain"], (64, 1, 1)) is None
    assert ocl.launch_work_group(funcs["local_memory"], (64, 1, 1)) == (64, 1, 1)
    assert ocl.launch_work_group(funcs["barrier"], (32, 1, 1)) == (32, 1, 1)
    assert ocl.launch_work_group(funcs["stated"], (2, 1, 1)) == (2, 1, 1)
    with pytest.raises(ocl.HostScheduleError, match=r"@stated states known_block_size \[2, 1, 1\] but is launched with blocks of \[4, 1, 1\]"):
        ocl.launch_work_group(funcs["stated"], (4, 1, 1))


def test_no_platform_says_how_to_install_one(monkeypatch):
    monkeypatch.setattr(ocl, "opencl_devices", lambda: [])
    with pytest.raises(RuntimeError, match=r"no OpenCL platform found.*apt-get install pocl-opencl-icd"):
        ocl.OpenCLDevice()


def test_bad_index_lists_the_devices(device):
    with pytest.raises(ValueError, match=r"no OpenCL device 99: there are \d+ \(opencl:0 = "):
        ocl.OpenCLDevice(99)


@pytest.mark.parametrize(("rows", "cols"), [(1, 1), (3, 17), (64, 128)])
def test_compile_end_to_end_matches_numpy(device, rows, cols):
    exe = accy_compile(EXP_MUL_SUM.format(r=rows, c=cols), device=device)
    rng = np.random.default_rng(rows * cols)
    x = rng.standard_normal((rows, cols)).astype(np.float32)
    y = rng.standard_normal((rows, cols)).astype(np.float32)
    s, m = exe(x, y)
    np.testing.assert_allclose(m, np.exp(x) * y, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(s, (np.exp(x) * y).sum(1), rtol=1e-4, atol=1e-4)
    assert s.shape == (rows,) and m.shape == (rows, cols) and s.dtype == np.float32
    assert exe.stats.kernels >= 1 and exe.stats.fallbacks == 0
    assert exe.stats.peak_bytes >= x.nbytes + y.nbytes


def test_inputs_run_in_place_and_are_not_modified(device):
    exe = accy_compile(EXP_MUL_SUM.format(r=4, c=32), device=device)
    rng = np.random.default_rng(7)
    x = rng.standard_normal((4, 32)).astype(np.float32)
    y = rng.standard_normal((4, 32)).astype(np.float32)
    before = (x.copy(), y.copy())
    exe(x, y)
    if device.host_unified_memory:
        assert exe.program.in_place == [True, True]
    np.testing.assert_array_equal(x, before[0])
    np.testing.assert_array_equal(y, before[1])


def test_pool_reuses_buffers_across_calls(device):
    exe = accy_compile(EXP_MUL_SUM.format(r=8, c=48), device=device)
    rng = np.random.default_rng(8)
    x = rng.standard_normal((8, 48)).astype(np.float32)
    y = rng.standard_normal((8, 48)).astype(np.float32)
    first = exe(x, y)
    created = device.pool.stats.created
    reused = device.pool.stats.reused
    for _ in range(3):
        again = exe(x, y)
    assert device.pool.stats.created == created  # nothing new allocated after the first call
    assert device.pool.stats.reused >= reused + 3
    for a, b in zip(first, again, strict=True):
        np.testing.assert_array_equal(a, b)


def test_program_cache_builds_identical_kernels_once(device):
    text = EXP_MUL_SUM.format(r=5, c=16)
    accy_compile(text, device=device)
    misses, hits = device.programs.misses, device.programs.hits
    exe = accy_compile(text, device=device)
    assert device.programs.misses == misses and device.programs.hits == hits + 1
    # Launches hold the cached kernel objects (pyopencl's program.name would make new ones).
    cached = device.programs.get(exe.program.source).kernels
    launches = [s for s in exe.program.schedule.steps if isinstance(s, ocl._Launch)]
    assert launches and all(s.kernel is cached[s.name] for s in launches)


def test_pocl_cache_is_private_to_the_process(device):
    # PoCL writes its kernels into this process's own folder (another
    # driver, NVIDIA's say, writes nothing there), and the variable is back
    # to what it was (unset, or the user's value).
    accy_compile(EXP_MUL_SUM.format(r=3, c=5), device=device)(*[np.ones((3, 5), np.float32)] * 2)
    private = Path(device.pocl_cache_dir)
    assert private.name.startswith(f"accy-pocl-{os.getpid()}-") and private.is_dir()
    if "Portable Computing Language" in device.cl_device.platform.name:
        assert any(private.iterdir())
    assert os.environ.get("POCL_CACHE_DIR") != str(private)


# Run in a new process: PoCL reads POCL_AFFINITY once, when it initialises.
# It prints each thread's CPUs after a small call, then after a large one.
THREAD_MASKS = """
import glob, json, os
import numpy as np
import accy
from accy.runtime import opencl as ocl
device = ocl.OpenCLDevice()

def masks():
    return sorted(",".join(map(str, sorted(os.sched_getaffinity(int(t.split("/")[-1])))))
                  for t in glob.glob("/proc/self/task/*"))

seen = {"pocl": device.pocl_workers is not None or "Portable Computing Language" in device.description,
        "units": device.cl_device.max_compute_units, "env": os.environ.get("POCL_AFFINITY")}
for n in (16, 1 << 20):  # 64 bytes a call, then 8 MiB
    x = np.arange(n, dtype=np.float32)
    exe = accy.compile(
        f'func.func @main(%x: tensor<{n}xf32>) -> tensor<{n}xf32> {{'
        f' %y = "accy.neg"(%x) : (tensor<{n}xf32>) -> tensor<{n}xf32>'
        f' func.return %y : tensor<{n}xf32> }}', device=device)
    assert np.array_equal(exe(x)[0], -x)
    seen[str(n)] = masks()
print(json.dumps(seen))
"""


@pytest.mark.parametrize("user_value", [None, "0"])
def test_pocl_threads_pinned_for_large_calls_unless_the_user_says(device, user_value):
    env = {k: v for k, v in os.environ.items() if k != "POCL_AFFINITY"}
    if user_value is not None:
        env["POCL_AFFINITY"] = user_value
    done = subprocess.run([sys.executable, "-c", THREAD_MASKS], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    if not seen["pocl"]:
        pytest.skip("the OpenCL device is not PoCL")
    assert seen["env"] == user_value  # the process's environment is left as the user had it
    everywhere = ",".join(map(str, range(os.cpu_count() or 1)))
    small, large = (sorted(m for m in seen[k] if m != everywhere) for k in ("16", str(1 << 20)))
    assert small == []  # a 64-byte call runs with every thread free
    if user_value is None and pocl_threads.can_pin():
        assert large == [str(i) for i in range(seen["units"])]  # PoCL's worker i on CPU i
    else:
        assert large == []


def test_pocl_threads_not_pinned_past_the_cpus(monkeypatch):
    monkeypatch.setenv("POCL_MAX_PTHREAD_COUNT", str((os.cpu_count() or 1) + 1))
    assert not pocl_threads.can_pin()
    monkeypatch.setenv("POCL_MAX_PTHREAD_COUNT", "1")
    assert pocl_threads.can_pin() == (os.sched_getaffinity(0) == set(range(os.cpu_count() or 1)))


def test_profile_reports_each_launch(device):
    exe = accy_compile(EXP_MUL_SUM.format(r=16, c=64), device=device)
    x = np.ones((16, 64), np.float32)
    exe(x, x, profile=True)
    prof = exe.stats.profile
    assert len(prof) == exe.stats.kernels
    assert all(p.seconds >= 0 and p.name.startswith("main_k") and p.global_size for p in prof)
    exe(x, x)
    assert exe.stats.profile == []


# accy.iterate runs as a loop of kernels, between the kernels before and after it.
ITERATE = """
func.func @main(%x: tensor<{r}x{c}xf32>) -> tensor<{r}x{c}xf32> {{
  %e = "accy.exp"(%x) : (tensor<{r}x{c}xf32>) -> tensor<{r}x{c}xf32>
  %it = "accy.iterate"(%e) <{{count = 3 : i64}}> ({{
  ^bb0(%a: tensor<{r}x{c}xf32>):
    %t = "accy.tanh"(%a) : (tensor<{r}x{c}xf32>) -> tensor<{r}x{c}xf32>
    "accy.yield"(%t) : (tensor<{r}x{c}xf32>) -> ()
  }}) : (tensor<{r}x{c}xf32>) -> tensor<{r}x{c}xf32>
  %n = "accy.neg"(%it) : (tensor<{r}x{c}xf32>) -> tensor<{r}x{c}xf32>
  func.return %n : tensor<{r}x{c}xf32>
}}
"""


@pytest.mark.parametrize(("rows", "cols"), [(1, 3), (17, 5)])
def test_iterate_runs_as_a_loop_of_kernels(device, rows, cols):
    exe = accy_compile(ITERATE.format(r=rows, c=cols), device=device)
    x = np.random.default_rng(rows).standard_normal((rows, cols)).astype(np.float32)
    (out,) = exe(x, profile=True)
    np.testing.assert_allclose(out, -np.tanh(np.tanh(np.tanh(np.exp(x)))), rtol=1e-5, atol=1e-6)
    assert exe.stats.fallbacks == 0 and exe.stats.kernels == 3 and exe.stats.launches == 5
    assert [p.name for p in exe.stats.profile].count("main_k1_iterate_body_k0_elementwise") == 3


FALLBACK = (Path(__file__).parent.parent / "programs" / "fallback.mlir").read_text()


def test_host_fallback_runs_on_the_reference_path(device):
    exe = accy_compile(FALLBACK, device=device)
    x = np.random.default_rng(3).standard_normal((5, 7)).astype(np.float32)
    f, s = exe(x, profile=True)
    want = np.tanh(x.sum(1, keepdims=True).astype(np.float16)).astype(np.float32)
    np.testing.assert_allclose(f, want, rtol=1e-3, atol=1e-3)
    np.testing.assert_allclose(s, np.cumsum(f, axis=0), rtol=1e-5, atol=1e-5)
    assert exe.stats.fallbacks == 1 and exe.stats.kernels == 2
    assert sorted(p.kind for p in exe.stats.profile) == ["fallback", "reduction", "scan"]


# An empty tensor whose last dim is 0 (directly, or as a slice of a buffer):
# kernelize once judged its row-major buffer not contiguous (two definitions
# of row-major strides disagreed on size-0 dims) and refused a host fallback
# of such an iterate; it now runs as kernels that copy nothing.
EMPTY_SLICE_ITERATE = """
func.func @main(%x: tensor<3x4xf32>) -> tensor<3x0xf32> {
  %v = "accy.slice"(%x) <{start = array<i64: 0, 1>, limit = array<i64: 3, 1>, stride = array<i64: 1, 1>}> : (tensor<3x4xf32>) -> tensor<3x0xf32>
  %it = "accy.iterate"(%v) <{count = 2 : i64}> ({
  ^bb0(%a: tensor<3x0xf32>):
    %t = "accy.tanh"(%a) : (tensor<3x0xf32>) -> tensor<3x0xf32>
    "accy.yield"(%t) : (tensor<3x0xf32>) -> ()
  }) : (tensor<3x0xf32>) -> tensor<3x0xf32>
  func.return %it : tensor<3x0xf32>
}
"""


@pytest.mark.parametrize("program", [ITERATE.format(r=3, c=0), ITERATE.format(r=0, c=2), EMPTY_SLICE_ITERATE])
def test_iterate_of_an_empty_tensor(device, program):
    exe = accy_compile(program, device=device, strict=True)
    inputs = exe.random_inputs(0)
    (out,) = exe(*inputs)
    (want,) = exe.reference_outputs(inputs)
    assert out.shape == want.shape and out.size == 0 and out.dtype == want.dtype
    assert exe.stats.fallbacks == 0


def test_strict_refuses_a_fallback(device):
    with pytest.raises(Exception, match="cannot be lowered"):
        accy_compile(FALLBACK, device=device, strict=True)


CONSTANT = """
func.func @main(%x: tensor<3x5xf32>) -> tensor<3x5xf32> {
  %c = "accy.constant"() <{value = dense<[1.0, 2.0, 3.0, 4.0, 5.0]> : tensor<5xf32>}> : () -> tensor<5xf32>
  %b = "accy.broadcast"(%c) <{dims = array<i64: 1>}> : (tensor<5xf32>) -> tensor<3x5xf32>
  %s = "accy.add"(%x, %b) : (tensor<3x5xf32>, tensor<3x5xf32>) -> tensor<3x5xf32>
  func.return %s : tensor<3x5xf32>
}
"""


def test_constants_are_uploaded_and_stay_correct_across_calls(device):
    exe = accy_compile(CONSTANT, device=device)
    rng = np.random.default_rng(9)
    for _ in range(2):
        x = rng.standard_normal((3, 5)).astype(np.float32)
        (out,) = exe(x)
        np.testing.assert_allclose(out, x + np.arange(1, 6, dtype=np.float32), rtol=1e-6)
