"""The ranks that hold tied weights in DeepSpeed's pipeline topology."""


def analyze_tie_ranks(tie_weight_groups, topology):
    """For each group of tied weights ([(name, stage)], from
    lamina.slapo.pipeline.analyze_tie_weights): the ranks that must share
    its gradient, one list per position within the stages' ranks
    (`topology.filter_match(pipe=stage)`, DeepSpeed's
    PipeModelDataParallelTopology), and the stages in order. Returns
    (tie_ranks, tie_stages)."""
    tie_ranks, tie_stages = [], []
    for group in tie_weight_groups:
        stages = sorted({stage for _, stage in group})
        ranks = [topology.filter_match(pipe=stage) for stage in stages]
        tie_ranks.append([list(together) for together in zip(*ranks)])
        tie_stages.append(stages)
    return tie_ranks, tie_stages
