"""The shipped Tatoeba corpus: read compressed, split by data.seed, scored like MT papers."""

from __future__ import annotations

import gzip
import hashlib
import lzma
import re
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest
import torch

from seq2seq.data.batching import ParallelDataset
from seq2seq.data.corpus import Pair, RawTarget, TsvFormat, read_tsv, tokenize_tgt
from seq2seq.data.loading import load_splits
from seq2seq.data.vocab import Vocab
from seq2seq.errors import UserError
from seq2seq.evaluation import scoring
from seq2seq.evaluation.scoring import bleu_inputs
from seq2seq.evaluation.summary import RunSummary
from seq2seq.model.checkpoint import load_checkpoint
from tests.helpers.config import small_data, tatoeba_data
from tests.helpers.metrics import full_metrics
from tests.helpers.runs import REPO, run_script, script_env

SHIPPED = REPO / "data" / "tatoeba" / "cmn-eng.txt.xz"
README = REPO / "data" / "tatoeba" / "README.md"
LINES = [
    "Hi.\t嗨。\tCC-BY 2.0 (France) Attribution: tatoeba.org #1 (a) & #2 (b)",
    "Tom, come here!\t汤姆，过来！\tCC-BY 2.0 (France) Attribution: tatoeba.org #3 (c) & #4 (d)",
    "It's 7:45.\t现在七点四十五分。\tCC-BY 2.0 (France) Attribution: tatoeba.org #5 (e) & #6 (f)",
]
FMT = TsvFormat(
    1, 0, None, char_level_src=True, lowercase_tgt=True, split_tgt_punct=True, keep_raw=True
)


def small_corpus(n: int = 60) -> str:
    """``n`` distinct Tatoeba-style lines (English<TAB>Chinese<TAB>attribution)."""
    digits = "零一二三四五六七八九"
    return "".join(
        f"Number {k}, please.\t第{digits[k // 10]}{digits[k % 10]}号。\tCC-BY #{k}\n"
        for k in range(n)
    )


def real_pair(text: str) -> Pair:
    """A pair of a lowercased, punctuation-split corpus that kept its raw target."""
    return Pair(("x",), tokenize_tgt(text, True, True), tgt_raw=RawTarget(text, True, True))


def test_config_reads_the_shipped_file_and_nothing_else(tmp_path, monkeypatch):
    """From any working directory: the shipped corpus is found through the package."""
    monkeypatch.chdir(tmp_path)
    data = tatoeba_data()
    assert data.path == str(SHIPPED) and Path(data.path).is_file()


def test_a_corpus_of_ones_own_stays_relative_to_the_working_directory():
    assert tatoeba_data(path="my/cmn.txt").path == "my/cmn.txt"


def test_training_on_the_shipped_corpus_works_from_another_folder(tmp_path):
    result = subprocess.run(
        [sys.executable, str(REPO / "scripts" / "train.py"), "data=tatoeba", "--cfg", "job",
         "--resolve"],
        cwd=tmp_path, capture_output=True, text=True, timeout=300, env=script_env(),
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert f"path: {SHIPPED}" in result.stdout


def test_readme_checksums_and_count_match_the_shipped_file():
    readme = README.read_text(encoding="utf-8")
    raw = lzma.decompress(SHIPPED.read_bytes())
    assert hashlib.sha256(SHIPPED.read_bytes()).hexdigest() in readme
    assert hashlib.sha256(raw).hexdigest() in readme
    assert "CC-BY 2.0" in readme and "tatoeba.org" in readme and "29,155" in readme
    lines = raw.decode("utf-8").splitlines()
    assert len([line for line in lines if line.strip()]) == 29155
    assert all("Attribution: tatoeba.org" in line.split("\t")[2] for line in lines if line)


def test_shipped_corpus_loads_splits_and_keeps_raw_targets(monkeypatch):
    monkeypatch.chdir(REPO)  # config paths are relative to the working directory
    splits = load_splits(tatoeba_data())
    assert [len(splits[s]) for s in ("valid", "test")] >= [1000, 1000]
    assert sum(len(s) for s in splits.values()) == 29155
    assert not {p.src for p in splits["train"]} & {p.src for p in splits["test"]}
    pair = splits["test"][0]
    assert pair.tgt_raw is not None and pair.tgt_raw.lowercased and pair.tgt_raw.split_punct
    assert tokenize_tgt(pair.tgt_raw.text, True, True) == pair.tgt


@pytest.mark.parametrize("compress", [lzma.compress, gzip.compress], ids=["xz", "gz"])
def test_compressed_file_reads_like_plain(tmp_path, compress):
    text = "\n".join(LINES) + "\n\n"
    plain = tmp_path / "c.txt"
    plain.write_text(text, encoding="utf-8")
    packed = tmp_path / f"c.txt.{'xz' if compress is lzma.compress else 'gz'}"
    packed.write_bytes(compress(text.encode()))
    pairs = read_tsv(packed, FMT)
    assert pairs == read_tsv(plain, FMT)
    assert [p.tgt_raw.text for p in pairs if p.tgt_raw] == ["Hi.", "Tom, come here!", "It's 7:45."]
    assert pairs[1].tgt == ("tom", ",", "come", "here", "!")


@pytest.mark.parametrize("compress", [lzma.compress, gzip.compress], ids=["xz", "gz"])
def test_compressed_bad_line_names_file_and_line(tmp_path, compress):
    suffix = "xz" if compress is lzma.compress else "gz"
    missing_column = tmp_path / f"cols.txt.{suffix}"
    missing_column.write_bytes(compress("\n".join([LINES[0], LINES[1], "only english"]).encode()))
    with pytest.raises(UserError, match=rf"^{re.escape(str(missing_column))}:3: expected at least"):
        read_tsv(missing_column, FMT)
    bad_utf8 = tmp_path / f"utf.txt.{suffix}"
    bad_utf8.write_bytes(compress(LINES[0].encode() + b"\n\xff\tx\tcc\n"))
    with pytest.raises(UserError, match=rf"^{re.escape(str(bad_utf8))}:2: not valid UTF-8"):
        read_tsv(bad_utf8, FMT)


def test_damaged_archive_is_a_user_error(tmp_path):
    broken = tmp_path / "c.txt.xz"
    broken.write_bytes(lzma.compress(small_corpus().encode())[:-40])
    with pytest.raises(UserError, match=r"c\.txt\.xz: not a readable xz file"):
        read_tsv(broken, FMT)


def test_split_is_fixed_by_data_seed_and_file(tmp_path):
    path = tmp_path / "c.txt.gz"
    path.write_bytes(gzip.compress(small_corpus().encode()))
    data = tatoeba_data(path=str(path), valid_size=10, test_size=10)

    def test_sources(**changes):
        return [p.src for p in load_splits(replace(data, **changes))["test"]]

    assert test_sources() == test_sources()  # same seed, same file: same split
    assert test_sources(seed=1) != test_sources()
    other = tmp_path / "other.txt"
    other.write_text(small_corpus(61), encoding="utf-8")
    assert test_sources(path=str(other)) != test_sources()  # nothing cached across files


def test_real_pairs_score_detokenized_with_13a():
    raw = ["Hi.", "Tom, come here!", 'He said, "It\'s nine."']
    pairs = [
        Pair(("x",), tokenize_tgt(r, True, True), tgt_raw=RawTarget(r, True, True)) for r in raw
    ]
    scored = bleu_inputs([p.tgt for p in pairs], pairs)
    assert scored.tokenize == "13a" and scored.references == raw
    bleu = scored.bleu(scored.hypotheses, scored.references)
    assert bleu.score == pytest.approx(100.0)
    assert "tok:13a" in bleu.signature and "case:lc" in bleu.signature
    assert scored.chrf(scored.hypotheses, scored.references).score == pytest.approx(100.0)


def test_synthetic_pairs_keep_tokenized_scoring():
    pairs = [Pair(("x",), ("i", "love", "china"))]
    scored = bleu_inputs([["i", "love", "china"]], pairs)
    assert scored.tokenize == "none"
    assert "tok:none" in scored.bleu(scored.hypotheses, scored.references).signature


def test_evaluation_records_how_bleu_was_computed(monkeypatch):
    raw = ["Tom, come here right now!", "I'm from Canada, not the U.S."]
    pairs = [real_pair(r) for r in raw]
    src_vocab = Vocab.build([p.src for p in pairs], 1)
    tgt_vocab = Vocab.build([p.tgt for p in pairs], 1)
    dataset = ParallelDataset(pairs, src_vocab, tgt_vocab)
    # A perfect translator: only the scoring is under test here.
    monkeypatch.setattr(scoring, "translate_dataset", lambda *a, **k: [list(p.tgt) for p in pairs])
    monkeypatch.setattr(scoring, "validation_loss_sum", lambda *a, **k: (0.0, 1))
    scores = scoring.evaluate(
        None, dataset, tgt_vocab, batch_size=2, device=torch.device("cpu"), full=False
    ).scores
    assert scores.bleu_tokenize == "13a" and scores.bleu == pytest.approx(100.0)


def test_metrics_json_accepts_how_bleu_was_computed():
    data = full_metrics()
    for tokenize in ("13a", "none"):
        data["test"]["bleu_tokenize"] = tokenize
        assert RunSummary.from_dict(data).test.bleu_tokenize == tokenize
    del data["test"]["bleu_tokenize"]
    assert RunSummary.from_dict(data).test.bleu_tokenize is None  # older files still load
    data["test"]["bleu_tokenize"] = "intl"
    with pytest.raises(UserError, match=r"'test\.bleu_tokenize' should be"):
        RunSummary.from_dict(data)


def test_a_synthetic_folder_keeps_tokenized_scoring_even_read_as_plain_tsv(tmp_path):
    generated = load_splits(small_data(tmp_path / "synthetic"))  # synthetic=true generates it
    as_tsv = load_splits(replace(small_data(tmp_path / "synthetic"), synthetic=False))
    assert as_tsv["test"] == generated["test"]
    assert all(p.tgt_raw is None for p in as_tsv["test"])  # evaluate --data-dir: still tok:none
    own = tmp_path / "own"
    own.mkdir()
    for split in ("train", "valid", "test"):
        (own / f"{split}.tsv").write_text("我 爱 你\tI love you.\n", encoding="utf-8")
    mine = load_splits(replace(small_data(own), synthetic=False, alignment_column=None))
    assert mine["test"][0].tgt_raw == RawTarget("I love you.")  # a user's corpus: tok:13a


def test_a_run_refuses_a_corpus_file_changed_since_training(tmp_path):
    """evaluate.py re-splits data.path: a changed file would give another test split, so the
    checkpoint records the file's SHA-256 and evaluation (and resume) refuse a mismatch."""
    corpus = tmp_path / "c.txt"
    corpus.write_text(small_corpus(), encoding="utf-8")
    run_dir = tmp_path / "run"
    trained = run_script(
        "train.py",
        "data=tatoeba",
        f"data.path={corpus}",
        "data.valid_size=8",
        "data.test_size=8",
        "model.embed_size=16",
        "model.hidden_size=16",
        "train.max_steps=4",
        "train.eval_every=2",
        "train.beam_size=1",
        "device=cpu",
        f"hydra.run.dir={run_dir}",
    )
    assert trained.returncode == 0, trained.stderr[-3000:]
    assert load_checkpoint(run_dir / "checkpoints" / "best.pt").corpus_sha256 == (
        hashlib.sha256(corpus.read_bytes()).hexdigest()
    )
    assert run_script("evaluate.py", str(run_dir)).returncode == 0
    metrics = (run_dir / "metrics.json").read_bytes()
    corpus.write_text(small_corpus(61), encoding="utf-8")  # one more pair: another split
    changed = run_script("evaluate.py", str(run_dir))
    assert changed.returncode == 2 and "Traceback" not in changed.stderr
    assert len(changed.stderr.strip().splitlines()) == 1
    assert "has changed since this run was trained" in changed.stderr
    assert (run_dir / "metrics.json").read_bytes() == metrics  # nothing overwritten
