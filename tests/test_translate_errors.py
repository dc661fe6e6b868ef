"""scripts/translate.py with bad input: one clear line, a non-zero exit; the input limit."""

from __future__ import annotations

import pytest

from seq2seq.errors import UserError
from seq2seq.evaluation.inference import TrainedRun
from tests.helpers.bad_input import (
    DELETE,
    Case,
    Outcome,
    check_fails_cleanly,
    check_shows_traceback,
    hand_edited,
    outcomes_fixture,
    plant_code,
    run_copy,
    run_file_edited,
    scramble,
    shared_run,
    truncate,
)

TOO_LONG = " ".join(["我"] * 25)  # the toy corpus' longest source has 12 tokens: limit 24
NOT_UTF8 = "我 爱 中国\n".encode() + "我 爱 中国\n".encode("gb18030")
#: The bytes of GB18030 text in an argument, as Python hands them over (surrogate escapes).
GB18030_ARGUMENT = "中国".encode("gb18030").decode("utf-8", "surrogateescape")


def no_heatmap(name: str):
    def check(paths, message) -> None:
        assert not (paths["tmp"] / name).exists()

    return check


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
    Case("translate-run-is-a-file", "translate.py", ("README.md", "我 爱 中国"),
         ("README.md is a file, not a run folder",)),
    Case("translate-not-utf8-stdin", "translate.py", ("{run}",),
         ("stdin:2: not valid UTF-8", "iconv"), prepare=shared_run, stdin=NOT_UTF8),
    Case("translate-not-utf8-argument", "translate.py", ("{run}", "我 爱", GB18030_ARGUMENT),
         ("sentence 2 (an argument) is not valid UTF-8",), prepare=shared_run),
    Case("translate-carriage-return-stdin", "translate.py", ("{run}",),
         ("stdin:1: a carriage return", "inside the line"), prepare=shared_run,
         stdin="我 爱\r中国\n"),
    Case("translate-unknown-device", "translate.py", ("{run}", "我", "--device", "tpu"),
         ("--device tpu is unknown; use auto, cpu, cuda, cuda:N or mps",), prepare=shared_run),
    Case("translate-absent-gpu", "translate.py", ("{run}", "我", "--device", "cuda:5"),
         ("--device cuda:5 but", "CUDA GPU"), prepare=shared_run),
    Case("translate-heatmap-unknown-format", "translate.py",
         ("{run}", "我", "--heatmap", "{tmp}/map.docx"),
         ("map.docx", "unknown image format '.docx'", ".png", ".pdf", ".svg"),
         prepare=shared_run, check=no_heatmap("map.docx")),
    Case("translate-heatmap-to-a-folder", "translate.py", ("{run}", "我", "--heatmap", "{tmp}"),
         ("--heatmap", "is a folder; give a file name"), prepare=shared_run),
    Case("translate-heatmap-read-only", "translate.py",
         ("{run}", "我", "--heatmap", "{tmp}/ro/map.png"),
         ("cannot write", "map.png", "read-only file system"), prepare=shared_run,
         read_only="{tmp}/ro", check=no_heatmap("ro")),
    Case("translate-heatmap-full-disk", "translate.py", ("{run}", "我", "--heatmap", "/dev/full"),
         ("cannot write /dev/full: no space left",), prepare=shared_run),
    *[Case(f"translate-alpha-{value}", "translate.py",
           ("{run}", "我 爱 中国", "--beam-size", "5", f"--alpha={value}"),
           (f"--alpha must be a number from 0 (no length penalty) to 2, got {value}",),
           prepare=shared_run)
      for value in ("nan", "inf", "-inf", "-0.5", "2.5")],
    *[Case(f"translate-hand-edited-{key}-{value!r}", "translate.py", ("{run}", "我 爱 中国"),
           ("checkpoints/best.pt: ", says, "use another checkpoint"),
           prepare=run_copy("best.pt", hand_edited(key, value)))
      for key, value, says in (
          ("model_spec.hidden_size", -4, "'model_spec.hidden_size' should be positive, got -4"),
          ("model_spec.hidden_size", "32",
           "'model_spec.hidden_size' should be an integer, got '32'"),
          ("model_spec.attention", "evil", "'model_spec.attention' should be one of none, "),
          ("config.data", DELETE, "'config.data' is missing"),
          ("max_src_len", "12", "'max_src_len' should be an integer, got '12'"),
          ("state.step", "abc", "'state.step' should be a whole number, got 'abc'"),
          ("model_spec.hidden_size", 10**7,
           "'model_spec' (hidden_size=10000000, embed_size=16) describes a model of "),
      )],
    Case("translate-checkpoint-of-another-attention", "translate.py", ("{run}", "我 爱 中国"),
         ("checkpoints/best.pt and ", "metrics.json disagree about the model: attention=additive "
          "in the checkpoint, dot in metrics.json; "),
         prepare=run_file_edited("metrics.json", '"attention": "additive"', '"attention": "dot"')),
    Case("translate-checkpoint-of-another-kind", "translate.py", ("{run}", "我 爱 中国"),
         ("checkpoints/best.pt and ", ".hydra/config.yaml disagree about the model: "
          "model.kind=rnn in the checkpoint, transformer in .hydra/config.yaml; "),
         prepare=run_file_edited(".hydra/config.yaml", "  kind: rnn", "  kind: transformer")),
    *[Case(f"translate-intervention-{value}", "translate.py",
           ("{run}", "我 爱 中国", "--intervention", value), (says,), prepare=shared_run)
      for value, says in (
          ("random", "unknown intervention 'random'; use uniform, shuffle, argmax, gold, head:H"),
          ("gold", "--intervention gold exists along a reference translation only"),
          ("head:1", "intervention head:1: the model has one head; head ablation needs "
                     "attention=multihead or the Transformer"),
      )],
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
