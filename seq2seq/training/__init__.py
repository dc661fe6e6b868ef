"""Training: :func:`run.train` (one run from a config to ``metrics.json``), the
:class:`trainer.Trainer` and its parts (state, checkpointing, validation), the learning-rate
schedule, resume rules, signal handling and TensorBoard logging."""
