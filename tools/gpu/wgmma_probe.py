"""Does Hopper's `wgmma` reach accy's kernels through NVIDIA's OpenCL? (issue 23)

NVIDIA's OpenCL compiles OpenCL C to PTX for `.target sm_90`, where ptxas
refuses `wgmma.*` ("not supported on .target 'sm_90'"), and ignores
`-cl-nv-arch sm_90a`; but it builds and runs a PTX *binary* whose
`.target` says `sm_90a` (docs/kernel-notes.md, "wgmma is reachable"). So:
write each wgmma instruction as a PTX comment (`// ACCYWG ...`) in inline
asm, whose operands the compiler still substitutes and allocates; build the
source; take its PTX (the program's binary); uncomment the marked lines and
set `.target sm_90a`; build that as a binary and run it.

This probe checks one warpgroup's `wgmma.mma_async m64nNk16` (f16 in, f32
accumulators) from shared-memory descriptors in the no-swizzle core-matrix
layout, for N = 8, 64 and 256 (128 accumulator operands in one asm), both
readings of the descriptor's two byte offsets, against numpy. It prints one
line per case, and the PTX's header lines.

    tools/gpu/nvidia_opencl.sh python3 tools/gpu/wgmma_probe.py
"""

from __future__ import annotations

import re
import sys

import numpy as np

MARK = "// ACCYWG "


def kernel(n: int) -> str:
    """One work-group of 128 (a warpgroup): D = 1 + A·B for A 64 x 16 and B
    16 x n (given as [n][k], K-major), staged in 8 x 8 core matrices, core
    (row group, k group) at ((group · 2) + k group) · 128 bytes."""
    regs = n // 2
    slots = ",".join(f"%{i}" for i in range(regs))
    outs = ", ".join(f'"+f"(c{i})' for i in range(regs))
    stores = []
    for i in range(regs):
        j, e = divmod(i, 4)
        row = f"16 * w + g + {8 * (e // 2)}"
        col = f"{8 * j} + 2 * q + {e % 2}"
        stores.append(f"  d[({row}) * {n} + {col}] = c{i};")
    store_lines = "\n".join(stores)
    init = ", ".join(f"c{i} = 1.0f" for i in range(regs))
    return f"""
ulong accy_desc(uint addr, uint lbo, uint sbo) {{
  return (ulong)((addr & 0x3FFFF) >> 4) | ((ulong)((lbo >> 4) & 0x3FFF) << 16) | ((ulong)((sbo >> 4) & 0x3FFF) << 32);
}}

__kernel __attribute__((reqd_work_group_size(128, 1, 1)))
void wg(__global const ushort* a, __global const ushort* b, __global float* d, uint lbo, uint sbo) {{
  __local ushort la[64 * 16] __attribute__((aligned(128)));
  __local ushort lb[{n} * 16] __attribute__((aligned(128)));
  int t = get_local_id(0);
  for (int i = t; i < 64 * 16; i += 128) {{
    int r = i / 16, k = i % 16;
    la[((r / 8) * 2 + k / 8) * 64 + (r % 8) * 8 + k % 8] = a[i];
  }}
  for (int i = t; i < {n} * 16; i += 128) {{
    int r = i / 16, k = i % 16;
    lb[((r / 8) * 2 + k / 8) * 64 + (r % 8) * 8 + k % 8] = b[i];
  }}
  barrier(CLK_LOCAL_MEM_FENCE);
  asm volatile("{MARK}fence.proxy.async.shared::cta;" ::: "memory");
  ulong da = accy_desc((uint)(ulong)la, lbo, sbo);
  ulong db = accy_desc((uint)(ulong)lb, lbo, sbo);
  float {init};
  asm volatile("{MARK}wgmma.fence.sync.aligned;" ::: "memory");
  asm volatile("{{\\n.reg .pred p;\\nsetp.ne.b32 p, %{regs + 2}, 0;\\n"
               "{MARK}wgmma.mma_async.sync.aligned.m64n{n}k16.f32.f16.f16 {{{slots}}}, %{regs}, %{regs + 1}, p, 1, 1, 0, 0;\\n}}"
               : {outs} : "l"(da), "l"(db), "r"(1) : "memory");
  asm volatile("{MARK}wgmma.commit_group.sync.aligned;" ::: "memory");
  asm volatile("{MARK}wgmma.wait_group.sync.aligned 0;" ::: "memory");
  int w = t / 32, g = (t % 32) / 4, q = t % 4;
{store_lines}
}}
"""


#: The GEMM's shape: a work-group of two warpgroups, each 64 x 256 of a
#: 128 x 256 block (m64n256k16, 128 f32 accumulators a work-item); k steps
#: of 64 (128-byte rows: one 128B-swizzle atom of 8 rows is 1024 bytes) in
#: STAGES buffers, cp.async copies STAGES - 2 steps ahead (a buffer is
#: refilled only once both warpgroups' wgmmas of it are done).
BM, BN, BK, STAGES = 128, 256, 64, 4
A_BYTES, B_BYTES = BM * BK * 2, BK * BN * 2


def gemm(instr_n: int = BN) -> str:
    """C = A·B for f16 A [M][K], B [K][N] (row-major), C f16 [M][N]; M, N,
    K multiples of the block. A staged K-major, B MN-major (trans-b), both
    128B-swizzled: 16-byte chunk c of a 128-byte row r at c ^ (r % 8).
    Each k16 step is BN / instr_n wgmmas of m64n{instr_n}k16."""
    regs = BN // 2
    init = ", ".join(f"c{i} = 0.0f" for i in range(regs))
    wgmmas = []
    per = instr_n // 2
    for j in range(BK // 16):
        for h in range(BN // instr_n):
            accs = range(h * per, (h + 1) * per)
            slots = ",".join(f"%{i}" for i in range(per))
            outs = ", ".join(f'"+f"(c{i})' for i in accs)
            b_step = (2 * 1024 * j + h * (instr_n // 64) * (BK // 8) * 1024) >> 4
            wgmmas.append(
                f'    asm volatile("{{\\n.reg .pred p;\\nsetp.ne.b32 p, %{per + 2}, 0;\\n"\n'
                f'                 "{MARK}wgmma.mma_async.sync.aligned.m64n{instr_n}k16.f32.f16.f16 {{{slots}}}, %{per}, %{per + 1}, p, 1, 1, 0, 1;\\n}}"\n'
                f'                 : {outs} : "l"(da + {2 * j}), "l"(db + {b_step}), "r"(1) : "memory");'
            )
    stores = []
    for j in range(BN // 8):
        for half in range(2):
            a, b = 4 * j + 2 * half, 4 * j + 2 * half + 1
            stores.append(
                f"  vstore_half2_rte((float2)(c{a}, c{b}), 0, (__global half*)(c + (m0 + 16 * w + g + {8 * half}) * N + n0 + {8 * j} + 2 * q));"
            )
    wgmma_lines = "\n".join(wgmmas)
    store_lines = "\n".join(stores)
    return f"""
#define STAGES {STAGES}
#define A_BYTES {A_BYTES}
#define B_BYTES {B_BYTES}

ulong accy_desc(uint addr, uint lbo_field, uint sbo_field) {{
  return (ulong)((addr & 0x3FFFF) >> 4) | ((ulong)(lbo_field & 0x3FFF) << 16) | ((ulong)(sbo_field & 0x3FFF) << 32) | (1UL << 62);
}}

inline uint swz(uint off) {{ return off ^ ((off >> 3) & 0x70); }}

inline void copy_stage(__local uchar* smem, int stage, __global const ushort* a, __global const ushort* b,
                       long K, long N, long m0, long n0, long k0, int t) {{
  __local uchar* sa = smem + stage * (A_BYTES + B_BYTES);
  __local uchar* sb = sa + A_BYTES;
  for (int i = 0; i < {BM * BK // 8 // 256}; i++) {{
    int id = t + 256 * i, row = id / 8, col = id % 8;
    __global const ushort* src = a + (m0 + row) * K + k0 + col * 8;
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" :: "r"((uint)(ulong)(sa + swz(row * 128 + col * 16))), "l"(src) : "memory");
  }}
  for (int i = 0; i < {BK * BN // 8 // 256}; i++) {{
    int id = t + 256 * i, kr = id / {BN // 8}, chunk = id % {BN // 8};
    int atom = chunk / 8, cia = chunk % 8;
    __global const ushort* src = b + (k0 + kr) * N + n0 + chunk * 8;
    uint off = (atom * {BK // 8} + kr / 8) * 1024 + swz((kr % 8) * 128 + cia * 16);
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" :: "r"((uint)(ulong)(sb + off)), "l"(src) : "memory");
  }}
}}

__kernel __attribute__((reqd_work_group_size(256, 1, 1)))
void gemm(__global const ushort* a, __global const ushort* b, __global ushort* c, long M, long N, long K,
          uint b_lbo, uint b_sbo) {{
  __local uchar smem[STAGES * (A_BYTES + B_BYTES)] __attribute__((aligned(1024)));
  int t = get_local_id(0);
  int w = t / 32, g = (t % 32) / 4, q = t % 4;
  int wg = t / 128;
  long m0 = get_group_id(1) * {BM}, n0 = get_group_id(0) * {BN};
  long steps = K / {BK};
  for (int s = 0; s < STAGES - 2; s++) {{
    if (s < steps) copy_stage(smem, s, a, b, K, N, m0, n0, s * {BK}, t);
    asm volatile("cp.async.commit_group;" ::: "memory");
  }}
  float {init};
  w = w % 4;
  for (long i = 0; i < steps; i++) {{
    asm volatile("cp.async.wait_group {STAGES - 3};" ::: "memory");
    asm volatile("{MARK}fence.proxy.async.shared::cta;" ::: "memory");
    barrier(CLK_LOCAL_MEM_FENCE);
    int stage = i % STAGES;
    uint sa = (uint)(ulong)(smem + stage * (A_BYTES + B_BYTES));
    ulong da = accy_desc(sa + wg * 64 * 128, 1, 1024 >> 4);
    ulong db = accy_desc(sa + A_BYTES, b_lbo, b_sbo);
    asm volatile("{MARK}wgmma.fence.sync.aligned;" ::: "memory");
{wgmma_lines}
    asm volatile("{MARK}wgmma.commit_group.sync.aligned;" ::: "memory");
    asm volatile("{MARK}wgmma.wait_group.sync.aligned 1;" ::: "memory");
    long next = i + STAGES - 2;
    if (next < steps) copy_stage(smem, next % STAGES, a, b, K, N, m0, n0, next * {BK}, t);
    asm volatile("cp.async.commit_group;" ::: "memory");
  }}
  asm volatile("{MARK}wgmma.wait_group.sync.aligned 0;" ::: "memory");
  m0 += wg * 64;
{store_lines}
}}
"""


def built(context, device, source: str, name: str):
    """The source built to PTX, patched, and built again as a binary; None (and why) where it fails."""
    import pyopencl as cl

    try:
        program = cl.Program(context, source).build()
    except cl.Error as e:
        print(f"{name}: the source did not build: {str(e)[-1500:]}")
        return None
    ptx = program.get_info(cl.program_info.BINARIES)[0]
    try:
        binary = cl.Program(context, [device], [patched(ptx)]).build()
    except (cl.Error, RuntimeError) as e:
        print(f"{name}: the patched PTX did not build: {str(e)[-3000:]}")
        return None
    log = binary.get_build_info(device, cl.program_build_info.LOG).strip()
    if log:
        print(f"{name}: build log: {log[-1500:]}")
    return binary


#: The trans-b descriptor's two offsets in both readings: the next 64-column
#: atom 8 k-groups of 1024 bytes on, the next 8 k rows 1024 bytes on.
VARIANTS = {"lbo=atom,sbo=krows": (8 * 1024 >> 4, 1024 >> 4), "lbo=krows,sbo=atom": (1024 >> 4, 8 * 1024 >> 4)}


def run_gemm(context, device, queue, instr_n: int, variant: str) -> int:
    import pyopencl as cl

    binary = built(context, device, gemm(instr_n), f"gemm m64n{instr_n}")
    if binary is None:
        return 1
    mf = cl.mem_flags
    rng = np.random.default_rng(1)
    good = None
    variants = {variant: VARIANTS[variant]}
    for m, n, k in ((256, 512, 192), (128, 256, 64), (4096, 4096, 4096)):
        a = rng.standard_normal((m, k)).astype(np.float16)
        b = rng.standard_normal((k, n)).astype(np.float16)
        want = a.astype(np.float32) @ b.astype(np.float32)
        ab = cl.Buffer(context, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=a.view(np.uint16))
        bb = cl.Buffer(context, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=b.view(np.uint16))
        cb = cl.Buffer(context, mf.READ_WRITE, m * n * 2)
        kern = cl.Kernel(binary, "gemm")
        for name, (lbo, sbo) in variants.items():
            if good is not None and name != good:
                continue
            got = np.full((m, n), np.nan, np.float16)
            cl.enqueue_copy(queue, cb, got, is_blocking=True)
            args = (ab, bb, cb, np.int64(m), np.int64(n), np.int64(k), np.uint32(lbo), np.uint32(sbo))
            kern(queue, (n // BN * 256, m // BM), (256, 1), *args)
            cl.enqueue_copy(queue, got, cb, is_blocking=True)
            err = np.abs(got.astype(np.float32) - want)
            ok = bool(np.all(err <= 2e-3 * np.abs(want) + 1e-2))
            print(f"gemm m64n{instr_n} {m}x{n}x{k} {name}: {'OK' if ok else 'WRONG'} max error {float(np.nanmax(err)):.3g} (|C| up to {float(np.abs(want).max()):.3g})")
            if ok and good is None:
                good = name
        if good is None:
            return 1
    # Timing at 4096^3: device time by profiling events, median of 30.
    m = n = k = 4096
    pq = cl.CommandQueue(context, device, properties=cl.command_queue_properties.PROFILING_ENABLE)
    lbo, sbo = variants[good]
    a = rng.standard_normal((m, k)).astype(np.float16)
    b = rng.standard_normal((k, n)).astype(np.float16)
    ab = cl.Buffer(context, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=a.view(np.uint16))
    bb = cl.Buffer(context, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=b.view(np.uint16))
    cb = cl.Buffer(context, mf.READ_WRITE, m * n * 2)
    kern = cl.Kernel(binary, "gemm")
    times = []
    for _ in range(40):
        ev = kern(pq, (n // BN * 256, m // BM), (256, 1), ab, bb, cb, np.int64(m), np.int64(n), np.int64(k), np.uint32(lbo), np.uint32(sbo))
        ev.wait()
        times.append((ev.profile.end - ev.profile.start) * 1e-6)
    ms = float(np.median(times[10:]))
    print(f"gemm m64n{instr_n} 4096 f16 wgmma: {ms:.3f} ms, {2 * m * n * k / ms / 1e9:.0f} TFLOP/s")
    try:
        import torch

        ta, tb = torch.from_numpy(a).cuda(), torch.from_numpy(b).cuda()
        for _ in range(10):
            torch.matmul(ta, tb)
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        tt = []
        for _ in range(30):
            start.record()
            torch.matmul(ta, tb)
            end.record()
            torch.cuda.synchronize()
            tt.append(start.elapsed_time(end))
        tms = float(np.median(tt))
        print(f"torch f16 matmul: {tms:.3f} ms; accy wgmma probe {tms / ms:.2f}x torch")
    except Exception as e:  # noqa: BLE001 (torch is optional here)
        print(f"torch: {type(e).__name__}: {e}")
    return 0


def patched(ptx: bytes) -> bytes:
    """The PTX with the marked lines uncommented and `.target sm_90a`."""
    text = ptx.decode().rstrip("\0")
    marked = text.count(MARK)
    text = text.replace(MARK, "")
    text, targets = re.subn(r"^(\s*\.target\s+sm_90)\b(?!a)", r"\1a", text, flags=re.M)
    if not marked or targets != 1:
        raise RuntimeError(f"{marked} marked lines, {targets} .target lines patched")
    return text.encode() + b"\0"


def main(argv: list[str]) -> int:
    import subprocess

    import pyopencl as cl

    if argv:  # one GEMM case, in a process of its own: a wrong descriptor faults the context
        devices = [d for p in cl.get_platforms() for d in p.get_devices() if "NVIDIA" in d.vendor.upper()]
        context = cl.Context(devices[:1])
        return run_gemm(context, devices[0], cl.CommandQueue(context, devices[0]), int(argv[0]), argv[1])

    devices = [d for p in cl.get_platforms() for d in p.get_devices() if "NVIDIA" in d.vendor.upper()]
    if not devices:
        print("no NVIDIA OpenCL device")
        return 1
    device = devices[0]
    context = cl.Context([device])
    queue = cl.CommandQueue(context, device)
    rng = np.random.default_rng(0)
    failed = 0
    for n in (8, 64, 256):
        source = kernel(n)
        try:
            program = cl.Program(context, source).build()
        except cl.Error as e:
            print(f"n={n}: the source did not build: {str(e)[-1500:]}")
            failed += 1
            continue
        ptx = program.get_info(cl.program_info.BINARIES)[0]
        if n == 8:
            print("\n".join(line for line in ptx.decode(errors="replace").splitlines()[:30] if line.startswith(".")))
            print(next((line for line in ptx.decode(errors="replace").splitlines() if "wgmma.mma_async" in line), "no wgmma line"))
        try:
            binary = cl.Program(context, [device], [patched(ptx)]).build()
        except (cl.Error, RuntimeError) as e:
            print(f"n={n}: the patched PTX did not build: {str(e)[-3000:]}")
            failed += 1
            continue
        a = rng.standard_normal((64, 16)).astype(np.float16)
        b = rng.standard_normal((n, 16)).astype(np.float16)  # [n][k]
        want = 1.0 + a.astype(np.float32) @ b.astype(np.float32).T
        mf = cl.mem_flags
        ab = cl.Buffer(context, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=a.view(np.uint16))
        bb = cl.Buffer(context, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=b.view(np.uint16))
        db = cl.Buffer(context, mf.WRITE_ONLY, 64 * n * 4)
        for lbo, sbo in ((128, 256),):  # LBO along k, SBO along m/n (the probe of 2026-12-07; the other reading faults)
            got = np.full((64, n), np.nan, np.float32)
            cl.enqueue_copy(queue, db, got, is_blocking=True)
            cl.Kernel(binary, "wg")(queue, (128,), (128,), ab, bb, db, np.uint32(lbo), np.uint32(sbo))
            cl.enqueue_copy(queue, got, db, is_blocking=True)
            error = float(np.nanmax(np.abs(got - want))) if not np.isnan(got).all() else float("nan")
            ok = np.allclose(got, want, rtol=1e-3, atol=1e-3)
            print(f"n={n} lbo={lbo} sbo={sbo}: {'OK' if ok else 'WRONG'} max error {error:.3g}")
    for instr_n in (256, 128):
        for variant in VARIANTS:
            sys.stdout.flush()
            done = subprocess.run([sys.executable, __file__, str(instr_n), variant], timeout=120, check=False)
            if done.returncode == 0:
                break
        else:
            failed += 1
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
