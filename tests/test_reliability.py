"""Reliability through the real entry points: every bad input fails with one clear line and
touches nothing; checkpoints survive SIGKILL at any moment; SIGINT/SIGTERM stop cleanly and a
resumed run repeats the uninterrupted one exactly; a checkpoint carrying code is never run.

The bad-input table runs its subprocesses concurrently (a module fixture), then one test per
row checks the outcome, so the table costs a fraction of its sequential time.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import time
import zipfile
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

import pytest
import torch
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

from seq2seq.errors import UserError
from seq2seq.evaluation.inference import TrainedRun
from seq2seq.model.checkpoint import Checkpoint, load_checkpoint, save_checkpoint
from tests.conftest import REPO, TINY_OVERRIDES, run_script, script_env

PROCESS_TIMEOUT = 300  # seconds; generous, other test suites may share the CPUs
WAIT_TIMEOUT = 240  # for a file to appear while a training subprocess runs


# ---------------------------------------------------------------------------- helpers
def overrides(*extra: str) -> tuple[str, ...]:
    """``TINY_OVERRIDES`` plus ``extra``; a later ``key=value`` replaces an earlier one."""
    merged: dict[str, str] = {}
    for override in (*TINY_OVERRIDES, *extra):
        merged[override.split("=", 1)[0]] = override
    return tuple(merged.values())


def _run_with_stdin(
    script: str, args: list[str], stdin: str = "", env: dict[str, str] | None = None
) -> subprocess.CompletedProcess:
    return run_script(script, *args, timeout=PROCESS_TIMEOUT, input_text=stdin, **(env or {}))


def start_training(run_dir: Path, *extra: str, log: Path) -> subprocess.Popen:
    """A training subprocess whose stdout and stderr go to ``log`` (no pipe to fill up)."""
    command = [sys.executable, str(REPO / "scripts/train.py"), *extra, f"hydra.run.dir={run_dir}"]
    with open(log, "w", encoding="utf-8") as handle:
        return subprocess.Popen(
            command,
            cwd=REPO,
            stdin=subprocess.DEVNULL,
            stdout=handle,
            stderr=subprocess.STDOUT,
            text=True,
            env=script_env(),
        )


def wait_for(
    condition: Callable[[], bool], process: subprocess.Popen, log: Path, interval: float = 0.05
) -> None:
    """Poll ``condition`` while ``process`` runs; fail with its output if it ends first."""
    deadline = time.monotonic() + WAIT_TIMEOUT
    while not condition():
        if process.poll() is not None:
            pytest.fail(f"training ended early ({process.returncode}):\n{log.read_text()[-3000:]}")
        if time.monotonic() > deadline:
            process.kill()
            pytest.fail(f"timed out waiting for training:\n{log.read_text()[-3000:]}")
        time.sleep(interval)


def file_signature(path: Path) -> tuple[int, int, int] | None:
    """Changes whenever the file is replaced (an atomic save makes a new inode)."""
    try:
        st = path.stat()
    except FileNotFoundError:
        return None
    return st.st_ino, st.st_mtime_ns, st.st_size


def snapshot(folder: Path, ignore: tuple[str, ...] = ()) -> dict[str, str]:
    """sha256 of every file under ``folder`` (top-level names in ``ignore`` skipped)."""
    return {
        str(path.relative_to(folder)): hashlib.sha256(path.read_bytes()).hexdigest()
        for path in sorted(folder.rglob("*"))
        if path.is_file() and path.relative_to(folder).parts[0] not in ignore
    }


def loss_curve(run_dir: Path) -> list[tuple[int, float]]:
    events = EventAccumulator(str(run_dir / "tb"), size_guidance={"scalars": 0, "images": 1})
    events.Reload()
    return [(event.step, event.value) for event in events.Scalars("loss/train")]


class CodeOnLoad:
    """Unpickling this creates ``marker``: a stand-in for a malicious checkpoint."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):
        return (open, (str(self.marker), "w"))


# ---------------------------------------------------------------------------- damage
def truncate(path: Path, marker: Path) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


def scramble(path: Path, marker: Path) -> None:
    """Random bytes of the same length (seeded)."""
    size = path.stat().st_size
    path.write_bytes(random.Random(size).randbytes(size))


def plant_code(path: Path, marker: Path) -> None:
    torch.save({"format_version": 1, "model": CodeOnLoad(marker)}, path)


def double_hidden_size(path: Path, marker: Path) -> None:
    """A checkpoint whose model spec does not fit its weights (as if swapped in from elsewhere)."""
    payload = torch.load(path, weights_only=True)
    payload["model_spec"]["hidden_size"] *= 2
    save_checkpoint(path, Checkpoint.from_dict(payload))


# ---------------------------------------------------------------------------- the table
class Shared(NamedTuple):
    corpus: Path  # the session toy corpus (read only)
    run: Path  # a finished tiny run trained on it (read only)


Prepare = Callable[[Shared, Path], dict[str, Path]]


def fresh_run(shared: Shared, tmp: Path) -> dict[str, Path]:
    return {"corpus": shared.corpus, "out": tmp / "run"}


def corpus_with(split: str, line_no: int, content: bytes | None) -> Prepare:
    """A copy of the toy corpus whose ``split`` has line ``line_no`` replaced by ``content``
    (``None``: the whole file emptied)."""

    def prepare(shared: Shared, tmp: Path) -> dict[str, Path]:
        corpus = tmp / "corpus"
        shutil.copytree(shared.corpus, corpus)
        path = corpus / f"{split}.tsv"
        if content is None:
            path.write_bytes(b"")
        else:
            lines = path.read_bytes().split(b"\n")
            lines[line_no - 1] = content
            path.write_bytes(b"\n".join(lines))
        return {"corpus": corpus, "out": tmp / "run"}

    return prepare


def run_copy(checkpoint: str = "best.pt", damage: Callable | None = None) -> Prepare:
    """A copy of the tiny run, with ``checkpoints/<checkpoint>`` damaged."""

    def prepare(shared: Shared, tmp: Path) -> dict[str, Path]:
        run = tmp / "run"
        shutil.copytree(shared.run, run)
        if damage is not None:
            damage(run / "checkpoints" / checkpoint, tmp / "marker")
        return {"corpus": shared.corpus, "run": run, "marker": tmp / "marker"}

    return prepare


def shared_run(shared: Shared, tmp: Path) -> dict[str, Path]:
    return {"corpus": shared.corpus, "run": shared.run}


def other_vocabulary(shared: Shared, tmp: Path) -> dict[str, Path]:
    """A run whose checkpoint names a corpus that has since gained a word."""
    corpus = tmp / "corpus"
    shutil.copytree(shared.corpus, corpus)
    with open(corpus / "train.tsv", "a", encoding="utf-8") as handle:
        handle.write("熊猫\tpandas\t0-0\n")
    run = tmp / "run"
    shutil.copytree(shared.run, run)
    last = run / "checkpoints" / "last.pt"
    payload = torch.load(last, weights_only=True)
    payload["config"]["data"]["dir"] = str(corpus)
    save_checkpoint(last, Checkpoint.from_dict(payload))
    return {"corpus": corpus, "run": run}


def run_and_bad_test_split(shared: Shared, tmp: Path) -> dict[str, Path]:
    """A run copy plus a corpus copy whose test split has an out-of-range alignment."""
    corpus = corpus_with("test", 2, "我\tI\t0-0 5-5".encode())(shared, tmp)["corpus"]
    return {**run_copy()(shared, tmp), "corpus": corpus}


def non_finite_run(shared: Shared, tmp: Path) -> dict[str, Path]:
    return {"corpus": shared.corpus, "nan_run": tmp / "run"}


def last_good_checkpoint_loads(paths: dict[str, Path], message: str) -> None:
    """The message names the checkpoint left behind (if any), and it loads."""
    last = paths["nan_run"] / "checkpoints" / "last.pt"
    if "no checkpoint was written" in message:
        assert not last.exists()
        return
    assert f"last good checkpoint is {last}" in message
    payload = torch.load(last, weights_only=True)
    assert payload["state"]["step"] >= 1
    load_checkpoint(last)  # also passes the project's own checks


@dataclass(frozen=True)
class Case:
    id: str
    script: str
    args: tuple[str, ...]  # "{corpus}", "{run}", "{out}", "{tmp}"… filled from ``prepare``
    message: tuple[str, ...]  # all must appear in the error line (Hydra: in stderr)
    code: int = 2
    prepare: Prepare = fresh_run
    stdin: str = ""
    env: dict[str, str] = field(default_factory=dict)
    check: Callable[[dict[str, Path], str], None] | None = None  # (paths, message)


def train(*extra: str, run: str = "{out}") -> tuple[str, ...]:
    return overrides("data.dir={corpus}", f"hydra.run.dir={run}", *extra)


def resume(*extra: str) -> tuple[str, ...]:
    return train("resume=true", *extra, run="{run}")


TRAIN_CASES = [
    Case("unknown-attention", "train.py", train("attention=addtive"),
         ("Could not find 'attention/addtive'", "additive"), code=1),
    Case("unknown-key", "train.py", train("train.bach_size=8"), ("bach_size",), code=1),
    Case("wrong-type", "train.py", train("train.lr=abc"), ("train.lr", "abc"), code=1),
    Case("negative-hidden-size", "train.py", train("model.hidden_size=-1"),
         ("model.hidden_size must be positive", "-1")),
    Case("zero-batch-size", "train.py", train("train.batch_size=0"),
         ("train.batch_size must be at least 1",)),
    Case("heads-do-not-divide", "train.py", train("attention=multihead", "attention.num_heads=3"),
         ("attention.num_heads=3", "must divide")),
    Case("zero-lr", "train.py", train("train.lr=0"), ("train.lr must be positive",)),
    Case("missing-data-folder", "train.py", train("data.dir=/nonexistent/corpus"),
         ("/nonexistent/corpus", "does not exist", "data.dir")),
    Case("empty-corpus", "train.py", train(), ("train split", "is empty"),
         prepare=corpus_with("train", 0, None)),
    Case("missing-column", "train.py", train(), ("valid.tsv:3:", "columns"),
         prepare=corpus_with("valid", 3, "我 爱 中国 I love China".encode())),
    Case("bad-alignment", "train.py", train(), ("test.tsv:2:", "'1-x'"),
         prepare=corpus_with("test", 2, "我 爱\tI love\t0-0 1-x".encode())),
    Case("alignment-out-of-range", "train.py", train(), ("train.tsv:5:", "'2-1'", "out of range"),
         prepare=corpus_with("train", 5, "我 爱\tI love\t0-0 2-1".encode())),
    Case("not-utf8", "train.py", train(), ("train.tsv:4:", "UTF-8"),
         prepare=corpus_with("train", 4, "我 爱\tI love".encode("gb18030"))),
    Case("resume-without-checkpoint", "train.py", train("resume=true"),
         ("resume=true", "last.pt does not exist")),
    Case("resume-truncated", "train.py", resume(), ("last.pt", "truncated or corrupted"),
         prepare=run_copy("last.pt", truncate)),
    Case("resume-corrupted", "train.py", resume(), ("last.pt", "corrupted"),
         prepare=run_copy("last.pt", scramble)),
    Case("resume-other-model-config", "train.py", resume("model.hidden_size=32"),
         ("cannot resume", "model"), prepare=run_copy()),
    Case("resume-other-vocabulary", "train.py", resume(), ("cannot resume", "vocabulary"),
         prepare=other_vocabulary),
    Case("non-finite-loss", "train.py",
         train("data.samples=[]", "train.lr=1e36", "train.clip_grad_norm=0", "train.eval_every=1",
               "train.max_steps=6", "train.num_threads=1", run="{nan_run}"),
         ("loss became", "train.lr"),
         prepare=non_finite_run, check=last_good_checkpoint_loads),
]  # fmt: skip

# Bug (seq2seq/config.py, see the report): an lr past float32's range crashes Adam's first
# step with a RuntimeError traceback instead of a one-line error. Remove the mark once fixed.
LR_OVERFLOW = Case(
    "lr-overflows-float32", "train.py", train("train.lr=1e38", "train.num_threads=1"), ("train.lr",)
)

TOO_LONG = " ".join(["我"] * 25)  # the toy corpus' longest source has 12 tokens: limit 24

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
]  # fmt: skip

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

SMALL_CORPUS = ("data.train_size=50", "data.valid_size=10", "data.test_size=10")


def corpus_copy(shared: Shared, tmp: Path) -> dict[str, Path]:
    shutil.copytree(shared.corpus, tmp / "corpus")
    return {"corpus": tmp / "corpus"}


def nothing_written(paths: dict[str, Path], message: str) -> None:
    assert not (paths["tmp"] / "new").exists()


MAKE_CORPUS_CASES = [
    Case("make-corpus-over-a-different-corpus", "make_corpus.py",
         ("data.dir={corpus}", *SMALL_CORPUS), ("already holds a different corpus",),
         prepare=corpus_copy),
    Case("make-corpus-not-synthetic", "make_corpus.py", ("data=tsv", "data.dir={tmp}/new"),
         ("data=tsv", "not synthetic"), check=nothing_written),
    Case("make-corpus-out-of-range", "make_corpus.py",
         ("data.dir={tmp}/new", "data.min_len=9", "data.max_len=3"),
         ("data.min_len (9)", "data.max_len (3)"), check=nothing_written),
]  # fmt: skip

# Bug (seq2seq/compose.py, see the report): the message drops Hydra's reason (the cause).
MAKE_CORPUS_WRONG_TYPE = Case(
    "make-corpus-wrong-type", "make_corpus.py", ("data.train_size=abc", "data.dir={tmp}/new"),
    ("data.train_size=abc", "could not be converted"), check=nothing_written,
)  # fmt: skip

DEBUG_CASES = [
    Case("translate-seq2seq-debug", "translate.py", ("{tmp}/no_such_run", "我"),
         ("UserError: run folder",), code=1, env={"SEQ2SEQ_DEBUG": "1"}),
    Case("train-hydra-full-error", "train.py", train("train.lr=0"),
         ("UserError: train.lr must be positive",), code=1, env={"HYDRA_FULL_ERROR": "1"}),
]  # fmt: skip

BAD_INPUTS = [
    *(pytest.param(case, id=case.id) for case in TRAIN_CASES),
    pytest.param(LR_OVERFLOW, id=LR_OVERFLOW.id),
    *(pytest.param(case, id=case.id) for case in EVALUATE_CASES + TRANSLATE_CASES),
    *(pytest.param(case, id=case.id) for case in MAKE_CORPUS_CASES),
    pytest.param(MAKE_CORPUS_WRONG_TYPE, id=MAKE_CORPUS_WRONG_TYPE.id),
]
ALL_CASES = [
    *TRAIN_CASES, LR_OVERFLOW, *EVALUATE_CASES, *TRANSLATE_CASES, *MAKE_CORPUS_CASES,
    MAKE_CORPUS_WRONG_TYPE, *DEBUG_CASES,
]  # fmt: skip

# The table's processes run side by side: one thread each, so none spins waiting for a core.
ONE_THREAD = {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}

# Hydra writes these into the run folder before the app starts, even for a refused resume.
HYDRA_WRITES = (".hydra", "train.log")


@dataclass
class Outcome:
    result: subprocess.CompletedProcess
    paths: dict[str, Path]
    changed: list[str]  # files under the watched folders that changed
    made: list[str]  # run outputs created in a fresh run folder


def run_case(case: Case, tmp: Path, shared: Shared) -> Outcome:
    paths = {"tmp": tmp, **case.prepare(shared, tmp)}
    ignore = HYDRA_WRITES if case.script == "train.py" else ()
    watched = {
        name: snapshot(path, ignore)
        for name, path in paths.items()
        if name != "tmp" and path.is_dir()
    }
    args = [arg.format_map({k: str(v) for k, v in paths.items()}) for arg in case.args]
    result = _run_with_stdin(case.script, args, case.stdin, {**ONE_THREAD, **case.env})
    changed = []
    for name, before in watched.items():
        after = snapshot(paths[name], ignore)
        changed += [f"{name}/{f}" for f in sorted(before | after) if before.get(f) != after.get(f)]
    out = paths.get("out")
    made = [n for n in ("checkpoints", "tb", "metrics.json") if out and (out / n).exists()]
    return Outcome(result, paths, changed, made)


@pytest.fixture(scope="module")
def outcomes(request, tmp_path_factory, toy_corpus, tiny_run) -> dict[str, Outcome]:
    """Run the selected rows of the table concurrently; ``{case id: Outcome}``."""
    selected = {
        item.callspec.params["case"].id
        for item in request.session.items
        if item.module is request.module
        and hasattr(item, "callspec")
        and "case" in item.callspec.params
    }
    shared = Shared(toy_corpus, tiny_run("additive"))
    shared_before = {name: snapshot(path) for name, path in shared._asdict().items()}
    cases = [case for case in ALL_CASES if case.id in selected]
    workers = min(4, (os.cpu_count() or 1) + 1)
    with ThreadPoolExecutor(max_workers=workers) as pool:
        futures = {
            case.id: pool.submit(run_case, case, tmp_path_factory.mktemp(case.id), shared)
            for case in cases
        }
        results = {case_id: future.result() for case_id, future in futures.items()}
    for name, path in shared._asdict().items():
        assert snapshot(path) == shared_before[name], f"the shared {name} folder was modified"
    return results


@pytest.mark.parametrize("case", BAD_INPUTS)
def test_bad_input_fails_cleanly(case: Case, outcomes: dict[str, Outcome]):
    outcome = outcomes[case.id]
    result = outcome.result
    output = result.stdout + result.stderr
    assert result.returncode == case.code, output[-3000:]
    assert "Traceback" not in output, output[-3000:]
    if case.code == 2:  # our own UserError: exactly one `error:` line, and it ends stderr
        errors = [line for line in result.stderr.splitlines() if line.startswith("error: ")]
        assert len(errors) == 1, result.stderr[-3000:]
        assert result.stderr.rstrip().splitlines()[-1] == errors[0]
        message = errors[0]
    else:  # Hydra's own config error (exit 1): its short message, no stack trace
        message = result.stderr
    for part in case.message:
        assert part in message, message
    assert not outcome.changed, f"files changed: {outcome.changed}"
    assert not outcome.made, f"a failed run left outputs behind: {outcome.made}"
    if "marker" in outcome.paths:
        assert not outcome.paths["marker"].exists(), "code inside a checkpoint was executed"
    if case.check:
        case.check(outcome.paths, message)


@pytest.mark.parametrize("case", [pytest.param(c, id=c.id) for c in DEBUG_CASES])
def test_debug_switch_shows_the_traceback(case: Case, outcomes: dict[str, Outcome]):
    result = outcomes[case.id].result
    assert result.returncode == case.code, result.stderr[-3000:]
    assert "Traceback" in result.stderr
    for part in case.message:
        assert part in result.stderr, result.stderr[-3000:]


# ---------------------------------------------------------------------------- in-process checks
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


def damaged_copies(original: bytes) -> dict[str, bytes]:
    """Truncations, random bytes and bit flips inside a tensor record, all seeded."""
    rng = random.Random(0)
    with zipfile.ZipFile(io.BytesIO(original)) as archive:
        largest = max(archive.infolist(), key=lambda info: info.file_size)
        start = original.find(archive.read(largest.filename))
    flipped = bytearray(original)
    flipped[start + largest.file_size // 2] ^= 0x01
    copies = {
        "empty": b"",
        "one-byte": original[:1],
        "header-only": original[:64],
        "first-half": original[: len(original) // 2],
        "all-but-last-byte": original[:-1],
        "flipped-weight-bit": bytes(flipped),
    }
    for size in (1, 10, 1000, len(original)):
        copies[f"random-{size}"] = rng.randbytes(size)
    return copies


def test_any_damaged_checkpoint_is_a_one_line_user_error(tiny_run, tmp_path):
    original = (tiny_run("additive") / "checkpoints" / "best.pt").read_bytes()
    for name, data in damaged_copies(original).items():
        path = tmp_path / f"{name}.pt"
        path.write_bytes(data)
        with pytest.raises(UserError) as caught:
            load_checkpoint(path)
        message = str(caught.value)
        assert "corrupted" in message and "\n" not in message, (name, message)
        assert "Python objects" not in message, (name, message)  # damage is not "code"


def test_crafted_checkpoint_would_run_code_but_is_refused(tmp_path):
    marker, path = tmp_path / "pwned", tmp_path / "best.pt"
    plant_code(path, marker)
    torch.load(path, weights_only=False)  # the payload is real: an unsafe load runs it
    assert marker.exists()
    marker.unlink()
    with pytest.raises(UserError, match="refusing"):
        load_checkpoint(path)
    assert not marker.exists()


# ---------------------------------------------------------------------------- signals
TEMP_NAME = re.compile(r"\.(last|best)\.pt\.tmp\d+")


def check_checkpoint_folder(folder: Path) -> int:
    """``last.pt`` loads safely; anything else is a hidden temp file no loader picks up."""
    for path in folder.iterdir():
        assert path.name in ("last.pt", "best.pt") or TEMP_NAME.fullmatch(path.name), path.name
    payload = torch.load(folder / "last.pt", weights_only=True)
    load_checkpoint(folder / "last.pt")
    return payload["state"]["step"]


def saving_now(folder: Path, pid: int) -> bool:
    """``pid`` is inside ``save_checkpoint``: its temp file exists."""
    return folder.is_dir() and any(p.name.endswith(f".tmp{pid}") for p in folder.iterdir())


def test_sigkill_at_random_moments_never_breaks_last_pt_then_sigterm_stops_cleanly(
    tmp_path, toy_corpus
):
    rng = random.Random(20240607)
    run_dir = tmp_path / "run"
    last = run_dir / "checkpoints" / "last.pt"
    args = overrides(
        f"data.dir={toy_corpus}",
        "data.samples=[]",
        "train.max_steps=100000",
        "train.max_epochs=0",
        "train.eval_every=1",  # last.pt (and often best.pt) rewritten after every step
        "train.patience=0",
        "train.num_threads=1",
    )
    step = 0
    for round_no, how in enumerate(("random", "mid-save", "random", "mid-save", "sigterm")):
        before = file_signature(last)
        log = tmp_path / f"round{round_no}.log"
        process = start_training(run_dir, *args, *(["resume=true"] if before else []), log=log)
        if how == "mid-save":  # the moment a temp file appears: a checkpoint being written
            wait_for(lambda: saving_now(last.parent, process.pid), process, log, 0.002)  # noqa: B023
        else:  # a checkpoint written by this process, then a random moment later
            wait_for(lambda: file_signature(last) not in (None, before), process, log)  # noqa: B023
            time.sleep(rng.uniform(0.0, 1.0))
        process.send_signal(signal.SIGTERM if how == "sigterm" else signal.SIGKILL)
        process.wait(timeout=PROCESS_TIMEOUT)
        text = log.read_text(encoding="utf-8")
        if before is not None:  # this round went on from what the previous one left
            assert re.search(rf"resumed from \S*last\.pt at step {step}\b", text), text[-2000:]
        if how != "sigterm":
            assert process.returncode == -signal.SIGKILL
        new_step = check_checkpoint_folder(last.parent)
        assert new_step >= step if how == "mid-save" else new_step > step
        step = new_step
    assert process.returncode == 128 + signal.SIGTERM, text[-3000:]
    assert "Traceback" not in text
    assert "stopped by SIGTERM" in text and "resume=true" in text, text[-2000:]
    assert not saving_now(last.parent, process.pid)  # a clean stop leaves no temp file


def test_sigint_saves_and_resume_repeats_the_uninterrupted_run_exactly(tmp_path, toy_corpus):
    args = overrides(
        f"data.dir={toy_corpus}",
        "data.samples=[]",
        "train.max_steps=100",
        "train.max_epochs=0",
        "train.eval_every=10",
        "train.patience=0",
        "train.num_threads=1",  # the same arithmetic in all three processes
    )
    reference_dir, run_dir = tmp_path / "reference", tmp_path / "run"
    reference = start_training(reference_dir, *args, log=tmp_path / "reference.log")
    last = run_dir / "checkpoints" / "last.pt"
    log = tmp_path / "interrupted.log"
    process = start_training(run_dir, *args, log=log)
    wait_for(last.exists, process, log, 0.005)  # step 10 validated and saved
    time.sleep(0.05)  # a little further
    process.send_signal(signal.SIGINT)
    process.wait(timeout=PROCESS_TIMEOUT)
    text = log.read_text(encoding="utf-8")
    assert process.returncode == 130, text[-3000:]
    assert "Traceback" not in text
    assert "stopped by SIGINT" in text, text[-2000:]
    assert f"resume=true hydra.run.dir={run_dir}" in text, text[-2000:]
    interrupted_at = check_checkpoint_folder(last.parent)
    assert 10 <= interrupted_at < 100, "SIGINT must land before the run ends"

    resumed = start_training(run_dir, *args, "resume=true", log=tmp_path / "resumed.log")
    for finished, name in ((reference, "reference"), (resumed, "resumed")):
        finished.wait(timeout=PROCESS_TIMEOUT)
        assert finished.returncode == 0, (tmp_path / f"{name}.log").read_text()[-3000:]

    expected, curve = loss_curve(reference_dir), loss_curve(run_dir)
    assert [s for s, _ in expected] == list(range(1, 101))
    assert curve == expected  # bit for bit (CPU, one thread)
    summary, reference_summary = (
        json.loads((folder / "metrics.json").read_text(encoding="utf-8"))
        for folder in (run_dir, reference_dir)
    )
    assert summary["test"] == reference_summary["test"]
    assert summary["best_step"] == reference_summary["best_step"]
