// RUN lamina-opt %s | FileCheck %s
// CHECK: func
func.func @f() { return }
