"""Tensors for training: an encoded dataset, padded batches and a length-bucketed sampler.

Mask convention everywhere in this project: ``True`` = real token, ``False`` = padding.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, fields

import torch
from torch.utils.data import Dataset, Sampler

from seq2seq.data.corpus import Pair
from seq2seq.data.loading import Corpus
from seq2seq.data.vocab import Vocab


@dataclass
class Batch:
    """A padded batch (batch-first).

    src:         (B, T_s) source ids, words then ``<eos>``, padded with ``<pad>``
    src_lengths: (B,)     real source lengths (``<eos>`` included), on the CPU for packing
    src_mask:    (B, T_s) True = real token
    tgt_in:      (B, T_t) decoder input: ``<bos>`` then words
    tgt_out:     (B, T_t) decoder target: words then ``<eos>``
    tgt_mask:    (B, T_t) True = real token
    indices:     (B,)     positions of the pairs in their dataset
    gold:        (B, T_t, T_s) float or None: row ``j`` is target word ``j``'s gold attention,
                 uniform over its sure source links (summing to 1), or over its possible
                 links when it has no sure one (summing to their weight, 0 by default: then
                 ignored); all-zero rows for words without a guided link, for ``<eos>`` and
                 padding. Built only when asked (guided alignment, see
                 :func:`gold_distribution`).
    """

    src: torch.Tensor
    src_lengths: torch.Tensor
    src_mask: torch.Tensor
    tgt_in: torch.Tensor
    tgt_out: torch.Tensor
    tgt_mask: torch.Tensor
    indices: torch.Tensor
    gold: torch.Tensor | None = None

    def to(self, device: torch.device | str) -> Batch:
        """Move every tensor except ``src_lengths`` (packing wants it on the CPU)."""
        moved = {
            f.name: getattr(self, f.name)
            if f.name == "src_lengths" or getattr(self, f.name) is None
            else getattr(self, f.name).to(device, non_blocking=True)
            for f in fields(self)
        }
        return Batch(**moved)

    @property
    def size(self) -> int:
        return self.src.size(0)

    @property
    def num_tgt_tokens(self) -> int:
        return int(self.tgt_mask.sum())


class ParallelDataset(Dataset):
    """Pairs encoded once into id lists (``<eos>`` appended to both sides)."""

    def __init__(self, pairs: Sequence[Pair], src_vocab: Vocab, tgt_vocab: Vocab) -> None:
        self.pairs = list(pairs)
        self.src_ids = [src_vocab.encode(p.src) for p in self.pairs]
        self.tgt_ids = [tgt_vocab.encode(p.tgt) for p in self.pairs]
        self.pad_id = src_vocab.pad_id
        self.bos_id = tgt_vocab.bos_id

    def __len__(self) -> int:
        return len(self.pairs)

    def __getitem__(self, index: int) -> int:
        return index

    @property
    def src_lengths(self) -> list[int]:
        return [len(ids) for ids in self.src_ids]

    def collate(
        self, indices: Sequence[int], *, gold: bool = False, possible_weight: float = 0.0
    ) -> Batch:
        """Pad the pairs at ``indices`` into a :class:`Batch`; ``gold=True`` adds
        :attr:`Batch.gold` (the gold attention rows, see :func:`gold_distribution`)."""
        src = [self.src_ids[i] for i in indices]
        tgt = [self.tgt_ids[i] for i in indices]
        src_lengths = torch.tensor([len(s) for s in src])
        tgt_lengths = torch.tensor([len(t) for t in tgt])
        src_t = _pad(src, int(src_lengths.max()), self.pad_id)
        tgt_out = _pad(tgt, int(tgt_lengths.max()), self.pad_id)
        tgt_mask = tgt_out != self.pad_id
        tgt_in = torch.cat([torch.full_like(tgt_out[:, :1], self.bos_id), tgt_out[:, :-1]], dim=1)
        tgt_in = tgt_in.masked_fill(~tgt_mask, self.pad_id)  # the last <eos> is never an input
        return Batch(
            src=src_t,
            src_lengths=src_lengths,
            src_mask=src_t != self.pad_id,
            tgt_in=tgt_in,
            tgt_out=tgt_out,
            tgt_mask=tgt_mask,
            indices=torch.tensor(list(indices)),
            gold=gold_distribution(
                [self.pairs[i] for i in indices], tgt_out.size(1), src_t.size(1), possible_weight
            )
            if gold
            else None,
        )


def gold_distribution(
    pairs: Sequence[Pair], tgt_steps: int, src_steps: int, possible_weight: float = 0.0
) -> torch.Tensor:
    """The gold attention of each pair: (B, tgt_steps, src_steps), float32.

    Row ``j`` of pair ``b`` is uniform over the source words ``i`` of its sure links ``(i, j)``
    and sums to 1. A target word with possible links only (an article to its noun, a copula
    to its adjective) gets a row uniform over those, summing to ``possible_weight``: its
    weight in the loss (0, the default: not guided, the row is all zero). A word's possible
    links are never mixed into its sure row: they mark what is acceptable, not where the
    word comes from, and spreading mass onto them would teach the attention to be vague.
    Words without links, the ``<eos>`` step and padding get all-zero rows (nothing to guide),
    as do pairs with ``alignment=None``. Built once per batch from the links (no per-step
    work); ``tgt_steps``/``src_steps`` include ``<eos>``.
    """
    gold = torch.zeros(len(pairs), tgt_steps, src_steps)
    for row, pair in enumerate(pairs):
        for i, j in pair.alignment or ():
            gold[row, j, i] = 1.0
    gold = gold / gold.sum(-1, keepdim=True).clamp_min(1.0)
    if possible_weight <= 0:
        return gold
    possible = torch.zeros_like(gold)
    for row, pair in enumerate(pairs):
        if pair.alignment is not None:
            for i, j in pair.possible:
                possible[row, j, i] = 1.0
    possible = possible * (gold.sum(-1, keepdim=True) == 0)  # words without a sure link only
    return gold + possible_weight * possible / possible.sum(-1, keepdim=True).clamp_min(1.0)


def _pad(sequences: Sequence[Sequence[int]], length: int, pad_id: int) -> torch.Tensor:
    """(B, length) LongTensor, right-padded."""
    out = torch.full((len(sequences), length), pad_id, dtype=torch.long)
    for row, ids in enumerate(sequences):
        out[row, : len(ids)] = torch.tensor(ids)
    return out


class BucketBatchSampler(Sampler[list[int]]):
    """Batches of similar source length, in a shuffled order.

    Each epoch: shuffle all indices, cut them into pools of ``pool_factor`` batches, sort
    each pool by length, cut it into batches, then shuffle the batches. The order depends
    only on ``(seed, epoch)``, so a resumed run replays it exactly (see :meth:`set_epoch`).
    ``shuffle=False`` gives length-sorted batches in a fixed order (for evaluation).
    """

    def __init__(
        self,
        lengths: Sequence[int],
        batch_size: int,
        *,
        shuffle: bool = True,
        seed: int = 0,
        pool_factor: int = 50,
    ) -> None:
        if batch_size < 1:
            raise ValueError("batch_size must be at least 1")
        self.lengths = list(lengths)
        self.batch_size = batch_size
        self.shuffle = shuffle
        self.seed = seed
        self.pool_factor = pool_factor
        self.epoch = 0

    def set_epoch(self, epoch: int) -> None:
        self.epoch = epoch

    def batches(self) -> list[list[int]]:
        """The batches of the current epoch, in order."""
        n = len(self.lengths)
        if not self.shuffle:
            order = sorted(range(n), key=lambda i: self.lengths[i])
            return [order[k : k + self.batch_size] for k in range(0, n, self.batch_size)]
        generator = torch.Generator().manual_seed(self.seed * 100_003 + self.epoch)
        order = torch.randperm(n, generator=generator).tolist()
        pool_size = self.batch_size * self.pool_factor
        batches = []
        for start in range(0, n, pool_size):
            pool = sorted(order[start : start + pool_size], key=lambda i: self.lengths[i])
            batches += [pool[k : k + self.batch_size] for k in range(0, len(pool), self.batch_size)]
        shuffled = torch.randperm(len(batches), generator=generator).tolist()
        return [batches[i] for i in shuffled]

    def __iter__(self) -> Iterator[list[int]]:
        return iter(self.batches())

    def __len__(self) -> int:
        # Pools hold whole batches, so only the very last batch can be short, shuffled or not.
        return -(-len(self.lengths) // self.batch_size)


def padding_share(batches: Sequence[Sequence[int]], lengths: Sequence[int]) -> float:
    """Fraction of the padded (B, T_max) slots over all batches that hold padding."""
    real = sum(lengths[i] for batch in batches for i in batch)
    slots = sum(len(batch) * max(lengths[i] for i in batch) for batch in batches if batch)
    return 1.0 - real / slots if slots else 0.0


@dataclass
class RunData:
    """A corpus encoded for one process of a run: the three splits, this process' shard of
    the valid split (every ``world_size``-th pair from ``rank``: validation is sharded) and
    the training batches."""

    train: ParallelDataset
    valid: ParallelDataset
    test: ParallelDataset
    valid_shard: ParallelDataset
    sampler: BucketBatchSampler

    @classmethod
    def of(cls, corpus: Corpus, batch_size: int, seed: int, rank: int, world_size: int) -> RunData:
        """``batch_size``: the global batch; ``seed``: the batches' shuffling."""
        vocabs = corpus.src_vocab, corpus.tgt_vocab
        train, valid, test, valid_shard = (
            ParallelDataset(pairs, *vocabs)
            for pairs in (corpus.train, corpus.valid, corpus.test, corpus.valid[rank::world_size])
        )
        sampler = BucketBatchSampler(train.src_lengths, batch_size, seed=seed)
        return cls(train, valid, test, valid_shard, sampler)
