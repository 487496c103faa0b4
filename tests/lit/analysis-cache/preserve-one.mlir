// A pass that changes the IR but preserves test-analysis keeps it; the
// dependent analysis, not preserved, is dropped and recomputed from the
// cached base (a hit, not a miss).
// RUN: accy-opt %s -p 'test-analysis-cache{preserve=test-analysis touch=true},test-analysis-cache' | filecheck %s

// CHECK:      // cache: test-analysis: hits=1 misses=1 invalidations=0, test-dependent-analysis: hits=0 misses=1 invalidations=0
// CHECK:      // cache: test-analysis: hits=3 misses=1 invalidations=0, test-dependent-analysis: hits=0 misses=2 invalidations=1

// --check-preserved recomputes every analysis a pass preserved and compares
// it with the cached one: the attribute added above leaves the op count
// right, so the claim holds ...
// RUN: accy-opt %s --check-preserved -p 'test-analysis-cache{preserve=test-analysis touch=true},test-analysis-cache' -o /dev/null | filecheck %s
// ... while a pass that adds an op but claims to preserve the stale count fails.
// RUN: rm -rf %t && not accy-opt %s -p test-rewrite-claiming-preserved --check-preserved --reproducer-dir %t 2>&1 | filecheck %s --check-prefix=LIE
// LIE: error: pass 'test-rewrite-claiming-preserved' failed: pass 'test-rewrite-claiming-preserved' claims to preserve analyses (all), but 'test-analysis' of 'builtin.module', recomputed after the pass, differs from the cached result
// LIE: note: reproduce with: accy-opt {{.*}}accy-repro-1.mlir -p 'test-rewrite-claiming-preserved' --check-preserved

func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  func.return %x : tensor<4xf32>
}
