"""Attributions of output words to source words (Captum): they land where the output comes
from, integrated gradients is complete within its delta, maps are scored by the same AER as
attention (gold links score 0), Shift-Att's index arithmetic, and --explain end to end."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
import torch
from torch import Tensor, nn

from seq2seq.data.batching import ParallelDataset
from seq2seq.data.corpus import Pair
from seq2seq.data.vocab import Vocab
from seq2seq.evaluation.attributions import (
    Rows,
    attribute,
    attribution_maps,
    reference_log_probs,
    row_shares,
    shift_att,
)
from seq2seq.evaluation.explain import map_aer
from tests.helpers.models import model_for
from tests.helpers.runs import run_script

SOURCE_WORD = 2  # the one source position the toy model's output depends on


class OneWordModel(nn.Module):
    """A model whose every output reads source position ``SOURCE_WORD`` only: logits =
    W tanh(embedding(src[:, SOURCE_WORD])), the same at every target position."""

    def __init__(self, src_vocab: int = 9, tgt_vocab: int = 7, size: int = 5) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.encoder = nn.Module()
        self.encoder.embedding = nn.Embedding(src_vocab, size, padding_idx=Vocab.pad_id)
        self.output = nn.Linear(size, tgt_vocab)

    def forward(self, src: Tensor, lengths: Tensor, mask: Tensor, tgt_in: Tensor):
        embedded = self.encoder.embedding(src)  # (B, T_s, E)
        read = torch.tanh(embedded[:, SOURCE_WORD])  # (B, E)
        logits = self.output(read).unsqueeze(1).expand(-1, tgt_in.size(1), -1)
        return logits, None


def toy_batch() -> ParallelDataset:
    src = [("a", "b", "c", "d"), ("c", "a", "b"), ("d", "c", "a", "b", "a")]
    tgt = [("x", "y"), ("y",), ("x", "x", "y")]
    pairs = [Pair(s, t) for s, t in zip(src, tgt, strict=True)]
    return ParallelDataset(pairs, Vocab.build(src), Vocab.build(tgt))


@pytest.mark.parametrize("method", ["grad_x_input", "integrated_gradients"])
def test_the_attribution_lands_on_the_one_word_the_output_depends_on(method: str):
    dataset = toy_batch()
    batch = dataset.collate(range(len(dataset)))
    maps, _ = attribution_maps(OneWordModel(), batch, method)
    rows = batch.tgt_mask
    assert (maps[rows].argmax(-1) == SOURCE_WORD).all()
    others = torch.ones(maps.size(-1), dtype=torch.bool)
    others[SOURCE_WORD] = False
    assert (maps[rows][:, others] == 0).all()  # nothing else moved the output
    assert (maps[~rows] == 0).all() and (maps * ~batch.src_mask[:, None, :] == 0).all()


def test_integrated_gradients_is_complete_within_captums_delta():
    """Σ attributions = f(x) - f(baseline) up to the convergence delta Captum reports."""
    pairs = [Pair(("我", "爱", "中国"), ("I", "love", "China")), Pair(("他",), ("he",))]
    model, dataset = model_for(pairs, "additive")
    batch = dataset.collate([0, 1])
    rows = Rows.of(batch)
    vectors, delta = attribute(model, batch, rows, "integrated_gradients", steps=64)
    assert delta is not None

    def outputs(src: Tensor) -> Tensor:
        picked = rows.sentence
        with torch.no_grad():
            log_probs = reference_log_probs(
                model, src[picked], batch.src_lengths[picked], batch.src_mask[picked],
                batch.tgt_in[picked], batch.tgt_out[picked],
            )  # fmt: skip
        return log_probs[torch.arange(len(picked)), rows.position]

    change = outputs(batch.src) - outputs(torch.full_like(batch.src, Vocab.pad_id))
    total = vectors.sum(dim=(1, 2))
    torch.testing.assert_close(total - change, -delta, atol=1e-5, rtol=0)
    assert delta.abs().max() < 0.05 * change.abs().max()  # 64 steps: close to complete


def test_a_map_equal_to_the_gold_links_scores_aer_zero():
    pairs = [
        Pair(("我", "爱", "中国"), ("I", "love", "China"), ((0, 0), (1, 1), (2, 2))),
        Pair(("他", "很", "高"), ("he", "is", "tall"), ((0, 0), (2, 2)), ((1, 1),)),
    ]
    dataset = ParallelDataset(pairs, Vocab.build(p.src for p in pairs),
                              Vocab.build(p.tgt for p in pairs))  # fmt: skip
    arrays = []
    for pair in pairs:
        gold = np.zeros((len(pair.tgt) + 1, len(pair.src) + 1))
        gold[:, -1] = 0.5  # unlinked rows look at <eos>
        for i, j in pair.alignment or ():
            gold[j, i] = 1.0
        arrays.append(gold)
    assert map_aer(dataset, [0, 1], arrays)["aer"] == 0.0
    arrays[0] = arrays[0][:, ::-1].copy()  # every link moved
    assert map_aer(dataset, [0, 1], arrays)["aer"] > 0.5


def test_row_shares_make_each_row_a_distribution_with_the_same_argmax():
    model, dataset = model_for([Pair(("我", "爱", "中国"), ("I", "love", "China"))], "additive")
    maps, _ = attribution_maps(model, dataset.collate([0]), "grad_x_input")
    shares = row_shares(maps)
    torch.testing.assert_close(shares.sum(-1), torch.ones(1, 4))  # 3 words and <eos>
    assert torch.equal(shares.argmax(-1), maps.argmax(-1))  # the same alignment, the same AER
    padded = toy_batch().collate([0, 1, 2])
    rows = row_shares(attribution_maps(OneWordModel(), padded, "grad_x_input")[0])
    assert (rows[~padded.tgt_mask] == 0).all()  # padding rows stay all zero, never NaN
    torch.testing.assert_close(rows[padded.tgt_mask].sum(-1), torch.ones(9))  # 6 words, 3 <eos>


def test_shift_att_reads_each_word_off_the_step_that_reads_it():
    weights = torch.arange(4 * 3, dtype=torch.float32).view(1, 4, 3)  # rows 0..3
    shifted = shift_att(weights)
    assert torch.equal(shifted[0, :3], weights[0, 1:])  # word t <- row t + 1
    assert (shifted[0, 3] == 0).all()  # <eos> is read by no step
    assert shift_att(weights.unsqueeze(1)).shape == (1, 1, 4, 3)  # heads kept


@pytest.mark.parametrize("attention", ["additive", "none", "transformer"])
def test_evaluate_explain_records_every_test_in_metrics_json(
    tiny_run, tmp_path: Path, attention: str
) -> None:
    run = tmp_path / "run"
    shutil.copytree(tiny_run(attention), run)
    result = run_script("evaluate.py", str(run), "--explain", "--ig-sentences", "3")
    assert result.returncode == 0, result.stderr[-3000:]
    assert "attention put to the test" in result.stdout
    explained = json.loads((run / "metrics.json").read_text(encoding="utf-8"))["explain"]
    block = explained["test best.pt"]
    names = [s["intervention"] for s in block["interventions"]]
    methods = {(m["method"], m["layer"]) for m in block["maps"]}
    if attention == "none":
        assert names == ["none"]
        assert methods == {("grad_x_input", None), ("integrated_gradients", None)}
    elif attention == "additive":
        assert names == ["none", "uniform", "shuffle", "argmax", "gold"]
        assert methods == {("attention", None), ("grad_x_input", None),
                           ("integrated_gradients", None)}  # fmt: skip
    else:  # two layers of two heads
        assert names[:5] == ["none", "uniform", "shuffle", "argmax", "gold"]
        assert names[5:] == ["head:0.0", "head:0.1", "head:1.0", "head:1.1"]
        assert {("attention", 0), ("shift_att", 0), ("attention", 1), ("shift_att", 1)} <= methods
    ig = next(m for m in block["maps"] if m["method"] == "integrated_gradients")
    assert ig["steps"] == 16 and ig["sentences"] <= 3 * 5 and ig["convergence_delta"] >= 0
    gold = next((s for s in block["interventions"] if s["intervention"] == "gold"), None)
    assert gold is None or gold["bleu"] is None
