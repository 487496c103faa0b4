// RUN: accy-opt %s --split-input-file -p kernelize | filecheck %s
// RUN: accy-opt %s --split-input-file -p set-target{profile=gpu},kernelize | filecheck %s --check-prefix=GPU
// RUN: accy-opt %s --split-input-file -p kernelize -t opencl | filecheck %s --check-prefix=CL

// Causal attention over 2 heads of 48 queries and keys, D = Dv = 32: ONE
// flash_attention kernel, and no 2x48x48 (4608-element) score buffer
// anywhere: neither a host allocation nor a kernel argument nor local memory.
// CPU: a work-item per (head, query row) runs the online softmax over keys
// 0..min(48, i+1) (the causal skip), q's row and acc as vector<16xf32> chunks.
func.func @main(%q: tensor<2x48x32xf32>, %k: tensor<2x48x32xf32>, %v: tensor<2x48x32xf32>) -> tensor<2x48x32xf32> {
  %o = "accy.attention"(%q, %k, %v) <{scale = 0.17677669 : f32, causal = true}> : (tensor<2x48x32xf32>, tensor<2x48x32xf32>, tensor<2x48x32xf32>) -> tensor<2x48x32xf32>
  func.return %o : tensor<2x48x32xf32>
}

// CHECK-NOT:  memref<4608x
// CHECK:      "gpu.launch_func"({{.*}}@kernels::@main_k0_flash_attention
// CHECK-NOT:  "gpu.launch_func"
// CHECK-NOT:  memref<4608x
// CHECK:      "gpu.global_id"
// CHECK:      vector.load %{{.*}} : memref<3072xf32>, vector<16xf32>
// CHECK:      vector.load %{{.*}} : memref<3072xf32>, vector<16xf32>
// CHECK:      arith.select
// CHECK:      scf.for {{.*}} iter_args({{.*}}) -> (f32, f32, vector<16xf32>, vector<16xf32>)
// CHECK:        vector.reduction <add>
// CHECK:        arith.maximumf
// CHECK:        math.exp
// CHECK:        math.exp
// CHECK:        math.fma {{.*}} : vector<16xf32>
// CHECK:        math.fma {{.*}} : vector<16xf32>
// CHECK:      arith.divf
// CHECK:      vector.store
// CHECK:      vector.store
// CHECK-NOT:  gpu.barrier
// CHECK-NOT:  memref<4608x

// The GPU form: a work-group of 16 x 8 work-items per block of 64 query rows: q
// staged once ([64][32+1]), tiles of 64 keys ([64][32+1]: with 2 work-groups,
// far fewer than 256, the profile's key_tile stands) and p ([64][64+1]).
// GPU-NOT:    memref<4608x
// GPU:        "gpu.launch_func"({{.*}}@kernels::@main_k0_flash_attention
// GPU:        memref.alloca() : memref<2112xf32, #gpu.address_space<workgroup>>
// GPU:        memref.alloca() : memref<2112xf32, #gpu.address_space<workgroup>>
// GPU:        memref.alloca() : memref<4160xf32, #gpu.address_space<workgroup>>
// GPU:        "gpu.thread_id"
// GPU:        "gpu.block_id"
// GPU:        scf.for
// GPU:        gpu.barrier
// GPU:        math.fma
// GPU:        gpu.barrier
// GPU:        math.exp
// GPU:        gpu.barrier
// GPU:        math.fma
// GPU-NOT:    memref<4608x

// CL:         __kernel void main_k0_flash_attention(
// CL-NOT:     4608
// CL:         vload16(
// CL:         exp(
// CL:         vstore16(
// CL-NOT:     barrier(

// -----

// The primitive form: q·kᵀ, scale, softmax written with reduce/broadcast,
// ·v. Also one kernel with no 4608-element buffer.
func.func @main(%q: tensor<2x48x32xf32>, %k: tensor<2x48x32xf32>, %v: tensor<2x48x32xf32>) -> tensor<2x48x32xf32> {
  %s0 = "accy.dot_general"(%q, %k) <{lhs_batch = array<i64: 0>, rhs_batch = array<i64: 0>, lhs_contract = array<i64: 2>, rhs_contract = array<i64: 2>}> : (tensor<2x48x32xf32>, tensor<2x48x32xf32>) -> tensor<2x48x48xf32>
  %c = "accy.constant"() <{value = dense<0.17677669> : tensor<2x48x48xf32>}> : () -> tensor<2x48x48xf32>
  %s = "accy.mul"(%s0, %c) : (tensor<2x48x48xf32>, tensor<2x48x48xf32>) -> tensor<2x48x48xf32>
  %mx = "accy.reduce"(%s) <{kind = "max", axes = array<i64: 2>}> : (tensor<2x48x48xf32>) -> tensor<2x48xf32>
  %mb = "accy.broadcast"(%mx) <{dims = array<i64: 0, 1>}> : (tensor<2x48xf32>) -> tensor<2x48x48xf32>
  %d = "accy.sub"(%s, %mb) : (tensor<2x48x48xf32>, tensor<2x48x48xf32>) -> tensor<2x48x48xf32>
  %e = "accy.exp"(%d) : (tensor<2x48x48xf32>) -> tensor<2x48x48xf32>
  %sm = "accy.reduce"(%e) <{kind = "sum", axes = array<i64: 2>}> : (tensor<2x48x48xf32>) -> tensor<2x48xf32>
  %sb = "accy.broadcast"(%sm) <{dims = array<i64: 0, 1>}> : (tensor<2x48xf32>) -> tensor<2x48x48xf32>
  %p = "accy.div"(%e, %sb) : (tensor<2x48x48xf32>, tensor<2x48x48xf32>) -> tensor<2x48x48xf32>
  %o = "accy.dot_general"(%p, %v) <{lhs_batch = array<i64: 0>, rhs_batch = array<i64: 0>, lhs_contract = array<i64: 2>, rhs_contract = array<i64: 1>}> : (tensor<2x48x48xf32>, tensor<2x48x32xf32>) -> tensor<2x48x32xf32>
  func.return %o : tensor<2x48x32xf32>
}

// CHECK:      "gpu.launch_func"({{.*}}@kernels::@main_k0_flash_attention
// CHECK-NOT:  "gpu.launch_func"
// CHECK-NOT:  accy_host.fallback
// CHECK:      scf.for {{.*}} iter_args({{.*}}) -> (f32, f32, vector<16xf32>, vector<16xf32>)
// CHECK-NOT:  memref<4608x
