"""The evaluate, translate and make_corpus entry points, run as a user would."""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import sys

import pytest

from tests.helpers.runs import (
    REPO,
    SHARED_RUN_OVERRIDES,
    TOY_LEXICON,
    run_script,
    script_env,
)


def test_translate_arguments_stdin_beam_and_heatmaps(tiny_run, tmp_path):
    run_dir = tiny_run("additive")
    result = run_script(  # options between the run and the sentences, as docs/tatoeba.md has it
        "translate.py",
        str(run_dir),
        "--beam-size",
        "1",
        "我 爱 中国",
        "我爱中国",
        "--heatmap",
        str(tmp_path / "map.png"),
    )
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert len(lines) == 2 and lines[0] == lines[1]  # unsegmented input is split into known words
    english = {*TOY_LEXICON.values(), "<unk>"}
    assert all(word in english for word in " ".join(lines).split())
    for name in ("map_1.png", "map_2.png"):
        assert (tmp_path / name).stat().st_size > 1000
    beam = run_script(
        "translate.py", str(run_dir), "--beam-size", "3", input_text="我 爱 中国\n\n他 吃 苹果\n"
    )
    assert beam.returncode == 0, beam.stderr
    assert len(beam.stdout.splitlines()) == 2


def test_translate_warns_about_unknown_words(tiny_run):
    result = run_script("translate.py", str(tiny_run("additive")), "我 爱 火星")
    assert result.returncode == 0
    assert "unknown words mapped to <unk>: 火星" in result.stderr


def test_evaluate_records_every_metric_beside_trainings_own(tiny_run, toy_corpus, tmp_path):
    run_dir = tmp_path / "run"  # evaluate.py records into the run: a copy of the shared one
    shutil.copytree(tiny_run("multihead"), run_dir)
    before = json.loads((run_dir / "metrics.json").read_text(encoding="utf-8"))
    result = run_script(
        "evaluate.py", str(run_dir), "--split", "valid", "--beam-size", "2", "--misses", "2"
    )
    assert result.returncode == 0, result.stderr
    assert "BLEU by source length" in result.stdout and "AER best head" in result.stdout
    # the tiny model misses most sentences: their count agrees with the exact match printed
    # above it, and two of them are shown with their first wrong word in brackets
    exact = float(result.stdout.split("exact match %")[1].split()[0])
    missed, of = result.stdout.split("Missed (output not exactly the reference): ")[1].split()[:3:2]
    assert int(missed) == round((100 - exact) * int(of) / 100) and int(of) > 2
    assert (
        result.stdout.count("      reference  ") == 2
        and "more (--misses N shows N)" in result.stdout
    )
    after = json.loads((run_dir / "metrics.json").read_text(encoding="utf-8"))
    for key, value in before.items():  # training's own record, test scores included, intact
        assert after[key] == value, key
    (evaluation,) = after["evaluations"].values()
    assert evaluation["split"] == "valid" and evaluation["checkpoint"] == "best.pt"
    assert evaluation["step"] == before["best_step"] and evaluation["beam_size"] == 2
    assert evaluation["corpus"] == str(toy_corpus) and len(evaluation["corpus_sha256"]) == 64
    valid = evaluation["scores"]
    for key in ("bleu", "chrf", "exact_match", "token_accuracy", "aer", "aer_best_head",
                "bleu_by_length", "attention_entropy"):  # fmt: skip
        assert valid[key] is not None, key
    assert len(valid["aer_per_head"]) == 4 and valid["beam_size"] == 2
    # a TSV corpus (not the synthetic one) is scored on detokenized text, as MT papers do
    assert valid["bleu_signature"].startswith("nrefs:1|") and "tok:13a" in valid["bleu_signature"]


def test_a_wrong_run_folder_is_refused_before_torch_is_imported(tmp_path):
    """translate, evaluate and serve check the folder first: one line in a fraction of a
    second, not after the seconds of importing PyTorch (and before stdin is read)."""
    unfinished = tmp_path / "unfinished"
    (unfinished / "checkpoints").mkdir(parents=True)
    (unfinished / "checkpoints" / "best.pt").write_bytes(b"")
    commands = [
        ["scripts/translate.py", str(tmp_path / "nowhere"), "我"],
        ["scripts/translate.py", "README.md"],  # no sentence: stdin would be read next
        ["scripts/evaluate.py", str(unfinished), "--checkpoint", "last.pt"],
        ["scripts/serve.py", str(unfinished)],
    ]
    code = (
        "import runpy, sys\n"
        f"for sys.argv in {commands!r}:\n"
        "    try:\n        runpy.run_path(sys.argv[0], run_name='__main__')\n"
        "    except SystemExit as stop:\n        print('exit', stop.code)\n"
        "print('torch imported:', 'torch' in sys.modules)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=60
    )
    assert result.stdout.splitlines() == ["exit 2"] * 4 + ["torch imported: False"], result
    assert result.stderr.splitlines() == [
        f"error: run folder {tmp_path / 'nowhere'} does not exist; pass a folder made by "
        "scripts/train.py",
        "error: README.md is a file, not a run folder; pass a folder made by scripts/train.py",
        f"error: {unfinished} has no checkpoints/last.pt; is it a finished run folder of "
        "scripts/train.py?",
        f"error: {unfinished} is not a finished run: it has no metrics.json (training stopped "
        "before its test); pass the folder of a run that finished",
    ]


def test_metrics_of_a_run_without_attention_have_null_aer(tiny_run):
    metrics = json.loads((tiny_run("none") / "metrics.json").read_text(encoding="utf-8"))
    assert metrics["test"]["aer"] is None and metrics["attention"] == "none"


def test_make_corpus_writes_then_refuses_to_overwrite_a_different_corpus(tmp_path):
    args = ["data.train_size=60", "data.valid_size=10", "data.test_size=10", "data.max_len=12"]
    first = run_script("make_corpus.py", f"data.dir={tmp_path}", *args)
    assert first.returncode == 0, first.stderr
    assert "pairs: train 60 | valid 10 | test 10" in first.stdout
    train = (tmp_path / "train.tsv").read_bytes()
    assert train.startswith("我 爱 中国\tI love China\t0-0 1-1 2-2\n".encode())
    again = run_script("make_corpus.py", f"data.dir={tmp_path}", *args)
    assert again.returncode == 0 and "nothing written" in again.stdout
    other = run_script("make_corpus.py", f"data.dir={tmp_path}", *args, "data.seed=1")
    assert other.returncode == 2 and "already holds a different corpus" in other.stderr
    assert (tmp_path / "train.tsv").read_bytes() == train


# ------------------------------------------------------------------ interrupted or cut short
INTERRUPTIBLE = """
import sys, time
from seq2seq.errors import exit_on_user_error

@exit_on_user_error
def main():
    print("ready", flush=True)
    time.sleep(60)

main()
"""


def test_ctrl_c_in_a_script_is_one_line_and_exit_130():
    # A test worker may run with SIGINT ignored (pytest-xdist's do), and an ignored signal stays
    # ignored across exec: give the script the default disposition a terminal gives it.
    process = subprocess.Popen(
        [sys.executable, "-c", INTERRUPTIBLE], cwd=REPO, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True, env=script_env(),
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )  # fmt: skip
    assert process.stdout.readline() == "ready\n"
    process.send_signal(signal.SIGINT)
    _, stderr = process.communicate(timeout=60)
    assert process.returncode == 130, stderr
    assert stderr == "interrupted\n"


def test_a_closed_stdout_ends_evaluate_quietly_with_141(tiny_run, tmp_path):
    """``evaluate.py RUN | head``: the reader went away; no traceback, nothing recorded."""
    run = tmp_path / "run"
    shutil.copytree(tiny_run("additive"), run)
    before = (run / "metrics.json").read_bytes()
    process = subprocess.Popen(
        [sys.executable, str(REPO / "scripts" / "evaluate.py"), str(run), "--device", "cpu"],
        cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=script_env(),
    )  # fmt: skip
    process.stdout.close()  # like `head` after its lines: every write now fails (EPIPE)
    stderr = process.stderr.read().decode()
    assert process.wait(timeout=300) == 141, stderr
    assert stderr == ""
    assert (run / "metrics.json").read_bytes() == before


def test_a_byte_order_mark_on_stdin_or_in_an_argument_is_not_part_of_a_word(tiny_run):
    run_dir = str(tiny_run("additive"))
    plain = run_script("translate.py", run_dir, "我 爱 中国")
    from_stdin = run_script("translate.py", run_dir, input_text="\ufeff我 爱 中国\r\n")
    from_argument = run_script("translate.py", run_dir, "\ufeff我 爱 中国")
    for result in (plain, from_stdin, from_argument):
        assert result.returncode == 0, result.stderr
        assert "unknown words" not in result.stderr, result.stderr
    assert from_stdin.stdout == plain.stdout == from_argument.stdout


@pytest.mark.parametrize("finished", [True, False], ids=["finished-run", "evaluations-only"])
def test_resuming_keeps_what_evaluate_recorded(tiny_run, toy_corpus, tmp_path, finished):
    """Training's summary never drops an evaluation: a resumed run (of a finished run, or of
    one whose metrics.json holds only evaluations) keeps every recorded one."""
    run_dir = tmp_path / "run"
    shutil.copytree(tiny_run("additive"), run_dir)
    result = run_script("evaluate.py", str(run_dir), "--beam-size", "2")
    assert result.returncode == 0, result.stderr
    metrics = run_dir / "metrics.json"
    recorded = json.loads(metrics.read_text(encoding="utf-8"))["evaluations"]
    if not finished:  # an interrupted run: evaluate.py has written the only metrics.json
        metrics.write_text(json.dumps({"evaluations": recorded}), encoding="utf-8")
    resumed = run_script(
        "train.py", *SHARED_RUN_OVERRIDES, f"data.dir={toy_corpus}", "attention=additive",
        "train.max_steps=36", "train.max_epochs=100", "resume=true", f"hydra.run.dir={run_dir}",
    )  # fmt: skip
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    after = json.loads(metrics.read_text(encoding="utf-8"))
    assert after["steps"] == 36 and after["evaluations"] == recorded
