// RUN: accy-opt %s -p 'set-target{profile=cpu},kernelize' | filecheck %s

// An RNN cell, h = tanh(h·W + b), as a loop of kernels: the initial state
// (a splat literal) is made whole before the loop and copied into the first
// of two buffers; every trip launches the body's one kernel (dot + bias +
// tanh) reading the one and writing the other, and scf.yield swaps them.
func.func @rnn(%w: tensor<8x8xf32>, %b: tensor<8xf32>) -> tensor<4x8xf32> {
  %z = "accy.constant"() <{value = dense<0.0> : tensor<4x8xf32>}> : () -> tensor<4x8xf32>
  %bb = "accy.broadcast"(%b) <{dims = array<i64: 1>}> : (tensor<8xf32>) -> tensor<4x8xf32>
  %h = "accy.iterate"(%z) <{count = 5 : i64}> ({
  ^bb0(%hi: tensor<4x8xf32>):
    %m = "accy.dot_general"(%hi, %w) <{lhs_batch = array<i64>, rhs_batch = array<i64>, lhs_contract = array<i64: 1>, rhs_contract = array<i64: 0>}> : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
    %s = "accy.add"(%m, %bb) : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
    %t = "accy.tanh"(%s) : (tensor<4x8xf32>) -> tensor<4x8xf32>
    "accy.yield"(%t) : (tensor<4x8xf32>) -> ()
  }) : (tensor<4x8xf32>) -> tensor<4x8xf32>
  func.return %h : tensor<4x8xf32>
}

// CHECK-LABEL: func.func @rnn(%{{.*}}: memref<64xf32>, %{{.*}}: memref<8xf32>) -> memref<32xf32>
// CHECK:         %[[INIT:.*]] = accy_host.constant dense<0.000000e+00> : tensor<4x8xf32> -> memref<32xf32>
// CHECK:         %[[A:.*]] = memref.alloc() : memref<32xf32>
// CHECK-NEXT:    %[[B:.*]] = memref.alloc() : memref<32xf32>
// CHECK-NEXT:    accy_host.copy %[[INIT]] to %[[A]] count 32
// CHECK:         %[[LAST:.*]], %{{.*}} = scf.for %{{.*}} = %{{.*}} to %{{.*}} step %{{.*}} iter_args(%[[CUR:.*]] = %[[A]], %[[NEXT:.*]] = %[[B]]) -> (memref<32xf32>, memref<32xf32>) {
// CHECK-NEXT:      "gpu.launch_func"({{.*}}, %[[CUR]], {{.*}}, %[[NEXT]]) <{kernel = @kernels::@rnn_k0_iterate_body_k0_dot_general
// CHECK-NEXT:      scf.yield %[[NEXT]], %[[CUR]] : memref<32xf32>, memref<32xf32>
// CHECK-NEXT:    }
// CHECK-NEXT:    %[[OUT:.*]] = memref.alloc() : memref<32xf32>
// CHECK-NEXT:    accy_host.copy %[[LAST]] to %[[OUT]] count 32
// CHECK-DAG:     memref.dealloc %[[A]]
// CHECK-DAG:     memref.dealloc %[[B]]
// CHECK:         func.return %[[OUT]]

// A body that yields no buffer of its own: a carried value unchanged, an
// outer value, and one value twice. Each is copied into its second buffer
// at the end of the trip; the first of two equal values keeps the buffer
// its kernel wrote.
func.func @yields(%x: tensor<6xf32>, %y: tensor<6xf32>) -> (tensor<6xf32>, tensor<6xf32>, tensor<6xf32>, tensor<6xf32>) {
  %r:4 = "accy.iterate"(%x, %x, %x, %x) <{count = 2 : i64}> ({
  ^bb0(%a: tensor<6xf32>, %b: tensor<6xf32>, %c: tensor<6xf32>, %d: tensor<6xf32>):
    %e = "accy.exp"(%a) : (tensor<6xf32>) -> tensor<6xf32>
    "accy.yield"(%e, %b, %y, %e) : (tensor<6xf32>, tensor<6xf32>, tensor<6xf32>, tensor<6xf32>) -> ()
  }) : (tensor<6xf32>, tensor<6xf32>, tensor<6xf32>, tensor<6xf32>) -> (tensor<6xf32>, tensor<6xf32>, tensor<6xf32>, tensor<6xf32>)
  func.return %r#0, %r#1, %r#2, %r#3 : tensor<6xf32>, tensor<6xf32>, tensor<6xf32>, tensor<6xf32>
}

// CHECK-LABEL: func.func @yields
// CHECK-SAME:    (%[[X:[^:]*]]: memref<6xf32>, %[[Y:[^:]*]]: memref<6xf32>)
// CHECK-COUNT-4: accy_host.copy %[[X]] to %{{.*}} count 6
// CHECK:         scf.for %{{.*}} iter_args(%[[A0:[^ ]*]] = %{{[^,]*}}, %[[B0:[^ ]*]] = %{{[^,]*}}, %[[C0:[^ ]*]] = %{{[^,]*}}, %[[D0:[^ ]*]] = %{{[^,]*}}, %[[A1:[^ ]*]] = %{{[^,]*}}, %[[B1:[^ ]*]] = %{{[^,]*}}, %[[C1:[^ ]*]] = %{{[^,]*}}, %[[D1:[^ ]*]] = %{{[^)]*}})
// CHECK-NEXT:      "gpu.launch_func"({{.*}}, %[[A0]], %[[A1]]) <{kernel = @kernels::@yields_k0_iterate_body_k0_elementwise
// CHECK-NEXT:      accy_host.copy %[[B0]] to %[[B1]] count 6
// CHECK-NEXT:      accy_host.copy %[[Y]] to %[[C1]] count 6
// CHECK-NEXT:      accy_host.copy %[[A1]] to %[[D1]] count 6
// CHECK-NEXT:      scf.yield %[[A1]], %[[B1]], %[[C1]], %[[D1]], %[[A0]], %[[B0]], %[[C0]], %[[D0]]

// Nested: the inner loop is a loop inside the outer one's trip; every
// buffer of both bodies is allocated before the outer loop.
func.func @nested(%x: tensor<5xf32>) -> tensor<5xf32> {
  %r = "accy.iterate"(%x) <{count = 3 : i64}> ({
  ^bb0(%a: tensor<5xf32>):
    %i = "accy.iterate"(%a) <{count = 4 : i64}> ({
    ^bb1(%b: tensor<5xf32>):
      %t = "accy.tanh"(%b) : (tensor<5xf32>) -> tensor<5xf32>
      "accy.yield"(%t) : (tensor<5xf32>) -> ()
    }) : (tensor<5xf32>) -> tensor<5xf32>
    %n = "accy.neg"(%i) : (tensor<5xf32>) -> tensor<5xf32>
    "accy.yield"(%n) : (tensor<5xf32>) -> ()
  }) : (tensor<5xf32>) -> tensor<5xf32>
  func.return %r : tensor<5xf32>
}

// CHECK-LABEL: func.func @nested
// CHECK-COUNT-4: memref.alloc
// CHECK-NOT:     memref.alloc
// CHECK:         scf.for
// CHECK-NOT:     memref.alloc
// CHECK:           scf.for
// CHECK-NEXT:        "gpu.launch_func"({{.*}}) <{kernel = @kernels::@nested_k0_iterate_body_k0_iterate_body_k0_elementwise
// CHECK-NEXT:        scf.yield
// CHECK-NEXT:      }
// CHECK-NEXT:      accy_host.copy
// CHECK-NEXT:      "gpu.launch_func"({{.*}}) <{kernel = @kernels::@nested_k0_iterate_body_k1_elementwise
// CHECK-NEXT:      scf.yield
// CHECK-NEXT:    }
// CHECK-NEXT:    memref.alloc
// CHECK-NEXT:    accy_host.copy
// CHECK-COUNT-4: memref.dealloc

// A packed dot in the body: packing the loop-invariant weight is a launch
// that reads no carried buffer and nothing the trip writes, so it runs once,
// before the loop; the carried lhs is packed every trip.
func.func @packed(%h0: tensor<64x256xf32>, %w: tensor<256x256xf32>) -> tensor<64x256xf32> {
  %h = "accy.iterate"(%h0) <{count = 10 : i64}> ({
  ^bb0(%hi: tensor<64x256xf32>):
    %m = "accy.dot_general"(%hi, %w) <{lhs_batch = array<i64>, rhs_batch = array<i64>, lhs_contract = array<i64: 1>, rhs_contract = array<i64: 0>}> : (tensor<64x256xf32>, tensor<256x256xf32>) -> tensor<64x256xf32>
    %t = "accy.tanh"(%m) : (tensor<64x256xf32>) -> tensor<64x256xf32>
    "accy.yield"(%t) : (tensor<64x256xf32>) -> ()
  }) : (tensor<64x256xf32>) -> tensor<64x256xf32>
  func.return %h : tensor<64x256xf32>
}

// CHECK-LABEL: func.func @packed
// CHECK:         "gpu.launch_func"({{.*}}) <{kernel = @kernels::@packed_k0_iterate_body_k0_dot_general_pack_b
// CHECK-NOT:     gpu.launch_func
// CHECK:         scf.for
// CHECK-NEXT:      "gpu.launch_func"({{.*}}) <{kernel = @kernels::@packed_k0_iterate_body_k0_dot_general_pack_a
// CHECK-NEXT:      "gpu.launch_func"({{.*}}) <{kernel = @kernels::@packed_k0_iterate_body_k0_dot_general,
// CHECK-NEXT:      scf.yield
