// Layer norm written as primitives, the way frontends often spell it:
// variance as mean(x*x) - mean(x)^2 is avoided; this is the centred form with
// sqrt and div rather than rsqrt and mul.
func.func @main(%x: tensor<3x17xf32>, %g: tensor<17xf32>, %b: tensor<17xf32>) -> tensor<3x17xf32> {
  %mu = "accy.reduce"(%x) <{kind = "mean", axes = array<i64: 1>}> : (tensor<3x17xf32>) -> tensor<3xf32>
  %mub = "accy.broadcast"(%mu) <{dims = array<i64: 0>}> : (tensor<3xf32>) -> tensor<3x17xf32>
  %c = "accy.sub"(%x, %mub) : (tensor<3x17xf32>, tensor<3x17xf32>) -> tensor<3x17xf32>
  %sq = "accy.mul"(%c, %c) : (tensor<3x17xf32>, tensor<3x17xf32>) -> tensor<3x17xf32>
  %var = "accy.reduce"(%sq) <{kind = "mean", axes = array<i64: 1>}> : (tensor<3x17xf32>) -> tensor<3xf32>
  %eps = "accy.constant"() <{value = dense<1.0e-05> : tensor<3xf32>}> : () -> tensor<3xf32>
  %ve = "accy.add"(%var, %eps) : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  %sd = "accy.sqrt"(%ve) : (tensor<3xf32>) -> tensor<3xf32>
  %sdb = "accy.broadcast"(%sd) <{dims = array<i64: 0>}> : (tensor<3xf32>) -> tensor<3x17xf32>
  %n = "accy.div"(%c, %sdb) : (tensor<3x17xf32>, tensor<3x17xf32>) -> tensor<3x17xf32>
  %gb = "accy.broadcast"(%g) <{dims = array<i64: 1>}> : (tensor<17xf32>) -> tensor<3x17xf32>
  %bb = "accy.broadcast"(%b) <{dims = array<i64: 1>}> : (tensor<17xf32>) -> tensor<3x17xf32>
  %ng = "accy.mul"(%n, %gb) : (tensor<3x17xf32>, tensor<3x17xf32>) -> tensor<3x17xf32>
  %r = "accy.add"(%ng, %bb) : (tensor<3x17xf32>, tensor<3x17xf32>) -> tensor<3x17xf32>
  func.return %r : tensor<3x17xf32>
}
