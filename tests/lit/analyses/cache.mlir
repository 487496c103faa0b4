// RUN: accy-opt %s --analysis-stats -p 'print-analysis{analysis=bufferization},cse,print-analysis{analysis=bufferization},decompose,print-analysis{analysis=schedule}' 2>&1 | filecheck %s

// cse changes nothing here: every analysis is kept and the second print is
// served from the cache. decompose rewrites softmax into primitives: the
// analyses are dropped and recomputed, and the softmax is still one kernel.

// CHECK:       bufferization @main: 2 buffers, peak 256 bytes
// CHECK:       bufferization @main: 2 buffers, peak 256 bytes
// CHECK:       schedule @main: 1 work items
// CHECK-NEXT:  item 0 row_pipeline: accy.reduce, {{.*}}, accy.div
// CHECK:       analyses:
// CHECK-DAG:   bufferization: hits=1, misses=1, invalidations=1,
// CHECK-DAG:   outlining: hits=0, misses=1, invalidations=1,
// CHECK-DAG:   schedule: hits=0, misses=2, invalidations=1, {{.*}}kernels=1
// CHECK-DAG:   shape-layout: hits=1, misses=2, invalidations=1,
func.func @main(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %y = "accy.softmax"(%x) <{axis = 1 : i64}> : (tensor<4x8xf32>) -> tensor<4x8xf32>
  func.return %y : tensor<4x8xf32>
}
