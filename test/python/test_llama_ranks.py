"""The LLaMA-2 model Megatron-parallel on MPI ranks (llama_on_ranks.py):
attention by heads with grouped-query attention (keys and values sharded by
KV heads on 2 ranks; replicated under queries sharded by heads on 4, where
the 2 KV heads do not divide among the ranks), `repeat_kv` local to each
rank, rotary tables and the additive mask taken per rank, the SwiGLU
feed-forward column then row parallel, and the tied embedding vocabulary
parallel: logits, loss, every gradient block and five AdamW steps equal to
the unsharded eager model."""

import pathlib

import pytest

from rank_checks import assert_checks_pass_on_ranks

# Each test launches MPI ranks: run in the serial pass (test/CMakeLists.txt).
pytestmark = pytest.mark.ranks

SCRIPT = pathlib.Path(__file__).with_name("llama_on_ranks.py")


@pytest.mark.parametrize("ranks", [2, 4])
def test_llama_megatron_on_ranks(ranks):
    assert_checks_pass_on_ranks(SCRIPT, ranks,
                                ["forward", "training",
                                 "vocabulary_parallel_training"])
