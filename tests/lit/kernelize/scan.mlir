// RUN: accy-opt %s -p kernelize | filecheck %s
// RUN: accy-opt %s -p 'set-target{profile=gpu scan_vectors=4},kernelize' | filecheck %s --check-prefix=GPU
// (scan_vectors set to 4, not the GPU default of 2, for the shapes described below.)

// An exclusive reverse cumulative sum of -x, 5 lines of 37.
func.func @main(%x: tensor<5x37xf32>) -> tensor<5x37xf32> {
  %n = "accy.neg"(%x) : (tensor<5x37xf32>) -> tensor<5x37xf32>
  %s = "accy.scan"(%n) <{kind = "sum", axis = 1 : i64, exclusive = true, reverse = true}> : (tensor<5x37xf32>) -> tensor<5x37xf32>
  func.return %s : tensor<5x37xf32>
}

// CPU profile: one work-item per line walks it from the end, 16 elements a
// step: the vector's lanes reversed, scanned in registers (4 shuffles and
// adds), shifted by one (exclusive) and added to the carry, reversed back
// and stored; the carry is the last lane. The first 5 elements (the walk's
// last) one at a time, storing the running sum before adding the element.
// CHECK:      "gpu.launch_func"({{.*}}@kernels::@main_k0_scan
// CHECK:      scf.for {{.*}} iter_args({{.*}}) -> (vector<16xf32>)
// CHECK:        %[[X:.*]] = vector.load
// CHECK:        %[[N:.*]] = arith.negf %[[X]] : vector<16xf32>
// CHECK:        vector.shuffle %[[N]], %[[N]] [15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0]
// CHECK-COUNT-4: vector.shuffle
// CHECK:        vector.shuffle {{.*}} [16, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14]
// CHECK:        vector.store
// CHECK:        vector.shuffle {{.*}} [15, 15, 15, 15, 15, 15, 15, 15, 15, 15, 15, 15, 15, 15, 15, 15]
// CHECK:      vector.extract
// CHECK:      scf.for {{.*}} iter_args({{.*}}) -> (f32)
// CHECK:        arith.subi
// CHECK:        arith.negf
// CHECK:        arith.addf
// CHECK:        memref.store
// CHECK:      accy.kind = "scan"

// GPU profile: 2 work-items per line (one per 16 elements, a power of two),
// 4 lines a work-group; each work-item reads 4 vectors of 4 per tile of 32
// elements (the first from 33 - 4t: the walk runs from the end), scans
// them in registers, then the chunk totals across the line in local memory
// (2 x 4 x 8 floats: one Hillis-Steele step), then stores the 4 vectors.
// The last 5 elements are a masked tile.
// GPU:      "gpu.launch_func"({{.*}}@kernels::@main_k0_scan
// GPU:      memref.alloca() : memref<64xf32, #gpu.address_space<workgroup>>
// GPU:      %[[LID:.*]] = "gpu.thread_id"
// GPU:      %[[T:.*]] = arith.remsi %[[LID]]
// GPU:      %[[T4:.*]] = arith.muli %[[T]]
// GPU:      %[[FROM:.*]] = arith.subi %{{.*}}, %[[T4]]
// GPU:      %[[AT:.*]] = arith.addi %{{.*}}, %[[FROM]]
// GPU:      %[[V:.*]] = vector.load %0[%[[AT]]] : memref<185xf32>, vector<4xf32>
// GPU:      arith.negf %[[V]] : vector<4xf32>
// GPU:      "gpu.barrier"
// GPU:      "gpu.barrier"
// GPU:      vector.store %{{.*}}, %1[%[[AT]]] : memref<185xf32>, vector<4xf32>
// GPU:      scf.if
// GPU:      vector.load
// GPU:      } else {
// GPU:      memref.load
// GPU:      "gpu.barrier"
// GPU:      "gpu.barrier"
// GPU:      accy.kind = "scan", gpu.known_block_size = array<i32: 8, 1, 1>
