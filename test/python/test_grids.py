"""Device grids (data × pipeline × tensor parallel) on 2, 4 and 8 MPI ranks
(grid_on_ranks.py under mpirun.mpich): each data replica trains on its
slice of a global batch, and its gradients (this rank's blocks on the
tensor axis) and AdamW steps equal one eager process's on the whole batch —
an MLP, a GPT-2 block and a LLaMA-style gated MLP; summed instead of
averaged gradients; a schedule at the launched world's size replayed for
the tensor axis; wrong grids named; ZeRO stages 1 and 2 with AdamW (the
state sharded, 1/D per replica counted, consolidated and restored) and
clipping by the whole model's gradient norm; Slapo's
build(target="deepspeed") with DeepSpeed's topology and configuration
(engine/backward/step with ZeRO-1, a pipeline's train_batch, and bf16 on
data replicas against eager autocast), against eager; bf16 parameters'
gradients reduced over replicas against an unsharded run; a batch's micro-batches through two pipeline stages in the
1F1B order (loss, gradients and SGD steps against eager, at most P − p
micro-batches in flight on stage p); stages Megatron-sharded on the
tensor axis (PP2 × TP2, and DP2 × PP2 × TP2 on 8 ranks); the LLaMA-2
model of llama_model.py on DP2 × TP2."""

import pathlib

import pytest

from lamina.runtime.microbatches import one_f_one_b
from rank_checks import assert_checks_pass_on_ranks

# Each test launches MPI ranks: run in the serial pass (test/CMakeLists.txt).
pytestmark = pytest.mark.ranks

SCRIPT = pathlib.Path(__file__).with_name("grid_on_ranks.py")

CHECKS = {
    2: ["grid_errors", "data_parallel_mlp", "data_parallel_sum",
        "data_parallel_gpt_block", "zero_stage_1", "zero_stage_2",
        "global_norm_clipping", "deepspeed_engine_steps",
        "deepspeed_pipeline_train_batch", "deepspeed_bf16_data_parallel",
        "bf16_parameters_data_parallel", "pipeline_one_f_one_b"],
    4: ["grid_errors", "data_parallel_mlp", "data_and_tensor_parallel_mlp",
        "data_and_tensor_parallel_llama_mlp",
        "data_and_tensor_parallel_gpt_block",
        "data_and_pipeline_parallel_mlp", "zero_stage_1", "zero_stage_2",
        "global_norm_clipping", "deepspeed_engine_steps",
        "deepspeed_pipeline_train_batch", "pipeline_one_f_one_b",
        "tensor_parallel_pipeline_stages", "llama_model_on_a_grid",
        "default_schedule_replayed_for_the_tensor_axis"],
    8: ["tensor_parallel_pipeline_stages"],
}


@pytest.mark.parametrize("ranks", sorted(CHECKS))
def test_grid_on_ranks(ranks):
    assert_checks_pass_on_ranks(SCRIPT, ranks, CHECKS[ranks])


def test_one_f_one_b_order():
    # Stage p of P fills the pipeline with P - p - 1 forwards, alternates,
    # then drains: every micro-batch's backward after its forward, at most
    # P - p forwards ahead of the backwards.
    assert one_f_one_b(0, 2, 4) == [("F", 0), ("F", 1), ("B", 0), ("F", 2),
                                    ("B", 1), ("F", 3), ("B", 2), ("B", 3)]
    assert one_f_one_b(1, 2, 4) == [("F", 0), ("B", 0), ("F", 1), ("B", 1),
                                    ("F", 2), ("B", 2), ("F", 3), ("B", 3)]
    assert one_f_one_b(0, 4, 2) == [("F", 0), ("F", 1), ("B", 0), ("B", 1)]
    for stages in (1, 2, 3, 4):
        for stage in range(stages):
            for count in (1, 2, 5, 8):
                order = one_f_one_b(stage, stages, count)
                assert sorted(order) == sorted(
                    [("F", m) for m in range(count)] +
                    [("B", m) for m in range(count)])
                ahead = 0
                for kind, m in order:
                    ahead += 1 if kind == "F" else -1
                    assert ahead <= stages - stage
                    if kind == "B":
                        assert order.index(("F", m)) < order.index(("B", m))
