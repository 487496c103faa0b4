// Shape-op chains: transpose, reshape, slice, broadcast and concat feeding
// elementwise ops, plus a transpose pair and a reshape pair that cancel.
func.func @main(%x: tensor<2x3x17xf32>, %r: tensor<17xf32>) -> (tensor<17x6xf32>, tensor<2x3x17xf32>, tensor<4x3x9xf32>) {
  %t = "accy.transpose"(%x) <{permutation = array<i64: 2, 0, 1>}> : (tensor<2x3x17xf32>) -> tensor<17x2x3xf32>
  %flat = "accy.reshape"(%t) : (tensor<17x2x3xf32>) -> tensor<17x6xf32>
  %rb = "accy.broadcast"(%r) <{dims = array<i64: 0>}> : (tensor<17xf32>) -> tensor<17x6xf32>
  %0 = "accy.mul"(%flat, %rb) : (tensor<17x6xf32>, tensor<17x6xf32>) -> tensor<17x6xf32>
  %t2 = "accy.transpose"(%t) <{permutation = array<i64: 1, 2, 0>}> : (tensor<17x2x3xf32>) -> tensor<2x3x17xf32>
  %u = "accy.reshape"(%t2) : (tensor<2x3x17xf32>) -> tensor<6x17xf32>
  %u2 = "accy.reshape"(%u) : (tensor<6x17xf32>) -> tensor<2x3x17xf32>
  %1 = "accy.add"(%u2, %x) : (tensor<2x3x17xf32>, tensor<2x3x17xf32>) -> tensor<2x3x17xf32>
  %s = "accy.slice"(%x) <{start = array<i64: 0, 0, 1>, limit = array<i64: 2, 3, 17>, stride = array<i64: 1, 1, 2>}> : (tensor<2x3x17xf32>) -> tensor<2x3x8xf32>
  %one = "accy.broadcast"(%r) <{dims = array<i64: 2>}> : (tensor<17xf32>) -> tensor<2x3x17xf32>
  %col = "accy.slice"(%one) <{start = array<i64: 0, 0, 0>, limit = array<i64: 2, 3, 1>, stride = array<i64: 1, 1, 1>}> : (tensor<2x3x17xf32>) -> tensor<2x3x1xf32>
  %c = "accy.concat"(%s, %col) <{axis = 2 : i64}> : (tensor<2x3x8xf32>, tensor<2x3x1xf32>) -> tensor<2x3x9xf32>
  %c2 = "accy.concat"(%c, %c) <{axis = 0 : i64}> : (tensor<2x3x9xf32>, tensor<2x3x9xf32>) -> tensor<4x3x9xf32>
  %2 = "accy.relu"(%c2) : (tensor<4x3x9xf32>) -> tensor<4x3x9xf32>
  func.return %0, %1, %2 : tensor<17x6xf32>, tensor<2x3x17xf32>, tensor<4x3x9xf32>
}
