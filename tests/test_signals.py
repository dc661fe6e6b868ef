"""Stopping: checkpoints survive SIGKILL at any moment; SIGINT/SIGTERM stop cleanly and a
resumed run repeats the uninterrupted one exactly."""

from __future__ import annotations

import json
import random
import re
import signal
import time
from pathlib import Path

import pytest
import torch

from seq2seq.model.checkpoint import load_checkpoint
from tests.helpers.bad_input import (
    PROCESS_TIMEOUT,
    file_signature,
    overrides,
    start_training,
    wait_for,
)
from tests.helpers.runs import TINY_TRANSFORMER, loss_curve

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


@pytest.mark.parametrize("network", [(), TINY_TRANSFORMER], ids=["gru", "transformer"])
def test_sigint_saves_and_resume_repeats_the_uninterrupted_run_exactly(
    tmp_path, toy_corpus, network: tuple[str, ...]
):
    args = overrides(
        *network,
        f"data.dir={toy_corpus}",
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
