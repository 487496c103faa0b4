"""The OpenCL device: kernelizes a function for a real OpenCL device, builds
the kernels as OpenCL C, and runs the host schedule.

`OpenCLDevice(index)` takes the index-th device of all OpenCL platforms
(`opencl:N`; the first when None). `prepare(module, fn, strict)`:

1. completes the module's target profile (`accy.target`): the fields the
   module sets are kept (a hand-set or tuned size, the math tier, ...), the
   device supplies the rest (`profile_of_device`: CPU or GPU by device type,
   max work-group size, local memory, preferred vector width, fp16/fp64,
   tensor cores: `mma_of_device`),
   and the complete profile is attached. A module asking for more than the
   device has (work-group size, local memory) or for an artifact format
   other than OpenCL C is refused with a `TargetMismatch` naming the field;
2. runs `kernelize` (strict: a declined work item is an error);
3. prints the kernels as OpenCL C and builds them once per process (the
   `ProgramCache`; accy's disk cache of program binaries makes a second
   process fast, and PoCL's own cache is private to the process: see
   program_cache.py), keeping one `cl.Kernel` per name. The build is the
   whole compile: on PoCL each kernel's work-group function is compiled
   with it, not at the kernel's first launch (program_cache.py);
4. translates the host function into a list of steps, once. A launch's
   work-group size is what its kernel states (`known_block_size` on the
   `gpu.func`), else the launch's block size when the kernel depends on its
   work-group (work-group ids or sizes, barriers, workgroup memory), else
   left to the OpenCL implementation.

`OpenCLProgram.run` then executes the steps (the schedule's one step loop,
`StepExecutor`, with this device's steps: `_Steps`): buffers come from a
`MemoryPool`; input arrays are used in place (`USE_HOST_PTR`) on devices
with host-unified memory when C-contiguous, starting at a multiple of
`ARGUMENT_ACCESS_BYTES` (what aligned vector accesses may claim) and never
written;
launches are enqueued back to back on an in-order queue; a host fallback
waits for the queue, evaluates its tensor ops with the reference
interpreter and writes its outputs back; results are read into fresh arrays
(with `to_host=False`, the result buffers become the results' `accy.Array`s
instead). An `accy.Array` argument of this device is its buffer, as it is
(copied on the device when a kernel writes that argument). Constant buffers
are uploaded once, kept in the pool while the program lives.
On host-unified devices a result of at least `HOST_RESULT_MIN_BYTES` is
instead allocated as the fresh array itself (aligned, `USE_HOST_PTR`): the
kernels write it in place and a map at the end makes it coherent, which
saves reading a pool buffer back (a copy, plus the page faults of the new
array taken on one thread).

Threads: a program may be called from any number of threads at once. Each
call keeps its buffers to itself; the kernels of a program are shared (by
every executable of the same source), so a call holds the program's
`launch_lock` from a kernel's `set_args` to its enqueue (the arguments are
captured there); the pool, the caches and the constant uploads take their
own locks. All calls go to one in-order queue, except calls with `profile`,
which use a second, profiling queue: they therefore hand buffers back to the
pool only after their own queue has finished, and wait for the main queue
after taking a buffer from the pool.

Debugging unwritten outputs: `OpenCLDevice(poison=True)` (or the environment
variable `ACCY_POISON=1` for devices made without the argument, e.g. by
`accy.compile(..., device="opencl")` or `accy-run`) fills every buffer the
schedule allocates (`memref.alloc`: results and intermediates, not inputs or
constants) with a poison value before the launches of each call: NaN for
float buffers, bytes of `POISON_BYTE` for integer and i1 buffers (0x5A5A5A5A
for i32, 90 for an i8 or an i1 mask, which is neither 0 nor 1). An element no
kernel writes then shows up in the results instead of a stale value of the
pool's previous call.
"""

from __future__ import annotations

import math
import threading
import weakref
from collections.abc import Callable
from dataclasses import dataclass, replace
from functools import partial
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np

from accy.backends.opencl.format import FORMAT, WGMMA_MARK
from accy.debug import debug, debug_level
from accy.dialects.alignment import ARGUMENT_ACCESS_BYTES
from accy.runtime import pocl_threads
from accy.runtime.array import Array, result_arrays
from accy.runtime.compile_cache import pack_schedule, unpack_schedule
from accy.runtime.device import KernelDevice, LaunchProfile, Program, RunStats, TargetMismatch
from accy.runtime.host_memory import CONSTANT
from accy.runtime.kernel_sources import kernel_source
from accy.runtime.memory import MemoryPool, memory_limit_from_env, pool_max_bytes_from_env
from accy.runtime.phases import phase
from accy.runtime.program_cache import BuiltProgram, ProgramCache, isolate_pocl_cache, pocl_environment
from accy.runtime.results import result_layouts
from accy.runtime.schedule import POISON_BYTE as POISON_BYTE  # re-exported: tests and tools read them here
from accy.runtime.schedule import POISON_ENV as POISON_ENV
from accy.runtime.schedule import Alloc as _Alloc
from accy.runtime.schedule import Constant as _Constant
from accy.runtime.schedule import (
    Copy,
    HostScheduleError,
    Launch,
    StepExecutor,
    describe,
    evaluate_fallback,
    fallback_input_types,
    has_kernels,
    host_function,
    map_steps,
    poison_from_env,
    poison_pattern,
    translate,
    walk_steps,
)
from accy.runtime.schedule import Fallback as _Fallback
from accy.runtime.schedule import Free as _Free
from accy.runtime.schedule import Schedule as _Schedule
from accy.runtime.schedule import storage_dtype as _storage_dtype

T = TypeVar("T")

if TYPE_CHECKING:  # pyopencl is imported when a device is made, not with this module
    import pyopencl as cl
    from xdsl.dialects import func, gpu
    from xdsl.dialects.builtin import ModuleOp

    from accy.dialects.target import TargetProfile

# The emitter, the target attribute and xDSL are imported where a module is
# compiled: a program from the compile cache loads and runs without them.

INSTALL_HINT = (
    "no OpenCL platform found: install one (on Debian/Ubuntu, `sudo apt-get install pocl-opencl-icd` "
    "gives OpenCL on the CPU), or use device='reference'"
)

#: Results this large are written in place into the returned array on
#: host-unified devices (see the module docstring). Reading a 4096x4096 float
#: result back cost ~18 ms of a 33 ms softmax call on PoCL; below ~1 MiB the
#: copy costs less than creating and mapping a buffer per call.
HOST_RESULT_MIN_BYTES = 1 << 20

#: Device limits a module's target may not exceed (its kernels would not launch).
_HARD_LIMITS = ("max_work_group_size", "local_mem_bytes")
#: Element-type fields a module may set only where the device has the
#: extension: (field, extension, what runs without it).
_ELEMENT_EXTENSIONS = (
    ("fp16", "cl_khr_fp16", "f16 is stored in 16 bits and computed in f32"),
    ("fp64", "cl_khr_fp64", "f64 work runs on the host reference path"),
)



#: The fewest float lanes a GPU work-item loads at once: GPUs report a
#: preferred width of 1 (their lanes are scalar), yet one 128-bit load (4
#: floats) per work-item is their widest memory transaction.
GPU_MIN_VECTOR_WIDTH = 4


def preferred_vector_width(device: cl.Device) -> int:
    """Floats per vector load/store on `device`: its preferred float vector
    width (CL_DEVICE_PREFERRED_VECTOR_WIDTH_FLOAT; 16 on PoCL with AVX-512,
    8 with AVX2), at least `GPU_MIN_VECTOR_WIDTH` on a GPU, as a width the
    lowerings use (1, 2, 4, 8 or 16)."""
    import pyopencl as cl

    preferred = max(1, int(device.preferred_vector_width_float))
    if not device.type & cl.device_type.CPU:
        preferred = max(preferred, GPU_MIN_VECTOR_WIDTH)
    return max(w for w in (1, 2, 4, 8, 16) if w <= preferred)


#: A warp's m16n8k16 f16 mma.sync of A = 1 (16x16) by B[k][n] = k (16x8,
#: each work-item's b fragment at its own k): every sum is 0 + 1 + ... + 15
#: = 120, so each work-item's four add up to 480. The probe of `mma_of_device`.
MMA_PROBE = r"""__kernel void accy_mma_probe(__global float* out) {
  uint one = 0x3C003C00u;  /* two f16 ones */
  float t = (float)(get_local_id(0) % 4);
  ushort k[4];
  vstore_half(2.0f * t, 0, (half*)k);
  vstore_half(2.0f * t + 1.0f, 1, (half*)k);
  vstore_half(2.0f * t + 8.0f, 2, (half*)k);
  vstore_half(2.0f * t + 9.0f, 3, (half*)k);
  uint b0 = k[0] | ((uint)k[1] << 16), b1 = k[2] | ((uint)k[3] << 16);
  float d0, d1, d2, d3, z = 0.0f;
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%10,%11,%12,%13};"
    : "=f"(d0), "=f"(d1), "=f"(d2), "=f"(d3)
    : "r"(one), "r"(one), "r"(one), "r"(one), "r"(b0), "r"(b1), "f"(z), "f"(z), "f"(z), "f"(z));
  out[get_local_id(0)] = d0 + d1 + d2 + d3;
}
"""
#: One warpgroup's wgmma m64n8k16 of A = 1 (64x16) by B[k][n] = k (16x8,
#: n-contiguous, staged in the 128-byte swizzle `accy_kernel.wgmma` reads):
#: every sum is 120 again, each work-item's four 480. Marked as the OpenCL C
#: backend prints wgmma, and built as the runtime builds such programs.
WGMMA_PROBE = (
    r"""__kernel __attribute__((reqd_work_group_size(128, 1, 1))) void accy_wgmma_probe(__global float* out) {
  __local ushort a[64 * 64] __attribute__((aligned(1024)));
  __local ushort b[16 * 64] __attribute__((aligned(1024)));
  uint i = get_local_id(0);
  for (uint e = i; e < 64 * 64; e += 128) a[e] = 0x3C00;  /* f16 ones */
  for (uint e = i; e < 16 * 64; e += 128) {  /* row k of b: k in the 8 n of its chunk 0, swizzled to k % 8 */
    uint k = e / 64, n = e % 64;
    vstore_half(n / 8 == k % 8 ? (float)k : 0.0f, 0, (__local half*)&b[e]);
  }
  asm volatile("MARKfence.proxy.async.shared::cta;" ::: "memory");
  barrier(CLK_LOCAL_MEM_FENCE);
  ulong da = (ulong)(((uint)(ulong)a & 0x3FFFF) >> 4) | ((ulong)1 << 16) | ((ulong)64 << 32) | (1UL << 62);
  ulong db = (ulong)(((uint)(ulong)b & 0x3FFFF) >> 4) | ((ulong)512 << 16) | ((ulong)64 << 32) | (1UL << 62);
  float d0 = 0.0f, d1 = 0.0f, d2 = 0.0f, d3 = 0.0f;
  asm volatile("MARKwgmma.fence.sync.aligned;" ::: "memory");
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %6, 0;\n"
    "MARKwgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16 {%0,%1,%2,%3}, %4, %5, p, 1, 1, 0, 1;\n}"
    : "+f"(d0), "+f"(d1), "+f"(d2), "+f"(d3) : "l"(da), "l"(db), "r"(1) : "memory");
  asm volatile("MARKwgmma.commit_group.sync.aligned;" ::: "memory");
  asm volatile("MARKwgmma.wait_group.sync.aligned 0;" ::: "memory");
  out[i] = d0 + d1 + d2 + d3;
}
"""
).replace("MARK", WGMMA_MARK)
#: The k-contiguous B's of wgmma, one warpgroup's: two TF32 m64n8k8, k 0-7
#: and then k 8-15 (the descriptors' start 32 bytes on, as the dot's k
#: steps are), of A[m][k] = 1 + k / 4 (64x16) by B[k][n] = k (16x8), in
#: 128-byte swizzled rows (a chunk's k differ from row to row, so a misread
#: swizzle changes the sums): every sum 6 + 44 + 114 + 216 = 380; and one
#: f16 m64n8k16 of A = 1 by B[k][n] = k, B k-contiguous (imm-trans-b 0):
#: every sum 120. Each work-item's eight sums add up to 4 · 500 = 2000.
#: "sm90" needs it too: the dot lowering stages the rhs so for TF32, and
#: for 16-bit operands where the rhs is contracted along its last dim.
WGMMA_K_MAJOR_PROBE = (
    r"""static inline ulong accy_probe_desc(uint address) {
  return (ulong)((address & 0x3FFFF) >> 4) | ((ulong)1 << 16) | ((ulong)64 << 32) | (1UL << 62);
}
__kernel __attribute__((reqd_work_group_size(128, 1, 1))) void accy_wgmma_k_major_probe(__global float* out) {
  __local float a[64 * 32] __attribute__((aligned(1024)));
  __local float b[8 * 32] __attribute__((aligned(1024)));
  __local ushort h[64 * 64] __attribute__((aligned(1024)));
  __local ushort g[8 * 64] __attribute__((aligned(1024)));
  uint i = get_local_id(0);
  for (uint e = i; e < 64 * 32; e += 128) {  /* row m: chunk c holds k 4 (c ^ m % 8) to + 3 */
    uint m = e / 32, k = 4 * (((e % 32) / 4) ^ (m % 8)) + e % 4;
    a[e] = k < 16 ? (float)(1 + k / 4) : 0.0f;
  }
  for (uint e = i; e < 8 * 32; e += 128) {
    uint n = e / 32, k = 4 * (((e % 32) / 4) ^ n) + e % 4;
    b[e] = k < 16 ? (float)k : 0.0f;
  }
  for (uint e = i; e < 64 * 64; e += 128) h[e] = 0x3C00;  /* f16 ones */
  for (uint e = i; e < 8 * 64; e += 128) {  /* row n: chunk c holds k 8 (c ^ n) to + 7 */
    uint n = e / 64, k = 8 * (((e % 64) / 8) ^ n) + e % 8;
    vstore_half(k < 16 ? (float)k : 0.0f, 0, (__local half*)&g[e]);
  }
  asm volatile("MARKfence.proxy.async.shared::cta;" ::: "memory");
  barrier(CLK_LOCAL_MEM_FENCE);
  uint at = (uint)(ulong)a, bt = (uint)(ulong)b;
  float d0 = 0.0f, d1 = 0.0f, d2 = 0.0f, d3 = 0.0f, e0 = 0.0f, e1 = 0.0f, e2 = 0.0f, e3 = 0.0f;
  asm volatile("MARKwgmma.fence.sync.aligned;" ::: "memory");
  for (uint s = 0; s < 2; s++) {
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %6, 0;\n"
      "MARKwgmma.mma_async.sync.aligned.m64n8k8.f32.tf32.tf32 {%0,%1,%2,%3}, %4, %5, p, 1, 1;\n}"
      : "+f"(d0), "+f"(d1), "+f"(d2), "+f"(d3) : "l"(accy_probe_desc(at + 32 * s)), "l"(accy_probe_desc(bt + 32 * s)), "r"(1)
      : "memory");
  }
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %6, 0;\n"
    "MARKwgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16 {%0,%1,%2,%3}, %4, %5, p, 1, 1, 0, 0;\n}"
    : "+f"(e0), "+f"(e1), "+f"(e2), "+f"(e3) : "l"(accy_probe_desc((uint)(ulong)h)), "l"(accy_probe_desc((uint)(ulong)g)), "r"(1)
    : "memory");
  asm volatile("MARKwgmma.commit_group.sync.aligned;" ::: "memory");
  asm volatile("MARKwgmma.wait_group.sync.aligned 0;" ::: "memory");
  out[i] = d0 + d1 + d2 + d3 + e0 + e1 + e2 + e3;
}
"""
).replace("MARK", WGMMA_MARK)
#: Results of `mma_of_device` by device (platform, name, driver).
_mma_probed: dict[tuple[str, str, str], str] = {}


def mma_of_device(device: cl.Device) -> str:
    """The `mma` profile field of a device: "sm80" on an NVIDIA GPU of
    compute capability 8.0 or later whose driver builds and correctly runs
    a probe kernel of inline-PTX `mma.sync` (`MMA_PROBE`), "sm90" where the
    GPU is of 9.0 and probes of `wgmma` (`WGMMA_PROBE` in f16,
    `WGMMA_K_MAJOR_PROBE` of a k-contiguous B in TF32 and f16, built for sm_90a as
    `program_cache.sm90a_ptx` builds) run right as well, once per device
    and process; "" elsewhere. Where an NVIDIA driver refuses a probe, a
    remark says so once and the GPU dots keep the tiles it does run."""
    capability = _nvidia_capability(device)
    if capability is None or capability[0] < 8:
        return ""
    key = _device_key(device)
    if key not in _mma_probed:
        _mma_probed[key] = _probe_mma(device, capability)
    return _mma_probed[key]


def _nvidia_capability(device: cl.Device) -> tuple[int, int] | None:
    """The compute capability (major, minor) of an NVIDIA GPU, None for any other device."""
    import pyopencl as cl

    if "NVIDIA" not in str(device.vendor).upper() or not device.type & cl.device_type.GPU:
        return None
    try:
        return int(device.compute_capability_major_nv), int(device.compute_capability_minor_nv)
    except (AttributeError, cl.Error):
        return None


def _device_key(device: cl.Device) -> tuple[str, str, str]:
    """What a probe's result is kept under: (platform, name, driver)."""
    return str(device.platform.name), str(device.name), str(device.driver_version)


def _run_probe(device: cl.Device, source: str, kernel: str, out: np.ndarray) -> np.ndarray:
    """`out` as one work-group of `len(out)` work-items of `kernel` (built
    from `source` in a context of its own) writes it; raises cl.Error where
    the driver refuses the build or the launch."""
    import pyopencl as cl

    context = cl.Context([device])
    queue = cl.CommandQueue(context, device)
    program = cl.Program(context, source).build()
    if WGMMA_MARK in source:
        from accy.runtime.program_cache import program_binary, sm90a_ptx

        program = cl.Program(context, [device], [sm90a_ptx(program_binary(program))]).build()
    buffer = cl.Buffer(context, cl.mem_flags.WRITE_ONLY, out.nbytes)
    cl.Kernel(program, kernel)(queue, out.shape, out.shape, buffer)
    cl.enqueue_copy(queue, out, buffer, is_blocking=True)
    return out


def _probe_mma(device: cl.Device, capability: tuple[int, int]) -> str:
    """Builds and runs `MMA_PROBE` on one warp and, on a GPU of compute
    capability 9.0, `WGMMA_PROBE` and `WGMMA_K_MAJOR_PROBE` on one
    warpgroup: "sm90" or "sm80" as far as every work-item got its 4 · 120
    (4 · 500 of the k-major B's), else "" (and one remark why)."""
    if not _probe_runs(device, MMA_PROBE, "accy_mma_probe", 32, "inline PTX mma.sync", "GPU dots run on SIMT register tiles"):
        return ""
    if capability[0] != 9:
        return "sm80"
    instead = "GPU dots run on mma.sync tiles"
    wgmma = _probe_runs(device, WGMMA_PROBE, "accy_wgmma_probe", 128, "wgmma built for sm_90a", instead) and _probe_runs(
        device, WGMMA_K_MAJOR_PROBE, "accy_wgmma_k_major_probe", 128, "wgmma of a k-contiguous B (TF32, f16) built for sm_90a",
        instead, expect=2000.0,
    )
    return "sm90" if wgmma else "sm80"


def _probe_runs(
    device: cl.Device, source: str, kernel: str, items: int, what: str, instead: str, expect: float = 480.0
) -> bool:
    """Whether `kernel` of `source` builds and gives each of `items`
    work-items `expect`; a remark says where not."""
    import pyopencl as cl

    from accy.passes.kernelization import kernelize

    name = str(device.name).strip()
    try:
        out = _run_probe(device, source, kernel, np.zeros(items, np.float32))
    except (cl.Error, ValueError) as e:
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        kernelize.remark(f"{name}: the driver refuses {what} ({first}); {instead}")
        return False
    if not np.all(out == expect):
        kernelize.remark(f"{name}: {what} gave wrong sums in the probe; {instead}")
        return False
    return True


#: Shared memory a CUDA block may opt in to, by compute capability (CUDA's
#: `sharedMemPerBlockOptin`), less 1 KiB for what NVIDIA's OpenCL driver
#: keeps itself (a 48 KiB array's kernel reports 49156 bytes): the static
#: local arrays its OpenCL kernels may hold (`static_local_limit`).
NVIDIA_STATIC_LOCAL_BYTES = {
    (8, 0): 166912 - 1024, (8, 6): 101376 - 1024, (8, 7): 166912 - 1024, (8, 9): 101376 - 1024,
    (9, 0): 232448 - 1024,
}
#: A work-group of 256 writes every word of a static local array of WORDS
#: words (a #define before it) and reads them back reversed: the probe of `static_local_limit`.
STATIC_LOCAL_PROBE = r"""__kernel __attribute__((reqd_work_group_size(256, 1, 1))) void accy_local_probe(__global uint* out) {
  __local uint t[WORDS];
  uint l = get_local_id(0), s = 0;
  for (uint i = l; i < WORDS; i += 256) t[i] = i;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (uint i = l; i < WORDS; i += 256) s += t[WORDS - 1 - i] == WORDS - 1 - i;
  out[l] = s;
}
"""
#: Results of `static_local_limit` by device (platform, name, driver).
_static_local_probed: dict[tuple[str, str, str], int] = {}


def static_local_limit(device: cl.Device) -> int:
    """The `static_local_bytes` profile field of a device: on an NVIDIA GPU
    of a compute capability in `NVIDIA_STATIC_LOCAL_BYTES` whose driver
    builds and correctly runs `STATIC_LOCAL_PROBE` with an array that
    large, that many bytes (its `CL_DEVICE_LOCAL_MEM_SIZE` says 48 KiB:
    docs/kernel-notes.md); 0 elsewhere. Once per device and process."""
    capability = _nvidia_capability(device)
    size = NVIDIA_STATIC_LOCAL_BYTES.get(capability, 0) if capability is not None else 0
    if size <= int(device.local_mem_size):
        return 0
    key = _device_key(device)
    if key not in _static_local_probed:
        _static_local_probed[key] = size if _probe_static_local(device, size // 4) else 0
    return _static_local_probed[key]


def _probe_static_local(device: cl.Device, words: int) -> bool:
    """Whether `STATIC_LOCAL_PROBE` with an array of `words` builds and reads back every word."""
    import pyopencl as cl

    source = f"#define WORDS {words}u\n{STATIC_LOCAL_PROBE}"
    try:
        out = _run_probe(device, source, "accy_local_probe", np.zeros(256, np.uint32))
    except cl.Error:
        return False
    return int(out.sum()) == words


def profile_of_device(device: cl.Device, math_tier: str = "exact", tensor_cores: bool = False) -> TargetProfile:
    """The target profile of a pyopencl device: its kind and limits, the
    profile's defaults for tile and work-group sizes, and its tensor cores
    (`mma_of_device`, when `tensor_cores`: `tensor_cores_on()`)."""
    import pyopencl as cl

    is_cpu = bool(device.type & cl.device_type.CPU)
    extensions = set(device.extensions.split())
    from accy.dialects.target import DEFAULTS

    return DEFAULTS["cpu" if is_cpu else "gpu"].replace(
        format=FORMAT,
        math=math_tier,
        max_work_group_size=int(device.max_work_group_size),
        local_mem_bytes=int(device.local_mem_size),
        vector_width=preferred_vector_width(device),
        fp16="cl_khr_fp16" in extensions,
        fp64="cl_khr_fp64" in extensions,
        mma=mma_of_device(device) if not is_cpu and tensor_cores else "",
        static_local_bytes=0 if is_cpu else static_local_limit(device),
    )


#: Turns the tensor-core dots on for devices that have them (docs/environment.md).
TENSOR_CORES_ENV = "ACCY_TENSOR_CORES"


def tensor_cores_on() -> bool:
    """Whether an OpenCL device made now sets `mma` in its own profile
    where it has `mma.sync`: unless `$ACCY_TENSOR_CORES` is off (the
    tensor-core kernels pass tests/conformance/test_mma_dot.py on an H200
    and, emulated, on any GPU-profile device). A module's target decides
    for itself with `mma = "sm80"` or `mma = ""`."""
    from accy.env import env_optional_flag

    return env_optional_flag(TENSOR_CORES_ENV) is not False


def launch_work_group(gfunc: gpu.FuncOp, block: tuple[int, ...]) -> tuple[int, ...] | None:
    """The work-group size to launch `gfunc` with, given the launch's block
    size: the size the kernel states (`known_block_size`, which must agree
    with the launch), else `block` when the kernel depends on its work-group
    (ids or sizes of work-groups, barriers, workgroup memory), else None (the
    OpenCL implementation chooses)."""
    from xdsl.dialects import gpu, memref

    from accy.dialects.host import AddressSpace, AddressSpaceAttr

    # Ops whose presence means a kernel depends on its work-group shape.
    group_ops = (gpu.ThreadIdOp, gpu.BlockIdOp, gpu.BlockDimOp, gpu.GridDimOp, gpu.BarrierOp)
    known = gfunc.known_block_size
    if known is not None:
        stated = tuple(known.get_values())
        if stated != block:
            raise HostScheduleError(
                f"opencl runtime: @{gfunc.sym_name.data} states known_block_size {list(stated)} "
                f"but is launched with blocks of {list(block)}"
            )
        return stated
    for op in gfunc.walk():
        if isinstance(op, group_ops):
            return block
        if isinstance(op, memref.AllocaOp):
            space = op.memref.type.memory_space
            if isinstance(space, AddressSpaceAttr) and space.data == AddressSpace.WORKGROUP:
                return block
    return None


#: PoCL's worker threads, when accy had PoCL pin them (pocl_threads.py).
_pocl_workers: pocl_threads.Workers | None = None
_platforms_listed = False


def opencl_devices() -> list[cl.Device]:
    """Every device of every OpenCL platform, in platform order. The first
    call initialises PoCL (if installed) with its private cache folder and
    its worker threads pinned (where `pocl_threads.can_pin`)."""
    import pyopencl as cl

    global _pocl_workers, _platforms_listed
    before = pocl_threads.thread_ids()
    with pocl_environment() as environment:
        try:
            platforms = cl.get_platforms()
        except cl.Error:  # the ICD loader reports "no platforms" as an error
            platforms = []
        devices = [d for p in platforms for d in p.get_devices()]
    if not _platforms_listed and environment.pins:
        _pocl_workers = pocl_threads.Workers.found(before)
    _platforms_listed = True
    return devices


# --------------------------------------------------------------------------
# The host schedule, translated once
# --------------------------------------------------------------------------


@dataclass
class _Launch:
    name: str
    kind: str
    kernel: Any  # cl.Kernel
    lock: threading.Lock  # held from set_args to enqueue (the kernel is shared)
    args: list[int]
    global_size: tuple[int, ...]
    local_size: tuple[int, ...] | None


def _translate(host: func.FuncOp, built: BuiltProgram | None, gfuncs: dict[str, gpu.FuncOp]) -> _Schedule:
    from accy.backends.opencl.emitter import written_arguments

    kernels = built.kernels if built is not None else {}

    def make_launch(launch: Launch) -> _Launch:
        if launch.name not in kernels:
            raise HostScheduleError(f"opencl runtime: launch of unknown kernel @{launch.name}")
        local = list(launch.block)
        global_size = [g * b for g, b in zip(launch.grid, local, strict=True)]
        group = launch_work_group(launch.func, tuple(local))
        dims = max([1] + [i + 1 for i in range(3) if global_size[i] != 1 or local[i] != 1])
        return _Launch(
            launch.name,
            launch.kind,
            kernels[launch.name],
            built.launch_lock,  # type: ignore[union-attr]
            launch.args,
            tuple(global_size[:dims]),
            group[:dims] if group is not None else None,
        )

    return translate(host, gfuncs, make_launch, written_arguments, "opencl runtime")


# --------------------------------------------------------------------------
# Running
# --------------------------------------------------------------------------


class OpenCLProgram(Program):
    """A kernelized function on one OpenCL device."""

    def __init__(self, device: OpenCLDevice, schedule: _Schedule, source: str, built: BuiltProgram | None) -> None:
        self.device = device
        self.schedule = schedule
        self.source = source
        #: The options the kernels were built with (kept in the compile cache with the source).
        self.build_options = ""
        #: The built kernels (None when the function has none).
        self.built = built
        self.stats = RunStats(peak_bytes=schedule.peak_bytes, fallbacks=schedule.fallbacks)
        self.results = result_layouts(schedule)
        # Constant buffers nobody writes are uploaded once and kept, in the
        # device's pool (counted as CONSTANT) until the program is dropped.
        self._constants: dict[int, Any] = {}
        self._constants_lock = threading.Lock()
        weakref.finalize(self, _release_constants, device.pool, self._constants).atexit = False
        #: Inputs of the last call that ran in place (no copy), by argument index.
        self.in_place: list[bool] = []
        #: Whether a call has started (the first runs interruptibly: `run`).
        self._ran = False
        #: Whether PoCL's workers are pinned while this program runs (pocl_threads.py).
        self.pinned = pocl_threads.wants_pinned(sum(schedule.arg_nbytes) + schedule.peak_bytes)

    def describe(self) -> str:
        """One line per step: what `ACCY_DEBUG=1` prints."""
        return describe(self.schedule, _Launch, _launch_line)

    def _constant(self, step: _Constant, queue: Any, keep: list[Any], stats: RunStats) -> Any:
        import pyopencl as cl

        if not step.rewritten:
            with self._constants_lock:
                buf = self._constants.get(step.slot)
                if buf is None:
                    # An empty constant gets a 1-byte buffer (OpenCL has no
                    # empty ones); no kernel reads an element of it.
                    buf = self.device.pool.acquire(step.data.nbytes, CONSTANT)
                    if step.data.nbytes:
                        cl.enqueue_copy(self.device.queue, buf, step.data, is_blocking=True)
                        stats.upload(step.data.nbytes)
                    self._constants[step.slot] = buf
            return buf
        buf = self._acquire(step.nbytes, queue)
        if step.data.nbytes:
            keep.append(cl.enqueue_copy(queue, buf, step.data, is_blocking=False))  # see `_Steps`: `keep`
            stats.upload(step.data.nbytes)
        keep.append(step.data)
        return buf

    def _acquire(self, nbytes: int, queue: Any) -> Any:
        """A pool buffer for a call on `queue`."""
        buf = self.device.pool.acquire(nbytes)
        if queue is not self.device.queue:
            # Kernels queued on the main queue by another call may still use
            # it (released mid-call there): let them finish first.
            self.device.queue.finish()
        return buf

    def _input(
        self, i: int, array: Any, queue: Any, keep: list[Any], owned: set[int], in_place_flags: list[bool], stats: RunStats
    ) -> Any:
        """Argument `i`'s buffer: an `accy.Array`'s own (a copy on the device
        when a kernel writes it), a numpy array's memory in place (see the
        module docstring), else a pool buffer it is copied into."""
        import pyopencl as cl

        s = self.schedule
        if isinstance(array, Array):
            in_place_flags.append(not s.arg_written[i])
            if not s.arg_written[i]:
                return array.buffer
            buf = self._acquire(s.arg_nbytes[i], queue)
            owned.add(id(buf))
            if array.nbytes:
                cl.enqueue_copy(queue, buf, array.buffer, byte_count=array.nbytes)
            return buf
        flat = array.reshape(-1)
        if flat.dtype == np.bool_:
            flat = flat.view(np.int8)
        keep.append(flat)
        in_place = (
            self.device.host_unified_memory
            and not s.arg_written[i]
            and flat.nbytes == s.arg_nbytes[i]
            and flat.nbytes > 0
            and flat.flags.c_contiguous
            # Aligned vector accesses may take the start as a multiple of ARGUMENT_ACCESS_BYTES
            # (numpy's arrays are): an array that starts elsewhere (a view) is copied.
            and flat.ctypes.data % ARGUMENT_ACCESS_BYTES == 0
        )
        in_place_flags.append(in_place)
        if in_place:
            self.device.pool.check_size(flat.nbytes)  # the driver's bound holds for host memory too
            return cl.Buffer(self.device.context, cl.mem_flags.READ_ONLY | cl.mem_flags.USE_HOST_PTR, hostbuf=flat)
        buf = self._acquire(s.arg_nbytes[i], queue)
        owned.add(id(buf))
        if flat.nbytes:
            keep.append(cl.enqueue_copy(queue, buf, np.ascontiguousarray(flat), is_blocking=False))
            stats.upload(flat.nbytes)
        return buf

    def run(self, inputs: list[Any], profile: bool = False, to_host: bool = True) -> list[Any]:
        if not self._ran and self.built is not None:
            # The first run: a driver may still compile at a kernel's first
            # launch (PoCL does, minutes for a long fused chain, where the
            # user turned its work-group specialisation back on:
            # program_cache.py); Ctrl-C must not wait for it.
            self._ran = True
            return interruptible(partial(self._run, inputs, profile, to_host))
        return self._run(inputs, profile, to_host)

    def _run(self, inputs: list[Any], profile: bool, to_host: bool) -> list[Any]:
        import pyopencl as cl

        s = self.schedule
        device = self.device
        if device.pocl_workers is not None:
            device.pocl_workers.pin(self.pinned)
        queue = device.profiling_queue if profile else device.queue
        pool = device.pool
        stats = RunStats(kernels=s.launches, launches=s.launches_per_call, peak_bytes=s.peak_bytes, fallbacks=s.fallbacks)
        steps = _Steps(self, cl, queue, profile, to_host, stats)
        bufs, owned, keep = steps.bufs, steps.owned, steps.keep
        in_place: list[bool] = []
        # A call on device arrays that returns device arrays does not wait for
        # its kernels: its results carry a marker event (`Array.block_until_ready`),
        # and everything that reads them later is queued behind it on the same
        # in-order queue. Host inputs (the user may change them once the call
        # returns), host fallbacks and profiling keep the call synchronous.
        asynchronous = not to_host and steps.release_early and not s.fallbacks and all(type(a) is Array for a in inputs)
        done = False
        try:
            for i, (slot, array) in enumerate(zip(s.arg_slots, inputs, strict=True)):
                if type(array) is Array and not s.arg_written[i]:  # the warm path of a chain of calls: as it is
                    bufs[slot] = array.buffer
                    in_place.append(True)
                else:
                    bufs[slot] = self._input(i, array, queue, keep, owned, in_place, stats)
            steps.run(s.steps)
            if to_host:
                outputs: list[Any] = self._read_results(bufs, steps.hosts, queue, stats, keep)
            else:
                outputs = result_arrays(device, self.results, bufs, _taker(bufs, owned), partial(_copy, queue))
                if asynchronous:
                    ready = cl.enqueue_marker(queue)
                    for array in outputs:
                        array.pending(ready, keep)
            done = True
        finally:
            if not (done and asynchronous):
                queue.finish()
            for buf in bufs:
                if buf is not None and id(buf) in owned:
                    owned.discard(id(buf))
                    pool.release(buf)
        if profile:
            records = steps.records
            for step, event in steps.events:
                seconds = (event.profile.end - event.profile.start) * 1e-9
                records.append(LaunchProfile(step.name, step.kind, step.global_size, step.local_size, seconds))
            stats.profile = records
        self.stats = stats
        self.in_place = in_place
        return outputs

    def _host_result(self, step: _Alloc) -> tuple[np.ndarray, Any]:
        """A flat host array for a result (one a dropped result left, or a
        fresh one: `Device.recycled_results`) and a buffer over it. It is aligned to
        the device's base address alignment so that the driver uses it in
        place (PoCL copies an unaligned host pointer)."""
        import pyopencl as cl

        pool = self.device.pool
        pool.check_size(step.nbytes)
        try:
            host = self.device.recycled_results.take(step.nbytes, self.device.host_align).view(step.dtype)
        except MemoryError:
            raise pool.out_of_memory_error(step.nbytes) from None
        flags = cl.mem_flags.READ_WRITE | cl.mem_flags.USE_HOST_PTR
        return host, cl.Buffer(self.device.context, flags, hostbuf=host)

    def _read_results(
        self, bufs: list[Any], hosts: dict[int, np.ndarray], queue: Any, stats: RunStats, keep: list[Any]
    ) -> list[np.ndarray]:
        """The results as fresh host arrays, their copies queued (`run` waits
        for the queue; the copies' events go to `keep`)."""
        import pyopencl as cl

        outputs = []
        returned: set[int] = set()
        if hosts:
            # A blocking map waits for the kernels holding the GIL; finish waits without it.
            queue.finish()
        for r in self.results:
            slot = r.slot
            if slot in hosts and slot not in returned:  # a slot returned twice gets a copy the second time
                # Mapping waits for the kernels and makes the host array coherent.
                mapped, _ = cl.enqueue_map_buffer(
                    queue, bufs[slot], cl.map_flags.READ, 0, hosts[slot].shape, hosts[slot].dtype, is_blocking=True
                )
                mapped.base.release(queue)
                returned.add(slot)
                host = hosts[slot].reshape(r.shape)
            else:
                host = np.empty(r.shape, r.storage)
                if r.nbytes:
                    keep.append(cl.enqueue_copy(queue, host.reshape(-1), bufs[slot], is_blocking=False))
                    stats.download(r.nbytes)
            outputs.append(host.view(np.bool_) if r.is_bool else host)
        return outputs


def _launch_line(step: _Launch) -> str:
    local = "x".join(map(str, step.local_size)) if step.local_size else "-"
    return f"{step.name} ({step.kind}) global {'x'.join(map(str, step.global_size))} local {local}"


class _Steps(StepExecutor):
    """One call's steps on `queue` (the module docstring): launches enqueued
    back to back, a fallback waiting for the queue."""

    LAUNCH = _Launch
    __slots__ = (
        "program", "cl", "queue", "device", "pool", "owned", "keep", "hosts",
        "events", "stats", "to_host", "release_early", "trace",
    )  # fmt: skip

    def __init__(
        self, program: OpenCLProgram, cl: Any, queue: Any, profile: bool, to_host: bool, stats: RunStats
    ) -> None:
        StepExecutor.__init__(self, program.schedule.num_slots, profile)  # not super(): 0.1 us of every call
        self.program = program
        self.cl = cl  # pyopencl (imported when a device is made, not with this module)
        self.queue = queue
        self.device = device = program.device
        self.pool = device.pool
        self.owned: set[int] = set()  # ids of pool buffers this call holds
        # Host arrays that queued copies read from, and the copies' events:
        # pyopencl's event of a copy to or from a host array waits for the
        # copy when it is dropped, holding the GIL (every other thread, Ctrl-C
        # included, then waits for the queue: a first launch's compile took
        # minutes); dropped after `queue.finish()`, which waits without it.
        self.keep: list[Any] = []
        self.hosts: dict[int, np.ndarray] = {}  # result slots written in place: slot -> flat host array
        self.events: list[tuple[_Launch, Any]] = []
        self.stats = stats
        self.to_host = to_host
        # Buffers freed mid-call go back to the pool at once only on the queue
        # every other call uses (see the module docstring).
        self.release_early = queue is device.queue
        self.trace = debug_level() >= 2  # ACCY_DEBUG=2: each launch as it is enqueued

    def launch(self, step: _Launch) -> None:
        if self.trace:
            local = list(step.local_size or [])
            debug(2, f"accy: launch @{step.name} ({step.kind}) global {list(step.global_size)} local {local}")
        bufs = self.bufs
        with step.lock:
            step.kernel.set_args(*(bufs[a] for a in step.args))
            event = self.cl.enqueue_nd_range_kernel(self.queue, step.kernel, step.global_size, step.local_size)
        if self.profile:
            self.events.append((step, event))

    def alloc(self, step: _Alloc) -> None:
        bufs = self.bufs
        device = self.device
        if self.to_host and step.result and device.host_unified_memory and step.nbytes >= HOST_RESULT_MIN_BYTES:
            self.hosts[step.slot], bufs[step.slot] = self.program._host_result(step)
        else:
            bufs[step.slot] = self.program._acquire(step.nbytes, self.queue)
            self.owned.add(id(bufs[step.slot]))
        if device.poison and step.nbytes:
            self.cl.enqueue_fill_buffer(self.queue, bufs[step.slot], poison_pattern(step.dtype), 0, step.nbytes)

    def free(self, step: _Free) -> None:
        buf = self.bufs[step.slot]
        if self.release_early and id(buf) in self.owned:
            self.owned.discard(id(buf))
            self.pool.release(buf)

    def constant(self, step: _Constant) -> None:
        buf = self.bufs[step.slot] = self.program._constant(step, self.queue, self.keep, self.stats)
        if step.rewritten:
            self.owned.add(id(buf))

    def copy(self, step: Copy) -> None:
        if step.nbytes:
            bufs = self.bufs
            self.cl.enqueue_copy(self.queue, bufs[step.target], bufs[step.source], byte_count=step.nbytes)

    def fallback(self, step: _Fallback) -> None:
        cl = self.cl
        queue = self.queue
        bufs = self.bufs
        arrays = []
        copies = []  # dropped once the queue is done (see `__init__`: `keep`)
        for slot, t in zip(step.inputs, fallback_input_types(step), strict=True):
            host = np.empty(math.prod(t.get_shape()), _storage_dtype(t.element_type))
            if host.nbytes:
                copies.append(cl.enqueue_copy(queue, host, bufs[slot], is_blocking=False))
                self.stats.download(host.nbytes)
            arrays.append(host)
        queue.finish()
        del copies
        for slot, value in zip(step.outputs, evaluate_fallback(step, arrays), strict=True):
            if value.nbytes:
                cl.enqueue_copy(queue, bufs[slot], value, is_blocking=True)
                self.stats.upload(value.nbytes)


def interruptible(work: Callable[[], T]) -> T:
    """`work()`, run in a daemon thread while the main thread waits for it,
    so that Ctrl-C (a KeyboardInterrupt, which Python raises in the main
    thread only, between bytecodes) stops the wait at once: a PoCL build or
    first launch holds the main thread in C for as long as it takes
    (29.8 s before a Ctrl-C was seen). The interrupted work runs on to its
    end in its thread, which does not keep the process alive. Called from
    another thread, `work()` runs there (no signal arrives in it).

    The thread lives on for the next work (`_BuildThread`): with a new
    thread each time, builds spread over glibc's thread arenas, each of
    which kept pages of the builds it had held, and 200 distinct programs
    grew RSS by 7-12 MiB from run to run, now and then 21-23 MiB (one
    thread: 6.6-6.7 MiB in every run, what PoCL keeps a program)."""
    global _build_thread
    if threading.current_thread() is not threading.main_thread():
        return work()
    if _build_thread is None or _build_thread.busy:  # busy: an interrupted work still runs there
        _build_thread = _BuildThread()
    return _build_thread.run(work)


def work_in_flight() -> bool:
    """Whether interrupted work still runs in a build thread (finalizing the
    interpreter under a PoCL build crashed: accy-run leaves with os._exit)."""
    return any(thread.busy for thread in _BuildThread.started)


class _BuildThread:
    """A daemon thread that runs one `work()` at a time for `interruptible`."""

    started: weakref.WeakSet[_BuildThread] = weakref.WeakSet()

    def __init__(self) -> None:
        import queue

        self.busy = False
        self._jobs: queue.SimpleQueue[Callable[[], None]] = queue.SimpleQueue()
        threading.Thread(target=self._serve, name="accy-opencl-build", daemon=True).start()
        _BuildThread.started.add(self)

    def _serve(self) -> None:
        while True:
            self._jobs.get()()
            if _build_thread is not self:  # replaced while interrupted work ran here
                return

    def run(self, work: Callable[[], T]) -> T:
        outcome: list[Any] = []
        done = threading.Event()

        def job() -> None:
            try:
                outcome.append((True, work()))
            except BaseException as e:  # re-raised in the caller's thread
                outcome.append((False, e))
            finally:
                self.busy = False
                done.set()

        self.busy = True
        self._jobs.put(job)
        while not done.wait(0.05):  # a bounded wait returns to the interpreter, which runs the signal handler
            pass
        ok, value = outcome[0]
        if not ok:
            raise value
        return value


_build_thread: _BuildThread | None = None


def _taker(bufs: list[Any], owned: set[int]) -> Any:
    """`take(slot)` for `result_arrays`: the slot's buffer, no longer the call's, when the call owned it."""

    def take(slot: int) -> Any:
        buf = bufs[slot]
        if id(buf) not in owned:
            return None
        owned.discard(id(buf))
        return buf

    return take


def _copy(queue: Any, dst: Any, src: Any, nbytes: int) -> None:
    import pyopencl as cl

    cl.enqueue_copy(queue, dst, src, byte_count=nbytes)


def _release_constants(pool: MemoryPool, constants: dict[int, Any]) -> None:
    """Gives a dropped program's constant buffers back to the pool."""
    for buf in constants.values():
        pool.release(buf, CONSTANT)
    constants.clear()


# --------------------------------------------------------------------------
# The device
# --------------------------------------------------------------------------


class OpenCLDevice(KernelDevice):
    """The index-th OpenCL device (the first when None); see the module
    docstring. `poison` fills allocated buffers with NaN / a sentinel before
    each call's launches (default: the environment variable ACCY_POISON=1).
    `pool_max_bytes` bounds the idle buffers of the memory pool (default
    `$ACCY_POOL_MAX_BYTES`, else a quarter of the device's global memory);
    `memory_limit` all the bytes of the pool, in use and cached (default
    `$ACCY_MEMORY_LIMIT`, else the device's global memory; also settable as
    `device.memory_limit`); `program_cache_size` the programs kept in memory
    (default `$ACCY_PROGRAM_CACHE_SIZE`, else 128)."""

    FORMAT = FORMAT
    ARTIFACT = "OpenCL C"

    def __init__(
        self,
        index: int | None = None,
        poison: bool | None = None,
        pool_max_bytes: int | None = None,
        program_cache_size: int | None = None,
        memory_limit: int | None = None,
    ) -> None:
        import pyopencl as cl

        devices = opencl_devices()
        #: The private folder accy gives PoCL for its cache (program_cache.py); PoCL
        #: keeps its own choice if something initialised it before accy did.
        self.pocl_cache_dir = isolate_pocl_cache()
        if not devices:
            from accy.runtime import program_cache

            # PoCL reports no device when its cache folder is unusable: say so.
            why = f"; {program_cache.pocl_dir_error}, which PoCL needs" if program_cache.pocl_dir_error else ""
            raise RuntimeError(INSTALL_HINT + why)
        i = 0 if index is None else index
        if not 0 <= i < len(devices):
            listing = "; ".join(f"opencl:{n} = {d.name.strip()}" for n, d in enumerate(devices))
            raise ValueError(f"no OpenCL device {i}: there are {len(devices)} ({listing})")
        self.cl_device = devices[i]
        self.poison = poison_from_env(poison)
        #: Whether this device's own profile uses its tensor cores (`tensor_cores_on()`).
        self.tensor_cores = tensor_cores_on()
        self.index = i
        self.name = "opencl" if index is None else f"opencl:{i}"
        self.description = f"{self.cl_device.platform.name.strip()}: {self.cl_device.name.strip()}"
        self.context = cl.Context([self.cl_device])
        self.queue = cl.CommandQueue(self.context, self.cl_device)
        self._profiling_queue: Any = None
        self._queue_lock = threading.Lock()
        self.host_unified_memory = bool(getattr(self.cl_device, "host_unified_memory", False)) or bool(
            self.cl_device.type & cl.device_type.CPU
        )
        if pool_max_bytes is None:
            pool_max_bytes = pool_max_bytes_from_env(int(self.cl_device.global_mem_size) // 4)
        if memory_limit is None:
            memory_limit = memory_limit_from_env(int(self.cl_device.global_mem_size))
        self.cpu = bool(self.cl_device.type & cl.device_type.CPU)
        #: Host buffers the device uses in place are aligned to its base address alignment (bits -> bytes):
        #: PoCL copies an unaligned host pointer.
        self.host_align = max(1, int(self.cl_device.mem_base_addr_align) // 8)
        self.pool = MemoryPool(
            self.context,
            max_free_bytes=pool_max_bytes,
            limit=memory_limit,
            name=self.name,
            max_buffer_bytes=int(self.cl_device.max_mem_alloc_size),
            host_backed=self.cpu,  # see memory.py: an allocation PoCL cannot make aborts the process
            align=self.host_align,
        )
        self.programs = ProgramCache(self.context, self.cl_device, max_entries=program_cache_size)
        #: PoCL's worker threads, switched per call (pocl_threads.py); None elsewhere.
        self.pocl_workers = _pocl_workers if self.cpu and "Portable Computing Language" in self.description else None

    @property
    def profiling_queue(self) -> cl.CommandQueue:
        import pyopencl as cl

        with self._queue_lock:
            if self._profiling_queue is None:
                self._profiling_queue = cl.CommandQueue(
                    self.context, self.cl_device, properties=cl.command_queue_properties.PROFILING_ENABLE
                )
            return self._profiling_queue

    def wait_idle(self) -> None:
        """Waits until nothing queued on this device is running or pending."""
        self.queue.finish()
        with self._queue_lock:
            profiling = self._profiling_queue
        if profiling is not None:
            profiling.finish()

    def target_profile(self, math_tier: str = "exact") -> TargetProfile:
        """The device's own profile (what it fills in of a module's target)."""
        return profile_of_device(self.cl_device, math_tier, self.tensor_cores)

    # -- buffers of accy.Arrays (Device; on the main queue, blocking) ---------

    def write_buffer(self, buffer: cl.Buffer, host: np.ndarray) -> None:
        import pyopencl as cl

        cl.enqueue_copy(self.queue, buffer, host.reshape(-1).view(np.uint8), is_blocking=True)

    def read_buffer(self, buffer: cl.Buffer, host: np.ndarray) -> None:
        import pyopencl as cl

        cl.enqueue_copy(self.queue, host.reshape(-1).view(np.uint8), buffer, is_blocking=True)

    def copy_buffer(self, dst: cl.Buffer, src: cl.Buffer, nbytes: int) -> None:
        _copy(self.queue, dst, src, nbytes)
        self.queue.finish()

    def profile_for(self, module: ModuleOp) -> TargetProfile:
        """The complete profile `module` compiles with here: its target's set
        fields, the device's profile for the rest (module docstring, step 1)."""
        device = self.target_profile()
        from accy.dialects.target import target_fields

        fields = target_fields(module)
        profile = device.filled_by(fields)
        self.check_format(profile)
        for name in _HARD_LIMITS:
            if getattr(profile, name) > getattr(device, name):
                raise TargetMismatch(
                    f"the module's target sets {name} = {getattr(profile, name)}, more than device "
                    f"'{self.name}' ({self.description}) has: {getattr(device, name)}"
                )
        if profile.static_local_bytes > device.local_capacity:
            raise TargetMismatch(
                f"the module's target sets static_local_bytes = {profile.static_local_bytes}, more than device "
                f"'{self.name}' ({self.description}) builds: {device.local_capacity}"
            )
        for name, extension, instead in _ELEMENT_EXTENSIONS:
            if getattr(profile, name) and not getattr(device, name):
                raise TargetMismatch(
                    f"the module's target sets {name} = true, but device '{self.name}' ({self.description}) lacks "
                    f"{extension} (with {name} = false, or the field left out, {instead})"
                )
        has = mma_of_device(self.cl_device)
        if profile.mma in ("sm80", "sm90") and has not in (profile.mma, "sm90"):
            what = "mma.sync" if profile.mma == "sm80" else "wgmma"
            raise TargetMismatch(
                f"the module's target sets mma = \"{profile.mma}\", but device '{self.name}' ({self.description}) has no "
                f"{what} that its driver builds (mma = \"emulate\" runs the mma.sync kernels on any GPU-profile device)"
            )
        return profile

    def load(self, module: ModuleOp, fn: str) -> OpenCLProgram:
        """A program for function `fn` of an already kernelized module."""
        host = host_function(module, fn)
        from accy.backends.opencl.emitter import build_options, emit_opencl, kernel_funcs

        gfuncs = {f.sym_name.data: f for f in kernel_funcs(module)} if has_kernels(module) else {}
        with phase("codegen"):
            source = kernel_source(fn, "cl", emit_opencl(module)) if gfuncs else ""
            options = build_options(module)
        with phase("build"):
            built = interruptible(partial(self.programs.get, source, options)) if gfuncs else None
        program = OpenCLProgram(self, _translate(host, built, gfuncs), source, built)
        program.build_options = options
        return program

    # -- the compile cache (compile_cache.py) ------------------------------

    def cache_identity(self) -> str:
        """The platform, device and driver, and pyopencl's version: what the
        kernels' binaries (program_cache.py) and the profile depend on."""
        from importlib import metadata

        import pyopencl as cl

        d = self.cl_device
        try:
            pyopencl = metadata.version("pyopencl")
        except metadata.PackageNotFoundError:
            pyopencl = getattr(cl, "VERSION_TEXT", "unknown")
        parts = (d.platform.name, d.platform.version, d.name, d.version, d.driver_version, f"pyopencl={pyopencl}")
        return "|".join(str(p).strip() for p in parts)

    def source_identity(self) -> str:
        """`cache_identity()` and what `profile_of_device` reads of the device."""
        d = self.cl_device
        profile = (
            int(d.type), d.extensions, d.max_work_group_size, d.local_mem_size, d.preferred_vector_width_float,
            f"tensor_cores={self.tensor_cores}",
        )
        return f"{type(self).__name__}:{self.cache_identity()}|{'|'.join(str(p).strip() for p in profile)}"

    def freeze(self, program: Program) -> bytes | None:
        """The schedule (launch steps without their `cl.Kernel` and lock),
        the OpenCL C source and its build options; None for a program with
        host fallbacks. The binary is the program cache's (program_cache.py:
        a verified disk binary, so `thaw` builds nothing)."""
        assert isinstance(program, OpenCLProgram)
        schedule = program.schedule
        if schedule.fallbacks:
            return None

        def strip(step: _Launch) -> _Launch:
            local = list(step.local_size) if step.local_size is not None else None
            return replace(step, kernel=None, lock=None, global_size=list(step.global_size), local_size=local)

        steps = map_steps(schedule.steps, strip, _Launch)
        extra = {"source": program.source, "options": program.build_options}
        try:
            return pack_schedule(replace(schedule, steps=steps), extra, _Launch)
        except TypeError:  # a step the payload format does not hold: not kept
            return None

    def thaw(self, payload: bytes) -> OpenCLProgram | None:
        """The program `freeze` wrote, its kernels from the program cache."""
        unpacked = unpack_schedule(payload, _Launch)
        if unpacked is None:  # written by another accy, or damaged: compile again
            return None
        schedule, extra = unpacked
        if not isinstance(extra, dict) or set(extra) != {"source", "options"}:
            return None
        source, options = extra["source"], extra["options"]
        if not isinstance(source, str) or not isinstance(options, str):
            return None
        launches = [step for step in walk_steps(schedule.steps) if isinstance(step, _Launch)]
        if launches and not source:
            return None
        built = interruptible(partial(self.programs.get, source, options)) if source else None
        kernels = built.kernels if built is not None else {}
        for step in launches:
            if step.name not in kernels or not all(isinstance(n, int) for n in step.global_size):
                return None
            step.kernel = kernels[step.name]
            step.lock = built.launch_lock  # type: ignore[union-attr]
            step.global_size = tuple(step.global_size)
            step.local_size = tuple(step.local_size) if step.local_size is not None else None
        program = OpenCLProgram(self, schedule, source, built)
        program.build_options = options
        return program


