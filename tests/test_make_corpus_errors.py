"""scripts/make_corpus.py with bad input: one clear line, a non-zero exit, nothing written."""

from __future__ import annotations

import runpy
import shutil
from pathlib import Path

import pytest

import seq2seq.files
from tests.helpers.bad_input import (
    Case,
    Outcome,
    Shared,
    check_fails_cleanly,
    full_disk_open,
    outcomes_fixture,
)
from tests.helpers.runs import REPO

SMALL_CORPUS = ("data.train_size=50", "data.valid_size=10", "data.test_size=10")


def corpus_copy(shared: Shared, tmp: Path) -> dict[str, Path]:
    shutil.copytree(shared.corpus, tmp / "corpus")
    return {"corpus": tmp / "corpus"}


def nothing_written(paths: dict[str, Path], message: str) -> None:
    assert not (paths["tmp"] / "new").exists()


def nothing_written_in(folder: str):
    def check(paths: dict[str, Path], message: str) -> None:
        assert not (paths["tmp"] / folder).exists()

    return check


MAKE_CORPUS_CASES = [
    Case("make-corpus-over-a-different-corpus", "make_corpus.py",
         ("data.dir={corpus}", *SMALL_CORPUS), ("already holds a different corpus",),
         prepare=corpus_copy),
    Case("make-corpus-not-synthetic", "make_corpus.py", ("data=tsv", "data.dir={tmp}/new"),
         ("data=tsv", "not synthetic"), check=nothing_written),
    Case("make-corpus-out-of-range", "make_corpus.py",
         ("data.dir={tmp}/new", "data.min_len=9", "data.max_len=3"),
         ("data.min_len (9)", "data.max_len (3)"), check=nothing_written),
    Case("make-corpus-read-only", "make_corpus.py", ("data.dir={tmp}/ro/new", *SMALL_CORPUS),
         ("cannot write", "ro/new", "read-only file system", "choose another place"),
         read_only="{tmp}/ro", check=nothing_written_in("ro")),
]  # fmt: skip

# A value of the wrong type: the line keeps Hydra's reason (seq2seq/config/compose.py).
MAKE_CORPUS_WRONG_TYPE = Case(
    "make-corpus-wrong-type", "make_corpus.py", ("data.train_size=abc", "data.dir={tmp}/new"),
    ("data.train_size=abc", "could not be converted"), check=nothing_written,
)  # fmt: skip

CASES = [*MAKE_CORPUS_CASES, MAKE_CORPUS_WRONG_TYPE]


outcomes = outcomes_fixture(CASES)


@pytest.mark.parametrize("case", [pytest.param(c, id=c.id) for c in CASES])
def test_bad_input_fails_cleanly(case: Case, outcomes: dict[str, Outcome]) -> None:
    check_fails_cleanly(case, outcomes[case.id])


def test_a_full_disk_names_the_folder_asked_for_and_leaves_nothing(tmp_path, monkeypatch, capsys):
    """Generation writes into a temporary folder first; the one line names data.dir."""
    monkeypatch.setattr(seq2seq.files, "open", full_disk_open(), raising=False)
    main = runpy.run_path(str(REPO / "scripts" / "make_corpus.py"))["main"]
    with pytest.raises(SystemExit) as caught:
        main([f"data.dir={tmp_path / 'new'}", *SMALL_CORPUS])
    assert caught.value.code == 2
    error = capsys.readouterr().err
    assert error == (
        f"error: cannot write {tmp_path / 'new'}: no space left on its device; free some "
        "space, or choose another place\n"
    )
    assert list(tmp_path.iterdir()) == []
