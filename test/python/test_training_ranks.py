"""Training tensor-parallel schedules on 2 and 4 MPI ranks
(training_on_ranks.py under mpirun.mpich): each rank's parameter-gradient
blocks equal the matching blocks of eager PyTorch's gradients and input
gradients are whole and equal (Megatron MLP, checkpointed, sequence
parallel, a LayerNorm on each rank's tokens whose replicated parameters'
partial gradients are all-reduced, head-sharded attention), train-mode
dropout matches the unsharded
program, a recipe without fc1's bwd_post is rejected at build, 10 steps of
SGD (momentum) and AdamW give eager's losses, a two-stage pipeline trains
(its backward stages in reverse order), and so do a GPT-2 block (LayerNorm,
FusedQKV, softmax attention, MLP) with its MLP Megatron-sharded and a
LLaMA-style gated MLP (RMSNorm, SiLU) sharded the same way, whose recipe
without up_proj's bwd_post is rejected; a sharded model's state dict holds
each rank's blocks under the model's keys and loads whole checkpoints."""

import pathlib

import pytest

from rank_checks import assert_checks_pass_on_ranks

# Each test launches MPI ranks: run in the serial pass (test/CMakeLists.txt).
pytestmark = pytest.mark.ranks

SCRIPT = pathlib.Path(__file__).with_name("training_on_ranks.py")

CHECKS = {
    2: ["megatron_mlp", "megatron_mlp_checkpointed", "sequence_parallel_mlp",
        "sequence_parallel_layer_norm", "megatron_attention",
        "dropout_in_train_mode", "missing_bwd_post_is_rejected_for_input_gradients",
        "optimizer_steps", "pipeline_two_stages", "block_with_megatron_mlp",
        "llama_mlp", "state_dict_of_blocks"],
    4: ["megatron_mlp", "megatron_mlp_checkpointed", "sequence_parallel_mlp",
        "sequence_parallel_layer_norm", "megatron_attention",
        "dropout_in_train_mode", "missing_bwd_post_is_rejected_for_input_gradients",
        "optimizer_steps", "block_with_megatron_mlp", "llama_mlp"],
}


@pytest.mark.parametrize("ranks", sorted(CHECKS))
def test_training_on_ranks(ranks):
    assert_checks_pass_on_ranks(SCRIPT, ranks, CHECKS[ranks])
