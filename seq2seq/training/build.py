"""Construction of a run's parts from their config sections; the trainer wires them.

:func:`build_run` makes everything a run trains with, in the order the parts need each other:
the process (device, threads, seed), the resume point (checked before any corpus is made, so a
refused command generates nothing), the corpus, the model, the encoded data, then the
optimizer, schedule and objective. Each builder takes the section it needs — the model from
``model`` and ``attention``, the optimizer, schedule and objective from ``train`` — and returns
the part; nothing here runs or changes training (that is
:meth:`seq2seq.training.trainer.Trainer.fit`'s alone).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from seq2seq.choices import AttentionType, ModelKind
from seq2seq.config.schema import AttentionConfig, Config, ModelConfig, TrainConfig, to_plain
from seq2seq.data.batching import ParallelDataset, RunData
from seq2seq.data.loading import Corpus, load_corpus
from seq2seq.errors import UserError
from seq2seq.model import ModelSpec
from seq2seq.model.checkpoint import Checkpoint
from seq2seq.model.fused.tanh import resolve as resolve_tanh
from seq2seq.model.init import initialize
from seq2seq.model.memory import check_fits_in_memory
from seq2seq.model.networks import Network, build_network
from seq2seq.runtime import resolve_device, seed_everything, set_threads
from seq2seq.training.checkpointing import check_same_corpus, resume_point
from seq2seq.training.distributed import ProcessGroup
from seq2seq.training.guidance import AlignmentGuide
from seq2seq.training.objective import Objective
from seq2seq.training.ranks import WorldPosition
from seq2seq.training.samples import sample_sources
from seq2seq.training.schedule import Schedule, build_schedule
from seq2seq.training.step import Updater
from seq2seq.training.stopping import planned_updates


@dataclass
class RunParts:
    """Everything :class:`~seq2seq.training.trainer.Trainer` wires: ``saved`` is the checkpoint
    a resumed run continues from (None for a new run), not yet applied; ``stored_config`` the
    config as checkpoints record it (plain data); ``samples`` the tokenized sentences whose
    heatmaps TensorBoard shows."""

    group: ProcessGroup
    saved: Checkpoint | None
    corpus: Corpus
    spec: ModelSpec
    model: Network
    data: RunData
    training: TrainingParts
    total_steps: int
    stored_config: dict[str, Any]
    samples: list[tuple[str, ...]]


def build_run(config: Config, ckpt_dir: Path, group: ProcessGroup | None = None) -> RunParts:
    """The parts of a run of ``config`` whose checkpoints live in ``ckpt_dir``; ``group``: the
    process group the launch made (its device: ``cuda:<local rank>`` under nccl), else this
    process alone on ``config.device``."""
    stored = to_plain(config)
    samples = sample_sources(config.data.samples, config.data.char_level_src)
    device = group.device if group is not None else resolve_device(config.device)
    set_threads(config.train.num_threads)
    seed_everything(config.seed)
    group = group or ProcessGroup(WorldPosition(), None, device)
    saved = resume_point(ckpt_dir, config.resume, stored, device)
    corpus = load_corpus(config.data)
    if saved is not None:
        check_same_corpus(saved, config.data, corpus)
    # rank 0's tanh form on every rank (``auto`` times the two), so rounding is one form
    tanh = (
        saved.spec.tanh
        if saved is not None
        else group.from_main(lambda: resolve_tanh(config.model.tanh, device))
    )
    if config.model.kind == ModelKind.transformer:
        check_positions(config.model.max_positions, corpus)
    spec = model_spec(
        config.model, config.attention, len(corpus.src_vocab), len(corpus.tgt_vocab), tanh
    )
    model = build_model(spec, config.model, device)
    data = RunData.of(corpus, config.train.batch_size, config.seed, group.rank, group.world_size)
    total_steps = planned_updates(config.train, len(data.sampler))
    training = build_training(model, config.train, data.train, total_steps, group)
    return RunParts(group, saved, corpus, spec, model, data, training, total_steps, stored, samples)


def model_spec(
    model: ModelConfig,
    attention: AttentionConfig,
    src_vocab_size: int,
    tgt_vocab_size: int,
    tanh: str,
) -> ModelSpec:
    """The model ``model`` and ``attention`` describe, sized to the vocabularies: every field
    of the spec from its config option (the one owner of its default); ``tanh``: the resolved
    form of ``model.tanh`` (:func:`seq2seq.model.fused.tanh.resolve`)."""
    from_model = {
        f.name: to_plain(getattr(model, f.name))
        for f in dataclasses.fields(ModelSpec)
        if f.name not in SPEC_FROM_ELSEWHERE
    }
    return ModelSpec(
        src_vocab_size=src_vocab_size,
        tgt_vocab_size=tgt_vocab_size,
        attention=AttentionType(attention.type).value,
        num_heads=attention.num_heads if attention.type == AttentionType.multihead else 1,
        attention_hidden_size=attention.hidden_size,
        tanh=str(tanh),
        **from_model,
    )


#: The spec's fields that are not ``model.<name>`` options: the vocabularies', the attention
#: section's and the resolved tanh form.
SPEC_FROM_ELSEWHERE = (
    "src_vocab_size", "tgt_vocab_size", "attention", "num_heads", "attention_hidden_size", "tanh",
)  # fmt: skip


def check_positions(max_positions: int, corpus: Corpus) -> None:
    """Refuse a corpus with a sentence longer than the Transformer's position table (a source
    with its ``<eos>``, a target with its ``<bos>``), before anything is trained."""
    pairs = [*corpus.train, *corpus.valid, *corpus.test]
    longest = max(max(len(p.src), len(p.tgt)) + 1 for p in pairs)
    if longest > max_positions:
        raise UserError(
            f"the corpus has a sentence of {longest - 1} tokens, longer than the Transformer's "
            f"position table (model.max_positions={max_positions} positions, <eos> included): "
            f"set model.max_positions={longest} or more"
        )


def build_model(spec: ModelSpec, model: ModelConfig, device: torch.device) -> Network:
    """A new model of ``spec``, its weights drawn by ``model.init`` from the current torch
    generator, on ``device``; its size checked before allocating (one line, not the
    allocator's)."""
    check_fits_in_memory(spec)
    network = build_network(spec, model.recurrence)
    initialize(network, model.init)
    return network.to(device)


def build_optimizer(network: torch.nn.Module, train: TrainConfig) -> torch.optim.Adam:
    """Adam at ``train.lr`` (the schedule scales it) with β = (0.9, ``train.adam_beta2``)."""
    return torch.optim.Adam(network.parameters(), lr=train.lr, betas=(0.9, train.adam_beta2))


@dataclass
class TrainingParts:
    """What :class:`~seq2seq.training.trainer.Trainer` trains with."""

    optimizer: torch.optim.Adam
    schedule: Schedule
    guide: AlignmentGuide
    updater: Updater


def build_training(
    network: Network,
    train: TrainConfig,
    train_set: ParallelDataset,
    total_steps: int,
    group: ProcessGroup,
) -> TrainingParts:
    """The optimizer, the schedule planned over ``total_steps``, the objective (with guided
    alignment from ``train_set``'s gold links when asked) and the one update."""
    optimizer = build_optimizer(network, train)
    schedule = build_schedule(optimizer, train, total_steps)
    guide = AlignmentGuide(
        train.alignment_weight,
        network.attention.has_weights,
        train_set.pairs,
        train.alignment_possible_weight,
        schedule=train.alignment_schedule,
        total_steps=total_steps,
        peak=train.alignment_peak,
        end=train.alignment_end,
    )
    updater = Updater(
        network,
        optimizer,
        Objective(train.label_smoothing, guide),
        group,
        clip_grad_norm=train.clip_grad_norm,
        teacher_forcing=train.teacher_forcing,
    )
    return TrainingParts(optimizer, schedule, guide, updater)
