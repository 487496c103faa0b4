// Every reduce kind over several axes of a [3, 1, 17] tensor (a size-1 dim).
func.func @main(%x: tensor<3x1x17xf32>) -> (tensor<3x1xf32>, tensor<17xf32>, tensor<3xf32>, tensor<1x17xf32>, tensor<f32>) {
  %0 = "accy.reduce"(%x) <{kind = "sum", axes = array<i64: 2>}> : (tensor<3x1x17xf32>) -> tensor<3x1xf32>
  %1 = "accy.reduce"(%x) <{kind = "max", axes = array<i64: 0, 1>}> : (tensor<3x1x17xf32>) -> tensor<17xf32>
  %2 = "accy.reduce"(%x) <{kind = "mean", axes = array<i64: -1, 1>}> : (tensor<3x1x17xf32>) -> tensor<3xf32>
  %3 = "accy.reduce"(%x) <{kind = "min", axes = array<i64: 0>}> : (tensor<3x1x17xf32>) -> tensor<1x17xf32>
  %t = "accy.tanh"(%x) : (tensor<3x1x17xf32>) -> tensor<3x1x17xf32>
  %4 = "accy.reduce"(%t) <{kind = "prod", axes = array<i64: 0, 1, 2>}> : (tensor<3x1x17xf32>) -> tensor<f32>
  func.return %0, %1, %2, %3, %4 : tensor<3x1xf32>, tensor<17xf32>, tensor<3xf32>, tensor<1x17xf32>, tensor<f32>
}
