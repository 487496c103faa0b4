// RUN: not accy-opt %s -p 'set-target{format=llvm-ir},kernelize' -t opencl 2>&1 | filecheck %s --check-prefix=REFUSED
// RUN: accy-opt %s -p 'set-target{format=llvm-ir},kernelize,set-target{format=opencl-c}' -t opencl | filecheck %s --check-prefix=OPENCL
// The OpenCL C backend prints only modules whose target format is opencl-c:
// asking for another artifact is an error, not OpenCL C printed regardless.

builtin.module {
  func.func @main(%x: tensor<8xf32>) -> tensor<8xf32> {
    %e = "accy.exp"(%x) : (tensor<8xf32>) -> tensor<8xf32>
    func.return %e : tensor<8xf32>
  }
}

// REFUSED: accy-opt: error: opencl: the module's target asks for format 'llvm-ir', but this backend prints 'opencl-c'
// REFUSED-NOT: __kernel
// OPENCL: __kernel void main_k{{[0-9]+}}_elementwise(
