// Shape-op chains: transposes compose, reshapes compose, and identity
// transposes, reshapes, broadcasts and slices disappear.
// RUN: accy-opt %s -p canonicalize | filecheck %s

// transpose [1,2,0] then [2,0,1] is the identity.
// CHECK-LABEL: func.func @transpose_identity
// CHECK-NEXT:    func.return %x : tensor<2x3x5xf32>
func.func @transpose_identity(%x: tensor<2x3x5xf32>) -> tensor<2x3x5xf32> {
  %0 = "accy.transpose"(%x) <{permutation = array<i64: 1, 2, 0>}> : (tensor<2x3x5xf32>) -> tensor<3x5x2xf32>
  %1 = "accy.transpose"(%0) <{permutation = array<i64: 2, 0, 1>}> : (tensor<3x5x2xf32>) -> tensor<2x3x5xf32>
  func.return %1 : tensor<2x3x5xf32>
}

// [1,2,0] then [1,0,2]: result dim i = x dim p1[p2[i]] = [2,1,0].
// CHECK-LABEL: func.func @transpose_compose
// CHECK-NEXT:    %{{.*}} = accy.transpose %x {permutation = array<i64: 2, 1, 0>} : tensor<2x3x5xf32> -> tensor<5x3x2xf32>
// CHECK-NEXT:    func.return
func.func @transpose_compose(%x: tensor<2x3x5xf32>) -> tensor<5x3x2xf32> {
  %0 = "accy.transpose"(%x) <{permutation = array<i64: 1, 2, 0>}> : (tensor<2x3x5xf32>) -> tensor<3x5x2xf32>
  %1 = "accy.transpose"(%0) <{permutation = array<i64: 1, 0, 2>}> : (tensor<3x5x2xf32>) -> tensor<5x3x2xf32>
  func.return %1 : tensor<5x3x2xf32>
}

// CHECK-LABEL: func.func @transpose_trivial
// CHECK-NEXT:    func.return %x : tensor<2x3xf32>
func.func @transpose_trivial(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %0 = "accy.transpose"(%x) <{permutation = array<i64: 0, 1>}> : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %0 : tensor<2x3xf32>
}

// The intermediate transpose has another user: it stays, the second one folds.
// CHECK-LABEL: func.func @transpose_shared
// CHECK-NEXT:    %[[T:.*]] = accy.transpose %x {permutation = array<i64: 1, 0>}
// CHECK-NEXT:    func.return %x, %[[T]]
func.func @transpose_shared(%x: tensor<2x3xf32>) -> (tensor<2x3xf32>, tensor<3x2xf32>) {
  %0 = "accy.transpose"(%x) <{permutation = array<i64: 1, 0>}> : (tensor<2x3xf32>) -> tensor<3x2xf32>
  %1 = "accy.transpose"(%0) <{permutation = array<i64: 1, 0>}> : (tensor<3x2xf32>) -> tensor<2x3xf32>
  func.return %1, %0 : tensor<2x3xf32>, tensor<3x2xf32>
}

// CHECK-LABEL: func.func @reshape_chain
// CHECK-NEXT:    %{{.*}} = accy.reshape %x : tensor<2x3x5xf32> -> tensor<30xf32>
// CHECK-NEXT:    func.return
func.func @reshape_chain(%x: tensor<2x3x5xf32>) -> tensor<30xf32> {
  %0 = "accy.reshape"(%x) : (tensor<2x3x5xf32>) -> tensor<6x5xf32>
  %1 = "accy.reshape"(%0) : (tensor<6x5xf32>) -> tensor<5x6xf32>
  %2 = "accy.reshape"(%1) : (tensor<5x6xf32>) -> tensor<30xf32>
  func.return %2 : tensor<30xf32>
}

// CHECK-LABEL: func.func @reshape_back
// CHECK-NEXT:    func.return %x, %x : tensor<2x3x5xf32>, tensor<2x3x5xf32>
func.func @reshape_back(%x: tensor<2x3x5xf32>) -> (tensor<2x3x5xf32>, tensor<2x3x5xf32>) {
  %0 = "accy.reshape"(%x) : (tensor<2x3x5xf32>) -> tensor<30xf32>
  %1 = "accy.reshape"(%0) : (tensor<30xf32>) -> tensor<2x3x5xf32>
  %2 = "accy.reshape"(%x) : (tensor<2x3x5xf32>) -> tensor<2x3x5xf32>
  func.return %1, %2 : tensor<2x3x5xf32>, tensor<2x3x5xf32>
}

// A broadcast onto the same shape with dims 0..r-1 is x; one that moves size-1
// dims or grows a dim is not.
// CHECK-LABEL: func.func @broadcast
// CHECK-NEXT:    %[[B:.*]] = accy.broadcast %x {dims = array<i64: 0, 1>} : tensor<3x1xf32> -> tensor<3x4xf32>
// CHECK-NEXT:    func.return %x, %[[B]]
func.func @broadcast(%x: tensor<3x1xf32>) -> (tensor<3x1xf32>, tensor<3x4xf32>) {
  %0 = "accy.broadcast"(%x) <{dims = array<i64: 0, 1>}> : (tensor<3x1xf32>) -> tensor<3x1xf32>
  %1 = "accy.broadcast"(%x) <{dims = array<i64: 0, 1>}> : (tensor<3x1xf32>) -> tensor<3x4xf32>
  func.return %0, %1 : tensor<3x1xf32>, tensor<3x4xf32>
}

// CHECK-LABEL: func.func @slice
// CHECK-NEXT:    %[[S:.*]] = accy.slice %x {start = array<i64: 0, 1>, limit = array<i64: 1, 17>, stride = array<i64: 1, 1>}
// CHECK-NEXT:    func.return %x, %x, %[[S]]
func.func @slice(%x: tensor<1x17xf32>) -> (tensor<1x17xf32>, tensor<1x17xf32>, tensor<1x16xf32>) {
  %0 = "accy.slice"(%x) <{start = array<i64: 0, 0>, limit = array<i64: 1, 17>, stride = array<i64: 1, 1>}> : (tensor<1x17xf32>) -> tensor<1x17xf32>
  %1 = "accy.slice"(%x) <{start = array<i64: 0, 0>, limit = array<i64: 1, 17>, stride = array<i64: 5, 1>}> : (tensor<1x17xf32>) -> tensor<1x17xf32>
  %2 = "accy.slice"(%x) <{start = array<i64: 0, 1>, limit = array<i64: 1, 17>, stride = array<i64: 1, 1>}> : (tensor<1x17xf32>) -> tensor<1x16xf32>
  func.return %0, %1, %2 : tensor<1x17xf32>, tensor<1x17xf32>, tensor<1x16xf32>
}
