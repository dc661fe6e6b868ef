"""The configuration schema: typed dataclasses registered in Hydra's ConfigStore, and the
one conversion from Hydra's composed config into them (:func:`to_config`).

Hydra merges ``conf/`` into these, so a typo'd key, a value of the wrong type or a choice
outside its enum (the registries' names: :mod:`seq2seq.choices`) fails before training with
Hydra's message. Each section checks its own ranges and combinations when it is built
(``__post_init__``), :class:`Config` those across sections, each as one :class:`UserError`
line. Past the command everything takes these dataclasses — each part of the code its own
section — never Hydra's ``DictConfig``.

Every field's ``help`` text is the reference documentation of that option, and its default is
*the* default: the files in ``conf/`` set only what differs from it (a test holds them to
that). The ``data`` section is the data room's own (:class:`~seq2seq.data.config.DataConfig`).
"""

from __future__ import annotations

import dataclasses
import difflib
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from hydra.core.config_store import ConfigStore
from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import OmegaConfBaseException

from seq2seq.choices import (
    AlignmentSchedule,
    AttentionType,
    DecoderArrangement,
    InitScheme,
    LrSchedule,
    ModelKind,
    Recurrence,
    SelectionRule,
    TanhForm,
    variant_name,
)
from seq2seq.config.help import options_help
from seq2seq.data.config import DataConfig
from seq2seq.errors import UserError
from seq2seq.machine import DEVICE_NAMES, DEVICE_PATTERN, usable_cores
from seq2seq.options import at_least, check, option


@dataclass
class ModelConfig:
    kind: ModelKind = option(
        ModelKind.rnn,
        "The network: rnn (the GRU encoder-decoder with attention.type) or transformer "
        "(self-attention encoder and decoder from the package's multi-head attention; "
        "model=transformer sets it with its sizes).",
    )
    embed_size: int = option(64, "Embedding size of both languages (rnn).")
    hidden_size: int = option(
        128, "GRU size (per direction in the encoder; the decoder's state); transformer: D."
    )
    encoder_layers: int = option(1, "Stacked encoder GRU layers; transformer: encoder layers.")
    decoder_layers: int = option(2, "Transformer decoder layers.")
    ff_size: int = option(512, "Transformer feed-forward inner size.")
    max_positions: int = option(
        256, "Transformer position table: the longest sentence (tokens + <eos>) it can read."
    )
    alignment_layer: int = option(
        -1,
        "Transformer decoder layer (0-based; -1 = last) whose cross-attention is reported: "
        "heatmaps, AER, guided alignment.",
    )
    bidirectional: bool = option(True, "Bidirectional encoder.")
    dropout: float = option(0.1, "Dropout on embeddings and the output layer.")
    init: InitScheme = option(
        InitScheme.xavier,
        "How new weights start: xavier (Glorot uniform, the GRU's per gate; zero biases; as "
        "JoeyNMT does) or pytorch (PyTorch's layer defaults).",
    )
    decoder: DecoderArrangement = option(
        DecoderArrangement.bahdanau,
        "Decoder arrangement: luong (attend from the new state; training runs without a loop "
        "over time steps) or bahdanau (attend from the previous state and feed the context "
        "into the GRU; a step loop). Attention none ignores it.",
    )
    recurrence: Recurrence = option(
        Recurrence.fused,
        "How the Bahdanau decoder runs teacher forcing: fused (its step loop as one autograd "
        "node with a hand-written backward, seq2seq/model/fused/; faster) or textbook "
        "(BahdanauDecoder.step in a Python loop under autograd: the reference the fused one is "
        "tested equal to). The same model either way; a run may resume with the other.",
    )
    tanh: TanhForm = option(
        TanhForm.auto,
        "How the fused recurrence computes additive attention's tanh: tanh, or sigmoid "
        "(2σ(2x) − 1, equal to float rounding and faster on some CPUs); auto times both at "
        "the start of the run and takes the faster (CUDA: tanh). The form is recorded in "
        "train.log and the checkpoint, and a resumed run keeps it.",
    )

    def __post_init__(self) -> None:
        for name in ("embed_size", "hidden_size", "encoder_layers", "decoder_layers", "ff_size"):
            at_least(f"model.{name}", getattr(self, name), 1, "must be positive")
        at_least("model.max_positions", self.max_positions, 2, "must be at least 2")
        check(
            -self.decoder_layers <= self.alignment_layer < self.decoder_layers,
            f"model.alignment_layer={self.alignment_layer} is not a layer of the "
            f"{self.decoder_layers} decoder layers; use 0 to {self.decoder_layers - 1}, or -1 "
            "for the last",
        )
        check(0.0 <= self.dropout < 1.0, f"model.dropout must be in [0, 1), got {self.dropout}")

    @property
    def key_size(self) -> int:
        """The encoder output size attention reads: hidden size × directions."""
        return self.hidden_size * (2 if self.bidirectional else 1)


@dataclass
class AttentionConfig:
    type: AttentionType = option(AttentionType.additive, f"One of {', '.join(AttentionType)}.")
    num_heads: int = option(1, "Heads of multi-head attention (must divide 2·hidden_size).")
    hidden_size: int | None = option(
        None, "Additive attention's hidden size; null = model.hidden_size."
    )

    def __post_init__(self) -> None:
        at_least("attention.num_heads", self.num_heads, 1)
        check(
            self.hidden_size is None or self.hidden_size > 0,
            "attention.hidden_size must be positive",
        )


@dataclass
class TrainConfig:
    batch_size: int = option(64, "Sentence pairs per training batch.")
    eval_batch_size: int = option(256, "Sentence pairs per evaluation batch.")
    lr: float = option(
        3e-3,
        "Adam learning rate (the peak of the linear schedule). Presets on the synthetic corpus: "
        "attention=dot 5e-3 (conf/data_attention/), the Transformer 4e-3 (conf/data_model/).",
    )
    max_steps: int = option(
        2500,
        "Stop after this many updates (0 = no limit): the default corpus' budget, 2.5 passes "
        "over its 64,000 pairs (data=tatoeba and data=tsv train by epochs: 0).",
    )
    max_epochs: int = option(
        5, "Stop after this many passes over the training data (with max_steps: the fewer)."
    )
    eval_every: int = option(
        250, "Validate (loss, greedy BLEU, exact match, heatmaps) every N steps."
    )
    patience: int = option(
        4, "Stop after this many validations without a better model (see select_best)."
    )
    select_best: SelectionRule = option(
        SelectionRule.exact_match,
        "Which validation's model becomes best.pt (and is tested): exact_match (higher valid "
        "exact match, then lower valid loss), bleu (higher valid BLEU, then lower loss) or "
        "loss (lower valid loss).",
    )
    label_smoothing: float = option(
        0.1,
        "Label smoothing of the training loss (0 = off). loss/train is then the smoothed "
        "loss; validation loss stays the plain cross-entropy.",
    )
    adam_beta2: float = option(
        0.99,
        "Adam's beta2, the decay of its average of squared gradients: 0.99 forgets a clipped "
        "gradient spike within about a hundred updates (PyTorch's 0.999 keeps it a thousand; "
        "docs/performance.md). The Transformer's preset takes its usual 0.98 "
        "(conf/data_model/synthetic_transformer.yaml); data=tatoeba keeps 0.999.",
    )
    clip_grad_norm: float = option(1.0, "Clip the gradient norm to this (0 = off).")
    teacher_forcing: float = option(1.0, "Probability of feeding the reference token at each step.")
    lr_schedule: LrSchedule = option(
        LrSchedule.linear,
        "linear (warm up over warmup_steps, then decay linearly to 0 at the last planned step: "
        "max_steps, else max_epochs) or plateau (cut by lr_factor when valid loss stalls).",
    )
    warmup_steps: int = option(
        200,
        "Updates of linear learning-rate warm-up (lr_schedule=linear; at most a tenth of the "
        "planned updates, so that a short run reaches train.lr).",
    )
    lr_factor: float = option(
        0.3, "Multiply the learning rate by this when valid loss plateaus (lr_schedule=plateau)."
    )
    lr_patience: int = option(
        1, "Validations without a better valid loss before the lr drops (lr_schedule=plateau)."
    )
    stop_at_exact_match: float | None = option(
        None, "Stop as soon as valid exact match reaches this fraction (null = off)."
    )
    log_every: int = option(10, "Write loss/lr/grad-norm to TensorBoard every N steps.")
    beam_size: int = option(1, "Beam size of the final test evaluation (1 = greedy).")
    alignment_weight: float = option(
        0.0,
        "Guided alignment (supervised attention, Chen et al. 2016): weight of a loss term "
        "pulling each teacher-forced attention row towards its target word's gold distribution "
        "(uniform over the sure links; possible-only words: see alignment_possible_weight; "
        "unlinked words and <eos> are not guided; multi-head: the head average). 0 = off. "
        "Needs attention with weights and a corpus with alignments, else training logs once "
        "that there is nothing to guide. "
        "loss/train stays the translation loss; the term is logged as loss/alignment.",
    )
    alignment_possible_weight: float = option(
        0.0,
        "Guided alignment of English words whose gold links are all possible (articles, "
        "copulas): their row is uniform over those links and counts with this weight, "
        "relative to 1 for a word with sure links (0 = not guided).",
    )
    alignment_schedule: AlignmentSchedule = option(
        AlignmentSchedule.triangle,
        "How the guided-alignment weight moves over the run: triangle (rising linearly from 0 "
        "at the first update to train.alignment_weight at train.alignment_peak of the planned "
        "updates, then back to 0 at train.alignment_end, so that the run starts and ends on "
        "the translation alone) or constant (train.alignment_weight throughout).",
    )
    alignment_peak: float = option(
        0.4, "Triangle: the fraction of the planned updates where the guided weight peaks."
    )
    alignment_end: float = option(
        0.8,
        "Triangle: the fraction of the planned updates from which the guided weight is 0 "
        "(1 = the last update).",
    )
    num_threads: int = option(
        0,
        "CPU threads for PyTorch in each process (0 = auto: one; use the other cores with more "
        "processes, see train.processes and seq2seq.runtime.set_threads).",
    )
    processes: str = option(
        "auto",
        "Processes that train this one run (PyTorch DDP, started by PyTorch's elastic "
        "launcher on this machine): auto = one per CUDA GPU, else one per CPU core (at most "
        "one per 16 pairs of train.batch_size); 1 = this process only; or a number. A sweep's "
        "jobs (-m) always train in one process each; under torchrun its own count applies.",
    )

    def __post_init__(self) -> None:
        for name in ("batch_size", "eval_batch_size", "eval_every", "log_every", "beam_size"):
            at_least(f"train.{name}", getattr(self, name), 1)
        check(self.lr > 0, f"train.lr must be positive, got {self.lr}")
        check(
            self.lr <= 1e37,
            f"train.lr={self.lr} is too large: Adam's first step would overflow float32",
        )
        counts = ("max_steps", "max_epochs", "patience", "lr_patience", "num_threads")
        for name in (*counts, "warmup_steps"):
            at_least(f"train.{name}", getattr(self, name), 0, "must not be negative")
        check(
            self.max_steps > 0 or self.max_epochs > 0,
            "set train.max_steps or train.max_epochs above 0",
        )
        processes = str(self.processes).strip()
        check(
            processes == "auto" or (processes.isdigit() and int(processes) >= 1),
            f"train.processes={self.processes!r}: use auto or a whole number of processes >= 1",
        )
        at_least("train.clip_grad_norm", self.clip_grad_norm, 0, "must not be negative")
        check(0.0 <= self.teacher_forcing <= 1.0, "train.teacher_forcing must be in [0, 1]")
        check(
            0.0 <= self.alignment_weight < float("inf"),
            "train.alignment_weight must be a finite number >= 0 (0 = off), got "
            f"{self.alignment_weight}",
        )
        check(
            0.0 < self.alignment_peak < self.alignment_end <= 1.0,
            "train.alignment_peak and train.alignment_end are fractions of the planned updates "
            "with 0 < peak < end <= 1, got "
            f"alignment_peak={self.alignment_peak}, alignment_end={self.alignment_end}",
        )
        check(
            0.0 <= self.alignment_possible_weight <= 1.0,
            "train.alignment_possible_weight must be in [0, 1], got "
            f"{self.alignment_possible_weight}",
        )
        check(
            0.0 < self.lr_factor < 1.0, f"train.lr_factor must be in (0, 1), got {self.lr_factor}"
        )
        check(
            0.0 <= self.adam_beta2 < 1.0,
            f"train.adam_beta2 must be in [0, 1), got {self.adam_beta2}",
        )
        check(
            0.0 <= self.label_smoothing < 1.0,
            f"train.label_smoothing must be in [0, 1), got {self.label_smoothing}",
        )
        check(
            self.stop_at_exact_match is None or 0.0 <= self.stop_at_exact_match <= 1.0,
            "train.stop_at_exact_match must be in [0, 1] or null (off), got "
            f"{self.stop_at_exact_match}",
        )
        cores = usable_cores()
        check(
            self.num_threads <= cores,
            f"train.num_threads={self.num_threads} is more than the {cores} CPU "
            f"core{'s' * (cores != 1)} this process may use; use at most {cores} (0 = auto)",
        )


@dataclass
class Config:
    seed: int = option(
        0,
        "Seed of initialisation, batching and sampling (the corpus has its own: data.seed).",
    )
    device: str = option(
        "auto", "auto (CUDA when present, else the CPU), cpu, cuda, cuda:N (that GPU) or mps."
    )
    resume: bool = option(
        False, "Continue from checkpoints/last.pt in the run folder (hydra.run.dir)."
    )
    data: DataConfig = field(default_factory=DataConfig)
    model: ModelConfig = field(default_factory=ModelConfig)
    attention: AttentionConfig = field(default_factory=AttentionConfig)
    train: TrainConfig = field(default_factory=TrainConfig)

    def __post_init__(self) -> None:
        # The names seq2seq.runtime.resolve_device accepts (it also checks the machine has it).
        check(
            DEVICE_PATTERN.fullmatch(self.device) is not None,
            f"device={self.device} is unknown; use {DEVICE_NAMES}",
        )
        if self.model.kind == ModelKind.transformer:
            self._check_transformer()
            return
        heads, key_size = self.attention.num_heads, self.model.key_size
        check(
            self.attention.type != AttentionType.multihead or key_size % heads == 0,
            f"attention.num_heads={heads} must divide the encoder output size {key_size} "
            f"(model.hidden_size × directions)",
        )

    def _check_transformer(self) -> None:
        """What does not apply to the Transformer, refused in one line naming what fits."""
        model, attention = self.model, self.attention
        check(
            attention.type in (AttentionType.multihead, AttentionType.dot),
            f"attention={attention.type} does not apply to model=transformer, whose attention is "
            "the package's multi-head scaled dot-product attention: use attention=multihead "
            "(attention.num_heads=N) or attention=dot (one head)",
        )
        heads = attention.num_heads if attention.type == AttentionType.multihead else 1
        check(
            model.hidden_size % heads == 0,
            f"attention.num_heads={heads} must divide the Transformer's model.hidden_size="
            f"{model.hidden_size}; choose a divisor (e.g. "
            f"{_divisor_near(model.hidden_size, heads)})",
        )
        check(
            model.decoder == DecoderArrangement.bahdanau,
            f"model.decoder={model.decoder} is an RNN decoder arrangement; the Transformer has "
            "its own decoder layers (model.decoder_layers): drop model.decoder",
        )
        check(
            self.train.teacher_forcing == 1.0,
            f"train.teacher_forcing={self.train.teacher_forcing}: the Transformer trains with "
            "full teacher forcing (all positions at once); drop train.teacher_forcing",
        )


def register_configs() -> None:
    """Register the schema so ``conf/config.yaml`` can list ``config_schema`` in its defaults,
    the resolver ``--help`` renders the options with (:mod:`seq2seq.config.help`),
    ``${seq2seq_cores:}`` (the CPU cores this process may use: a sweep's parallel jobs),
    ``${seq2seq_variant:${model.kind},${attention.type}}`` (what a run folder is named after:
    :func:`~seq2seq.choices.variant_name`), and
    ``${seq2seq_repo:data/tatoeba/cmn-eng.txt.xz}``: a path inside this repository, made
    absolute, so the corpora shipped with it are found from any working directory (the
    paths a user gives, e.g. ``data.path=...``, stay relative to the working directory)."""
    from pathlib import Path

    ConfigStore.instance().store(name="config_schema", node=Config)
    OmegaConf.register_new_resolver(
        "seq2seq_options", lambda *, _root_: options_help(_root_, Config), replace=True
    )
    OmegaConf.register_new_resolver("seq2seq_cores", usable_cores, replace=True)
    OmegaConf.register_new_resolver("seq2seq_variant", variant_name, replace=True)
    repository = Path(__file__).resolve().parents[2]
    OmegaConf.register_new_resolver(
        "seq2seq_repo", lambda relative: str(repository / relative), replace=True
    )


def _divisor_near(size: int, heads: int) -> int:
    """The divisor of ``size`` closest to ``heads`` (the smaller one on a tie)."""
    return min((d for d in range(1, size + 1) if size % d == 0), key=lambda d: (abs(d - heads), d))


def to_config(composed: DictConfig) -> Config:
    """Hydra's composed config as the schema's dataclasses (the one conversion; every section
    checks itself on the way: a bad value is one :class:`UserError` line). A key the schema
    does not have — a typo given with ``+``, which Hydra adds and the conversion would drop —
    is refused with the nearest option's name."""
    unknown = _unknown_keys(composed, Config)
    if unknown:
        name, nearest = unknown[0]
        hint = f"; did you mean {nearest}?" if nearest else ""
        raise UserError(
            f"{name} is not an option{hint} (python scripts/train.py --help lists every option)"
        )
    try:
        config = OmegaConf.to_object(composed)
    except OmegaConfBaseException as err:
        raise UserError(" ".join(str(err).split("full_key:")[0].split())) from None
    assert isinstance(config, Config), type(config)
    return config


def to_plain(config: Any) -> Any:
    """A config (or any section) as plain Python data, enums as their names: what
    checkpoints (loaded with ``weights_only``), JSON and YAML hold."""
    if dataclasses.is_dataclass(config) and not isinstance(config, type):
        return {f.name: to_plain(getattr(config, f.name)) for f in dataclasses.fields(config)}
    if isinstance(config, Enum):
        return str(config.value)
    if isinstance(config, list | tuple):
        return [to_plain(v) for v in config]
    if isinstance(config, dict):
        return {k: to_plain(v) for k, v in config.items()}
    return config


def _unknown_keys(node: Any, schema: type, prefix: str = "") -> list[tuple[str, str | None]]:
    """``(key, nearest option)`` for every key of ``node`` (a config mapping) that ``schema``
    (a dataclass) has no field for, depth first; Hydra's own node is not the schema's."""
    fields = {f.name: f for f in dataclasses.fields(schema)}
    found: list[tuple[str, str | None]] = []
    for key in node:
        if not prefix and key == "hydra":
            continue
        field_ = fields.get(str(key))
        if field_ is None:
            nearest = difflib.get_close_matches(str(key), list(fields), n=1, cutoff=0.6)
            found.append((f"{prefix}{key}", f"{prefix}{nearest[0]}" if nearest else None))
            continue
        group = field_.default_factory
        if isinstance(group, type) and dataclasses.is_dataclass(group):
            found += _unknown_keys(node[key], group, f"{prefix}{key}.")
    return found
