// Scans with an elementwise prologue: cumsum of (x*x + 1) along rows,
// an exclusive reverse running max of the result, and a cumprod of a
// sigmoid along the columns (odd sizes: 3 x 17).
func.func @main(%x: tensor<3x17xf32>) -> (tensor<3x17xf32>, tensor<3x17xf32>, tensor<3x17xf32>) {
  %one = "accy.constant"() <{value = dense<1.0> : tensor<3x17xf32>}> : () -> tensor<3x17xf32>
  %sq = "accy.mul"(%x, %x) : (tensor<3x17xf32>, tensor<3x17xf32>) -> tensor<3x17xf32>
  %p = "accy.add"(%sq, %one) : (tensor<3x17xf32>, tensor<3x17xf32>) -> tensor<3x17xf32>
  %c = "accy.scan"(%p) <{kind = "sum", axis = 1 : i64, exclusive = false, reverse = false}> : (tensor<3x17xf32>) -> tensor<3x17xf32>
  %r = "accy.scan"(%c) <{kind = "max", axis = -1 : i64, exclusive = true, reverse = true}> : (tensor<3x17xf32>) -> tensor<3x17xf32>
  %s = "accy.sigmoid"(%x) : (tensor<3x17xf32>) -> tensor<3x17xf32>
  %q = "accy.scan"(%s) <{kind = "prod", axis = 0 : i64, exclusive = false, reverse = false}> : (tensor<3x17xf32>) -> tensor<3x17xf32>
  func.return %c, %r, %q : tensor<3x17xf32>, tensor<3x17xf32>, tensor<3x17xf32>
}
