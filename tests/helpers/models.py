"""The one model factory of the tests: small random models and batches of known shape."""

from __future__ import annotations

from collections.abc import Sequence

import torch

from seq2seq.config.schema import AttentionConfig, ModelConfig
from seq2seq.data.batching import ParallelDataset
from seq2seq.data.corpus import Pair
from seq2seq.data.vocab import Vocab
from seq2seq.model import ModelSpec, Seq2Seq
from seq2seq.training.build import model_spec

#: The spec's fields that are options of the config's ``attention`` section.
ATTENTION_OPTIONS = {
    "attention": "type",
    "num_heads": "num_heads",
    "attention_hidden_size": "hidden_size",
}


def spec_of(src_vocab_size: int = 20, tgt_vocab_size: int = 25, **changes: object) -> ModelSpec:
    """The spec a run makes from the config's defaults (:func:`seq2seq.training.build.model_spec`)
    with ``changes``: ``model.<name>`` options by their names, ``attention`` (the type),
    ``num_heads``, ``attention_hidden_size`` and ``tanh`` (a resolved form)."""
    tanh = str(changes.pop("tanh", "tanh"))
    attention = {
        ATTENTION_OPTIONS[k]: changes.pop(k) for k in list(changes) if k in ATTENTION_OPTIONS
    }
    model = ModelConfig(**changes)  # type: ignore[arg-type]
    return model_spec(model, AttentionConfig(**attention), src_vocab_size, tgt_vocab_size, tanh)  # type: ignore[arg-type]


def tiny_spec(
    attention: str = "additive",
    *,
    src_vocab: int = 20,
    tgt_vocab: int = 25,
    embed_size: int = 8,
    hidden_size: int = 16,
    dropout: float = 0.0,
    decoder: str = "bahdanau",
    bidirectional: bool = True,
    num_heads: int | None = None,
    tanh: str = "tanh",
) -> ModelSpec:
    """A small :class:`ModelSpec`; multi-head attention gets 2 heads unless ``num_heads``."""
    heads = num_heads if num_heads is not None else (2 if attention == "multihead" else 1)
    return spec_of(
        src_vocab, tgt_vocab, attention=attention, embed_size=embed_size, hidden_size=hidden_size,
        dropout=dropout, num_heads=heads, decoder=decoder, bidirectional=bidirectional, tanh=tanh,
    )  # fmt: skip


def tiny_model(
    attention: str = "additive", *, seed: int = 0, recurrence: str = "fused", **spec: object
) -> Seq2Seq:
    """A random :class:`Seq2Seq` (in eval mode) from :func:`tiny_spec`, seeded by ``seed``."""
    torch.manual_seed(seed)
    return Seq2Seq(tiny_spec(attention, **spec), recurrence=recurrence).eval()  # type: ignore[arg-type]


def same_model(model: Seq2Seq, recurrence: str) -> Seq2Seq:
    """``model``'s weights in a model that runs teacher forcing through ``recurrence``."""
    other = Seq2Seq(model.spec, recurrence=recurrence).train(model.training)
    other.load_state_dict(model.state_dict())
    return other


def toy_batch(
    src_vocab: int = 20, tgt_vocab: int = 25, seed: int = 1
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """Five source sentences of lengths 7, 5, 3, 7, 1 (padded) and targets of 6 tokens:
    src (5, 7), src_lengths (5,), src_mask (5, 7), tgt_in (5, 6)."""
    generator = torch.Generator().manual_seed(seed)
    lengths = torch.tensor([7, 5, 3, 7, 1])
    mask = torch.arange(7)[None] < lengths[:, None]
    src = torch.randint(4, src_vocab, (5, 7), generator=generator).masked_fill(~mask, Vocab.pad_id)
    tgt_in = torch.randint(4, tgt_vocab, (5, 6), generator=generator)
    return src, lengths, mask, tgt_in


def training_pass(
    model: torch.nn.Module, device: torch.device | str = "cpu", seed: int = 5
) -> tuple[torch.Tensor, torch.Tensor | None, dict[str, torch.Tensor]]:
    """One training forward and backward of ``model`` (a network or its DDP wrapper, on
    ``device``) on :func:`toy_batch`: its logits (5, 6, 25), weights (5, heads, 6, 7) or None,
    and every parameter's gradient, on the CPU. The loss reaches the weights directly too, so
    their gradient path is used."""
    model.zero_grad(set_to_none=True)
    torch.manual_seed(seed)  # the same dropout masks on every path
    logits, weights = model(*(t.to(device) for t in toy_batch()), keep_weights=True)
    target = (torch.arange(30) % 25).to(device)
    loss = torch.nn.functional.cross_entropy(logits.flatten(0, 1), target)
    if weights is not None:
        loss = loss + weights.square().mean()
    loss.backward()
    grads = {name: p.grad.cpu() for name, p in model.named_parameters() if p.grad is not None}
    return logits.detach().cpu(), None if weights is None else weights.detach().cpu(), grads


#: (attention, bidirectional, tanh form) on which the fused recurrence is held to the textbook:
#: dot projects the query only when the sizes differ; the fused additive recurrence computes
#: tanh in either form (seq2seq.model.fused.tanh)
RECURRENCE_VARIANTS = [
    ("additive", True, "tanh"), ("additive", True, "sigmoid"), ("dot", True, "tanh"),
    ("dot", False, "tanh"), ("multihead", True, "tanh"), ("none", True, "tanh"),
]  # fmt: skip


def model_for(
    pairs: Sequence[Pair], attention: str = "additive", **options: object
) -> tuple[Seq2Seq, ParallelDataset]:
    """A :func:`tiny_model` sized to ``pairs``' vocabularies, and ``pairs`` as a dataset."""
    src_vocab = Vocab.build(p.src for p in pairs)
    tgt_vocab = Vocab.build(p.tgt for p in pairs)
    model = tiny_model(attention, src_vocab=len(src_vocab), tgt_vocab=len(tgt_vocab), **options)  # type: ignore[arg-type]
    return model, ParallelDataset(pairs, src_vocab, tgt_vocab)
