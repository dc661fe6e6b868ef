"""Tests for seq2seq.analysis.render: the Tatoeba, comparison and levers views, drawn
from small hand-made results files."""

from __future__ import annotations

from pathlib import Path

import pytest

from seq2seq.analysis.render import RENDERERS
from seq2seq.analysis.results import Machine, Provenance, Record, add_record
from seq2seq.errors import UserError

MACHINE = Machine(cpu="Test CPU", cores=2, torch="2.13.0+cpu", python="3.11.7")


def _run(results: Path, key: str, *, command: str, bleu: float | None, wall: float | None,
         beside: str = "nothing else", **data) -> None:  # fmt: skip
    body = {"test": {"bleu": bleu, "chrf": None if bleu is None else bleu + 10}, **data}
    provenance = Provenance(command, "0" * 40, MACHINE, "2026-12-05T12:00:00Z", wall, beside)
    add_record(results / "tatoeba.json", Record(key, provenance, body))


def _render(name: str, results: Path) -> str:
    return RENDERERS[name](results)


def test_runs_are_grouped_by_their_key_without_the_seed(tmp_path: Path) -> None:
    for seed, (bleu, wall) in enumerate([(27.0, 1200.0), (28.0, 1320.0), (29.0, 1260.0)]):
        _run(tmp_path, f"gru-seed{seed}", command=f"train seed={seed}", bleu=bleu, wall=wall,
             train_seconds=1000.0 + seed)  # fmt: skip
    _run(tmp_path, "transformer-seed0", command="train", bleu=30.0, wall=None)
    _run(tmp_path, "gru-default", command="train", bleu=None, wall=90.0)  # no seed: its own
    table = _render("tatoeba.presets", tmp_path).splitlines()
    assert table[0] == "| runs of | runs | test BLEU | test chrF | update seconds | wall minutes |"
    assert table[2:] == [
        "| gru-default | 1 | n/a | n/a | n/a | 1.5 |",
        "| gru | 3 | 28.00 ± 1.00 | 38.00 ± 1.00 | 1001 | 20.0–22.0 |",
        # one run: no sd; no wall time and no update seconds: n/a
        "| transformer | 1 | 30.00 ± – | 40.00 ± – | n/a | n/a |",
    ]


def test_own_sentences_one_row_per_source_one_column_per_run(tmp_path: Path) -> None:
    translate = "python scripts/translate.py RUN --beam-size 5"
    _run(
        tmp_path,
        "a",
        command="train",
        bleu=1.0,
        wall=1.0,
        own_sentences={"command": translate, "translations": [["我", "i"], ["你", "you"]]},
    )
    _run(
        tmp_path,
        "b",
        command="train",
        bleu=1.0,
        wall=1.0,
        own_sentences={"command": translate, "translations": [["你", "thou"]]},
    )
    _run(tmp_path, "c", command="train", bleu=1.0, wall=1.0)  # keeps no sentences
    lines = _render("tatoeba.sentences", tmp_path).splitlines()
    assert lines[:4] == [
        "| source | a | b |",
        "|---|---|---|",
        "| 我 | i | n/a |",
        "| 你 | you | thou |",
    ]
    assert lines[-1] == f"Translated by `{translate}`, RUN the run a column names."


def test_no_own_sentences_is_said_in_one_line(tmp_path: Path) -> None:
    _run(tmp_path, "c", command="train", bleu=1.0, wall=1.0)
    with pytest.raises(UserError, match="no record with own_sentences"):
        _render("tatoeba.sentences", tmp_path)


def test_runs_provenance_writes_seeds_as_n_and_says_what_ran_beside(tmp_path: Path) -> None:
    for seed in (0, 1):
        _run(tmp_path, f"r{seed}", command=f"python scripts/train.py seed={seed} data.seed=7",
             bleu=1.0, wall=60.0)  # fmt: skip
    line = _render("tatoeba.provenance", tmp_path)
    assert line == (
        "2 runs of `python scripts/train.py seed=N data.seed=7`; measured 2026-12-05 on Test CPU "
        "(2 cores, CPU only), torch 2.13.0+cpu; nothing else beside each (each run's wall time "
        "in the table)."
    )
    _run(tmp_path, "r2", command="python scripts/train.py seed=2 data.seed=7", bleu=1.0,
         wall=60.0, beside="the test suite")  # fmt: skip
    assert "what ran beside each: results/tatoeba.json" in _render("tatoeba.provenance", tmp_path)


def _stat(mean: float | None, sd: float | None = None, n: int = 3) -> dict:
    return {"mean": mean, "sd": sd, "n": n}


def test_the_tatoeba_comparison_renders_from_its_own_file(tmp_path: Path) -> None:
    metrics = {"bleu": _stat(21.6, 0.48), "chrf": _stat(37.64, 0.3),
               "exact_match": _stat(0.067, 0.003), "aer": _stat(None, None, 0),
               "parameters": _stat(1968383, 0.0), "train_seconds": _stat(459.0, 2.0)}  # fmt: skip
    document = {
        "variants": [{"variant": "additive", "n_seeds": 3, "n_runs": 3, "metrics": metrics,
                      "bleu_by_length": {"1-10": _stat(26.45, 1.3)}}],
        "buckets": ["1-10"],
        "bucket_sizes": {"1-10": 735},
    }  # fmt: skip
    provenance = Provenance("train -m", None, MACHINE, "2026-12-01T05:49:29Z", 3120.0, "tests")
    add_record(tmp_path / "tatoeba_compare.json", Record("compare", provenance, document))
    table = _render("tatoeba-compare.table", tmp_path).splitlines()
    assert table[0] == (
        "| variant | seeds | BLEU | chrF | exact match | parameters | train time (s) |"
    )
    assert table[2] == (
        "| additive | 3 | 21.60 ± 0.48 | 37.64 ± 0.30 | 0.067 ± 0.003 | 1,968,383 | 459.0 ± 2.0 |"
    )
    assert _render("tatoeba-compare.by-length", tmp_path).splitlines()[2] == "| additive | 26.45 |"
    assert _render("tatoeba-compare.provenance", tmp_path) == (
        "`train -m`: 3 runs, measured 2026-12-01 on Test CPU (2 cores, CPU only), torch "
        "2.13.0+cpu, tests beside it: 52.0 min of wall time."
    )


def test_levers_are_text_in_their_order(tmp_path: Path) -> None:
    for order, key in ((2, "a-second"), (1, "b-first")):
        data = {"order": order, "lever": key, "effect": "e", "kept": "no", "why": "w"}
        provenance = Provenance("train", None, MACHINE, "2026-12-05T12:00:00Z", None)
        add_record(tmp_path / "levers" / "tatoeba.json", Record(key, provenance, data))
    assert _render("levers.tatoeba", tmp_path).splitlines() == [
        "| lever | measured effect | kept? | why | measured |",
        "|---|---|---|---|---|",
        "| b-first | e | no | w | 2026-12-05, Test CPU |",
        "| a-second | e | no | w | 2026-12-05, Test CPU |",
    ]
