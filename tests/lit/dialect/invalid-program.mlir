// What the front door checks beyond each op's verifier: every operand is
// defined before it is used (xDSL's parser resolves forward references), and
// a tensor program takes and returns tensors. One chunk each: each error is
// expected on its op's line (MLIR's annotations, --verify-diagnostics), and,
// without the check, printed at its line and column, every chunk in turn.
// RUN: accy-opt %s --split-input-file --verify-diagnostics | filecheck %s --check-prefix=VALID
// RUN: not accy-opt %s --split-input-file 2>&1 | filecheck %s

func.func @use_before_def(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'accy.exp' op operand #0 (%b) is used before it is defined}}
  %a = "accy.exp"(%b) : (tensor<4xf32>) -> tensor<4xf32>
  %b = "accy.exp"(%x) : (tensor<4xf32>) -> tensor<4xf32>
  func.return %a : tensor<4xf32>
}
// CHECK: invalid-program.mlir:11:3: error: 'accy.exp' op operand #0 (%b) is used before it is defined (at line 12, column 3)

// -----

func.func @self_use(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'accy.add' op operand #0 (%a) is the op's own result}}
  %a = "accy.add"(%a, %x) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return %a : tensor<4xf32>
}
// CHECK: invalid-program.mlir:21:3: error: 'accy.add' op operand #0 (%a) is the op's own result

// -----

func.func @cycle(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'accy.add' op operand #0 (%b) is used before it is defined}}
  %a = "accy.add"(%b, %x) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %b = "accy.neg"(%a) : (tensor<4xf32>) -> tensor<4xf32>
  func.return %b : tensor<4xf32>
}
// CHECK: invalid-program.mlir:30:3: error: 'accy.add' op operand #0 (%b) is used before it is defined (at line 31, column 3)

// -----

func.func @own_region(%x: tensor<4xf32>) -> tensor<4xf32> {
  %r = "accy.iterate"(%x) <{count = 2 : i64}> ({
  ^bb0(%v: tensor<4xf32>):
    // expected-error @+1 {{'accy.mul' op operand #1 (%r) is a result of the op that contains this use}}
    %d = "accy.mul"(%v, %r) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    "accy.yield"(%d) : (tensor<4xf32>) -> ()
  }) : (tensor<4xf32>) -> tensor<4xf32>
  func.return %r : tensor<4xf32>
}
// CHECK: invalid-program.mlir:42:5: error: 'accy.mul' op operand #1 (%r) is a result of the op that contains this use

// -----

// expected-error @+1 {{'func.func' op argument #0 (%x) of @scalar_argument has type f32; accy functions take tensors (write tensor<f32> for a scalar)}}
func.func @scalar_argument(%x: f32, %y: tensor<4xf32>) -> tensor<4xf32> {
  %a = "accy.exp"(%y) : (tensor<4xf32>) -> tensor<4xf32>
  func.return %a : tensor<4xf32>
}
// CHECK: invalid-program.mlir:52:1: error: 'func.func' op argument #0 (%x) of @scalar_argument has type f32; accy functions take tensors (write tensor<f32> for a scalar)

// -----

// expected-error @+1 {{'func.func' op result #0 of @memref_result has type memref<4xf32>; accy functions return tensors}}
func.func @memref_result(%y: tensor<4xf32>) -> memref<4xf32> {
  %a = "accy.exp"(%y) : (tensor<4xf32>) -> tensor<4xf32>
  %m = "bufferization.to_buffer"(%a) : (tensor<4xf32>) -> memref<4xf32>
  func.return %m : memref<4xf32>
}
// CHECK: invalid-program.mlir:61:1: error: 'func.func' op result #0 of @memref_result has type memref<4xf32>; accy functions return tensors

// -----

// Outer values are visible inside accy.iterate's body: this one is valid.
func.func @outer_value(%x: tensor<4xf32>) -> tensor<4xf32> {
  %e = "accy.exp"(%x) : (tensor<4xf32>) -> tensor<4xf32>
  %r = "accy.iterate"(%x) <{count = 2 : i64}> ({
  ^bb0(%v: tensor<4xf32>):
    %d = "accy.mul"(%v, %e) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    "accy.yield"(%d) : (tensor<4xf32>) -> ()
  }) : (tensor<4xf32>) -> tensor<4xf32>
  func.return %r : tensor<4xf32>
}
// VALID: func.func @outer_value
// VALID: accy.mul %v, %e
