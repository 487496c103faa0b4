// Attention written as primitives, non-causal: q·kᵀ with a transposed k (as
// many frontends write it), scale, softmax as max/sub/exp/sum/div, then ·v.
func.func @main(%q: tensor<3x17x8xf32>, %k: tensor<3x9x8xf32>, %v: tensor<3x9x5xf32>) -> tensor<3x17x5xf32> {
  %kt = "accy.transpose"(%k) <{permutation = array<i64: 0, 2, 1>}> : (tensor<3x9x8xf32>) -> tensor<3x8x9xf32>
  %s = "accy.dot_general"(%q, %kt) <{lhs_batch = array<i64: 0>, rhs_batch = array<i64: 0>, lhs_contract = array<i64: 2>, rhs_contract = array<i64: 1>}> : (tensor<3x17x8xf32>, tensor<3x8x9xf32>) -> tensor<3x17x9xf32>
  %scale = "accy.constant"() <{value = dense<0.35355339> : tensor<3x17x9xf32>}> : () -> tensor<3x17x9xf32>
  %x = "accy.mul"(%s, %scale) : (tensor<3x17x9xf32>, tensor<3x17x9xf32>) -> tensor<3x17x9xf32>
  %m = "accy.reduce"(%x) <{kind = "max", axes = array<i64: 2>}> : (tensor<3x17x9xf32>) -> tensor<3x17xf32>
  %mb = "accy.broadcast"(%m) <{dims = array<i64: 0, 1>}> : (tensor<3x17xf32>) -> tensor<3x17x9xf32>
  %d = "accy.sub"(%x, %mb) : (tensor<3x17x9xf32>, tensor<3x17x9xf32>) -> tensor<3x17x9xf32>
  %e = "accy.exp"(%d) : (tensor<3x17x9xf32>) -> tensor<3x17x9xf32>
  %sum = "accy.reduce"(%e) <{kind = "sum", axes = array<i64: 2>}> : (tensor<3x17x9xf32>) -> tensor<3x17xf32>
  %sumb = "accy.broadcast"(%sum) <{dims = array<i64: 0, 1>}> : (tensor<3x17xf32>) -> tensor<3x17x9xf32>
  %p = "accy.div"(%e, %sumb) : (tensor<3x17x9xf32>, tensor<3x17x9xf32>) -> tensor<3x17x9xf32>
  %o = "accy.dot_general"(%p, %v) <{lhs_batch = array<i64: 0>, rhs_batch = array<i64: 0>, lhs_contract = array<i64: 2>, rhs_contract = array<i64: 1>}> : (tensor<3x17x9xf32>, tensor<3x9x5xf32>) -> tensor<3x17x5xf32>
  func.return %o : tensor<3x17x5xf32>
}
