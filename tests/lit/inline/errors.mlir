// inline refuses what it cannot inline, naming the call.
// RUN: not accy-opt %s -p inline --reproducer-dir %t 2>&1 | filecheck %s

// CHECK: error: pass 'inline' failed: CallError: recursive call (@even -> @odd -> @even): accy cannot run recursion (use accy.iterate for loops)
func.func @even(%x: tensor<4xf32>) -> tensor<4xf32> {
  %a = func.call @odd(%x) : (tensor<4xf32>) -> tensor<4xf32>
  func.return %a : tensor<4xf32>
}
func.func @odd(%x: tensor<4xf32>) -> tensor<4xf32> {
  %a = func.call @even(%x) : (tensor<4xf32>) -> tensor<4xf32>
  func.return %a : tensor<4xf32>
}
