// RUN: accy-opt %s --split-input-file -p set-target{profile=gpu},kernelize | filecheck %s

// GPU flash attention, key tiles by work-group count: 255 heads of 64 queries
// (D = 32) are 255 work-groups of 64 query rows, too few to fill a large GPU
// many times over, so tiles take the profile's key_tile of 64 keys:
// q [64][32+1], keys [64][32+1], p [64][64+1].
func.func @main(%q: tensor<255x64x32xf32>, %k: tensor<255x64x32xf32>, %v: tensor<255x64x32xf32>) -> tensor<255x64x32xf32> {
  %o = "accy.attention"(%q, %k, %v) <{scale = 0.17677669 : f32, causal = false}> : (tensor<255x64x32xf32>, tensor<255x64x32xf32>, tensor<255x64x32xf32>) -> tensor<255x64x32xf32>
  func.return %o : tensor<255x64x32xf32>
}

// CHECK-LABEL: "gpu.launch_func"({{.*}}@kernels::@main_k0_flash_attention
// CHECK:       memref.alloca() : memref<2112xf32, #gpu.address_space<workgroup>>
// CHECK-NEXT:  memref.alloca() : memref<2112xf32, #gpu.address_space<workgroup>>
// CHECK-NEXT:  memref.alloca() : memref<4160xf32, #gpu.address_space<workgroup>>

// -----

// 256 heads: 256 work-groups (GPU_MANY_BLOCKS), and tiles of at most 32 keys
// keep more of them resident: keys [32][32+1], p [64][32+1].
func.func @main(%q: tensor<256x64x32xf32>, %k: tensor<256x64x32xf32>, %v: tensor<256x64x32xf32>) -> tensor<256x64x32xf32> {
  %o = "accy.attention"(%q, %k, %v) <{scale = 0.17677669 : f32, causal = false}> : (tensor<256x64x32xf32>, tensor<256x64x32xf32>, tensor<256x64x32xf32>) -> tensor<256x64x32xf32>
  func.return %o : tensor<256x64x32xf32>
}

// CHECK-LABEL: "gpu.launch_func"({{.*}}@kernels::@main_k0_flash_attention
// CHECK:       memref.alloca() : memref<2112xf32, #gpu.address_space<workgroup>>
// CHECK-NEXT:  memref.alloca() : memref<1056xf32, #gpu.address_space<workgroup>>
// CHECK-NEXT:  memref.alloca() : memref<2112xf32, #gpu.address_space<workgroup>>
