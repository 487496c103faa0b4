// A two-layer perceptron with a softmax head, in the generic form:
//   probs = softmax(gelu(x·W1 + b1)·W2 + b2)
// x: a batch of 8 rows of 32 features; 64 hidden units; 10 classes.
func.func @main(%x: tensor<8x32xf32>, %w1: tensor<32x64xf32>, %b1: tensor<64xf32>,
                %w2: tensor<64x10xf32>, %b2: tensor<10xf32>) -> tensor<8x10xf32> {
  %xw = "accy.dot_general"(%x, %w1) <{lhs_batch = array<i64>, rhs_batch = array<i64>, lhs_contract = array<i64: 1>, rhs_contract = array<i64: 0>}> : (tensor<8x32xf32>, tensor<32x64xf32>) -> tensor<8x64xf32>
  %bb1 = "accy.broadcast"(%b1) <{dims = array<i64: 1>}> : (tensor<64xf32>) -> tensor<8x64xf32>
  %z1 = "accy.add"(%xw, %bb1) : (tensor<8x64xf32>, tensor<8x64xf32>) -> tensor<8x64xf32>
  %h = "accy.gelu"(%z1) : (tensor<8x64xf32>) -> tensor<8x64xf32>
  %hw = "accy.dot_general"(%h, %w2) <{lhs_batch = array<i64>, rhs_batch = array<i64>, lhs_contract = array<i64: 1>, rhs_contract = array<i64: 0>}> : (tensor<8x64xf32>, tensor<64x10xf32>) -> tensor<8x10xf32>
  %bb2 = "accy.broadcast"(%b2) <{dims = array<i64: 1>}> : (tensor<10xf32>) -> tensor<8x10xf32>
  %logits = "accy.add"(%hw, %bb2) : (tensor<8x10xf32>, tensor<8x10xf32>) -> tensor<8x10xf32>
  %probs = "accy.softmax"(%logits) <{axis = 1 : i64}> : (tensor<8x10xf32>) -> tensor<8x10xf32>
  func.return %probs : tensor<8x10xf32>
}
