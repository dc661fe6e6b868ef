"""Train one model: ``python scripts/train.py attention=additive`` (see README)."""

from __future__ import annotations

import sys

import hydra
from hydra.core.hydra_config import HydraConfig
from omegaconf import DictConfig

from seq2seq.config.schema import register_configs
from seq2seq.errors import exit_on_user_error

register_configs()


@hydra.main(version_base="1.3", config_path="../conf", config_name="config")
@exit_on_user_error
def main(cfg: DictConfig) -> float:
    from seq2seq.training.run import train  # after Hydra: config errors come fast
    from seq2seq.training.signals import TrainingInterrupted

    run_dir = HydraConfig.get().runtime.output_dir
    try:
        summary = train(cfg, run_dir)
    except TrainingInterrupted as stop:
        print(
            f"stopped by {stop}; checkpoint saved to {stop.path}. Continue with: "
            f"python scripts/train.py resume=true hydra.run.dir={stop.path.parents[1]}",
            file=sys.stderr,
        )
        raise SystemExit(128 + stop.signum) from None
    except KeyboardInterrupt:  # Ctrl-C outside the training loop (start-up or final test)
        print(f"interrupted; whatever {run_dir} holds so far is kept", file=sys.stderr)
        raise SystemExit(130) from None
    return summary["test"]["bleu"]


if __name__ == "__main__":
    main()
