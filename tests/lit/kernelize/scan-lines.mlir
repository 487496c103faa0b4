// RUN: accy-opt %s -p kernelize | filecheck %s
// RUN: accy-opt %s -p 'set-target{profile=gpu scan_vectors=4},kernelize' | filecheck %s --check-prefix=GPU
// (scan_vectors set to 4, not the GPU default of 2, for the shapes described below.)

// An exclusive reverse running max down the columns (axis 0): 35 lines of
// 37, 35 apart from one element to the next, adjacent lines adjacent.
func.func @main(%x: tensor<37x35xf32>) -> tensor<37x35xf32> {
  %s = "accy.scan"(%x) <{kind = "max", axis = 0 : i64, exclusive = true, reverse = true}> : (tensor<37x35xf32>) -> tensor<37x35xf32>
  func.return %s : tensor<37x35xf32>
}

// CPU profile: a work-item walks 16 adjacent lines as vector<16xf32>
// (3 work-items: blocks of columns 0-15, 16-31, 32-34); the last block, of
// 3 lines, is walked a line at a time.
// CHECK:      "gpu.launch_func"({{.*}}@kernels::@main_k0_scan
// CHECK:      %[[GID:.*]] = "gpu.global_id"
// CHECK:      %[[B:.*]] = arith.remsi %[[GID]]
// CHECK:      %[[FIRST:.*]] = arith.muli %[[B]]
// CHECK:      scf.if
// CHECK:      scf.for {{.*}} iter_args({{.*}}) -> (vector<16xf32>)
// CHECK:      %[[AT:.*]] = arith.addi %{{.*}}, %[[FIRST]]
// CHECK:      %[[V:.*]] = vector.load %0[%[[AT]]] : memref<1295xf32>, vector<16xf32>
// CHECK:      arith.maximumf %{{.*}}, %[[V]] : vector<16xf32>
// CHECK:      vector.store %{{.*}}, %1[%[[AT]]]
// CHECK:      } else {
// CHECK:      scf.for %[[LINE:.*]] = %[[FIRST]] to
// CHECK:      scf.for {{.*}} iter_args({{.*}}) -> (f32)
// CHECK:      memref.load
// CHECK:      accy.kind = "scan"

// GPU profile: 32 adjacent lines a work-group (local id t * 32 + r), 2
// work-items along each line (one per 16 elements); each reads its chunks'
// 4 elements one at a time, 35 floats apart, and the work-items of a line
// are 32 local ids apart in the work-group scan (the line's first local id r
// plus (t - 1) * 32). Lines 35..63 of the
// second work-group walk line 34 again and store nothing.
// GPU:      memref.alloca() : memref<512xf32, #gpu.address_space<workgroup>>
// GPU:      %[[LID:.*]] = "gpu.thread_id"
// GPU:      %[[R:.*]] = arith.remsi %[[LID]], %[[C32:.*]] : index
// GPU:      %[[T:.*]] = arith.divsi %[[LID]], %[[C32]] : index
// GPU:      %[[LINE:.*]] = arith.addi %{{.*}}, %[[R]]
// GPU:      %[[INSIDE:.*]] = arith.cmpi slt, %[[LINE]]
// GPU:      memref.load %0
// GPU-NOT:  vector.load
// GPU:      "gpu.barrier"
// GPU:      arith.subi %[[T]]
// GPU:      scf.if %[[INSIDE]]
// GPU:      memref.store
// GPU:      accy.kind = "scan", gpu.known_block_size = array<i32: 64, 1, 1>
