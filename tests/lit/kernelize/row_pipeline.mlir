// RUN: accy-opt %s --split-input-file -p kernelize | filecheck %s
// RUN: accy-opt %s --split-input-file -p set-target{profile=gpu},kernelize | filecheck %s --check-prefix=GPU
// RUN: accy-opt %s --split-input-file -p kernelize -t opencl | filecheck %s --check-prefix=CL

// Softmax along rows of 4 x 100, with a prologue (x * 2) and an epilogue
// (+ x): ONE row_pipeline kernel. CPU: a work-item per row, one pass per
// reduction level (max, then sum of exp), then the write pass; each pass walks
// the row 16 lanes at a time with a scalar tail (100 = 6 * 16 + 4).
func.func @main(%x: tensor<4x100xf32>) -> tensor<4x100xf32> {
  %two = "accy.constant"() <{value = dense<2.0> : tensor<4x100xf32>}> : () -> tensor<4x100xf32>
  %a = "accy.mul"(%x, %two) : (tensor<4x100xf32>, tensor<4x100xf32>) -> tensor<4x100xf32>
  %s = "accy.softmax"(%a) <{axis = 1 : i64}> : (tensor<4x100xf32>) -> tensor<4x100xf32>
  %y = "accy.add"(%s, %x) : (tensor<4x100xf32>, tensor<4x100xf32>) -> tensor<4x100xf32>
  func.return %y : tensor<4x100xf32>
}

// CHECK:      "gpu.launch_func"({{.*}}@kernels::@main_k0_row_pipeline
// CHECK-NOT:  "gpu.launch_func"
// CHECK-NOT:  accy_host.fallback
// CHECK:      "gpu.global_id"
// The max pass.
// CHECK:      scf.for {{.*}} iter_args({{.*}}) -> (vector<16xf32>)
// CHECK:        vector.load {{.*}} : memref<400xf32>, vector<16xf32>
// CHECK:        arith.maximumf {{.*}} : vector<16xf32>
// CHECK:      scf.for {{.*}} -> (f32)
// CHECK:      vector.reduction <maximumf>
// The sum-of-exp pass: x * 2 - max recomputed from the input.
// CHECK:      scf.for {{.*}} iter_args({{.*}}) -> (vector<16xf32>)
// CHECK:        vector.load
// CHECK:        arith.subf {{.*}} : vector<16xf32>
// CHECK:        math.exp {{.*}} : vector<16xf32>
// CHECK:        arith.addf {{.*}} : vector<16xf32>
// CHECK:      scf.for {{.*}} -> (f32)
// CHECK:      vector.reduction <add>
// The write pass: softmax plus the epilogue, vector stores then the tail.
// CHECK:      scf.for
// CHECK:        arith.divf {{.*}} : vector<16xf32>
// CHECK:        vector.store
// CHECK:      scf.for
// CHECK:        memref.store
// CHECK-NOT:  gpu.barrier

// On the GPU profile, short rows (100 <= 16 x 32): a segment of 8 work-items a row (the
// most that each hold at least 8 elements) and the 4 rows in one work-group
// of 32: a work-item holds 13 elements of its row (no loop), the last step
// partial (100 = 12 x 8 + 4: the work-items past the row read its last
// element and combine the identity); each segment's tree combines apart (3
// levels), and the stores are guarded.
// GPU:        "gpu.launch_func"({{.*}}@kernels::@main_k0_row_pipeline
// GPU:        memref.alloca() : memref<32xf32, #gpu.address_space<workgroup>>
// GPU:        memref.alloca() : memref<32xf32, #gpu.address_space<workgroup>>
// GPU-DAG:    "gpu.thread_id"
// GPU-DAG:    "gpu.block_id"
// GPU-NOT:    scf.for
// GPU:        arith.divsi
// GPU:        arith.remsi
// GPU-NOT:    scf.for
// GPU:        arith.select {{.*}} : f32
// GPU-NEXT:   arith.maximumf
// GPU-COUNT-4: gpu.barrier
// GPU-COUNT-13: math.exp
// GPU-NOT:    scf.for
// GPU-COUNT-4: gpu.barrier
// GPU:        scf.if
// GPU:          memref.store
// GPU:          scf.if
// GPU-NEXT:       arith.divf
// GPU:            memref.store
// GPU:        known_block_size = array<i32: 32, 1, 1>

// CL:         __kernel void main_k0_row_pipeline(
// CL:         vload16(
// CL:         exp(
// CL:         vstore16(
// CL-NOT:     barrier(

// -----

// layer_norm written with primitives over rows of a 3x2 batch: mean pass,
// variance pass (centred values recomputed), write pass; gamma and beta are
// broadcasts, loaded 16 lanes at a time through their strides.
func.func @main(%x: tensor<3x2x40xf32>, %g: tensor<40xf32>, %b: tensor<40xf32>) -> tensor<3x2x40xf32> {
  %mu = "accy.reduce"(%x) <{kind = "mean", axes = array<i64: 2>}> : (tensor<3x2x40xf32>) -> tensor<3x2xf32>
  %mb = "accy.broadcast"(%mu) <{dims = array<i64: 0, 1>}> : (tensor<3x2xf32>) -> tensor<3x2x40xf32>
  %c = "accy.sub"(%x, %mb) : (tensor<3x2x40xf32>, tensor<3x2x40xf32>) -> tensor<3x2x40xf32>
  %c2 = "accy.mul"(%c, %c) : (tensor<3x2x40xf32>, tensor<3x2x40xf32>) -> tensor<3x2x40xf32>
  %var = "accy.reduce"(%c2) <{kind = "mean", axes = array<i64: 2>}> : (tensor<3x2x40xf32>) -> tensor<3x2xf32>
  %eps = "accy.constant"() <{value = dense<1.0e-05> : tensor<3x2xf32>}> : () -> tensor<3x2xf32>
  %ve = "accy.add"(%var, %eps) : (tensor<3x2xf32>, tensor<3x2xf32>) -> tensor<3x2xf32>
  %is = "accy.rsqrt"(%ve) : (tensor<3x2xf32>) -> tensor<3x2xf32>
  %ib = "accy.broadcast"(%is) <{dims = array<i64: 0, 1>}> : (tensor<3x2xf32>) -> tensor<3x2x40xf32>
  %nm = "accy.mul"(%c, %ib) : (tensor<3x2x40xf32>, tensor<3x2x40xf32>) -> tensor<3x2x40xf32>
  %gb = "accy.broadcast"(%g) <{dims = array<i64: 2>}> : (tensor<40xf32>) -> tensor<3x2x40xf32>
  %bb = "accy.broadcast"(%b) <{dims = array<i64: 2>}> : (tensor<40xf32>) -> tensor<3x2x40xf32>
  %sc = "accy.mul"(%nm, %gb) : (tensor<3x2x40xf32>, tensor<3x2x40xf32>) -> tensor<3x2x40xf32>
  %n = "accy.add"(%sc, %bb) : (tensor<3x2x40xf32>, tensor<3x2x40xf32>) -> tensor<3x2x40xf32>
  func.return %n : tensor<3x2x40xf32>
}

// CHECK:      "gpu.launch_func"({{.*}}@kernels::@main_k0_row_pipeline
// CHECK-NOT:  "gpu.launch_func"
// CHECK:      scf.for {{.*}} -> (vector<16xf32>)
// CHECK:        vector.load %{{.*}} : memref<240xf32>, vector<16xf32>
// CHECK:      vector.reduction <add>
// CHECK:      scf.for {{.*}} -> (vector<16xf32>)
// CHECK:        arith.subf {{.*}} : vector<16xf32>
// CHECK:        arith.mulf {{.*}} : vector<16xf32>
// CHECK:      vector.reduction <add>
// CHECK:      math.sqrt
// CHECK:      scf.for
// CHECK:        vector.load %{{.*}} : memref<40xf32>, vector<16xf32>
// CHECK:        vector.load %{{.*}} : memref<40xf32>, vector<16xf32>
// CHECK:        vector.store
