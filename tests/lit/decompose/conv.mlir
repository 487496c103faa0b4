// accy.conv becomes im2col as views: one accy.pad (mode constant, zeros) of
// the input, a strided slice of it per tap of the kernel, the taps stacked
// [N, T, C, y...] and one dot_general with the weights [M, k..., C/G]
// broadcast over N. With groups, both sides split C (and M) into
// [G, C/G]: batch dims N and G, and a reshape of [N, G, M/G, y...] to
// [N, M, y...]; with one group the dot's result is the conv's.
// RUN: accy-opt %s -p decompose | filecheck %s
// RUN: accy-opt %s -p decompose | accy-opt | filecheck %s

// Tap t of a 1-d kernel with dilation 3 and stride 2 starts at 3t of the
// padded input and takes every second element.
// CHECK-LABEL: func.func @conv_groups
// CHECK-SAME:    (%x: tensor<2x4x7xf32>, %w: tensor<6x2x2xf32>)
// CHECK-NEXT:    %[[Z:.*]] = accy.constant dense<0.000000e+00> : tensor<f32>
// CHECK-NEXT:    %[[P:.*]] = accy.pad %x, %[[Z]] {low = array<i64: 0, 0, 1>, high = array<i64: 0, 0, 0>, mode = "constant"} : tensor<2x4x7xf32>, tensor<f32> -> tensor<2x4x8xf32>
// CHECK-NEXT:    %[[T0:.*]] = accy.slice %[[P]] {start = array<i64: 0, 0, 0>, limit = array<i64: 2, 4, 5>, stride = array<i64: 1, 1, 2>} : tensor<2x4x8xf32> -> tensor<2x4x3xf32>
// CHECK-NEXT:    %[[T1:.*]] = accy.slice %[[P]] {start = array<i64: 0, 0, 3>, limit = array<i64: 2, 4, 8>, stride = array<i64: 1, 1, 2>} : tensor<2x4x8xf32> -> tensor<2x4x3xf32>
// CHECK-NEXT:    %[[R0:.*]] = accy.reshape %[[T0]] : tensor<2x4x3xf32> -> tensor<2x1x4x3xf32>
// CHECK-NEXT:    %[[R1:.*]] = accy.reshape %[[T1]] : tensor<2x4x3xf32> -> tensor<2x1x4x3xf32>
// CHECK-NEXT:    %[[S:.*]] = accy.concat %[[R0]], %[[R1]] {axis = 1 : i64} : (tensor<2x1x4x3xf32>, tensor<2x1x4x3xf32>) -> tensor<2x2x4x3xf32>
// CHECK-NEXT:    %[[WT:.*]] = accy.transpose %w {permutation = array<i64: 0, 2, 1>} : tensor<6x2x2xf32> -> tensor<6x2x2xf32>
// CHECK-NEXT:    %[[COLS:.*]] = accy.reshape %[[S]] : tensor<2x2x4x3xf32> -> tensor<2x2x2x2x3xf32>
// CHECK-NEXT:    %[[WG:.*]] = accy.reshape %[[WT]] : tensor<6x2x2xf32> -> tensor<2x3x2x2xf32>
// CHECK-NEXT:    %[[WB:.*]] = accy.broadcast %[[WG]] {dims = array<i64: 1, 2, 3, 4>} : tensor<2x3x2x2xf32> -> tensor<2x2x3x2x2xf32>
// CHECK-NEXT:    %[[D:.*]] = accy.dot_general %[[WB]], %[[COLS]] {lhs_batch = array<i64: 0, 1>, rhs_batch = array<i64: 0, 2>, lhs_contract = array<i64: 3, 4>, rhs_contract = array<i64: 1, 3>} : tensor<2x2x3x2x2xf32>, tensor<2x2x2x2x3xf32> -> tensor<2x2x3x3xf32>
// CHECK-NEXT:    %[[R:.*]] = accy.reshape %[[D]] : tensor<2x2x3x3xf32> -> tensor<2x6x3xf32>
// CHECK-NEXT:    func.return %[[R]] : tensor<2x6x3xf32>
func.func @conv_groups(%x: tensor<2x4x7xf32>, %w: tensor<6x2x2xf32>) -> tensor<2x6x3xf32> {
  %0 = "accy.conv"(%x, %w) <{strides = array<i64: 2>, dilations = array<i64: 3>, pads_low = array<i64: 1>, pads_high = array<i64: 0>, groups = 2 : i64}> : (tensor<2x4x7xf32>, tensor<6x2x2xf32>) -> tensor<2x6x3xf32>
  func.return %0 : tensor<2x6x3xf32>
}

// No pads: no accy.pad; one tap: no concat; one group: the dot's result
// is [N, M, y...] itself.
// CHECK-LABEL: func.func @conv_1x1
// CHECK-NOT:     accy.pad
// CHECK-NEXT:    %[[T:.*]] = accy.slice %x {start = array<i64: 0, 0, 0, 0>, limit = array<i64: 1, 3, 5, 4>, stride = array<i64: 1, 1, 1, 1>} : tensor<1x3x5x4xf32> -> tensor<1x3x5x4xf32>
// CHECK-NEXT:    %[[C:.*]] = accy.reshape %[[T]] : tensor<1x3x5x4xf32> -> tensor<1x1x3x5x4xf32>
// CHECK-NEXT:    %[[WT:.*]] = accy.transpose %w {permutation = array<i64: 0, 2, 3, 1>} : tensor<2x3x1x1xf32> -> tensor<2x1x1x3xf32>
// CHECK-NEXT:    %[[W:.*]] = accy.reshape %[[WT]] : tensor<2x1x1x3xf32> -> tensor<2x1x3xf32>
// CHECK-NEXT:    %[[WB:.*]] = accy.broadcast %[[W]] {dims = array<i64: 1, 2, 3>} : tensor<2x1x3xf32> -> tensor<1x2x1x3xf32>
// CHECK-NEXT:    %[[D:.*]] = accy.dot_general %[[WB]], %[[C]] {lhs_batch = array<i64: 0>, rhs_batch = array<i64: 0>, lhs_contract = array<i64: 2, 3>, rhs_contract = array<i64: 1, 2>} : tensor<1x2x1x3xf32>, tensor<1x1x3x5x4xf32> -> tensor<1x2x5x4xf32>
// CHECK-NEXT:    func.return %[[D]] : tensor<1x2x5x4xf32>
// CHECK-NOT:     accy.conv
func.func @conv_1x1(%x: tensor<1x3x5x4xf32>, %w: tensor<2x3x1x1xf32>) -> tensor<1x2x5x4xf32> {
  %0 = "accy.conv"(%x, %w) <{strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, pads_low = array<i64: 0, 0>, pads_high = array<i64: 0, 0>}> : (tensor<1x3x5x4xf32>, tensor<2x3x1x1xf32>) -> tensor<1x2x5x4xf32>
  func.return %0 : tensor<1x2x5x4xf32>
}

// A 3x3 kernel on 2-d: nine taps, row-major over the kernel.
// CHECK-LABEL: func.func @conv_3x3
// CHECK:         accy.pad %x, %{{.*}} {low = array<i64: 0, 0, 1, 1>, high = array<i64: 0, 0, 1, 1>, mode = "constant"} : tensor<1x2x4x4xf32>, tensor<f32> -> tensor<1x2x6x6xf32>
// CHECK-COUNT-9: accy.slice
// CHECK-COUNT-9: accy.reshape {{.*}} : tensor<1x2x4x4xf32> -> tensor<1x1x2x4x4xf32>
// CHECK-NEXT:    accy.concat {{.*}} {axis = 1 : i64} : {{.*}} -> tensor<1x9x2x4x4xf32>
// CHECK:         accy.dot_general {{.*}} : tensor<1x3x9x2xf32>, tensor<1x9x2x4x4xf32> -> tensor<1x3x4x4xf32>
func.func @conv_3x3(%x: tensor<1x2x4x4xf32>, %w: tensor<3x2x3x3xf32>) -> tensor<1x3x4x4xf32> {
  %0 = "accy.conv"(%x, %w) <{strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, pads_low = array<i64: 1, 1>, pads_high = array<i64: 1, 1>}> : (tensor<1x2x4x4xf32>, tensor<3x2x3x3xf32>) -> tensor<1x3x4x4xf32>
  func.return %0 : tensor<1x3x4x4xf32>
}
