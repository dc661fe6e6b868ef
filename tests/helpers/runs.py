"""Running the real entry points in tests: the repository, a tiny aligned corpus, the tiny
training overrides, the scripts as subprocesses, and the loss curve of a run."""

from __future__ import annotations

import fcntl
import os
import random
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
TOY_LEXICON = {
    "我": "I", "你": "you", "他": "he", "爱": "love", "吃": "eat", "苹果": "apples",
    "中国": "China", "北京": "Beijing", "猫": "cats", "狗": "dogs",
}  # fmt: skip


def write_toy_corpus(directory: Path, seed: int = 0, sizes=(600, 60, 60)) -> Path:
    """A word-for-word corpus with diagonal gold alignments, 2–12 tokens per sentence."""
    rng = random.Random(seed)
    words = sorted(TOY_LEXICON)
    directory.mkdir(parents=True, exist_ok=True)
    for split, size in zip(("train", "valid", "test"), sizes, strict=True):
        lines = []
        for _ in range(size):
            src = [rng.choice(words) for _ in range(rng.randint(2, 12))]
            tgt = [TOY_LEXICON[w] for w in src]
            links = " ".join(f"{i}-{i}" for i in range(len(src)))
            lines.append(f"{' '.join(src)}\t{' '.join(tgt)}\t{links}\n")
        if split == "train":
            lines.append("我 爱 中国\tI love China\t0-0 1-1 2-2\n")
        (directory / f"{split}.tsv").write_text("".join(lines), encoding="utf-8")
    return directory


def made_once(path: Path, make: Callable[[Path], object]) -> Path:
    """``path``, made by ``make(path)`` unless another process already made it: the test
    workers of pytest-xdist share the session's fixtures folder (see ``shared_tmp`` in
    conftest), and an exclusive lock makes the others wait for the first one's ``make``
    instead of repeating it. A ``make`` that failed half-way is cleared and tried again."""
    done = path.with_name(f"{path.name}.done")
    with open(path.with_name(f"{path.name}.lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        if not done.exists():
            if path.exists():
                shutil.rmtree(path)
            make(path)
            done.touch()
    return path


#: The sample sentence whose translation and heatmaps a run logs at each validation: only the
#: shared tiny runs (:func:`tests.conftest.tiny_run`) log one, for the tests that look at them;
#: drawing it costs a tiny run a fifth of its time (matplotlib, two figures per validation).
TINY_SAMPLE = "data.samples=['我 爱 中国']"

TINY_OVERRIDES = [
    "data=tsv",
    "data.samples=[]",
    "model.embed_size=16",
    "model.hidden_size=16",
    "train.max_steps=24",
    "train.eval_every=12",
    "train.batch_size=32",
    "train.eval_batch_size=64",
    "train.processes=1",
    "device=cpu",
    "model.tanh=tanh",  # pinned: the suite's numbers never depend on a timing
]


#: What the shared tiny runs are trained with (:func:`tests.conftest.tiny_run`): a test that
#: resumes a copy of one gives these (a resumed run keeps its data settings, samples included).
SHARED_RUN_OVERRIDES = [*TINY_OVERRIDES, TINY_SAMPLE]

#: Added to :data:`TINY_OVERRIDES`: a tiny Transformer instead of the GRU (16-wide, 2 heads).
TINY_TRANSFORMER = ("model=transformer", "model.ff_size=32", "attention.num_heads=2")


def script_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """This environment without the debug switches, plus ``extra``; output unbuffered."""
    env = {k: v for k, v in os.environ.items() if k not in ("HYDRA_FULL_ERROR", "SEQ2SEQ_DEBUG")}
    return {**env, "PYTHONUNBUFFERED": "1", **(extra or {})}


def run_script(
    script: str, *args: str, timeout: float = 300, input_text: str | None = None, **env: str
) -> subprocess.CompletedProcess:
    """Run ``scripts/<script>`` in a subprocess from the repo root; never raises on failure.

    ``input_text`` is fed to stdin (else stdin is empty); ``env`` adds environment variables
    (the debug switches are off unless given here).
    """
    return subprocess.run(
        [sys.executable, str(REPO / "scripts" / script), *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=timeout,
        env=script_env(env),
        input=input_text if input_text is not None else "",
    )


def loss_curve(run_dir: Path) -> list[tuple[int, float]]:
    """``loss/train`` of a run folder's TensorBoard events, as (step, value)."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    events = EventAccumulator(str(run_dir / "tb"), size_guidance={"scalars": 0, "images": 1})
    events.Reload()
    return [(event.step, event.value) for event in events.Scalars("loss/train")]
