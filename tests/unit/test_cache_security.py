"""The cache and the dump folders as an attack surface (issue 19): a folder
someone else can write is refused with one warning (and the compile still
works), folders accy makes are 0700 whatever the umask, links are never
followed (the stale-temp sweep, entries, dump files, reproducers), cache
entries are data (a pickle payload is a miss and never runs), a function
name never leaves its folder nor makes a kernel name a driver refuses, and
random bytes in pyopencl's own cache do not break an OpenCL run.

"Not owned by the user" cannot be staged without a second user (the tests
may run as root, who owns everything): it is checked on `os.stat` results;
the group/other-writable rule is checked on real folders."""

from __future__ import annotations

import os
import pickle
import stat
import subprocess
import sys
import textwrap
import time
import warnings
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("llvmlite.binding")

from templates import check  # noqa: E402

import accy  # noqa: E402
from accy.cli.opt import main as opt_main  # noqa: E402
from accy.passes.analyses.names import SYMBOL_LIMIT, safe_symbol  # noqa: E402
from accy.runtime import opencl as ocl  # noqa: E402
from accy.runtime.compile_cache import NAMESPACE  # noqa: E402
from accy.runtime.disk_cache import (  # noqa: E402
    STALE_TMP_SECONDS,
    AccyCacheWarning,
    DiskCache,
    UntrustedFolder,
    check_trusted,
    encode_entry,
)
from accy.runtime.kernel_sources import source_name  # noqa: E402
from accy.runtime.llvm import LLVMDevice  # noqa: E402

DEVICES = ["llvm", pytest.param("opencl", marks=pytest.mark.skipif(not ocl.opencl_devices(), reason="no OpenCL"))]
KEY = "ab" + "0" * 62

ELEMENTWISE = """
func.func @"{name}"(%a: tensor<37xf32>, %b: tensor<37xf32>) -> tensor<37xf32> {{
  %0 = "accy.add"(%a, %b) : (tensor<37xf32>, tensor<37xf32>) -> tensor<37xf32>
  %1 = "accy.exp"(%0) : (tensor<37xf32>) -> tensor<37xf32>
  func.return %1 : tensor<37xf32>
}}
"""

# A loop (Loop and Copy steps) and a literal that is not a splat (a Constant
# step with its bytes): what the compile cache's payload must hold as data.
LOOP_WITH_LITERAL = """
func.func @main(%x: tensor<5xf32>) -> tensor<5xf32> {
  %c = "accy.constant"() <{value = dense<[1.0, -2.0, 0.5, 3.0, 0.25]> : tensor<5xf32>}> : () -> tensor<5xf32>
  %r = "accy.iterate"(%x) <{count = 3 : i64}> ({
  ^bb0(%h: tensor<5xf32>):
    %m = "accy.mul"(%h, %c) : (tensor<5xf32>, tensor<5xf32>) -> tensor<5xf32>
    %t = "accy.tanh"(%m) : (tensor<5xf32>) -> tensor<5xf32>
    "accy.yield"(%t) : (tensor<5xf32>) -> ()
  }) : (tensor<5xf32>) -> tensor<5xf32>
  func.return %r : tensor<5xf32>
}
"""


def nested_iterates(depth: int) -> str:
    """`depth` accy.iterate loops one inside the other, the innermost doubling x."""
    t = "tensor<5xf32>"
    lines = [f"func.func @main(%x: {t}) -> {t} {{"]

    def body(level: int, arg: str, indent: str) -> str:
        if level == depth:
            lines.append(f'{indent}%t = "accy.add"(%{arg}, %{arg}) : ({t}, {t}) -> {t}')
            return "t"
        lines.append(f'{indent}%r{level} = "accy.iterate"(%{arg}) <{{count = 1 : i64}}> ({{')
        lines.append(f"{indent}^bb0(%a{level}: {t}):")
        inner = body(level + 1, f"a{level}", indent + "  ")
        lines.append(f'{indent}  "accy.yield"(%{inner}) : ({t}) -> ()')
        lines.append(f"{indent}}}) : ({t}) -> {t}")
        return f"r{level}"

    lines.append(f"  func.return %{body(0, 'x', '  ')} : {t}")
    return "\n".join(lines + ["}"])


def cache_warnings(caught: list[warnings.WarningMessage]) -> list[str]:
    return [str(w.message) for w in caught if issubclass(w.category, AccyCacheWarning)]


@pytest.fixture
def cache_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "cache"
    monkeypatch.setenv("ACCY_CACHE_DIR", str(root))
    monkeypatch.delenv("ACCY_DEBUG", raising=False)
    monkeypatch.delenv("ACCY_DUMP_DIR", raising=False)
    monkeypatch.delenv("ACCY_OVERRIDE_DIR", raising=False)
    return root


# --------------------------------------------------------------------------
# Folders no one else can write
# --------------------------------------------------------------------------


@pytest.mark.parametrize("mode", [0o777, 0o770, 0o703])
def test_a_root_others_can_write_is_refused_with_one_warning_and_the_compile_works(cache_env: Path, mode: int) -> None:
    cache_env.mkdir()
    os.chmod(cache_env, mode)
    text = ELEMENTWISE.format(name="main")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(2):
            exe = accy.compile(text, device=LLVMDevice())
            assert not exe.program.compile_cached
            check(exe)
    messages = cache_warnings(caught)
    assert len(messages) == 1, messages
    assert str(cache_env) in messages[0] and "writable by group or others" in messages[0]
    assert list(cache_env.iterdir()) == []  # nothing written into it


def test_a_root_only_its_owner_can_write_is_used(cache_env: Path) -> None:
    cache_env.mkdir()
    os.chmod(cache_env, 0o755)
    text = ELEMENTWISE.format(name="main")
    accy.compile(text, device=LLVMDevice())
    assert accy.compile(text, device=LLVMDevice()).program.compile_cached


def test_a_namespace_others_can_write_is_refused_and_a_link_is_not_followed(tmp_path: Path) -> None:
    root = tmp_path / "root"
    (root / "programs").mkdir(parents=True)
    os.chmod(root / "programs", 0o777)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir(mode=0o700)
    (root / "llvm-objects").symlink_to(elsewhere)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert DiskCache("programs", root).put(KEY, b"x") is False
        linked = DiskCache("llvm-objects", root)
        assert linked.put(KEY, b"x") and linked.get(KEY) == b"x"
    messages = cache_warnings(caught)
    assert len(messages) == 1 and "writable by group or others" in messages[0], messages
    assert str(root / "programs") in messages[0]
    assert list(elsewhere.iterdir()) == [] and list((root / "programs").iterdir()) == []
    assert not (root / "llvm-objects").is_symlink()  # replaced by a folder of its own


def test_a_folder_of_another_user_is_refused(tmp_path: Path) -> None:
    info = os.stat(tmp_path)
    check_trusted(tmp_path, info)  # pytest's folder: this user's, 0700
    with pytest.raises(UntrustedFolder, match="owned by user"):
        check_trusted(tmp_path, info, uid=info.st_uid + 1)
    forged = os.stat_result((info.st_mode, *info[1:4], info.st_uid + 1, *info[5:]))
    with pytest.raises(UntrustedFolder, match="owned by user"):
        check_trusted(tmp_path, forged)


def test_created_folders_are_0700_under_umask_000(tmp_path: Path) -> None:
    root = tmp_path / "new" / "root"
    script = textwrap.dedent(f"""
        import os
        os.umask(0)
        from accy.runtime.disk_cache import DiskCache
        assert DiskCache("programs", {str(root)!r}).put({KEY!r}, b"payload")
    """)
    subprocess.run([sys.executable, "-c", script], check=True, timeout=120)
    for folder in (tmp_path / "new", root, root / "programs", root / "programs" / "tmp", root / "programs" / "ab"):
        assert stat.S_IMODE(os.lstat(folder).st_mode) == 0o700, folder
    assert stat.S_IMODE(os.lstat(root / "programs" / "ab" / f"{KEY}.bin").st_mode) == 0o600


# --------------------------------------------------------------------------
# Links are never followed
# --------------------------------------------------------------------------


def _old(path: Path) -> None:
    past = time.time() - 2 * STALE_TMP_SECONDS
    os.utime(path, (past, past), follow_symlinks=False)


def test_the_stale_temp_sweep_does_not_follow_a_tmp_link(tmp_path: Path) -> None:
    victims = tmp_path / "victims"
    victims.mkdir()
    victim = victims / "precious"
    victim.write_text("keep me")
    _old(victim)
    root = tmp_path / "root"
    (root / "programs").mkdir(parents=True, mode=0o700)
    (root / "programs" / "tmp").symlink_to(victims)
    disk = DiskCache("programs", root)
    disk._sweep(root / "programs" / "tmp")  # the sweep alone, on the link
    assert victim.read_text() == "keep me"
    assert disk.put(KEY, b"payload") and disk.get(KEY) == b"payload"  # the link was replaced by a folder
    assert victim.read_text() == "keep me"
    assert (root / "programs" / "tmp").is_dir() and not (root / "programs" / "tmp").is_symlink()
    # The sweep still removes what a killed writer left in the real folder, and a link there is removed, not followed.
    left = root / "programs" / "tmp" / "left.tmp"
    left.write_bytes(b"half")
    link = root / "programs" / "tmp" / "link.tmp"
    link.symlink_to(victim)
    _old(left)
    _old(link)
    DiskCache("programs", root).put("cd" + "0" * 62, b"y")
    assert not left.exists() and not link.is_symlink() and victim.read_text() == "keep me"


def test_an_entry_that_is_a_link_is_a_miss_and_its_target_survives(tmp_path: Path) -> None:
    disk = DiskCache("programs", tmp_path / "root")
    assert disk.put(KEY, b"payload")
    path = disk.path(KEY)
    assert path is not None
    target = tmp_path / "elsewhere.bin"
    target.write_bytes(encode_entry(KEY, b"planted"))  # verifies: only the link is wrong
    path.unlink()
    path.symlink_to(target)
    assert disk.get(KEY) is None
    assert not os.path.lexists(path) and target.read_bytes() == encode_entry(KEY, b"planted")


def test_dump_files_do_not_follow_planted_links(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    text = ELEMENTWISE.format(name="main")
    first = tmp_path / "first"
    monkeypatch.setenv("ACCY_CACHE_DIR", "off")
    monkeypatch.setenv("ACCY_DUMP_DIR", str(first))
    accy.compile(text, device="llvm")
    names = sorted(p.name for p in first.iterdir())
    assert names  # the predictable names
    dump = tmp_path / "dump"
    dump.mkdir()
    victims = [tmp_path / f"victim-{i}" for i in range(len(names))]
    for name, victim in zip(names, victims, strict=True):
        (dump / name).symlink_to(victim)  # dangling
    existing = tmp_path / "existing"
    existing.write_text("keep me")
    (dump / "extra").symlink_to(existing)
    monkeypatch.setenv("ACCY_DUMP_DIR", str(dump))
    check(accy.compile(text, device="llvm"))
    assert not any(os.path.lexists(v) for v in victims)
    for name in names:
        path = dump / name
        assert not path.is_symlink() and path.read_text() == (first / name).read_text()
    assert existing.read_text() == "keep me"


@pytest.fixture
def prog(tmp_path: Path) -> Path:
    path = tmp_path / "p.mlir"
    path.write_text(ELEMENTWISE.format(name="main"))
    return path


def test_ir_dump_dir_does_not_follow_a_planted_link(prog: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    dump = tmp_path / "dumps"
    dump.mkdir()
    victim = tmp_path / "victim"
    (dump / "01-canonicalize.mlir").symlink_to(victim)
    assert opt_main([str(prog), "-p", "canonicalize", "--ir-dump-dir", str(dump)]) == 0
    capsys.readouterr()
    assert not os.path.lexists(victim)
    assert "func.func @main" in (dump / "01-canonicalize.mlir").read_text()


def test_a_reproducer_skips_a_planted_dangling_link(prog: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    repro = tmp_path / "repro"
    repro.mkdir()
    victim = tmp_path / "victim"
    (repro / "accy-repro-1.mlir").symlink_to(victim)
    # A crashing pass is an internal error (exit status 4, issue 21).
    assert opt_main([str(prog), "-p", "test-fail", "--reproducer-dir", str(repro)]) == 4
    err = capsys.readouterr().err
    assert not os.path.lexists(victim)
    assert "accy-repro-2.mlir" in err and "func.func @main" in (repro / "accy-repro-2.mlir").read_text()


# --------------------------------------------------------------------------
# Cache entries are data
# --------------------------------------------------------------------------


class _Plant:
    """Unpickling it creates a file: proof that a pickle ran."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple:
        return (Path.touch, (self.marker,))


def test_a_pickle_payload_is_a_miss_and_never_runs(cache_env: Path, tmp_path: Path) -> None:
    accy.compile(LOOP_WITH_LITERAL, device=LLVMDevice())
    (path,) = (cache_env / NAMESPACE).glob("*/*.bin")
    warm = accy.compile(LOOP_WITH_LITERAL, device=LLVMDevice())
    assert warm.program.compile_cached  # loops and literals kept as data
    check(warm, seed=1)
    marker = tmp_path / "pwned"
    payload = pickle.dumps((_Plant(marker), _Plant(marker)))
    assert DiskCache(NAMESPACE, cache_env).put(path.stem, payload)  # a valid entry: only its payload is a pickle
    exe = accy.compile(LOOP_WITH_LITERAL, device=LLVMDevice())
    assert not marker.exists()
    assert not exe.program.compile_cached
    check(exe, seed=2)
    assert accy.compile(LOOP_WITH_LITERAL, device=LLVMDevice()).program.compile_cached  # rewritten as data


# --------------------------------------------------------------------------
# Function names as kernel and file names
# --------------------------------------------------------------------------


def test_safe_symbol_keeps_identifiers_and_mangles_the_rest_apart() -> None:
    assert safe_symbol("main_k0_elementwise") == "main_k0_elementwise"
    names = ["../../x", "__x", "/x", "..__x", "a" * 245, "a" * 244 + "b", "0x", ""]
    mangled = [safe_symbol(n) for n in names]
    assert len(set(mangled)) == len(names)
    for m in mangled:
        assert len(m) <= SYMBOL_LIMIT and m.replace("_", "a").isalnum() and not m[0].isdigit()
    assert "/" not in source_name("../../x", "cl", "text") and "/" not in source_name("/abs", "ll", "")


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("name", ["../../x", "/tmp/accy-abs", "a" * 245], ids=["traversal", "absolute", "long"])
def test_odd_function_names_compile_run_and_dump_inside_the_dump_dir(
    device: str, name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    dump = tmp_path / "a" / "b" / "dump"
    monkeypatch.setenv("ACCY_CACHE_DIR", "off")
    monkeypatch.setenv("ACCY_DUMP_DIR", str(dump))
    before = set(Path("/tmp").glob("accy-abs*"))
    exe = accy.compile(ELEMENTWISE.format(name=name), device=device, fn=name)
    check(exe, seed=4)
    files = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert files and all(p.parent == dump for p in files), files
    assert all(len(p.name) < 255 for p in files)
    assert set(Path("/tmp").glob("accy-abs*")) == before


@pytest.mark.parametrize("device", DEVICES)
def test_fifteen_nested_iterates_make_kernel_names_the_driver_takes(device: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ACCY_CACHE_DIR", "off")
    exe = accy.compile(nested_iterates(15), device=device)
    x = np.random.default_rng(5).random(5, dtype=np.float32)
    (got,) = exe(x)
    np.testing.assert_array_equal(got, x + x)
    check(exe, seed=5)


# --------------------------------------------------------------------------
# pyopencl's own cache
# --------------------------------------------------------------------------

BARE_PYOPENCL = """
import numpy as np, pyopencl as cl
ctx = cl.create_some_context(interactive=False)
q = cl.CommandQueue(ctx)
prg = cl.Program(ctx, "__kernel void twice(__global float *x) { x[get_global_id(0)] *= 2.0f; }").build()
buf = cl.Buffer(ctx, cl.mem_flags.READ_WRITE, 16)
prg.twice(q, (4,), None, buf)
q.finish()
"""

ACCY_OPENCL = """
import numpy as np, accy
exe = accy.compile('''func.func @main(%a: tensor<37xf32>) -> tensor<37xf32> {
  %1 = "accy.exp"(%a) : (tensor<37xf32>) -> tensor<37xf32>
  func.return %1 : tensor<37xf32>
}''', device="opencl")
a = np.random.default_rng(0).random(37, dtype=np.float32)
(r,) = exe(a)
assert np.allclose(np.asarray(r), np.exp(a), rtol=1e-6)
print("ok")
"""


@pytest.mark.skipif(not ocl.opencl_devices(), reason="no OpenCL")
def test_random_bytes_in_pyopencls_cache_do_not_break_an_opencl_run(tmp_path: Path) -> None:
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "xdg"), "ACCY_CACHE_DIR": "off"}
    env.pop("PYOPENCL_NO_CACHE", None)

    def run(code: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)

    assert run(BARE_PYOPENCL).returncode == 0
    planted = [p for p in (tmp_path / "xdg" / "pytools").rglob("*") if p.is_file()]
    assert planted  # pyopencl's invoker cache is there
    for p in planted:
        p.write_bytes(np.random.default_rng(6).bytes(4096))
    assert run(BARE_PYOPENCL).returncode != 0  # what it does to pyopencl itself
    proc = run(ACCY_OPENCL)
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stderr[-2000:]
