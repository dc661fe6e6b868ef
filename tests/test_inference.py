"""Raw user input: literal special tokens are unknown words, never control ids."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from seq2seq.data.vocab import SPECIALS, Vocab
from seq2seq.evaluation.inference import TrainedRun
from seq2seq.model import Seq2Seq
from tests.helpers.models import spec_of

SPECIAL_WORDS = ["<pad>", "<bos>", "<eos>"]


def tiny_run(tmp_path: Path) -> TrainedRun:
    src_vocab = Vocab.build([["我", "爱", "中国"]])
    tgt_vocab = Vocab.build([["I", "love", "China"]])
    torch.manual_seed(0)
    spec = spec_of(len(src_vocab), len(tgt_vocab), embed_size=4, hidden_size=4, dropout=0.0)
    config = {"data": {"char_level_src": False}}
    return TrainedRun(tmp_path, Seq2Seq(spec).eval(), src_vocab, tgt_vocab, config, 10)


def test_encode_maps_literal_special_tokens_to_unk():
    vocab = Vocab.build([["我", "爱"]])
    assert vocab.encode(["我", *SPECIAL_WORDS, "爱"], eos=False) == [
        vocab.stoi["我"], *[Vocab.unk_id] * 3, vocab.stoi["爱"],
    ]  # fmt: skip
    assert vocab.encode(["我"]) == [vocab.stoi["我"], Vocab.eos_id]
    assert vocab.unknown(["我", *SPECIALS]) == list(SPECIALS)


@pytest.mark.parametrize("word", SPECIAL_WORDS)
def test_typed_special_tokens_are_unknown_words_with_a_warning(tmp_path, word):
    run = tiny_run(tmp_path)
    with pytest.warns(UserWarning, match=f"unknown words mapped to <unk>: {word}"):
        (translation,) = run.translate([f"我 {word} 中国"])
    assert translation.source == ["我", word, "中国"]
    assert translation.unknown == [word]


def test_special_tokens_glued_to_chinese_are_not_segmented_as_known_words(tmp_path):
    run = tiny_run(tmp_path)
    assert "<eos>" not in run.tokenize("我<eos>中国")
