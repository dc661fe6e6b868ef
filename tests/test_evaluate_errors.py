"""scripts/evaluate.py with bad input: one clear line, a non-zero exit, nothing written."""

from __future__ import annotations

import pytest

from tests.helpers.bad_input import (
    DELETE,
    LONG_NUMBER_JSON,
    NESTED_JSON,
    Case,
    Outcome,
    check_fails_cleanly,
    double_hidden_size,
    hand_edited,
    outcomes_fixture,
    plant_code,
    run_and_bad_test_split,
    run_copy,
    run_file_edited,
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
    *[Case(f"evaluate-hand-edited-{key}-{value!r}", "evaluate.py", ("{run}",),
           ("checkpoints/best.pt: ", says, "use another checkpoint"),
           prepare=run_copy("best.pt", hand_edited(key, value)))
      for key, value, says in (
          ("model_spec.attention", "evil", "'model_spec.attention' should be one of none, "),
          ("config.data", DELETE, "'config.data' is missing"),
          ("state.step", "abc", "'state.step' should be a whole number, got 'abc'"),
          ("model_spec.hidden_size", 10**7,
           "'model_spec' (hidden_size=10000000, embed_size=16) describes a model of "),
      )],
    Case("evaluate-checkpoint-of-another-attention", "evaluate.py", ("{run}",),
         ("checkpoints/best.pt and ", "metrics.json disagree about the model: attention=additive "
          "in the checkpoint, dot in metrics.json; "),
         prepare=run_file_edited("metrics.json", '"attention": "additive"', '"attention": "dot"')),
    Case("evaluate-checkpoint-of-another-kind", "evaluate.py", ("{run}",),
         ("checkpoints/best.pt and ", ".hydra/config.yaml disagree about the model: "
          "model.kind=rnn in the checkpoint, transformer in .hydra/config.yaml; "),
         prepare=run_file_edited(".hydra/config.yaml", "  kind: rnn", "  kind: transformer")),
    Case("evaluate-metrics-nested-too-deeply", "evaluate.py", ("{run}", "--device", "cpu"),
         ("the scores above were not recorded", "run/metrics.json is not valid JSON "
          "(arrays or objects nested too deeply); rerun or remove that run"),
         prepare=run_copy(metrics=NESTED_JSON), stdout=("BLEU",)),
    Case("evaluate-metrics-long-number", "evaluate.py", ("{run}", "--device", "cpu"),
         ("the scores above were not recorded", "run/metrics.json is not valid JSON "
          "(a number of more than 4300 digits); rerun or remove that run"),
         prepare=run_copy(metrics=LONG_NUMBER_JSON), stdout=("BLEU",)),
    *[Case(f"evaluate-intervention-{value}", "evaluate.py",
           ("{run}", "--intervention", value, *more), (says,), prepare=run_copy())
      for value, more, says in (
          ("random", (), "unknown intervention 'random'; use uniform, shuffle, argmax, gold"),
          ("gold", (), "--intervention gold exists along the reference only (teacher forcing)"),
          ("head:0.1", (), "intervention head:0.1: the model has one head; head ablation needs"),
          ("uniform", ("--explain",), "--explain runs every intervention itself"),
      )],
    Case("evaluate-explain-no-ig-steps", "evaluate.py", ("{run}", "--explain", "--ig-steps", "0"),
         ("--ig-sentences and --ig-steps must be at least 1, got 20 and 0",), prepare=run_copy()),
]  # fmt: skip


outcomes = outcomes_fixture(EVALUATE_CASES)


@pytest.mark.parametrize("case", [pytest.param(c, id=c.id) for c in EVALUATE_CASES])
def test_bad_input_fails_cleanly(case: Case, outcomes: dict[str, Outcome]) -> None:
    check_fails_cleanly(case, outcomes[case.id])
