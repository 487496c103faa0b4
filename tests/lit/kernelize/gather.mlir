// RUN: accy-opt %s -p kernelize --verify-bounds | filecheck %s
// RUN: accy-opt %s -p kernelize | sed -e 's/arith.minsi \(%[0-9]*\), %[0-9]* : index/arith.addi \1, \1 : index/' | not accy-opt --verify-bounds 2>&1 | filecheck %s --check-prefix=UNCLAMPED
// RUN: accy-opt %s -p 'set-target{profile=gpu},kernelize' --verify-bounds | filecheck %s --check-prefix=GPU

// relu(table) -> gather -> exp is one elementwise kernel: the index is
// loaded at the result's index coordinates, counted from the end when
// negative (select), clamped into [0, 4] with minsi / maxsi (what the
// bounds proof reads), and the table is read there, relu computed on the
// element read. --verify-bounds proves every access in bounds, and refuses
// the kernel with the upper clamp taken out (UNCLAMPED).
func.func @main(%x: tensor<5x3xf32>, %i: tensor<2x2xi64>) -> tensor<2x2x3xf32> {
  %r = "accy.relu"(%x) : (tensor<5x3xf32>) -> tensor<5x3xf32>
  %g = "accy.gather"(%r, %i) <{axis = 0 : i64}> : (tensor<5x3xf32>, tensor<2x2xi64>) -> tensor<2x2x3xf32>
  %e = "accy.exp"(%g) : (tensor<2x2x3xf32>) -> tensor<2x2x3xf32>
  func.return %e : tensor<2x2x3xf32>
}

// CHECK:      "gpu.launch_func"({{.*}}) <{kernel = @kernels::@main_k0_elementwise
// CHECK-NOT:  "gpu.launch_func"
// CHECK:      "gpu.func"() <{function_type = (memref<15xf32>, memref<4xi64>, memref<12xf32>) -> ()
// CHECK:      %[[IDX:.*]] = memref.load %{{.*}}[%{{.*}}] : memref<4xi64>
// CHECK-NEXT: %[[I:.*]] = arith.index_cast %[[IDX]] : i64 to index
// CHECK-NEXT: %[[NEG:.*]] = arith.cmpi slt, %[[I]], %{{.*}} : index
// CHECK-NEXT: %[[UP:.*]] = arith.addi %[[I]], %{{.*}} : index
// CHECK-NEXT: %[[W:.*]] = arith.select %[[NEG]], %[[UP]], %[[I]] : index
// CHECK-NEXT: %[[LO:.*]] = arith.minsi %[[W]], %{{.*}} : index
// CHECK-NEXT: %[[P:.*]] = arith.maxsi %[[LO]], %{{.*}} : index
// CHECK-NEXT: %[[ROW:.*]] = arith.muli %[[P]], %{{.*}} : index
// CHECK-NEXT: %[[AT:.*]] = arith.addi %[[ROW]], %{{.*}} : index
// CHECK-NEXT: %[[V:.*]] = memref.load %{{.*}}[%[[AT]]] : memref<15xf32>
// CHECK-NEXT: %[[R:.*]] = arith.maximumf %[[V]], %{{.*}} : f32
// CHECK-NEXT: math.exp %[[R]] : f32
// GPU:        "gpu.launch_func"({{.*}}) <{kernel = @kernels::@main_k0_elementwise
// GPU:        arith.minsi
// GPU:        arith.maxsi
// UNCLAMPED:  error: kernel @main_k0_elementwise: 'memref.load' loads from buffer #0 (memref<15xf32>)
// UNCLAMPED-SAME: valid indices are [0, 14]
