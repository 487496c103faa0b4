// --ir-dump-dir writes the IR after each pass, one numbered file per pass.
// RUN: rm -rf %t && accy-opt %s -p canonicalize,cse --ir-dump-dir %t -o %t.final
// RUN: ls %t | filecheck %s --check-prefix=FILES
// RUN: filecheck %s --check-prefix=CANON < %t/01-canonicalize.mlir
// RUN: filecheck %s --check-prefix=CANON < %t/02-cse.mlir
// RUN: filecheck %s --check-prefix=CANON < %t.final

// FILES:      01-canonicalize.mlir
// FILES-NEXT: 02-cse.mlir
// FILES-NOT:  {{.}}

// CANON-LABEL: func.func @main
// CANON-NOT:   accy.neg
// CANON:       %[[E:.*]] = accy.exp %x
// CANON-NEXT:  func.return %[[E]]
func.func @main(%x: tensor<3xf32>) -> tensor<3xf32> {
  %0 = "accy.exp"(%x) : (tensor<3xf32>) -> tensor<3xf32>
  %1 = "accy.neg"(%0) : (tensor<3xf32>) -> tensor<3xf32>
  %2 = "accy.neg"(%1) : (tensor<3xf32>) -> tensor<3xf32>
  func.return %2 : tensor<3xf32>
}
