// The analysis cache across passes: the first pass computes both test
// analyses (two misses, the dependent one asking for the base), a pass that
// preserves all keeps them (hits; the dependent one, found cached, no
// longer asks for the base), a pass that changes the IR and preserves
// nothing drops both, and the next pass recomputes them.
// RUN: accy-opt %s -p 'test-analysis-cache,test-analysis-cache,test-analysis-cache{preserve=none touch=true},test-analysis-cache' | filecheck %s

// CHECK:      // test-analysis: 4 ops; test-dependent-analysis: 8
// CHECK-NEXT: // cache: test-analysis: hits=1 misses=1 invalidations=0, test-dependent-analysis: hits=0 misses=1 invalidations=0
// CHECK-NEXT: // test-analysis: 4 ops; test-dependent-analysis: 8
// CHECK-NEXT: // cache: test-analysis: hits=2 misses=1 invalidations=0, test-dependent-analysis: hits=1 misses=1 invalidations=0
// CHECK-NEXT: // test-analysis: 4 ops; test-dependent-analysis: 8
// CHECK-NEXT: // cache: test-analysis: hits=3 misses=1 invalidations=0, test-dependent-analysis: hits=2 misses=1 invalidations=0
// CHECK-NEXT: // test-analysis: 4 ops; test-dependent-analysis: 8
// CHECK-NEXT: // cache: test-analysis: hits=4 misses=2 invalidations=1, test-dependent-analysis: hits=2 misses=2 invalidations=1

func.func @main(%x: tensor<4x8xf32>) -> tensor<4xf32> {
  %e = "accy.exp"(%x) : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %s = "accy.reduce"(%e) <{kind = "sum", axes = array<i64: 1>}> : (tensor<4x8xf32>) -> tensor<4xf32>
  func.return %s : tensor<4xf32>
}
