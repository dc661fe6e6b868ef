"""TensorBoard logging with the same tag names in every run, so variants overlay.

TensorBoard's writer and matplotlib (:mod:`seq2seq.viz`) are imported when a :class:`RunLogger`
is made and when it draws, not with this module: they are about 0.9 s of a process's start
that the ranks above 0 (a :class:`NullLogger`) and a command refused before training never use.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any


class RunLogger:
    """Scalars, attention heatmaps, sample translations and hparams of one run (``tb/``)."""

    def __init__(self, log_dir: str | Path, purge_step: int | None = None) -> None:
        from torch.utils.tensorboard import SummaryWriter  # see the module's docstring

        self.writer = SummaryWriter(log_dir=str(log_dir), purge_step=purge_step)

    def scalars(self, values: Mapping[str, float], step: int) -> None:
        for tag, value in values.items():
            self.writer.add_scalar(tag, value, step)

    def figure(self, tag: str, figure: object, step: int) -> None:
        """A matplotlib Figure as an image (no pyplot involved)."""
        from seq2seq.viz.figures import figure_to_image_array

        self.writer.add_image(tag, figure_to_image_array(figure), step, dataformats="HWC")

    def text(self, tag: str, markdown: str, step: int) -> None:
        self.writer.add_text(tag, markdown, step)

    def hparams(self, params: Mapping[str, object], final_metrics: Mapping[str, float]) -> None:
        """Hyperparameters and final metrics, written into this run's own event file.

        ``SummaryWriter.add_hparams`` would create a stray sub-run; writing the three hparams
        summaries directly keeps them beside the run's scalars.
        """
        from torch.utils.tensorboard.summary import hparams as hparams_summary

        clean = {
            k: v if isinstance(v, int | float | str | bool) else str(v) for k, v in params.items()
        }
        for summary in hparams_summary(clean, dict(final_metrics)):
            self.writer.file_writer.add_summary(summary)
        for tag, value in final_metrics.items():
            self.writer.add_scalar(tag, value, 0)

    def flush(self) -> None:
        self.writer.flush()

    def close(self) -> None:
        self.writer.close()


def translations_markdown(rows: Sequence[tuple[str, str]]) -> str:
    """A two-column markdown table: source | model output."""
    lines = ["| source | translation |", "|---|---|"]
    lines += [f"| {src} | {hyp} |" for src, hyp in rows]
    return "\n".join(lines)


class NullLogger(RunLogger):
    """What ranks above 0 log to: nothing (rank 0 owns the run's one TensorBoard run)."""

    def __init__(self) -> None:  # no SummaryWriter, no folder
        pass

    def scalars(self, values: Any, step: int) -> None:
        pass

    def figure(self, tag: str, figure: object, step: int) -> None:
        pass

    def text(self, tag: str, markdown: str, step: int) -> None:
        pass

    def hparams(self, params: Any, final_metrics: Any) -> None:
        pass

    def flush(self) -> None:
        pass

    def close(self) -> None:
        pass
