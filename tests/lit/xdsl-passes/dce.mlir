// dce (xDSL's pass) on accy tensor programs: pure ops whose results are
// unused are erased, transitively (an op used only by dead ops is dead) and
// inside accy.iterate's body; an unused accy.iterate of pure ops goes whole.
// accy.kernel_call (it has effects) stays although unused, and so does an
// accy.iterate whose body holds one. Equal ops are not merged (that is cse).
// RUN: accy-opt %s -p dce | filecheck %s

// CHECK-LABEL: func.func @main
// CHECK-NEXT:    %[[E1:.*]] = accy.exp %x : tensor<4xf32>
// CHECK-NEXT:    %[[E2:.*]] = accy.exp %x : tensor<4xf32>
// CHECK-NEXT:    %{{.*}} = accy.kernel_call @kernels::@k(%x)
// CHECK-NEXT:    %[[A:.*]] = accy.add %[[E1]], %[[E2]]
// CHECK-NEXT:    func.return %[[A]]
func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %e1 = "accy.exp"(%x) : (tensor<4xf32>) -> tensor<4xf32>
  %e2 = "accy.exp"(%x) : (tensor<4xf32>) -> tensor<4xf32>
  %t = "accy.tanh"(%x) : (tensor<4xf32>) -> tensor<4xf32>
  %s = "accy.reduce"(%t) <{kind = "sum", axes = array<i64: 0>}> : (tensor<4xf32>) -> tensor<f32>
  %k = "accy.kernel_call"(%x) <{callee = @kernels::@k}> : (tensor<4xf32>) -> tensor<4xf32>
  %a = "accy.add"(%e1, %e2) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return %a : tensor<4xf32>
}

// CHECK-LABEL: func.func @iterate
// CHECK-NEXT:    %[[R:.*]] = "accy.iterate"(%x) <{count = 2 : i64}> ({
// CHECK-NEXT:    ^bb0(%a: tensor<4xf32>):
// CHECK-NEXT:      %[[N:.*]] = accy.neg %a
// CHECK-NEXT:      accy.yield %[[N]]
// CHECK-NEXT:    })
// CHECK-NEXT:    "accy.iterate"(%x) <{count = 2 : i64}> ({
// CHECK-NEXT:    ^bb0(%b: tensor<4xf32>):
// CHECK-NEXT:      %{{.*}} = accy.kernel_call @kernels::@k(%b)
// CHECK-NEXT:      accy.yield %b
// CHECK-NEXT:    })
// CHECK-NEXT:    func.return %[[R]]
func.func @iterate(%x: tensor<4xf32>) -> tensor<4xf32> {
  %r = "accy.iterate"(%x) <{count = 2 : i64}> ({
  ^bb0(%a: tensor<4xf32>):
    %dead = "accy.exp"(%a) : (tensor<4xf32>) -> tensor<4xf32>
    %n = "accy.neg"(%a) : (tensor<4xf32>) -> tensor<4xf32>
    "accy.yield"(%n) : (tensor<4xf32>) -> ()
  }) : (tensor<4xf32>) -> tensor<4xf32>
  %q = "accy.iterate"(%x) <{count = 2 : i64}> ({
  ^bb0(%b: tensor<4xf32>):
    %c = "accy.kernel_call"(%b) <{callee = @kernels::@k}> : (tensor<4xf32>) -> tensor<4xf32>
    "accy.yield"(%b) : (tensor<4xf32>) -> ()
  }) : (tensor<4xf32>) -> tensor<4xf32>
  %unused = "accy.iterate"(%x) <{count = 2 : i64}> ({
  ^bb0(%u: tensor<4xf32>):
    %v = "accy.tanh"(%u) : (tensor<4xf32>) -> tensor<4xf32>
    "accy.yield"(%v) : (tensor<4xf32>) -> ()
  }) : (tensor<4xf32>) -> tensor<4xf32>
  func.return %r : tensor<4xf32>
}

// The custom kernel that accy.kernel_call names: the input's buffer, then the output's.
"gpu.module"() <{sym_name = "kernels"}> ({
  "gpu.func"() <{function_type = (memref<4xf32>, memref<4xf32>) -> (), kernel}> ({
  ^bb0(%in: memref<4xf32>, %out: memref<4xf32>):
    "gpu.return"() : () -> ()
  }) {sym_name = "k"} : () -> ()
}) : () -> ()
