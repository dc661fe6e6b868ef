"""BLEU on tokenized text is deliberate: sacrebleu's detokenization warning stays silent."""

from __future__ import annotations

import logging

from seq2seq.evaluation.metrics import corpus_bleu


def test_tokenized_periods_raise_no_detokenize_warning(caplog):
    hyps = [["I", "love", "China", "."]] * 150
    refs = [["I", "love", "China", "."]] * 150
    with caplog.at_level(logging.WARNING):
        result = corpus_bleu(hyps, refs)
    assert round(result.score, 6) == 100.0 and "tok:none" in result.signature
    assert not [r for r in caplog.records if "detokenize" in r.getMessage()]
