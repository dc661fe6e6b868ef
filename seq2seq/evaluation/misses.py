"""Where exact match is lost: the sentences a model does not translate exactly, and the first
word each one gets wrong (``scripts/evaluate.py`` prints them).

A model at 99% exact match still misses one sentence in a hundred; which ones, and at which
word, says more than the score. On the synthetic corpus the misses are long sentences (20
source words and more), each wrong at one word that words further on decide: a question's
auxiliary (``do`` / ``does`` / ``did`` / ``is`` / ``were``, emitted before the subject, tense
and predicate that choose it), a time expression (``last week`` for ``last year``), an article.

A miss is defined exactly as :func:`~seq2seq.evaluation.metrics.exact_match` counts one: the
output's tokens differ from the reference's, so ``len(misses) == (1 - exact_match) · N``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from seq2seq.data.corpus import Pair
from seq2seq.evaluation.metrics import bucket_indices

#: What a sentence that ends early or runs on shows in the place of a word.
END = "<eos>"


@dataclass(frozen=True)
class Miss:
    """One sentence whose output is not its reference; ``index`` is its place in the split."""

    index: int
    source: tuple[str, ...]
    reference: tuple[str, ...]
    output: tuple[str, ...]

    @property
    def first_difference(self) -> int:
        """The first token position where output and reference differ (the shorter one's
        length when one is the other's beginning)."""
        pairs = zip(self.reference, self.output, strict=False)
        differ = next((k for k, (ref, out) in enumerate(pairs) if ref != out), None)
        return min(len(self.reference), len(self.output)) if differ is None else differ

    @property
    def first_wrong(self) -> tuple[str, str]:
        """(the reference's word, the output's word) at :attr:`first_difference`; ``<eos>``
        where one of them has ended."""
        k = self.first_difference
        return _word(self.reference, k), _word(self.output, k)


def _word(tokens: Sequence[str], position: int) -> str:
    return tokens[position] if position < len(tokens) else END


@dataclass(frozen=True)
class Misses:
    """The missed sentences of one split (in its order) and every pair's source length."""

    sentences: list[Miss]
    src_lengths: list[int]  # (N,) source words of each pair of the split

    def by_length(self) -> dict[str, tuple[int, int]]:
        """Source-length bucket -> (missed, sentences), the buckets of BLEU by length."""
        missed = {m.index for m in self.sentences}
        return {
            label: (sum(k in missed for k in indices), len(indices))
            for label, indices in bucket_indices(self.src_lengths).items()
        }

    def first_wrong(self) -> Counter[tuple[str, str]]:
        """How often each (reference word, output word) is a miss's first wrong word."""
        return Counter(m.first_wrong for m in self.sentences)


def find_misses(hypotheses: Sequence[Sequence[str]], pairs: Sequence[Pair]) -> Misses:
    """The pairs whose hypothesis (output tokens, in the split's order) is not the reference."""
    if len(hypotheses) != len(pairs):
        raise ValueError(f"got {len(hypotheses)} hypotheses for {len(pairs)} sentence pairs")
    sentences = [
        Miss(index, tuple(pair.src), tuple(pair.tgt), tuple(output))
        for index, (output, pair) in enumerate(zip(hypotheses, pairs, strict=True))
        if list(output) != list(pair.tgt)
    ]
    return Misses(sentences, [len(pair.src) for pair in pairs])


def format_misses(misses: Misses, show: int = 0) -> list[str]:
    """Lines for ``scripts/evaluate.py``: how many sentences were missed per source-length
    bucket, the most frequent first wrong words, then ``show`` of the misses with the first
    wrong word in brackets. Nothing when every sentence is exact."""
    sentences = misses.sentences
    if not sentences:
        return []
    per_bucket = ", ".join(f"{b} {n}/{of}" for b, (n, of) in misses.by_length().items())
    common = ", ".join(f"{ref}→{out} ×{n}" for (ref, out), n in misses.first_wrong().most_common(5))
    lines = [
        f"  Missed (output not exactly the reference): {len(sentences)} of "
        f"{len(misses.src_lengths)}",
        f"    by source length: {per_bucket}",
        f"    first wrong word (reference→output): {common}",
    ]
    for miss in sentences[:show]:
        k = miss.first_difference
        lines.append(f"    #{miss.index} ({len(miss.source)} source words) {' '.join(miss.source)}")
        lines.append(f"      reference  {_marked(miss.reference, k)}")
        lines.append(f"      output     {_marked(miss.output, k)}")
    if 0 < show < len(sentences):
        lines.append(f"    ... {len(sentences) - show} more (--misses N shows N)")
    return lines


def _marked(tokens: Sequence[str], position: int) -> str:
    """The sentence with the token at ``position`` (or the end, ``<eos>``) in brackets."""
    words = [*tokens, END] if position == len(tokens) else list(tokens)
    words[position] = f"[{words[position]}]"
    return " ".join(words)
