"""scripts/translate.py with bad input: one clear line, a non-zero exit; the input limit."""

from __future__ import annotations

import pytest

from seq2seq.errors import UserError
from seq2seq.evaluation.inference import TrainedRun
from tests.helpers.bad_input import (
    Case,
    Outcome,
    check_fails_cleanly,
    check_shows_traceback,
    outcomes_fixture,
    plant_code,
    run_copy,
    scramble,
    shared_run,
    truncate,
)

TOO_LONG = " ".join(["我"] * 25)  # the toy corpus' longest source has 12 tokens: limit 24

TRANSLATE_CASES = [
    Case("translate-missing-run", "translate.py", ("{tmp}/no_such_run", "我 爱 中国"),
         ("no_such_run", "does not exist")),
    Case("translate-missing-checkpoint", "translate.py",
         ("{run}", "我 爱 中国", "--checkpoint", "nope.pt"), ("checkpoints/nope.pt",),
         prepare=shared_run),
    Case("translate-truncated", "translate.py", ("{run}", "我 爱 中国"),
         ("best.pt", "truncated or corrupted"), prepare=run_copy("best.pt", truncate)),
    Case("translate-corrupted", "translate.py", ("{run}", "我 爱 中国"), ("best.pt", "corrupted"),
         prepare=run_copy("best.pt", scramble)),
    Case("translate-code-in-checkpoint", "translate.py", ("{run}", "我 爱 中国"),
         ("best.pt", "refusing"), prepare=run_copy("best.pt", plant_code)),
    Case("translate-empty-argument", "translate.py", ("{run}", ""), ("empty input",),
         prepare=shared_run),
    Case("translate-empty-stdin", "translate.py", ("{run}",), ("empty input",),
         prepare=shared_run, stdin=""),
    Case("translate-too-long", "translate.py", ("{run}", TOO_LONG),
         ("25 tokens", "limit of 24"), prepare=shared_run),
]  # fmt: skip

DEBUG_CASES = [
    Case("translate-seq2seq-debug", "translate.py", ("{tmp}/no_such_run", "我"),
         ("UserError: run folder",), code=1, env={"SEQ2SEQ_DEBUG": "1"}),
]  # fmt: skip


outcomes = outcomes_fixture(TRANSLATE_CASES + DEBUG_CASES)


@pytest.mark.parametrize("case", [pytest.param(c, id=c.id) for c in TRANSLATE_CASES])
def test_bad_input_fails_cleanly(case: Case, outcomes: dict[str, Outcome]) -> None:
    check_fails_cleanly(case, outcomes[case.id])


@pytest.mark.parametrize("case", [pytest.param(c, id=c.id) for c in DEBUG_CASES])
def test_debug_switch_shows_the_traceback(case: Case, outcomes: dict[str, Outcome]) -> None:
    check_shows_traceback(case, outcomes[case.id])


def test_input_limit_is_twice_the_longest_training_source(tiny_run, toy_corpus):
    longest = max(
        len(line.split("\t")[0].split())
        for line in (toy_corpus / "train.tsv").read_text(encoding="utf-8").splitlines()
    )
    run = TrainedRun.load(tiny_run("additive"))
    assert run.input_limit == 2 * longest
    (at_limit,) = run.translate([" ".join(["我"] * run.input_limit)])
    assert len(at_limit.source) == run.input_limit
    with pytest.raises(UserError, match=f"limit of {run.input_limit}"):
        run.translate(["我 爱 中国", " ".join(["我"] * (run.input_limit + 1))])
