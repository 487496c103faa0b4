// Layer norm over the last dim of a [2, 3, 17] activation, as a named op,
// followed by a residual add.
func.func @main(%x: tensor<2x3x17xf32>, %g: tensor<17xf32>, %b: tensor<17xf32>) -> tensor<2x3x17xf32> {
  %0 = "accy.layer_norm"(%x, %g, %b) <{epsilon = 1.0e-05 : f32}> : (tensor<2x3x17xf32>, tensor<17xf32>, tensor<17xf32>) -> tensor<2x3x17xf32>
  %1 = "accy.add"(%0, %x) : (tensor<2x3x17xf32>, tensor<2x3x17xf32>) -> tensor<2x3x17xf32>
  func.return %1 : tensor<2x3x17xf32>
}
