"""Atomic writes: a temporary file of another writer never collides with ours."""

from __future__ import annotations

from seq2seq.files import atomic_write_text, write_json


def test_a_stale_temporary_of_another_writer_does_not_block_a_write(tmp_path):
    for name in ("train.tsv", "corpus.json"):
        (tmp_path / f".{name}.tmp").mkdir()  # what a fixed temporary name would collide with
    atomic_write_text(tmp_path / "train.tsv", "a\tb\n")
    write_json(tmp_path / "corpus.json", {"seed": 0})
    assert (tmp_path / "train.tsv").read_text(encoding="utf-8") == "a\tb\n"
    assert (tmp_path / "corpus.json").read_text(encoding="utf-8") == '{\n  "seed": 0\n}\n'


def test_no_temporary_is_left_behind(tmp_path):
    atomic_write_text(tmp_path / "x.txt", "x")
    atomic_write_text(tmp_path / "x.txt", "y")
    assert [p.name for p in tmp_path.iterdir()] == ["x.txt"]
    assert (tmp_path / "x.txt").read_text(encoding="utf-8") == "y"
