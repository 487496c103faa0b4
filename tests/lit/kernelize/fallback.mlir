// RUN: accy-opt %s -p kernelize 2>&1 | filecheck %s
// RUN: not accy-opt %s -p kernelize{strict=true} 2>&1 | filecheck %s --check-prefix=STRICT
// RUN: not accy-opt %s -p set-target{math=fast},kernelize 2>&1 | filecheck %s --check-prefix=STRICT

// softmax has no lowering yet: it runs on the host reference path.
func.func @main(%x: tensor<4x9xf32>) -> tensor<4x9xf32> {
  %s = "accy.softmax"(%x) <{axis = 1 : i64}> : (tensor<4x9xf32>) -> tensor<4x9xf32>
  func.return %s : tensor<4x9xf32>
}

// CHECK: remark: kernel main_k0_row_pipeline (row_pipeline) runs on the host reference path
// CHECK: accy_host.fallback "main_k0_row_pipeline" ins(%{{.*}} : memref<36xf32>) outs(%{{.*}} : memref<36xf32>)
// CHECK: accy.softmax
// CHECK: accy_host.yield

// STRICT: kernel main_k0_row_pipeline (row_pipeline) cannot be lowered
