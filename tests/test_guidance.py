"""Guided alignment: the gold rows, the loss term, its gradients, and the trainer wiring."""

from __future__ import annotations

import json
import logging
import math
from pathlib import Path

import pytest
import torch
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

from seq2seq.choices import AlignmentSchedule
from seq2seq.config.compose import load_config
from seq2seq.data.batching import ParallelDataset, gold_distribution
from seq2seq.data.corpus import Pair
from seq2seq.data.vocab import Vocab
from seq2seq.errors import UserError
from seq2seq.model import Seq2Seq
from seq2seq.training.guidance import AlignmentGuide, alignment_loss, guided_weight
from seq2seq.training.trainer import ALIGNMENT_WEIGHT, Trainer
from tests.helpers.models import model_for, same_model
from tests.helpers.runs import TINY_OVERRIDES, run_script

NOTHING_TO_GUIDE = "nothing to guide"


def aligned_pairs() -> list[Pair]:
    return [
        Pair(("我", "爱", "猫"), ("I", "love", "cats"), ((0, 0), (1, 1), (2, 2)), ((1, 2),)),
        Pair(("他", "吃", "了", "苹果"), ("he", "ate", "apples"), ((0, 0), (1, 1), (2, 1), (3, 2))),
        Pair(("猫",), ("cats", "."), ((0, 0),)),  # "." has no link: not guided
    ]


def test_gold_rows_are_uniform_over_sure_links_and_empty_elsewhere() -> None:
    gold = gold_distribution(aligned_pairs(), tgt_steps=4, src_steps=5)
    assert gold.shape == (3, 4, 5)
    # pair 0: possible link (1, 2) ignored, so "cats" attends to 猫 alone
    torch.testing.assert_close(gold[0, 2], torch.tensor([0.0, 0.0, 1.0, 0.0, 0.0]))
    # pair 1: "ate" is linked to 吃 and 了: half each
    torch.testing.assert_close(gold[1, 1], torch.tensor([0.0, 0.5, 0.5, 0.0, 0.0]))
    # <eos> steps, padding and the unlinked "." are all-zero rows
    assert gold[0, 3].sum() == 0 and gold[2, 1].sum() == 0 and gold[2, 2:].sum() == 0
    assert gold_distribution([Pair(("a",), ("b",))], 2, 2).sum() == 0  # no alignment at all


def test_collate_builds_gold_rows_only_when_asked() -> None:
    pairs = aligned_pairs()
    dataset = ParallelDataset(
        pairs, Vocab.build(p.src for p in pairs), Vocab.build(p.tgt for p in pairs)
    )
    assert dataset.collate([0, 1]).gold is None
    batch = dataset.collate([0, 1], gold=True)
    assert batch.gold is not None
    assert batch.gold.shape == (*batch.tgt_out.shape, batch.src.size(1))
    assert batch.to("cpu").gold is not None and dataset.collate([0]).to("cpu").gold is None


def test_the_loss_is_zero_when_attention_equals_gold_and_positive_otherwise() -> None:
    gold = gold_distribution(aligned_pairs(), tgt_steps=4, src_steps=5)
    mask = torch.tensor([[1, 1, 1, 1, 0], [1, 1, 1, 1, 1], [1, 1, 0, 0, 0]], dtype=torch.bool)
    # attention equal to gold on guided rows, anything on the others (they do not count)
    uniform = mask.float() / mask.sum(1, keepdim=True)
    exact = torch.where(gold.sum(-1, keepdim=True) > 0, gold, uniform.unsqueeze(1))
    assert alignment_loss(exact, gold).item() == pytest.approx(0.0, abs=1e-9)
    assert alignment_loss(exact.unsqueeze(1).expand(-1, 3, -1, -1), gold).item() == pytest.approx(
        0.0, abs=1e-9
    )  # heads equal to gold: their mean is too
    vague = uniform.unsqueeze(1).expand_as(gold)
    assert alignment_loss(vague, gold).item() > 0.1
    # KL: mixing a little of the vague rows in costs less than the vague rows themselves
    assert 0 < alignment_loss(0.9 * exact + 0.1 * vague, gold) < alignment_loss(vague, gold)


def test_the_loss_averages_over_guided_words_only() -> None:
    gold = torch.zeros(1, 3, 2)
    gold[0, 0] = torch.tensor([1.0, 0.0])  # one guided word, two unguided rows
    weights = torch.tensor([[[0.5, 0.5], [1.0, 0.0], [0.0, 1.0]]])
    assert alignment_loss(weights, gold).item() == pytest.approx(math.log(2))
    assert alignment_loss(weights, torch.zeros_like(gold)).item() == 0.0


def build(attention: str, decoder: str) -> tuple[Seq2Seq, ParallelDataset]:
    model, dataset = model_for(aligned_pairs(), attention, decoder=decoder, hidden_size=8)
    return model.train(), dataset


def guided_grads(model: Seq2Seq, dataset: ParallelDataset) -> dict[str, torch.Tensor]:
    batch = dataset.collate([0, 1, 2], gold=True)
    model.zero_grad()
    _, weights = model(
        batch.src, batch.src_lengths, batch.src_mask, batch.tgt_in, keep_weights=True
    )
    alignment_loss(weights, batch.gold).backward()
    return {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None}


@pytest.mark.parametrize(
    ("attention", "decoder"),
    [
        ("additive", "bahdanau"),
        ("dot", "bahdanau"),
        ("multihead", "bahdanau"),
        ("additive", "luong"),
    ],
)
def test_gradients_reach_the_attention_parameters(attention: str, decoder: str) -> None:
    model, dataset = build(attention, decoder)
    grads = guided_grads(model, dataset)
    attention_grads = [g for n, g in grads.items() if n.startswith("decoder.attention.")]
    assert attention_grads and any(g.abs().sum() > 0 for g in attention_grads)
    assert grads["encoder.embedding.weight"].abs().sum() > 0  # the keys learn too


@pytest.mark.parametrize("attention", ["additive", "dot", "multihead"])
def test_the_fused_recurrence_passes_the_same_gradients_through_its_weights(
    attention: str,
) -> None:
    """The fused Bahdanau path takes a gradient on its weights output (its backward adds it
    to the readout's), so guidance needs no fallback: it matches the textbook step loop."""
    model, dataset = build(attention, "bahdanau")
    fused = guided_grads(model, dataset)
    plain = guided_grads(same_model(model, "textbook"), dataset)
    assert fused.keys() == plain.keys()
    for name in fused:
        torch.testing.assert_close(fused[name], plain[name], msg=name)


def test_alignment_weight_is_validated() -> None:
    with pytest.raises(UserError, match=r"train\.alignment_weight"):
        load_config(["train.alignment_weight=-0.5"])
    with pytest.raises(UserError, match=r"train\.alignment_weight"):
        load_config(["train.alignment_weight=nan"])
    assert load_config([]).train.alignment_weight == 0.0
    assert load_config(["train.alignment_weight=2.5"]).train.alignment_weight == 2.5


def test_the_guide_is_off_by_default_and_logs_once_when_nothing_can_be_guided(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="seq2seq")

    def guide(weight: float, has_weights: bool, pairs: list[Pair]) -> AlignmentGuide:
        return AlignmentGuide(
            weight, has_weights, pairs, schedule=AlignmentSchedule.constant, total_steps=10,
            peak=0.4, end=0.8,
        )  # fmt: skip

    assert not guide(0.0, True, aligned_pairs()).active
    assert guide(1.0, True, aligned_pairs()).active
    assert not guide(1.0, False, aligned_pairs()).active  # attention=none
    assert "no weights to guide" in caplog.text
    unaligned = [Pair(p.src, p.tgt) for p in aligned_pairs()]
    assert not guide(1.0, True, unaligned).active
    assert caplog.text.count(NOTHING_TO_GUIDE) == 1


def test_the_weight_rises_to_its_peak_and_is_back_at_zero_before_the_last_updates() -> None:
    train = load_config([]).train
    assert train.alignment_schedule == AlignmentSchedule.triangle
    assert (train.alignment_peak, train.alignment_end) == (0.4, 0.8)

    def guide(schedule: AlignmentSchedule, peak: float, end: float) -> AlignmentGuide:
        return AlignmentGuide(
            2.0, True, aligned_pairs(), schedule=schedule, total_steps=100, peak=peak, end=end
        )

    triangle = guide(AlignmentSchedule.triangle, train.alignment_peak, train.alignment_end)
    assert [triangle.weight_at(s) for s in (0, 20, 40, 60, 79, 80, 99, 150)] == [
        0.0, 1.0, 2.0, 1.0, pytest.approx(0.05), 0.0, 0.0, 0.0,
    ]  # fmt: skip
    # peak 0.5, end 1: the symmetric triangle of the runs before 2026-12-05
    symmetric = guide(AlignmentSchedule.triangle, 0.5, 1.0)
    assert [symmetric.weight_at(s) for s in (0, 25, 50, 75, 99, 100, 150)] == [
        0.0, 1.0, 2.0, 1.0, pytest.approx(0.04), 0.0, 0.0,
    ]  # fmt: skip
    constant = guide(AlignmentSchedule.constant, 0.4, 0.8)
    assert {constant.weight_at(s) for s in (0, 50, 100, 150)} == {2.0}


def trainer(tmp_path: Path, toy_corpus: Path, *overrides: str) -> Trainer:
    cfg = load_config(
        [*TINY_OVERRIDES, f"data.dir={toy_corpus}", "train.num_threads=1",
         *overrides]
    )  # fmt: skip
    return Trainer(cfg, tmp_path / "run")


def test_a_corpus_without_alignments_trains_and_says_once_there_is_nothing_to_guide(
    tmp_path: Path, toy_corpus: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="seq2seq")
    plain = trainer(tmp_path / "a", toy_corpus, "data.alignment_column=null")
    guided = trainer(
        tmp_path / "b", toy_corpus, "data.alignment_column=null", "train.alignment_weight=1.0"
    )
    batches = guided.sampler.batches()[:3]
    for step, indices in enumerate(batches):
        # nothing to guide: exactly the unguided update (same dropout draws)
        torch.manual_seed(step)
        guided_step = guided.train_step(indices)
        torch.manual_seed(step)
        assert guided_step == plain.train_step(indices)
        assert list(guided_step.losses) == ["loss/train"]  # no alignment term to log
    assert caplog.text.count(NOTHING_TO_GUIDE) == 1


def test_guiding_lowers_the_alignment_term_on_a_repeated_batch(
    tmp_path: Path, toy_corpus: Path
) -> None:
    guided = trainer(tmp_path, toy_corpus, "train.alignment_weight=1.0")
    indices = guided.sampler.batches()[0]
    step = guided.train_step(indices)
    first = step.losses["loss/alignment"]
    assert first > 0 and math.isfinite(step.grad_norm) and step.tokens > 0
    for _ in range(15):
        last = guided.train_step(indices)
    assert list(last.losses) == ["loss/train", "loss/alignment"]
    assert last.losses["loss/alignment"] < first


def test_at_the_ends_of_the_triangle_a_guided_update_is_the_unguided_one(
    tmp_path: Path, toy_corpus: Path
) -> None:
    runs = {
        "plain": trainer(tmp_path / "a", toy_corpus),
        "triangle": trainer(tmp_path / "b", toy_corpus, "train.alignment_weight=1.0"),
        "constant": trainer(
            tmp_path / "c", toy_corpus, "train.alignment_weight=1.0",
            "train.alignment_schedule=constant",
        ),
    }  # fmt: skip
    indices = runs["plain"].sampler.batches()[0]
    norms = {}
    for name, run in runs.items():
        run.state.step = run.total_steps  # a triangle's weight is back at 0
        torch.manual_seed(0)  # the same dropout draws
        norms[name] = run.train_step(indices).grad_norm
    assert norms["triangle"] == norms["plain"] != norms["constant"]
    weights = {name: run.model.state_dict() for name, run in runs.items()}
    assert all(torch.equal(v, weights["triangle"][k]) for k, v in weights["plain"].items())


def test_a_tiny_guided_run_logs_the_alignment_loss(tmp_path: Path, toy_corpus: Path) -> None:
    run_dir = tmp_path / "run"
    result = run_script(
        "train.py",
        *TINY_OVERRIDES,
        f"data.dir={toy_corpus}",
        "train.alignment_weight=1",
        "train.num_threads=1",
        f"hydra.run.dir={run_dir}",
    )
    assert result.returncode == 0, result.stderr[-3000:]
    accumulator = EventAccumulator(str(run_dir / "tb"))
    accumulator.Reload()
    scalars = accumulator.Tags()["scalars"]
    assert "loss/alignment" in scalars and "loss/train" in scalars
    values = [event.value for event in accumulator.Scalars("loss/alignment")]
    assert len(values) == 24 and all(math.isfinite(v) and v >= 0 for v in values)
    # the weight of each logged update (every 10th of 24): a triangle peaking at update 9.6
    # (0.4 of 24) and back at 0 at 19.2 (0.8)
    weights = {e.step: e.value for e in accumulator.Scalars(ALIGNMENT_WEIGHT)}
    assert weights == {10: pytest.approx(9 / 9.6), 20: pytest.approx(0.2 / 9.6)}
    # the final test writes the alignment error report, and evaluate.py prints it
    report = json.loads((run_dir / "metrics.json").read_text())["test"]["alignment_report"]
    english_words = sum(len(line.split("\t")[1].split()) for line in _test_lines(toy_corpus))
    assert report["words"] == sum(report["counts"].values()) == english_words
    printed = run_script("evaluate.py", str(run_dir), "--device", "cpu")
    assert printed.returncode == 0, printed.stderr[-3000:]
    assert f"Alignment of {english_words} English words" in printed.stdout


def _test_lines(corpus: Path) -> list[str]:
    return (corpus / "test.tsv").read_text(encoding="utf-8").splitlines()


def test_the_normaliser_is_the_gold_rows_total_weight() -> None:
    """What the alignment term is divided by comes from the pairs alone (under DDP every
    process computes it for the global batch without communicating)."""
    pairs = [
        *aligned_pairs(),
        Pair(("我", "爱", "猫"), ("I", "love", "the", "cats"), ((0, 0), (1, 1), (2, 3)),
             ((2, 2), (1, 3))),
        Pair(("猫",), ("cats",)),  # no alignment at all
    ]  # fmt: skip
    for weight in (0.0, 0.5):
        gold = gold_distribution(pairs, tgt_steps=5, src_steps=5, possible_weight=weight)
        assert guided_weight(pairs, weight) == pytest.approx(gold.sum().item())
    assert guided_weight(pairs, 0.5) == 3 + 3 + 1 + 3 + 0.5


def test_possible_only_words_are_guided_with_their_own_weight() -> None:
    pairs = [
        # "the" has only a possible link (to its noun 猫); "cats" has a sure one and a
        # possible one, and stays on its sure link alone
        Pair(("我", "爱", "猫"), ("I", "love", "the", "cats"), ((0, 0), (1, 1), (2, 3)),
             ((2, 2), (1, 3))),
    ]  # fmt: skip
    plain = gold_distribution(pairs, tgt_steps=5, src_steps=4)
    assert plain[0, 2].sum() == 0  # by default possible-only words are not guided
    gold = gold_distribution(pairs, tgt_steps=5, src_steps=4, possible_weight=0.5)
    torch.testing.assert_close(gold[0, 2], torch.tensor([0.0, 0.0, 0.5, 0.0]))
    torch.testing.assert_close(gold[0, 3], plain[0, 3])  # the sure row is unchanged
    torch.testing.assert_close(gold[0, 3], torch.tensor([0.0, 0.0, 1.0, 0.0]))
    # the loss weighs each guided row by its weight: (1·KL_sure + 0.5·KL_the) / (1 + 0.5)
    weights = torch.full((1, 5, 4), 0.25)
    uniform_kl = math.log(4)  # KL(one-hot || uniform over 4)
    assert alignment_loss(weights, plain).item() == pytest.approx(uniform_kl)
    exact = plain.clone()
    exact[0, 2] = torch.tensor([0.0, 0.0, 1.0, 0.0])
    exact[0, 4] = 0.25  # <eos>: not guided
    exact[0, :2] = plain[0, :2]
    exact = torch.where(exact.sum(-1, keepdim=True) > 0, exact, torch.full_like(exact, 0.25))
    assert alignment_loss(exact, gold).item() == pytest.approx(0.0, abs=1e-9)
    wrong_the = exact.clone()
    wrong_the[0, 2] = 0.25
    expected = 0.5 * uniform_kl / (3 + 0.5)  # three sure rows exact, "the" uniform
    assert alignment_loss(wrong_the, gold).item() == pytest.approx(expected)
    assert alignment_loss(wrong_the, plain).item() == pytest.approx(0.0, abs=1e-9)


def test_the_possible_weight_is_validated() -> None:
    with pytest.raises(UserError, match="alignment_possible_weight must be in"):
        load_config(["train.alignment_possible_weight=2"])
