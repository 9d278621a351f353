"""Device grids (data × tensor parallel) on 2 and 4 MPI ranks
(grid_on_ranks.py under mpirun.mpich): each data replica trains on its
slice of a global batch, and its gradients (this rank's blocks on the
tensor axis) and AdamW steps equal one eager process's on the whole batch —
an MLP, a GPT-2 block and a LLaMA-style gated MLP; summed instead of
averaged gradients; a schedule at the launched world's size replayed for
the tensor axis; wrong grids named; ZeRO stages 1 and 2 with AdamW (the
state sharded, 1/D per replica counted, consolidated and restored) and
clipping by the whole model's gradient norm; Slapo's
build(target="deepspeed") with DeepSpeed's topology and configuration
(engine/backward/step with ZeRO-1, and a pipeline's train_batch), against
eager."""

import pathlib

import pytest

from rank_checks import assert_checks_pass_on_ranks

SCRIPT = pathlib.Path(__file__).with_name("grid_on_ranks.py")

CHECKS = {
    2: ["grid_errors", "data_parallel_mlp", "data_parallel_sum",
        "data_parallel_gpt_block", "zero_stage_1", "zero_stage_2",
        "global_norm_clipping", "deepspeed_engine_steps",
        "deepspeed_pipeline_train_batch"],
    4: ["grid_errors", "data_parallel_mlp", "data_and_tensor_parallel_mlp",
        "data_and_tensor_parallel_llama_mlp",
        "data_and_tensor_parallel_gpt_block",
        "data_and_pipeline_parallel_mlp", "zero_stage_1", "zero_stage_2",
        "global_norm_clipping", "deepspeed_engine_steps",
        "deepspeed_pipeline_train_batch",
        "default_schedule_replayed_for_the_tensor_axis"],
}


@pytest.mark.parametrize("ranks", sorted(CHECKS))
def test_grid_on_ranks(ranks):
    assert_checks_pass_on_ranks(SCRIPT, ranks, CHECKS[ranks])
