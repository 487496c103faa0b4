// A failing pass reports itself, prints no IR as if it had succeeded, and
// leaves a reproducer holding the IR it was given, which replays the failure.
// RUN: rm -rf %t && not accy-opt %s -p canonicalize,test-fail --reproducer-dir %t > %t.stdout 2> %t.stderr
// RUN: filecheck %s < %t.stderr
// RUN: wc -c < %t.stdout | filecheck %s --check-prefix=EMPTY
// EMPTY: {{^}}0{{$}}
// RUN: filecheck %s --check-prefix=REPRO < %t/accy-repro-1.mlir
// RUN: not accy-opt %t/accy-repro-1.mlir -p test-fail --reproducer-dir %t 2>&1 | filecheck %s --check-prefix=REPLAY

// CHECK:      error: pass 'test-fail' failed: {{.+}}
// CHECK-NEXT: note: the IR the pass was given is in {{.*}}accy-repro-1.mlir
// CHECK-NEXT: note: reproduce with: accy-opt {{.*}}accy-repro-1.mlir -p 'test-fail'

// REPRO:      // accy-opt reproducer: accy-opt {{.*}}accy-repro-1.mlir -p 'test-fail'
// REPRO:      func.func @main
// REPRO-NOT:  accy.neg
// REPRO:      func.return

// REPLAY:     error: pass 'test-fail' failed
func.func @main(%x: tensor<3xf32>) -> tensor<3xf32> {
  %1 = "accy.neg"(%x) : (tensor<3xf32>) -> tensor<3xf32>
  %2 = "accy.neg"(%1) : (tensor<3xf32>) -> tensor<3xf32>
  func.return %2 : tensor<3xf32>
}
