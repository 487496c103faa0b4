"""The optional tensor passes keep results: any subset of TENSOR_PASSES, in any
order (repeats included), leaves every program of tests/programs verifying and
computing what it computed before, by the reference interpreter on random
inputs. The pass manager runs in checking mode, so a pass that changed the IR
while claiming to preserve analyses fails too."""

from __future__ import annotations

import random
import zlib
from pathlib import Path

import numpy as np
import pytest
from xdsl.dialects.builtin import ModuleOp, TensorType
from xdsl.dialects.func import FuncOp
from xdsl.parser import Parser

from accy.dialects.accy import AttentionOp, LayerNormOp, LogSoftmaxOp, SoftmaxOp
from accy.dialects.context import make_context
from accy.passes.pass_manager import PassManager
from accy.passes.registry import TENSOR_PASSES, get_pass
from accy.reference import find_function, numpy_dtype, run

PROGRAMS = sorted((Path(__file__).parents[1] / "programs").glob("*.mlir"))
ORDERS_PER_PROGRAM = 10
NAMED_OPS = (SoftmaxOp, LogSoftmaxOp, LayerNormOp, AttentionOp)


def parse(path: Path) -> ModuleOp:
    module = Parser(make_context(), path.read_text(), path.name).parse_module()
    module.verify()
    return module


def random_inputs(func: FuncOp, rng: np.random.Generator) -> list[np.ndarray]:
    """Inputs matching `func`'s signature: normal floats, small integers
    (zero included, so integer division by zero is exercised), random masks."""
    arrays = []
    for t in func.function_type.inputs.data:
        assert isinstance(t, TensorType)
        shape, dtype = tuple(t.get_shape()), numpy_dtype(t.element_type)
        if dtype == np.bool_:
            arrays.append(rng.random(shape) < 0.5)
        elif dtype.kind == "i":
            arrays.append(rng.integers(-5, 6, size=shape).astype(dtype))
        else:
            arrays.append(rng.standard_normal(shape).astype(dtype))
    return arrays


def pass_orders(seed: int) -> list[tuple[str, ...]]:
    """Seeded sequences of 1 to 5 tensor passes, drawn with replacement; the
    full set in registry order and reversed are always among them."""
    rng = random.Random(seed)
    orders = [tuple(TENSOR_PASSES), tuple(reversed(TENSOR_PASSES))]
    while len(orders) < ORDERS_PER_PROGRAM:
        orders.append(tuple(rng.choice(TENSOR_PASSES) for _ in range(rng.randint(1, 5))))
    return orders


def assert_same_results(got: tuple[np.ndarray, ...], want: tuple[np.ndarray, ...], what: str) -> None:
    assert len(got) == len(want), what
    for i, (g, w) in enumerate(zip(got, want, strict=True)):
        assert (g.dtype, g.shape) == (w.dtype, w.shape), f"{what}: result #{i}"
        if w.dtype.kind == "f":
            np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-5, err_msg=f"{what}: result #{i}")
        else:
            np.testing.assert_array_equal(g, w, err_msg=f"{what}: result #{i}")


def test_corpus_is_there() -> None:
    assert len(PROGRAMS) >= 10
    for path in PROGRAMS:
        find_function(parse(path), "main")


@pytest.mark.parametrize("path", PROGRAMS, ids=[p.stem for p in PROGRAMS])
def test_pass_orders_keep_results(path: Path) -> None:
    seed = zlib.crc32(path.name.encode())
    original = parse(path)
    inputs = random_inputs(find_function(original, "main"), np.random.default_rng(seed))
    want = run(original, "main", *inputs)
    for order in pass_orders(seed):
        module = parse(path)
        PassManager([get_pass(name)() for name in order], check=True).run(module)
        module.verify()
        what = f"{path.name} after {','.join(order)}"
        assert_same_results(run(module, "main", *inputs), want, what)
        if "decompose" in order:
            left = [op.name for op in module.walk() if isinstance(op, NAMED_OPS)]
            assert not left, f"{what}: {left} not decomposed"


# The pass manager takes a pass at its word (as MLIR does): a pass that changed
# nothing must say so, or the analyses are dropped for nothing.
@pytest.mark.parametrize("name", ["canonicalize", "decompose", "inline", "set-target"])
def test_second_run_changes_nothing_and_preserves_all(name: str) -> None:
    from accy.passes.pass_manager import AnalysisManager, fingerprint

    pass_ = get_pass(name)()
    for path in PROGRAMS:
        module = parse(path)
        pass_.run(make_context(), module, AnalysisManager())
        before = fingerprint(module)
        preserved = pass_.run(make_context(), module, AnalysisManager())
        assert fingerprint(module) == before, f"{name} is not idempotent on {path.name}"
        assert preserved.everything, f"{name} changed nothing on {path.name} but did not preserve all"


def test_canonicalize_reports_a_change() -> None:
    from accy.passes.pass_manager import AnalysisManager

    module = parse(next(p for p in PROGRAMS if p.stem == "canonicalizable"))
    assert get_pass("canonicalize")().run(make_context(), module, AnalysisManager()).is_none
