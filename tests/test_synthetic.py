"""The synthetic corpus: deterministic, disjoint splits with the promised lengths."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from seq2seq.data.corpus import Pair, read_tsv
from seq2seq.data.synthetic.generator import (
    RUNNING_EXAMPLE,
    SPLITS,
    CorpusSpec,
    corpus_summary,
    draw_alignment,
    generate_splits,
    has_crossing,
    length_bucket,
    length_buckets,
    write_splits,
)
from seq2seq.data.synthetic.grammar import Grammar
from seq2seq.data.synthetic.store import (
    CORPUS_FILE,
    GENERATOR,
    Outcome,
    corpus_identity,
    ensure_corpus,
)
from seq2seq.data.vocab import Vocab
from seq2seq.errors import UserError
from tests.helpers.config import compose_config

REPO = Path(__file__).resolve().parents[1]
SMALL = CorpusSpec(seed=5, train_size=400, valid_size=60, test_size=50)


@pytest.fixture(scope="module")
def grammar() -> Grammar:
    return Grammar.load()


@pytest.fixture(scope="module")
def small(grammar: Grammar) -> dict[str, list[Pair]]:
    return generate_splits(SMALL, grammar)


@pytest.fixture(scope="module")
def default(grammar: Grammar) -> dict[str, list[Pair]]:
    """The full default corpus (66,000 pairs, a few seconds)."""
    return generate_splits(CorpusSpec(), grammar)


def _files(directory: Path) -> dict[str, bytes]:
    return {split: (directory / f"{split}.tsv").read_bytes() for split in SPLITS}


# --------------------------------------------------------------------------- buckets


def test_length_bucket_labels() -> None:
    edges = (10, 20, 30, 40)
    assert [length_bucket(n, edges) for n in (1, 10, 11, 30, 40, 41, 99)] == [
        "1-10",
        "1-10",
        "11-20",
        "21-30",
        "31-40",
        "41+",
        "41+",
    ]


def test_buckets_are_clipped_to_the_length_range() -> None:
    buckets = length_buckets(3, 50, (10, 20, 30, 40))
    assert [(b.label, b.low, b.high) for b in buckets] == [
        ("1-10", 3, 10),
        ("11-20", 11, 20),
        ("21-30", 21, 30),
        ("31-40", 31, 40),
        ("41+", 41, 50),
    ]
    assert [b.label for b in length_buckets(3, 25, (10, 20, 30, 40))] == ["1-10", "11-20", "21-30"]


def test_short_max_len_drops_empty_buckets(grammar: Grammar) -> None:
    spec = CorpusSpec(seed=1, train_size=50, valid_size=10, test_size=31, max_len=25)
    test = generate_splits(spec, grammar)["test"]
    counts = Counter(length_bucket(len(p.src), spec.bucket_edges) for p in test)
    assert counts == {"1-10": 11, "11-20": 10, "21-30": 10}
    assert max(len(p.src) for p in test) <= 25


def test_the_test_split_is_stratified_and_train_spans_the_lengths(small) -> None:
    test = Counter(length_bucket(len(p.src), SMALL.bucket_edges) for p in small["test"])
    assert test == {label: 10 for label in ("1-10", "11-20", "21-30", "31-40", "41+")}
    train = {len(p.src) for p in small["train"]}
    assert min(train) == SMALL.min_len and max(train) == SMALL.max_len and len(train) >= 45


def test_too_small_a_test_split_is_rejected(grammar: Grammar) -> None:
    with pytest.raises(ValueError, match="test_size"):
        generate_splits(CorpusSpec(train_size=10, valid_size=0, test_size=4), grammar)


@pytest.mark.parametrize(
    "bad",
    [
        {"min_len": 0},
        {"min_len": 20, "max_len": 10},
        {"train_size": 0},
        {"bucket_edges": (20, 10)},
    ],
)
def test_bad_spec_is_rejected(bad: dict) -> None:
    with pytest.raises(ValueError):
        CorpusSpec(**bad)


# --------------------------------------------------------------------------- determinism


def test_a_folder_of_the_previous_generator_is_refused(tmp_path: Path) -> None:
    """Same spec and grammar, older generator: its corpus differs, so it is not reused."""
    spec = CorpusSpec(seed=2, train_size=30, valid_size=5, test_size=5)
    folder = tmp_path / "c"
    assert ensure_corpus(folder, spec) is Outcome.GENERATED
    identity = json.loads((folder / CORPUS_FILE).read_text(encoding="utf-8"))
    assert identity == corpus_identity(spec) and identity["generator"] == GENERATOR
    identity["generator"] = "seq2seq.data.synthetic/2"  # before the weights of issue #20
    (folder / CORPUS_FILE).write_text(json.dumps(identity), encoding="utf-8")
    with pytest.raises(UserError, match=re.escape("generator seq2seq.data.synthetic/2 there")):
        ensure_corpus(folder, spec)


def test_a_generated_folder_has_the_mode_of_any_new_folder(tmp_path: Path) -> None:
    """Generation renames a temporary folder into place; its mode still follows the umask."""
    spec = CorpusSpec(seed=2, train_size=30, valid_size=5, test_size=5)
    umask = os.umask(0o022)
    try:
        assert ensure_corpus(tmp_path / "new" / "c", spec) is Outcome.GENERATED
    finally:
        os.umask(umask)
    assert (tmp_path / "new" / "c").stat().st_mode & 0o777 == 0o755
    assert (tmp_path / "new").stat().st_mode & 0o777 == 0o755
    assert [p.name for p in (tmp_path / "new").iterdir()] == ["c"]  # no temporary left


def test_same_seed_writes_identical_files(tmp_path: Path, grammar: Grammar) -> None:
    write_splits(generate_splits(SMALL, grammar), tmp_path / "a")
    write_splits(generate_splits(SMALL, grammar), tmp_path / "b")
    assert _files(tmp_path / "a") == _files(tmp_path / "b")


def test_different_seed_gives_different_files(tmp_path: Path, small, grammar: Grammar) -> None:
    write_splits(small, tmp_path / "a")
    other = CorpusSpec(seed=6, train_size=400, valid_size=60, test_size=50)
    write_splits(generate_splits(other, grammar), tmp_path / "b")
    a, b = _files(tmp_path / "a"), _files(tmp_path / "b")
    assert all(a[split] != b[split] for split in SPLITS)


def test_files_do_not_depend_on_hash_randomisation(tmp_path: Path) -> None:
    """Iterating a set of strings would change with PYTHONHASHSEED; the corpus must not."""
    code = (
        "import sys, types\n"
        # a bare package object skips seq2seq/__init__.py (and its torch import)
        "package = types.ModuleType('seq2seq')\n"
        "package.__path__ = [sys.argv[2]]\n"
        "sys.modules['seq2seq'] = package\n"
        "from seq2seq.data.synthetic.generator import CorpusSpec, generate_splits, write_splits\n"
        "spec = CorpusSpec(seed=3, train_size=150, valid_size=20, test_size=20)\n"
        "write_splits(generate_splits(spec), sys.argv[1])\n"
    )
    runs = [
        subprocess.Popen(
            [sys.executable, "-c", code, str(tmp_path / hash_seed), str(REPO / "seq2seq")],
            cwd=REPO,
            env={**os.environ, "PYTHONHASHSEED": hash_seed},
        )
        for hash_seed in ("1", "2")
    ]
    assert [run.wait(timeout=120) for run in runs] == [0, 0]
    assert _files(tmp_path / "1") == _files(tmp_path / "2")


# --------------------------------------------------------------------------- contents


def test_split_sizes(small: dict[str, list[Pair]]) -> None:
    assert {split: len(pairs) for split, pairs in small.items()} == {
        "train": 400,
        "valid": 60,
        "test": 50,
    }


def test_running_example_is_the_first_training_pair(small: dict[str, list[Pair]]) -> None:
    assert small["train"][0] == Pair(
        ("我", "爱", "中国"), ("I", "love", "China"), ((0, 0), (1, 1), (2, 2))
    )
    assert small["train"][0] == RUNNING_EXAMPLE
    assert all(p.src != RUNNING_EXAMPLE.src for p in small["valid"] + small["test"])


def test_sources_are_unique_within_and_across_splits(small: dict[str, list[Pair]]) -> None:
    sources = [p.src for pairs in small.values() for p in pairs]
    assert len(sources) == len(set(sources))


def test_alignments_are_in_range(small: dict[str, list[Pair]]) -> None:
    for pairs in small.values():
        for p in pairs:
            assert p.alignment
            assert all(0 <= i < len(p.src) and 0 <= j < len(p.tgt) for i, j in p.alignment)


def test_content_words_aligned_and_function_words_not(
    small: dict[str, list[Pair]], grammar: Grammar
) -> None:
    for pairs in small.values():
        for p in pairs:
            aligned_src = {i for i, _ in p.alignment or ()}
            aligned_tgt = {j for _, j in p.alignment or ()}
            for i, word in enumerate(p.src):
                if word in grammar.content_src:
                    assert i in aligned_src, p
                if word in grammar.unaligned_src:
                    assert i not in aligned_src, p
            for j, word in enumerate(p.tgt):
                if word in grammar.unaligned_tgt:
                    assert j not in aligned_tgt, p


def test_lengths_stay_in_range(small: dict[str, list[Pair]]) -> None:
    lengths = [len(p.src) for pairs in small.values() for p in pairs]
    assert min(lengths) >= SMALL.min_len
    assert max(lengths) <= SMALL.max_len
    assert sum(n >= 41 for n in lengths) >= 40


def test_tsv_round_trip(tmp_path: Path, small: dict[str, list[Pair]]) -> None:
    write_splits(small, tmp_path)
    for split in SPLITS:
        assert read_tsv(tmp_path / f"{split}.tsv") == small[split]


# --------------------------------------------------------------------------- crossing & summary


@pytest.mark.parametrize(
    ("alignment", "crossing"),
    [
        (None, False),
        ((), False),
        (((0, 0), (1, 1), (2, 2)), False),
        (((0, 0), (1, 1), (2, 1)), False),  # 吃 了 -> ate
        (((0, 0), (0, 1), (1, 2)), False),  # 不 -> do not
        (((0, 0), (1, 2), (2, 1)), True),
        (((0, 5), (1, 0), (2, 1)), True),
    ],
)
def test_has_crossing(alignment, crossing: bool) -> None:
    assert has_crossing(alignment) is crossing


def test_draw_alignment_lists_links_and_unaligned_words() -> None:
    p = Pair(("我", "吃", "了", "三", "本", "书"), ("I", "ate", "three", "books"))
    p = Pair(p.src, p.tgt, ((0, 0), (1, 1), (2, 1), (3, 2), (5, 3)))
    text = "\n".join(draw_alignment(p))
    assert "吃 -> ate" in text and "了 -> ate" in text
    assert "unaligned: zh 本 | en -" in text


def test_summary_of_the_small_corpus(small: dict[str, list[Pair]]) -> None:
    text = corpus_summary(small)
    for split in SPLITS:
        assert split in text
    assert "我 爱 中国  =>  I love China" in text
    assert "crossing" in text and "vocabulary" in text and "41+" in text


# --------------------------------------------------------------------------- defaults


def test_default_corpus(default: dict[str, list[Pair]]) -> None:
    spec = CorpusSpec()
    assert [len(default[s]) for s in SPLITS] == [64000, 1000, 1000]
    test_buckets = Counter(length_bucket(len(p.src), spec.bucket_edges) for p in default["test"])
    assert test_buckets == {label: 200 for label in ("1-10", "11-20", "21-30", "31-40", "41+")}
    # within a bucket, lengths are uniform too (about 20 pairs of each), not crowded at its start
    test_lengths = Counter(len(p.src) for p in default["test"])
    assert all(5 <= test_lengths[n] <= 50 for n in range(3, 51)), test_lengths
    train_lengths = Counter(len(p.src) for p in default["train"])
    assert min(train_lengths) == 3 and max(train_lengths) == 50
    # uniform over 3..50: about len(train) / 48 per length
    per_length = len(default["train"]) / 48
    assert all(0.75 * per_length <= train_lengths[n] <= 1.26 * per_length for n in range(3, 51))
    sources = [p.src for pairs in default.values() for p in pairs]
    assert len(sources) == len(set(sources))
    train_types = {w for p in default["train"] for w in p.src}
    assert 120 <= len(train_types) <= 250


def test_the_default_samples_include_a_long_one_the_default_corpus_covers(
    default: dict[str, list[Pair]],
) -> None:
    """The logged samples show attention on a long, reordered sentence too, in words the
    default corpus (the one the default config trains on) knows."""
    data = compose_config().data
    assert data.corpus_spec == CorpusSpec()  # the `default` fixture is that corpus
    samples = [s.split() for s in data.samples]
    assert max(len(s) for s in samples) >= 30
    vocab = Vocab.build(p.src for p in default["train"])
    assert [vocab.unknown(s) for s in samples] == [[]] * len(samples)


def test_default_corpus_shows_time_and_place_moving_after_the_object(
    default: dict[str, list[Pair]], grammar: Grammar
) -> None:
    """Somewhere a time word and a 在-phrase precede the verb in Chinese but follow its
    object in English, as in 我 昨天 在 北京 吃 了 苹果 -> I ate apples in Beijing yesterday."""
    found = 0
    for p in default["train"]:
        if len(p.src) != 7:
            continue
        cats = [grammar.categories[w] for w in p.src]
        if cats != ["pronoun", "time", "locative", "place", "verb", "perfective", "noun"]:
            continue
        target = {i: j for i, j in p.alignment or ()}
        assert target[0] < target[4] < target[6] < target[2] < target[3] < target[1], p
        found += 1
    assert found >= 1


def test_default_summary(default: dict[str, list[Pair]]) -> None:
    text = corpus_summary(default)
    assert "train 64000 | valid 1000 | test 1000" in text
    assert text.count("=>") >= 2
