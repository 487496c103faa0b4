// RUN: accy-opt %s -p kernelize | filecheck %s

// An exclusive reverse cumulative sum of -x: one work-item per row.
func.func @main(%x: tensor<5x37xf32>) -> tensor<5x37xf32> {
  %n = "accy.neg"(%x) : (tensor<5x37xf32>) -> tensor<5x37xf32>
  %s = "accy.scan"(%n) <{kind = "sum", axis = 1 : i64, exclusive = true, reverse = true}> : (tensor<5x37xf32>) -> tensor<5x37xf32>
  func.return %s : tensor<5x37xf32>
}

// CHECK:      "gpu.launch_func"({{.*}}@kernels::@main_k0_scan
// CHECK:      scf.for {{.*}} iter_args({{.*}}) -> (f32)
// CHECK:      arith.subi
// CHECK:      arith.negf
// CHECK:      arith.addf
// CHECK:      memref.store
// CHECK:      accy.kind = "scan"
