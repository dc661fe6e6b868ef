"""The detokenizer undoes exactly ``tokenize_tgt(split_punct=True)``."""

from __future__ import annotations

import pytest

from seq2seq.data.corpus import tokenize_tgt
from seq2seq.data.detokenize import detokenize_tgt

ROUND_TRIPS = [
    "it's",
    "Hi.",
    "Tom, come here!",
    "I don't know.",
    'He said, "I\'m from Canada."',
    '"Is she coming, too?" "I hope so."',
    'He answered my question with a "no."',
    "Where is the accent on the word 'Australia?'",
    "The boys' bicycle is in the garage.",
    "It is 7:45.",
    "My husband earns $100,000 a year.",
    "I was born on April 3, 1950.",
    "It grew by 3.5% (a record).",
    "I have to find a part-time job.",
    "She got in at 9 p.m.",
    "In the U.S., most people vote.",
    "Are you sure?!",
    "That’s what we heard.",
]


@pytest.mark.parametrize("text", ROUND_TRIPS)
def test_round_trip(text):
    assert detokenize_tgt(tokenize_tgt(text, split_punct=True)) == text


def test_lowercased_tokens_stay_lowercased():
    tokens = tokenize_tgt("Tom, come here!", lowercase=True, split_punct=True)
    assert detokenize_tgt(tokens) == "tom, come here!"


def test_empty_and_single_token():
    assert detokenize_tgt([]) == ""
    assert detokenize_tgt(["."]) == "."
