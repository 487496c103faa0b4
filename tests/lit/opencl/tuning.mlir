// RUN: accy-opt %s -p 'set-target{profile=gpu},kernelize' -t opencl | filecheck %s --check-prefix=DEFAULT
// RUN: accy-opt %s -p 'set-target{profile=gpu reduce_threads=64},kernelize' -t opencl | filecheck %s --check-prefix=THREADS
// RUN: accy-opt %s -p 'set-target{profile=gpu reduce_threads=64},kernelize' | filecheck %s --check-prefix=KEPT
// RUN: accy-opt %s -p 'set-target{profile=gpu dot_tile=8},kernelize' -t opencl | filecheck %s --check-prefix=TILE
// RUN: accy-opt %s -p 'set-target{group_size=4},kernelize' | filecheck %s --check-prefix=GROUP
// Tile and work-group sizes are target fields with the profile's defaults:
// setting one by hand changes the kernels, and the module keeps it.

builtin.module {
  func.func @main(%x: tensor<4x1024xf32>, %a: tensor<32x32xf32>) -> (tensor<4xf32>, tensor<32x32xf32>) {
    %s = "accy.reduce"(%x) <{kind = "sum", axes = array<i64: 1>}> : (tensor<4x1024xf32>) -> tensor<4xf32>
    %d = "accy.dot_general"(%a, %a) <{lhs_batch = array<i64>, rhs_batch = array<i64>, lhs_contract = array<i64: 1>, rhs_contract = array<i64: 0>}> : (tensor<32x32xf32>, tensor<32x32xf32>) -> tensor<32x32xf32>
    func.return %s, %d : tensor<4xf32>, tensor<32x32xf32>
  }
}

// reduce_threads work-items share each output (default 256, a work-group);
// with fewer, several outputs share a work-group of 256 (here 4 x 64).
// DEFAULT: // kind: reduction
// DEFAULT: __local float l0[256];
// DEFAULT: // kind: dot_general
// DEFAULT: __local float l0[288] __attribute__((aligned(16)));
// DEFAULT-NEXT: __local float l1[256] __attribute__((aligned(16)));

// THREADS: // kind: reduction
// THREADS: reqd_work_group_size(256, 1, 1)
// THREADS: __local float l0[256];
// THREADS: long v{{[0-9]+}} = v{{[0-9]+}} % 64;
// THREADS: // kind: dot_general
// THREADS: __local float l0[288] __attribute__((aligned(16)));

// KEPT: accy.target = #accy.target<profile = "gpu", reduce_threads = 64>
// KEPT: "gpu.launch_func"(%{{.*}}) <{kernel = @kernels::@main_k{{[0-9]+}}_reduction

// The GPU dot's work-group is dot_tile x dot_tile work-items (default 16),
// each a register tile (8x8, halved down to 4x4 for a product this small):
// it stages dot_tile/4 k of a (4 dot_tile)-row lhs block and of a
// (4 dot_tile)-column rhs block (the lhs's k rows padded by 8), 16-byte aligned: a work-item reads its
// run of 4 rows (columns) of a staged k as one float4.
// TILE: // kind: dot_general
// TILE-NEXT: reqd_work_group_size(8, 8, 1)
// TILE-NEXT: __local float l0[80] __attribute__((aligned(16)));
// TILE-NEXT: __local float l1[64] __attribute__((aligned(16)));
// TILE: float4 v{{[0-9]+}} = *(__local float4*)(l0 + v{{[0-9]+}});

// One-work-item-per-tile kernels get work-groups of group_size items (CPU
// default 64): the dot's 6 register tiles (12 rows by 16 columns) run as 2
// groups of 4, not 1 of 6.
// GROUP: accy.target = #accy.target<group_size = 4>
// GROUP: %[[GRID:.*]] = arith.constant 2 : index
// GROUP-NEXT: arith.constant 1 : index
// GROUP-NEXT: arith.constant 1 : index
// GROUP-NEXT: %[[BLOCK:.*]] = arith.constant 4 : index
// GROUP: "gpu.launch_func"(%[[GRID]], %{{.*}}, %{{.*}}, %[[BLOCK]], {{.*}}@main_k1_dot_general
