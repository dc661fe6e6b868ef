"""The sample sentences of a run (``data.samples``): their greedy translations and attention
heatmaps at every validation, so TensorBoard shows how the alignment forms."""

from __future__ import annotations

from collections.abc import Sequence

from seq2seq.data.batching import ParallelDataset
from seq2seq.data.corpus import Pair, tokenize_src
from seq2seq.data.detokenize import join_english
from seq2seq.data.vocab import Vocab
from seq2seq.evaluation.extract import extract_attention_weights
from seq2seq.model import Seq2Seq
from seq2seq.model.search import greedy_decode
from seq2seq.training.tblog import RunLogger, translations_markdown
from seq2seq.viz import plot_attention


def sample_sources(samples: Sequence[str], char_level: bool) -> list[tuple[str, ...]]:
    """The configured sample sentences, tokenized like the corpus."""
    return [tokenize_src(s, char_level) for s in samples]


def log_samples(
    model: Seq2Seq,
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
    weights = extract_attention_weights(model, batch, reference=False, trim=True)
    for k, (src, hyp, array) in enumerate(zip(sources, translations, weights, strict=True)):
        figure = plot_attention(array, [*src, "<eos>"], [*hyp, "<eos>"][: array.shape[1]])
        logger.figure(f"attention/sample_{k}", figure, step)
