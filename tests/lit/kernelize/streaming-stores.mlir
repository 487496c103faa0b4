// RUN: accy-opt %s --split-input-file -p kernelize | filecheck %s
// RUN: accy-opt %s --split-input-file -p kernelize -t opencl | filecheck %s --check-prefix=CL
// RUN: accy-opt %s --split-input-file -p 'set-target{format=llvm-ir},kernelize' -t llvm | filecheck %s --check-prefix=LLVM
// RUN: accy-opt %s --split-input-file -p 'set-target{profile=gpu},kernelize' | filecheck %s --check-prefix=GPU

// Outputs of at least `stream_bytes` (here every one) are stored around the
// caches on the CPU profile: vector stores marked nontemporal, where a
// vector starts at a multiple of W (rows of 32: every vector), the tail
// plainly. A cumsum along rows:
builtin.module attributes {accy.target = #accy.target<stream_bytes = 4>} {
  func.func @main(%x: tensor<4x32xf32>) -> tensor<4x32xf32> {
    %s = "accy.scan"(%x) <{kind = "sum", axis = 1 : i64, exclusive = false, reverse = false}> : (tensor<4x32xf32>) -> tensor<4x32xf32>
    func.return %s : tensor<4x32xf32>
  }
}

// CHECK:      scf.for {{.*}} -> (vector<16xf32>)
// CHECK:        vector.store {{.*}} {nontemporal = true} : memref<128xf32>, vector<16xf32>
// CL:         #define accy_stream_store(T, v, p) __builtin_nontemporal_store((v), (__global T*)(p))
// CL:         accy_stream_store(float16, {{.*}}, b1 + {{.*}});
// LLVM:       store <16 x float> {{.*}}, align 64, !nontemporal
// GPU-NOT:    nontemporal

// -----

// A softmax: its sum pass keeps exp(x - max) in the output's row (plain
// stores: the write pass reads them back), and the write pass divides it
// by the sum in place, by plain stores however large the output: its lines
// are in the cache (a streaming store would write each back around it).
// exp is computed once an element.
builtin.module attributes {accy.target = #accy.target<stream_bytes = 4>} {
  func.func @main(%x: tensor<4x32xf32>) -> tensor<4x32xf32> {
    %s = "accy.softmax"(%x) <{axis = 1 : i64}> : (tensor<4x32xf32>) -> tensor<4x32xf32>
    func.return %s : tensor<4x32xf32>
  }
}

// CHECK:      arith.maximumf {{.*}} : vector<16xf32>
// CHECK:      scf.for
// CHECK:        %[[E:.*]] = math.exp {{.*}} : vector<16xf32>
// CHECK:        vector.store %[[E]], %1[{{.*}}] : memref<128xf32>, vector<16xf32>
// CHECK:        arith.addf {{.*}}, %[[E]] : vector<16xf32>
// CHECK:      scf.for
// CHECK-NOT:    math.exp
// CHECK:        %[[K:.*]] = vector.load %1[{{.*}}] : memref<128xf32>, vector<16xf32>
// CHECK:        %[[Q:.*]] = arith.divf %[[K]], {{.*}} : vector<16xf32>
// CHECK:        vector.store %[[Q]], %1[{{.*}}] : memref<128xf32>, vector<16xf32>
// CHECK-NOT:    nontemporal
// CHECK:      accy.kind = "row_pipeline"
