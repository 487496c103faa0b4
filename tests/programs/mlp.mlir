// Two MLP layers: dot_general + bias (broadcast along rows) + relu, then a
// second dot_general + bias + gelu. Odd sizes: 8 rows, 17 -> 33 -> 5 features.
func.func @main(%x: tensor<8x17xf32>, %w1: tensor<17x33xf32>, %b1: tensor<33xf32>, %w2: tensor<33x5xf32>, %b2: tensor<5xf32>) -> tensor<8x5xf32> {
  %0 = "accy.dot_general"(%x, %w1) <{lhs_batch = array<i64>, rhs_batch = array<i64>, lhs_contract = array<i64: 1>, rhs_contract = array<i64: 0>}> : (tensor<8x17xf32>, tensor<17x33xf32>) -> tensor<8x33xf32>
  %1 = "accy.broadcast"(%b1) <{dims = array<i64: 1>}> : (tensor<33xf32>) -> tensor<8x33xf32>
  %2 = "accy.add"(%0, %1) : (tensor<8x33xf32>, tensor<8x33xf32>) -> tensor<8x33xf32>
  %3 = "accy.relu"(%2) : (tensor<8x33xf32>) -> tensor<8x33xf32>
  %4 = "accy.dot_general"(%3, %w2) <{lhs_batch = array<i64>, rhs_batch = array<i64>, lhs_contract = array<i64: 1>, rhs_contract = array<i64: 0>}> : (tensor<8x33xf32>, tensor<33x5xf32>) -> tensor<8x5xf32>
  %5 = "accy.broadcast"(%b2) <{dims = array<i64: 1>}> : (tensor<5xf32>) -> tensor<8x5xf32>
  %6 = "accy.add"(%4, %5) : (tensor<8x5xf32>, tensor<8x5xf32>) -> tensor<8x5xf32>
  %7 = "accy.gelu"(%6) : (tensor<8x5xf32>) -> tensor<8x5xf32>
  func.return %7 : tensor<8x5xf32>
}
