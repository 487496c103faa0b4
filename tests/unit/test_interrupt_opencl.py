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
        child.communicate()
        pytest.fail(f"accy-run did not exit within {EXIT_WITHIN_S} s of SIGINT")
    assert child.returncode == 130, (child.returncode, err)
    assert err.strip().splitlines()[-1] == "accy-run: interrupted"
    assert "Traceback" not in err and "internal error" not in err and out == ""
    assert waited < EXIT_WITHIN_S
