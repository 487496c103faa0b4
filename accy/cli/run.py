"""`accy-run`: compile one function of an `.mlir` file for a device and run it.

    accy-run prog.mlir --random 0                      # print the outputs
    accy-run prog.mlir --inputs in.npz --out out.npz   # arg0, arg1, ... -> out0, ...
    accy-run prog.mlir --device opencl --check         # against the reference
    accy-run prog.mlir --stats --profile
    accy-run prog.mlir --tune                          # tuned first (docs/tuning.md)
    cat prog.mlir | accy-run -                         # the program from standard input

`--stats` prints one JSON object on one line, the last line of stdout.
Errors are one `accy-run: error: ...` line (a located diagnostic for bad IR)
and exit status 1, a program that does not fit in memory included (checked
before its inputs are drawn or read: `Executable.check_memory`). The exit
statuses are `EXIT_STATUSES` (`--help` and the README list them): `--check`
past tolerance is 3, Ctrl-C 130 after one `accy-run: interrupted` line. A
reader that closes the output early (`accy-run f.mlir | head -1`) ends the
run quietly with status 0, as Unix tools do.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import textwrap
import time
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

from accy.cli import STARTED
from accy.cli.diagnostics import (
    BAD_INPUT,
    INTERNAL_ERROR,
    INTERRUPTED,
    USAGE_ERROR,
    ToolError,
    run_tool,
    stdout_closed,
    wants_traceback,
)
from accy.cli.process import run_as_program
from accy.cli.version import VersionAction
from accy.progress import quieted

if TYPE_CHECKING:
    import numpy as np

    from accy.cli.onnx_backend import OnnxProgram
    from accy.runtime.executable import Executable

TOOL = "accy-run"
CHECK_FAILED = 3
#: The file name that reads the program from standard input.
STDIN = "-"

#: accy-run's exit statuses, as `--help` shows them (README.md's accy-run section lists the same).
EXIT_STATUSES: dict[int, str] = {
    0: "success (an output pipe closed early, as by `| head`, included)",
    BAD_INPUT: "bad input: a program that does not parse, verify or compile, a missing or unreadable file, "
    "an unknown device, inputs of the wrong shape or dtype, a program past the device's memory, "
    "an ACCY_* variable outside its values",
    USAGE_ERROR: "usage error: a flag argparse rejects (unknown, missing its value, or of the wrong type)",
    CHECK_FAILED: "--check: the results differ from the reference interpreter beyond tolerance",
    INTERNAL_ERROR: "internal error: a bug in accy (rerun with --traceback for details)",
    INTERRUPTED: "interrupted (Ctrl-C)",
}


def _epilog() -> str:
    rows = (
        textwrap.fill(meaning, 79, initial_indent=f"  {status:<4} ", subsequent_indent=" " * 7)
        for status, meaning in EXIT_STATUSES.items()
    )
    return "exit status:\n" + "\n".join(rows) + "\n"


# numpy and the runtime (which imports it) are imported where they are used:
# `main` may then give numpy's OpenBLAS one thread before it starts (see
# `_one_blas_thread`).


def _parser() -> argparse.ArgumentParser:
    from accy.runtime.devices import known_devices

    p = argparse.ArgumentParser(
        prog=TOOL,
        description="Compile a function of an .mlir file for a device and run it.",
        epilog=_epilog(),
        # The epilog is a table: kept as written, not re-wrapped.
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument(
        "file",
        help=f"the .mlir file, or an ONNX model (*.onnx: --check compares with onnx's reference evaluator); "
        f"'{STDIN}' reads the program from standard input",
    )
    p.add_argument("--fn", default="main", help="the function to run (default: main)")
    given = p.add_mutually_exclusive_group()
    given.add_argument("--inputs", metavar="FILE.npz", help="arguments as arrays arg0, arg1, ... in an .npz file")
    given.add_argument(
        "--random",
        metavar="SEED",
        type=int,
        help="random arguments: standard normal floats, 0/1 for i1, integers in [-5, 5] (default: seed 0)",
    )
    p.add_argument("--out", metavar="FILE.npz", help="write the results as out0, out1, ... instead of printing them")
    p.add_argument(
        "--device", default="auto",
        help=f"where to run ({', '.join(known_devices())}; default: auto, an OpenCL GPU when one works, else llvm)",
    )
    p.add_argument("--check", action="store_true", help=f"compare with the reference interpreter; exit {CHECK_FAILED} past tolerance")
    p.add_argument(
        "--stats",
        action="store_true",
        help="print one JSON line: device, kernels, launches, peak_bytes, compile_s, run_s, fallbacks, compile_cached, "
        "uploads, upload_bytes, downloads, download_bytes (and jit_s, jit_kernels, jit_cached on llvm); where the time "
        "went: import_s (accy-run's modules loaded and the device opened), parse_s (the text parsed, xDSL's dialects "
        "loaded), passes_s (kernelize and the rest), codegen_s (kernel sources printed), build_s (the device's "
        "build or cache load, on PoCL each kernel's work-group function included), first_launch_s (the first call)",
    )
    p.add_argument("--profile", action="store_true", help="print each kernel launch: name, kind, sizes, device time")
    p.add_argument("--strict", action="store_true", help="fail instead of running a work item on the host reference path")
    p.add_argument("--traceback", action="store_true", help="show Python tracebacks (for debugging accy)")
    p.add_argument("--quiet", action="store_true", help="no progress line on stderr (drawn on a terminal when a compile runs past a second)")
    p.add_argument("--tune", action="store_true", help="tune the program on the device first (as ACCY_TUNE=1; docs/tuning.md): one summary line on stderr")
    p.add_argument("--version", action=VersionAction)
    return p


def _onnx_program(name: str) -> OnnxProgram | None:
    """The ONNX model a file named *.onnx holds, imported; None for MLIR."""
    if not name.endswith(".onnx"):
        return None
    try:
        from accy.cli.onnx_backend import OnnxProgram
    except ModuleNotFoundError as e:
        raise ToolError(f"running an ONNX model needs the {e.name} package: pip install 'accy[onnx]'") from None
    return OnnxProgram.read(name)


def read_program(name: str) -> str | Path:
    """What `compile` reads for the file argument `name`: the text of
    standard input for `-`, else the path, which must be a file."""
    if name == STDIN:
        text = sys.stdin.read()
        # `compile` takes a one-line str naming a file (or ending in .mlir) for a path: a newline keeps it text.
        return text if "\n" in text else text + "\n"
    if not Path(name).is_file():
        raise ToolError(f"no such file: '{name}'")
    return Path(name)


#: How a zip archive (an .npz) starts: a local file header, or the end record of an empty archive.
ZIP_MAGICS = (b"PK\x03\x04", b"PK\x05\x06")
NPY_MAGIC = b"\x93NUMPY"


def read_npz(path: str) -> dict[str, np.ndarray]:
    """Every array of the .npz file at `path`, read now (numpy reads lazily,
    so a damaged member would otherwise fail later); ToolError saying what
    is wrong with the file otherwise."""
    import numpy as np

    p = Path(path)
    if p.is_dir():
        raise ToolError(f"'{path}' is a directory, not an .npz file")
    if not p.is_file():
        raise ToolError(f"no such file: '{path}'")
    with p.open("rb") as f:
        head = f.read(6)
    if not head:
        raise ToolError(f"'{path}' is empty, not an .npz archive with keys arg0, arg1, ...")
    if head.startswith(NPY_MAGIC):
        raise ToolError(f"'{path}' is a single .npy array, not an .npz archive with keys arg0, arg1, ...")
    if not head.startswith(ZIP_MAGICS):
        raise ToolError(f"'{path}' is not an .npz file (np.savez writes a zip archive; this is not one)")
    try:
        with np.load(p, allow_pickle=False) as archive:
            return {k: archive[k] for k in archive.files}
    except ValueError as e:
        if "allow_pickle" in str(e):
            raise ToolError(f"'{path}' holds an object array (pickled data), which accy does not load") from None
        raise ToolError(f"cannot read '{path}' as .npz: {e}") from None
    except Exception as e:  # BadZipFile, EOFError, zlib.error, OSError: a damaged archive
        raise ToolError(f"cannot read '{path}' as .npz (a damaged archive?): {type(e).__name__}: {e}") from None


def load_inputs(path: str, exe: Executable, arrays: dict[str, np.ndarray] | None = None) -> list[np.ndarray]:
    """Arrays arg0..argN-1 of an .npz file (or of `arrays`, already read from
    it), checked against the signature."""
    if arrays is None:
        arrays = read_npz(path)
    want = [f"arg{i}" for i in range(len(exe.input_specs or exe.input_types))]
    missing = [k for k in want if k not in arrays]
    extra = [k for k in arrays if k not in want]
    if missing or extra:
        problem = f"has no key {', '.join(missing)}" if missing else f"has unexpected key {', '.join(extra)}"
        raise ToolError(
            f"'{path}' {problem} (its keys: {', '.join(arrays) or 'none'}); "
            f"@{exe.fn} takes {len(want)} argument(s), as keys {', '.join(want) or '(none)'}"
        )
    return exe.check_inputs([arrays[k] for k in want])


def check_out_path(path: str) -> Path:
    """Where `--out` writes: exactly `path` (no `.npz` appended), which must
    not be a directory and must be in one that exists."""
    p = Path(path)
    if p.is_dir():
        raise ToolError(f"--out '{path}' is a directory; name the .npz file to write")
    if not p.parent.is_dir():
        raise ToolError(f"--out '{path}': no such directory '{p.parent}'")
    return p


def write_outputs(path: Path, outputs: Sequence[np.ndarray]) -> None:
    """Writes the results as out0, out1, ... to the .npz file `path`."""
    import numpy as np

    try:
        with path.open("wb") as f:
            np.savez(f, **{f"out{i}": o for i, o in enumerate(outputs)})
    except OSError as e:
        raise ToolError(f"cannot write '{path}': {e.strerror or e}") from None


def _print_outputs(exe: Executable, outputs: Sequence[np.ndarray]) -> None:
    import numpy as np

    with np.printoptions(threshold=32, edgeitems=3, linewidth=100):
        # The specs need no parse (a program from the compile cache is not parsed); None for bf16.
        for i, (value, t) in enumerate(zip(outputs, exe.output_specs or exe.output_types, strict=True)):
            print(f"out{i}: {t}")
            print(repr(value))


def _print_profile(exe: Executable) -> None:
    launches = exe.stats.profile
    print(f"profile: {len(launches)} launch(es), {sum(l.seconds for l in launches) * 1e3:.3f} ms on device")
    if not launches:
        return
    print(f"  {'kernel':<32} {'kind':<16} {'global':<16} {'local':<12} {'time':>10}")
    for l in launches:
        local = "x".join(map(str, l.local_size)) if l.local_size else "-"
        print(f"  {l.name:<32} {l.kind:<16} {'x'.join(map(str, l.global_size)):<16} {local:<12} {l.seconds * 1e3:>7.3f} ms")


def _tuning_requested(flag: bool) -> bool:
    """`--tune`, else `ACCY_TUNE` (accy/tuning/api.py's `tune_requested`).
    The tuner loads xDSL, which a run whose program is in the compile cache
    never needs: it is imported only when the flag or the variable is there."""
    if not flag and "ACCY_TUNE" not in os.environ:
        return False
    from accy.tuning.api import tune_requested

    return tune_requested(True if flag else None)


def _run(args: argparse.Namespace) -> int:
    from accy.runtime.devices import AUTO, get_device
    from accy.runtime.executable import compile
    from accy.runtime.host_memory import DeviceMemoryWarning

    program = read_program(args.file)
    model = _onnx_program(args.file)
    # What the user named is checked before the (slower) compile.
    out_path = check_out_path(args.out) if args.out is not None else None
    arrays = read_npz(args.inputs) if args.inputs is not None else None
    device = get_device(args.device)
    import_s = time.perf_counter() - STARTED
    with warnings.catch_warnings():
        # Said once, as the error check_memory raises next.
        warnings.simplefilter("ignore", DeviceMemoryWarning)
        source = program if model is None else model.module
        if _tuning_requested(args.tune):
            from accy.tuning.api import tune

            tuned = tune(source, device, args.fn)
            source = tuned.module
            if not args.quiet:
                print(f"{TOOL}: {tuned.summary()}", file=sys.stderr)
        exe = compile(source, device=device, fn=args.fn, strict=args.strict)
    try:
        exe.check_memory()
        if args.inputs is not None:
            inputs = load_inputs(args.inputs, exe, arrays)
        else:
            inputs = exe.random_inputs(0 if args.random is None else args.random)
        if model is not None:
            inputs = model.inputs(inputs)
        outputs = exe(*inputs, profile=args.profile)
    except MemoryError as e:  # DeviceMemoryError, or the host's memory for the inputs: the user's to act on
        raise ToolError(str(e) or "out of host memory") from None

    if out_path is not None:
        write_outputs(out_path, outputs)
    else:
        _print_outputs(exe, outputs)
    if args.profile:
        _print_profile(exe)

    status = 0
    stats: dict[str, object] = {
        # The device that ran it ("llvm" for the default `auto` on a machine without an OpenCL GPU).
        "device": args.device if args.device.strip().lower() != AUTO else exe.device.name,
        "fn": exe.fn,
        "kernels": exe.stats.kernels,
        "launches": exe.stats.launches,
        "peak_bytes": exe.stats.peak_bytes,
        "compile_s": round(exe.compile_s, 6),
        "run_s": round(exe.run_s, 6),
        "fallbacks": exe.stats.fallbacks,
        # The program came from the compile cache (accy/runtime/compile_cache.py): no kernelize, no backend.
        "compile_cached": exe.program.compile_cached,
        # What crossed between host and device in the call (RunStats; memory used in place counts as neither).
        "uploads": exe.stats.uploads,
        "upload_bytes": exe.stats.upload_bytes,
        "downloads": exe.stats.downloads,
        "download_bytes": exe.stats.download_bytes,
        # Where a fresh process's time went (docs/cli.md's --stats section).
        "import_s": round(import_s, 6),
        **{f"{name}_s": round(seconds, 6) for name, seconds in exe.phases.items()},
        "first_launch_s": round(exe.first_call_s or 0.0, 6),
    }
    jit_kernels = getattr(exe.program, "jit_kernels", None)
    if jit_kernels is not None:
        # A JIT device (llvm): seconds per kernel and in all, and whether all object code came from the disk cache.
        stats["jit_s"] = round(exe.program.jit_s, 6)  # type: ignore[attr-defined]
        stats["jit_kernels"] = {name: round(seconds, 6) for name, seconds in jit_kernels.items()}
        stats["jit_cached"] = bool(getattr(exe.program, "jit_cached", False))
    if args.check:
        comparisons = exe.compare_with_reference(inputs, outputs) if model is None else model.compare(inputs, outputs)
        for i, c in enumerate(comparisons):
            verdict = "ok" if c.ok else "MISMATCH"
            print(f"check out{i}: max abs err {c.max_abs:.3e}, max rel err {c.max_rel:.3e} (rtol={c.rtol:g}, atol={c.atol:g}): {verdict}")
        stats["max_abs_err"] = max((c.max_abs for c in comparisons), default=0.0)
        stats["max_rel_err"] = max((c.max_rel for c in comparisons), default=0.0)
        stats["check_ok"] = all(c.ok for c in comparisons)
        if not stats["check_ok"]:
            oracle = "the reference interpreter" if model is None else "onnx's reference evaluator"
            print(f"{TOOL}: error: results differ from {oracle} beyond tolerance", file=sys.stderr)
            status = CHECK_FAILED
    if args.stats:
        print(json.dumps(stats))
    return status


#: The variable `_one_blas_thread` sets (a value the user gave stays).
BLAS_THREADS_ENV = "OPENBLAS_NUM_THREADS"


def _one_blas_thread(args_list: list[str]) -> None:
    """Gives numpy's OpenBLAS one thread when numpy is not loaded yet (a new
    accy-run process) and neither `--check` nor the reference device is
    asked for: importing numpy starts OpenBLAS's thread per core (~40 ms of
    a warm run's ~250 on this 2-core machine), and without the reference
    interpreter accy-run makes no BLAS call (random inputs, printing and
    .npz files use none; a work item on the host reference path, a
    fallback, runs its numpy on one BLAS thread)."""
    reference = any(a in ("reference", "--device=reference") for a in args_list)
    if "numpy" not in sys.modules and "--check" not in args_list and not reference:
        os.environ.setdefault(BLAS_THREADS_ENV, "1")


def main(argv: Sequence[str] | None = None) -> int:
    """The `accy-run` entry point; returns the exit code."""
    try:
        args_list = list(sys.argv[1:] if argv is None else argv)
        _one_blas_thread(args_list)
        status = _main(args_list)
        sys.stdout.flush()  # a reader gone shows here rather than in the interpreter's flush at exit
    except BrokenPipeError:  # --help or --version into a closed pipe, or the last flush
        return stdout_closed()
    return status


def _main(args_list: list[str]) -> int:
    args = _parser().parse_args(args_list)
    status = run_tool(TOOL, lambda: _interruptible(args), wants_traceback(args_list))
    opencl = sys.modules.get("accy.runtime.opencl")
    if status == INTERRUPTED and opencl is not None and opencl.work_in_flight():
        # An interrupted PoCL build runs on in its daemon thread, inside the
        # driver: finalizing the interpreter under it crashed (SIGSEGV), so leave now.
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(status)
    return status


def _interruptible(args: argparse.Namespace) -> int:
    """`_run`, saying so when Ctrl-C stops it (`run_tool` makes that exit
    status 130), and ending quietly when the reader of stdout has gone."""
    try:
        with quieted(args.quiet):
            return _run(args)
    except KeyboardInterrupt:
        print(f"{TOOL}: interrupted", file=sys.stderr)
        raise
    except BrokenPipeError:  # caught here: run_tool would report it as an error
        return stdout_closed()


def program() -> NoReturn:
    """The `accy-run` program (its console script and `python -m accy.cli.run`): `main()` on
    `sys.argv` in a process that ends without freeing its objects (accy/cli/process.py)."""
    run_as_program(main)


if __name__ == "__main__":
    program()
