"""Minimized programs from the random-program fuzzer (test_random_programs.py),
each run like the fuzzer runs its programs: compiled from text for the OpenCL
runtime under both profiles, compared with the reference interpreter.

A case marked xfail is an open bug; the fuzzer's default run leaves its
pattern out (`KNOWN_BUGS` there names the generator feature) and its slow run
still draws it. Fixing the bug turns the xfail into an unexpected pass
(strict): then drop the mark here and the feature from `KNOWN_BUGS`.
"""

from __future__ import annotations

import pytest
from test_random_programs import check_text

from accy.runtime.device import Device


def open_bug(reason: str) -> pytest.MarkDecorator:
    return pytest.mark.xfail(strict=True, reason=reason)


CASES = [
    pytest.param(
        """func.func @main(%x: tensor<2xf32>, %g: tensor<2xf32>, %b: tensor<2xf32>) -> tensor<2xf32> {
  %y = "accy.layer_norm"(%x, %g, %b) <{epsilon = 1.0e-03 : f32}> : (tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  func.return %y : tensor<2xf32>
}""",
        id="layer_norm_rank1",
    ),
    pytest.param(
        """func.func @main(%x: tensor<3x5xf32>, %y: tensor<3x5xf32>) -> tensor<3x5xf32> {
  %b = "accy.broadcast"(%y) <{dims = array<i64: 0, 1>}> : (tensor<3x5xf32>) -> tensor<3x5xf32>
  %a = "accy.add"(%x, %b) : (tensor<3x5xf32>, tensor<3x5xf32>) -> tensor<3x5xf32>
  %s = "accy.softmax"(%a) <{axis = 1 : i64}> : (tensor<3x5xf32>) -> tensor<3x5xf32>
  func.return %s : tensor<3x5xf32>
}""",
        id="broadcast_identity",
    ),
    pytest.param(
        """func.func @main(%x: tensor<2xf32>) -> tensor<2xf32> {
  %c = "accy.constant"() <{value = dense<[1.5, 6.25e-01]> : tensor<2xf32>}> : () -> tensor<2xf32>
  %s = "accy.softmax"(%c) <{axis = 0 : i64}> : (tensor<2xf32>) -> tensor<2xf32>
  func.return %s : tensor<2xf32>
}""",
        id="row_op_of_dense_constant",
    ),
    pytest.param(
        """func.func @main(%x: tensor<3x5xf32>) -> (tensor<3x5xf32>, tensor<3x5xf32>) {
  %m = "accy.reduce"(%x) <{kind = "max", axes = array<i64: 1>}> : (tensor<3x5xf32>) -> tensor<3xf32>
  %b = "accy.broadcast"(%m) <{dims = array<i64: 0>}> : (tensor<3xf32>) -> tensor<3x5xf32>
  %d = "accy.sub"(%x, %b) : (tensor<3x5xf32>, tensor<3x5xf32>) -> tensor<3x5xf32>
  func.return %b, %d : tensor<3x5xf32>, tensor<3x5xf32>
}""",
        id="returned_row_broadcast",
    ),
    pytest.param(
        """func.func @main(%x: tensor<5x5xf32>, %y: tensor<5xf32>) -> tensor<5x5xf32> {
  %b = "accy.broadcast"(%y) <{dims = array<i64: 0>}> : (tensor<5xf32>) -> tensor<5x5xf32>
  %t = "accy.transpose"(%b) <{permutation = array<i64: 1, 0>}> : (tensor<5x5xf32>) -> tensor<5x5xf32>
  %a = "accy.add"(%x, %t) : (tensor<5x5xf32>, tensor<5x5xf32>) -> tensor<5x5xf32>
  %s = "accy.softmax"(%a) <{axis = 1 : i64}> : (tensor<5x5xf32>) -> tensor<5x5xf32>
  func.return %s : tensor<5x5xf32>
}""",
        id="transposed_broadcast_in_prologue",  # constant per row before the transpose, not after
    ),
    pytest.param(
        """func.func @main(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %c = "accy.constant"() <{value = dense<[[1.5, 1.5, 1.5], [2.0, 2.0, 2.0]]> : tensor<2x3xf32>}> : () -> tensor<2x3xf32>
  %m = "accy.reduce"(%x) <{kind = "max", axes = array<i64: 1>}> : (tensor<2x3xf32>) -> tensor<2xf32>
  %b = "accy.broadcast"(%m) <{dims = array<i64: 0>}> : (tensor<2xf32>) -> tensor<2x3xf32>
  %p = "accy.mul"(%b, %c) : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  %d = "accy.sub"(%x, %p) : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  %s = "accy.softmax"(%d) <{axis = 1 : i64}> : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %s : tensor<2x3xf32>
}""",
        id="row_constant_times_row_max",  # a non-splat constant that is constant along the row
    ),
]


@pytest.mark.parametrize("src", CASES)
def test_fuzz_regression(src: str, device: Device) -> None:
    check_text(src, seed=0, device=device)
