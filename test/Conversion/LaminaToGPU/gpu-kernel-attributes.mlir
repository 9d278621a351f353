// RUN: lamina-opt %s --pass-pipeline="builtin.module(gpu.module(lamina-gpu-kernel-attributes))" | FileCheck %s

// A kernel that resizes its warpgroups' registers declares one CTA per SM
// (ptxas ignores setmaxnreg otherwise); other kernels and device functions
// are left alone.

gpu.module @kernels {
  // CHECK-LABEL: gpu.func @warp_specialised
  // CHECK-SAME:    kernel attributes {nvvm.minctasm = 1 : i32}
  gpu.func @warp_specialised() kernel {
    nvvm.setmaxregister increase 232
    gpu.return
  }

  // CHECK-LABEL: gpu.func @plain
  // CHECK-NOT:     nvvm.minctasm
  // CHECK:         gpu.return
  gpu.func @plain() kernel {
    gpu.return
  }

  // CHECK-LABEL: gpu.func @helper
  // CHECK-NOT:     nvvm.minctasm
  // CHECK:         gpu.return
  gpu.func @helper() {
    nvvm.setmaxregister decrease 40
    gpu.return
  }
}
