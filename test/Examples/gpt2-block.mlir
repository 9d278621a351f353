// The example block parses, verifies and round-trips, and canonicalization
// keeps its layers (training-mode dropout is not an identity).
// RUN: lamina-opt %lamina_src/examples/gpt2_block.mlir | lamina-opt | FileCheck %s
// RUN: lamina-opt %lamina_src/examples/gpt2_block.mlir --canonicalize --cse | FileCheck %s

// CHECK-LABEL: func.func @gpt2_block
// CHECK: lamina.fused_qkv "h.0.attn.qkv" {{.*}} num_heads 4 world_size 1
// CHECK: linalg.softmax dimension(3)
// CHECK: lamina.linear "h.0.attn.c_proj"
// CHECK: lamina.linear_act "h.0.mlp.fc_in" {{.*}} activation gelu_tanh
// CHECK: lamina.linear_dropout "h.0.mlp.fc_out" {{.*}} dropout <p = 0.1, training> seed
