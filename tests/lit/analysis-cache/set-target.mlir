// set-target changes only the module's target, which no analysis reads: it
// preserves them, the schedule printed after it comes from the cache (a hit,
// no second miss), and the checking mode, recomputing every preserved
// analysis after the pass, agrees. A pass that changes a function body
// (decompose) preserves nothing: the schedule is computed again.
// RUN: accy-opt %s --check-preserved --analysis-stats -p 'print-analysis{analysis=bufferization},set-target{profile=gpu},print-analysis{analysis=schedule},decompose,print-analysis{analysis=schedule}' -o /dev/null 2>&1 | filecheck %s

// CHECK:      bufferization @main: 2 buffers
// CHECK:      schedule @main: 1 work items
// CHECK:      schedule @main: 1 work items
// CHECK:      pass timing:
// CHECK-NEXT:   print-analysis v{{[0-9]+}}: {{.*}} ms{{$}}
// CHECK-NEXT:   set-target v{{[0-9]+}}: {{.*}} ms (changed IR)
// CHECK-NEXT:   print-analysis v{{[0-9]+}}: {{.*}} ms{{$}}
// CHECK-NEXT:   decompose v{{[0-9]+}}: {{.*}} ms (changed IR)
// CHECK:      analyses:
// CHECK-DAG:    bufferization: hits=0, misses=1, invalidations=1,
// CHECK-DAG:    schedule: hits=1, misses=2, invalidations=1,
// CHECK-DAG:    shape-layout: hits={{[0-9]+}}, misses=2, invalidations=1,
func.func @main(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %y = "accy.softmax"(%x) <{axis = 1 : i64}> : (tensor<4x8xf32>) -> tensor<4x8xf32>
  func.return %y : tensor<4x8xf32>
}
