// Verifier and parse errors are one diagnostic at file:line:col; split, each
// chunk's (on stderr, exit status 1 at the end).
// RUN: not accy-opt %s 2>&1 | filecheck %s
// RUN: not accy-opt %s --split-input-file 2>&1 | filecheck %s --check-prefix=SPLIT

// CHECK:     {{.*}}diagnostics.mlir:[[# @LINE + 5]]:3: error: 'accy.exp' op {{.*}}tensor<4xf32>
// CHECK-NOT: Traceback
// SPLIT:     {{.*}}diagnostics.mlir:[[# @LINE + 3]]:3: error: 'accy.exp' op
// SPLIT:     {{.*}}diagnostics.mlir:[[# @LINE + 9]]:3: error: 'accy.reduce' op
func.func @bad_type(%x: tensor<3xf32>) -> tensor<3xf32> {
  %0 = "accy.exp"(%x) : (tensor<3xf32>) -> tensor<4xf32>
  func.return %x : tensor<3xf32>
}

// -----

func.func @bad_axis(%x: tensor<3xf32>) -> tensor<f32> {
  %0 = "accy.reduce"(%x) <{kind = "sum", axes = array<i64: 3>}> : (tensor<3xf32>) -> tensor<f32>
  func.return %0 : tensor<f32>
}
