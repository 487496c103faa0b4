// RUN: accy-opt %s -p 'print-analysis{analysis=shape-layout}' | filecheck %s

// Shape ops become strided views of their operand's storage where strides
// can express them; a reshape of a non-contiguous value cannot, so it owns
// storage (a copy).

// CHECK-LABEL: shape-layout @views: 9 values
// CHECK-NEXT:  %x: 6x8xf32, 192 bytes, contiguous
// CHECK-NEXT:  %b: 8xf32, 32 bytes, contiguous
// CHECK-NEXT:  %t: 8x6xf32, 192 bytes, view of %x offset 0 strides [1, 8]
// CHECK-NEXT:  %s: 3x3xf32, 36 bytes, view of %x offset 10 strides [2, 16]
// CHECK-NEXT:  %r: 48xf32, 192 bytes, view of %x offset 0 strides [1]
// CHECK-NEXT:  %r2: 2x3x8xf32, 192 bytes, view of %x offset 0 strides [24, 8, 1]
// CHECK-NEXT:  %bb: 6x8xf32, 192 bytes, view of %b offset 0 strides [0, 1]
// CHECK-NEXT:  %tr: 48xf32, 192 bytes, contiguous
// CHECK-NEXT:  %sum: 6x8xf32, 192 bytes, contiguous
func.func @views(%x: tensor<6x8xf32>, %b: tensor<8xf32>) -> (tensor<3x3xf32>, tensor<48xf32>, tensor<2x3x8xf32>, tensor<48xf32>, tensor<6x8xf32>) {
  %t = "accy.transpose"(%x) <{permutation = array<i64: 1, 0>}> : (tensor<6x8xf32>) -> tensor<8x6xf32>
  %s = "accy.slice"(%t) <{start = array<i64: 2, 1>, limit = array<i64: 8, 6>, stride = array<i64: 2, 2>}> : (tensor<8x6xf32>) -> tensor<3x3xf32>
  %r = "accy.reshape"(%x) : (tensor<6x8xf32>) -> tensor<48xf32>
  %r2 = "accy.reshape"(%r) : (tensor<48xf32>) -> tensor<2x3x8xf32>
  %bb = "accy.broadcast"(%b) <{dims = array<i64: 1>}> : (tensor<8xf32>) -> tensor<6x8xf32>
  %tr = "accy.reshape"(%t) : (tensor<8x6xf32>) -> tensor<48xf32>
  %sum = "accy.add"(%x, %bb) : (tensor<6x8xf32>, tensor<6x8xf32>) -> tensor<6x8xf32>
  func.return %s, %r, %r2, %tr, %sum : tensor<3x3xf32>, tensor<48xf32>, tensor<2x3x8xf32>, tensor<48xf32>, tensor<6x8xf32>
}

// A reshape that splits a strided dim keeps the view: the slice of every
// other row reshaped to [3, 2, 4] only splits the row dim.
// CHECK-LABEL: shape-layout @split: 3 values
// CHECK:       %s: 3x8xi32, 96 bytes, view of %x offset 0 strides [16, 1]
// CHECK-NEXT:  %r: 3x2x4xi32, 96 bytes, view of %x offset 0 strides [16, 4, 1]
func.func @split(%x: tensor<6x8xi32>) -> tensor<3x2x4xi32> {
  %s = "accy.slice"(%x) <{start = array<i64: 0, 0>, limit = array<i64: 6, 8>, stride = array<i64: 2, 1>}> : (tensor<6x8xi32>) -> tensor<3x8xi32>
  %r = "accy.reshape"(%s) : (tensor<3x8xi32>) -> tensor<3x2x4xi32>
  func.return %r : tensor<3x2x4xi32>
}

// Size-1 dims broadcast with stride 0; i1 takes a byte.
// CHECK-LABEL: shape-layout @ones: 2 values
// CHECK-NEXT:  %m: 1x5xi1, 5 bytes, contiguous
// CHECK-NEXT:  %mb: 4x5xi1, 20 bytes, view of %m offset 0 strides [0, 1]
func.func @ones(%m: tensor<1x5xi1>) -> tensor<4x5xi1> {
  %mb = "accy.broadcast"(%m) <{dims = array<i64: 0, 1>}> : (tensor<1x5xi1>) -> tensor<4x5xi1>
  func.return %mb : tensor<4x5xi1>
}
