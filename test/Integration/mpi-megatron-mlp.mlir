// The Megatron MLP schedule run on 2 and 4 MPI ranks (MPICH's launcher)
// equals the unsharded program on the same full weights; each rank reports
// the world it sees.
// RUN: rm -rf %t && mkdir -p %t
// RUN: lamina-run %lamina_src/examples/megatron_mlp.mlir --entry=mlp --random-inputs --seed=3 --output-dir=%t
// RUN: mpirun.mpich -np 2 lamina-run %lamina_src/examples/megatron_mlp.mlir --schedule=%lamina_src/examples/megatron_mlp.schedule.mlir --entry=mlp --random-inputs --seed=3 --reference=%t/result0.npy --rtol=1.3e-6 --atol=1e-5 | FileCheck %s --check-prefix=TWO
// RUN: sed 's/world_size = 2/world_size = 4/' %lamina_src/examples/megatron_mlp.mlir > %t/mlp4.mlir
// RUN: mpirun.mpich -np 4 lamina-run %t/mlp4.mlir --schedule=%lamina_src/examples/megatron_mlp.schedule.mlir --entry=mlp --random-inputs --seed=3 --reference=%t/result0.npy --rtol=1.3e-6 --atol=1e-5 | FileCheck %s --check-prefix=FOUR

// A sharded program outside its MPI world is an error, not N worlds of one.
// RUN: not lamina-run %lamina_src/examples/megatron_mlp.mlir --schedule=%lamina_src/examples/megatron_mlp.schedule.mlir --entry=mlp --random-inputs 2>&1 | FileCheck %s --check-prefix=WORLD
// RUN: not mpirun.mpich -np 3 lamina-run %lamina_src/examples/megatron_mlp.mlir --schedule=%lamina_src/examples/megatron_mlp.schedule.mlir --entry=mlp --random-inputs 2>&1 | FileCheck %s --check-prefix=WORLD3

// TWO-DAG: [rank 0/2] running in an MPI world of 2 ranks
// TWO-DAG: [rank 1/2] running in an MPI world of 2 ranks
// TWO-DAG: [rank 0/2] result 0 vs reference: {{.*}}: ok
// TWO-DAG: [rank 1/2] result 0 vs reference: {{.*}}: ok
// FOUR-DAG: [rank 0/4] result 0 vs reference: {{.*}}: ok
// FOUR-DAG: [rank 1/4] result 0 vs reference: {{.*}}: ok
// FOUR-DAG: [rank 2/4] result 0 vs reference: {{.*}}: ok
// FOUR-DAG: [rank 3/4] result 0 vs reference: {{.*}}: ok
// WORLD: lamina-run: error: @mlp is built for 2 ranks but runs in an MPI world of 1; launch it with `mpirun.mpich -np 2`
// WORLD3: @mlp is built for 2 ranks but runs in an MPI world of 3
