"""Training: the trainer, its schedule, checkpoints on resume, signals, TensorBoard logging,
and :func:`train`, one run from a config to ``metrics.json``."""
