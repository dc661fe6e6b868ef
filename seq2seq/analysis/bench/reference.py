"""The speed baseline: the same additive-attention model and training written the way the common
PyTorch tutorials do it (:class:`TutorialSeq2Seq`, :class:`TutorialTrainer`)."""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from dataclasses import replace

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from seq2seq.analysis.bench.flops import BatchShape
from seq2seq.config.schema import TrainConfig
from seq2seq.data.batching import Batch, ParallelDataset
from seq2seq.data.vocab import Vocab
from seq2seq.evaluation.scoring import sequence_loss
from seq2seq.model import ModelSpec
from seq2seq.model.attention import masked_softmax


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
        self,
        spec: ModelSpec,
        dataset: ParallelDataset,
        train: TrainConfig,
        device: torch.device,
    ) -> None:
        self.spec = replace(spec, attention="additive")
        self.dataset = dataset
        self.batch_size = train.batch_size
        self.clip = train.clip_grad_norm or math.inf
        self.device = device
        self.model = TutorialSeq2Seq(self.spec).to(device)
        self.optimizer = torch.optim.Adam(self.model.parameters(), lr=train.lr)
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
