// Multi-head attention as named ops on [batch 2, heads 3, seq, head dim 8]:
// self-attention (Sq = Sk = 17) causal, and cross-attention (Sq 17, Sk 5, Dv 4)
// not causal.
func.func @main(%q: tensor<2x3x17x8xf32>, %k: tensor<2x3x17x8xf32>, %v: tensor<2x3x17x8xf32>, %ck: tensor<2x3x5x8xf32>, %cv: tensor<2x3x5x4xf32>) -> (tensor<2x3x17x8xf32>, tensor<2x3x17x4xf32>) {
  %0 = "accy.attention"(%q, %k, %v) <{scale = 0.35355339 : f32, causal = true}> : (tensor<2x3x17x8xf32>, tensor<2x3x17x8xf32>, tensor<2x3x17x8xf32>) -> tensor<2x3x17x8xf32>
  %1 = "accy.attention"(%0, %ck, %cv) <{scale = 0.35355339 : f32, causal = false}> : (tensor<2x3x17x8xf32>, tensor<2x3x5x8xf32>, tensor<2x3x5x4xf32>) -> tensor<2x3x17x4xf32>
  func.return %0, %1 : tensor<2x3x17x8xf32>, tensor<2x3x17x4xf32>
}
