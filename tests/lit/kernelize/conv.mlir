// RUN: accy-opt %s -p kernelize | filecheck %s
// RUN: accy-opt %s -p set-target{profile=gpu},kernelize | filecheck %s --check-prefix=GPU

// relu(conv(neg(x), w) + bias), 3x3, pads 1: one conv kernel, an implicit
// product of 32 output channels by K = 16 x 9 and 100 output positions.
// The prologue (neg) is read as the input is; the bias and relu are the
// epilogue; the im2col matrix is never a tensor.
func.func @main(%x: tensor<1x16x10x10xf32>, %w: tensor<32x16x3x3xf32>, %b: tensor<32xf32>) -> tensor<1x32x10x10xf32> {
  %n = "accy.neg"(%x) : (tensor<1x16x10x10xf32>) -> tensor<1x16x10x10xf32>
  %c = "accy.conv"(%n, %w) <{strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, pads_low = array<i64: 1, 1>, pads_high = array<i64: 1, 1>}> : (tensor<1x16x10x10xf32>, tensor<32x16x3x3xf32>) -> tensor<1x32x10x10xf32>
  %bb = "accy.broadcast"(%b) <{dims = array<i64: 1>}> : (tensor<32xf32>) -> tensor<1x32x10x10xf32>
  %s = "accy.add"(%c, %bb) : (tensor<1x32x10x10xf32>, tensor<1x32x10x10xf32>) -> tensor<1x32x10x10xf32>
  %r = "accy.relu"(%s) : (tensor<1x32x10x10xf32>) -> tensor<1x32x10x10xf32>
  func.return %r : tensor<1x32x10x10xf32>
}

// On the cpu profile, the dot's packed kernel. The weights pack into panels of 12 rows
// (3 panels x 144 k x 12); the rhs pack writes the im2col panels (4
// panels of 32 positions x 144 k x 32) from the input: per element the
// position clamped into the input (minsi/maxsi, for the bounds proof), the
// prologue, and 0 selected in the padding. Then 12 x 32 register tiles.
// CHECK:      "gpu.launch_func"({{.*}}@kernels::@main_k0_conv_pack_a{{.*}}memref<5184xf32>) -> ()
// CHECK:      "gpu.launch_func"({{.*}}@kernels::@main_k0_conv_pack_b{{.*}}memref<18432xf32>) -> ()
// CHECK:      "gpu.launch_func"({{.*}}@kernels::@main_k0_conv,
// CHECK-NOT:  "gpu.launch_func"
// CHECK:      "gpu.func"
// CHECK:      }) {sym_name = "main_k0_conv_pack_a", accy.kind = "conv"}
// CHECK:      "gpu.func"
// CHECK:      arith.minsi
// CHECK-NEXT: arith.maxsi
// CHECK:      arith.negf
// CHECK-NEXT: arith.select {{.*}} : f32
// CHECK:      }) {sym_name = "main_k0_conv_pack_b", accy.kind = "conv"}
// CHECK:      "gpu.func"
// CHECK:      scf.for {{.*}} -> (vector<16xf32>, {{.*}}vector<16xf32>)
// CHECK-COUNT-24: math.fma {{.*}} : vector<16xf32>
// CHECK:      arith.addf
// CHECK-NEXT: arith.maximumf
// CHECK:      }) {sym_name = "main_k0_conv", accy.kind = "conv"}

// On the gpu profile, the dot's local-memory tiles (4x4, too few blocks for more), k
// split into ranges (a launch of partial sums, then one adding them and
// running the epilogue). The staged tiles are 16-byte aligned: a
// work-item reads its run of 4 rows (columns) as one aligned vector.
// GPU:        "gpu.launch_func"({{.*}}@kernels::@main_k0_conv_split_k
// GPU:        "gpu.launch_func"({{.*}}@kernels::@main_k0_conv,
// GPU-NOT:    "gpu.launch_func"
// GPU:        memref.alloca() {alignment = 16 : i64} : memref<256xf32, #gpu.address_space<workgroup>>
// GPU:        "gpu.barrier"
// GPU:        vector.load {{.*}} {alignment = 16 : i64} : memref<256xf32, #gpu.address_space<workgroup>>, vector<4xf32>
