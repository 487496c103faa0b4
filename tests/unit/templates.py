"""Program templates the runtime tests share (`str.format` with r rows, c columns)."""

#: exp(x) * y and its row sums: an elementwise kernel and a reduction with a prologue.
EXP_MUL_SUM = """
func.func @main(%x: tensor<{r}x{c}xf32>, %y: tensor<{r}x{c}xf32>) -> (tensor<{r}xf32>, tensor<{r}x{c}xf32>) {{
  %e = "accy.exp"(%x) : (tensor<{r}x{c}xf32>) -> tensor<{r}x{c}xf32>
  %m = "accy.mul"(%e, %y) : (tensor<{r}x{c}xf32>, tensor<{r}x{c}xf32>) -> tensor<{r}x{c}xf32>
  %s = "accy.reduce"(%m) <{{kind = "sum", axes = array<i64: 1>}}> : (tensor<{r}x{c}xf32>) -> tensor<{r}xf32>
  func.return %s, %m : tensor<{r}xf32>, tensor<{r}x{c}xf32>
}}
"""
