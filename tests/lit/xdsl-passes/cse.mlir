// cse (xDSL's pass) on accy tensor programs: accy ops are pure, so an op equal
// to an earlier one (same operands and properties) is erased and its uses
// read the earlier one; ops that differ in a property, or with effects
// (accy.kernel_call), stay. Inside accy.iterate's body, a value computed
// outside is reused too.
// RUN: accy-opt %s -p cse | filecheck %s

// CHECK-LABEL: func.func @main
// CHECK-NEXT:    %[[E:.*]] = accy.exp %x : tensor<4x8xf32>
// CHECK-NEXT:    %[[A:.*]] = accy.add %[[E]], %[[E]] : tensor<4x8xf32>
// CHECK-NEXT:    %[[S:.*]] = accy.reduce %[[A]] {kind = "sum", axes = array<i64: 1>} : tensor<4x8xf32> -> tensor<4xf32>
// CHECK-NEXT:    %[[M:.*]] = accy.reduce %[[A]] {kind = "max", axes = array<i64: 1>} : tensor<4x8xf32> -> tensor<4xf32>
// CHECK-NEXT:    %[[K1:.*]] = accy.kernel_call @kernels::@k(%x)
// CHECK-NEXT:    %[[K2:.*]] = accy.kernel_call @kernels::@k(%x)
// CHECK-NEXT:    %[[D:.*]] = accy.sub %[[S]], %[[M]] : tensor<4xf32>
// CHECK-NEXT:    func.return %[[D]], %[[S]], %[[K1]], %[[K2]]
func.func @main(%x: tensor<4x8xf32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4x8xf32>, tensor<4x8xf32>) {
  %e1 = "accy.exp"(%x) : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %e2 = "accy.exp"(%x) : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %a = "accy.add"(%e1, %e2) : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %s1 = "accy.reduce"(%a) <{kind = "sum", axes = array<i64: 1>}> : (tensor<4x8xf32>) -> tensor<4xf32>
  %m = "accy.reduce"(%a) <{kind = "max", axes = array<i64: 1>}> : (tensor<4x8xf32>) -> tensor<4xf32>
  %s2 = "accy.reduce"(%a) <{kind = "sum", axes = array<i64: 1>}> : (tensor<4x8xf32>) -> tensor<4xf32>
  %k1 = "accy.kernel_call"(%x) <{callee = @kernels::@k}> : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %k2 = "accy.kernel_call"(%x) <{callee = @kernels::@k}> : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %d = "accy.sub"(%s1, %m) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return %d, %s2, %k1, %k2 : tensor<4xf32>, tensor<4xf32>, tensor<4x8xf32>, tensor<4x8xf32>
}

// CHECK-LABEL: func.func @iterate
// CHECK-NEXT:    %[[N:.*]] = accy.neg %x
// CHECK-NEXT:    "accy.iterate"(%x) <{count = 2 : i64}> ({
// CHECK-NEXT:    ^bb0(%a: tensor<4xf32>):
// CHECK-NEXT:      %[[T:.*]] = accy.add %a, %[[N]]
// CHECK-NEXT:      accy.yield %[[T]]
// CHECK:         func.return %{{.*}}, %[[N]]
func.func @iterate(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %n = "accy.neg"(%x) : (tensor<4xf32>) -> tensor<4xf32>
  %r = "accy.iterate"(%x) <{count = 2 : i64}> ({
  ^bb0(%a: tensor<4xf32>):
    %n2 = "accy.neg"(%x) : (tensor<4xf32>) -> tensor<4xf32>
    %t = "accy.add"(%a, %n2) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    "accy.yield"(%t) : (tensor<4xf32>) -> ()
  }) : (tensor<4xf32>) -> tensor<4xf32>
  func.return %r, %n : tensor<4xf32>, tensor<4xf32>
}

// The custom kernel that accy.kernel_call names: the input's buffer, then the output's.
"gpu.module"() <{sym_name = "kernels"}> ({
  "gpu.func"() <{function_type = (memref<32xf32>, memref<32xf32>) -> (), kernel}> ({
  ^bb0(%in: memref<32xf32>, %out: memref<32xf32>):
    "gpu.return"() : () -> ()
  }) {sym_name = "k"} : () -> ()
}) : () -> ()
