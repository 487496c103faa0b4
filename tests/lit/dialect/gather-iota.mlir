// accy.gather and accy.iota in the generic form: they parse, print in the
// custom form and re-parse to the same program; the generic form
// round-trips too.
// RUN: accy-opt %s | accy-opt | filecheck %s
// RUN: accy-opt %s --print-op-generic | accy-opt --print-op-generic | filecheck %s --check-prefix=GENERIC

// CHECK-LABEL: func.func @gather
func.func @gather(%x: tensor<5x3xf32>, %i: tensor<2x7xi32>, %j: tensor<i64>, %m: tensor<4xi1>, %k: tensor<0xi64>) -> (tensor<2x7x3xf32>, tensor<5x2x7xf32>, tensor<3xf32>, tensor<2x7xi1>, tensor<0x3xf32>) {
  // CHECK-NEXT: %0 = accy.gather %x, %i {axis = 0 : i64} : tensor<5x3xf32>, tensor<2x7xi32> -> tensor<2x7x3xf32>
  // GENERIC: %0 = "accy.gather"(%x, %i) <{axis = 0 : i64}> : (tensor<5x3xf32>, tensor<2x7xi32>) -> tensor<2x7x3xf32>
  %0 = "accy.gather"(%x, %i) <{axis = 0 : i64}> : (tensor<5x3xf32>, tensor<2x7xi32>) -> tensor<2x7x3xf32>
  // CHECK-NEXT: %1 = accy.gather %x, %i {axis = -1 : i64} : tensor<5x3xf32>, tensor<2x7xi32> -> tensor<5x2x7xf32>
  %1 = "accy.gather"(%x, %i) <{axis = -1 : i64}> : (tensor<5x3xf32>, tensor<2x7xi32>) -> tensor<5x2x7xf32>
  // A rank-0 index drops the axis.
  // CHECK-NEXT: %2 = accy.gather %x, %j {axis = 0 : i64} : tensor<5x3xf32>, tensor<i64> -> tensor<3xf32>
  %2 = accy.gather %x, %j {axis = 0 : i64} : tensor<5x3xf32>, tensor<i64> -> tensor<3xf32>
  // CHECK-NEXT: %3 = accy.gather %m, %i {axis = 0 : i64} : tensor<4xi1>, tensor<2x7xi32> -> tensor<2x7xi1>
  %3 = "accy.gather"(%m, %i) <{axis = 0 : i64}> : (tensor<4xi1>, tensor<2x7xi32>) -> tensor<2x7xi1>
  // CHECK-NEXT: %4 = accy.gather %x, %k {axis = 0 : i64} : tensor<5x3xf32>, tensor<0xi64> -> tensor<0x3xf32>
  %4 = "accy.gather"(%x, %k) <{axis = 0 : i64}> : (tensor<5x3xf32>, tensor<0xi64>) -> tensor<0x3xf32>
  func.return %0, %1, %2, %3, %4 : tensor<2x7x3xf32>, tensor<5x2x7xf32>, tensor<3xf32>, tensor<2x7xi1>, tensor<0x3xf32>
}

// CHECK-LABEL: func.func @iota
func.func @iota() -> (tensor<7xi32>, tensor<3x5xi64>, tensor<3x5xf32>, tensor<2x0xf16>, tensor<4xf64>) {
  // CHECK-NEXT: %0 = accy.iota {dimension = 0 : i64} : tensor<7xi32>
  // GENERIC: %0 = "accy.iota"() <{dimension = 0 : i64}> : () -> tensor<7xi32>
  %0 = "accy.iota"() <{dimension = 0 : i64}> : () -> tensor<7xi32>
  // CHECK-NEXT: %1 = accy.iota {dimension = 1 : i64} : tensor<3x5xi64>
  %1 = "accy.iota"() <{dimension = 1 : i64}> : () -> tensor<3x5xi64>
  // CHECK-NEXT: %2 = accy.iota {dimension = -2 : i64} : tensor<3x5xf32>
  %2 = accy.iota {dimension = -2 : i64} : tensor<3x5xf32>
  // CHECK-NEXT: %3 = accy.iota {dimension = 1 : i64} : tensor<2x0xf16>
  %3 = "accy.iota"() <{dimension = 1 : i64}> : () -> tensor<2x0xf16>
  // CHECK-NEXT: %4 = accy.iota {dimension = 0 : i64} : tensor<4xf64>
  %4 = "accy.iota"() <{dimension = 0 : i64}> : () -> tensor<4xf64>
  func.return %0, %1, %2, %3, %4 : tensor<7xi32>, tensor<3x5xi64>, tensor<3x5xf32>, tensor<2x0xf16>, tensor<4xf64>
}
