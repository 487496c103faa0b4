// The row softmax of softmax_named.mlir written as primitives: max, sub, exp,
// sum, div (the form a frontend emits; one row-pipeline kernel).
func.func @main(%x: tensor<5x17xf32>) -> tensor<5x17xf32> {
  %m = "accy.reduce"(%x) <{kind = "max", axes = array<i64: 1>}> : (tensor<5x17xf32>) -> tensor<5xf32>
  %mb = "accy.broadcast"(%m) <{dims = array<i64: 0>}> : (tensor<5xf32>) -> tensor<5x17xf32>
  %d = "accy.sub"(%x, %mb) : (tensor<5x17xf32>, tensor<5x17xf32>) -> tensor<5x17xf32>
  %e = "accy.exp"(%d) : (tensor<5x17xf32>) -> tensor<5x17xf32>
  %s = "accy.reduce"(%e) <{kind = "sum", axes = array<i64: 1>}> : (tensor<5x17xf32>) -> tensor<5xf32>
  %sb = "accy.broadcast"(%s) <{dims = array<i64: 0>}> : (tensor<5xf32>) -> tensor<5x17xf32>
  %r = "accy.div"(%e, %sb) : (tensor<5x17xf32>, tensor<5x17xf32>) -> tensor<5x17xf32>
  func.return %r : tensor<5x17xf32>
}
