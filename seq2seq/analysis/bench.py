"""Measure the trainer in one process: training throughput per attention variant against a
tutorial-style reference, the machine's GEMM rate and the fraction of it the trainer reaches,
batched greedy/beam decoding speed, wall time to 99% valid exact match, and peak memory.

Everything runs through the real code paths (``Trainer._train_step``, ``Trainer.fit`` with its
validation, ``translate_dataset``) on the configured corpus and sizes; ``scripts/bench.py`` is
the command line. :class:`TutorialSeq2Seq` is the reference: the same layer sizes, data and
additive attention written the way the common PyTorch tutorials do it.
"""

from __future__ import annotations

import math
import os
import platform
import resource
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F
from omegaconf import DictConfig
from torch import Tensor, nn

from seq2seq.config.compose import load_config
from seq2seq.data.batching import Batch, ParallelDataset
from seq2seq.data.vocab import Vocab
from seq2seq.evaluation.scoring import sequence_loss, translate_dataset
from seq2seq.files import write_json
from seq2seq.model import DECODER_TYPES, ModelSpec
from seq2seq.model.attention import ATTENTION_TYPES, has_weights, masked_softmax
from seq2seq.training.tblog import RunLogger
from seq2seq.training.trainer import Trainer

Progress = Callable[[str], None]


def _quiet(_message: str) -> None:
    """The default progress callback: say nothing."""


# ---------------------------------------------------------------------------------- FLOPs
@dataclass(frozen=True)
class BatchShape:
    """The shapes one training batch runs at.

    batch:      sentence pairs, B
    src_len:    source positions attention runs over (the padded source length), S
    tgt_len:    decoder steps (the padded target length), T
    src_tokens: encoder GRU steps summed over the batch: the real source tokens when the
                encoder packs its input, ``B · S`` when it runs over padding
    """

    batch: int
    src_len: int
    tgt_len: int
    src_tokens: int


def flop_breakdown(spec: ModelSpec, shape: BatchShape) -> dict[str, int]:
    """Forward matrix-multiply FLOPs of one batch, per part of the model.

    A product of (m×k) by (k×n) counts ``2·m·k·n``; element-wise work (gates, tanh, softmax),
    embedding look-ups and the loss are not counted. With E = embed, H = hidden, D =
    directions, K = D·H (key size), A = additive attention size, V = target vocabulary and
    the shape's B, S, T and N = ``src_tokens``:

    - encoder: ``N · D · Σ_layers (2·in·3H + 2·H·3H)``, ``in`` = E for the first layer, K after
    - bridge: ``B · 2·K·H``
    - attention, once per batch plus per decoder step (``B·T`` steps):
        none: 0;
        additive: ``B·S·2·K·A`` (U_a k) + per step ``2·H·A + 2·S·A + 2·S·K``
        (W_a s, v_a, weighted sum);
        dot: per step ``2·H·K`` (query projection, only when H ≠ K) ``+ 2·S·K + 2·S·K``;
        multihead: ``2 · B·S·2·K·K`` (key and value projections) + per step
        ``2·H·K + 2·S·K + 2·S·K + 2·K·K`` (query, scores, weighted sum, output layer)
    - decoder_gru: per step ``2·(E+K)·3H + 2·H·3H`` (input and hidden projections); the
      Luong decoder's GRU reads the word only: ``2·E·3H + 2·H·3H`` (attention none always
      feeds its fixed context, see :func:`seq2seq.model.build_decoder`)
    - readout: per step ``2·(H+K+E)·H + 2·H·V``

    These are the FLOPs of the model's equations at these shapes, not of one implementation:
    the trainer's algebraic short-cuts (e.g. projecting the values into the GRU gates once
    per batch) and the reference's repeated work (re-projecting keys every step) are not
    counted as such, so two implementations at the same shapes count the same. What does
    differ is the shapes: the trainer packs the encoder and pads each batch to its own
    longest pair, the reference pads everything to the corpus maximum.
    """
    e, h, v = spec.embed_size, spec.hidden_size, spec.tgt_vocab_size
    directions = 2 if spec.bidirectional else 1
    k = directions * h
    a = spec.attention_hidden_size or h
    b, s, steps = shape.batch, shape.src_len, shape.batch * shape.tgt_len
    layer_inputs = [e] + [k] * (spec.encoder_layers - 1)
    gru_context = 0 if spec.decoder == "luong" and has_weights(spec.attention) else k
    encoder = (
        shape.src_tokens * directions * sum(2 * n * 3 * h + 2 * h * 3 * h for n in layer_inputs)
    )
    if spec.attention == "none":
        attention = 0
    elif spec.attention == "additive":
        attention = b * s * 2 * k * a + steps * (2 * h * a + 2 * s * a + 2 * s * k)
    elif spec.attention == "dot":
        attention = steps * ((2 * h * k if h != k else 0) + 4 * s * k)
    elif spec.attention == "multihead":
        attention = 2 * b * s * 2 * k * k + steps * (2 * h * k + 4 * s * k + 2 * k * k)
    else:
        raise ValueError(f"unknown attention {spec.attention!r}")
    return {
        "encoder": encoder,
        "bridge": b * 2 * k * h,
        "attention": attention,
        "decoder_gru": steps * (2 * (e + gru_context) * 3 * h + 2 * h * 3 * h),
        "readout": steps * (2 * (h + k + e) * h + 2 * h * v),
    }


def forward_flops(spec: ModelSpec, shape: BatchShape) -> int:
    """Forward matmul FLOPs of one batch (the sum of :func:`flop_breakdown`)."""
    return sum(flop_breakdown(spec, shape).values())


def train_flops(spec: ModelSpec, shape: BatchShape) -> int:
    """FLOPs of one training step: forward + backward ≈ 3 × forward (backward computes the
    gradients of both the inputs and the weights of every product, two products each)."""
    return 3 * forward_flops(spec, shape)


# ---------------------------------------------------------------------- the reference
class TutorialSeq2Seq(nn.Module):
    """The same additive-attention model, written the way the common PyTorch tutorials do.

    Same layer sizes as :class:`seq2seq.model.Seq2Seq` with ``attention=additive``, but: the
    encoder GRU runs over padded input (no packing; its final state has read the padding),
    the keys are re-projected by ``U_a`` at every decoder step, the decoder is an
    ``nn.GRUCell`` loop and the output layer runs inside the loop, once per step. Attention
    is masked, so padding gets no weight. The arrangement is Bahdanau's (attend from the
    previous state, feed the context into the GRU), as in those tutorials. Used only as a
    speed baseline.
    """

    def __init__(self, spec: ModelSpec) -> None:
        super().__init__()
        e, h = spec.embed_size, spec.hidden_size
        self.directions = 2 if spec.bidirectional else 1
        k, a = h * self.directions, spec.attention_hidden_size or h
        self.src_embedding = nn.Embedding(spec.src_vocab_size, e, padding_idx=Vocab.pad_id)
        self.encoder = nn.GRU(
            e,
            h,
            num_layers=spec.encoder_layers,
            bidirectional=spec.bidirectional,
            dropout=spec.dropout if spec.encoder_layers > 1 else 0.0,
            batch_first=True,
        )
        self.bridge = nn.Linear(k, h)
        self.tgt_embedding = nn.Embedding(spec.tgt_vocab_size, e, padding_idx=Vocab.pad_id)
        self.query_layer = nn.Linear(h, a)  # W_a
        self.key_layer = nn.Linear(k, a, bias=False)  # U_a
        self.energy_layer = nn.Linear(a, 1, bias=False)  # v_a
        self.cell = nn.GRUCell(e + k, h)
        self.pre_output = nn.Linear(h + k + e, h)
        self.output = nn.Linear(h, spec.tgt_vocab_size)
        self.dropout = nn.Dropout(spec.dropout)

    def attend(self, state: Tensor, keys: Tensor, mask: Tensor) -> Tensor:
        """state (B, H), keys (B, S, K), mask (B, S) -> context (B, K)."""
        energy = torch.tanh(self.query_layer(state).unsqueeze(1) + self.key_layer(keys))
        weights = masked_softmax(self.energy_layer(energy).squeeze(-1), mask)  # (B, S)
        return torch.bmm(weights.unsqueeze(1), keys).squeeze(1)

    def forward(self, src: Tensor, src_mask: Tensor, tgt_in: Tensor) -> Tensor:
        """src (B, S), src_mask (B, S), tgt_in (B, T) -> logits (B, T, V)."""
        keys, final = self.encoder(self.dropout(self.src_embedding(src)))
        state = torch.tanh(self.bridge(torch.cat(list(final[-self.directions :]), dim=-1)))
        logits = []
        for t in range(tgt_in.size(1)):
            embedded = self.dropout(self.tgt_embedding(tgt_in[:, t]))
            context = self.attend(state, keys, src_mask)
            state = self.cell(torch.cat([embedded, context], dim=-1), state)
            hidden = torch.tanh(self.pre_output(torch.cat([state, context, embedded], dim=-1)))
            logits.append(self.output(self.dropout(hidden)))
        return torch.stack(logits, dim=1)


def pad_to(tensor: Tensor, length: int, value: int) -> Tensor:
    """Right-pad a (B, T) tensor to (B, length)."""
    return F.pad(tensor, (0, length - tensor.size(1)), value=value)


class TutorialTrainer:
    """Trains :class:`TutorialSeq2Seq` like the tutorials: random batches (no bucketing),
    every batch padded to the corpus' longest source and target; the same Adam, learning
    rate and gradient clipping as :class:`seq2seq.training.trainer.Trainer`."""

    name = "reference"  # its key in measurements; its row in bench.json is "reference"

    def __init__(
        self, spec: ModelSpec, dataset: ParallelDataset, train_cfg: DictConfig, device: torch.device
    ) -> None:
        self.spec = replace(spec, attention="additive")
        self.dataset = dataset
        self.batch_size = train_cfg.batch_size
        self.clip = train_cfg.clip_grad_norm or math.inf
        self.device = device
        self.model = TutorialSeq2Seq(self.spec).to(device)
        self.optimizer = torch.optim.Adam(self.model.parameters(), lr=train_cfg.lr)
        self.src_len = max(len(ids) for ids in dataset.src_ids)
        self.tgt_len = max(len(ids) for ids in dataset.tgt_ids)

    def batches(self, seed: int = 0) -> Iterator[list[int]]:
        """Random batches, reshuffled every epoch, forever."""
        generator = torch.Generator().manual_seed(seed)
        while True:
            order = torch.randperm(len(self.dataset), generator=generator).tolist()
            for start in range(0, len(order), self.batch_size):
                yield order[start : start + self.batch_size]

    def collate(self, indices: Sequence[int]) -> Batch:
        """A batch padded to the corpus maximum lengths."""
        batch = self.dataset.collate(indices)
        src = pad_to(batch.src, self.src_len, Vocab.pad_id)
        tgt_out = pad_to(batch.tgt_out, self.tgt_len, Vocab.pad_id)
        return Batch(
            src=src,
            src_lengths=batch.src_lengths,
            src_mask=src != Vocab.pad_id,
            tgt_in=pad_to(batch.tgt_in, self.tgt_len, Vocab.pad_id),
            tgt_out=tgt_out,
            tgt_mask=tgt_out != Vocab.pad_id,
            indices=batch.indices,
        ).to(self.device)

    def train_step(self, indices: Sequence[int]) -> int:
        """One update; returns the number of real target tokens."""
        batch = self.collate(indices)
        self.model.train()
        logits = self.model(batch.src, batch.src_mask, batch.tgt_in)
        loss = sequence_loss(logits, batch.tgt_out)
        self.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(self.model.parameters(), self.clip)
        self.optimizer.step()
        loss.item()  # wait for the step, as the trainer does
        return batch.num_tgt_tokens

    def shape(self, indices: Sequence[int]) -> BatchShape:
        """Everything padded to the corpus maximum; the encoder runs over the padding."""
        return BatchShape(len(indices), self.src_len, self.tgt_len, len(indices) * self.src_len)


# ---------------------------------------------------------------------- measurements
def synchronize(device: torch.device) -> None:
    """Wait for queued GPU work (a no-op on the CPU), so wall-clock times are complete."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)


@dataclass
class Contestant:
    """Something whose training throughput is measured: a step and its batches."""

    name: str
    spec: ModelSpec
    step: Callable[[Sequence[int]], int]  # one update -> real target tokens
    shape: Callable[[Sequence[int]], BatchShape]
    batches: Iterator[list[int]]


@dataclass
class Throughput:
    """What a contestant did while the clock ran."""

    tokens: int = 0
    batches: int = 0
    seconds: float = 0.0
    flops: int = 0
    decoder_slots: int = 0  # B·T summed: target positions the decoder ran, padding included

    @property
    def tokens_per_s(self) -> float:
        return self.tokens / self.seconds if self.seconds > 0 else 0.0

    @property
    def gflops(self) -> float:
        return self.flops / self.seconds / 1e9 if self.seconds > 0 else 0.0

    def record(self, tokens: int, shape: BatchShape, flops: int) -> None:
        self.tokens += tokens
        self.batches += 1
        self.flops += flops
        self.decoder_slots += shape.batch * shape.tgt_len


def trainer_contestant(name: str, trainer: Trainer) -> Contestant:
    """The real trainer: ``Trainer._train_step`` over its own bucketed sampler's batches."""
    dataset = trainer.train_set

    def step(indices: Sequence[int]) -> int:
        return trainer._train_step(list(indices))[2]

    def shape(indices: Sequence[int]) -> BatchShape:
        src = [len(dataset.src_ids[i]) for i in indices]
        tgt = [len(dataset.tgt_ids[i]) for i in indices]
        return BatchShape(len(indices), max(src), max(tgt), sum(src))

    def batches() -> Iterator[list[int]]:
        epoch = 0
        while True:
            trainer.sampler.set_epoch(epoch)
            yield from trainer.sampler.batches()
            epoch += 1

    return Contestant(name, trainer.spec, step, shape, batches())


def reference_contestant(reference: TutorialTrainer, seed: int) -> Contestant:
    return Contestant(
        reference.name,
        reference.spec,
        reference.train_step,
        reference.shape,
        reference.batches(seed),
    )


def _run_for(
    contestant: Contestant,
    into: Throughput,
    seconds: float,
    max_batches: int | None,
    device: torch.device,
) -> None:
    """Train ``contestant`` until ``seconds`` have passed or ``max_batches`` ran (one at least)."""
    synchronize(device)
    start = time.perf_counter()
    done = 0
    while True:
        indices = next(contestant.batches)
        shape = contestant.shape(indices)
        tokens = contestant.step(indices)
        into.record(tokens, shape, train_flops(contestant.spec, shape))
        done += 1
        synchronize(device)
        elapsed = time.perf_counter() - start
        if elapsed >= seconds or (max_batches is not None and done >= max_batches):
            break
    into.seconds += elapsed


def measure_training(
    contestants: Sequence[Contestant],
    *,
    seconds: float,
    rounds: int,
    warmup: int,
    max_batches: int | None,
    device: torch.device,
    progress: Progress = _quiet,
) -> dict[str, Throughput]:
    """Tokens/s of each contestant after ``warmup`` untimed batches.

    Each contestant gets ``seconds`` in all (and at most ``max_batches``), split into
    ``rounds`` turns taken in rotation, so slow drifts of a shared machine hit all alike.
    """
    results = {c.name: Throughput() for c in contestants}
    for contestant in contestants:
        progress(f"warming up {contestant.name}")
        for _ in range(warmup):
            contestant.step(next(contestant.batches))
    turn_batches = None if max_batches is None else max(1, math.ceil(max_batches / rounds))
    for round_index in range(rounds):
        for contestant in contestants:
            progress(f"round {round_index + 1}/{rounds}: training {contestant.name}")
            _run_for(contestant, results[contestant.name], seconds / rounds, turn_batches, device)
    return results


def measure_gemm(device: torch.device, size: int, seconds: float) -> dict[str, float]:
    """fp32 ``size × size`` matrix products in a loop: GFLOP/s at the current thread settings."""
    a = torch.randn(size, size, device=device)
    b = torch.randn(size, size, device=device)
    out = torch.empty_like(a)
    chunk = 20 if device.type == "cuda" else 1
    for _ in range(3):
        torch.mm(a, b, out=out)
    synchronize(device)
    start, count = time.perf_counter(), 0
    while True:
        for _ in range(chunk):
            torch.mm(a, b, out=out)
        count += chunk
        synchronize(device)
        elapsed = time.perf_counter() - start
        if elapsed >= seconds:
            break
    return {
        "gflops": 2 * size**3 * count / elapsed / 1e9,
        "size": size,
        "matmuls": count,
        "seconds": elapsed,
    }


def measure_decoding(trainer: Trainer, beam_size: int) -> dict[str, Any]:
    """Sentences/s of batched greedy and beam decoding of the valid split (``translate_dataset``,
    length-sorted batches of ``train.eval_batch_size``), with the trainer's current model."""
    result: dict[str, Any] = {
        "sentences": len(trainer.valid_set),
        "batch_size": trainer.cfg.train.eval_batch_size,
        "beam_size": beam_size,
    }
    for name, beam in (("greedy", 1), ("beam", beam_size)):
        synchronize(trainer.device)
        start = time.perf_counter()
        hypotheses = translate_dataset(
            trainer.model,
            trainer.valid_set,
            trainer.corpus.tgt_vocab,
            batch_size=trainer.cfg.train.eval_batch_size,
            device=trainer.device,
            beam_size=beam,
        )
        synchronize(trainer.device)
        elapsed = time.perf_counter() - start
        result[f"{name}_sentences_per_s"] = len(hypotheses) / elapsed
        result[f"{name}_seconds"] = elapsed
        result[f"{name}_mean_output_words"] = sum(map(len, hypotheses)) / max(len(hypotheses), 1)
    return result


class BudgetedTrainer(Trainer):
    """A :class:`Trainer` whose :meth:`fit` also ends once ``budget_s`` of wall time passed
    (then validates a last time, as ``fit`` does whenever it ends)."""

    def __init__(self, cfg: DictConfig, run_dir: str | Path, budget_s: float) -> None:
        super().__init__(cfg, run_dir)
        self.budget_s = budget_s
        self.deadline = math.inf

    def fit(self, logger: RunLogger) -> None:
        self.deadline = time.perf_counter() + self.budget_s
        super().fit(logger)

    def _done(self) -> bool:
        return super()._done() or time.perf_counter() >= self.deadline


def time_to_target(
    overrides: Sequence[str], run_dir: Path, target: float, budget_s: float
) -> tuple[dict[str, Any], Trainer]:
    """Train the configured model with the real loop until valid exact match reaches
    ``target`` or ``budget_s`` of wall time passed; returns the result and the trainer.

    The run keeps the config's step or epoch limit, because the learning-rate schedule is
    planned over it; only early stopping on stalled BLEU is turned off. ``seconds`` is the
    trainer's ``train_seconds`` (update steps only, validation excluded) at the first
    validation that reached the target, or None if none did.
    """
    cfg = load_config([*overrides, f"train.stop_at_exact_match={target}", "train.patience=0"])
    trainer = BudgetedTrainer(cfg, run_dir, budget_s)
    logger = RunLogger(run_dir / "tb")
    start = time.perf_counter()
    try:
        trainer.fit(logger)
    finally:
        logger.close()
    history = trainer.state.history
    reached = next((h for h in history if h["valid_exact_match"] >= target), None)
    result = {
        "target": target,
        "seconds": reached["train_seconds"] if reached else None,
        "step": reached["step"] if reached else None,
        "reached": reached is not None,
        "best_exact_match": max((h["valid_exact_match"] for h in history), default=0.0),
        "steps_run": trainer.state.step,
        "train_seconds_used": trainer.state.train_seconds,
        "wall_seconds_used": time.perf_counter() - start,
        "budget_s": budget_s,
        "eval_every": cfg.train.eval_every,
        "attention": cfg.attention.type,
        "curve": [  # every validation: where the run stood
            {k: h[k] for k in ("step", "train_seconds", "valid_exact_match")} for h in history
        ],
    }
    return result, trainer


def peak_memory(device: torch.device) -> dict[str, Any]:
    """Peak memory in MiB: the process' max resident set size, and on CUDA the allocator's peak."""
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    rss_mib = rss / 2**20 if sys.platform == "darwin" else rss / 2**10  # bytes vs KiB
    if device.type == "cuda":
        return {
            "peak_memory_mb": torch.cuda.max_memory_allocated(device) / 2**20,
            "peak_memory_source": "torch.cuda.max_memory_allocated",
            "peak_rss_mb": rss_mib,
        }
    return {"peak_memory_mb": rss_mib, "peak_memory_source": "ru_maxrss", "peak_rss_mb": rss_mib}


def cpu_model() -> str:
    """The CPU's model name from /proc/cpuinfo, else what :mod:`platform` knows."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def machine_info(device: torch.device) -> dict[str, Any]:
    return {
        "cpu": cpu_model(),
        "cpu_count": os.cpu_count(),
        "torch_threads": torch.get_num_threads(),
        "interop_threads": torch.get_num_interop_threads(),
        "torch": torch.__version__,
        "python": platform.python_version(),
        "platform": platform.platform(),
        "device": str(device),
        "gpu": torch.cuda.get_device_name(device) if device.type == "cuda" else None,
        "load_average": load_average(),
    }


def load_average() -> list[float] | None:
    """The 1, 5 and 15 minute load averages (other processes' share of a shared machine)."""
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except (AttributeError, OSError):
        return None


# ---------------------------------------------------------------------- the whole run
@dataclass(frozen=True)
class BenchOptions:
    """What to run; :meth:`create` fills in the full or ``--tiny`` defaults."""

    overrides: tuple[str, ...] = ()
    tiny: bool = False
    seconds: float = 18.0  # measured training time per contestant
    rounds: int = 3
    warmup: int = 3
    max_batches: int | None = None
    gemm_size: int = 1024
    gemm_seconds: float = 3.0
    beam_size: int = 5
    target: float = 0.99
    time_budget: float = 360.0
    variants: tuple[str, ...] = tuple(ATTENTION_TYPES)
    other_decoder: bool = True  # also measure each variant in the other decoder arrangement

    @classmethod
    def create(
        cls, overrides: Sequence[str] = (), tiny: bool = False, **given: Any
    ) -> BenchOptions:
        """Options with ``given`` values (None = default for the mode) on top of the defaults."""
        defaults: dict[str, Any] = {}
        if tiny:
            defaults = {
                "seconds": 1.0,
                "rounds": 1,
                "warmup": 1,
                "max_batches": 4,
                "gemm_size": 256,
                "gemm_seconds": 0.2,
                "target": 0.0,
                "time_budget": 5.0,
            }
        chosen = {k: v for k, v in given.items() if v is not None}
        return cls(overrides=tuple(overrides), tiny=tiny, **(defaults | chosen))


def tiny_overrides(user: Sequence[str], corpus_dir: Path) -> list[str]:
    """A tiny model, batches and (unless the user chose data) a tiny synthetic corpus written
    into ``corpus_dir``; the user's overrides come after, so they win."""
    small = [
        "model.embed_size=16",
        "model.hidden_size=16",
        "train.batch_size=16",
        "train.eval_batch_size=64",
        "train.eval_every=5",
        "train.log_every=5",
    ]
    if not any(o.lstrip("+~").startswith("data") for o in user):
        small += [
            f"data.dir={corpus_dir}",
            "data.train_size=200",
            "data.valid_size=24",
            "data.test_size=24",
            "data.max_len=10",
            "data.samples=[]",
        ]
    return [*small, *user]


def contestant_overrides(options: BenchOptions, cfg: DictConfig) -> list[tuple[str, list[str]]]:
    """Name and extra overrides of every trainer measured: each variant in the configured
    decoder arrangement (named after the attention), then, with ``other_decoder``, each
    attention variant in the other arrangement (e.g. ``additive/luong``)."""
    configured = cfg.model.decoder
    runs = [(name, [f"attention={name}"]) for name in options.variants]
    if options.other_decoder:
        other = next(d for d in DECODER_TYPES if d != configured)
        runs += [
            (f"{name}/{other}", [f"attention={name}", f"model.decoder={other}"])
            for name in options.variants
            if has_weights(name)  # no attention, no arrangement: the same model
        ]
    return runs


def _entry(throughput: Throughput, gemm_gflops: float) -> dict[str, Any]:
    return {
        "tokens_per_s": throughput.tokens_per_s,
        "tokens": throughput.tokens,
        "batches": throughput.batches,
        "seconds": throughput.seconds,
        "achieved_gflops": throughput.gflops,
        "fraction_of_peak": throughput.gflops / gemm_gflops,
        "target_padding_share": 1 - throughput.tokens / max(throughput.decoder_slots, 1),
    }


def run_benchmark(options: BenchOptions, progress: Progress = _quiet) -> dict[str, Any]:
    """Run every measurement of the module docstring; returns what bench.json holds."""
    with tempfile.TemporaryDirectory(prefix="seq2seq-bench-") as tmp_name:
        tmp = Path(tmp_name)
        load_at_start = load_average()
        started = time.perf_counter()
        overrides = list(options.overrides)
        if options.tiny:
            overrides = tiny_overrides(overrides, tmp / "corpus")
        cfg = load_config(overrides)
        progress("building trainers")
        trainers = {
            name: Trainer(load_config([*overrides, *extra]), tmp / f"run_{index}")
            for index, (name, extra) in enumerate(contestant_overrides(options, cfg))
        }
        first = next(iter(trainers.values()))
        device = first.device
        reference = TutorialTrainer(
            replace(first.spec, attention="additive", num_heads=1, decoder="bahdanau"),
            first.train_set,
            cfg.train,
            device,
        )
        progress(f"measuring fp32 GEMM ({options.gemm_size}³)")
        gemm = measure_gemm(device, options.gemm_size, options.gemm_seconds)
        contestants = [trainer_contestant(n, t) for n, t in trainers.items()]
        contestants.append(reference_contestant(reference, cfg.seed))
        throughput = measure_training(
            contestants,
            seconds=options.seconds,
            rounds=options.rounds,
            warmup=options.warmup,
            max_batches=options.max_batches,
            device=device,
            progress=progress,
        )
        del trainers, contestants, reference
        progress(
            f"training {cfg.attention.type} to {options.target:.0%} valid exact match "
            f"(budget {options.time_budget:.0f} s)"
        )
        to_target, trained = time_to_target(
            overrides, tmp / "time_to_target", options.target, options.time_budget
        )
        progress(f"decoding the valid split (greedy, beam {options.beam_size})")
        decoding = measure_decoding(trained, options.beam_size)
        decoding["model_exact_match"] = to_target["best_exact_match"]
    result = _assemble(options, cfg, device, gemm, throughput, decoding, to_target)
    result["machine"]["load_average_at_start"] = load_at_start
    result["bench_wall_seconds"] = time.perf_counter() - started
    return result


def _assemble(
    options: BenchOptions,
    cfg: DictConfig,
    device: torch.device,
    gemm: dict[str, float],
    throughput: dict[str, Throughput],
    decoding: dict[str, Any],
    to_target: dict[str, Any],
) -> dict[str, Any]:
    peak = gemm["gflops"]
    reference = throughput[TutorialTrainer.name].tokens_per_s
    training = {
        name: _entry(t, peak) | {"speedup_vs_reference": t.tokens_per_s / reference}
        for name, t in throughput.items()
        if name != TutorialTrainer.name
    }
    main = training.get(cfg.attention.type) or next(iter(training.values()))
    return {
        "machine": machine_info(device),
        "config": {
            "overrides": list(options.overrides),
            "options": {k: v for k, v in asdict(options).items() if k != "overrides"},
            "attention": cfg.attention.type,
            "batch_size": cfg.train.batch_size,
            "embed_size": cfg.model.embed_size,
            "hidden_size": cfg.model.hidden_size,
            "decoder": cfg.model.decoder,
            "lr_schedule": cfg.train.lr_schedule,
            "data": cfg.data.name,
        },
        "training": training,
        "reference": {"model": TutorialSeq2Seq.__name__, "attention": "additive"}
        | _entry(throughput[TutorialTrainer.name], peak),
        "speedup_vs_reference": {n: e["speedup_vs_reference"] for n, e in training.items()},
        "gemm_gflops": peak,
        "gemm": gemm,
        "achieved_gflops": main["achieved_gflops"],
        "fraction_of_peak": main["fraction_of_peak"],
        "decoding": decoding,
        "time_to_99_s": to_target["seconds"],
        "time_to_99": to_target,
        **peak_memory(device),
    }


def format_table(result: dict[str, Any]) -> str:
    """The printed summary of a :func:`run_benchmark` result."""
    m, c = result["machine"], result["config"]
    lines = [
        f"seq2seq benchmark — {m['device']}{' (' + m['gpu'] + ')' if m['gpu'] else ''}, "
        f"{m['cpu']}, {m['torch_threads']} threads, torch {m['torch']}, load average "
        f"{m.get('load_average_at_start')} -> {m['load_average']}",
        f"config: data={c['data']} batch={c['batch_size']} embed={c['embed_size']} "
        f"hidden={c['hidden_size']} decoder={c['decoder']} "
        f"overrides={' '.join(c['overrides']) or '(none)'}",
        "",
        f"{'training':<22}{'tok/s':>10}{'batches':>9}{'seconds':>9}{'GFLOP/s':>9}"
        f"{'%peak':>7}{'pad':>6}{'× ref':>7}",
    ]
    rows = [
        *result["training"].items(),
        (f"{TutorialTrainer.name} (tutorial)", result["reference"]),
    ]
    for name, e in rows:
        speedup = e.get("speedup_vs_reference", 1.0)
        lines.append(
            f"{name:<22}{e['tokens_per_s']:>10,.0f}{e['batches']:>9}{e['seconds']:>9.1f}"
            f"{e['achieved_gflops']:>9.2f}{100 * e['fraction_of_peak']:>6.1f}%"
            f"{100 * e['target_padding_share']:>5.0f}%{speedup:>6.2f}×"
        )
    g, d, t = result["gemm"], result["decoding"], result["time_to_99"]
    lines += [
        "",
        f"fp32 GEMM {g['size']}×{g['size']}: {result['gemm_gflops']:.1f} GFLOP/s; trainer "
        f"({c['attention']}) reaches {result['achieved_gflops']:.2f} GFLOP/s = "
        f"{100 * result['fraction_of_peak']:.1f}% of it",
        f"decoding {d['sentences']} valid sentences (batch {d['batch_size']}): greedy "
        f"{d['greedy_sentences_per_s']:,.1f} sent/s, beam {d['beam_size']} "
        f"{d['beam_sentences_per_s']:,.1f} sent/s (model at exact match "
        f"{d['model_exact_match']:.3f})",
    ]
    if t["reached"]:
        lines.append(
            f"time to {t['target']:.0%} valid exact match ({t['attention']}): "
            f"{t['seconds']:.1f} s of training (step {t['step']}; "
            f"{t['wall_seconds_used']:.1f} s wall with validation)"
        )
    else:
        lines.append(
            f"time to {t['target']:.0%} valid exact match ({t['attention']}): not reached in "
            f"{t['wall_seconds_used']:.0f} s wall ({t['train_seconds_used']:.1f} s training, "
            f"{t['steps_run']} steps); best {t['best_exact_match']:.3f}"
        )
    lines.append(
        f"peak memory: {result['peak_memory_mb']:,.0f} MiB ({result['peak_memory_source']}); "
        f"benchmark wall time {result['bench_wall_seconds']:.0f} s"
    )
    return "\n".join(lines)


def save_result(result: dict[str, Any], path: Path) -> None:
    """Write ``result`` as indented JSON (atomically)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    write_json(path, result)
