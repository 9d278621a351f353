// RUN: lamina-opt %s -verify-diagnostics "--convert-lamina-to-gpu=chip=sm_70"

// expected-error @below {{unknown GPU chip 'sm_70': expected sm_90a (wgmma) or sm_80, sm_86, sm_89, sm_90 (mma.sync)}}
module {
  func.func @f(%x: tensor<16x64xbf16>, %w: tensor<64x64xbf16>) -> tensor<16x64xbf16> {
    %y = lamina.fused_linear "fc" %x, %w : (tensor<16x64xbf16>, tensor<64x64xbf16>) -> tensor<16x64xbf16>
    return %y : tensor<16x64xbf16>
  }
}
