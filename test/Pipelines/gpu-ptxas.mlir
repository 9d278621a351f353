// REQUIRES: ptxas
// Every kernel assembles with ptxas, without register spills and without
// the infos that mean a slow kernel: C7508 (setmaxnreg ignored), C7510 /
// C7514 / C7515 / C7520 (wgmma serialised).
//
// RUN: lamina-opt %s --lamina-gpu-pipeline > %t.90a.mlir
// RUN: %python %lamina_src/utils/extract-ptx.py %t.90a.mlir %t.90a | FileCheck %s --check-prefix=COUNT
// RUN: %ptxas -arch=sm_90a -v %t.90a.0.ptx -o %t.cubin 2>&1 | FileCheck %s --check-prefixes=PTXAS,WIDE
// RUN: %ptxas -arch=sm_90a -v %t.90a.1.ptx -o %t.cubin 2>&1 | FileCheck %s --check-prefixes=PTXAS,NARROW
// RUN: %ptxas -arch=sm_90a -v %t.90a.2.ptx -o %t.cubin 2>&1 | FileCheck %s --check-prefixes=PTXAS,WIDE
// RUN: %ptxas -arch=sm_90a -v %t.90a.3.ptx -o %t.cubin 2>&1 | FileCheck %s --check-prefixes=PTXAS
// RUN: %ptxas -arch=sm_90a -v %t.90a.4.ptx -o %t.cubin 2>&1 | FileCheck %s --check-prefixes=PTXAS,WIDE
// RUN: lamina-opt %s "--lamina-gpu-pipeline=chip=sm_80" > %t.80.mlir
// RUN: %python %lamina_src/utils/extract-ptx.py %t.80.mlir %t.80 | FileCheck %s --check-prefix=COUNT
// RUN: %ptxas -arch=sm_80 -v %t.80.0.ptx -o %t.cubin 2>&1 | FileCheck %s --check-prefixes=PTXAS
// RUN: %ptxas -arch=sm_80 -v %t.80.1.ptx -o %t.cubin 2>&1 | FileCheck %s --check-prefixes=PTXAS
// RUN: %ptxas -arch=sm_80 -v %t.80.2.ptx -o %t.cubin 2>&1 | FileCheck %s --check-prefixes=PTXAS
// RUN: %ptxas -arch=sm_80 -v %t.80.3.ptx -o %t.cubin 2>&1 | FileCheck %s --check-prefixes=PTXAS
// RUN: lamina-opt %s "--lamina-gpu-pipeline=lns-sbdb=table" > %t.table.mlir
// RUN: %python %lamina_src/utils/extract-ptx.py %t.table.mlir %t.table | FileCheck %s --check-prefix=COUNT
// RUN: %ptxas -arch=sm_90a -v %t.table.3.ptx -o %t.cubin 2>&1 | FileCheck %s --check-prefixes=PTXAS
// RUN: %ptxas -arch=sm_90a -v %t.table.5.ptx -o %t.cubin 2>&1 | FileCheck %s --check-prefixes=PTXAS,SHARED

// COUNT: 6 PTX modules

// PTXAS-NOT:  C75{{[0-9][0-9]}}
// PTXAS:      0 bytes spill stores, 0 bytes spill loads
// Three warpgroups: 168 registers at entry, rebalanced by setmaxnreg.
// WIDE-NEXT:  Used 168 registers
// NARROW-NEXT: Used {{[0-9]+}} registers
// The f = 8 sbdb table (8734 i32) copied to shared memory.
// SHARED-NEXT: Used {{[0-9]+}} registers, used 1 barriers, 34936 bytes smem
// PTXAS-NOT:  C75{{[0-9][0-9]}}

func.func @gelu_wide(%x: tensor<256x1024xbf16>, %w: tensor<4096x1024xbf16>, %b: tensor<4096xbf16>) -> tensor<256x4096xbf16> {
  %y = lamina.linear_act "fc" %x, %w bias %b activation gelu_tanh
      : (tensor<256x1024xbf16>, tensor<4096x1024xbf16>, tensor<4096xbf16>) -> tensor<256x4096xbf16>
  return %y : tensor<256x4096xbf16>
}

func.func @decode_step(%x: tensor<2x8x512xf16>, %w: tensor<200x512xf16>, %b: tensor<200xf32>, %seed: i64) -> tensor<2x8x200xf32> {
  %y = lamina.linear_dropout "fc" %x, %w bias %b dropout <p = 0.1, training> seed %seed
      : (tensor<2x8x512xf16>, tensor<200x512xf16>, tensor<200xf32>, i64) -> tensor<2x8x200xf32>
  return %y : tensor<2x8x200xf32>
}

func.func @gelu_erf_partial(%x: tensor<200x256xbf16>, %w: tensor<384x256xbf16>, %b: tensor<384xbf16>) -> tensor<200x384xf32> {
  %y = lamina.linear_act "fc" %x, %w bias %b activation gelu_erf
      : (tensor<200x256xbf16>, tensor<384x256xbf16>, tensor<384xbf16>) -> tensor<200x384xf32>
  return %y : tensor<200x384xf32>
}

func.func @lns(%x: tensor<4x64x!lns.num<f = 10>>, %w: tensor<32x64x!lns.num<f = 10>>, %b: tensor<32x!lns.num<f = 12>>) -> tensor<4x32x!lns.num<f = 10>> {
  %y = lamina.linear "fc" %x, %w bias %b : (tensor<4x64x!lns.num<f = 10>>, tensor<32x64x!lns.num<f = 10>>, tensor<32x!lns.num<f = 12>>) -> tensor<4x32x!lns.num<f = 10>>
  return %y : tensor<4x32x!lns.num<f = 10>>
}

func.func @narrow_output(%x: tensor<128x256xbf16>, %w: tensor<64x256xbf16>) -> tensor<128x64xbf16> {
  %y = lamina.linear "fc" %x, %w : (tensor<128x256xbf16>, tensor<64x256xbf16>) -> tensor<128x64xbf16>
  return %y : tensor<128x64xbf16>
}

func.func @lns_f8(%x: tensor<4x64x!lns.num<f = 8>>, %w: tensor<32x64x!lns.num<f = 8>>) -> tensor<4x32x!lns.num<f = 8>> {
  %y = lamina.linear "fc" %x, %w : (tensor<4x64x!lns.num<f = 8>>, tensor<32x64x!lns.num<f = 8>>) -> tensor<4x32x!lns.num<f = 8>>
  return %y : tensor<4x32x!lns.num<f = 8>>
}
