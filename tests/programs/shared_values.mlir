// Values with several consumers: %e feeds a row sum, a column max, an
// elementwise product and a result; %n feeds two reductions of different axes.
func.func @main(%x: tensor<9x17xf32>, %y: tensor<9x17xf32>) -> (tensor<9x17xf32>, tensor<9xf32>, tensor<17xf32>, tensor<9x17xf32>, tensor<f32>) {
  %n = "accy.neg"(%x) : (tensor<9x17xf32>) -> tensor<9x17xf32>
  %e = "accy.exp"(%n) : (tensor<9x17xf32>) -> tensor<9x17xf32>
  %rs = "accy.reduce"(%e) <{kind = "sum", axes = array<i64: 1>}> : (tensor<9x17xf32>) -> tensor<9xf32>
  %cm = "accy.reduce"(%e) <{kind = "max", axes = array<i64: 0>}> : (tensor<9x17xf32>) -> tensor<17xf32>
  %p = "accy.mul"(%e, %y) : (tensor<9x17xf32>, tensor<9x17xf32>) -> tensor<9x17xf32>
  %q = "accy.add"(%p, %e) : (tensor<9x17xf32>, tensor<9x17xf32>) -> tensor<9x17xf32>
  %all = "accy.reduce"(%n) <{kind = "min", axes = array<i64: 0, 1>}> : (tensor<9x17xf32>) -> tensor<f32>
  func.return %e, %rs, %cm, %q, %all : tensor<9x17xf32>, tensor<9xf32>, tensor<17xf32>, tensor<9x17xf32>, tensor<f32>
}
