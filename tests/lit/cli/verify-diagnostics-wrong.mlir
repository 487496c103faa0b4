// --verify-diagnostics with wrong annotations: each mismatch is one error at
// its line (the diagnostic's, or the annotation's), every chunk is checked,
// and the exit status is 1.
// RUN: not accy-opt %s --split-input-file --verify-diagnostics -p test-diagnostics 2>&1 | filecheck %s

// An error expected where there is none.
func.func @nothing_wrong(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'accy.exp' op is wrong}}
  %0 = "accy.exp"(%x) : (tensor<4xf32>) -> tensor<4xf32>
  func.return %0 : tensor<4xf32>
}
// CHECK: verify-diagnostics-wrong.mlir:[[# @LINE - 4]]:6: error: expected error "'accy.exp' op is wrong" was not produced

// -----

// An error no annotation expects.
func.func @unexpected(%x: tensor<3xf32>) -> tensor<3xf32> {
  %0 = "accy.exp"(%x) : (tensor<3xf32>) -> tensor<4xf32>
  func.return %x : tensor<3xf32>
}
// CHECK: verify-diagnostics-wrong.mlir:[[# @LINE - 3]]:3: error: unexpected error: 'accy.exp' op result 'result' has type tensor<4xf32>

// -----

// The right line, the wrong text: the error is unexpected, the annotation unmatched.
func.func @wrong_text(%x: tensor<3xf32>) -> tensor<f32> {
  %0 = "accy.reduce"(%x) <{kind = "sum", axes = array<i64: 3>}> : (tensor<3xf32>) -> tensor<f32> // expected-error {{axes 2 is out of range}}
  func.return %0 : tensor<f32>
}
// CHECK: verify-diagnostics-wrong.mlir:[[# @LINE - 3]]:3: error: unexpected error: 'accy.reduce' op axes 3 is out of range for rank 1
// CHECK: verify-diagnostics-wrong.mlir:[[# @LINE - 4]]:101: error: expected error "axes 2 is out of range" was not produced

// -----

// The right text, the wrong line.
func.func @wrong_line(%x: tensor<3xf32>) -> tensor<3xf32> {
  // expected-error @+2 {{'accy.exp' op result 'result'}}
  %0 = "accy.exp"(%x) : (tensor<3xf32>) -> tensor<4xf32>
  func.return %x : tensor<3xf32>
}
// CHECK: verify-diagnostics-wrong.mlir:[[# @LINE - 3]]:3: error: unexpected error: 'accy.exp' op result 'result'
// CHECK: verify-diagnostics-wrong.mlir:[[# @LINE - 5]]:6: error: expected error "'accy.exp' op result 'result'" was not produced

// -----

// The right line and text, the wrong kind: a near miss.
func.func @wrong_kind(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{hot}}
  %0 = "accy.exp"(%x) {test.warning = "hot"} : (tensor<4xf32>) -> tensor<4xf32>
  func.return %0 : tensor<4xf32>
}
// CHECK: verify-diagnostics-wrong.mlir:[[# @LINE - 4]]:6: error: 'warning' diagnostic emitted when expecting a 'error'
// CHECK: verify-diagnostics-wrong.mlir:[[# @LINE - 5]]:6: error: expected error "hot" was not produced

// -----

// A note the annotations do not expect, and one that does not parse.
func.func @unexpected_note(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{cannot be kept}}
  %0 = "accy.exp"(%x) {test.error = "cannot be kept"} : (tensor<4xf32>) -> tensor<4xf32>
  %1 = "accy.neg"(%0) {test.note = "because of this use"} : (tensor<4xf32>) -> tensor<4xf32>
  // expected-remark @below
  func.return %1 : tensor<4xf32>
}
// CHECK: verify-diagnostics-wrong.mlir:[[# @LINE - 3]]:6: error: cannot read this expected-remark annotation
// CHECK: verify-diagnostics-wrong.mlir:[[# @LINE - 5]]:3: error: unexpected note: 'accy.neg' op because of this use

// -----

// A chunk whose annotations match says nothing.
func.func @right(%x: tensor<3xf32>) -> tensor<3xf32> {
  %0 = "accy.exp"(%x) : (tensor<3xf32>) -> tensor<4xf32> // expected-error {{has type tensor<4xf32>}}
  func.return %x : tensor<3xf32>
}
// CHECK-NOT: error:
