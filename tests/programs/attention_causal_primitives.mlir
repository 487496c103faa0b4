// Causal self-attention written as primitives with the mask as a literal i1
// tensor (key > query is masked with a large negative score), seq 7, dim 4.
func.func @main(%q: tensor<7x4xf32>, %k: tensor<7x4xf32>, %v: tensor<7x4xf32>) -> tensor<7x4xf32> {
  %s = "accy.dot_general"(%q, %k) <{lhs_batch = array<i64>, rhs_batch = array<i64>, lhs_contract = array<i64: 1>, rhs_contract = array<i64: 1>}> : (tensor<7x4xf32>, tensor<7x4xf32>) -> tensor<7x7xf32>
  %scale = "accy.constant"() <{value = dense<0.5> : tensor<7x7xf32>}> : () -> tensor<7x7xf32>
  %x = "accy.mul"(%s, %scale) : (tensor<7x7xf32>, tensor<7x7xf32>) -> tensor<7x7xf32>
  %mask = "accy.constant"() <{value = dense<[[false, true, true, true, true, true, true], [false, false, true, true, true, true, true], [false, false, false, true, true, true, true], [false, false, false, false, true, true, true], [false, false, false, false, false, true, true], [false, false, false, false, false, false, true], [false, false, false, false, false, false, false]]> : tensor<7x7xi1>}> : () -> tensor<7x7xi1>
  %neg = "accy.constant"() <{value = dense<-1.0e+30> : tensor<7x7xf32>}> : () -> tensor<7x7xf32>
  %y = "accy.select"(%mask, %neg, %x) : (tensor<7x7xi1>, tensor<7x7xf32>, tensor<7x7xf32>) -> tensor<7x7xf32>
  %m = "accy.reduce"(%y) <{kind = "max", axes = array<i64: 1>}> : (tensor<7x7xf32>) -> tensor<7xf32>
  %mb = "accy.broadcast"(%m) <{dims = array<i64: 0>}> : (tensor<7xf32>) -> tensor<7x7xf32>
  %d = "accy.sub"(%y, %mb) : (tensor<7x7xf32>, tensor<7x7xf32>) -> tensor<7x7xf32>
  %e = "accy.exp"(%d) : (tensor<7x7xf32>) -> tensor<7x7xf32>
  %sum = "accy.reduce"(%e) <{kind = "sum", axes = array<i64: 1>}> : (tensor<7x7xf32>) -> tensor<7xf32>
  %sumb = "accy.broadcast"(%sum) <{dims = array<i64: 0>}> : (tensor<7xf32>) -> tensor<7x7xf32>
  %p = "accy.div"(%e, %sumb) : (tensor<7x7xf32>, tensor<7x7xf32>) -> tensor<7x7xf32>
  %o = "accy.dot_general"(%p, %v) <{lhs_batch = array<i64>, rhs_batch = array<i64>, lhs_contract = array<i64: 1>, rhs_contract = array<i64: 0>}> : (tensor<7x7xf32>, tensor<7x4xf32>) -> tensor<7x4xf32>
  func.return %o : tensor<7x4xf32>
}
