// Every registered pass and analysis is listed with its version and summary.
// RUN: accy-opt --list-passes | filecheck %s
// RUN: accy-opt --list-analyses | filecheck %s --check-prefix=ANALYSES
// RUN: accy-opt --list-passes --list-analyses | filecheck %s --check-prefixes=CHECK,ANALYSES

// CHECK:      Passes:
// CHECK:        canonicalize {{ +}}v{{[0-9]+}}  Folds constants
// CHECK:        test-fail {{ +}}v1  Raises an error

// ANALYSES:   Analyses:
// ANALYSES:     test-analysis {{ +}}v1  Counts the operations
