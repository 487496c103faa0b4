// RUN: accy-opt %s -p 'print-analysis{analysis=bufferization}' | filecheck %s

// Arguments live from -1; a returned value lives to len(kernels). Views of
// stored values are refs into their base's buffer. A dead input's buffer is
// taken in place by an elementwise output of the same size; a freed buffer
// is reused by a later output.

// k0: h = W x (dot), k1: s = scan(h), k2: c = concat(s) (a copy),
// k3: t = tanh(exp(c)) in place over c, whose buffer is h's, freed after k1.
// CHECK-LABEL: bufferization @reuse: 4 buffers, peak 16896 bytes
// CHECK-NEXT:  buffer 0: 256 bytes, live -1..0 (input)
// CHECK-NEXT:  buffer 1: 16384 bytes, live -1..0 (input)
// CHECK-NEXT:  buffer 2: 256 bytes, live 0..4
// CHECK-NEXT:  buffer 3: 256 bytes, live 1..2
// CHECK-NEXT:  %x -> buffer 0
// CHECK-NEXT:  %w -> buffer 1
// CHECK-NEXT:  %h -> buffer 2
// CHECK-NEXT:  %s -> buffer 3
// CHECK-NEXT:  %c -> buffer 2
// CHECK-NEXT:  %t -> buffer 2
func.func @reuse(%x: tensor<64xf32>, %w: tensor<64x64xf32>) -> tensor<64xf32> {
  %h = "accy.dot_general"(%w, %x) <{lhs_batch = array<i64>, rhs_batch = array<i64>, lhs_contract = array<i64: 1>, rhs_contract = array<i64: 0>}> : (tensor<64x64xf32>, tensor<64xf32>) -> tensor<64xf32>
  %s = "accy.scan"(%h) <{kind = "max", axis = 0 : i64}> : (tensor<64xf32>) -> tensor<64xf32>
  %c = "accy.concat"(%s) <{axis = 0 : i64}> : (tensor<64xf32>) -> tensor<64xf32>
  %e = "accy.exp"(%c) : (tensor<64xf32>) -> tensor<64xf32>
  %t = "accy.tanh"(%e) : (tensor<64xf32>) -> tensor<64xf32>
  func.return %t : tensor<64xf32>
}

// Views into arguments and constants; a splat constant is one element read
// with stride 0. The transposes fuse into one elementwise kernel.
// CHECK-LABEL: bufferization @views: 5 buffers, peak 432 bytes
// CHECK-NEXT:  buffer 0: 192 bytes, live -1..1 (input)
// CHECK-NEXT:  buffer 1: 24 bytes, live -1..0 (input)
// CHECK-NEXT:  buffer 2: 4 bytes, live -1..0 (input)
// CHECK-NEXT:  buffer 3: 192 bytes, live 0..2
// CHECK-NEXT:  buffer 4: 48 bytes, live 1..2
// CHECK-NEXT:  %x -> buffer 0
// CHECK-NEXT:  %r -> buffer 1
// CHECK-NEXT:  %xt -> buffer 0 offset 0 strides [1, 8]
// CHECK-NEXT:  %rb -> buffer 1 offset 0 strides [0, 1]
// CHECK-NEXT:  %half -> buffer 2 offset 0 strides [0, 0]
// CHECK-NEXT:  %y -> buffer 3
// CHECK-NEXT:  %xs -> buffer 0 offset 1 strides [8, 2]
// CHECK-NEXT:  %z -> buffer 4
func.func @views(%x: tensor<6x8xf32>, %r: tensor<6xf32>) -> (tensor<6x8xf32>, tensor<6x2xf32>) {
  %xt = "accy.transpose"(%x) <{permutation = array<i64: 1, 0>}> : (tensor<6x8xf32>) -> tensor<8x6xf32>
  %rb = "accy.broadcast"(%r) <{dims = array<i64: 1>}> : (tensor<6xf32>) -> tensor<8x6xf32>
  %half = "accy.constant"() <{value = dense<0.5> : tensor<8x6xf32>}> : () -> tensor<8x6xf32>
  %m = "accy.mul"(%xt, %rb) : (tensor<8x6xf32>, tensor<8x6xf32>) -> tensor<8x6xf32>
  %a = "accy.add"(%m, %half) : (tensor<8x6xf32>, tensor<8x6xf32>) -> tensor<8x6xf32>
  %at = "accy.transpose"(%a) <{permutation = array<i64: 1, 0>}> : (tensor<8x6xf32>) -> tensor<6x8xf32>
  %y = "accy.sub"(%at, %x) : (tensor<6x8xf32>, tensor<6x8xf32>) -> tensor<6x8xf32>
  %xs = "accy.slice"(%x) <{start = array<i64: 0, 1>, limit = array<i64: 6, 5>, stride = array<i64: 1, 2>}> : (tensor<6x8xf32>) -> tensor<6x2xf32>
  %z = "accy.exp"(%xs) : (tensor<6x2xf32>) -> tensor<6x2xf32>
  func.return %y, %z : tensor<6x8xf32>, tensor<6x2xf32>
}

// In place only where each output element overwrites the input element it
// reads: %n reads %c directly (in place), %y reads %d transposed (not).
// CHECK-LABEL: bufferization @in_place: 4 buffers, peak 576 bytes
// CHECK:       %c -> buffer 1
// CHECK-NEXT:  %d -> buffer 2
// CHECK-NEXT:  %n -> buffer 1
// CHECK-NEXT:  %dt -> buffer 2 offset 0 strides [1, 8]
// CHECK-NEXT:  %y -> buffer 3
func.func @in_place(%x: tensor<6x8xf32>) -> (tensor<6x8xf32>, tensor<8x6xf32>) {
  %c = "accy.concat"(%x) <{axis = 0 : i64}> : (tensor<6x8xf32>) -> tensor<6x8xf32>
  %d = "accy.concat"(%x) <{axis = 1 : i64}> : (tensor<6x8xf32>) -> tensor<6x8xf32>
  %n = "accy.neg"(%c) : (tensor<6x8xf32>) -> tensor<6x8xf32>
  %dt = "accy.transpose"(%d) <{permutation = array<i64: 1, 0>}> : (tensor<6x8xf32>) -> tensor<8x6xf32>
  %y = "accy.neg"(%dt) : (tensor<8x6xf32>) -> tensor<8x6xf32>
  func.return %n, %y : tensor<6x8xf32>, tensor<8x6xf32>
}
