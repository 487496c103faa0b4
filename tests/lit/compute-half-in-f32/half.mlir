// RUN: accy-opt %s -p compute-half-in-f32 | filecheck %s
// RUN: accy-opt %s -p set-target{fp16=false},compute-half-in-f32 | filecheck %s --check-prefix=NOFP16

// bf16 ops compute in f32 between casts (a cast to or from bf16 goes
// through f32); a move (transpose) and a select stay in bf16. f16 is left
// as it is where the target computes half, and widened where fp16 = false
// (f64 -> f16 stays a direct cast).
func.func @main(%a: tensor<2x3xbf16>, %b: tensor<2x3xbf16>, %m: tensor<2x3xi1>, %i: tensor<2x3xi32>, %h: tensor<2x3xf16>, %d: tensor<2x3xf64>) -> (tensor<2x3xbf16>, tensor<3x2xbf16>, tensor<2x3xbf16>, tensor<2x3xi32>, tensor<2x3xbf16>, tensor<2x3xf16>, tensor<2x3xf16>) {
  %s = "accy.add"(%a, %b) : (tensor<2x3xbf16>, tensor<2x3xbf16>) -> tensor<2x3xbf16>
  %t = "accy.transpose"(%a) <{permutation = array<i64: 1, 0>}> : (tensor<2x3xbf16>) -> tensor<3x2xbf16>
  %w = "accy.select"(%m, %a, %b) : (tensor<2x3xi1>, tensor<2x3xbf16>, tensor<2x3xbf16>) -> tensor<2x3xbf16>
  %n = "accy.cast"(%a) : (tensor<2x3xbf16>) -> tensor<2x3xi32>
  %c = "accy.cast"(%i) : (tensor<2x3xi32>) -> tensor<2x3xbf16>
  %e = "accy.exp"(%h) : (tensor<2x3xf16>) -> tensor<2x3xf16>
  %x = "accy.cast"(%d) : (tensor<2x3xf64>) -> tensor<2x3xf16>
  func.return %s, %t, %w, %n, %c, %e, %x : tensor<2x3xbf16>, tensor<3x2xbf16>, tensor<2x3xbf16>, tensor<2x3xi32>, tensor<2x3xbf16>, tensor<2x3xf16>, tensor<2x3xf16>
}

// CHECK-LABEL: func.func @main
// CHECK:       %[[A:.*]] = accy.cast %a : tensor<2x3xbf16> -> tensor<2x3xf32>
// CHECK-NEXT:  %[[B:.*]] = accy.cast %b : tensor<2x3xbf16> -> tensor<2x3xf32>
// CHECK-NEXT:  %[[S:.*]] = accy.add %[[A]], %[[B]] : tensor<2x3xf32>
// CHECK-NEXT:  %[[SN:.*]] = accy.cast %[[S]] : tensor<2x3xf32> -> tensor<2x3xbf16>
// CHECK-NEXT:  %[[T:.*]] = accy.transpose %a
// CHECK-NEXT:  %[[W:.*]] = accy.select %m, %a, %b
// CHECK-NEXT:  %[[AW:.*]] = accy.cast %a : tensor<2x3xbf16> -> tensor<2x3xf32>
// CHECK-NEXT:  %[[N:.*]] = accy.cast %[[AW]] : tensor<2x3xf32> -> tensor<2x3xi32>
// CHECK-NEXT:  %[[IW:.*]] = accy.cast %i : tensor<2x3xi32> -> tensor<2x3xf32>
// CHECK-NEXT:  %[[C:.*]] = accy.cast %[[IW]] : tensor<2x3xf32> -> tensor<2x3xbf16>
// CHECK-NEXT:  %[[E:.*]] = accy.exp %h : tensor<2x3xf16>
// CHECK-NEXT:  %[[X:.*]] = accy.cast %d : tensor<2x3xf64> -> tensor<2x3xf16>

// NOFP16-LABEL: func.func @main
// NOFP16:       %[[HW:.*]] = accy.cast %h : tensor<2x3xf16> -> tensor<2x3xf32>
// NOFP16-NEXT:  %[[E:.*]] = accy.exp %[[HW]] : tensor<2x3xf32>
// NOFP16-NEXT:  %[[EN:.*]] = accy.cast %[[E]] : tensor<2x3xf32> -> tensor<2x3xf16>
// NOFP16-NEXT:  %[[X:.*]] = accy.cast %d : tensor<2x3xf64> -> tensor<2x3xf16>
