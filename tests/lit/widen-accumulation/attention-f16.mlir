// RUN: accy-opt %s -p widen-accumulation | filecheck %s

// A float16 attention (two dots and a softmax's row sum) runs in float32
// between casts, whole: q, k and v widened, the result narrowed once. A
// float32 attention is left as it is.
func.func @main(%q: tensor<2x5x3xf16>, %k: tensor<2x7x3xf16>, %v: tensor<2x7x4xf16>, %c: tensor<5x3xf32>) -> (tensor<2x5x4xf16>, tensor<5x3xf32>) {
  %a = "accy.attention"(%q, %k, %v) <{scale = 0.5 : f32, causal = true}> : (tensor<2x5x3xf16>, tensor<2x7x3xf16>, tensor<2x7x4xf16>) -> tensor<2x5x4xf16>
  %f = "accy.attention"(%c, %c, %c) <{scale = 0.5 : f32}> : (tensor<5x3xf32>, tensor<5x3xf32>, tensor<5x3xf32>) -> tensor<5x3xf32>
  func.return %a, %f : tensor<2x5x4xf16>, tensor<5x3xf32>
}

// CHECK-LABEL: func.func @main
// CHECK:       %[[Q:.*]] = accy.cast %q : tensor<2x5x3xf16> -> tensor<2x5x3xf32>
// CHECK-NEXT:  %[[K:.*]] = accy.cast %k : tensor<2x7x3xf16> -> tensor<2x7x3xf32>
// CHECK-NEXT:  %[[V:.*]] = accy.cast %v : tensor<2x7x4xf16> -> tensor<2x7x4xf32>
// CHECK-NEXT:  %[[A:.*]] = accy.attention %[[Q]], %[[K]], %[[V]] {{.*}}causal = true{{.*}} -> tensor<2x5x4xf32>
// CHECK-NEXT:  %[[AH:.*]] = accy.cast %[[A]] : tensor<2x5x4xf32> -> tensor<2x5x4xf16>
// CHECK-NEXT:  %[[F:.*]] = accy.attention %c, %c, %c {{.*}} -> tensor<5x3xf32>
// CHECK-NEXT:  func.return %[[AH]], %[[F]]
