// RUN: accy-opt %s --split-input-file --verify-diagnostics

// The verifiers of accy_kernel.vcmp / vselect / vcast name the problem (each
// error expected on its op's line, as mlir-opt's --verify-diagnostics checks).

func.func @f(%a: vector<4xf32>, %b: vector<4xf32>) {
  // expected-error @+1 {{'accy_kernel.vcmp' op predicate 'slt' is not a float predicate (one of false, oeq,}}
  %m = accy_kernel.vcmp "slt", %a, %b : vector<4xf32> -> vector<4xi1>
  func.return
}

// -----

func.func @f(%a: vector<4xi32>, %b: vector<4xi32>) {
  // expected-error @+1 {{'accy_kernel.vcmp' op predicate 'olt' is not an integer predicate (one of eq, ne,}}
  %m = accy_kernel.vcmp "olt", %a, %b : vector<4xi32> -> vector<4xi1>
  func.return
}

// -----

func.func @f(%a: vector<4xi32>, %b: vector<4xi32>) {
  // expected-error @+1 {{'accy_kernel.vcmp' op result must be vector<4xi1> for operands vector<4xi32>, got vector<8xi1>}}
  %m = accy_kernel.vcmp "eq", %a, %b : vector<4xi32> -> vector<8xi1>
  func.return
}

// -----

func.func @f(%m: vector<8xi1>, %a: vector<4xf32>, %b: vector<4xf32>) {
  // expected-error @+1 {{'accy_kernel.vselect' op condition must be vector<4xi1> for vector<4xf32>, got vector<8xi1>}}
  %s = accy_kernel.vselect %m, %a, %b : vector<8xi1>, vector<4xf32>
  func.return
}

// -----

func.func @f(%a: vector<4xf32>) {
  // expected-error @+1 {{'accy_kernel.vcast' op kind 'fptoui' is not one of fptosi, sitofp, extsi, trunci}}
  %i = accy_kernel.vcast "fptoui", %a : vector<4xf32> -> vector<4xi32>
  func.return
}

// -----

func.func @f(%a: vector<4xi32>) {
  // expected-error @+1 {{'accy_kernel.vcast' op extsi cannot convert vector<4xi32> to vector<4xi8> (bit widths)}}
  %i = accy_kernel.vcast "extsi", %a : vector<4xi32> -> vector<4xi8>
  func.return
}

// -----

func.func @f(%a: vector<4xi32>) {
  // expected-error @+1 {{'accy_kernel.vcast' op changes the vector shape: vector<4xi32> -> vector<8xf32>}}
  %i = accy_kernel.vcast "sitofp", %a : vector<4xi32> -> vector<8xf32>
  func.return
}

// -----

func.func @f(%a: f32) {
  // expected-error @+1 {{'accy_kernel.shuffle_xor' op mask must be in [0, 32), got 32}}
  %y = accy_kernel.shuffle_xor %a {mask = 32 : i64} : f32
  func.return
}

// -----

func.func @f(%a: f32) {
  // expected-error @+1 {{'accy_kernel.narrow_pair' op gives a vector<2xf16> or vector<2xbf16>, got vector<2xf32>}}
  %y = accy_kernel.narrow_pair %a, %a : vector<2xf32>
  func.return
}

// -----

func.func @f(%l: memref<64xf32, #gpu.address_space<workgroup>>, %i: index) {
  // expected-error @+1 {{'accy_kernel.ldmatrix' op transposes 16-bit elements only}}
  %r:4 = accy_kernel.ldmatrix trans %l[%i] : memref<64xf32, #gpu.address_space<workgroup>> -> f32, f32, f32, f32
  func.return
}

// -----

func.func @f(%l: memref<64xf64, #gpu.address_space<workgroup>>, %i: index) {
  // expected-error @+1 {{'accy_kernel.ldmatrix' op reads f16, bf16 or f32 elements}}
  %r:4 = accy_kernel.ldmatrix %l[%i] : memref<64xf64, #gpu.address_space<workgroup>> -> vector<2xf64>, vector<2xf64>, vector<2xf64>, vector<2xf64>
  func.return
}

// -----

func.func @f(%l: memref<64xf16, #gpu.address_space<workgroup>>, %i: index) {
  // expected-error @+1 {{'accy_kernel.ldmatrix' op gives four vector<2xf16>}}
  %r:4 = accy_kernel.ldmatrix %l[%i] : memref<64xf16, #gpu.address_space<workgroup>> -> f32, f32, f32, f32
  func.return
}
