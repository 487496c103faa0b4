// --verify-diagnostics as mlir-opt has it, with right annotations in every
// form: the same line, @+N, @-N, @above, @below (stacked), -re, notes, and
// warnings and remarks a pass emits (test-diagnostics). Every chunk is
// checked on its own; all match, so the exit status is 0, nothing is said
// about the diagnostics, and the chunks that verify are printed.
// RUN: accy-opt %s --split-input-file --verify-diagnostics -p test-diagnostics 2>%t.err | filecheck %s
// RUN: not grep . %t.err

func.func @same_line(%x: tensor<3xf32>) -> tensor<3xf32> {
  %0 = "accy.exp"(%x) : (tensor<3xf32>) -> tensor<4xf32> // expected-error {{'accy.exp' op result 'result' has type tensor<4xf32>}}
  func.return %x : tensor<3xf32>
}

// -----

func.func @below_the_op(%x: tensor<3xf32>) -> tensor<f32> {
  %0 = "accy.reduce"(%x) <{kind = "sum", axes = array<i64: 3>}> : (tensor<3xf32>) -> tensor<f32>
  // expected-error @-1 {{axes 3 is out of range for rank 1}}
  func.return %0 : tensor<f32>
}

// -----

// An implicit broadcast: the error says what to write instead.
func.func @two_lines_up(%x: tensor<8xf32>, %y: tensor<1xf32>) -> tensor<8xf32> {
  // expected-error @+2 {{accy does not broadcast implicitly: make the shapes equal with accy.broadcast}}
  // (one annotation matches one diagnostic)
  %0 = "accy.add"(%x, %y) : (tensor<8xf32>, tensor<1xf32>) -> tensor<8xf32>
  func.return %0 : tensor<8xf32>
}

// -----

// -re: each {{...}} inside the text is a regular expression.
func.func @regex(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error-re @+1 {{operand #{{[0-9]+}} (%b) is used before it is defined (at line {{[0-9]+}}, column 3)}}
  %a = "accy.exp"(%b) : (tensor<4xf32>) -> tensor<4xf32>
  %b = "accy.exp"(%x) : (tensor<4xf32>) -> tensor<4xf32>
  func.return %a : tensor<4xf32>
}

// -----

// A pass's warnings and remarks; several annotations on one line.
// CHECK-LABEL: func.func @warned
func.func @warned(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-warning @below {{'accy.exp' op exp of an unbounded input}}
  // expected-remark @below {{kept as it is}}
  %0 = "accy.exp"(%x) {test.warning = "exp of an unbounded input", test.remark = "kept as it is"} : (tensor<4xf32>) -> tensor<4xf32>
  %1 = "accy.neg"(%0) {test.remark = "negated"} : (tensor<4xf32>) -> tensor<4xf32>
  // expected-remark @above {{'accy.neg' op negated}}
  func.return %1 : tensor<4xf32>
}

// -----

// A pass's error with a note at another op: the error fails the chunk (not
// printed), the note is matched where it points.
func.func @noted(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'accy.exp' op cannot be kept}}
  %0 = "accy.exp"(%x) {test.error = "cannot be kept"} : (tensor<4xf32>) -> tensor<4xf32>
  %1 = "accy.neg"(%0) {test.note = "because of this use"} : (tensor<4xf32>) -> tensor<4xf32> // expected-note {{because of this use}}
  func.return %1 : tensor<4xf32>
}

// -----

// Nothing expected, nothing produced: printed.
// CHECK-LABEL: func.func @clean
func.func @clean(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = "accy.exp"(%x) : (tensor<4xf32>) -> tensor<4xf32>
  func.return %0 : tensor<4xf32>
}
// CHECK-NOT: func.func
