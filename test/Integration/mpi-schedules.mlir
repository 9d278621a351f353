// The example schedules of the GPT-2 MLP run on 2 MPI ranks (MPICH's
// launcher) and equal the unsharded program on the same full weights and
// seed (PyTorch's default fp32 tolerance); each rank reports the world it
// sees. Sequence parallelism leaves each rank a block of the tokens, which
// lamina-run compares with that block of the reference.
// RUN: rm -rf %t && mkdir -p %t
// RUN: lamina-run %lamina_src/examples/gpt2_mlp.mlir --entry=mlp --random-inputs --seed=3 --output-dir=%t
// RUN: mpirun.mpich -np 2 lamina-run %lamina_src/examples/gpt2_mlp.mlir --schedule=%lamina_src/examples/megatron_mlp.schedule.mlir --entry=mlp --random-inputs --seed=3 --reference=%t/result0.npy --rtol=1.3e-6 --atol=1e-5 | FileCheck %s --check-prefix=TP
// RUN: mpirun.mpich -np 2 lamina-run %lamina_src/examples/gpt2_mlp.mlir --schedule=%lamina_src/examples/sequence_parallel_mlp.schedule.mlir --entry=mlp --random-inputs --seed=3 --reference=%t/result0.npy --rtol=1.3e-6 --atol=1e-5 --output-dir=%t/sp | FileCheck %s --check-prefix=SP
// RUN: mpirun.mpich -np 2 lamina-run %lamina_src/examples/gpt2_mlp.mlir --schedule=%lamina_src/examples/pipeline_mlp.schedule.mlir --entry=mlp --random-inputs --seed=3 --reference=%t/result0.npy --rtol=0 --atol=0 | FileCheck %s --check-prefix=PP
// RUN: lamina-run %lamina_src/examples/gpt2_attention.mlir --entry=attention --random-inputs --seed=3 --output-dir=%t/attn
// RUN: mpirun.mpich -np 2 lamina-run %lamina_src/examples/gpt2_attention.mlir --schedule=%lamina_src/examples/megatron_attention.schedule.mlir --entry=attention --random-inputs --seed=3 --reference=%t/attn/result0.npy --rtol=1.3e-6 --atol=1e-5 --repeat=2 | FileCheck %s --check-prefix=ATTN

// --world-size declares the program for 4 ranks before the schedule; four
// pipeline stages reproduce the unsplit program exactly.
// RUN: mpirun.mpich -np 4 lamina-run %lamina_src/examples/gpt2_mlp.mlir --world-size=4 --schedule=%lamina_src/examples/megatron_mlp.schedule.mlir --entry=mlp --random-inputs | FileCheck %s --check-prefix=FOUR
// RUN: lamina-run %lamina_src/examples/mlp_stack.mlir --entry=stack --random-inputs --seed=5 --output-dir=%t/stack
// RUN: mpirun.mpich -np 4 lamina-run %lamina_src/examples/mlp_stack.mlir --schedule=%lamina_src/examples/pipeline_stack.schedule.mlir --entry=stack --random-inputs --seed=5 --reference=%t/stack/result0.npy --rtol=0 --atol=0 | FileCheck %s --check-prefix=STACK
// RUN: not lamina-run %lamina_src/examples/gpt2_mlp.mlir --world-size=-2 --entry=mlp 2>&1 | FileCheck %s --check-prefix=NEGATIVE

// A sharded program outside its MPI world is an error, not N worlds of one.
// RUN: not lamina-run %lamina_src/examples/gpt2_mlp.mlir --schedule=%lamina_src/examples/megatron_mlp.schedule.mlir --entry=mlp --random-inputs 2>&1 | FileCheck %s --check-prefix=WORLD
// RUN: not mpirun.mpich -np 3 lamina-run %lamina_src/examples/gpt2_mlp.mlir --schedule=%lamina_src/examples/pipeline_mlp.schedule.mlir --entry=mlp --random-inputs 2>&1 | FileCheck %s --check-prefix=WORLD3

// TP-DAG: [rank 0/2] running in an MPI world of 2 ranks
// TP-DAG: [rank 1/2] running in an MPI world of 2 ranks
// TP-DAG: [rank 0/2] result 0 vs reference: {{.*}} 0/2048 beyond {{.*}}: ok
// TP-DAG: [rank 1/2] result 0 vs reference: {{.*}} 0/2048 beyond {{.*}}: ok
// SP-DAG: [rank 0/2] result 0: f32[2, 8, 64]
// SP-DAG: [rank 1/2] result 0: f32[2, 8, 64]
// SP-DAG: [rank 0/2] result 0 vs reference: {{.*}} 0/1024 beyond {{.*}}: ok
// SP-DAG: [rank 1/2] result 0 vs reference: {{.*}} 0/1024 beyond {{.*}}: ok
// PP-DAG: [rank 0/2] result 0 vs reference: max abs err 0, {{.*}}: ok
// PP-DAG: [rank 1/2] result 0 vs reference: max abs err 0, {{.*}}: ok
// ATTN-DAG: [rank 0/2] time in collectives: {{[0-9.]+}} ms per call
// ATTN-DAG: [rank 0/2] result 0 vs reference: {{.*}} 0/2048 beyond {{.*}}: ok
// ATTN-DAG: [rank 1/2] result 0 vs reference: {{.*}} 0/2048 beyond {{.*}}: ok
// FOUR-DAG: [rank 0/4] running in an MPI world of 4 ranks
// FOUR-DAG: [rank 3/4] running in an MPI world of 4 ranks
// FOUR-DAG: [rank 3/4] result 0: f32[2, 16, 64]
// STACK-DAG: [rank 0/4] result 0 vs reference: max abs err 0, {{.*}}: ok
// STACK-DAG: [rank 3/4] result 0 vs reference: max abs err 0, {{.*}}: ok
// NEGATIVE: lamina-run: error: --world-size must be positive
// WORLD: lamina-run: error: @mlp is built for 2 ranks but runs in an MPI world of 1; launch it with `mpirun.mpich -np 2`
// WORLD3: @mlp is built for 2 ranks but runs in an MPI world of 3
