// Unused pure ops are erased (also inside accy.iterate), ops with effects are
// kept, a zero-trip accy.iterate is its inits, and func/arith canonicalize too.
// RUN: accy-opt %s -p canonicalize | filecheck %s
// RUN: accy-opt %s -p canonicalize,canonicalize | filecheck %s

// CHECK-LABEL: func.func @dead
// CHECK-NEXT:    %[[E:.*]] = accy.exp %x
// CHECK-NEXT:    %{{.*}} = accy.kernel_call @kernels::@k(%x)
// CHECK-NEXT:    func.return %[[E]]
func.func @dead(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = "accy.exp"(%x) : (tensor<4xf32>) -> tensor<4xf32>
  %1 = "accy.log"(%0) : (tensor<4xf32>) -> tensor<4xf32>
  %2 = "accy.reduce"(%1) <{kind = "sum", axes = array<i64: 0>}> : (tensor<4xf32>) -> tensor<f32>
  %3 = "accy.softmax"(%x) <{axis = 0 : i64}> : (tensor<4xf32>) -> tensor<4xf32>
  %4 = "accy.kernel_call"(%x) <{callee = @kernels::@k}> : (tensor<4xf32>) -> tensor<4xf32>
  func.return %0 : tensor<4xf32>
}

// CHECK-LABEL: func.func @iterate
// CHECK:         "accy.iterate"(%x) <{count = 3 : i64}> ({
// CHECK-NEXT:    ^bb0(%a: tensor<4xf32>):
// CHECK-NEXT:      %[[E:.*]] = accy.exp %a
// CHECK-NEXT:      accy.yield %[[E]]
// CHECK-NEXT:    })
// CHECK-NEXT:    func.return
func.func @iterate(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = "accy.iterate"(%x) <{count = 3 : i64}> ({
  ^bb0(%a: tensor<4xf32>):
    %1 = "accy.exp"(%a) : (tensor<4xf32>) -> tensor<4xf32>
    %2 = "accy.tanh"(%a) : (tensor<4xf32>) -> tensor<4xf32>
    "accy.yield"(%1) : (tensor<4xf32>) -> ()
  }) : (tensor<4xf32>) -> tensor<4xf32>
  %3 = "accy.iterate"(%x) <{count = 3 : i64}> ({
  ^bb0(%a: tensor<4xf32>):
    "accy.yield"(%a) : (tensor<4xf32>) -> ()
  }) : (tensor<4xf32>) -> tensor<4xf32>
  func.return %0 : tensor<4xf32>
}

// CHECK-LABEL: func.func @zero_trip
// CHECK-NEXT:    func.return %x, %n
func.func @zero_trip(%x: tensor<4xf32>, %n: tensor<2xi32>) -> (tensor<4xf32>, tensor<2xi32>) {
  %0, %1 = "accy.iterate"(%x, %n) <{count = 0 : i64}> ({
  ^bb0(%a: tensor<4xf32>, %b: tensor<2xi32>):
    %2 = "accy.exp"(%a) : (tensor<4xf32>) -> tensor<4xf32>
    "accy.yield"(%2, %b) : (tensor<4xf32>, tensor<2xi32>) -> ()
  }) : (tensor<4xf32>, tensor<2xi32>) -> (tensor<4xf32>, tensor<2xi32>)
  func.return %0, %1 : tensor<4xf32>, tensor<2xi32>
}

// CHECK-LABEL: func.func @arith
// CHECK-NEXT:    %{{.*}} = arith.constant 5 : i32
// CHECK-NEXT:    func.return
func.func @arith() -> i32 {
  %a = arith.constant 2 : i32
  %b = arith.constant 3 : i32
  %c = arith.addi %a, %b : i32
  func.return %c : i32
}

// The custom kernel that accy.kernel_call names: the input's buffer, then the output's.
"gpu.module"() <{sym_name = "kernels"}> ({
  "gpu.func"() <{function_type = (memref<4xf32>, memref<4xf32>) -> (), kernel}> ({
  ^bb0(%in: memref<4xf32>, %out: memref<4xf32>):
    "gpu.return"() : () -> ()
  }) {sym_name = "k"} : () -> ()
}) : () -> ()
