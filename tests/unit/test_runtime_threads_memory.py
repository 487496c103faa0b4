"""The OpenCL runtime under threads and over many programs: one executable,
and two of the same source (which share kernel objects), called from eight
threads at a 1 us switch interval give the reference's results; the
in-memory program cache and the buffer pool stay within their bounds and
evict the least recently used, and evicted programs still run right."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("pyopencl")

from templates import EXP_MUL_SUM  # noqa: E402

from accy.runtime import opencl as ocl  # noqa: E402
from accy.runtime.executable import compile as accy_compile  # noqa: E402
from accy.runtime.memory import MemoryPool  # noqa: E402

pytestmark = pytest.mark.skipif(not ocl.opencl_devices(), reason="no OpenCL device")

PROGRAMS = Path(__file__).parent.parent / "programs"


# Eight threads call executables at a 1 us switch interval: one executable
# shared by all (the program on stdin), and two executables of one source
# (mlp.mlir; their kernels are the same cl.Kernel objects; it frees an
# intermediate buffer mid-call), iterate.mlir (a loop of kernels whose
# buffers swap roles every trip) and fallback.mlir (a work item on the host
# reference path between two kernels). Every result is checked
# against the reference interpreter; some calls profile (a second queue).
THREADS_WORKER = r"""
import sys, threading
import accy
from accy.runtime.devices import get_device
from accy.runtime.executable import Comparison

calls, programs, inline = int(sys.argv[1]), sys.argv[2:], sys.stdin.read()
device = get_device("opencl")
shared = accy.compile(inline, device=device)
twins = [accy.compile(programs[0], device=device) for _ in range(2)]
others = [accy.compile(p, device=device) for p in programs[1:]]
assert twins[0].program.built is twins[1].program.built and shared.program.built is not None
# A few input sets per executable and the reference's outputs for them,
# computed up front so that the threads spend their time calling.
cases = {}
for exe in (shared, *twins, *others):
    sets = [exe.random_inputs(seed) for seed in range(3)]
    cases[id(exe)] = [(inputs, exe.reference_outputs(inputs)) for inputs in sets]
sys.setswitchinterval(1e-6)
failures, done = [], [0] * 8

def work(t):
    for i in range(calls):
        exe = (shared, twins[t % 2], shared, twins[(t + 1) % 2], others[(t + i) % len(others)])[i % 5]
        inputs, expected = cases[id(exe)][(t + i) % 3]
        outputs = exe(*inputs, profile=(i % 37 == 5))
        if not all(Comparison.of(g, e).ok for g, e in zip(outputs, expected, strict=True)):
            failures.append((t, i))
        done[t] += 1

threads = [threading.Thread(target=work, args=(t,)) for t in range(8)]
for t in threads:
    t.start()
for t in threads:
    t.join()
print("calls", sum(done), "failures", len(failures), failures[:5])
"""


def test_executables_are_safe_to_call_from_eight_threads(tmp_path):
    # A crash inside the driver would take pytest down: a separate process.
    calls = 250
    proc = subprocess.run(
        [sys.executable, "-c", THREADS_WORKER, str(calls), str(PROGRAMS / "mlp.mlir"), str(PROGRAMS / "iterate.mlir"), str(PROGRAMS / "fallback.mlir")],
        input=EXP_MUL_SUM.format(r=5, c=19),
        env={**os.environ, "ACCY_CACHE_DIR": str(tmp_path)},
        capture_output=True,
        text=True,
        timeout=300,  # bounds a hang; the run takes a few seconds
    )
    assert proc.returncode == 0, f"exit {proc.returncode}\n{proc.stderr[-3000:]}"
    assert proc.stdout.split()[:4] == ["calls", str(8 * calls), "failures", "0"], proc.stdout


@pytest.fixture
def fresh_device(monkeypatch, tmp_path):
    """A device of its own (its own pool and program cache), caching on disk under tmp_path."""
    monkeypatch.setenv("ACCY_CACHE_DIR", str(tmp_path))

    def make(**kwargs: int) -> ocl.OpenCLDevice:
        return ocl.OpenCLDevice(**kwargs)

    return make


def check(exe, seed: int) -> None:
    inputs = exe.random_inputs(seed)
    comparisons = exe.compare_with_reference(inputs, exe(*inputs))
    assert comparisons and all(c.ok for c in comparisons), comparisons


def test_program_cache_keeps_its_bound_and_evicted_programs_still_run(fresh_device):
    device = fresh_device(program_cache_size=3)
    sizes = [(3, c) for c in (5, 6, 7, 9, 11, 13, 17)]
    exes = []
    for n, (r, c) in enumerate(sizes):
        exes.append(accy_compile(EXP_MUL_SUM.format(r=r, c=c), device=device))
        check(exes[-1], n)
        assert len(device.programs) == min(n + 1, 3)
    cache = device.programs
    assert cache.misses == len(sizes) and cache.evictions == len(sizes) - 3
    for n, exe in enumerate(exes):  # the evicted ones included
        check(exe, 100 + n)
    # The most recent program is a hit; the oldest was evicted: a miss, served
    # from the binary stored on disk after its first run.
    accy_compile(EXP_MUL_SUM.format(r=3, c=17), device=device)
    assert cache.hits == 1
    accy_compile(EXP_MUL_SUM.format(r=3, c=5), device=device)
    assert cache.misses == len(sizes) + 1 and cache.disk_loads == 1 and len(cache) == 3


def test_pool_stays_under_its_limit_across_many_sizes(fresh_device):
    limit = 16 * 1024
    device = fresh_device(pool_max_bytes=limit)
    for n, c in enumerate((3, 64, 5, 700, 9, 3000, 33)):
        exe = accy_compile(EXP_MUL_SUM.format(r=4, c=c), device=device)
        for call in range(2):
            check(exe, 10 * n + call)
            assert device.pool.free_bytes <= limit
    assert device.pool.stats.evicted > 0  # the larger programs' buffers did not all fit
    assert device.pool.stats.reused > 0


def test_pool_evicts_least_recently_released(fresh_device):
    device = fresh_device()
    pool = MemoryPool(device.context, max_free_bytes=1000, max_free_per_size=2)
    a, b, c, d = (pool.acquire(n) for n in (400, 300, 400, 400))
    for buf in (a, b, c):
        pool.release(buf)
    assert pool.free_bytes == 1100 - 400 and len(pool) == 2  # a (oldest) went to stay within 1000
    assert pool.stats.evicted == 1
    pool.release(d)  # 1100 bytes again: b, now the oldest, goes
    assert pool.free_bytes == 800 and len(pool) == 2
    assert pool.acquire(400) is d and pool.acquire(400) is c and pool.free_bytes == 0
    for buf in (a, c, d):
        pool.release(buf)
    assert len(pool) == 2  # at most two of one size
    pool.release(pool.acquire(5000))
    assert pool.free_bytes <= 1000
    pool.clear()
    assert pool.free_bytes == 0 and len(pool) == 0
