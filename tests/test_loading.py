"""The synthetic corpus on disk: keyed by its generator spec, never reused across specs,
and generated safely by concurrent jobs."""

from __future__ import annotations

import json
import logging
import subprocess
import sys
import time

import pytest

from seq2seq.data.corpus import read_tsv
from seq2seq.data.loading import load_splits
from seq2seq.data.synthetic.generator import generate_splits, write_splits
from seq2seq.errors import UserError
from tests.helpers.config import SMALL, compose_config, small_data
from tests.helpers.runs import REPO, script_env


def test_the_default_folder_is_keyed_by_the_corpus_spec_not_the_training_seed():
    default = compose_config().data.dir
    assert default.startswith("data/synthetic/")
    assert compose_config("seed=1").data.dir == default  # init seeds share one corpus
    assert compose_config("data.seed=1").data.dir != default
    assert compose_config("data.train_size=3000").data.dir != default
    assert compose_config("data.max_len=20").data.dir != default
    assert compose_config("data.dir=elsewhere").data.dir == "elsewhere"


def test_the_corpus_seed_is_data_seed_and_corpus_json_records_the_spec(tmp_path):
    splits = load_splits(small_data(tmp_path / "c", seed=5))
    assert splits == generate_splits(small_data(seed=5).corpus_spec)
    identity = json.loads((tmp_path / "c" / "corpus.json").read_text(encoding="utf-8"))
    assert identity["seed"] == 5 and identity["train_size"] == 60 and identity["max_len"] == 12
    assert len(identity["grammar_sha256"]) == 64


@pytest.mark.parametrize(
    ("change", "named"),
    [({"seed": 1}, "data.seed"), ({"train_size": 70}, "data.train_size"),
     ({"min_len": 4}, "data.min_len")],
)  # fmt: skip
def test_a_corpus_of_another_spec_is_refused_with_what_differs(tmp_path, change, named):
    folder = tmp_path / "c"
    first = load_splits(small_data(folder))
    with pytest.raises(UserError, match=named) as caught:
        load_splits(small_data(folder, **change))
    assert "data.dir" in str(caught.value) and "delete" in str(caught.value)
    assert load_splits(small_data(folder)) == first  # untouched


def test_a_changed_grammar_is_refused(tmp_path):
    folder = tmp_path / "c"
    load_splits(small_data(folder))
    identity = json.loads((folder / "corpus.json").read_text(encoding="utf-8"))
    identity["grammar_sha256"] = "0" * 64
    (folder / "corpus.json").write_text(json.dumps(identity), encoding="utf-8")
    with pytest.raises(UserError, match="grammar"):
        load_splits(small_data(folder))


def test_a_folder_of_an_older_version_is_adopted_only_when_it_holds_this_spec(tmp_path):
    same, other = tmp_path / "same", tmp_path / "other"
    write_splits(generate_splits(small_data().corpus_spec), same)
    write_splits(generate_splits(small_data(seed=1).corpus_spec), other)
    assert load_splits(small_data(same)) == generate_splits(small_data().corpus_spec)
    assert (same / "corpus.json").is_file()
    with pytest.raises(UserError, match=r"corpus\.json"):
        load_splits(small_data(other))
    assert not (other / "corpus.json").exists()


GENERATE = """
import sys, time
from seq2seq.data.config import DataConfig
from seq2seq.data.loading import load_splits
data = DataConfig(**{sizes}, dir=sys.argv[1])
while time.time() < float(sys.argv[2]):
    time.sleep(0.001)
load_splits(data)
"""


def test_concurrent_first_use_gives_one_consistent_corpus(tmp_path):
    """Jobs of a parallel sweep start together on one missing folder: all succeed."""
    folder = tmp_path / "corpus"
    sizes = {**SMALL, "train_size": 2000}
    code = GENERATE.format(sizes=sizes)
    start = time.time() + 3.0  # every process waits for the same moment
    jobs = [
        subprocess.Popen(
            [sys.executable, "-c", code, str(folder), str(start)],
            cwd=REPO,
            env=script_env({"PYTHONPATH": str(REPO)}),
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(3)
    ]
    errors = [job.communicate(timeout=300)[1] for job in jobs]
    assert [job.returncode for job in jobs] == [0, 0, 0], errors
    expected = generate_splits(small_data(**sizes).corpus_spec)
    assert {p.name for p in folder.iterdir()} == {
        "train.tsv", "valid.tsv", "test.tsv", "corpus.json",
    }  # fmt: skip
    assert {split: read_tsv(folder / f"{split}.tsv") for split in expected} == expected
    assert [p.name for p in tmp_path.iterdir()] == ["corpus"]  # no temporary left behind


def test_generating_the_corpus_is_logged_with_its_folder_and_sizes(tmp_path, caplog):
    folder = tmp_path / "c"
    with caplog.at_level(logging.INFO, logger="seq2seq"):
        load_splits(small_data(folder))
    (message,) = [r.getMessage() for r in caplog.records if "generated" in r.getMessage()]
    assert str(folder) in message and "60 train / 10 valid / 10 test" in message
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="seq2seq"):
        load_splits(small_data(folder))
    assert not [r for r in caplog.records if "generated" in r.getMessage()]
