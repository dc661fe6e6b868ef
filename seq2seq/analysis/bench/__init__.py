"""Measure the trainer in one process: training throughput per attention variant against a
tutorial-style reference, the machine's GEMM rate and the fraction of it the trainer reaches,
batched greedy/beam decoding speed, wall time to 99% valid exact match, and peak memory.

Everything runs through the real code paths (``Trainer.train_step``, ``Trainer.fit`` with its
validation, ``translate_dataset``) on the configured corpus and sizes; ``scripts/bench.py`` is
the command line. :class:`TutorialSeq2Seq` is the reference: the same layer sizes, data and
additive attention written the way the common PyTorch tutorials do it.

Modules: :mod:`.flops` (FLOP counting), :mod:`.reference` (the tutorial baseline),
:mod:`.measure` (the measurements), :mod:`.machine` (what it ran on), :mod:`.run` (options,
orchestration, table, saving).
"""

from seq2seq.analysis.bench.flops import BatchShape, flop_breakdown, forward_flops, train_flops
from seq2seq.analysis.bench.reference import TutorialSeq2Seq, TutorialTrainer
from seq2seq.analysis.bench.run import (
    BenchOptions,
    contestant_overrides,
    format_table,
    run_benchmark,
    save_result,
    tiny_overrides,
)

__all__ = [
    "BatchShape",
    "BenchOptions",
    "TutorialSeq2Seq",
    "TutorialTrainer",
    "contestant_overrides",
    "flop_breakdown",
    "format_table",
    "forward_flops",
    "run_benchmark",
    "save_result",
    "tiny_overrides",
    "train_flops",
]
