// RUN: lamina-opt %lamina_src/examples/gpt2_mlp.mlir --lamina-apply-schedule=schedule=%lamina_src/examples/megatron_mlp.schedule.mlir | FileCheck %s
// RUN: not lamina-opt %s --lamina-apply-schedule 2>&1 | FileCheck %s --check-prefix=NOFILE
// RUN: not lamina-opt %s --lamina-apply-schedule=schedule=%t.missing 2>&1 | FileCheck %s --check-prefix=MISSING
// RUN: not lamina-opt %s --lamina-apply-schedule=schedule=%S/Inputs/no_entry.schedule.mlir 2>&1 | FileCheck %s --check-prefix=NOENTRY
// RUN: not lamina-opt %s --lamina-apply-schedule=schedule=%S/Inputs/foreign_op.schedule.mlir 2>&1 | FileCheck %s --check-prefix=FOREIGN

// The Megatron schedule applied by a lamina-opt flag, as the transform
// interpreter would.
// CHECK-LABEL: func.func @mlp
// CHECK-SAME: tensor<256x64xf32> {lamina.layout = #lamina.layout<S(0)>}
// CHECK-SAME: tensor<64x256xf32> {lamina.layout = #lamina.layout<S(1)>}
// CHECK: lamina.linear_dropout "h.0.mlp.fc_out" {{.*}} sync <fwd_post, all_reduce>

// NOFILE: error: lamina-apply-schedule needs schedule=<file>
// MISSING: error: cannot read the schedule '{{.*}}.missing': No such file or directory
// NOENTRY: no_entry.schedule.mlir:{{.*}}: error: the schedule defines no @__transform_main

func.func @f() {
  return
}

// The interpreter would crash on a non-transform op in the sequence; the
// schedule is rejected before it runs, at that op.
// FOREIGN: foreign_op.schedule.mlir:4:10: error: 'arith.constant' op is not a transform op; a schedule's @__transform_main holds transform ops only
