"""Slapo's sync ops on 2 MPI ranks (sync_ops_on_ranks.py): eager on
torch.distributed, each forward and gradient as its collective computes
them; and compiled, as Python hooks given to sync() and as calls in a
model's forward, equal to the unsharded eager model (in an unsharded
model, summing replicas as eager code does); gen_embedding_hooks
compiled as the vocabulary-parallel embedding."""

import pathlib

import pytest

from rank_checks import assert_checks_pass_on_ranks

# Each test launches MPI ranks: run in the serial pass (test/CMakeLists.txt).
pytestmark = pytest.mark.ranks

SCRIPT = pathlib.Path(__file__).with_name("sync_ops_on_ranks.py")


def test_sync_ops_eager_and_compiled_on_two_ranks():
    assert_checks_pass_on_ranks(SCRIPT, 2, ["eager_sync_ops",
                                            "compiled_sync_hooks",
                                            "compiled_model_collectives",
                                            "replicated_model_collectives",
                                            "embedding_hooks"])
