// RUN: accy-opt %s -p 'set-target{format=llvm-ir},kernelize' -t llvm | filecheck %s
// RUN: accy-opt %s -p 'set-target{format=llvm-ir},kernelize' -t llvm | python -c "import sys, llvmlite.binding as l; l.parse_assembly(sys.stdin.read()).verify(); print('verified')" | filecheck %s --check-prefix=VERIFIED
// A row softmax (rows of 17: one vector of 16 and a tail) and a column
// softmax (a loop down the column) on the CPU profile, printed as LLVM IR
// for the host: the kernel ABI's signature, vector loads, phis of the
// work-group / work-item loops and of an scf.for's iter_args.

builtin.module {
  func.func @main(%x: tensor<5x17xf32>) -> (tensor<5x17xf32>, tensor<5x17xf32>) {
    %0 = "accy.softmax"(%x) <{axis = -1 : i64}> : (tensor<5x17xf32>) -> tensor<5x17xf32>
    %1 = "accy.softmax"(%x) <{axis = 0 : i64}> : (tensor<5x17xf32>) -> tensor<5x17xf32>
    func.return %0, %1 : tensor<5x17xf32>, tensor<5x17xf32>
  }
}

// CHECK:      target triple = "{{.+}}"
// CHECK:      target datalayout = "{{.+}}"
// CHECK:      define void @"main_k0_row_pipeline"(ptr %"buffers", i64 %"group_lo", i64 %"group_hi", i64 %"block") "target-cpu"="{{.+}}"
// CHECK:        %"b0" = load ptr, ptr %"b0.slot", align 8
// CHECK:        %"group.1" = phi  i64 [%"group_lo", %"entry"]
// CHECK:        %"thread" = phi  i64 [0, %"group"]
// CHECK:        load <16 x float>, ptr %{{.+}}, align 4
// CHECK:        call float @"llvm.vector.reduce.fmaximum.v16f32"(<16 x float>
// CHECK:        store <16 x float> %{{.+}}, ptr %{{.+}}, align 4
// CHECK:        ret void
// CHECK:      define void @"main_k1_row_pipeline"(ptr %"buffers", i64 %"group_lo", i64 %"group_hi", i64 %"block")
// CHECK:      for:
// CHECK-NEXT:   %"i" = phi  i64 [0, %"body"], [%"i.next", %"for.body"]
// CHECK-NEXT:   %{{.+}} = phi  float [0xfff0000000000000, %"body"], [%{{.+}}, %"for.body"]
// exp is inlined (vector_math): its polynomial, fused multiply-adds, no libm call.
// CHECK:        call float @"llvm.fma.f32"
// CHECK-NOT:    @"expf"

// VERIFIED: verified
