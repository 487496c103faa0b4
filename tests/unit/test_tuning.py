"""The autotuner (accy/tuning/, docs/tuning.md): small budgets and tiny
spaces on the LLVM device; every check is on results or counts, never on
how long anything took."""

from __future__ import annotations

import contextlib
import io
import itertools
import os
import subprocess
import sys
import time
from functools import cache
from pathlib import Path

import numpy as np
import pytest

import accy
import accy.progress
from accy.dialects.parse import parse_module
from accy.dialects.target import DEFAULTS, TUNING_FIELDS, TargetAttr, target_fields
from accy.env import EnvVarError
from accy.runtime.devices import get_device
from accy.runtime.executable import Executable
from accy.tuning import api, search
from accy.tuning import space as spaces
from accy.tuning.search import Budget, Timing, differs, tune

SOFTMAX = """func.func @main(%x: tensor<8x33xf32>) -> tensor<8x33xf32> {
  %0 = "accy.softmax"(%x) <{axis = -1 : i64}> : (tensor<8x33xf32>) -> tensor<8x33xf32>
  func.return %0 : tensor<8x33xf32>
}
"""
#: A quick timing: the tests count candidates, they do not compare times.
QUICK = Timing(min_runs=1, max_runs=2, seconds=0.0)


@cache
def _widths() -> tuple[int, int]:
    """Two vector widths other than the LLVM device's own (8 with AVX2, 16
    with AVX-512): a candidate equal to the current values is not tried."""
    current = get_device("llvm").profile_for(parse_module(SOFTMAX)).vector_width
    a, b = [w for w in (4, 8, 2, 16) if w != current][:2]
    return a, b


#: A tiny space for the softmax's row pipeline: two candidates besides the current values.
TINY = {"row_pipeline": lambda p: [{"vector_width": w} for w in _widths()]}


@pytest.fixture(autouse=True)
def own_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A cache folder of the test's own (the tuning store is a namespace of it)."""
    folder = tmp_path / "cache"
    monkeypatch.setenv("ACCY_CACHE_DIR", str(folder))
    monkeypatch.delenv("ACCY_TUNE", raising=False)
    monkeypatch.delenv("ACCY_TUNE_BUDGET", raising=False)
    return folder


@pytest.fixture
def llvm() -> object:
    return get_device("llvm")


def _run_matches_reference(module: object, seed: int = 3) -> None:
    exe = accy.compile(module, device="llvm", tune=False)
    inputs = exe.random_inputs(seed)
    (got,) = exe(*inputs)
    (want,) = exe.reference_outputs(inputs)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


class _Counting:
    """The search's compile seam, counting compiles; `broken(fields)` says
    which candidates compute a wrong result (their outputs plus one) and
    `refused(fields)` which fail to compile."""

    def __init__(self, broken=lambda f: False, refused=lambda f: False) -> None:  # noqa: ANN001
        self.broken, self.refused, self.count = broken, refused, 0

    def __call__(self, module, device, fn):  # noqa: ANN001, ANN204
        self.count += 1
        fields = target_fields(module)
        if self.refused(fields):
            raise ValueError("this candidate does not compile")
        return _OffByOne(module, fn, device) if self.broken(fields) else Executable(module, fn, device)


class _OffByOne(Executable):
    """An executable whose results on the host are off by one: a wrong candidate."""

    def __call__(self, *arrays: object, profile: bool = False, to_host: bool | None = None) -> tuple[object, ...]:
        outputs = super().__call__(*arrays, profile=profile, to_host=to_host)
        return outputs if to_host is False else tuple(np.asarray(o) + 1 for o in outputs)


def test_the_tuned_module_prints_parses_and_sets_the_fields(llvm: object) -> None:
    result = tune(SOFTMAX, llvm, timing=QUICK, space=TINY)
    assert result.kinds == ["row_pipeline"]
    assert result.trials[0].fields == {} and result.trials[0].status == "ok"  # the module as given, first
    assert {t.fields.get("vector_width") for t in result.trials if t.status in ("ok", "same")} >= set(_widths())
    text = str(result.module)
    again = parse_module(text)
    fields = target_fields(again)
    assert fields["profile"] == "cpu"
    assert fields["vector_width"] in (*_widths(), llvm.profile_for(parse_module(SOFTMAX)).vector_width)
    assert fields == {**fields, **result.fields}
    assert "#accy.target<" in text
    _run_matches_reference(again)


def test_the_module_as_given_is_kept_unless_beaten(llvm: object) -> None:
    """Every candidate wrong: the fields are the device's (the given module's) own."""
    given = llvm.profile_for(parse_module(SOFTMAX))
    seam = _Counting(broken=lambda f: f.get("vector_width") in _widths())
    result = tune(SOFTMAX, llvm, timing=QUICK, space=TINY, compile=seam, use_cache=False)
    assert result.fields["vector_width"] == given.vector_width
    assert result.best_ms == result.baseline_ms


def test_a_wrong_candidate_is_rejected_never_chosen(llvm: object) -> None:
    a, b = _widths()
    seam = _Counting(broken=lambda f: f.get("vector_width") == a, refused=lambda f: f.get("vector_width") == b)
    result = tune(SOFTMAX, llvm, timing=QUICK, space=TINY, compile=seam, use_cache=False)
    by_width = {t.fields.get("vector_width"): t for t in result.trials}
    assert by_width[a].status == "wrong" and by_width[a].ms is None and "differs" in by_width[a].detail
    assert by_width[b].status == "failed" and "does not compile" in by_width[b].detail
    assert result.fields["vector_width"] not in (a, b)
    assert not any(t.status == "confirmed" and t.fields.get("vector_width") in (a, b) for t in result.trials)


def test_a_second_tune_of_the_same_module_comes_from_the_store(llvm: object) -> None:
    first = tune(SOFTMAX, llvm, timing=QUICK, space=TINY)
    assert not first.cached
    seam = _Counting()
    second = tune(SOFTMAX, llvm, timing=QUICK, space=TINY, compile=seam)
    assert second.cached and seam.count == 0
    assert second.fields == first.fields and str(second.module) == str(first.module)
    # Another module (its target differs) is another key: searched again.
    other = tune(str(first.module), llvm, timing=QUICK, space=TINY, compile=seam)
    assert not other.cached and seam.count > 0


def test_a_store_entry_that_does_not_decode_is_a_miss(llvm: object, own_cache: Path) -> None:
    tune(SOFTMAX, llvm, timing=QUICK, space=TINY)
    (entry,) = (own_cache / "tuning").glob("*/*.bin")
    entry.write_bytes(b"garbage")
    seam = _Counting()
    again = tune(SOFTMAX, llvm, timing=QUICK, space=TINY, compile=seam)
    assert not again.cached and seam.count > 0


def test_a_kinds_candidate_count_is_respected(llvm: object) -> None:
    space = {"row_pipeline": lambda p: [{"vector_width": w} for w in (1, 2, 4, 8)]}
    seam = _Counting()
    result = tune(SOFTMAX, llvm, budget=Budget(kernel_candidates=2), timing=QUICK, space=space, compile=seam, use_cache=False)
    timed = [t for t in result.trials if t.status not in ("confirmed", "unconfirmed")]
    assert len(timed) == 2  # the current values and one more


def test_the_program_budget_is_respected() -> None:
    """A clock that moves one second a reading: the search reads it at its
    start, at each kind's start and before each candidate, so a 3 s budget
    lets two candidates past the current values begin."""
    ticks = itertools.count()
    space = {"row_pipeline": lambda p: [{"vector_width": w} for w in (1, 2, 4, 8)]}
    result = tune(
        SOFTMAX, "llvm", budget=Budget(program_s=3, kernel_s=100), timing=QUICK, space=space, use_cache=False,
        clock=lambda: float(next(ticks)),
    )
    timed = [t for t in result.trials if t.status not in ("confirmed", "unconfirmed")]
    assert len(timed) == 3


def test_the_reference_device_has_nothing_to_tune() -> None:
    result = tune(SOFTMAX, "reference", timing=QUICK)
    assert result.kinds == [] and result.fields == {} and "no kernel" in result.summary()


def test_differs_rejects_unwritten_and_wrong_elements_and_takes_float_drift() -> None:
    want = np.linspace(-3, 3, 101, dtype=np.float32)
    assert differs(want.copy(), want) is None
    poisoned = want.copy()
    poisoned[17] = np.nan  # an element no kernel wrote
    assert differs(poisoned, want) is not None
    assert differs(want + 1, want) is not None
    drift = want.copy()
    drift[50] += 1e-4  # near zero: past the elementwise bound, within the output's scale
    assert differs(drift, want) is None
    ints = np.arange(5, dtype=np.int32)
    assert differs(ints, ints) is None and differs(ints + 1, ints) is not None
    assert differs(want[:5], want) is not None


@pytest.mark.parametrize(("value", "expected"), [("1", True), ("YES", True), ("0", False), ("off", False), ("", False)])
def test_accy_tune_is_read_strictly(monkeypatch: pytest.MonkeyPatch, value: str, expected: bool) -> None:
    monkeypatch.setenv("ACCY_TUNE", value)
    assert api.tune_requested(None) is expected
    assert api.tune_requested(False) is False and api.tune_requested(True) is True


def test_accy_tune_rejects_other_words(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ACCY_TUNE", "maybe")
    with pytest.raises(EnvVarError, match="ACCY_TUNE='maybe'"):
        api.tune_requested(None)
    with pytest.raises(EnvVarError, match="ACCY_TUNE"):
        accy.compile(SOFTMAX, device="llvm")


def test_accy_tune_budget(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ACCY_TUNE_BUDGET", "7")
    assert api.default_budget().program_s == 7 and api.default_budget().kernel_s == 7
    monkeypatch.setenv("ACCY_TUNE_BUDGET", "0")
    with pytest.raises(EnvVarError, match="ACCY_TUNE_BUDGET='0'"):
        api.default_budget()


def test_compile_with_tune_compiles_the_tuned_module(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(search, "Timing", lambda: QUICK)
    monkeypatch.setenv("ACCY_TUNE_BUDGET", "1")
    exe = accy.compile(SOFTMAX, device="llvm", tune=True)
    tuned = accy.tune(SOFTMAX, device="llvm")
    assert tuned.cached  # the compile's search was kept
    assert target_fields(exe.source) == target_fields(tuned.module)
    inputs = exe.random_inputs(5)
    np.testing.assert_allclose(exe(*inputs)[0], exe.reference_outputs(inputs)[0], rtol=1e-5, atol=1e-6)
    monkeypatch.setenv("ACCY_TUNE", "1")  # the environment asks for it when compile does not say
    assert target_fields(accy.compile(SOFTMAX, device="llvm").source) == target_fields(tuned.module)


def test_accy_opt_p_tune_prints_the_tuned_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import accy.cli.opt

    monkeypatch.setattr(search, "Timing", lambda: QUICK)
    prog = tmp_path / "softmax.mlir"
    prog.write_text(SOFTMAX)
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        assert accy.cli.opt.main([str(prog), "-p", "tune{device=llvm budget=1}"]) == 0
    fields = target_fields(parse_module(out.getvalue()))
    assert fields["profile"] == "cpu" and {"vector_width", "group_size"} <= set(fields)
    assert "accy-opt: tune row_pipeline" in err.getvalue()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()) as bad:
        assert accy.cli.opt.main([str(prog), "-p", "tune{budget=0}"]) != 0
    assert "budget" in bad.getvalue()
    # A device that is not here is the user's error: one line, status 1, no reproducer.
    monkeypatch.chdir(tmp_path)
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()) as unknown:
        assert accy.cli.opt.main([str(prog), "-p", "tune{device=nope}"]) == 1
    assert unknown.getvalue().splitlines() == [
        "error: tune: unknown device 'nope' (known: auto, reference, opencl, llvm, opencl:N)"
    ]
    assert not list(tmp_path.glob("accy-repro*"))


def test_accy_run_tune(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import accy.cli.run

    monkeypatch.setattr(search, "Timing", lambda: QUICK)
    monkeypatch.setenv("ACCY_TUNE_BUDGET", "1")
    prog = tmp_path / "softmax.mlir"
    prog.write_text(SOFTMAX)
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        assert accy.cli.run.main([str(prog), "--device", "llvm", "--tune", "--check"]) == 0
    assert "accy-run: tune row_pipeline" in err.getvalue()
    assert "check out0:" in out.getvalue() and ": ok" in out.getvalue()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()) as second:
        assert accy.cli.run.main([str(prog), "--device", "llvm", "--tune"]) == 0
    assert "from the tuning cache" in second.getvalue()


def test_the_progress_bar_leaves_the_best_so_far(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("ACCY_PROGRESS", "1")
    monkeypatch.setattr(accy.progress, "DELAY", 0.0)
    monkeypatch.setattr(accy.progress, "INTERVAL", 0.0)
    tune(SOFTMAX, "llvm", timing=QUICK, space=TINY, use_cache=False)
    err = capsys.readouterr().err
    assert "tune @main on llvm" in err and "best so far" in err and "candidates" in err
    assert err.endswith("\n")  # left on its line (leave=True)


def test_the_tune_pass_loads_neither_the_runtime_nor_the_search() -> None:
    code = "import accy.tuning.tune_pass, sys; print('\\n'.join(sys.modules))"
    loaded = set(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split())
    assert "accy.tuning.tune_pass" in loaded
    assert not {m for m in loaded if m.startswith(("accy.runtime", "accy.tuning.search"))}


@pytest.mark.parametrize(("profile", "kind"), sorted(spaces.SPACES))
def test_every_space_is_small_valid_and_starts_from_the_current_values(profile: str, kind: str) -> None:
    current = DEFAULTS[profile]
    found = spaces.candidates(spaces.SPACES[(profile, kind)], current)
    assert 2 <= len(found) <= 40
    assert found[0] == {name: getattr(current, name) for name in found[0]}
    assert len({tuple(sorted(c.items())) for c in found}) == len(found)
    for c in found:
        assert set(c) <= set(TUNING_FIELDS) | {"vector_width"}
        TargetAttr.from_fields({"profile": profile, **c})  # every candidate is a target a module may state


def test_the_gpu_profile_is_tuned_with_its_own_space() -> None:
    """A module that names the GPU profile, tuned on PoCL (which runs GPU
    kernels, slowly): the GPU row pipeline's field is searched, and the
    tuned module computes what the reference does."""
    module = 'builtin.module attributes {accy.target = #accy.target<profile = "gpu">} {\n' + SOFTMAX + "}\n"
    space = {"row_pipeline": spaces.SPACES[("gpu", "row_pipeline")]}
    result = tune(module, "opencl", timing=QUICK, space=space, budget=Budget(kernel_candidates=2), use_cache=False)
    assert result.kinds == ["row_pipeline"]
    widths = [t.fields.get("row_threads") for t in result.trials if t.status not in ("confirmed", "unconfirmed")]
    assert len(widths) == 2 and widths[0] is None and widths[1] == 64  # the current values, then the first other
    fields = target_fields(parse_module(str(result.module)))
    assert fields["profile"] == "gpu" and fields["row_threads"] in (64, 128, 256, 512, 1024)
    exe = accy.compile(result.module, device="opencl")
    inputs = exe.random_inputs(1)
    np.testing.assert_allclose(exe(*inputs)[0], exe.reference_outputs(inputs)[0], rtol=1e-5, atol=1e-6)


def test_the_gpu_spaces_try_the_layouts_no_card_has_timed_yet() -> None:
    """On Hopper (`mma = "sm90"`) the dot space tries mma.sync's warp tiles
    beside wgmma's (and the SIMT tiles); the attention space tries the f32
    tiles' 16-byte loads (`attention_lanes = 4`) at blocks whose work-items
    hold whole vectors."""
    hopper = DEFAULTS["gpu"].replace(mma="sm90", static_local_bytes=231424)
    dots = spaces.candidates(spaces.SPACES[("gpu", "dot_general")], hopper)
    assert dots[0]["mma"] == "sm90" and {"mma": "sm80"} in [{"mma": c["mma"]} for c in dots[1:]]
    assert {c.get("mma") for c in spaces.candidates(spaces.SPACES[("gpu", "dot_general")], DEFAULTS["gpu"])} <= {"", None}
    attention = spaces.candidates(spaces.SPACES[("gpu", "flash_attention")], DEFAULTS["gpu"])
    lanes = [c for c in attention if c.get("attention_lanes") == 4]
    assert attention[0].get("attention_lanes", 1) == 1 and len(lanes) == 6
    assert {c["query_rows"] for c in lanes} == {32, 64, 128} and {c["key_tile"] for c in lanes} == {32, 64}


CUMSUM_GPU = """builtin.module attributes {accy.target = #accy.target<profile = "gpu">} {
func.func @main(%x: tensor<5x301xf32>) -> tensor<5x301xf32> {
  %0 = "accy.scan"(%x) <{kind = "sum", axis = 1 : i64, exclusive = false, reverse = false}> : (tensor<5x301xf32>) -> tensor<5x301xf32>
  func.return %0 : tensor<5x301xf32>
}
}
"""


def test_the_gpu_scan_space_searches_the_vector_width_its_tiles_read() -> None:
    """The GPU scan's tiles are `scan_vectors` vectors of `vector_width` a
    work-item (scan.py): the space tries other widths beside the device's,
    and on PoCL's GPU profile each gives other kernels (no candidate is
    "same" as the default's) that compute what the reference does."""
    pytest.importorskip("pyopencl")
    current = DEFAULTS["gpu"]
    found = spaces.candidates(spaces.SPACES[("gpu", "scan")], current)
    widths = sorted({c["vector_width"] for c in found})
    assert set(spaces.GPU_SCAN_WIDTHS) | {current.vector_width} == set(widths)
    only_widths = {"scan": lambda p: [{"vector_width": w} for w in spaces.GPU_SCAN_WIDTHS]}
    result = tune(CUMSUM_GPU, "opencl", timing=QUICK, space=only_widths, use_cache=False)
    assert result.kinds == ["scan"]
    tried = [t for t in result.trials if t.status not in ("confirmed", "unconfirmed")]
    # The current values first; a width equal to the device's own (PoCL's 8 with AVX2) is not tried again.
    own = get_device("opencl").profile_for(parse_module(CUMSUM_GPU)).vector_width
    assert [t.fields.get("vector_width") for t in tried] == [None, *(w for w in spaces.GPU_SCAN_WIDTHS if w != own)]
    assert [t.status for t in tried] == ["ok"] * len(tried), [(t.fields, t.status, t.detail) for t in tried]
    exe = accy.compile(result.module, device="opencl")
    inputs = exe.random_inputs(2)
    np.testing.assert_allclose(exe(*inputs)[0], exe.reference_outputs(inputs)[0], rtol=1e-5, atol=1e-5)


def test_the_printed_tuned_module_gives_the_same_kernels_in_another_process(tmp_path: Path) -> None:
    result = tune(SOFTMAX, "llvm", timing=QUICK, space=TINY, use_cache=False)
    here = accy.compile(result.module, device="llvm").program.source
    path = tmp_path / "tuned.mlir"
    path.write_text(str(result.module))
    code = f"import accy; print(accy.compile({str(path)!r}, device='llvm').program.source, end='')"
    env = {**os.environ, "ACCY_CACHE_DIR": "off"}
    there = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env).stdout
    assert here and there == here


class _Sleepy(Executable):
    """An executable 20 ms slower a call than it is: what the search must see past."""

    def __call__(self, *arrays: object, profile: bool = False, to_host: bool | None = None) -> tuple[object, ...]:
        time.sleep(0.02)
        return super().__call__(*arrays, profile=profile, to_host=to_host)


def test_a_faster_candidate_is_confirmed_and_chosen(llvm: object) -> None:
    """Every setting but one vector width (of `_widths`) made 20 ms a call
    slower (a difference no machine's noise hides): the search must pick it."""
    fast, _ = _widths()

    def compile_fn(module, device, fn):  # noqa: ANN001, ANN202
        slow = target_fields(module).get("vector_width") != fast
        return (_Sleepy if slow else Executable)(module, fn, device)

    result = tune(SOFTMAX, llvm, timing=QUICK, space=TINY, compile=compile_fn, use_cache=False)
    assert result.fields["vector_width"] == fast
    assert [t.fields.get("vector_width") for t in result.trials if t.status == "confirmed"] == [fast]


def test_reaching_accy_compile_loads_neither_xdsl_nor_the_search() -> None:
    """accy.compile is the tuner's (accy/tuning/api.py): untuned, it must
    cost what the runtime's compile does, whose warm path parses nothing."""
    code = "import accy, sys; accy.compile; print('\\n'.join(sys.modules))"
    loaded = set(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split())
    assert "accy.tuning.api" in loaded and "accy.runtime.executable" in loaded
    assert not {m for m in loaded if m.split(".")[0] == "xdsl" or m.startswith("accy.tuning.search")}


def test_a_memory_warning_names_the_caller_of_accy_compile(llvm: object) -> None:
    """accy.compile is the tuner's wrapper around the runtime's: a
    DeviceMemoryWarning still points at the line that called it."""
    from accy.runtime.host_memory import DeviceMemoryWarning

    limit = llvm.memory_limit
    try:
        llvm.memory_limit = 100  # the softmax's buffers take 2,112 bytes
        with pytest.warns(DeviceMemoryWarning) as caught:
            accy.compile(SOFTMAX, device=llvm)
    finally:
        llvm.memory_limit = limit
    assert [Path(w.filename).name for w in caught] == [Path(__file__).name]
