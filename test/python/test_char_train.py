"""examples/char_train.py (nanoGPT's train.py loop on a character corpus)
with the compiled model in the model's place, against the same loop in
eager PyTorch."""

import pathlib
import sys

import pytest
import torch

EXAMPLES = pathlib.Path(__file__).resolve().parents[2] / "examples"
sys.path.insert(0, str(EXAMPLES))

import char_train  # noqa: E402

TWENTY = dict(max_iters=19, quiet=True, sample_tokens=3)


def test_twenty_iterations_log_eager_losses():
    compiled = char_train.train(**TWENTY)
    eager = char_train.train(eager=True, **TWENTY)
    assert len(compiled["losses"]) == 20
    torch.testing.assert_close(torch.tensor(compiled["losses"]),
                               torch.tensor(eager["losses"]),
                               rtol=1e-4, atol=0)
    torch.testing.assert_close(torch.tensor(compiled["evals"]),
                               torch.tensor(eager["evals"]),
                               rtol=1e-4, atol=0)
    # Sampling through the model's own generate ran the compiled forward.
    assert len(compiled["sample"]) == 1 + TWENTY["sample_tokens"]
    assert type(compiled["model"]).__name__ == "CompiledModule"


def test_with_dropout_each_call_differs_and_the_loss_falls():
    record = char_train.train(dropout=0.1, **TWENTY)
    losses = record["losses"]
    assert sum(losses[-5:]) / 5 < sum(losses[:5]) / 5 - 0.3
    model = record["model"].train()
    corpus = char_train.Corpus()
    x = corpus.splits["train"][:32].view(1, 32)
    y = corpus.splits["train"][1:33].view(1, 32)
    with torch.no_grad():
        first, second = (model(x, y)[1].item() for _ in range(2))
    assert first != second
    without = char_train.train(**TWENTY)["losses"]
    assert losses[1:] != without[1:]


@pytest.mark.parametrize("dropout", [0.0, 0.1])
def test_a_resumed_run_continues_the_uninterrupted_one(tmp_path, dropout):
    # The checkpoint of iteration 10 (model, AdamW, random streams) resumed
    # in a new compiled model gives the losses of iterations 10-19 again.
    whole = char_train.train(dropout=dropout, out_dir=str(tmp_path),
                             **TWENTY)
    resumed = char_train.train(dropout=dropout, out_dir=str(tmp_path),
                               init_from="resume", **TWENTY)
    assert len(resumed["losses"]) == 10
    torch.testing.assert_close(torch.tensor(resumed["losses"]),
                               torch.tensor(whole["losses"][10:]),
                               rtol=1e-6, atol=0)
