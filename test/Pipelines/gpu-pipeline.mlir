// RUN: lamina-opt %s -split-input-file "--lamina-gpu-pipeline=cuda-path=none" | FileCheck %s
// RUN: lamina-opt %s -split-input-file "--lamina-gpu-pipeline=chip=sm_80 cuda-path=none" | FileCheck %s --check-prefix=SM80

// The whole program reaches host LLVM + one PTX module per layer, with no
// CUDA toolkit (cuda-path=none: GELU needs no libdevice).
// The host builds TMA descriptors and launches with 192 KiB of dynamic
// shared memory; the kernel is a TMA/mbarrier ring feeding wgmma, with the
// warpgroups' registers rebalanced and the epilogue in registers.

// CHECK-LABEL: llvm.func @gelu(
// CHECK:       llvm.call @mgpuTensorMapEncodeTiledMemref
// CHECK:       llvm.call @mgpuTensorMapEncodeTiledMemref
// CHECK:       gpu.launch_func @gelu_kernel::@gelu_kernel blocks in ({{.*}}) threads in ({{.*}}) : i64 dynamic_shared_memory_size %{{.+}}
// CHECK:       llvm.func @_mlir_ciface_gelu(
// CHECK:       gpu.binary @gelu_kernel [#gpu.object<#nvvm.target<O = 3, chip = "sm_90a", features = "+ptx80">
// CHECK-SAME:    .target sm_90a
// CHECK-SAME:    .extern .shared .align 1024 .b8 lamina_dyn_smem[];
// CHECK-SAME:    .maxntid 384, 1, 1
// CHECK-SAME:    .minnctapersm 1
// CHECK-SAME:    mbarrier.init.shared.b64
// CHECK-SAME:    setmaxnreg.dec.sync.aligned.u32 \0940;
// CHECK-SAME:    mbarrier.try_wait.parity.shared.b64
// CHECK-SAME:    mbarrier.arrive.expect_tx.shared.b64
// CHECK-SAME:    cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes
// CHECK-SAME:    setmaxnreg.inc.sync.aligned.u32 \09232;
// CHECK-SAME:    wgmma.fence.sync.aligned;
// CHECK-SAME:    wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16
// CHECK-SAME:    wgmma.commit_group.sync.aligned;
// CHECK-SAME:    wgmma.wait_group.sync.aligned \091;
// CHECK-SAME:    fma.rn.f32
// CHECK-SAME:    cvt.rn.bf16x2.f32
// CHECK-NOT:     __nv_

// SM80-LABEL: llvm.func @gelu(
// SM80-NOT:   mgpuTensorMapEncodeTiledMemref
// SM80:       gpu.binary @gelu_kernel [#gpu.object<#nvvm.target<O = 3, chip = "sm_80", features = "+ptx80">
// SM80-SAME:    cp.async.cg.shared.global
// SM80-SAME:    cp.async.commit_group;
// SM80-SAME:    cp.async.wait_group \092;
// SM80-SAME:    ldmatrix.sync.aligned.m8n8.x4.shared.b16
// SM80-SAME:    mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32
// SM80-NOT:     __nv_

func.func @gelu(%x: tensor<256x1024xbf16>, %w: tensor<4096x1024xbf16>, %b: tensor<4096xbf16>) -> tensor<256x4096xbf16> {
  %y = lamina.linear_act "fc" %x, %w bias %b activation gelu_tanh
      : (tensor<256x1024xbf16>, tensor<4096x1024xbf16>, tensor<4096xbf16>) -> tensor<256x4096xbf16>
  return %y : tensor<256x4096xbf16>
}

// -----

// Few rows: 64×64 tiles, one consumer warpgroup (256 threads), 128 KiB ring.

// CHECK-LABEL: llvm.func @decode_step(
// CHECK:       gpu.binary @decode_step_kernel
// CHECK-SAME:    .maxntid 256, 1, 1
// CHECK-SAME:    wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16

// SM80-LABEL: llvm.func @decode_step(
// SM80:       mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32

func.func @decode_step(%x: tensor<16x512xf16>, %w: tensor<1024x512xf16>) -> tensor<16x1024xf32> {
  %y = lamina.linear "fc" %x, %w : (tensor<16x512xf16>, tensor<1024x512xf16>) -> tensor<16x1024xf32>
  return %y : tensor<16x1024xf32>
}
