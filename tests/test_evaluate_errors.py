"""scripts/evaluate.py with bad input: one clear line, a non-zero exit, nothing written."""

from __future__ import annotations

import pytest

from tests.helpers.bad_input import (
    LONG_NUMBER_JSON,
    NESTED_JSON,
    Case,
    Outcome,
    check_fails_cleanly,
    double_hidden_size,
    outcomes_fixture,
    plant_code,
    run_and_bad_test_split,
    run_copy,
    scramble,
    truncate,
)

EVALUATE_CASES = [
    Case("evaluate-missing-run", "evaluate.py", ("{tmp}/no_such_run",),
         ("no_such_run", "does not exist")),
    Case("evaluate-missing-checkpoint", "evaluate.py", ("{run}", "--checkpoint", "nope.pt"),
         ("checkpoints/nope.pt",), prepare=run_copy()),
    Case("evaluate-truncated", "evaluate.py", ("{run}",), ("best.pt", "truncated or corrupted"),
         prepare=run_copy("best.pt", truncate)),
    Case("evaluate-corrupted", "evaluate.py", ("{run}",), ("best.pt", "corrupted"),
         prepare=run_copy("best.pt", scramble)),
    Case("evaluate-code-in-checkpoint", "evaluate.py", ("{run}",), ("best.pt", "refusing"),
         prepare=run_copy("best.pt", plant_code)),
    Case("evaluate-spec-does-not-fit-weights", "evaluate.py", ("{run}",), ("do not fit",),
         prepare=run_copy("best.pt", double_hidden_size)),
    Case("evaluate-missing-data-dir", "evaluate.py", ("{run}", "--data-dir", "{tmp}/nowhere"),
         ("--data-dir", "nowhere", "does not exist"), prepare=run_copy()),
    Case("evaluate-malformed-test-split", "evaluate.py", ("{run}", "--data-dir", "{corpus}"),
         ("test.tsv:2:", "'5-5'", "out of range"), prepare=run_and_bad_test_split),
    Case("evaluate-run-is-a-file", "evaluate.py", ("README.md",),
         ("README.md is a file, not a run folder",)),
    Case("evaluate-unknown-device", "evaluate.py", ("{run}", "--device", "gpu"),
         ("--device gpu is unknown; use auto, cpu, cuda, cuda:N or mps",), prepare=run_copy()),
    Case("evaluate-negative-misses", "evaluate.py", ("{run}", "--misses", "-1"),
         ("--misses must be 0 or more, got -1",), prepare=run_copy()),
    Case("evaluate-read-only-run-folder", "evaluate.py", ("{run}", "--device", "cpu"),
         ("the scores above were not recorded in", "metrics.json", "read-only file system",
          "copy the run folder"),
         prepare=run_copy(), read_only="{run}", stdout=("BLEU", "chrF", "AER")),
    Case("evaluate-metrics-nested-too-deeply", "evaluate.py", ("{run}", "--device", "cpu"),
         ("the scores above were not recorded", "run/metrics.json is not valid JSON "
          "(arrays or objects nested too deeply); rerun or remove that run"),
         prepare=run_copy(metrics=NESTED_JSON), stdout=("BLEU",)),
    Case("evaluate-metrics-long-number", "evaluate.py", ("{run}", "--device", "cpu"),
         ("the scores above were not recorded", "run/metrics.json is not valid JSON "
          "(a number of more than 4300 digits); rerun or remove that run"),
         prepare=run_copy(metrics=LONG_NUMBER_JSON), stdout=("BLEU",)),
]  # fmt: skip


outcomes = outcomes_fixture(EVALUATE_CASES)


@pytest.mark.parametrize("case", [pytest.param(c, id=c.id) for c in EVALUATE_CASES])
def test_bad_input_fails_cleanly(case: Case, outcomes: dict[str, Outcome]) -> None:
    check_fails_cleanly(case, outcomes[case.id])
