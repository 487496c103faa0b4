// accy.conv (groups, strides, pads) and accy.pool (average with
// count_include_pad, an integer max with dilations and pads) in the generic
// form: they parse, print in the custom form and re-parse to the same
// program; the generic form round-trips too, with the defaults spelled out.
// RUN: accy-opt %s | accy-opt | filecheck %s
// RUN: accy-opt %s --print-op-generic | accy-opt --print-op-generic | filecheck %s --check-prefix=GENERIC

// CHECK-LABEL: func.func @windows
func.func @windows(%x: tensor<2x4x7x7xf32>, %w: tensor<6x2x3x3xf32>, %i: tensor<1x3x9xi32>) -> (tensor<2x6x4x4xf32>, tensor<2x4x3x3xf32>, tensor<1x3x4xi32>) {
  // CHECK-NEXT: %0 = accy.conv %x, %w {strides = array<i64: 2, 2>, dilations = array<i64: 1, 1>, pads_low = array<i64: 1, 1>, pads_high = array<i64: 1, 1>, groups = 2 : i64} : tensor<2x4x7x7xf32>, tensor<6x2x3x3xf32> -> tensor<2x6x4x4xf32>
  // GENERIC: %0 = "accy.conv"(%x, %w) <{strides = array<i64: 2, 2>, dilations = array<i64: 1, 1>, pads_low = array<i64: 1, 1>, pads_high = array<i64: 1, 1>, groups = 2 : i64}> : (tensor<2x4x7x7xf32>, tensor<6x2x3x3xf32>) -> tensor<2x6x4x4xf32>
  %0 = "accy.conv"(%x, %w) <{strides = array<i64: 2, 2>, dilations = array<i64: 1, 1>, pads_low = array<i64: 1, 1>, pads_high = array<i64: 1, 1>, groups = 2 : i64}> : (tensor<2x4x7x7xf32>, tensor<6x2x3x3xf32>) -> tensor<2x6x4x4xf32>
  // CHECK-NEXT: %1 = accy.pool %x {kind = "average", window = array<i64: 3, 3>, strides = array<i64: 2, 2>, dilations = array<i64: 1, 1>, pads_low = array<i64: 0, 0>, pads_high = array<i64: 0, 0>, count_include_pad = true} : tensor<2x4x7x7xf32> -> tensor<2x4x3x3xf32>
  // GENERIC: %1 = "accy.pool"(%x) <{kind = "average", window = array<i64: 3, 3>, strides = array<i64: 2, 2>, dilations = array<i64: 1, 1>, pads_low = array<i64: 0, 0>, pads_high = array<i64: 0, 0>, count_include_pad = true}> : (tensor<2x4x7x7xf32>) -> tensor<2x4x3x3xf32>
  %1 = "accy.pool"(%x) <{kind = "average", window = array<i64: 3, 3>, strides = array<i64: 2, 2>, dilations = array<i64: 1, 1>, pads_low = array<i64: 0, 0>, pads_high = array<i64: 0, 0>, count_include_pad = true}> : (tensor<2x4x7x7xf32>) -> tensor<2x4x3x3xf32>
  // CHECK-NEXT: %2 = accy.pool %i {kind = "max", window = array<i64: 2>, strides = array<i64: 2>, dilations = array<i64: 2>, pads_low = array<i64: 1>, pads_high = array<i64: 0>} : tensor<1x3x9xi32> -> tensor<1x3x4xi32>
  // GENERIC: %2 = "accy.pool"(%i) <{kind = "max", window = array<i64: 2>, strides = array<i64: 2>, dilations = array<i64: 2>, pads_low = array<i64: 1>, pads_high = array<i64: 0>, count_include_pad = false}> : (tensor<1x3x9xi32>) -> tensor<1x3x4xi32>
  %2 = accy.pool %i {kind = "max", window = array<i64: 2>, strides = array<i64: 2>, dilations = array<i64: 2>, pads_low = array<i64: 1>, pads_high = array<i64: 0>} : tensor<1x3x9xi32> -> tensor<1x3x4xi32>
  // CHECK-NEXT: func.return %0, %1, %2
  func.return %0, %1, %2 : tensor<2x6x4x4xf32>, tensor<2x4x3x3xf32>, tensor<1x3x4xi32>
}
