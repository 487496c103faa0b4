// Every registered pass and analysis is listed with its version and summary.
// RUN: accy-opt --list-passes | filecheck %s
// RUN: accy-opt --list-analyses | filecheck %s --check-prefix=ANALYSES
// RUN: accy-opt --list-passes --list-analyses | filecheck %s --check-prefixes=CHECK,ANALYSES

// CHECK:      Passes:
// CHECK:        canonicalize {{ +}}v{{[0-9]+}}  Folds constants
// CHECK-NEXT:   cse {{ +}}v0  xDSL's common-subexpression elimination: {{.+}}
// CHECK-NEXT:   dce {{ +}}v0  xDSL's dead-code elimination: {{.+}}
// CHECK-NEXT:   decompose {{ +}}v{{[0-9]+}}  Rewrites accy.softmax{{.+}}
// CHECK-NEXT:   inline {{ +}}v{{[0-9]+}}  Inlines every func.call{{.+}}
// CHECK-NEXT:   loop-invariant-code-motion {{ +}}v1  Moves the ops of `accy.iterate` bodies{{.+}}
// CHECK-NEXT:   widen-accumulation {{ +}}v4  Float16 and bfloat16 `accy.dot_general`s{{.+}}
// CHECK-NEXT:   compute-half-in-f32 {{ +}}v1  Rewrites every op that computes on bf16{{.+}}
// CHECK-NEXT:   print-analysis {{ +}}v{{[0-9]+}}  Prints the named analysis{{.+}}
// CHECK-NEXT:   test-analysis-cache {{ +}}v1  {{.+}}
// CHECK-NEXT:   test-rewrite-claiming-preserved {{ +}}v1  {{.+}}
// CHECK:        test-fail {{ +}}v1  Raises an error
// CHECK-NEXT:   set-target {{ +}}v{{[0-9]+}}  Sets the module's target profile{{.*}}
// CHECK-NEXT:   kernelize {{ +}}v{{[0-9]+}}  Lowers each tensor function to kernels{{.+}}

// ANALYSES:   Analyses:
// ANALYSES:     test-analysis {{ +}}v1  Counts the operations
// ANALYSES-NEXT: test-dependent-analysis {{ +}}v1  {{.+}}
// ANALYSES-NEXT: shape-layout {{ +}}v{{[0-9]+}}  Shape, element type{{.+}}
// ANALYSES-NEXT: schedule {{ +}}v{{[0-9]+}}  The work items{{.+}}
// ANALYSES-NEXT: outlining {{ +}}v{{[0-9]+}}  One kernel per work item{{.+}}
// ANALYSES-NEXT: bufferization {{ +}}v{{[0-9]+}}  Buffers for the values{{.+}}
