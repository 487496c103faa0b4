"""Settings of the whole test suite.

Every kernel that `kernelize` makes while the tests run is proved in bounds
by the bounds verifier (accy/passes/kernel_ir/bounds.py): the
conformance suite and the random-program fuzzer prove each generated
kernel, not only run it. Subprocesses (accy-run, accy-opt) inherit it.
"""

import os

os.environ["ACCY_VERIFY_BOUNDS"] = "1"


# --------------------------------------------------------------------------
# `--conformance-sample=K`: `make test` runs a fixed 1/K of the conformance
# suite's cases and of the cases marked `sampled` (every test function keeps
# at least one), so the whole
# suite fits CI's few minutes on two cores; `make conformance` runs them all.
# The sample is the same on every run and machine: a case is in it when
# crc32 of its node id is 0 mod K, or it is its function's case of least crc.
# `--conformance-shard=I` takes the cases of residue I instead, so K runs
# (shards 0 to K-1) cover the suite once, e.g. on a machine with a time limit.
# --------------------------------------------------------------------------

import zlib  # noqa: E402
from collections import defaultdict  # noqa: E402

import pytest  # noqa: E402


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--conformance-sample", type=int, default=1, metavar="K",
        help="run 1/K of tests/conformance's cases, the same ones every run (default 1: all)",
    )
    parser.addoption(
        "--conformance-shard", type=int, default=0, metavar="I",
        help="with --conformance-sample=K, run shard I (0 <= I < K) of K: the K shards together are the whole suite",
    )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    k, shard = config.getoption("--conformance-sample"), config.getoption("--conformance-shard")
    if k <= 1:
        return
    if not 0 <= shard < k:
        raise pytest.UsageError(f"--conformance-shard={shard}: expected 0 <= shard < {k}")
    groups: dict[tuple[str, str], list[tuple[int, pytest.Item]]] = defaultdict(list)
    for item in items:
        if "tests/conformance/" in item.nodeid.replace("\\", "/") or item.get_closest_marker("sampled"):
            function = getattr(item, "originalname", item.name)
            groups[(item.nodeid.split("::")[0], function)].append((zlib.crc32(item.nodeid.encode()), item))
    dropped = set()
    for cases in groups.values():
        least = min(cases, key=lambda c: c[0])[1]
        # Shard 0 also takes each function's least case, so it runs every
        # function; the other shards leave it to shard 0.
        dropped |= {id(item) for crc, item in cases if (crc % k != shard or (shard and item is least))
                    and not (shard == 0 and item is least)}
    if dropped:
        config.hook.pytest_deselected(items=[i for i in items if id(i) in dropped])
        items[:] = [i for i in items if id(i) not in dropped]
