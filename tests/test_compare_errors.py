"""scripts/compare.py with bad input: one clear line, a non-zero exit, nothing written."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.helpers.bad_input import (
    LONG_NUMBER_JSON,
    NESTED_JSON,
    Case,
    Outcome,
    Shared,
    check_fails_cleanly,
    outcomes_fixture,
)
from tests.helpers.metrics import fake_metrics, fake_sweep, write_run


def sweep_with(name: str, content: dict | str | None):
    """A fake sweep plus the run folder ``name`` holding ``content`` as its metrics.json
    (``None``: a folder Hydra made whose training never wrote one)."""

    def prepare(shared: Shared, tmp: Path) -> dict[str, Path]:
        sweep = tmp / "sweep"
        if content is None:
            (sweep / name / ".hydra").mkdir(parents=True)
            (sweep / name / "train.log").write_text("started\n", encoding="utf-8")
        else:
            fake_sweep(sweep)
            write_run(sweep / name, content)
        return {"sweep": sweep}

    return prepare


NAN_BLEU = json.dumps(fake_metrics("dot")).replace('"bleu": 20.0', '"bleu": NaN', 1)
EVALUATIONS_ONLY = {"evaluations": {"test best.pt beam=1 x": {"split": "test"}}}

COMPARE_CASES = [
    Case("compare-nan-in-metrics", "compare.py", ("{sweep}",),
         ("dot_seed0/metrics.json", "'test.bleu' should be a finite number, got nan"),
         prepare=sweep_with("dot_seed0", NAN_BLEU)),
    Case("compare-no-finished-run", "compare.py", ("{sweep}",),
         ("no finished runs under", "training did not finish in", "(no metrics.json)"),
         prepare=sweep_with("dot_seed0", None)),
    Case("compare-evaluations-only", "compare.py", ("{sweep}/dot_seed0", "--out", "{tmp}/out"),
         ("training did not finish", "holds only evaluate.py's evaluations"),
         prepare=sweep_with("dot_seed0", EVALUATIONS_ONLY)),
    Case("compare-out-read-only", "compare.py", ("{sweep}", "--out", "{tmp}/ro/out"),
         ("cannot write", "ro/out", "read-only file system", "choose another place"),
         prepare=sweep_with("dot_seed0", fake_metrics("dot")), read_only="{tmp}/ro"),
    Case("compare-metrics-nested-too-deeply", "compare.py", ("{sweep}",),
         ("dot_seed0/metrics.json is not valid JSON (arrays or objects nested too deeply); "
          "rerun or remove that run",),
         prepare=sweep_with("dot_seed0", NESTED_JSON)),
    Case("compare-metrics-long-number", "compare.py", ("{sweep}",),
         ("dot_seed0/metrics.json is not valid JSON (a number of more than 4300 digits); "
          "rerun or remove that run",),
         prepare=sweep_with("dot_seed0", LONG_NUMBER_JSON)),
]  # fmt: skip


outcomes = outcomes_fixture(COMPARE_CASES)


@pytest.mark.parametrize("case", [pytest.param(c, id=c.id) for c in COMPARE_CASES])
def test_bad_input_fails_cleanly(case: Case, outcomes: dict[str, Outcome]) -> None:
    check_fails_cleanly(case, outcomes[case.id])
