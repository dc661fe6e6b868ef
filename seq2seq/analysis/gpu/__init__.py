"""The GPU check (``bash scripts/gpu_check.sh``, docs/gpu.md): on a machine with a CUDA GPU,
in one prepared command, the CUDA tests, the quick start, the step profile, the benchmark and
the comparison sweep, each timed, capped and recorded in ``gpu.json`` (the form of
``results/``: :mod:`seq2seq.analysis.results`) with the GPU, driver and PyTorch it ran on; on
a CPU machine the same stages as a tiny rehearsal, or their list (``--dry-run``).

Modules: :mod:`.plan` (the stages: commands, caps, the rehearsal's sizes), :mod:`.readers`
(what each stage measured, read from its files), :mod:`.run` (running, stopping, recording).
"""

from seq2seq.analysis.gpu.plan import BUDGET_S, STAGES
from seq2seq.analysis.gpu.run import chosen_stages, describe, run_checks

__all__ = ["BUDGET_S", "STAGES", "chosen_stages", "describe", "run_checks"]
