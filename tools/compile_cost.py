"""Compile cost: time and peak memory of accy's stages, per program.

accy's compile cost must depend on the program, never on its data or tensor
sizes, and grow about linearly with program length (issue 7, items 6 and 7).
This script measures, for each case, in a fresh subprocess:

- `parse`: xDSL's own parse of the text (accy's dialects registered, no
  verification), the floor any accy stage is compared with;
- `opt`: what `accy-opt -p kernelize -t opencl` does: parse and verify
  (`accy.parse_module`), the kernelize pass, the OpenCL C emitter;
- `compile`: `accy.compile(text, device="opencl")` with the disk cache off:
  `first_s` is the whole compile, PoCL's program build included; `total_s`
  a second call in the same process, the OpenCL program build a cache hit;
- `compile-llvm`: the same on the LLVM device (`first_s` includes LLVM's
  O3 pipeline and code generation);
- `accy-opt`: the `accy-opt` command itself, end to end, as a user runs it
  (Python start-up and imports included).

The cases: every benchmark workload (tools/bench/workloads.py) at its largest
size, named attention at B4 H16 S4096 D64 and B64 S1024 D64 (plain and
causal), a product with a large splat literal (`x * dense<2.0>` at
16384x4096) and a 1M-element non-splat literal, and programs of 500 to
20,000 ops of three shapes: an elementwise chain (`chain@N`), a chain
through one softmax's row pipeline (`row_chain@N`) and a row pipeline of
N/7 softmax stages in a row (`stages@N`: x - max(x), exp, / sum, again and
again). For those, each time is also given per op (`ms_per_op`), so that a
compile that grows faster than the program shows: compile cost must be
linear (issue 19).

Each child runs under an address-space limit (`--limit-gb`, default 4) and a
timeout, so that a blow-up is reported instead of taking the machine down.

    .venv/bin/python tools/compile_cost.py                 # every case, every stage
    .venv/bin/python tools/compile_cost.py --only chain --stages opt
    .venv/bin/python tools/compile_cost.py --only stages@1000 --only chain@1000 --stages opt,compile-llvm
    .venv/bin/python tools/compile_cost.py --json cost.json
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).with_name("bench")))
from workloads import WORKLOADS, function_text, generic_op, tensor_type  # noqa: E402

STAGES = ("parse", "opt", "compile", "compile-llvm", "accy-opt")
#: The lengths of the program-length cases.
LENGTHS = (500, 1000, 2000, 5000, 20000)
RESULT_PREFIX = "COST "


# --------------------------------------------------------------------------
# Programs
# --------------------------------------------------------------------------


def _largest(dims: dict[str, tuple[int, ...]]) -> tuple[int, ...]:
    return max(dims.values(), key=lambda d: int(np.prod(d)))


def _attention(shape: tuple[int, ...], causal: bool) -> str:
    props = f"scale = 0.125 : f32, causal = {'true' if causal else 'false'}"
    op = generic_op("%r", "attention", ["%a0", "%a1", "%a2"], [shape] * 3, shape, props)
    return function_text([shape] * 3, shape, [op])


def _splat_product(shape: tuple[int, ...]) -> str:
    t = tensor_type(shape)
    body = [
        f'%c = "accy.constant"() <{{value = dense<2.0> : {t}}}> : () -> {t}',
        generic_op("%r", "mul", ["%a0", "%c"], [shape, shape], shape),
    ]
    return function_text([shape], shape, body)


def _dense_product(n: int) -> str:
    """`x * c` with a non-splat literal of `n` elements, written in hex."""
    values = np.arange(n, dtype="<f4") / n
    t = tensor_type((n,))
    body = [
        f'%c = "accy.constant"() <{{value = dense<"0x{values.tobytes().hex().upper()}"> : {t}}}> : () -> {t}',
        generic_op("%r", "mul", ["%a0", "%c"], [(n,), (n,)], (n,)),
    ]
    return function_text([(n,)], (n,), body)


#: The ops a chain cycles through, each applied to the previous value (and
#: the other input, for binary ones). They are piecewise linear: the chain
#: stays in range (at most a few thousand for standard-normal inputs), the
#: reference and the device compute it with the same IEEE operations, and a
#: kernel of thousands of them is cheap for the OpenCL compiler to build.
CHAIN_OPS = ("add", "neg", "max", "abs", "sub", "relu", "min")
CHAIN_BINARY = ("add", "sub", "max", "min")


def chain_lines(n: int, shape: tuple[int, ...], source: str, other: str, prefix: str) -> tuple[list[str], str]:
    """`n` elementwise ops (`CHAIN_OPS` over and over), each consuming the
    previous one's result, starting from `source`; the lines and the name
    of the last value."""
    lines, cur = [], source
    for i in range(n):
        name, op = f"%{prefix}{i}", CHAIN_OPS[i % len(CHAIN_OPS)]
        if op in CHAIN_BINARY:
            lines.append(generic_op(name, op, [cur, other], [shape, shape], shape))
        else:
            lines.append(generic_op(name, op, [cur], [shape], shape))
        cur = name
    return lines, cur


def elementwise_chain(n: int, shape: tuple[int, ...] = (17, 33)) -> str:
    """`n + 1` elementwise ops over `%a0` and `%a1`, one fused kernel."""
    lines, last = chain_lines(n, shape, "%a0", "%a1", "e")
    lines.append(generic_op("%r", "add", [last, "%a1"], [shape, shape], shape))
    return function_text([shape, shape], shape, lines)


def row_pipeline_chain(n: int, shape: tuple[int, ...] = (17, 33)) -> str:
    """A softmax over rows whose input and output go through chains of `n / 2`
    elementwise ops each (one row-pipeline kernel)."""
    lines, before = chain_lines(n // 2, shape, "%a0", "%a1", "p")
    lines.append(generic_op("%s", "softmax", [before], [shape], shape, "axis = -1 : i64"))
    after, last = chain_lines(n - n // 2, shape, "%s", "%a1", "q")
    lines += after
    lines.append(generic_op("%r", "add", [last, "%a1"], [shape, shape], shape))
    return function_text([shape, shape], shape, lines)


#: One softmax stage of `row_pipeline_stages`: ops per stage.
STAGE_OPS = 7


def row_pipeline_stages(n: int, shape: tuple[int, ...] = (17, 33)) -> str:
    """About `n` ops: softmax stages over the rows of `%a0`, each written
    with primitives and reading the one before (x - max(x), exp, divided by
    its sum), then `+ %a1`. Each stage is two reduction levels."""
    rows = shape[:-1]
    last = len(shape) - 1
    reduce = f'kind = "{{}}", axes = array<i64: {last}>'
    along = f"dims = array<i64: {', '.join(map(str, range(last)))}>"
    lines, cur = [], "%a0"
    for k in range(max(1, n // STAGE_OPS)):
        p = f"%s{k}_"
        lines += [
            generic_op(p + "m", "reduce", [cur], [shape], rows, reduce.format("max")),
            generic_op(p + "mb", "broadcast", [p + "m"], [rows], shape, along),
            generic_op(p + "d", "sub", [cur, p + "mb"], [shape, shape], shape),
            generic_op(p + "e", "exp", [p + "d"], [shape], shape),
            generic_op(p + "s", "reduce", [p + "e"], [shape], rows, reduce.format("sum")),
            generic_op(p + "sb", "broadcast", [p + "s"], [rows], shape, along),
            generic_op(p + "x", "div", [p + "e", p + "sb"], [shape, shape], shape),
        ]
        cur = p + "x"
    lines.append(generic_op("%r", "add", [cur, "%a1"], [shape, shape], shape))
    return function_text([shape, shape], shape, lines)


#: Program-length case name -> its number of ops (for `ms_per_op`).
LENGTH_OF: dict[str, int] = {
    f"{kind}@{n}": n for n in LENGTHS for kind in ("chain", "row_chain", "stages")
}


def cases() -> dict[str, Callable[[], str]]:
    """Case name -> a function building its program text."""
    out: dict[str, Callable[[], str]] = {}
    for w in WORKLOADS:
        dims = _largest(w.dims)
        out[f"{w.name}@{'x'.join(map(str, dims))}"] = lambda w=w, dims=dims: w.program(dims)
    for shape in ((4, 16, 4096, 64), (64, 1024, 64)):
        label = "x".join(map(str, shape))
        out[f"attention@{label}"] = lambda shape=shape: _attention(shape, False)
        out[f"attention_causal@{label}"] = lambda shape=shape: _attention(shape, True)
    out["splat_literal@16384x4096"] = lambda: _splat_product((16384, 4096))
    out["dense_literal@1048576"] = lambda: _dense_product(1 << 20)
    for n in LENGTHS:
        out[f"chain@{n}"] = lambda n=n: elementwise_chain(n)
        out[f"row_chain@{n}"] = lambda n=n: row_pipeline_chain(n)
        out[f"stages@{n}"] = lambda n=n: row_pipeline_stages(n)
    return out


# --------------------------------------------------------------------------
# The child: one stage of one case
# --------------------------------------------------------------------------


def _rss_mb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def _peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def child(case: str, stage: str, path: str) -> dict[str, float]:
    """Runs `stage` on the program in `path`; seconds per step and memory."""
    from xdsl.parser import Parser

    import accy
    from accy.backends.opencl.emitter import emit_opencl
    from accy.dialects.context import make_context
    from accy.passes.kernelization.kernelize import KernelizePass

    text = Path(path).read_text()
    out: dict[str, float] = {"import_rss_mb": _rss_mb()}
    t0 = time.perf_counter()
    if stage == "parse":
        Parser(make_context(), text, path).parse_module()
        out["parse_s"] = time.perf_counter() - t0
    elif stage == "opt":
        module = accy.parse_module(text)
        t1 = time.perf_counter()
        accy.PassManager([KernelizePass()]).run(module)
        t2 = time.perf_counter()
        emit_opencl(module)
        t3 = time.perf_counter()
        out |= {"parse_verify_s": t1 - t0, "kernelize_s": t2 - t1, "emit_s": t3 - t2, "total_s": t3 - t0}
    elif stage in ("compile", "compile-llvm"):
        device = "llvm" if stage == "compile-llvm" else "opencl"
        accy.compile(text, device=device)  # builds the program (the disk cache is off)
        t1 = time.perf_counter()
        accy.compile(text, device=device)
        out |= {"first_s": t1 - t0, "total_s": time.perf_counter() - t1}
    elif stage == "accy-opt":
        # The command as a user runs it; this process only waits for it.
        cmd = [str(Path(sys.executable).with_name("accy-opt")), path, "-p", "kernelize", "-t", "opencl"]
        done = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        if done.returncode != 0:
            raise RuntimeError(f"accy-opt failed: {done.stderr.strip()[-300:]}")
        out = {"total_s": time.perf_counter() - t0}
        out["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
        return out
    else:
        raise ValueError(f"unknown stage {stage}")
    out["peak_rss_mb"] = _peak_mb()
    return out


# --------------------------------------------------------------------------
# The parent
# --------------------------------------------------------------------------


def _limit(gb: float) -> Callable[[], None]:
    def apply() -> None:
        n = int(gb * 2**30)
        resource.setrlimit(resource.RLIMIT_AS, (n, n))

    return apply


def run_case(name: str, stage: str, path: Path, limit_gb: float, timeout: float) -> dict[str, object]:
    """One stage of one case in a fresh subprocess: its measurements, or why it failed."""
    cmd = [sys.executable, __file__, "--child", name, stage, str(path)]
    env = {**os.environ, "ACCY_CACHE_DIR": "off"}  # every compile is a compile
    proc = subprocess.Popen(
        cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, preexec_fn=_limit(limit_gb), env=env
    )
    try:
        stdout, stderr = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        return {"error": f"timeout after {timeout:.0f} s"}
    if proc.returncode != 0:
        last = (stderr.strip().splitlines() or [f"exit status {proc.returncode}"])[-1]
        if "MemoryError" in stderr or "Cannot allocate" in stderr:
            last = f"over {limit_gb:g} GB: {last}"
        return {"error": last[:160]}
    lines = [ln for ln in stdout.splitlines() if ln.startswith(RESULT_PREFIX)]
    if not lines:
        return {"error": "no result"}
    result = json.loads(lines[-1][len(RESULT_PREFIX):])
    if name in LENGTH_OF:
        # The stage's whole time per op: flat across lengths when the cost is linear.
        whole = result.get("first_s", result.get("total_s"))
        if whole is not None:
            result["ms_per_op"] = 1e3 * whole / LENGTH_OF[name]
    return result


def _row(name: str, stage: str, r: dict[str, object]) -> str:
    if "error" in r:
        return f"{name:32} {stage:9} FAILED: {r['error']}"
    parts = [
        f"{k}={v:.3f}" if k.endswith(("_s", "_op")) else f"{k}={v:.0f}" for k, v in r.items() if isinstance(v, float | int)
    ]
    return f"{name:32} {stage:9} " + " ".join(parts)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--only", action="append", default=[], help="cases whose name contains this (repeatable)")
    ap.add_argument("--stages", default="parse,opt,compile,compile-llvm", help=f"comma-separated, of {', '.join(STAGES)}")
    ap.add_argument("--limit-gb", type=float, default=4.0, help="address-space limit of each child (GB)")
    ap.add_argument("--timeout", type=float, default=300.0, help="seconds per child")
    ap.add_argument("--json", help="also write the measurements here")
    ap.add_argument("--list", action="store_true", help="list the cases")
    ap.add_argument("--child", nargs=3, metavar=("CASE", "STAGE", "PATH"), help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        result = child(*args.child)
        print(RESULT_PREFIX + json.dumps(result), flush=True)
        return 0
    all_cases = cases()
    if args.list:
        print("\n".join(all_cases))
        return 0
    stages = [s for s in args.stages.split(",") if s]
    unknown = [s for s in stages if s not in STAGES]
    if unknown:
        ap.error(f"unknown stage(s) {', '.join(unknown)}")
    selected = {k: v for k, v in all_cases.items() if not args.only or any(o in k for o in args.only)}
    results: dict[str, dict[str, object]] = {}
    tmp = Path(os.environ.get("TMPDIR", "/tmp")) / f"accy-compile-cost-{os.getpid()}"
    tmp.mkdir(exist_ok=True)
    try:
        for name, build in selected.items():
            path = tmp / (name.replace("@", "_") + ".mlir")
            path.write_text(build())
            for stage in stages:
                r = run_case(name, stage, path, args.limit_gb, args.timeout)
                results[f"{name} {stage}"] = r
                print(_row(name, stage, r), flush=True)
            path.unlink()
    finally:
        for p in tmp.iterdir():
            p.unlink()
        tmp.rmdir()
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
