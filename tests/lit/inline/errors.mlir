// inline refuses what it cannot inline, naming the call: the user's error, at
// the call (exit status 1, no reproducer), not a pass that failed.
// RUN: rm -rf %t && mkdir %t
// RUN: not accy-opt %s -p inline --reproducer-dir %t 2>&1 | filecheck %s
// RUN: not ls %t/accy-repro-1.mlir
// RUN: accy-opt %s -p inline --verify-diagnostics

// CHECK: errors.mlir:[[# @LINE + 8]]:3: error: 'func.call' op recursive call (@even -> @odd -> @even): accy cannot run recursion (use accy.iterate for loops)
// CHECK-NOT: failed
func.func @even(%x: tensor<4xf32>) -> tensor<4xf32> {
  %a = func.call @odd(%x) : (tensor<4xf32>) -> tensor<4xf32>
  func.return %a : tensor<4xf32>
}
func.func @odd(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{recursive call (@even -> @odd -> @even)}}
  %a = func.call @even(%x) : (tensor<4xf32>) -> tensor<4xf32>
  func.return %a : tensor<4xf32>
}
