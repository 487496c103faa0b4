"""LLVM's optimisation and code generation in a worker process, so that a
long-lived process compiling many distinct programs stays flat in memory.

Why: llvmlite 0.50's `ModulePassManager.run` keeps ~200 KiB of native memory
per module it optimises at O2/O3 and never frees it (its pass-instrumentation
callbacks are registered into a `PassInstrumentationCallbacks` that is never
deleted; measured with llvmlite alone: 218 KiB a module at O3, 109 at O1,
3 at O0, whatever is disposed). Nothing accy can free from Python. What
does not grow is loading object code into an MCJIT engine through its object
cache (the disk cache's path: ~0 KiB a module). So past its first
`IN_PROCESS_COMPILES` distinct modules a process hands the optimisation and
code generation of each further module to a worker process that does exactly
what `JitCache` does in process and sends back the object code; the caller
loads it as it loads a disk cache entry. The worker is replaced after
`WORKER_COMPILES` modules, which bounds its own growth (~55 MiB at 256).

The worker runs this file as a script: it imports llvmlite and the standard
library only (start-up ~0.1 s, paid once per `WORKER_COMPILES` modules),
runs in a session of its own (a Ctrl-C at the terminal reaches only the
caller, which kills it on exit), and reads requests from its stdin until
end of file. Protocol, both ways: a 4-byte little-endian length, then a
payload; a request is a JSON object (`ir`, `triple`, `cpu`, `features`,
`opt`), a reply one status byte (0: object code follows; 1: an error message
follows) and the bytes.

Any failure of the worker (it cannot start, dies, or reports an error) makes
`compile_object` return None: the caller then compiles in process, where the
same error, if any, is raised as it always was.

`ACCY_LLVM_WORKER`: `auto` (default: as above), `always` (from the first
module; the tests use it), `never` (in process only).
"""

from __future__ import annotations

import atexit
import json
import os
import struct
import subprocess
import sys
import threading
from typing import IO, Any

#: Distinct modules a process optimises itself before it uses the worker: a
#: short-lived process (a script, a test) never pays the worker's start-up.
IN_PROCESS_COMPILES = 32
#: Modules one worker process compiles before it is replaced.
WORKER_COMPILES = 256
WORKER_ENV = "ACCY_LLVM_WORKER"
_MODES = ("auto", "always", "never")

_HEADER = struct.Struct("<I")


def worker_mode() -> str:
    """`$ACCY_LLVM_WORKER`, checked (default `auto`)."""
    from accy.env import env_choice  # here: the worker runs this file as a script, on the standard library alone

    return env_choice(WORKER_ENV, _MODES, "auto")


def _send(stream: IO[bytes], payload: bytes) -> None:
    stream.write(_HEADER.pack(len(payload)) + payload)
    stream.flush()


def _receive(stream: IO[bytes]) -> bytes | None:
    header = stream.read(_HEADER.size)
    if len(header) < _HEADER.size:
        return None
    (size,) = _HEADER.unpack(header)
    payload = stream.read(size)
    return payload if len(payload) == size else None


class _Worker:
    """One worker process and the modules it has compiled."""

    def __init__(self) -> None:
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
        self.process = subprocess.Popen(
            [sys.executable, "-u", __file__],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=env,
            start_new_session=True,
        )
        self.pid = os.getpid()
        self.compiled = 0

    def compile(self, request: bytes) -> bytes | None:
        assert self.process.stdin is not None and self.process.stdout is not None
        _send(self.process.stdin, request)
        reply = _receive(self.process.stdout)
        self.compiled += 1
        if not reply or reply[0] != 0:
            return None
        return reply[1:]

    def close(self) -> None:
        try:
            if self.process.stdin is not None:
                self.process.stdin.close()
            self.process.wait(timeout=2)
        except (OSError, subprocess.TimeoutExpired):
            self.process.kill()
        finally:
            if self.process.stdout is not None:
                self.process.stdout.close()


class WorkerPool:
    """The process's worker (one at a time, behind a lock)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._worker: _Worker | None = None
        self.in_process = 0  # modules optimised in this process
        self.by_worker = 0
        self.restarts = 0

    def wants_worker(self) -> bool:
        """Whether the next module should go to the worker (and counts one
        in-process compile when not)."""
        mode = worker_mode()
        if mode == "never" or (mode == "auto" and self.in_process < IN_PROCESS_COMPILES):
            self.in_process += 1
            return False
        return True

    def compile_object(self, ir_text: str, triple: str, cpu: str, features: str, opt: int) -> bytes | None:
        """The object code of `ir_text`, optimised and generated by the
        worker; None where the worker could not (see the module docstring)."""
        request = json.dumps({"ir": ir_text, "triple": triple, "cpu": cpu, "features": features, "opt": opt}).encode()
        with self._lock:
            try:
                worker = self._worker
                if worker is None or worker.pid != os.getpid() or worker.compiled >= WORKER_COMPILES:
                    if worker is not None and worker.pid == os.getpid():
                        worker.close()
                        self.restarts += 1
                    worker = self._worker = _Worker()
                code = worker.compile(request)
            except (OSError, ValueError):
                code = None
            if code is None:
                self._drop()
            else:
                self.by_worker += 1
            return code

    def _drop(self) -> None:
        if self._worker is not None:
            if self._worker.pid == os.getpid():
                self._worker.close()
            self._worker = None

    def close(self) -> None:
        with self._lock:
            self._drop()


POOL = WorkerPool()
atexit.register(POOL.close)


def _serve() -> None:  # pragma: no cover - runs in the worker process
    """The worker's loop: optimise and generate, as `JitCache._compile` does."""
    import llvmlite.binding as llvm

    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    while (payload := _receive(stdin)) is not None:
        try:
            request: dict[str, Any] = json.loads(payload)
            code = optimise_and_generate(llvm, request["ir"], request["triple"], request["cpu"], request["features"], request["opt"])
            _send(stdout, b"\0" + code)
        except Exception as e:  # every failure is the caller's to redo in process
            _send(stdout, b"\1" + str(e).encode(errors="replace"))


def optimise_and_generate(llvm: Any, ir_text: str, triple: str, cpu: str, features: str, opt: int) -> bytes:
    """The O`opt` pipeline (loop and SLP vectorisation on) and MCJIT's code
    generation of `ir_text`: the object code an engine's object cache sees."""
    mod = llvm.parse_assembly(ir_text)
    mod.verify()
    target = llvm.Target.from_triple(triple)
    tm = target.create_target_machine(cpu=cpu, features=features, opt=opt)
    pto = llvm.create_pipeline_tuning_options(speed_level=opt)
    pto.loop_vectorization = True
    pto.slp_vectorization = True
    pb = llvm.create_pass_builder(tm, pto)
    pb.getModulePassManager().run(mod, pb)
    produced: list[bytes] = []
    # create_mcjit_compiler takes ownership of its target machine: a fresh one.
    engine = llvm.create_mcjit_compiler(mod, target.create_target_machine(cpu=cpu, features=features, opt=opt))
    engine.set_object_cache(lambda _module, buffer: produced.append(bytes(buffer)), lambda _module: None)
    engine.finalize_object()
    if not produced:
        raise RuntimeError("MCJIT produced no object code")
    return produced[0]


if __name__ == "__main__":  # pragma: no cover
    _serve()
