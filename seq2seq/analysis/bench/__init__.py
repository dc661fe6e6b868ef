"""Measure the trainer: training throughput per attention variant against a tutorial-style
reference, the machine's GEMM rate and the fraction of it the trainer reaches, batched
greedy/beam decoding speed, wall time to 99% valid exact match of the run a user gets by
default, 1 vs 2 processes, and peak memory.

Everything runs through the real code paths on the configured corpus and sizes: throughput
and decoding in this process (``Trainer.train_step``, ``translate_dataset``), the training
runs as subprocesses of the real entry point (``scripts/train.py``, see :mod:`.processes`);
``scripts/bench.py`` is the command line. :class:`TutorialSeq2Seq` is the reference: the same
layer sizes, data and additive attention written the way the common PyTorch tutorials do it.

**Time to 99%** (``time_to_99``): ``python scripts/train.py <overrides>
train.stop_at_exact_match=<target> train.patience=0``, with the configured ``train.processes``
(auto by default: one DDP process per core, see :mod:`seq2seq.launch.processes`; ``--tiny``
sets 1 unless the overrides choose), within ``--time-budget`` of wall time plus
counted from the run's first step; past it the run gets SIGTERM, stops after a step and saves
``last.pt``. ``time_to_99_s`` is rank 0's ``train_seconds`` (update steps only, validation
excluded) at the first validation at or above the target, null when none reached it.
``time_to_99.processes`` is how many processes trained (metrics.json's
``distributed.world_size``; else ``last.pt``'s per-rank RNG streams; else the planned count),
``command`` the command run. Decoding is measured on a Trainer of the same config built in this
process with the run's ``best.pt`` weights (``time_to_99.model`` says which).

The GEMM rates in bench.json (fp32 ``gemm_size``² products,
:func:`.measure.measure_gemm`):

- ``gemm_gflops``: on the benchmark's device at the thread settings in force when it is
  measured (as before these fields existed; the Trainers have applied ``train.num_threads``
  by then, so on the CPU it normally equals the next one); details in ``gemm``.
- ``gemm_gflops_at_threads``: on the device at ``gemm_threads``, the intra-op thread count
  the trainer uses (``train.num_threads``; 0 is what ``seq2seq.runtime.set_threads`` makes of
  it). Every ``fraction_of_peak`` (per variant, the reference and the top-level one of the
  configured variant) is achieved GFLOP/s over this rate.
- ``gemm_gflops_per_core``: on the CPU with ``torch.set_num_threads(1)`` for the measurement,
  the machine's speed per core. ``time_to_99_gflop = time_to_99_s × gemm_gflops_per_core``
  normalises the time to 99% valid exact match by it (null when the target was not reached).

``flops_to_99`` is the training FLOPs (:func:`.flops.train_flops` per global batch, summed over
update steps 1 to the reached one) of the time-to-99 run, null when it did not reach the
target; ``flops_spent`` is those of all its steps either way, and each ``curve`` point has
those through its step. No step is counted while it runs: the batches of steps 1..N are fixed
by the seed and the corpus (the sampler's order, epoch by epoch, the same on 1 or N
processes), so they are drawn again in this process (:func:`.measure.training_flops`).

``flop_count_check`` holds, per variant and the reference, the benchmark's count of one
training step against PyTorch's ``FlopCounterMode`` (``counted``, ``flop_counter``, ``ratio`` =
counted / flop_counter); what each counts is in :mod:`.flops`.

``processes`` compares one training run on 1 and on 2 processes (DDP through
``torch.distributed.run``, the real ``scripts/train.py``): steady-state target tokens/s, steps
and wall seconds of each, and ``speedup`` = tokens/s(2) / tokens/s(1). It is null, with the
reason in ``processes_skipped``, with fewer than 2 CPU cores (or 2 GPUs on CUDA); see
:mod:`.processes`.

Modules: :mod:`.flops` (FLOP counting), :mod:`.reference` (the tutorial baseline),
:mod:`.measure` (the measurements), :mod:`.machine` (what it ran on), :mod:`.processes` (1 vs 2
processes, and the training subprocesses), :mod:`.run` (options, orchestration, table,
saving), :mod:`.profile` (``--profile``: an update's wall time against its device's busy time).
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
