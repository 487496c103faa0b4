// RUN: accy-opt %s -p widen-accumulation | filecheck %s

// A float16 conv and average pool run in float32 between casts (the
// kernels kernelize makes of them accumulate in the type they are given:
// f32 here, as the reference accumulates); a max pool is left as it is.
func.func @main(%x: tensor<1x4x9xf16>, %w: tensor<2x4x3xf16>) -> (tensor<1x2x7xf16>, tensor<1x4x7xf16>, tensor<1x4x7xf16>) {
  %c = "accy.conv"(%x, %w) <{strides = array<i64: 1>, dilations = array<i64: 1>, pads_low = array<i64: 0>, pads_high = array<i64: 0>}> : (tensor<1x4x9xf16>, tensor<2x4x3xf16>) -> tensor<1x2x7xf16>
  %a = "accy.pool"(%x) <{kind = "average", window = array<i64: 3>, strides = array<i64: 1>, dilations = array<i64: 1>, pads_low = array<i64: 0>, pads_high = array<i64: 0>}> : (tensor<1x4x9xf16>) -> tensor<1x4x7xf16>
  %m = "accy.pool"(%x) <{kind = "max", window = array<i64: 3>, strides = array<i64: 1>, dilations = array<i64: 1>, pads_low = array<i64: 0>, pads_high = array<i64: 0>}> : (tensor<1x4x9xf16>) -> tensor<1x4x7xf16>
  func.return %c, %a, %m : tensor<1x2x7xf16>, tensor<1x4x7xf16>, tensor<1x4x7xf16>
}

// CHECK-LABEL: func.func @main
// CHECK:       %[[X:.*]] = accy.cast %x : tensor<1x4x9xf16> -> tensor<1x4x9xf32>
// CHECK-NEXT:  %[[W:.*]] = accy.cast %w : tensor<2x4x3xf16> -> tensor<2x4x3xf32>
// CHECK-NEXT:  %[[C:.*]] = accy.conv %[[X]], %[[W]] {{.*}} -> tensor<1x2x7xf32>
// CHECK-NEXT:  %[[CH:.*]] = accy.cast %[[C]] : tensor<1x2x7xf32> -> tensor<1x2x7xf16>
// CHECK-NEXT:  %[[AX:.*]] = accy.cast %x : tensor<1x4x9xf16> -> tensor<1x4x9xf32>
// CHECK-NEXT:  %[[A:.*]] = accy.pool %[[AX]] {{.*}}kind = "average"{{.*}} -> tensor<1x4x7xf32>
// CHECK-NEXT:  %[[AH:.*]] = accy.cast %[[A]] : tensor<1x4x7xf32> -> tensor<1x4x7xf16>
// CHECK-NEXT:  %[[M:.*]] = accy.pool %x {{.*}}kind = "max"{{.*}} -> tensor<1x4x7xf16>
// CHECK-NEXT:  func.return %[[CH]], %[[AH]], %[[M]]
