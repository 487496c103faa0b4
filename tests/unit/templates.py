"""What the runtime tests share: program templates (`str.format` with r
rows, c columns) and a checked run against the reference interpreter."""

from __future__ import annotations

from typing import Any

import numpy as np

#: exp(x) * y and its row sums: an elementwise kernel and a reduction with a prologue.
EXP_MUL_SUM = """
func.func @main(%x: tensor<{r}x{c}xf32>, %y: tensor<{r}x{c}xf32>) -> (tensor<{r}xf32>, tensor<{r}x{c}xf32>) {{
  %e = "accy.exp"(%x) : (tensor<{r}x{c}xf32>) -> tensor<{r}x{c}xf32>
  %m = "accy.mul"(%e, %y) : (tensor<{r}x{c}xf32>, tensor<{r}x{c}xf32>) -> tensor<{r}x{c}xf32>
  %s = "accy.reduce"(%m) <{{kind = "sum", axes = array<i64: 1>}}> : (tensor<{r}x{c}xf32>) -> tensor<{r}xf32>
  func.return %s, %m : tensor<{r}xf32>, tensor<{r}x{c}xf32>
}}
"""


def check(exe: Any, seed: int = 0) -> list[np.ndarray]:
    """Runs `exe` (an `accy.Executable`) on its random inputs of `seed` and
    asserts every result matches the reference interpreter's."""
    inputs = exe.random_inputs(seed)
    outputs = exe(*inputs)
    for i, c in enumerate(exe.compare_with_reference(inputs, outputs)):
        assert c.ok, f"result #{i}: max abs err {c.max_abs:.3e}, max rel err {c.max_rel:.3e}"
    return list(outputs)
