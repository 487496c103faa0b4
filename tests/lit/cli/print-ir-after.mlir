// IR printed around passes goes to stderr, MLIR style; stdout keeps the result.
// RUN: accy-opt %s -p canonicalize,cse --print-ir-before=canonicalize --print-ir-after=cse -o %t 2>&1 | filecheck %s
// RUN: accy-opt %s -p canonicalize,cse --print-ir-after-all -o %t 2>&1 | filecheck %s --check-prefix=ALL

// CHECK:      // -----// IR before canonicalize //----- //
// CHECK:        accy.neg
// CHECK:        accy.neg
// CHECK:      // -----// IR after cse //----- //
// CHECK-NOT:    accy.neg
// CHECK:        func.return

// ALL:        // -----// IR after canonicalize //----- //
// ALL:        // -----// IR after cse //----- //
func.func @main(%x: tensor<3xf32>) -> tensor<3xf32> {
  %1 = "accy.neg"(%x) : (tensor<3xf32>) -> tensor<3xf32>
  %2 = "accy.neg"(%1) : (tensor<3xf32>) -> tensor<3xf32>
  func.return %2 : tensor<3xf32>
}
