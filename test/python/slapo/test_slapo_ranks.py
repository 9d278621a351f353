"""Slapo's distributed test cases (slapo_on_ranks.py) on 1 and 2 MPI ranks
under mpirun.mpich: sharding recipes with output, input-gradient and
parameter-gradient blocks equal to eager PyTorch's at Slapo's tolerance,
annotations and delayed initialisation, losses on a head sharded by
vocabulary (vocabulary parallel, or gathered first), Verify (gradients included), the
eight resharding schemes, fork_rng, checkpointing, the world size from the
launched world, an optimizer made right after build, and a GPT-style
stack scheduled with Slapo's primitives trained with AdamW on 2 ranks."""

import pathlib

import pytest

from rank_checks import assert_checks_pass_on_ranks

# Each test launches MPI ranks: run in the serial pass (test/CMakeLists.txt).
pytestmark = pytest.mark.ranks

SCRIPT = pathlib.Path(__file__).with_name("slapo_on_ranks.py")

ON_ONE_RANK = ["shard_mlp", "shard_linear", "seq_para", "shard_annotate",
               "consolidation", "delayed_init_blocks", "checkpoint_module", "world_size_from_mpi",
               "optimizer_after_build", "fork_rng", "verify_linear",
               "parallel_cross_entropy", "vocabulary_parallel_loss",
               "word_embedding", "tie_weights"]
CHECKS = {
    1: ON_ONE_RANK,
    # Only meaningful with collectives between ranks: the Verify failures of
    # wrong recipes and the gradient checks of the resharding schemes.
    2: ON_ONE_RANK + ["verify_catches_a_missing_bwd_post", "reshard",
                      "gpt_style_training", "fused_qkv_by_heads"],
}


@pytest.mark.parametrize("ranks", sorted(CHECKS))
def test_slapo_cases_on_ranks(ranks):
    assert_checks_pass_on_ranks(SCRIPT, ranks, CHECKS[ranks])
