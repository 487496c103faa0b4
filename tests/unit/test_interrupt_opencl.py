"""Ctrl-C while PoCL compiles (issue 19): a program's build on PoCL
compiles each kernel and its work-group function (program_cache.py; they
were compiled at the first run until issue 24), minutes for a long chain of
transcendental ops; SIGINT then must end accy-run at once with one
`accy-run: interrupted` line and exit status 130, no traceback. (It took
29.8 s and more: the compile ran in the main thread, and pyopencl's dropped
copy events waited for it holding the GIL.)"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
#: Far less than the uninterrupted build (minutes on a 2-core machine), far more than an exit.
EXIT_WITHIN_S = 20


def _chain(n: int) -> str:
    """n transcendental ops one after the other on 1,000 floats: a few seconds to kernelize, long for PoCL to compile."""
    t = "tensor<1000xf32>"
    ops = ["sin", "cos", "tanh", "exp"]
    lines = [f"func.func @main(%a: {t}) -> {t} {{"]
    prev = "%a"
    for i in range(n):
        lines.append(f'  %v{i} = "accy.{ops[i % len(ops)]}"({prev}) : ({t}) -> {t}')
        prev = f"%v{i}"
    lines += [f"  func.return {prev} : {t}", "}"]
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("cache", ["off", "fresh"])
def test_ctrl_c_during_the_build_on_pocl_exits_at_once(cache: str, tmp_path: Path) -> None:
    pytest.importorskip("pyopencl")
    from accy.runtime import opencl as ocl

    if not ocl.opencl_devices():
        pytest.skip("no OpenCL device")
    prog = tmp_path / "chain.mlir"
    prog.write_text(_chain(300))
    env = {
        **os.environ,
        "ACCY_DEBUG": "1",  # says when the kernels are made and proved in bounds: the build comes next
        "ACCY_CACHE_DIR": "off" if cache == "off" else str(tmp_path / "cache"),
    }
    child = subprocess.Popen(
        [sys.executable, "-m", "accy.cli.run", str(prog), "--device", "opencl"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert child.stderr is not None
        seen = []
        for line in child.stderr:
            seen.append(line)
            if line.startswith("accy: every load and store"):  # kernelized; the build comes next
                break
        else:
            pytest.fail(f"accy-run ended before building: {''.join(seen)}")
        time.sleep(1)
        assert child.poll() is None, "the build ended within a second: the program is too small to test this"
        child.send_signal(signal.SIGINT)
        sent = time.monotonic()
        out, err = child.communicate(timeout=EXIT_WITHIN_S)
        waited = time.monotonic() - sent
    except subprocess.TimeoutExpired:
        child.kill()
        _, err = child.communicate()
        pytest.fail(f"accy-run did not exit within {EXIT_WITHIN_S} s of SIGINT; its stderr ended:\n{err[-2000:]}")
    assert child.returncode == 130, (child.returncode, err)
    assert err.strip().splitlines()[-1] == "accy-run: interrupted"
    assert "Traceback" not in err and "internal error" not in err and out == ""
    assert waited < EXIT_WITHIN_S


@pytest.mark.parametrize("fetch", ["program_binary", "program_binary_sizes"])
def test_the_binary_fetch_lets_other_threads_run(fetch: str) -> None:
    """On PoCL, fetching a program's binary compiles its work-group
    functions (program_cache.py). pyopencl's `program.binaries` held the
    GIL for all of it, so `interruptible`'s main thread could not run and a
    Ctrl-C landing then waited for the compile's end: the test above failed
    now and then (when its SIGINT fell in the fetch, not in the build).
    `program_binary` lets go of the GIL: the main thread runs throughout;
    so does `program_binary_sizes`, which compiles them as well (the fetch
    without a disk cache)."""
    pytest.importorskip("pyopencl")
    from accy.runtime import opencl as ocl

    if not ocl.opencl_devices():
        pytest.skip("no OpenCL device")
    import pyopencl as cl

    from accy.runtime import program_cache

    body = "\n".join(f"  x = {('sin', 'cos', 'tanh', 'exp')[i % 4]}(x);" for i in range(300))
    # A source of each case's own: PoCL keeps this process's compiled work-group functions.
    source = f"__kernel void k(__global float* a) {{ size_t i = get_global_id(0); float x = a[i] + {len(fetch)}.0f;\n{body}\n  a[i] = x; }}"
    device = ocl.opencl_devices()[0]
    context = cl.Context([device])
    program = cl.Program(cl._cl._Program(context, source))
    program.build(devices=[device])
    span: list[float] = []
    binary: list[bytes] = []

    def run() -> None:
        span.append(time.perf_counter())
        got = getattr(program_cache, fetch)(program)
        binary.append(got if isinstance(got, bytes) else b"x" * got[0])
        span.append(time.perf_counter())

    worker = threading.Thread(target=run, daemon=True)
    ticks = []
    worker.start()
    while worker.is_alive():
        worker.join(0.02)
        ticks.append(time.perf_counter())
    assert binary and len(binary[0]) > 0
    start, end = span
    if end - start < 0.3:
        pytest.skip(f"the fetch took {end - start:.2f} s: the driver compiles nothing there")
    # The middle of the fetch: away from its ends, where the worker is in Python.
    middle = [t for t in ticks if start + 0.2 * (end - start) < t < end - 0.2 * (end - start)]
    assert middle, f"the main thread did not run during the {end - start:.2f} s fetch"


def test_interruptible_work_runs_on_one_thread_and_an_interrupted_one_is_left_to_finish() -> None:
    """`interruptible` runs each build on one long-lived thread (a new
    thread each time spread builds over glibc's arenas: RSS over distinct
    programs varied 7-23 MiB, test_memory_distinct_programs). Work that a
    Ctrl-C left running keeps its thread; the next work gets a new one."""
    import ctypes

    from accy.runtime import opencl as ocl

    if threading.current_thread() is not threading.main_thread():
        pytest.skip("interruptible runs work in a thread of its own only when called from the main thread")
    ran_on = [ocl.interruptible(threading.get_ident) for _ in range(3)]
    assert len(set(ran_on)) == 1 and ran_on[0] != threading.get_ident()
    with pytest.raises(ZeroDivisionError):
        ocl.interruptible(lambda: 1 / 0)
    assert ocl.interruptible(threading.get_ident) == ran_on[0], "an exception in the work ended its thread"

    release, started = threading.Event(), threading.Event()

    def stuck() -> int:
        started.set()
        release.wait(30)
        return threading.get_ident()

    # What a Ctrl-C does to the waiting main thread, as an exception raised
    # in it from another thread (in a full run _thread.interrupt_main()
    # once reached no handler within 30 s).
    main = threading.get_ident()

    def interrupt() -> None:
        started.wait(30)
        ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(main), ctypes.py_object(KeyboardInterrupt))

    threading.Thread(target=interrupt, daemon=True).start()
    with pytest.raises(KeyboardInterrupt):
        ocl.interruptible(stuck)
    try:
        assert ocl.work_in_flight()
        other = ocl.interruptible(threading.get_ident)  # does not wait for the interrupted work
        assert other not in (ran_on[0], threading.get_ident())
        assert ocl.interruptible(threading.get_ident) == other
    finally:
        release.set()
    deadline = time.monotonic() + 30
    while ocl.work_in_flight() and time.monotonic() < deadline:
        time.sleep(0.01)
    assert not ocl.work_in_flight()
