// RUN: accy-opt %s -p 'set-target{profile=gpu row_threads=8 scan_vectors=2},kernelize' | filecheck %s

// One line of 1000 elements, in tiles of 64 (8 work-items, 2 vectors of 4
// each): 15 whole tiles and 40 elements, too many for one work-group to
// walk alone. It is split into 16 segments of one tile, a work-group each,
// in two launches over a scratch buffer of the 16 segment totals.
func.func @main(%x: tensor<1x1000xf32>) -> tensor<1x1000xf32> {
  %s = "accy.scan"(%x) <{kind = "sum", axis = 1 : i64, exclusive = false, reverse = false}> : (tensor<1x1000xf32>) -> tensor<1x1000xf32>
  func.return %s : tensor<1x1000xf32>
}

// CHECK:      %[[TOTALS:.*]] = memref.alloc() : memref<16xf32>
// CHECK:      "gpu.launch_func"({{.*}}) <{kernel = @kernels::@main_k0_scan_partials{{.*}}}> {{.*}} memref<1000xf32>, memref<16xf32>) -> ()
// CHECK:      "gpu.launch_func"({{.*}}) <{kernel = @kernels::@main_k0_scan,{{.*}}}> {{.*}} memref<1000xf32>, memref<1000xf32>, memref<16xf32>) -> ()
// CHECK:      memref.dealloc %[[TOTALS]]

// The totals: each work-item combines its chunks of the segment's whole
// tiles (the last segment: of the masked tile), the line's work-items
// combine theirs (a work-group scan: 3 steps), the first stores the total
// at line * 16 + segment.
// CHECK:      "gpu.func"
// CHECK:      %[[WG:.*]] = "gpu.block_id"
// CHECK:      %[[SEG:.*]] = arith.remsi %[[WG]]
// CHECK:      scf.for
// CHECK:      vector.load
// CHECK-COUNT-4: "gpu.barrier"
// CHECK:      %[[AT:.*]] = arith.addi %{{.*}}, %[[SEG]] : index
// CHECK-NEXT: memref.store %{{.*}}, %{{.*}}[%[[AT]]] : memref<16xf32>
// CHECK:      sym_name = "main_k0_scan_partials"

// The scans: the totals of the segments before this one, combined, are
// the carry into its tiles; then every work-group runs the masked tile,
// which ends at 1000 in the last segment and at 960 (its start) elsewhere.
// CHECK:      "gpu.func"
// CHECK:      scf.for
// CHECK:      memref.load %{{.*}} : memref<16xf32>
// CHECK:      "gpu.barrier"
// CHECK:      scf.for
// CHECK:      vector.load
// CHECK:      "gpu.barrier"
// CHECK:      vector.store
// CHECK:      %[[END:.*]] = arith.select %{{.*}}, %{{.*}}, %{{.*}} : index
// CHECK:      "gpu.barrier"
// CHECK:      sym_name = "main_k0_scan"
