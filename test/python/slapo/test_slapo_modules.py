"""The modules Slapo's users import besides the schedule: slapo.logger,
slapo.utils.common / report, slapo.random's tracker of generator states
and its checkpoint, and the sync hooks sync() cannot compile."""

import logging
import mmap

import pytest
import torch
from torch import nn

import lamina.slapo as slapo
from lamina import ScheduleError
from lamina.slapo import logger as slapo_logger
from lamina.slapo.checkpoint import checkpoint
from lamina.slapo import random as slapo_random
from lamina.slapo.sharding import sync_ops
from lamina.slapo.utils import common, report


def test_logger_is_made_once_writes_to_stdout_and_takes_ranks(capsys):
    log = slapo_logger.get_logger("lamina-test-logger")
    assert slapo_logger.get_logger("lamina-test-logger") is log
    log.info("value %d", 7, ranks=0)  # no process group: every process logs
    out = capsys.readouterr().out
    assert "[INFO]" in out and "value 7" in out
    assert "test_slapo_modules.py" in out  # the caller's file, not ours
    log.debug("hidden")
    assert capsys.readouterr().out == ""
    # Asked again with another level: the first stays, with a warning.
    slapo_logger.get_logger("lamina-test-logger", logging.DEBUG)
    assert log.level == logging.INFO
    assert "already exists" in capsys.readouterr().out


def test_hooks_are_listed_by_kind_and_transferred():
    def pre(module, inputs):
        return None

    def post(module, inputs, output):
        return None

    old, new = nn.Linear(2, 2), nn.Linear(2, 2)
    old.register_forward_pre_hook(pre)
    old.register_forward_hook(post)
    assert common.get_hooks(old) == {"fwd_pre": [pre], "fwd_post": [post],
                                     "bwd_post": []}
    assert common.has_hook(old, "fwd_pre")
    assert not common.has_hook(new, "fwd_post")
    common.transfer_hooks(old, new, ["fwd_post"])
    assert common.get_hooks(new)["fwd_post"] == [post]
    assert common.get_hooks(new)["fwd_pre"] == []
    assert common.is_lambda_function(lambda: 0)
    assert not common.is_lambda_function(pre)
    assert common.is_module_list(nn.ModuleList([old]))
    assert common.importlib_or_none("no_such_module_here") is None


def test_report_memory_gives_this_process_resident_memory():
    before = report.report_memory("before")
    # 64 MiB of new pages, touched (malloc may reuse memory it kept).
    block = mmap.mmap(-1, 64 * 2**20)
    block.write(b"\1" * len(block))
    after = report.report_memory("after")
    assert after - before > 48, (before, after)
    block.close()


def test_tracker_forks_named_states_of_the_default_generator():
    tracker = slapo_random.CudaRNGStatesTracker()
    tracker.add("a", 11)
    with pytest.raises(Exception, match="seed 11 already exists"):
        tracker.add("b", 11)
    with pytest.raises(Exception, match="already exists"):
        tracker.add("a", 12)
    with pytest.raises(RuntimeError, match="not added"):
        with tracker.fork("c"):
            pass
    torch.manual_seed(5)
    outside = torch.rand(3)
    torch.manual_seed(5)
    with tracker.fork("a"):
        first = torch.rand(3)
    # Outside the fork, the default stream went on as if nothing happened.
    torch.testing.assert_close(torch.rand(3), outside)
    torch.manual_seed(11)
    torch.testing.assert_close(first, torch.rand(3))
    with tracker.fork("a"):  # the named state went on from where it was
        second = torch.rand(3)
    assert not torch.equal(first, second)


def test_model_parallel_seed_tracks_this_rank_seed():
    tp_seed = slapo_random.model_parallel_cuda_manual_seed(
        123, tp_rank=1, always_enable_tp_seed=False)
    assert tp_seed == 123 + 2718 + 1
    assert torch.initial_seed() == 123
    with slapo.get_cuda_rng_tracker().fork():
        assert torch.initial_seed() == tp_seed
    assert torch.initial_seed() == 123
    assert slapo.set_random_seed(7, pp_rank=1, dp_rank=2) == 7 + 100 + 20


def test_checkpoint_recomputes_forked_dropout_with_the_same_mask():
    slapo_random.model_parallel_cuda_manual_seed(3, 0, False)
    tracker = slapo.get_cuda_rng_tracker()
    layer = nn.Linear(16, 16)

    def block(x):
        with tracker.fork():
            return nn.functional.dropout(layer(x), 0.5)

    x = torch.randn(4, 16)
    runs = []
    for checkpointed in (False, True):
        slapo_random.model_parallel_cuda_manual_seed(3, 0, False)
        inp = x.clone().requires_grad_()
        y = checkpoint(block, inp) if checkpointed \
            else block(inp)
        y.sum().backward()
        runs.append((y.detach(), inp.grad))
    torch.testing.assert_close(runs[0][0], runs[1][0])
    torch.testing.assert_close(runs[0][1], runs[1][1])


def test_a_hook_that_is_not_one_sync_op_is_rejected():
    sch = slapo.create_schedule(nn.Sequential(nn.Linear(4, 4)))

    def scaled(_module, _inputs, output):
        return sync_ops.reduce_forward_output(output * 2.0, None)

    with pytest.raises(ScheduleError, match="this Python hook cannot be "
                       "compiled.*reduce_forward_output"):
        sch["0"].sync("fwd_post", sync_op_or_fn=scaled)
