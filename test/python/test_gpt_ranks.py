"""Whole GPT-2 models Megatron-parallel on 2 and 4 MPI ranks
(gpt_on_ranks.py): attention by heads, MLP column then row parallel, and
a vocabulary-parallel embedding with its tied head, equal to the unsharded
eager model; and trained with Megatron's recipe (with the native API and
with Slapo's, lamina.slapo): loss, gradient blocks and AdamW steps equal
to eager."""

import pathlib

import pytest

from rank_checks import assert_checks_pass_on_ranks

# Each test launches MPI ranks: run in the serial pass (test/CMakeLists.txt).
pytestmark = pytest.mark.ranks

SCRIPT = pathlib.Path(__file__).with_name("gpt_on_ranks.py")


@pytest.mark.parametrize("ranks", [2, 4])
def test_megatron_gpt_on_ranks(ranks):
    assert_checks_pass_on_ranks(SCRIPT, ranks,
                                ["hand_written_forward", "tied_forward",
                                 "vocab_parallel_forward", "tied_training",
                                 "vocab_parallel_training"])


def test_slapo_schedule_trains_the_gpt_on_two_ranks():
    assert_checks_pass_on_ranks(SCRIPT, 2, ["slapo_training"])
