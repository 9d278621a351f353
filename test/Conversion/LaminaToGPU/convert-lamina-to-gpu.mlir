// RUN: lamina-opt %s -split-input-file --lamina-decompose --lamina-fuse-epilogues --convert-lamina-to-gpu | FileCheck %s
// RUN: lamina-opt %s -split-input-file --lamina-decompose --lamina-fuse-epilogues "--convert-lamina-to-gpu=chip=sm_80" | FileCheck %s --check-prefix=SM80

// sm_90a, 256 tokens: 128×256 tiles, one producer and two consumer
// warpgroups, a 4-stage TMA ring; W stays [N, K] (K-major B operand).

// CHECK-LABEL: func.func @gelu_bf16(
// CHECK-SAME:    %[[X:.+]]: memref<256x1024xbf16>, %[[W:.+]]: memref<4096x1024xbf16>, %[[B:.+]]: memref<4096xbf16>, %[[OUT:.+]]: memref<256x4096xbf16>)
// CHECK-SAME:    attributes {llvm.emit_c_interface}
// CHECK:       %[[UX:.+]] = memref.cast %[[X]] : memref<256x1024xbf16> to memref<*xbf16>
// CHECK:       nvgpu.tma.create.descriptor %[[UX]] box[%{{.+}}, %{{.+}}] : memref<*xbf16> -> <tensor = memref<128x64xbf16, 3>, swizzle = swizzle_128b, l2promo = l2promo_256b, oob = zero, interleave = none>
// CHECK:       %[[UW:.+]] = memref.cast %[[W]]
// CHECK:       nvgpu.tma.create.descriptor %[[UW]] box[%{{.+}}, %{{.+}}] : memref<*xbf16> -> <tensor = memref<256x64xbf16, 3>, swizzle = swizzle_128b
// CHECK:       %[[SMEM:.+]] = arith.constant 196608 : i32
// 2 × 16 output tiles on a 1-D grid, taken in groups of 8 row blocks.
// CHECK:       gpu.launch blocks(%[[PID:[^,]+]], {{.*}}) in ({{.*}} = %c32{{(_[0-9]+)?}}, {{.*}} = %c1{{(_[0-9]+)?}}, {{.*}} = %c1{{(_[0-9]+)?}}) threads({{.*}}) in ({{.*}} = %c384{{(_[0-9]+)?}}, {{.*}}) dynamic_shared_memory_size %[[SMEM]]
// CHECK:         %[[GROUP:.+]] = arith.divui %[[PID]], %c128{{(_[0-9]+)?}}
// CHECK:         arith.minui %{{.+}}, %c8{{(_[0-9]+)?}}
// CHECK:         memref.get_global @lamina_dyn_smem : memref<0xi8, 3>
// CHECK:         %[[FULL:.+]] = nvgpu.mbarrier.create -> <memorySpace = #gpu.address_space<workgroup>, num_barriers = 4>
// CHECK:         %[[EMPTY:.+]] = nvgpu.mbarrier.create
// CHECK-COUNT-4: nvgpu.mbarrier.init %[[EMPTY]][%{{.+}}], %c256{{(_[0-9]+)?}}
// CHECK:         gpu.barrier
// Producer: one thread, empty → expect_tx(48 KiB) → two TMA loads.
// CHECK:         nvvm.setmaxregister decrease 40
// CHECK:         scf.for
// CHECK:           nvgpu.mbarrier.try_wait.parity %[[EMPTY]]
// CHECK:           nvgpu.mbarrier.arrive.expect_tx %[[FULL]][%{{.+}}], %c49152{{(_[0-9]+)?}}
// CHECK:           nvgpu.tma.async.load
// CHECK-SAME:        to %{{.+}} : <tensor = memref<128x64xbf16, 3>
// CHECK:           nvgpu.tma.async.load
// CHECK-SAME:        to %{{.+}} : <tensor = memref<256x64xbf16, 3>
// Consumers: the first K tile (scale-d zero), then the loop from 1.
// CHECK:         nvvm.setmaxregister increase 232
// CHECK:         nvgpu.mbarrier.try_wait.parity %[[FULL]]
// CHECK:         nvvm.wgmma.fence.aligned
// CHECK:         nvvm.wgmma.mma_async {{.*}}, <m = 64, n = 256, k = 16>, D[<f32>, <zero>], A[<bf16>, <one>, <row>], B[<bf16>, <one>, <col>]
// CHECK-COUNT-3: nvvm.wgmma.mma_async {{.*}} D[<f32>, <one>]
// CHECK:         nvvm.wgmma.commit.group.sync.aligned
// CHECK:         nvvm.wgmma.wait.group.sync.aligned 1
// CHECK:         scf.for %{{.+}} = %c1{{(_[0-9]+)?}} to %c16{{(_[0-9]+)?}}
// CHECK:           nvgpu.mbarrier.try_wait.parity %[[FULL]]
// CHECK-COUNT-4:   nvvm.wgmma.mma_async {{.*}} D[<f32>, <one>], A[<bf16>, <one>, <row>], B[<bf16>, <one>, <col>]
// CHECK:           nvvm.wgmma.wait.group.sync.aligned 1
// CHECK:           nvgpu.mbarrier.arrive %[[EMPTY]]
// CHECK:         nvvm.wgmma.wait.group.sync.aligned 0
// Epilogue in registers: bias, GELU, two bf16 per store; tiles divide the
// output, so no bounds checks.
// CHECK-NOT:     arith.cmpi ult
// CHECK:         llvm.extractvalue
// CHECK:         memref.load %[[B]]
// CHECK:         math.tanh
// CHECK:         arith.truncf %{{.+}} : vector<2xf32> to vector<2xbf16>
// CHECK:         vector.store %{{.+}}, %[[OUT]][%{{.+}}, %{{.+}}] {alignment = 4 : i64} : memref<256x4096xbf16>, vector<2xbf16>
// CHECK:       return

// SM80-LABEL: func.func @gelu_bf16(
// SM80:         gpu.launch blocks({{.*}}) in ({{.*}} = %c64{{(_[0-9]+)?}}, {{.*}} = %c1{{(_[0-9]+)?}}, {{.*}}) threads({{.*}}) in ({{.*}} = %c128{{(_[0-9]+)?}}, {{.*}}) dynamic_shared_memory_size %c61440_i32{{(_[0-9]+)?}}
// Prologue: two K tiles in flight, 16-byte cp.async that bypass L1.
// SM80-COUNT-8: nvgpu.device_async_copy {{.*}} {bypassL1}
// SM80:         nvgpu.device_async_create_group
// SM80-COUNT-8: nvgpu.device_async_copy
// SM80:         nvgpu.device_async_create_group
// SM80:         scf.for
// SM80:           gpu.barrier
// SM80:           %[[G:.+]] = nvgpu.device_async_create_group
// SM80:           nvgpu.device_async_wait %[[G]] {numGroups = 2 : i32}
// SM80:           gpu.barrier
// SM80:           nvgpu.ldmatrix {{.*}} {numTiles = 4 : i32, transpose = false} : memref<768x40xbf16, 3> -> vector<4x2xbf16>
// SM80-COUNT-32:  nvvm.mma.sync {{.*}} multiplicandAPtxType = #nvvm.mma_type<bf16>, multiplicandBPtxType = #nvvm.mma_type<bf16>, shape = #nvvm.shape<m = 16, n = 8, k = 16>
// SM80:         math.tanh
// SM80:         vector.store {{.*}} : memref<256x4096xbf16>, vector<2xbf16>

func.func @gelu_bf16(%x: tensor<256x1024xbf16>, %w: tensor<4096x1024xbf16>, %b: tensor<4096xbf16>) -> tensor<256x4096xbf16> {
  %y = lamina.linear_act "fc" %x, %w bias %b activation gelu_tanh
      : (tensor<256x1024xbf16>, tensor<4096x1024xbf16>, tensor<4096xbf16>) -> tensor<256x4096xbf16>
  return %y : tensor<256x4096xbf16>
}

// -----

// 16 rows: the weight-streaming configuration, 64×64 tiles, one consumer
// warpgroup, 8 stages; 3-D input flattened; N = 200 leaves a partial tile
// and M = 16 a partial row block, so stores are bounds-checked; dropout
// draws the Philox stream of the CPU path from the output index.

// CHECK-LABEL: func.func @dropout_f16(
// CHECK-SAME:    %[[X:.+]]: memref<2x8x512xf16>, %{{.+}}: memref<200x512xf16>, %{{.+}}: memref<200xf32>, %[[SEED:.+]]: i64, %[[OUT:.+]]: memref<2x8x200xf32>)
// CHECK:       %[[X2:.+]] = memref.collapse_shape %[[X]] {{\[}}[0, 1], [2]] : memref<2x8x512xf16> into memref<16x512xf16>
// CHECK:       %[[OUT2:.+]] = memref.collapse_shape %[[OUT]]
// CHECK:       -> <tensor = memref<64x64xf16, 3>
// CHECK:       gpu.launch blocks({{.*}}) in ({{.*}} = %c4{{(_[0-9]+)?}}, {{.*}} = %c1{{(_[0-9]+)?}}, {{.*}}) threads({{.*}}) in ({{.*}} = %c256{{(_[0-9]+)?}}, {{.*}}) dynamic_shared_memory_size %c131072_i32{{(_[0-9]+)?}}
// CHECK:         nvgpu.mbarrier.create -> <memorySpace = #gpu.address_space<workgroup>, num_barriers = 8>
// CHECK:         nvgpu.mbarrier.arrive.expect_tx %{{.+}}[%{{.+}}], %c16384{{(_[0-9]+)?}}
// CHECK:         nvvm.wgmma.mma_async {{.*}}, <m = 64, n = 64, k = 16>, D[<f32>, <zero>], A[<f16>, <one>, <row>], B[<f16>, <one>, <col>]
// CHECK:         arith.cmpi ult, %{{.+}}, %c16{{(_[0-9]+)?}} : index
// CHECK:         arith.cmpi ult, %{{.+}}, %c200{{(_[0-9]+)?}} : index
// CHECK:         scf.if
// Philox-4x32-10 keyed by the seed: ten rounds of two 32×32→64 products.
// CHECK:           arith.trunci %[[SEED]] : i64 to i32
// CHECK:           arith.constant -766435501 : i32
// CHECK-COUNT-20:  arith.muli %{{.+}}, %{{.+}} : i64
// CHECK:           arith.select
// CHECK:           vector.store %{{.+}}, %[[OUT2]][%{{.+}}, %{{.+}}] {alignment = 8 : i64} : memref<16x200xf32>, vector<2xf32>

func.func @dropout_f16(%x: tensor<2x8x512xf16>, %w: tensor<200x512xf16>, %b: tensor<200xf32>, %seed: i64) -> tensor<2x8x200xf32> {
  %y = lamina.linear_dropout "fc" %x, %w bias %b dropout <p = 0.1, training> seed %seed
      : (tensor<2x8x512xf16>, tensor<200x512xf16>, tensor<200xf32>, i64) -> tensor<2x8x200xf32>
  return %y : tensor<2x8x200xf32>
}

// -----

// Two layers: the intermediate lives in device memory for the call; N = 384
// is not a multiple of 256, so the wide layer uses 128×128 tiles.

// CHECK-LABEL: func.func @mlp(
// CHECK-SAME:    %[[OUT:[^:]+]]: memref<128x64xbf16>)
// Alloc, dealloc and copies are the async forms between a fresh stream and
// a wait (the only forms gpu-to-llvm lowers).
// CHECK:       %[[T0:.+]] = gpu.wait async
// CHECK:       %[[H:.+]], %[[T1:.+]] = gpu.alloc async [%[[T0]]] () : memref<128x384xbf16>
// CHECK:       gpu.wait [%[[T1]]]
// CHECK:       -> <tensor = memref<128x64xbf16, 3>
// CHECK:       nvvm.wgmma.mma_async {{.*}}, <m = 64, n = 128, k = 16>
// CHECK:       %[[UH:.+]] = memref.cast %[[H]] : memref<128x384xbf16> to memref<*xbf16>
// CHECK:       nvgpu.tma.create.descriptor %[[UH]]
// CHECK:       vector.store %{{.+}}, %[[OUT]]
// CHECK:       %[[T2:.+]] = gpu.wait async
// CHECK:       %[[T3:.+]] = gpu.dealloc async [%[[T2]]] %[[H]] : memref<128x384xbf16>
// CHECK:       gpu.wait [%[[T3]]]
// CHECK-NEXT:  return

func.func @mlp(%x: tensor<128x64xbf16>, %w1: tensor<384x64xbf16>, %b1: tensor<384xbf16>,
               %w2: tensor<64x384xbf16>, %b2: tensor<64xbf16>) -> tensor<128x64xbf16> {
  %h = lamina.linear_act "fc1" %x, %w1 bias %b1 activation relu
      : (tensor<128x64xbf16>, tensor<384x64xbf16>, tensor<384xbf16>) -> tensor<128x384xbf16>
  %y = lamina.linear "fc2" %h, %w2 bias %b2
      : (tensor<128x384xbf16>, tensor<64x384xbf16>, tensor<64xbf16>) -> tensor<128x64xbf16>
  return %y : tensor<128x64xbf16>
}

// -----

// Returning an argument copies it into its out-parameter.

// CHECK-LABEL: func.func @passthrough(
// CHECK-SAME:    %[[X:[^:]+]]: memref<64x64xbf16>, %{{.+}}: memref<64x64xbf16>, %[[OUT0:[^:]+]]: memref<64x64xbf16>, %[[OUT1:[^:]+]]: memref<64x64xbf16>)
// CHECK:       gpu.launch
// CHECK:       %[[T:.+]] = gpu.wait async
// CHECK:       %[[C:.+]] = gpu.memcpy async [%[[T]]] %[[OUT1]], %[[X]] : memref<64x64xbf16>, memref<64x64xbf16>
// CHECK:       gpu.wait [%[[C]]]

func.func @passthrough(%x: tensor<64x64xbf16>, %w: tensor<64x64xbf16>) -> (tensor<64x64xbf16>, tensor<64x64xbf16>) {
  %y = lamina.linear "fc" %x, %w : (tensor<64x64xbf16>, tensor<64x64xbf16>) -> tensor<64x64xbf16>
  return %y, %x : tensor<64x64xbf16>, tensor<64x64xbf16>
}

// -----

// LNS: one thread per output element, the sequential K loop on i64 codes,
// ideal additions by the fast path with an exact recomputation (pow/log)
// where it flags a near-tie; the bias in another base is converted first.

// CHECK-LABEL: func.func @lns(
// CHECK-SAME:    memref<4x8xi64>, %{{.+}}: memref<16x8xi64>, %{{.+}}: memref<16xi64>, %{{.+}}: memref<4x16xi64>)
// CHECK:       gpu.launch blocks({{.*}}) in ({{.*}} = %c1{{(_[0-9]+)?}}, {{.*}}) threads({{.*}}) in ({{.*}} = %c256{{(_[0-9]+)?}},
// CHECK:         scf.for %{{.+}} = %c0{{(_[0-9]+)?}} to %c8{{(_[0-9]+)?}} step %c1{{(_[0-9]+)?}} iter_args(%{{.+}} = %{{.+}}) -> (i64)
// CHECK-NOT:       math.powf
// CHECK:           scf.if %{{.+}} -> (i64)
// CHECK:             math.powf
// CHECK:             math.log
// CHECK:           scf.yield
// CHECK:         math.powf
// CHECK:         memref.store %{{.+}}, %{{.+}}[%{{.+}}, %{{.+}}] : memref<4x16xi64>

func.func @lns(%x: tensor<4x8x!lns.num<f = 10>>, %w: tensor<16x8x!lns.num<f = 10>>, %b: tensor<16x!lns.num<f = 12>>) -> tensor<4x16x!lns.num<f = 10>> {
  %0 = lamina.linear "fc" %x, %w bias %b : (tensor<4x8x!lns.num<f = 10>>, tensor<16x8x!lns.num<f = 10>>, tensor<16x!lns.num<f = 12>>) -> tensor<4x16x!lns.num<f = 10>>
  return %0 : tensor<4x16x!lns.num<f = 10>>
}

// -----

// An lns.linear keeps its own sbdb mode (here table) whatever the pass's
// default (ideal).

// CHECK-LABEL: func.func @lns_op_table(
// CHECK:       gpu.launch
// CHECK:         memref.get_global @lamina_sbdb_table_f10
// CHECK-NOT:     math.powf
// CHECK:         memref.store

func.func @lns_op_table(%x: tensor<4x8x!lns.num<f = 10>>, %w: tensor<16x8x!lns.num<f = 10>>, %b: tensor<16x!lns.num<f = 10>>) -> tensor<4x16x!lns.num<f = 10>> {
  %0 = lns.linear %x, %w bias %b sbdb table : tensor<4x8x!lns.num<f = 10>>, tensor<16x8x!lns.num<f = 10>>, tensor<16x!lns.num<f = 10>> -> tensor<4x16x!lns.num<f = 10>>
  return %0 : tensor<4x16x!lns.num<f = 10>>
}

// -----

// Rows known at run time (a dynamic batch): the intermediate is allocated
// with the input's batch, M is read from the flattened buffer, the grid and
// the tile order use ⌈M/128⌉ row blocks, and every row is bounds-checked.

// CHECK-LABEL: func.func @dynamic_rows(
// CHECK-SAME:    %[[X:[^:]+]]: memref<?x8x256xbf16>
// CHECK-SAME:    %{{.+}}: memref<?x8x256xf32>)
// CHECK:       %[[B:.+]] = memref.dim %[[X]], %c0{{(_[0-9]+)?}} : memref<?x8x256xbf16>
// CHECK:       gpu.alloc async [%{{.+}}] (%[[B]]) : memref<?x8x512xbf16>
// CHECK:       %[[FLAT:.+]] = memref.collapse_shape %[[X]] {{\[}}[0, 1], [2]] : memref<?x8x256xbf16> into memref<?x256xbf16>
// CHECK:       %[[M:.+]] = memref.dim %[[FLAT]], %c0{{(_[0-9]+)?}} : memref<?x256xbf16>
// CHECK:       %[[UP:.+]] = arith.addi %[[M]], %c127{{(_[0-9]+)?}} : index
// CHECK:       %[[TILES:.+]] = arith.divui %[[UP]], %c128{{(_[0-9]+)?}} : index
// CHECK:       %[[GRID:.+]] = arith.muli %[[TILES]], %c2{{(_[0-9]+)?}} : index
// CHECK:       gpu.launch blocks({{.*}}) in ({{.*}} = %[[GRID]], {{.*}}) threads({{.*}}) in ({{.*}} = %c384{{(_[0-9]+)?}}
// CHECK:         arith.subi %[[TILES]], %{{.+}} : index
// CHECK:         nvvm.wgmma.mma_async {{.*}}<m = 64, n = 256, k = 16>
// CHECK:         arith.cmpi ult, %{{.+}}, %[[M]] : index
// CHECK:       gpu.launch

func.func @dynamic_rows(%x: tensor<?x8x256xbf16>, %w1: tensor<512x256xbf16>, %b1: tensor<512xbf16>,
                        %w2: tensor<256x512xbf16>) -> tensor<?x8x256xf32> {
  %h = lamina.linear_act "fc1" %x, %w1 bias %b1 activation gelu_tanh
      : (tensor<?x8x256xbf16>, tensor<512x256xbf16>, tensor<512xbf16>) -> tensor<?x8x512xbf16>
  %y = lamina.linear "fc2" %h, %w2 : (tensor<?x8x512xbf16>, tensor<256x512xbf16>) -> tensor<?x8x256xf32>
  return %y : tensor<?x8x256xf32>
}
