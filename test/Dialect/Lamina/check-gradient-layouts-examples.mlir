// Every example tensor-parallel schedule leaves no partial gradient behind;
// the Megatron MLP without fc_in's bwd_post sync is rejected.
// RUN: lamina-opt %lamina_src/examples/gpt2_mlp.mlir --lamina-apply-schedule=schedule=%lamina_src/examples/megatron_mlp.schedule.mlir --lamina-check-gradient-layouts | FileCheck %s --check-prefix=MEGATRON
// RUN: lamina-opt %lamina_src/examples/gpt2_mlp.mlir --lamina-apply-schedule=schedule=%lamina_src/examples/sequence_parallel_mlp.schedule.mlir --lamina-check-gradient-layouts | FileCheck %s --check-prefix=SEQUENCE
// RUN: lamina-opt %lamina_src/examples/gpt2_attention.mlir --lamina-apply-schedule=schedule=%lamina_src/examples/megatron_attention.schedule.mlir --lamina-check-gradient-layouts | FileCheck %s --check-prefix=ATTENTION
// RUN: grep -v bwd_post %lamina_src/examples/megatron_mlp.schedule.mlir > %t.schedule.mlir
// RUN: not lamina-opt %lamina_src/examples/gpt2_mlp.mlir --lamina-apply-schedule=schedule=%t.schedule.mlir --lamina-check-gradient-layouts 2>&1 | FileCheck %s --check-prefix=MISSING

// MEGATRON: lamina.sync "h.0.mlp.fc_in" %{{.*}} <bwd_post, all_reduce>
// SEQUENCE: <fwd_post, reduce_scatter, axis = 1>
// ATTENTION: lamina.fused_qkv
// MISSING: error: 'func.func' op the gradient of argument 0 would be partial sums (layout P) on each rank, coming from layer 'h.0.mlp.fc_in'; add sync("bwd_post", "all_reduce") on the input of layer 'h.0.mlp.fc_in'
