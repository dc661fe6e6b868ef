"""Encoder–decoder and decoding: padding invariance, parity of fast paths, overfitting."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
import torch
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from seq2seq import extract_attention_weights
from seq2seq.data.batching import ParallelDataset
from seq2seq.data.corpus import Pair
from seq2seq.data.vocab import Vocab
from seq2seq.errors import UserError
from seq2seq.evaluation.scoring import sequence_loss
from seq2seq.model import Seq2Seq
from seq2seq.model.decoder import gru_cell, predicted_tokens
from seq2seq.model.encoder import Encoder, rename_one_gru_weights
from seq2seq.model.search import beam_search, greedy_decode
from tests.helpers.models import model_for, tiny_spec, toy_batch

ATTENTIONS = ["none", "additive", "dot", "multihead"]
DECODERS = ["luong", "bahdanau"]
# every attention in both arrangements ("none" has one: the fixed-context baseline)
VARIANTS = [("none", "luong")] + [(a, d) for a in ATTENTIONS[1:] for d in DECODERS]
SRC_WORDS = ["我", "你", "他", "爱", "吃", "看", "苹果", "中国", "北京", "书", "猫", "了"]
TGT_WORDS = [
    "I",
    "you",
    "he",
    "love",
    "eat",
    "read",
    "apples",
    "China",
    "Beijing",
    "books",
    "cats",
    "ate",
]


def toy_pairs() -> list[Pair]:
    rng = np.random.default_rng(0)
    pairs = []
    for length in (2, 9, 5, 3, 7, 4):
        idx = rng.integers(0, len(SRC_WORDS), length)
        pairs.append(Pair(tuple(SRC_WORDS[i] for i in idx), tuple(TGT_WORDS[i] for i in idx[::-1])))
    return pairs


def build(
    attention: str, seed: int = 0, dropout: float = 0.0, decoder: str = "luong"
) -> tuple[Seq2Seq, ParallelDataset]:
    return model_for(
        toy_pairs(), attention, seed=seed, dropout=dropout, decoder=decoder,
        embed_size=16, hidden_size=16, num_heads=4 if attention == "multihead" else 1,
    )  # fmt: skip


def test_gru_cell_equals_torch_gru_cell():
    torch.manual_seed(0)
    cell = torch.nn.GRUCell(5, 4)
    x, h = torch.randn(3, 5), torch.randn(3, 4)
    gates = x @ cell.weight_ih.t() + cell.bias_ih
    torch.testing.assert_close(gru_cell(gates, h, cell.weight_hh, cell.bias_hh), cell(x, h))


@pytest.mark.parametrize("decoder", DECODERS)
def test_decoder_arrangements(decoder):
    """Luong's GRU reads words only; Bahdanau's reads word and context; none is always the
    fixed-context baseline, whose GRU reads word and context."""
    for attention, expected in (("additive", decoder), ("none", "bahdanau")):
        model, _ = build(attention, decoder=decoder)
        assert type(model.decoder).__name__.lower() == f"{expected}decoder"
        context = model.attention.context_size if expected == "bahdanau" else 0
        assert model.decoder.rnn.input_size == model.spec.embed_size + context


@pytest.mark.parametrize(("attention", "decoder"), VARIANTS)
def test_scheduled_sampling_without_reference_equals_greedy_decoding(attention, decoder):
    model, dataset = build(attention, decoder=decoder, seed=1)
    batch = dataset.collate(range(len(dataset)))
    logits, _ = model(
        batch.src, batch.src_lengths, batch.src_mask, batch.tgt_in, teacher_forcing=0.0
    )
    greedy = greedy_decode(model, batch.src, batch.src_lengths, batch.src_mask)
    width = min(logits.size(1), greedy.tokens.size(1))
    fed_back = predicted_tokens(logits)[:, :width]
    for row, length in enumerate(greedy.lengths.clamp(max=width).tolist()):
        assert torch.equal(fed_back[row, :length], greedy.tokens[row, :length])


@pytest.mark.parametrize(("attention", "decoder"), VARIANTS)
def test_teacher_forced_forward_equals_stepwise_decoding(attention, decoder):
    model, dataset = build(attention, decoder=decoder)
    batch = dataset.collate(range(len(dataset)))
    logits, weights = model(
        batch.src, batch.src_lengths, batch.src_mask, batch.tgt_in, keep_weights=True
    )
    memory, state = model.encode(batch.src, batch.src_lengths, batch.src_mask)
    for t in range(batch.tgt_in.size(1)):
        step_logits, state, step_weights = model.decoder.step(batch.tgt_in[:, t], state, memory)
        torch.testing.assert_close(step_logits, logits[:, t], atol=1e-5, rtol=1e-5)
        if weights is not None:
            torch.testing.assert_close(step_weights, weights[:, :, t])


@pytest.mark.parametrize(("attention", "decoder"), VARIANTS)
def test_sentence_alone_equals_sentence_in_padded_batch(attention, decoder):
    model, dataset = build(attention, decoder=decoder)
    batch = dataset.collate(range(len(dataset)))
    shortest = int(batch.src_lengths.argmin())
    alone = dataset.collate([shortest])
    assert alone.src.size(1) < batch.src.size(1)  # the batch really pads this sentence

    def run(b, row):
        logits, weights = model(b.src, b.src_lengths, b.src_mask, b.tgt_in, keep_weights=True)
        t_t, t_s = int(b.tgt_mask[row].sum()), int(b.src_lengths[row])
        cut = None if weights is None else weights[row, :, :t_t, :t_s]
        return logits[row, :t_t], cut

    logits_batch, weights_batch = run(batch, shortest)
    logits_alone, weights_alone = run(alone, 0)
    torch.testing.assert_close(logits_batch, logits_alone, atol=1e-5, rtol=1e-5)
    if weights_batch is not None:
        torch.testing.assert_close(weights_batch, weights_alone, atol=1e-6, rtol=1e-5)
        padded = model(
            batch.src, batch.src_lengths, batch.src_mask, batch.tgt_in, keep_weights=True
        )[1]
        assert torch.all(padded[shortest, :, :, int(batch.src_lengths[shortest]) :] == 0)

    for decode in (greedy_decode, lambda *a: beam_search(*a, beam_size=3)):
        in_batch = decode(model, batch.src, batch.src_lengths, batch.src_mask)
        by_itself = decode(model, alone.src, alone.src_lengths, alone.src_mask)
        n = int(by_itself.lengths[0])
        assert int(in_batch.lengths[shortest]) == n
        assert torch.equal(in_batch.tokens[shortest, :n], by_itself.tokens[0, :n])
        if in_batch.weights is not None:
            s = int(alone.src_lengths[0])
            torch.testing.assert_close(
                in_batch.weights[shortest, :, :n, :s],
                by_itself.weights[0, :, :n, :s],
                atol=1e-5,
                rtol=1e-4,
            )


@pytest.mark.parametrize(("attention", "decoder"), VARIANTS)
def test_every_variant_overfits_a_small_batch(attention, decoder):
    model, dataset = build(attention, decoder=decoder)
    batch = dataset.collate(range(len(dataset)))
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    model.train()
    for _ in range(100):
        logits, _ = model(batch.src, batch.src_lengths, batch.src_mask, batch.tgt_in)
        loss = sequence_loss(logits, batch.tgt_out)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    assert loss.item() < 0.05
    output = greedy_decode(model, batch.src, batch.src_lengths, batch.src_mask)
    width = batch.tgt_out.size(1)
    assert torch.equal(output.tokens[:, :width].masked_fill(~batch.tgt_mask, 0), batch.tgt_out)


def test_greedy_and_beam_stop_at_eos_and_beam_one_equals_greedy():
    model, dataset = build("additive")
    batch = dataset.collate(range(len(dataset)))
    greedy = greedy_decode(model, batch.src, batch.src_lengths, batch.src_mask)
    beam1 = beam_search(model, batch.src, batch.src_lengths, batch.src_mask, beam_size=1, alpha=0.0)
    assert torch.equal(greedy.tokens, beam1.tokens)
    beam = beam_search(model, batch.src, batch.src_lengths, batch.src_mask, beam_size=4)
    for hyp in (greedy, beam):
        for row, length in zip(hyp.tokens, hyp.lengths.tolist(), strict=True):
            assert row[length - 1] == Vocab.eos_id
            assert torch.all(row[length:] == Vocab.pad_id)
            assert Vocab.eos_id not in row[: length - 1].tolist()


@torch.no_grad()
def exhaustive_best(model, src, src_lengths, src_mask, limit: int) -> tuple[list[int], float]:
    """The most probable output of at most ``limit`` tokens (ending in <eos>), by brute force."""
    memory, state = model.encode(src, src_lengths, src_mask)
    best: tuple[list[int], float] = ([], float("-inf"))
    frontier = [([Vocab.bos_id], state, 0.0)]
    for step in range(limit):
        next_frontier = []
        for prefix, h, score in frontier:
            logits, h2, _ = model.decoder.step(torch.tensor(prefix[-1:]), h, memory)
            log_probs = logits.log_softmax(-1)[0]
            for token in range(len(log_probs)):
                if token in (Vocab.pad_id, Vocab.bos_id):
                    continue
                total = score + float(log_probs[token])
                if token == Vocab.eos_id:
                    if total > best[1]:
                        best = ([*prefix[1:], token], total)
                elif step < limit - 1:
                    next_frontier.append(([*prefix, token], h2, total))
        frontier = next_frontier
    return best


@pytest.mark.parametrize("decoder", DECODERS)
def test_beam_search_with_a_wide_beam_finds_the_exact_best_output(decoder):
    model, dataset = build("dot", seed=3, decoder=decoder)
    batch = dataset.collate([0, 3])
    vocab_size = model.spec.tgt_vocab_size
    limits = torch.tensor([3, 3])
    beam = beam_search(
        model, batch.src, batch.src_lengths, batch.src_mask,
        beam_size=vocab_size * vocab_size, alpha=0.0, max_lengths=limits,
    )  # fmt: skip
    for row in range(2):
        tokens, score = exhaustive_best(
            model, batch.src[row : row + 1], batch.src_lengths[row : row + 1],
            batch.src_mask[row : row + 1], limit=3,
        )  # fmt: skip
        n = int(beam.lengths[row])
        assert beam.tokens[row, :n].tolist() == tokens
        assert float(beam.scores[row]) == pytest.approx(score, abs=1e-4)


def test_extract_attention_weights_shapes_and_trimming():
    model, dataset = build("multihead")
    batch = dataset.collate(range(len(dataset)))
    full = extract_attention_weights(model, batch)
    assert isinstance(full, np.ndarray)
    assert full.shape == (len(dataset), 4, batch.tgt_in.size(1), batch.src.size(1))
    trimmed = extract_attention_weights(model, batch, trim=True)
    for b, array in enumerate(trimmed):
        assert array.shape == (4, int(batch.tgt_mask[b].sum()), int(batch.src_lengths[b]))
        np.testing.assert_allclose(array.sum(-1), 1.0, atol=1e-5)
    own = extract_attention_weights(model, batch, reference=False, trim=True)
    assert len(own) == len(dataset) and all(a.shape[0] == 4 for a in own)
    assert model.training is False


def test_extract_attention_weights_refuses_none():
    model, dataset = build("none")
    with pytest.raises(UserError, match="no attention"):
        extract_attention_weights(model, dataset.collate([0]))


def test_summary_lists_parameter_counts():
    model, _ = build("additive")
    summary = model.summary()
    counts = model.parameter_counts()
    assert "attention" in summary and f"{counts['total']:,}" in summary
    assert counts["total"] == sum(v for k, v in counts.items() if k != "total")


@pytest.mark.parametrize(("layers", "bidirectional"), [(1, True), (2, True), (2, False)])
def test_the_encoder_equals_a_gru_over_packed_sequences(layers: int, bidirectional: bool):
    """Each direction over the padded batch (the right-to-left one reversed within each
    length) gives the outputs, final states and gradients of one ``nn.GRU`` of the same
    weights over packed sequences."""
    spec = tiny_spec(
        "additive", embed_size=6, hidden_size=5, dropout=0.0, bidirectional=bidirectional
    )
    encoder = Encoder(replace(spec, encoder_layers=layers)).eval()
    reference = torch.nn.GRU(6, 5, num_layers=layers, bidirectional=bidirectional, batch_first=True)
    as_encoder = {  # the one GRU's weight names -> the encoder's
        rename_one_gru_weights({f"encoder.rnn.{name}": None}).popitem()[0]: name
        for name, _ in reference.named_parameters()
    }
    weights = dict(encoder.named_parameters(prefix="encoder"))
    reference.load_state_dict({name: weights[ours] for ours, name in as_encoder.items()})
    src, lengths, _, _ = toy_batch()

    def packed_reference() -> tuple[torch.Tensor, torch.Tensor]:
        embedded = encoder.embedding(src)
        packed = pack_padded_sequence(embedded, lengths, batch_first=True, enforce_sorted=False)
        outputs, final = reference(packed)
        outputs, _ = pad_packed_sequence(outputs, batch_first=True, total_length=src.size(1))
        return outputs, final[-encoder.directions :].transpose(0, 1).flatten(1)

    def gradients() -> dict[str, torch.Tensor]:
        """Each encoder weight's gradient, wherever the run computed it."""
        named = dict(encoder.named_parameters(prefix="encoder"))
        named.update({ours: getattr(reference, name) for ours, name in as_encoder.items()})
        named.update(
            {n: p for n, p in encoder.named_parameters(prefix="encoder") if p.grad is not None}
        )
        return {n: p.grad.clone() for n, p in named.items() if p.grad is not None}

    results = []
    for run in (packed_reference, lambda: encoder(src, lengths)):
        encoder.zero_grad()
        reference.zero_grad()
        outputs, final = run()
        (outputs.square().sum() + final.sum()).backward()
        results.append((outputs, final, gradients()))
    (ref_out, ref_final, ref_grads), (out, final, grads) = results
    torch.testing.assert_close(out, ref_out, atol=1e-6, rtol=1e-5)
    torch.testing.assert_close(final, ref_final, atol=1e-6, rtol=1e-5)
    assert (out[1, 5:] == 0).all() and (out[4, 1:] == 0).all()  # exact zeros past the end
    assert set(grads) == set(ref_grads) == set(weights)
    for name, grad in grads.items():
        torch.testing.assert_close(grad, ref_grads[name], atol=1e-5, rtol=1e-4, msg=name)
