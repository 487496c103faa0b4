"""The documentation's examples run as written (issue 21).

- docs/writing-a-pass.md, the whole guide in order in one empty folder:
  the blocks that are files (`# file: NAME`) written there, its Python
  blocks run in one namespace, its shell commands run there (`accy-opt`
  as installed), each `console` block's output compared with what the
  commands print (standard output and error together, as a terminal shows
  them). `pip install .` is the one command not run as written: the
  package the guide's pyproject.toml describes is put on PYTHONPATH as pip
  would install it (its modules and a dist-info with its entry points), so
  the test needs no network, no build backend and no change to the venv.
- docs/custom-kernels.md, its Python blocks on the LLVM device (what
  `DeviceId.AUTO` picks here is made the LLVM device); a block that names
  OpenCL on the OpenCL device instead, where there is one.
- docs/op-builders.md, its example.

A failure names the page and the line of the block (Python tracebacks
show the page's lines).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tomllib
import types
from pathlib import Path

import pytest
from docs_blocks import Block, blocks, commands, write_files

from accy.passes import registry

ROOT = Path(__file__).parents[2]
DOCS = ROOT / "docs"
BIN = Path(sys.executable).parent


def run_python(block: Block, namespace: dict[str, object]) -> None:
    exec(block.code(), namespace)


@pytest.fixture
def namespace(monkeypatch: pytest.MonkeyPatch) -> dict[str, object]:
    """Where a page's Python blocks run: the namespace of a module in
    `sys.modules`, as a reader's `__main__` is (dataclasses look their
    module up there)."""
    module = types.ModuleType("__guide__")
    monkeypatch.setitem(sys.modules, module.__name__, module)
    return module.__dict__


class Shell:
    """Runs a page's shell commands in `folder`, as a reader's shell would
    with accy installed: the venv's tools on PATH, and what `pip install .`
    installed (`site`) on PYTHONPATH."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.site: Path | None = None

    def run(self, command: str) -> tuple[int, str]:
        if command.split() == ["pip", "install", "."]:
            self.site = install(self.folder, self.folder.parent / "site")
            return 0, ""
        env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}", "PYTHONUNBUFFERED": "1"}
        env.pop("PYTHONPATH", None)
        if self.site is not None:
            env["PYTHONPATH"] = str(self.site)
        done = subprocess.run(
            ["bash", "-c", command], cwd=self.folder, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
            text=True, timeout=300, check=False,
        )
        return done.returncode, done.stdout


def install(project: Path, site: Path) -> Path:
    """What `pip install .` makes of `project` for accy: its `py-modules`
    copied into `site`, and a dist-info there declaring its entry points."""
    meta = tomllib.loads((project / "pyproject.toml").read_text())
    name, version = meta["project"]["name"], meta["project"]["version"]
    site.mkdir()
    for module in meta["tool"]["setuptools"]["py-modules"]:
        shutil.copy(project / f"{module}.py", site / f"{module}.py")
    dist = site / f"{name.replace('-', '_')}-{version}.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
    groups = meta["project"].get("entry-points", {})
    (dist / "entry_points.txt").write_text(
        "".join(f"[{group}]\n" + "".join(f"{k} = {v}\n" for k, v in points.items()) for group, points in groups.items())
    )
    return site


@pytest.fixture
def reader(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty folder to follow a page in, the interpreter's current folder
    and first on its path; what the page registers and imports is
    forgotten after it."""
    folder = tmp_path / "work"
    folder.mkdir()
    monkeypatch.chdir(folder)
    monkeypatch.syspath_prepend(str(folder))
    # The installed entry points are read (once) into the registry itself,
    # not into the copy that is thrown away after the test.
    registry.pass_names()
    monkeypatch.setattr(registry, "_REGISTERED", dict(registry._REGISTERED))
    before = set(sys.modules)
    yield folder
    for name in set(sys.modules) - before:
        if getattr(sys.modules[name], "__file__", None) and Path(sys.modules[name].__file__).is_relative_to(folder):
            del sys.modules[name]


def test_writing_a_pass_runs(reader: Path, namespace: dict[str, object]) -> None:
    page = DOCS / "writing-a-pass.md"
    found = blocks(page)
    files = write_files(found, reader)
    assert {"my_passes.py", "prog.mlir", "pyproject.toml"} <= set(files)
    shell = Shell(reader)
    ran = 0
    for block in found:
        if block.file is not None:
            continue
        if block.language == "python":
            run_python(block, namespace)
        elif block.language in ("sh", "console"):
            for command, expected in commands(block):
                status, output = shell.run(command)
                if expected is None:
                    assert status == 0, f"{block.where}: `{command}` exited {status}:\n{output}"
                else:
                    assert output.rstrip("\n") == expected.rstrip("\n"), (
                        f"{block.where}: `{command}` printed (exit status {status}):\n{output}"
                    )
        else:
            pytest.fail(f"{block.where}: a {block.language or 'plain'} block that is no file: the test cannot run it")
        ran += 1
    assert ran >= 10


def _needs_opencl(block: Block) -> bool:
    return "DeviceId.OPENCL" in block.text or '"opencl' in block.text


@pytest.mark.parametrize("device_name", ["llvm", "opencl"])
def test_custom_kernels_examples_run(
    device_name: str, reader: Path, namespace: dict[str, object], monkeypatch: pytest.MonkeyPatch
) -> None:
    examples = blocks(DOCS / "custom-kernels.md", "python")
    assert examples
    if device_name == "opencl":
        # Every example: those that say DeviceId.AUTO run on OpenCL here.
        from accy.runtime.opencl import OpenCLDevice, opencl_devices

        if not opencl_devices():
            pytest.skip("no OpenCL device")
        device = OpenCLDevice()
    else:
        examples = [b for b in examples if not _needs_opencl(b)]
        from accy.runtime.llvm import LLVMDevice

        device = LLVMDevice()
    from accy.runtime import devices

    # The examples say DeviceId.AUTO (the best device here): make it this one.
    monkeypatch.setitem(devices._instances, devices.AUTO, device)
    for block in examples:
        run_python(block, namespace)


def test_op_builders_example_runs(reader: Path, namespace: dict[str, object]) -> None:
    examples = blocks(DOCS / "op-builders.md", "python")
    assert examples
    for block in examples:
        run_python(block, namespace)
