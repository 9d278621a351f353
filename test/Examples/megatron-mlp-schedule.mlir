// The Megatron MLP schedule applies and passes the layout check.
// RUN: lamina-opt %lamina_src/examples/gpt2_mlp.mlir --transform-preload-library=transform-library-paths=%lamina_src/examples/megatron_mlp.schedule.mlir --transform-interpreter --lamina-check-layouts | FileCheck %s
// Without the fc2 all-reduce it is rejected at compile time.
// RUN: not lamina-opt %lamina_src/examples/gpt2_mlp.mlir --transform-preload-library=transform-library-paths=%S/Inputs/megatron_mlp_no_all_reduce.schedule.mlir --transform-interpreter --lamina-check-layouts 2>&1 | FileCheck %s --check-prefix=REJECT

// CHECK-LABEL: func.func @mlp
// CHECK-SAME: tensor<256x64xf32> {lamina.layout = #lamina.layout<S(0)>}
// CHECK-SAME: tensor<256xf32> {lamina.layout = #lamina.layout<S(0)>}
// CHECK-SAME: tensor<64x256xf32> {lamina.layout = #lamina.layout<S(1)>}
// CHECK: lamina.sync "h.0.mlp.fc_in" %{{.*}} <bwd_post, all_reduce>
// CHECK: lamina.linear_act "h.0.mlp.fc_in"
// CHECK: lamina.linear_dropout "h.0.mlp.fc_out" %{{.*}}, %{{.*}} sync <fwd_post, all_reduce> bias %{{.*}} dropout

// REJECT: error: 'lamina.linear_dropout' op adds its bias to partial sums (layout P) of layer 'h.0.mlp.fc_out'
