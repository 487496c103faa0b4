// A program with work for canonicalize: identities (x*1, x+0, neg(neg x)),
// foldable literals, a select on a literal mask, no-op shape ops, a
// transpose pair, a no-op cast and dead code; results must not change.
func.func @main(%x: tensor<4x17xf32>, %y: tensor<4x17xf32>) -> (tensor<4x17xf32>, tensor<17x4xf32>) {
  %one = "accy.constant"() <{value = dense<1.0> : tensor<4x17xf32>}> : () -> tensor<4x17xf32>
  %two = "accy.constant"() <{value = dense<2.0> : tensor<4x17xf32>}> : () -> tensor<4x17xf32>
  %zero = "accy.sub"(%two, %two) : (tensor<4x17xf32>, tensor<4x17xf32>) -> tensor<4x17xf32>
  %true = "accy.constant"() <{value = dense<true> : tensor<4x17xi1>}> : () -> tensor<4x17xi1>
  %0 = "accy.mul"(%x, %one) : (tensor<4x17xf32>, tensor<4x17xf32>) -> tensor<4x17xf32>
  %1 = "accy.add"(%zero, %0) : (tensor<4x17xf32>, tensor<4x17xf32>) -> tensor<4x17xf32>
  %2 = "accy.neg"(%1) : (tensor<4x17xf32>) -> tensor<4x17xf32>
  %3 = "accy.neg"(%2) : (tensor<4x17xf32>) -> tensor<4x17xf32>
  %4 = "accy.select"(%true, %3, %y) : (tensor<4x17xi1>, tensor<4x17xf32>, tensor<4x17xf32>) -> tensor<4x17xf32>
  %5 = "accy.cast"(%4) : (tensor<4x17xf32>) -> tensor<4x17xf32>
  %6 = "accy.transpose"(%5) <{permutation = array<i64: 1, 0>}> : (tensor<4x17xf32>) -> tensor<17x4xf32>
  %7 = "accy.transpose"(%6) <{permutation = array<i64: 1, 0>}> : (tensor<17x4xf32>) -> tensor<4x17xf32>
  %8 = "accy.broadcast"(%7) <{dims = array<i64: 0, 1>}> : (tensor<4x17xf32>) -> tensor<4x17xf32>
  %9 = "accy.slice"(%8) <{start = array<i64: 0, 0>, limit = array<i64: 4, 17>, stride = array<i64: 1, 1>}> : (tensor<4x17xf32>) -> tensor<4x17xf32>
  %10 = "accy.mul"(%9, %two) : (tensor<4x17xf32>, tensor<4x17xf32>) -> tensor<4x17xf32>
  %11 = "accy.add"(%10, %y) : (tensor<4x17xf32>, tensor<4x17xf32>) -> tensor<4x17xf32>
  %dead = "accy.exp"(%11) : (tensor<4x17xf32>) -> tensor<4x17xf32>
  %12 = "accy.softmax"(%11) <{axis = 1 : i64}> : (tensor<4x17xf32>) -> tensor<4x17xf32>
  func.return %12, %6 : tensor<4x17xf32>, tensor<17x4xf32>
}
