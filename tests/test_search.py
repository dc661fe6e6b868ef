"""Greedy and beam search: the reported score is the log-probability of the returned tokens."""

from __future__ import annotations

import pytest
import torch

from seq2seq.data.vocab import Vocab
from seq2seq.model import Seq2Seq
from seq2seq.model.decoder import rule_out_never_emitted
from seq2seq.model.search import Hypotheses, beam_search, greedy_decode
from tests.helpers.models import tiny_model


def random_model(decoder: str) -> Seq2Seq:
    """A random model: it rarely emits ``<eos>`` early, so short limits are reached."""
    return tiny_model(
        "additive", seed=3, src_vocab=9, tgt_vocab=11, embed_size=6, hidden_size=5,
        decoder=decoder,
    )  # fmt: skip


def teacher_forced_scores(model: Seq2Seq, src, src_lengths, src_mask, hyps: Hypotheses):
    """Sum of log p(y_t | y_<t, x) over each returned sentence, up to and including <eos>:
    (B,)."""
    tokens = hyps.tokens
    bos = torch.full((tokens.size(0), 1), Vocab.bos_id, dtype=torch.long)
    tgt_in = torch.cat([bos, tokens[:, :-1]], dim=1)
    with torch.no_grad():
        logits, _ = model(src, src_lengths, src_mask, tgt_in)
    log_probs = rule_out_never_emitted(logits.log_softmax(-1))
    picked = log_probs.gather(-1, tokens.unsqueeze(-1)).squeeze(-1)  # (B, T)
    return picked.masked_fill(tokens == Vocab.pad_id, 0.0).sum(1)


@pytest.mark.parametrize("decoder", ["luong", "bahdanau"])
def test_greedy_beam1_and_teacher_forced_scores_agree_at_the_length_limit(decoder):
    model = random_model(decoder)
    src = torch.tensor([[4, 5, 6, 7], [5, 8, 0, 0], [6, 0, 0, 0]])
    src_lengths = torch.tensor([4, 2, 1])
    src_mask = src != Vocab.pad_id
    limits = torch.tensor([3, 1, 2])  # small: every sentence ends by the limit
    greedy = greedy_decode(model, src, src_lengths, src_mask, max_lengths=limits)
    beam = beam_search(model, src, src_lengths, src_mask, beam_size=1, alpha=0.0,
                       max_lengths=limits)  # fmt: skip
    hit_limit = greedy.lengths == limits
    assert bool(hit_limit.any()), "the test needs a sentence that reaches its limit"
    for row, length in enumerate(greedy.lengths.tolist()):
        assert greedy.tokens[row, length - 1] == Vocab.eos_id
    assert torch.equal(greedy.tokens, beam.tokens)
    forced = teacher_forced_scores(model, src, src_lengths, src_mask, greedy)
    torch.testing.assert_close(greedy.scores, forced)
    torch.testing.assert_close(beam.scores, forced)
