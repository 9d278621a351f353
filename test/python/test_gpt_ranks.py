"""Whole GPT-2 models Megatron-parallel on 2 and 4 MPI ranks
(gpt_on_ranks.py): attention by heads, MLP column then row parallel,
equal to the unsharded eager model."""

import pathlib

import pytest

from rank_checks import assert_checks_pass_on_ranks

SCRIPT = pathlib.Path(__file__).with_name("gpt_on_ranks.py")


@pytest.mark.parametrize("ranks", [2, 4])
def test_megatron_gpt_on_ranks(ranks):
    assert_checks_pass_on_ranks(SCRIPT, ranks,
                                ["hand_written_forward", "tied_forward"])
