"""AER in the scores: sure and possible links, and the best head picked on another split."""

from __future__ import annotations

import random

import torch

from seq2seq.data.batching import ParallelDataset
from seq2seq.data.synthetic.grammar import Grammar
from seq2seq.data.vocab import Vocab
from seq2seq.evaluation.scoring import attention_scores, evaluate
from seq2seq.model import Seq2Seq
from tests.helpers.models import spec_of


def test_best_head_is_picked_on_the_selection_split_and_reported_on_this_one() -> None:
    grammar = Grammar.load()
    rng = random.Random(3)
    valid = [grammar.sample_pair(rng, rng.randint(4, 12)) for _ in range(12)]
    test = [grammar.sample_pair(rng, rng.randint(4, 12)) for _ in range(12)]
    src_vocab = Vocab.build(p.src for p in valid + test)
    tgt_vocab = Vocab.build(p.tgt for p in valid + test)
    torch.manual_seed(0)
    spec = spec_of(
        len(src_vocab), len(tgt_vocab), attention="multihead", embed_size=16, hidden_size=16,
        dropout=0.0, num_heads=4,
    )  # fmt: skip
    model = Seq2Seq(spec).eval()
    valid_set = ParallelDataset(valid, src_vocab, tgt_vocab)
    test_set = ParallelDataset(test, src_vocab, tgt_vocab)
    device = torch.device("cpu")

    on_valid = attention_scores(model, valid_set, batch_size=8, device=device)
    scores = evaluate(
        model, test_set, tgt_vocab, batch_size=8, device=device,
        select_head_on=("valid", valid_set),
    ).scores.alignment  # fmt: skip
    assert scores is not None and scores.best_head_split == "valid"
    assert scores.best_head == on_valid["best_head"]
    assert scores.aer_per_head is not None and scores.best_head is not None
    assert scores.aer_best_head == scores.aer_per_head[scores.best_head]
    # possible links can only forgive: AER against S and P is at most the sure-only figure
    assert scores.aer_sure_only is not None and scores.aer <= scores.aer_sure_only

    alone = evaluate(model, test_set, tgt_vocab, batch_size=8, device=device).scores.alignment
    assert alone is not None and alone.best_head_split == "same"
    assert alone.aer_per_head is not None and alone.aer_best_head == min(alone.aer_per_head)
