"""What may change when a run is resumed (seq2seq.training.resume)."""

from __future__ import annotations

from pathlib import Path

from seq2seq.training.resume import frozen_differences


def config(**data: object) -> dict:
    return {
        "seed": 0,
        "data": {"path": "data/tatoeba/cmn-eng.txt.xz", "seed": 0, **data},
        "model": {"hidden_size": 16},
        "attention": {"type": "dot"},
        "train": {"lr_schedule": "linear", "lr": 1e-3},
    }


def test_frozen_settings_that_change_are_named() -> None:
    now = config()
    now["model"] = {"hidden_size": 32}
    now["train"] = {"lr_schedule": "plateau", "lr": 5e-3}  # lr is not frozen
    assert frozen_differences(config(), now) == [
        "model.hidden_size is 16 in the checkpoint, 32 now",
        "train.lr_schedule is 'linear' in the checkpoint, 'plateau' now",
    ]


def test_a_path_spelled_another_way_is_the_same_corpus() -> None:
    absolute = str(Path("data/tatoeba/cmn-eng.txt.xz").resolve())
    assert frozen_differences(config(), config(path=absolute)) == []
    assert frozen_differences(config(), config(path="data/other.txt"))  # another file


def test_settings_newer_than_the_checkpoint_do_not_block_resume() -> None:
    now = config(src_subwords=0)
    now["model"] = {"hidden_size": 16, "init": "xavier"}
    assert frozen_differences(config(), now) == []


def test_adams_beta2_is_frozen_because_the_checkpoints_optimizer_state_would_win() -> None:
    saved, now = config(), config()
    saved["train"] = {**saved["train"], "adam_beta2": 0.98}
    now["train"] = {**now["train"], "adam_beta2": 0.999}
    assert frozen_differences(saved, now) == [
        "train.adam_beta2 is 0.98 in the checkpoint, 0.999 now"
    ]
