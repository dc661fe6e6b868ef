"""Raw user input: literal special tokens are unknown words, never control ids; zero-width
characters separate words or are dropped; unsegmented Chinese keeps its known words."""

from __future__ import annotations

import warnings
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


# ------------------------------------------------------------------ raw input, unsegmented
@pytest.mark.parametrize(
    ("text", "tokens"),
    [
        ("我\u200b爱\u200b中国", ["我", "爱", "中国"]),  # zero-width spaces separate words
        ("我\u2060爱\u200d中\u200c国\ufeff", ["我", "爱", "中国"]),  # joiners are dropped
        ("\u200b我 爱\u200b \u200b中国\u200b", ["我", "爱", "中国"]),
    ],
)
def test_zero_width_characters_are_word_separators_or_ignorable(tmp_path, text, tokens):
    run = tiny_run(tmp_path)
    assert run.tokenize(text) == tokens
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no word is unknown
        (translation,) = run.translate([text])
    assert translation.unknown == []


@pytest.mark.parametrize(
    ("text", "tokens"),
    [
        ("我爱长中国", ["我", "爱", "长", "中国"]),  # one unknown character: one unknown piece
        ("长我爱长长中国", ["长", "我", "爱", "长", "长", "中国"]),  # each its own
        ("我爱NASA中国", ["我", "爱", "NASA", "中国"]),  # a run of letters stays one piece
        ("我爱，中国", ["我", "爱", "，", "中国"]),
        ("我 爱长 中国", ["我", "爱", "长", "中国"]),  # within a spaced word too
        ("熊猫", ["熊猫"]),  # no known word in it: one unknown word, as typed
    ],
)
def test_unsegmented_input_keeps_its_known_words_and_marks_only_the_unknown_pieces(
    tmp_path, text, tokens
):
    run = tiny_run(tmp_path)
    assert run.tokenize(text) == tokens
    unknown = [t for t in tokens if t not in ("我", "爱", "中国")]
    with pytest.warns(UserWarning, match=f"unknown words mapped to <unk>: {' '.join(unknown)}$"):
        (translation,) = run.translate([text])
    assert translation.source == tokens and translation.unknown == unknown
