"""Slapo's GPT-2 schedule helpers: the hooks of a vocabulary-parallel
word embedding."""

import torch

from ...collectives import reduce_forward_output


def gen_embedding_hooks(sch, vocab_size):
    """The (fwd_pre, fwd_post) hooks of an embedding whose weight is sharded
    on the vocabulary (`sch[...].shard("weight", 0)`): the pre-hook maps
    token ids to this rank's rows (ids of other ranks' rows to row 0), the
    post-hook zeroes those tokens' vectors and sums the ranks' parts.

    As eager hooks (`register_forward_pre_hook` / `register_forward_hook`)
    they run on torch.distributed. Given to `sch.sync(...)`, Lamina
    compiles them as what they are, its vocabulary-parallel embedding
    (`lamina.embedding ... shards n rank r`, which reads only this rank's
    rows) and a fwd_post all-reduce."""
    start = sch.rank * vocab_size // sch.world_size
    end = (sch.rank + 1) * vocab_size // sch.world_size

    def fwd_pre_hook(module, inputs):
        ids = inputs[0]
        # Tokens whose rows another rank holds: their vectors are zeroed
        # after the lookup (the post-hook reads this).
        module._vocabulary_elsewhere = (ids < start) | (ids >= end)
        return torch.where(module._vocabulary_elsewhere,
                           torch.zeros_like(ids), ids - start)

    def fwd_post_hook(module, _inputs, output):
        elsewhere = getattr(module, "_vocabulary_elsewhere", None)
        if elsewhere is not None:
            output = output.masked_fill(elsewhere.unsqueeze(-1), 0.0)
        return reduce_forward_output(output, sch.group)

    # What the compiler makes of them (lamina.slapo.primitives.sync): the
    # sharded embedding already reads only its rows; the sum is a sync.
    fwd_pre_hook._lamina_sync = []
    fwd_post_hook._lamina_sync = [("all_reduce", {})]
    return fwd_pre_hook, fwd_post_hook
