// A pass that changes the IR but preserves test-analysis keeps it; the
// dependent analysis, not preserved, is dropped and recomputed from the
// cached base (a hit, not a miss).
// RUN: accy-opt %s -p 'test-analysis-cache{preserve=test-analysis touch=true},test-analysis-cache' | filecheck %s

// CHECK:      // cache: test-analysis: hits=1 misses=1 invalidations=0, test-dependent-analysis: hits=0 misses=1 invalidations=0
// CHECK:      // cache: test-analysis: hits=3 misses=1 invalidations=0, test-dependent-analysis: hits=0 misses=2 invalidations=1

// --check-preserved catches a pass that changes the IR while claiming to
// preserve every analysis.
// RUN: rm -rf %t && not accy-opt %s -p test-rewrite-claiming-preserved --check-preserved --reproducer-dir %t 2>&1 | filecheck %s --check-prefix=LIE
// LIE: test-rewrite-claiming-preserved{{.*}}changed the IR but claims to preserve analyses (all)

func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  func.return %x : tensor<4xf32>
}
