"""accy/dialects/class_code.py: the methods `dataclasses` writes for xDSL's
and accy's classes, compiled once and kept beside accy's bytecode. Each
case runs fresh processes (the classes are made at import) against a
bundle of its own."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

#: A fresh process: the bundle at argv[1], the demo MLP compiled and run on
#: the reference and llvm devices, a dataclass of its own made; prints the
#: bundle's stats and the results.
CHILD = """
import json, sys
from pathlib import Path
import accy.dialects.class_code as class_code
class_code.BUNDLE = Path(sys.argv[1])
import dataclasses
import numpy as np
import accy
program = open(sys.argv[2]).read()
rng = np.random.default_rng(0)
inputs = [rng.standard_normal(s).astype(np.float32) for s in ((8, 32), (32, 64), (64,), (64, 10), (10,))]
(got,) = accy.compile(program, device="llvm")(*inputs)
(want,) = accy.compile(program, device="reference")(*inputs)
np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
held = class_code.stats()
from xdsl.irdl.constraints import AnyOf
from accy.runtime.schedule import Launch
for cls in (AnyOf, Launch):  # annotations evaluated as dataclasses' own exec does, not left as its locals' names
    assert not any(str(a).startswith("_type_") for a in cls.__init__.__annotations__.values()), cls.__init__.__annotations__

@dataclasses.dataclass(frozen=True)
class Mine:
    a: int
    b: str = "x"

assert Mine(1) == Mine(1, "x") and repr(Mine(2)) == "Mine(a=2, b='x')" and hash(Mine(1)) == hash(Mine(1))
assert class_code.stats() == held  # a user's class is the builtin exec's
print(json.dumps(held))
"""
DEMO = Path(__file__).resolve().parents[2] / "examples" / "demo.mlir"


def _child(bundle: Path, write_bytecode: bool = True) -> dict[str, int]:
    env = {**os.environ, "ACCY_CACHE_DIR": "off"}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    if not write_bytecode:
        env["PYTHONDONTWRITEBYTECODE"] = "1"
    done = subprocess.run(
        [sys.executable, "-c", CHILD, str(bundle), str(DEMO)], env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_a_second_process_compiles_no_method_and_its_classes_work(tmp_path: Path) -> None:
    bundle = tmp_path / "bundle.bin"
    first = _child(bundle)
    assert first["compiled"] > 300 and first["held"] == first["used"] == first["compiled"]
    assert bundle.is_file()
    second = _child(bundle)
    assert second == {"held": first["held"], "used": first["used"], "compiled": 0}


def test_no_bundle_is_written_where_python_writes_no_bytecode(tmp_path: Path) -> None:
    bundle = tmp_path / "bundle.bin"
    assert _child(bundle, write_bytecode=False)["compiled"] > 300
    assert not bundle.exists()


@pytest.mark.parametrize("damage", ["garbage", "truncated", "not a dict of code", "group-writable", "a link"])
def test_a_bundle_that_is_not_trusted_or_not_one_is_ignored_and_written_again(tmp_path: Path, damage: str) -> None:
    import marshal

    bundle = tmp_path / "bundle.bin"
    used = _child(bundle)["used"]
    whole = bundle.read_bytes()
    if damage == "garbage":
        bundle.write_bytes(os.urandom(4096))
    elif damage == "truncated":
        bundle.write_bytes(whole[: len(whole) // 2])
    elif damage == "not a dict of code":
        bundle.write_bytes(marshal.dumps({b"k" * 16: "print('no')"}))
    elif damage == "group-writable":
        bundle.chmod(0o664)
    else:
        real = tmp_path / "real.bin"
        bundle.rename(real)
        bundle.symlink_to(real)
    assert _child(bundle)["compiled"] == used  # every text compiled again, nothing taken from it
    assert not bundle.is_symlink() and _child(bundle)["compiled"] == 0  # and written whole again
