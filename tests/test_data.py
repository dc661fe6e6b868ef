"""Corpus files, vocabulary and batching."""

from __future__ import annotations

import json

import pytest
import torch

from seq2seq.data.batching import BucketBatchSampler, ParallelDataset, padding_share
from seq2seq.data.corpus import (
    GoldLinks,
    Pair,
    TsvFormat,
    parse_alignment,
    read_tsv,
    tokenize_tgt,
    write_tsv,
)
from seq2seq.data.vocab import SPECIALS, Vocab
from seq2seq.errors import UserError


def test_tsv_round_trip(tmp_path):
    pairs = [
        Pair(("我", "爱", "中国"), ("I", "love", "China"), ((0, 0), (1, 1), (2, 2))),
        Pair(("三", "本", "书"), ("three", "books"), ((0, 0), (2, 1))),
        Pair(("你", "好"), ("hello",), None),
    ]
    path = tmp_path / "c.tsv"
    write_tsv(path, pairs)
    assert read_tsv(path) == pairs
    assert (
        path.read_text(encoding="utf-8").splitlines()[0] == "我 爱 中国\tI love China\t0-0 1-1 2-2"
    )


def test_possible_links_round_trip(tmp_path):
    """``i?j`` is a possible link: read into ``possible``, written back the same way."""
    pair = Pair(
        ("我", "买", "的", "书"),
        ("the", "book", "that", "I", "bought"),
        ((0, 3), (1, 4), (3, 1)),
        ((2, 2), (3, 0)),
    )
    path = tmp_path / "c.tsv"
    write_tsv(path, [pair])
    line = path.read_text(encoding="utf-8").splitlines()[0]
    assert line.endswith("\t0-3 1-4 3-1 2?2 3?0")
    assert read_tsv(path) == [pair]
    assert pair.possible_links == ((0, 3), (1, 4), (2, 2), (3, 0), (3, 1))


def test_a_corpus_holds_each_distinct_token_and_link_once(tmp_path):
    path = tmp_path / "c.tsv"
    lines = [
        "我 爱 中国\tI love China .\t0-0 1-1 2-2",
        "我 爱 你\tI love you .\t0-0 1-1 2-2 2?3",
        "他 爱 猫\tHe loves cats !\t0-0 1-1 2?2 2?3",
    ]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    for fmt in (TsvFormat(), TsvFormat(char_level_src=True, split_tgt_punct=True)):
        pairs = read_tsv(path, fmt)
        for held in ("src", "tgt", "alignment", "possible"):
            items = [t for p in pairs for t in getattr(p, held)]
            assert len({id(t) for t in items}) == len(set(items)) < len(items)


def test_plain_links_read_as_all_sure_and_sure_wins():
    assert parse_alignment("0-0 1-1", 2, 2) == GoldLinks(((0, 0), (1, 1)), ())
    assert parse_alignment("0-0 0?0 1?1", 2, 2) == GoldLinks(((0, 0),), ((1, 1),))
    assert parse_alignment(" 0-0  1?1 ", 2, 2) == GoldLinks(((0, 0),), ((1, 1),))
    assert parse_alignment("", 2, 2) == GoldLinks((), ())
    for bad in ("0?", "0??1", "a?1", "0-1?2", "0-0 1-1x", "x1-1 0-0", "0-0 ١-١"):
        with pytest.raises(ValueError, match="bad alignment link"):
            parse_alignment(bad, 3, 3)
    with pytest.raises(ValueError, match="out of range"):
        parse_alignment("0?5", 3, 3)


def test_blank_lines_are_skipped_and_columns_configurable(tmp_path):
    path = tmp_path / "c.tsv"
    path.write_text("\nI love China\t我爱中国\tCC-BY someone\n\n", encoding="utf-8")
    [pair] = read_tsv(path, TsvFormat(1, 0, None, char_level_src=True))
    assert pair.src == ("我", "爱", "中", "国") and pair.tgt == ("I", "love", "China")


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("我 爱 中国", "expected at least 2 tab-separated columns"),
        ("我 爱 中国\tI love China\t0-0 1-x", "bad alignment link"),
        ("我 爱 中国\tI love China\t0-0 3-1", "out of range"),
        ("我 爱 中国\t \t", "empty source or target"),
    ],
)
def test_malformed_lines_name_file_and_line(tmp_path, line, message):
    path = tmp_path / "bad.tsv"
    path.write_text(f"我\tI\t0-0\n{line}\n", encoding="utf-8")
    with pytest.raises(UserError, match=f"bad.tsv:2: .*{message}"):
        read_tsv(path)


def test_non_utf8_file_is_a_clear_error(tmp_path):
    path = tmp_path / "gbk.tsv"
    path.write_bytes("我\tI\n".encode() + "爱\tlove\n".encode("gbk"))
    with pytest.raises(UserError, match=r"gbk\.tsv:2: not valid UTF-8"):
        read_tsv(path)


def test_english_punctuation_split():
    assert tokenize_tgt("Don't go, Tom!", lowercase=True, split_punct=True) == (
        "don't", "go", ",", "tom", "!",
    )  # fmt: skip


def test_vocab_specials_are_distinct_and_json_round_trips(tmp_path):
    vocab = Vocab.build([("b", "a", "b"), ("c",)], min_freq=1)
    assert vocab.itos[:4] == list(SPECIALS)
    assert len({vocab.pad_id, vocab.unk_id, vocab.bos_id, vocab.eos_id}) == 4
    assert vocab.itos[4] == "b"  # most frequent first
    assert vocab.encode(["a", "zzz"]) == [vocab.stoi["a"], vocab.unk_id, vocab.eos_id]
    assert vocab.decode([vocab.stoi["a"], vocab.eos_id, vocab.stoi["b"]]) == ["a"]
    vocab.save(tmp_path / "v.json")
    assert Vocab.load(tmp_path / "v.json") == vocab
    assert json.loads((tmp_path / "v.json").read_text(encoding="utf-8"))["tokens"][0] == "<pad>"
    assert "a" not in Vocab.build([("b", "a", "b")], min_freq=2).stoi


def test_collate_pads_and_masks():
    pairs = [Pair(("a", "b", "c"), ("x",)), Pair(("a",), ("x", "y", "z"))]
    src_vocab = Vocab.build(p.src for p in pairs)
    tgt_vocab = Vocab.build(p.tgt for p in pairs)
    batch = ParallelDataset(pairs, src_vocab, tgt_vocab).collate([0, 1])
    assert batch.src.shape == (2, 4) and batch.src.dtype == torch.long
    assert batch.src_lengths.tolist() == [4, 2]
    assert batch.src_mask.tolist() == [[True] * 4, [True, True, False, False]]
    assert batch.src[1, 2:].tolist() == [Vocab.pad_id] * 2
    assert batch.tgt_in[1].tolist() == [Vocab.bos_id, *tgt_vocab.encode(["x", "y", "z"], eos=False)]
    assert batch.tgt_out[1].tolist() == tgt_vocab.encode(["x", "y", "z"])
    assert batch.tgt_in[0].tolist() == [Vocab.bos_id, tgt_vocab.stoi["x"], 0, 0]
    assert torch.equal(batch.tgt_mask, batch.tgt_out != Vocab.pad_id)


def test_bucket_sampler_is_deterministic_covers_everything_and_cuts_padding():
    lengths = [(i * 37) % 50 + 1 for i in range(2000)]
    sampler = BucketBatchSampler(lengths, 32, seed=1)
    first = sampler.batches()
    assert first == BucketBatchSampler(lengths, 32, seed=1).batches()
    assert sorted(i for b in first for i in b) == list(range(2000))
    assert len(sampler) == len(first)
    sampler.set_epoch(1)
    assert sampler.batches() != first
    random_batches = [list(range(k, min(k + 32, 2000))) for k in range(0, 2000, 32)]
    assert padding_share(first, lengths) < 0.05 < padding_share(random_batches, lengths)


# ------------------------------------------------------------------ what ends a line
#: Every character str.splitlines() ends a line at, besides \n and \r\n.
OTHER_LINE_BREAKS = ["\x0b", "\x0c", "\x1c", "\x1d", "\x1e", "\x85", "\u2028", "\u2029"]


@pytest.mark.parametrize("separator", OTHER_LINE_BREAKS, ids=lambda s: f"U+{ord(s):04X}")
def test_only_newline_and_crlf_end_a_line(tmp_path, separator):
    """Other line separators inside a line are text (whitespace between words): one pair."""
    path = tmp_path / "c.tsv"
    text = f"我{separator}爱\tI{separator}love\t0-0 1-1\r\n中国\tChina\t0-0\nbad line\n"
    path.write_text(text, encoding="utf-8", newline="")
    with pytest.raises(UserError, match=r"c\.tsv:3: expected at least 2"):
        read_tsv(path)
    path.write_text(text.replace("bad line\n", ""), encoding="utf-8", newline="")
    assert read_tsv(path) == [
        Pair(("我", "爱"), ("I", "love"), ((0, 0), (1, 1))),
        Pair(("中国",), ("China",), ((0, 0),)),
    ]


def test_a_carriage_return_inside_a_line_is_a_file_line_error(tmp_path):
    path = tmp_path / "mac.tsv"
    path.write_bytes("我\tI\t0-0\n爱\tlove\r中国\tChina\n".encode())
    with pytest.raises(UserError, match=r"mac\.tsv:2: a carriage return \(\\r\) inside the line"):
        read_tsv(path)


# ------------------------------------------------------------------ an empty alignment column
def test_an_alignment_column_empty_on_every_line_means_no_alignments(tmp_path):
    """A trailing TAB on a two-column corpus is not an (empty) gold alignment per pair."""
    path = tmp_path / "c.tsv"
    path.write_text("我 爱\tI love\t\n中国\tChina\t \n你\tyou\n", encoding="utf-8")
    assert [p.alignment for p in read_tsv(path)] == [None, None, None]


def test_an_empty_alignment_beside_others_is_a_pair_without_links(tmp_path):
    path = tmp_path / "c.tsv"
    path.write_text("我 爱\tI love\t0-0 1-1\n啊\toh\t\n你\tyou\n", encoding="utf-8")
    assert [p.alignment for p in read_tsv(path)] == [((0, 0), (1, 1)), (), None]


# ------------------------------------------------------------------ byte-order marks
@pytest.mark.parametrize("suffix", ["", ".gz"])
def test_a_byte_order_mark_is_not_part_of_the_first_word(tmp_path, suffix):
    import gzip

    data = "\ufeff我 爱\tI love\t0-0 1-1\n".encode() + "\ufeff中国\tChina\t0-0\n".encode()
    path = tmp_path / f"c.tsv{suffix}"  # the second BOM: two files with BOMs concatenated
    path.write_bytes(gzip.compress(data) if suffix else data)
    pairs = read_tsv(path)
    assert [p.src for p in pairs] == [("我", "爱"), ("中国",)]
