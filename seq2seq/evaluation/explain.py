"""Attention put to the test on one split: does the model use what its attention shows, and is
the attention the best account of what it did? (``scripts/evaluate.py RUN --explain``)

Two questions, answered against the corpus' own gold alignment:

* **Interventions** (:mod:`.interventions`): the split scored under each replacement of the
  attention weights, beside the model's own (``none``): free-running BLEU and exact match,
  teacher-forced loss and token accuracy. A model that uses its attention loses BLEU when the
  weights are uniform or shuffled.
* **Maps** (:mod:`.attributions`): the alignment error rate of each account of where the
  output came from — the attention itself (every head averaged, and per head), gradient ×
  input on the whole split, integrated gradients on a sample spread over the lengths (its
  steps and Captum's convergence delta stated), and for the Transformer every decoder layer's
  cross-attention and its Shift-Att.

The result is an :class:`Explanation`, recorded in ``metrics.json`` under ``explain``
(:func:`seq2seq.evaluation.summary.record_evaluation`) and compared across runs by
``scripts/compare.py``.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

import numpy as np
import torch
from torch import Tensor

from seq2seq.data.batching import Batch, ParallelDataset
from seq2seq.data.vocab import Vocab
from seq2seq.evaluation import metrics
from seq2seq.evaluation.attributions import IG_STEPS, attribution_maps, shift_att
from seq2seq.evaluation.extract import ALL_LAYERS, extract_attention_weights
from seq2seq.evaluation.interventions import every_intervention, intervention_scores
from seq2seq.evaluation.scores import Explanation, MapScores
from seq2seq.model.networks import Network

#: Integrated gradients' sample: this many sentences of each source-length bucket (the first
#: ones of the split), so short and long sentences weigh alike.
IG_PER_BUCKET = 20


def explain(
    model: Network,
    dataset: ParallelDataset,
    tgt_vocab: Vocab,
    *,
    checkpoint: str,
    step: int,
    split: str,
    batch_size: int,
    device: torch.device,
    ig_per_bucket: int = IG_PER_BUCKET,
    ig_steps: int = IG_STEPS,
    progress: Callable[[str], None] = lambda _: None,
) -> Explanation:
    """Interventions and maps of ``model`` on ``dataset`` (see the module docstring)."""
    started = time.perf_counter()
    linked = all(p.alignment is not None for p in dataset.pairs)
    scored = []
    if model.attention.has_weights:
        for intervention in [None, *every_intervention(model.spec)]:
            if intervention is not None and intervention.rule == "gold" and not linked:
                continue
            progress(f"intervention {'none' if intervention is None else intervention.name}")
            scored.append(
                intervention_scores(
                    model, dataset, tgt_vocab, intervention, batch_size=batch_size, device=device
                )
            )
    else:
        progress("the model's own translation (no attention to intervene on)")
        scored.append(
            intervention_scores(
                model, dataset, tgt_vocab, None, batch_size=batch_size, device=device
            )
        )
    maps: list[MapScores] = []
    if linked:
        maps += attention_map_scores(model, dataset, batch_size, device, progress)
        progress("gradient × input")
        maps.append(_attribution_scores(model, dataset, range(len(dataset)), "grad_x_input",
                                        batch_size, device, ig_steps))  # fmt: skip
        sample = length_spread_sample(dataset, ig_per_bucket)
        progress(f"integrated gradients ({len(sample)} sentences, {ig_steps} steps)")
        maps.append(_attribution_scores(model, dataset, sample, "integrated_gradients",
                                        batch_size, device, ig_steps))  # fmt: skip
    return Explanation(
        checkpoint, step, split, scored, maps, round(time.perf_counter() - started, 1)
    )


def length_spread_sample(dataset: ParallelDataset, per_bucket: int) -> list[int]:
    """The first ``per_bucket`` pairs of each source-length bucket, in split order."""
    buckets = metrics.bucket_indices([len(p.src) for p in dataset.pairs])
    return sorted(i for indices in buckets.values() for i in indices[:per_bucket])


def _batches(
    dataset: ParallelDataset, indices: Sequence[int], batch_size: int, device: torch.device
):
    indices = list(indices)
    for start in range(0, len(indices), batch_size):
        yield dataset.collate(indices[start : start + batch_size]).to(device)


def _trimmed(maps: Tensor, batch: Batch) -> list[np.ndarray]:
    """(B, [heads,] T_t, T_s) -> each sentence's (…, t_b, s_b) array (``<eos>`` included)."""
    arrays = maps.detach().float().cpu().numpy()
    tgt_lengths = batch.tgt_mask.sum(1).tolist()
    src_lengths = batch.src_lengths.tolist()
    sizes = zip(tgt_lengths, src_lengths, strict=True)
    return [arrays[b, ..., :t, :s] for b, (t, s) in enumerate(sizes)]


def map_aer(
    dataset: ParallelDataset, indices: Sequence[int], arrays: Sequence[np.ndarray]
) -> dict[str, float | int | list[float]]:
    """The alignment scores (:func:`seq2seq.evaluation.metrics.alignment_scores`) of maps
    ``arrays[k]`` ((heads,) t_k, s_k, ``<eos>`` row and column included) of the pairs
    ``indices[k]`` of ``dataset``, against their sure and possible links."""
    pairs = [dataset.pairs[i] for i in indices]
    return metrics.alignment_scores(
        arrays, [len(p.src) for p in pairs], [len(p.tgt) for p in pairs],
        [p.alignment or () for p in pairs], [p.possible_links for p in pairs],
    )  # fmt: skip


def _attribution_scores(
    model: Network,
    dataset: ParallelDataset,
    indices: Sequence[int],
    method: str,
    batch_size: int,
    device: torch.device,
    steps: int,
) -> MapScores:
    arrays, deltas, order = [], [], []
    for batch in _batches(dataset, indices, batch_size, device):
        maps, delta = attribution_maps(model, batch, method, steps=steps)
        arrays += _trimmed(maps, batch)
        order += batch.indices.tolist()
        if delta is not None:
            deltas.append(delta.abs())
    scores = map_aer(dataset, order, arrays)
    delta_mean = float(torch.cat(deltas).mean()) if deltas else None
    return MapScores(
        method, float(scores["aer"]), len(order),
        steps=steps if method == "integrated_gradients" else None,
        convergence_delta=delta_mean,
    )  # fmt: skip


def attention_map_scores(
    model: Network,
    dataset: ParallelDataset,
    batch_size: int,
    device: torch.device,
    progress: Callable[[str], None] = lambda _: None,
) -> list[MapScores]:
    """AER of the teacher-forced attention (heads averaged, and per head): the reported
    attention; for the Transformer every decoder layer's cross-attention and its Shift-Att."""
    if not model.attention.has_weights:
        return []
    progress("attention maps")
    layers = model.decoder_layer_count
    per_layer: list[list[np.ndarray]] = [[] for _ in range(layers or 1)]
    shifted: list[list[np.ndarray]] = [[] for _ in range(layers or 1)]
    order: list[int] = []
    for batch in _batches(dataset, range(len(dataset)), batch_size, device):
        if layers:
            weights = torch.from_numpy(
                extract_attention_weights(model, batch, reference=True, layer=ALL_LAYERS)
            )  # (B, L, h, T_t, T_s)
            stacks = [weights[:, k] for k in range(layers)]
        else:
            stacks = [torch.from_numpy(extract_attention_weights(model, batch, reference=True))]
        for k, stack in enumerate(stacks):
            per_layer[k] += _trimmed(stack, batch)
            if layers:
                shifted[k] += _trimmed(shift_att(stack), batch)
        order += batch.indices.tolist()
    found = []
    for k, arrays in enumerate(per_layer):
        scores = map_aer(dataset, order, arrays)
        found.append(MapScores(
            "attention", float(scores["aer"]), len(order), layer=k if layers else None,
            aer_per_head=[float(x) for x in scores["aer_per_head"]],  # type: ignore[union-attr]
        ))  # fmt: skip
        if layers:
            scores = map_aer(dataset, order, shifted[k])
            found.append(MapScores(
                "shift_att", float(scores["aer"]), len(order), layer=k,
                aer_per_head=[float(x) for x in scores["aer_per_head"]],  # type: ignore[union-attr]
            ))  # fmt: skip
    return found
