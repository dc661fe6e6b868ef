"""The sample sentences of a run (``data.samples``): their greedy translations and attention
heatmaps at every validation, so TensorBoard shows how the alignment forms. Drawn on rank 0
only; matplotlib is imported at the first drawing (see :mod:`.tblog`)."""

from __future__ import annotations

from collections.abc import Sequence

from seq2seq.data.batching import ParallelDataset
from seq2seq.data.corpus import Pair, tokenize_src
from seq2seq.data.detokenize import join_english
from seq2seq.data.vocab import Vocab
from seq2seq.evaluation.extract import ALL_LAYERS, extract_attention_weights
from seq2seq.model.networks import Network
from seq2seq.model.search import greedy_decode
from seq2seq.model.transformer import Transformer, encoder_self_attention
from seq2seq.training.tblog import RunLogger, translations_markdown


def sample_sources(samples: Sequence[str], char_level: bool) -> list[tuple[str, ...]]:
    """The configured sample sentences, tokenized like the corpus."""
    return [tokenize_src(s, char_level) for s in samples]


def log_samples(
    model: Network,
    sources: Sequence[tuple[str, ...]],
    src_vocab: Vocab,
    tgt_vocab: Vocab,
    logger: RunLogger,
    step: int,
    split_punct: bool = False,
) -> None:
    """Greedy translations of ``sources`` (a markdown table) and, when the model's attention
    has weights, one heatmap per sentence (``attention/sample_<k>``)."""
    if not sources:
        return
    dataset = ParallelDataset([Pair(s, ()) for s in sources], src_vocab, tgt_vocab)
    batch = dataset.collate(range(len(dataset))).to(next(model.parameters()).device)
    output = greedy_decode(model, batch.src, batch.src_lengths, batch.src_mask)
    translations = [tgt_vocab.decode(ids) for ids in output.tokens.tolist()]
    rows = [
        (" ".join(s), join_english(t, split_punct, tgt_vocab.subwords))
        for s, t in zip(sources, translations, strict=True)
    ]
    logger.text("samples", translations_markdown(rows), step)
    if not model.attention.has_weights:
        return
    # matplotlib: rank 0 only, see the module's docstring
    from seq2seq.viz.heatmap import plot_attention

    weights = extract_attention_weights(model, batch, reference=False, trim=True)
    for k, (src, hyp, array) in enumerate(zip(sources, translations, weights, strict=True)):
        figure = plot_attention(array, [*src, "<eos>"], [*hyp, "<eos>"][: array.shape[1]])
        logger.figure(f"attention/sample_{k}", figure, step)
    if isinstance(model, Transformer):
        log_layers(model, sources, translations, src_vocab, tgt_vocab, logger, step)


def log_layers(
    model: Transformer,
    sources: Sequence[tuple[str, ...]],
    outputs: Sequence[list[str]],
    src_vocab: Vocab,
    tgt_vocab: Vocab,
    logger: RunLogger,
    step: int,
) -> None:
    """A Transformer's every layer: each decoder layer's cross-attention on the sample's own
    output (``attention/sample_<k>/cross_layer_<l>``, teacher-forced: the weights greedy
    decoding had) and each encoder layer's self-attention (``…/self_layer_<l>``)."""
    from seq2seq.viz.heatmap import plot_attention

    pairs = [Pair(src, tuple(out)) for src, out in zip(sources, outputs, strict=True)]
    batch = ParallelDataset(pairs, src_vocab, tgt_vocab).collate(range(len(pairs)))
    batch = batch.to(next(model.parameters()).device)
    every = extract_attention_weights(model, batch, trim=True, layer=ALL_LAYERS)
    for k, (src, out, layers) in enumerate(zip(sources, outputs, every, strict=True)):
        for layer, array in enumerate(layers):
            figure = plot_attention(array, [*src, "<eos>"], [*out, "<eos>"])
            logger.figure(f"attention/sample_{k}/cross_layer_{layer + 1}", figure, step)
    for layer, array in enumerate(encoder_self_attention(model, batch.src, batch.src_mask)):
        for k, src in enumerate(sources):
            tokens = [*src, "<eos>"]
            figure = plot_attention(array[k, :, : len(tokens), : len(tokens)], tokens, tokens)
            logger.figure(f"attention/sample_{k}/self_layer_{layer + 1}", figure, step)
