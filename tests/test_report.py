"""Evaluating a run folder reads the checkpoint's stored config as plain data, and shows its
progress when asked to."""

from __future__ import annotations

import io
import sys
from dataclasses import asdict
from pathlib import Path

import pytest
import torch

from seq2seq.config.schema import Config, to_plain
from seq2seq.data.corpus import read_tsv
from seq2seq.data.vocab import Vocab
from seq2seq.evaluation.report import evaluate_run
from seq2seq.model import Seq2Seq
from seq2seq.model.checkpoint import Checkpoint, save_checkpoint
from tests.helpers.models import spec_of
from tests.helpers.runs import write_toy_corpus


def write_run(run_dir: Path, data_dir: str) -> None:
    """A run folder whose checkpoint's config names ``data_dir`` (a tiny random model)."""
    train = read_tsv(Path(data_dir) / "train.tsv")
    src_vocab = Vocab.build(p.src for p in train)
    tgt_vocab = Vocab.build(p.tgt for p in train)
    spec = spec_of(len(src_vocab), len(tgt_vocab), embed_size=4, hidden_size=4, dropout=0.0)
    torch.manual_seed(0)
    config = to_plain(Config())
    config["data"].update(name="tsv", dir=data_dir, synthetic=False)
    checkpoint = Checkpoint(
        model=Seq2Seq(spec).state_dict(), optimizer={}, scheduler={}, rng={}, state={},
        model_spec=asdict(spec), vocab={"src": src_vocab.to_dict(), "tgt": tgt_vocab.to_dict()},
        config=config, max_src_len=12,
    )  # fmt: skip
    save_checkpoint(run_dir / "checkpoints" / "best.pt", checkpoint)


def test_a_stored_data_dir_is_never_interpolated(tmp_path, monkeypatch):
    """A crafted ``${oc.env:...}`` in a checkpoint's config stays literal text."""
    monkeypatch.setenv("SEQ2SEQ_TEST_SECRET", "s3cret")
    literal = str(tmp_path / "evil_${oc.env:SEQ2SEQ_TEST_SECRET}")
    write_toy_corpus(Path(literal), sizes=(40, 8, 8))
    write_run(tmp_path / "run", literal)
    evaluation, _ = evaluate_run(tmp_path / "run", device="cpu")
    assert evaluation.scores.bleu >= 0.0  # read the folder literally named evil_${...}
    assert evaluation.corpus == literal and evaluation.checkpoint == "best.pt"
    assert not (tmp_path / "evil_s3cret").exists()


class Terminal(io.StringIO):
    """A stderr that says it is a terminal (tqdm draws only on one)."""

    def isatty(self) -> bool:
        return True


@pytest.mark.parametrize(
    ("progress", "stream", "drawn"),
    [(True, Terminal, True), (True, io.StringIO, False), (False, Terminal, False)],
)
def test_evaluation_shows_progress_only_when_asked_and_on_a_terminal(
    tmp_path, monkeypatch, progress, stream, drawn
):
    """evaluate.py asks for a progress bar on stderr; validation during training never does."""
    write_toy_corpus(tmp_path / "corpus", sizes=(40, 8, 8))
    write_run(tmp_path / "run", str(tmp_path / "corpus"))
    monkeypatch.setattr(sys, "stderr", stream())
    evaluate_run(tmp_path / "run", device="cpu", batch_size=4, progress=progress)
    shown = sys.stderr.getvalue()
    assert ("translating:" in shown and "/8 " in shown) is drawn, shown  # 8 test sentences
