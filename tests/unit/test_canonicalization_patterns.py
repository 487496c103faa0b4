"""The accy ops carry their canonicalization patterns (MLIR's
`getCanonicalizationPatterns`): xDSL's own canonicalize pass, which knows
nothing of accy, finds them on the ops."""

from __future__ import annotations

import pytest
from xdsl.traits import HasCanonicalizationPatternsTrait
from xdsl.transforms.canonicalize import CanonicalizePass

from accy.dialects import accy
from accy.dialects.context import make_context
from accy.dialects.parse import parse_module

T = "tensor<4x6xf32>"


@pytest.mark.parametrize(
    ("body", "left"),
    [
        (f'%a = "accy.neg"(%x) : ({T}) -> {T}\n  %r = "accy.neg"(%a) : ({T}) -> {T}', []),
        (
            f'%t = "accy.transpose"(%x) <{{permutation = array<i64: 1, 0>}}> : ({T}) -> tensor<6x4xf32>\n'
            f'  %r = "accy.transpose"(%t) <{{permutation = array<i64: 1, 0>}}> : (tensor<6x4xf32>) -> {T}',
            [],
        ),
        (f'%c = "accy.cast"(%x) : ({T}) -> {T}\n  %r = "accy.exp"(%c) : ({T}) -> {T}', ["accy.exp"]),
        (
            f'%z = "accy.constant"() <{{value = dense<0.0> : {T}}}> : () -> {T}\n'
            f'  %r = "accy.add"(%x, %z) : ({T}, {T}) -> {T}',
            [],
        ),
    ],
)
def test_xdsl_canonicalize_applies_the_ops_patterns(body: str, left: list[str]) -> None:
    module = parse_module(f"func.func @f(%x: {T}) -> {T} {{\n  {body}\n  func.return %r : {T}\n}}\n")
    CanonicalizePass().apply(make_context(), module)
    names = [op.name for op in module.walk() if op.dialect_name() == "accy"]
    assert names == left, str(module)


def test_patterns_hang_on_the_ops() -> None:
    with_patterns = {
        op.name for op in accy.Accy.operations if op.get_trait(HasCanonicalizationPatternsTrait) is not None
    }
    assert with_patterns == {
        "accy.add", "accy.sub", "accy.mul", "accy.div", "accy.neg", "accy.select", "accy.cast",
        "accy.slice", "accy.reshape", "accy.transpose", "accy.broadcast", "accy.iterate",
    }  # fmt: skip
    assert accy.ExpOp.get_trait(HasCanonicalizationPatternsTrait) is None
