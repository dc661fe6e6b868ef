"""Fake ``metrics.json`` files and sweeps for the summary and comparison tests: what
``train.py`` writes, small enough to state in a test."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from seq2seq.model.attention import ATTENTION_TYPES, has_weights

#: The keys training writes, in the order it writes them.
TRAINING_KEYS = [
    "attention",
    "num_heads",
    "decoder",
    "seed",
    "data",
    "corpus_sha256",
    "parameters",
    "steps",
    "best_step",
    "train_seconds",
    "seconds_to_best",
    "bleu_signature",
    "test_checkpoint",
    "test",
    "valid_best",
    "history",
]


def scores(bleu: float = 20.0) -> dict[str, Any]:
    """A full test block, every key in the order evaluation writes them."""
    return {
        "loss": 1.25,
        "bleu": bleu,
        "bleu_tokenize": "none",
        "exact_match": 0.2,
        "chrf": 40.0,
        "token_accuracy": 0.5,
        "bleu_by_length": {"1-10": 25.0, "11-20": 15.0},
        "bucket_sizes": {"1-10": 8, "11-20": 2},
        "bleu_signature": "nrefs:1|tok:none",
        "beam_size": 1,
        "aer": 0.4,
        "aer_sure_only": 0.45,
        "aer_best_head": 0.4,
        "best_head": 0,
        "best_head_split": "valid",
        "aer_per_head": [0.4],
        "attention_entropy": 1.5,
        "alignment_report": None,
    }


def record(step: int, valid_loss: float, train_seconds: float = 1.5) -> dict[str, Any]:
    """A validation record as training writes it."""
    return {
        "step": step,
        "train_seconds": train_seconds,
        "valid_loss": valid_loss,
        "valid_bleu": 10.0,
        "valid_exact_match": 0.1,
    }


def full_metrics() -> dict[str, Any]:
    """A metrics.json as training writes it (every key, training's order)."""
    history = [record(10, 2.0, 1.5), record(20, 1.0, 3.0)]
    values = [
        "additive", 1, "luong", 3, "synthetic", "ab" * 32, 1234, 24, 20, 3.25, 3.0,
        "nrefs:1|tok:none", "best.pt", scores(), history[1], history,
    ]  # fmt: skip
    return dict(zip(TRAINING_KEYS, values, strict=True))


def fake_metrics(
    attention: str = "additive",
    seed: int = 0,
    *,
    bleu: float = 20.0,
    aer: float | None = 0.5,
    num_heads: int = 1,
    data: str = "synthetic",
    steps: tuple[int, ...] = (10, 20),
    losses: tuple[float, ...] = (2.0, 1.0),
    by_length: dict[str, float] | None = None,
    decoder: str | None = None,
    corpus_sha256: str | None = None,
    config: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """A minimal metrics.json like train.py writes (only what the comparison reads);
    ``decoder=None`` leaves the key out, as in runs made before ``model.decoder``, and so do
    ``corpus_sha256`` and ``config`` (the run's config, as plain data)."""
    has_attention = attention not in ATTENTION_TYPES or has_weights(attention)
    return {
        **({"decoder": decoder} if decoder else {}),
        **({"corpus_sha256": corpus_sha256} if corpus_sha256 else {}),
        **({"config": config} if config is not None else {}),
        "attention": attention,
        "num_heads": num_heads if has_attention else 0,
        "seed": seed,
        "data": data,
        "parameters": 1000,
        "steps": steps[-1],
        "best_step": steps[-1],
        "train_seconds": 5.0 + seed,
        "test": {
            "loss": 1.0,
            "bleu": bleu,
            "chrf": 2 * bleu,
            "exact_match": bleu / 100,
            "bleu_by_length": by_length or {"1-10": bleu + 5, "11-20": bleu - 5},
            "bucket_sizes": {"1-10": 8, "11-20": 2},
            "aer": aer if has_attention else None,
            "aer_best_head": (aer - 0.1 if aer is not None else None) if has_attention else None,
            "attention_entropy": 1.0 if has_attention else None,
        },
        "history": [
            {"step": s, "valid_loss": loss, "valid_bleu": 0.0, "valid_exact_match": 0.0}
            for s, loss in zip(steps, losses, strict=True)
        ],
    }


def write_run(folder: Path, metrics: dict[str, Any] | str) -> Path:
    """A run folder holding ``metrics`` (a dict, or raw text for broken files)."""
    folder.mkdir(parents=True, exist_ok=True)
    text = metrics if isinstance(metrics, str) else json.dumps(metrics)
    (folder / "metrics.json").write_text(text, encoding="utf-8")
    return folder


def fake_sweep(root: Path) -> Path:
    """A sweep folder laid out like Hydra's: <attention>_seed<seed>/metrics.json."""
    bleus = {"none": (10.0, 12.0, 14.0), "additive": (20.0, 22.0, 27.0)}
    for attention, values in bleus.items():
        for seed, bleu in enumerate(values):
            write_run(root / f"{attention}_seed{seed}", fake_metrics(attention, seed, bleu=bleu))
    write_run(
        root / "multihead_seed0",
        fake_metrics("multihead", 0, bleu=25.0, aer=0.4, num_heads=4),
    )
    (root / "multirun.yaml").write_text("hydra: {}\n", encoding="utf-8")
    return root


def explained(metrics: dict, *, uniform_bleu: float, grad_aer: float) -> dict:
    """``metrics`` with an ``explain`` block of its test split, as evaluate.py records it."""
    block = {
        "checkpoint": "best.pt", "step": 24, "split": "test", "seconds": 3.0,
        "interventions": [
            {"intervention": "none", "loss": 0.5, "token_accuracy": 0.9, "bleu": 40.0,
             "exact_match": 0.2},
            {"intervention": "uniform", "loss": 2.0, "token_accuracy": 0.5,
             "bleu": uniform_bleu, "exact_match": 0.0},
            {"intervention": "gold", "loss": 0.4, "token_accuracy": 0.95, "bleu": None,
             "exact_match": None},
        ],
        "maps": [
            {"method": "attention", "aer": 0.2, "sentences": 60, "layer": None},
            {"method": "grad_x_input", "aer": grad_aer, "sentences": 60, "layer": None},
        ],
    }  # fmt: skip
    return {**metrics, "explain": {"test best.pt": block}}
