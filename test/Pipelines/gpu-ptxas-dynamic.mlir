// REQUIRES: ptxas
// Kernels of layers whose rows are only known at run time assemble too,
// without spills or serialised wgmma.
//
// RUN: lamina-opt %s --lamina-gpu-pipeline > %t.90a.mlir
// RUN: %python %lamina_src/utils/extract-ptx.py %t.90a.mlir %t.90a | FileCheck %s --check-prefix=COUNT
// RUN: %ptxas -arch=sm_90a -v %t.90a.0.ptx -o %t.cubin 2>&1 | FileCheck %s
// RUN: %ptxas -arch=sm_90a -v %t.90a.1.ptx -o %t.cubin 2>&1 | FileCheck %s
// RUN: lamina-opt %s "--lamina-gpu-pipeline=chip=sm_80" > %t.80.mlir
// RUN: %python %lamina_src/utils/extract-ptx.py %t.80.mlir %t.80 | FileCheck %s --check-prefix=COUNT
// RUN: %ptxas -arch=sm_80 -v %t.80.0.ptx -o %t.cubin 2>&1 | FileCheck %s
// RUN: %ptxas -arch=sm_80 -v %t.80.1.ptx -o %t.cubin 2>&1 | FileCheck %s

// COUNT: 2 PTX modules
// CHECK-NOT: C75{{[0-9][0-9]}}
// CHECK:     0 bytes spill stores, 0 bytes spill loads
// CHECK-NOT: C75{{[0-9][0-9]}}

func.func @gelu(%x: tensor<?x8x256xbf16>, %w: tensor<512x256xbf16>, %b: tensor<512xbf16>) -> tensor<?x8x512xbf16> {
  %y = lamina.linear_act "fc" %x, %w bias %b activation gelu_tanh
      : (tensor<?x8x256xbf16>, tensor<512x256xbf16>, tensor<512xbf16>) -> tensor<?x8x512xbf16>
  return %y : tensor<?x8x512xbf16>
}

func.func @lns(%x: tensor<?x64x!lns.num<f = 10>>, %w: tensor<32x64x!lns.num<f = 10>>) -> tensor<?x32x!lns.num<f = 10>> {
  %y = lamina.linear "fc" %x, %w : (tensor<?x64x!lns.num<f = 10>>, tensor<32x64x!lns.num<f = 10>>) -> tensor<?x32x!lns.num<f = 10>>
  return %y : tensor<?x32x!lns.num<f = 10>>
}
