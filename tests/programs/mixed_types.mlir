// int32 and i1 arithmetic: cmp, select, cast, integer div/max, logical ops.
func.func @main(%x: tensor<17xf32>, %i: tensor<17xi32>, %j: tensor<17xi32>) -> (tensor<17xf32>, tensor<17xi32>, tensor<17xi1>) {
  %z = "accy.constant"() <{value = dense<0.0> : tensor<17xf32>}> : () -> tensor<17xf32>
  %pos = "accy.cmp"(%x, %z) <{predicate = "gt"}> : (tensor<17xf32>, tensor<17xf32>) -> tensor<17xi1>
  %big = "accy.cmp"(%i, %j) <{predicate = "ge"}> : (tensor<17xi32>, tensor<17xi32>) -> tensor<17xi1>
  %both = "accy.and"(%pos, %big) : (tensor<17xi1>, tensor<17xi1>) -> tensor<17xi1>
  %either = "accy.or"(%pos, %big) : (tensor<17xi1>, tensor<17xi1>) -> tensor<17xi1>
  %diff = "accy.xor"(%both, %either) : (tensor<17xi1>, tensor<17xi1>) -> tensor<17xi1>
  %nd = "accy.not"(%diff) : (tensor<17xi1>) -> tensor<17xi1>
  %q = "accy.div"(%i, %j) : (tensor<17xi32>, tensor<17xi32>) -> tensor<17xi32>
  %m = "accy.max"(%q, %j) : (tensor<17xi32>, tensor<17xi32>) -> tensor<17xi32>
  %xi = "accy.cast"(%x) : (tensor<17xf32>) -> tensor<17xi32>
  %s = "accy.select"(%both, %m, %xi) : (tensor<17xi1>, tensor<17xi32>, tensor<17xi32>) -> tensor<17xi32>
  %sf = "accy.cast"(%s) : (tensor<17xi32>) -> tensor<17xf32>
  %bf = "accy.cast"(%nd) : (tensor<17xi1>) -> tensor<17xf32>
  %r = "accy.add"(%sf, %bf) : (tensor<17xf32>, tensor<17xf32>) -> tensor<17xf32>
  func.return %r, %s, %nd : tensor<17xf32>, tensor<17xi32>, tensor<17xi1>
}
