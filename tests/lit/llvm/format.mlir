// RUN: not accy-opt %s -p kernelize -t llvm 2>&1 | filecheck %s --check-prefix=OPENCL-FORMAT
// RUN: not accy-opt %s -p 'set-target{profile=gpu format=llvm-ir},kernelize' -t llvm 2>&1 | filecheck %s --check-prefix=GPU
// RUN: rm -rf %t && mkdir -p %t && not accy-opt %s -p 'set-target{profile=gpu},set-target{format=llvm-ir}' --reproducer-dir %t 2>&1 | filecheck %s --check-prefix=GPU
// The LLVM backend prints only modules whose target format is llvm-ir (the
// mirror image of tests/lit/opencl/format.mlir), and format=llvm-ir is a
// CPU-profile format: its kernels run a work-group's items one after the other.

builtin.module {
  func.func @main(%x: tensor<8xf32>) -> tensor<8xf32> {
    %e = "accy.exp"(%x) : (tensor<8xf32>) -> tensor<8xf32>
    func.return %e : tensor<8xf32>
  }
}

// OPENCL-FORMAT: accy-opt: error: llvm: the module's target asks for format 'opencl-c', but this backend prints 'llvm-ir' (set-target{format=llvm-ir} to print LLVM IR)
// OPENCL-FORMAT-NOT: define
// GPU: target format 'llvm-ir' needs profile 'cpu'{{.*}}use set-target{profile=cpu format=llvm-ir}
