"""The moving average of the weights (``train.ema_decay``): its arithmetic, that training never
sees it, that validation and checkpoints are the average's, and that a resumed run continues
it exactly."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from torch import nn

from seq2seq.config.compose import load_config
from seq2seq.evaluation.scoring import quick_part, quick_scores
from seq2seq.model.checkpoint import load_checkpoint
from seq2seq.training.averaging import WeightAverage
from seq2seq.training.state import TrainState
from seq2seq.training.tblog import RunLogger
from seq2seq.training.trainer import Trainer
from tests.helpers.runs import TINY_OVERRIDES, TINY_TRANSFORMER


def _model() -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 2)).double()


def test_the_average_follows_the_capped_decay_update_by_update() -> None:
    model = _model()
    average = WeightAverage(model, decay=0.9)
    expected = [p.detach().clone() for p in model.parameters()]
    for n in range(1, 30):
        with torch.no_grad():
            for p in model.parameters():
                p.add_(torch.randn_like(p))
        d = min(0.9, (1 + n) / (10 + n))
        expected = [
            d * e + (1 - d) * p.detach() for e, p in zip(expected, model.parameters(), strict=True)
        ]
        average.after_update(n)
    assert average.decay_after(1) == pytest.approx(2 / 11) and average.decay_after(200) == 0.9
    for got, want in zip(average.averages, expected, strict=True):
        torch.testing.assert_close(got, want, rtol=1e-12, atol=1e-12)


def test_applied_swaps_the_average_in_and_the_own_weights_back_bit_for_bit() -> None:
    model = _model()
    average = WeightAverage(model, decay=0.5)
    with torch.no_grad():
        for p in model.parameters():
            p.mul_(3.0)
    average.after_update(100)
    own = {k: v.clone() for k, v in model.state_dict().items()}
    with average.applied():
        for p, a in zip(model.parameters(), average.averages, strict=True):
            assert torch.equal(p, a)
    with pytest.raises(RuntimeError), average.applied():
        raise RuntimeError("a validation that fails")
    for key, value in model.state_dict().items():
        assert torch.equal(value, own[key])
    assert all(
        torch.equal(v, dict(zip(average.names, average.averages, strict=True))[k])
        for k, v in average.averaged_state().items()
    )


def test_without_a_decay_nothing_is_kept_or_swapped() -> None:
    model = _model()
    average = WeightAverage(model, decay=0.0)
    before = [p.detach().clone() for p in model.parameters()]
    average.after_update(5)
    with average.applied():
        assert all(torch.equal(p, b) for p, b in zip(model.parameters(), before, strict=True))
    assert not average.active and average.averages == []
    with pytest.raises(ValueError, match=r"decay must be in \[0, 1\)"):
        WeightAverage(model, decay=1.0)


def test_a_tied_weight_is_averaged_once_and_saved_under_both_names() -> None:
    model = _model()
    model[2].weight = nn.Parameter(torch.zeros(2, 4, dtype=torch.float64))
    model.append(nn.Linear(4, 2).double())
    model[3].weight = model[2].weight  # tied, as an output layer to its embedding
    average = WeightAverage(model, decay=0.5)
    with torch.no_grad():
        model[2].weight.fill_(1.0)
    average.after_update(100)
    state = average.averaged_state()
    assert torch.equal(state["2.weight"], state["3.weight"])
    assert torch.equal(state["2.weight"], torch.full((2, 4), 0.5, dtype=torch.float64))


def _trainer(toy_corpus: Path, run: Path, *extra: str) -> Trainer:
    overrides = [*TINY_OVERRIDES, f"data.dir={toy_corpus}", "train.num_threads=1", *extra]
    return Trainer(load_config(overrides), run)


def _fit(trainer: Trainer, tmp_path: Path, **kwargs: object) -> list[float]:
    """Train; returns the translation loss of every update."""
    losses: list[float] = []
    updater_update = trainer.updater.update

    def recorded(*args, **kw):
        result = updater_update(*args, **kw)
        losses.append(result.loss)
        return result

    trainer.updater.update = recorded  # type: ignore[method-assign]
    logger = RunLogger(tmp_path / f"tb{len(list(tmp_path.iterdir()))}")
    try:
        trainer.fit(logger, **kwargs)  # type: ignore[arg-type]
    finally:
        logger.close()
    return losses


@pytest.mark.parametrize("model", ["gru", "transformer"])
def test_training_never_sees_the_average_and_the_checkpoints_hold_it(
    toy_corpus: Path, tmp_path: Path, model: str
) -> None:
    kind = list(TINY_TRANSFORMER) if model == "transformer" else []
    plain = _trainer(toy_corpus, tmp_path / "plain", *kind)
    plain_losses = _fit(plain, tmp_path)  # each trainer seeds the process as it is built
    averaged = _trainer(toy_corpus, tmp_path / "averaged", *kind, "train.ema_decay=0.9")
    assert _fit(averaged, tmp_path) == plain_losses  # the same updates, bit for bit
    last = load_checkpoint(averaged.ckpt_dir / "last.pt")
    assert last.training_weights is not None
    assert load_checkpoint(plain.ckpt_dir / "last.pt").training_weights is None
    for key, value in plain.model.state_dict().items():
        assert torch.equal(last.training_weights[key], value)
        assert torch.equal(last.model[key], averaged.average.averaged_state()[key])
    assert any(not torch.equal(last.model[k], v) for k, v in last.training_weights.items())
    # what was validated (and chose best.pt) is the average, as evaluate would score it
    best = load_checkpoint(averaged.ckpt_dir / "best.pt")
    averaged.model.load_state_dict(best.model)
    vocab = averaged.corpus.tgt_vocab
    part = quick_part(
        averaged.model, averaged.valid_set, vocab, batch_size=64, device=averaged.device
    )
    scores = quick_scores([part], averaged.valid_set.pairs, vocab)
    record = averaged.state.best
    assert record is not None and record.valid_loss == pytest.approx(scores.loss, rel=1e-6)
    assert record.valid_bleu == pytest.approx(scores.bleu)


def test_a_resumed_run_continues_the_average_exactly(toy_corpus: Path, tmp_path: Path) -> None:
    whole = _trainer(toy_corpus, tmp_path / "whole", "train.ema_decay=0.9")
    _fit(whole, tmp_path)

    def at_twelve(state: TrainState) -> bool:
        return state.step >= 12

    first = _trainer(toy_corpus, tmp_path / "parts", "train.ema_decay=0.9")
    _fit(first, tmp_path, should_stop=at_twelve)
    resumed = _trainer(toy_corpus, tmp_path / "parts", "train.ema_decay=0.9", "resume=true")
    assert resumed.state.step == 12
    _fit(resumed, tmp_path)
    one, two = (load_checkpoint(t.ckpt_dir / "last.pt") for t in (whole, resumed))
    assert one.training_weights is not None and two.training_weights is not None
    for key, value in one.model.items():
        assert torch.equal(two.model[key], value)
        assert torch.equal(two.training_weights[key], one.training_weights[key])
    assert [r.valid_loss for r in resumed.state.history] == [
        r.valid_loss for r in whole.state.history
    ]
