// accy.pad (every mode, negative pads, a dim of size 0) and accy.reduce's
// argmax/argmin (i32 and i64 results, several axes, rank 0) in the generic
// form: they parse, print in the custom form and re-parse to the same
// program; the generic form round-trips too.
// RUN: accy-opt %s | accy-opt | filecheck %s
// RUN: accy-opt %s --print-op-generic | accy-opt --print-op-generic | filecheck %s --check-prefix=GENERIC

// CHECK-LABEL: func.func @pad
func.func @pad(%x: tensor<3x4xf32>, %v: tensor<f32>, %e: tensor<0x2xi32>, %w: tensor<i32>) -> (tensor<5x7xf32>, tensor<4x3xf32>, tensor<9x4xf32>, tensor<3x6xf32>, tensor<2x2xi32>) {
  // CHECK-NEXT: %0 = accy.pad %x, %v {low = array<i64: 1, 2>, high = array<i64: 1, 1>, mode = "constant"} : tensor<3x4xf32>, tensor<f32> -> tensor<5x7xf32>
  // GENERIC: %0 = "accy.pad"(%x, %v) <{low = array<i64: 1, 2>, high = array<i64: 1, 1>, mode = "constant"}> : (tensor<3x4xf32>, tensor<f32>) -> tensor<5x7xf32>
  %0 = "accy.pad"(%x, %v) <{low = array<i64: 1, 2>, high = array<i64: 1, 1>, mode = "constant"}> : (tensor<3x4xf32>, tensor<f32>) -> tensor<5x7xf32>
  // A negative pad crops: one row cropped at the top, two added at the bottom.
  // CHECK-NEXT: %1 = accy.pad %x, %v {low = array<i64: -1, 0>, high = array<i64: 2, -1>, mode = "edge"} : tensor<3x4xf32>, tensor<f32> -> tensor<4x3xf32>
  %1 = "accy.pad"(%x, %v) <{low = array<i64: -1, 0>, high = array<i64: 2, -1>, mode = "edge"}> : (tensor<3x4xf32>, tensor<f32>) -> tensor<4x3xf32>
  // Reflect pads longer than the dim.
  // CHECK-NEXT: %2 = accy.pad %x, %v {low = array<i64: 5, 0>, high = array<i64: 1, 0>, mode = "reflect"} : tensor<3x4xf32>, tensor<f32> -> tensor<9x4xf32>
  %2 = accy.pad %x, %v {low = array<i64: 5, 0>, high = array<i64: 1, 0>, mode = "reflect"} : tensor<3x4xf32>, tensor<f32> -> tensor<9x4xf32>
  // CHECK-NEXT: %3 = accy.pad %x, %v {low = array<i64: 0, 1>, high = array<i64: 0, 1>, mode = "wrap"} : tensor<3x4xf32>, tensor<f32> -> tensor<3x6xf32>
  %3 = "accy.pad"(%x, %v) <{low = array<i64: 0, 1>, high = array<i64: 0, 1>, mode = "wrap"}> : (tensor<3x4xf32>, tensor<f32>) -> tensor<3x6xf32>
  // A dim of no element padded with the constant.
  // CHECK-NEXT: %4 = accy.pad %e, %w {low = array<i64: 1, 0>, high = array<i64: 1, 0>, mode = "constant"} : tensor<0x2xi32>, tensor<i32> -> tensor<2x2xi32>
  %4 = "accy.pad"(%e, %w) <{low = array<i64: 1, 0>, high = array<i64: 1, 0>, mode = "constant"}> : (tensor<0x2xi32>, tensor<i32>) -> tensor<2x2xi32>
  func.return %0, %1, %2, %3, %4 : tensor<5x7xf32>, tensor<4x3xf32>, tensor<9x4xf32>, tensor<3x6xf32>, tensor<2x2xi32>
}

// CHECK-LABEL: func.func @arg
func.func @arg(%x: tensor<3x4x5xf32>, %i: tensor<7xi32>, %s: tensor<f16>) -> (tensor<3x5xi64>, tensor<4xi32>, tensor<i64>, tensor<i32>) {
  // CHECK-NEXT: %0 = accy.reduce %x {kind = "argmax", axes = array<i64: 1>} : tensor<3x4x5xf32> -> tensor<3x5xi64>
  // GENERIC: %0 = "accy.reduce"(%x) <{kind = "argmax", axes = array<i64: 1>}> : (tensor<3x4x5xf32>) -> tensor<3x5xi64>
  %0 = "accy.reduce"(%x) <{kind = "argmax", axes = array<i64: 1>}> : (tensor<3x4x5xf32>) -> tensor<3x5xi64>
  // CHECK-NEXT: %1 = accy.reduce %x {kind = "argmin", axes = array<i64: 0, -1>} : tensor<3x4x5xf32> -> tensor<4xi32>
  %1 = accy.reduce %x {kind = "argmin", axes = array<i64: 0, -1>} : tensor<3x4x5xf32> -> tensor<4xi32>
  // CHECK-NEXT: %2 = accy.reduce %i {kind = "argmax", axes = array<i64: 0>} : tensor<7xi32> -> tensor<i64>
  %2 = "accy.reduce"(%i) <{kind = "argmax", axes = array<i64: 0>}> : (tensor<7xi32>) -> tensor<i64>
  // Rank 0: the one element is at position 0.
  // CHECK-NEXT: %3 = accy.reduce %s {kind = "argmin", axes = array<i64>} : tensor<f16> -> tensor<i32>
  %3 = "accy.reduce"(%s) <{kind = "argmin", axes = array<i64>}> : (tensor<f16>) -> tensor<i32>
  func.return %0, %1, %2, %3 : tensor<3x5xi64>, tensor<4xi32>, tensor<i64>, tensor<i32>
}
