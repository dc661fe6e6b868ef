"""Translation and attention metrics.

Conventions shared with the rest of the package:

* Sentences are already tokenized: a sentence is a sequence of token strings **without**
  ``<eos>``. For BLEU/chrF the tokens are joined with single spaces and sacrebleu is told
  not to tokenize again (``tokenize="none"``) — the synthetic corpus' evaluation, whose
  references are token sequences by construction. Real corpora are scored the way MT
  papers report it instead (:func:`text_bleu`, :func:`text_chrf`): detokenized strings
  against the original references, sacrebleu's default tokenizer (13a).
* Attention matrices are NumPy arrays trimmed to real positions: ``(T_t, T_s)`` or
  ``(heads, T_t, T_s)`` with ``T_s = src_len + 1`` (last column: the source ``<eos>``) and
  ``T_t = tgt_len + 1`` (last row: the step that emits ``<eos>``).
* Alignments are sets of ``(src_index, tgt_index)`` links, 0-based over words only.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TypeVar

import numpy as np
from sacrebleu.metrics import BLEU, CHRF

from seq2seq.data.lengths import DEFAULT_LENGTH_EDGES, length_bucket, length_bucket_labels

Sentence = Sequence[str]
Link = tuple[int, int]
T = TypeVar("T")


@dataclass(frozen=True)
class BleuResult:
    """A corpus-level score from sacrebleu.

    ``score`` is on sacrebleu's 0–100 scale; ``signature`` is sacrebleu's reproducibility
    string (e.g. ``nrefs:1|case:mixed|eff:no|tok:none|smooth:exp|version:2.6.0``);
    ``n_sentences`` is the number of scored sentence pairs.
    """

    score: float
    signature: str
    n_sentences: int

    def __float__(self) -> float:
        return self.score


# --------------------------------------------------------------------------- corpus scores


def _check_parallel(hyps: Sequence[object], refs: Sequence[object]) -> None:
    if len(hyps) != len(refs):
        raise ValueError(
            f"got {len(hyps)} hypotheses but {len(refs)} references; they must be parallel"
        )


def _join(sentences: Sequence[Sentence]) -> list[str]:
    return [" ".join(tokens) for tokens in sentences]


def _sacrebleu_score(metric: BLEU | CHRF, hyps: Sequence[str], refs: Sequence[str]) -> BleuResult:
    _check_parallel(hyps, refs)
    if not hyps:
        # sacrebleu cannot score an empty corpus, and its signature needs one evaluation
        # (to know the number of references): take it from a throwaway one-pair corpus.
        metric.corpus_score(["x"], [["x"]])
        return BleuResult(score=0.0, signature=str(metric.get_signature()), n_sentences=0)
    result = metric.corpus_score(list(hyps), [list(refs)])
    return BleuResult(
        score=float(result.score), signature=str(metric.get_signature()), n_sentences=len(hyps)
    )


def corpus_bleu(hypotheses: Sequence[Sentence], references: Sequence[Sentence]) -> BleuResult:
    """Corpus BLEU (sacrebleu defaults, one reference, ``tokenize="none"``).

    The signature records ``tok:none``. An empty corpus scores 0.0. Scoring tokenized text
    is deliberate (both sides share the corpus' tokenization), so ``force=True`` silences
    sacrebleu's "forgot to detokenize" warning, which would repeat at every validation; it
    does not change the score or the signature.
    """
    metric = BLEU(tokenize="none", force=True)
    return _sacrebleu_score(metric, _join(hypotheses), _join(references))


def corpus_chrf(hypotheses: Sequence[Sentence], references: Sequence[Sentence]) -> BleuResult:
    """Corpus chrF (sacrebleu defaults: character 6-grams, beta 2, whitespace ignored).

    chrF has no tokenizer, so the space-joined tokens are scored as they are (spaces are
    not part of the character n-grams). An empty corpus scores 0.0.
    """
    return _sacrebleu_score(CHRF(), _join(hypotheses), _join(references))


def text_bleu(
    hypotheses: Sequence[str], references: Sequence[str], *, lowercase: bool = False
) -> BleuResult:
    """Corpus BLEU as MT papers report it: detokenized hypotheses against the original
    reference sentences, sacrebleu's default tokenizer (13a), one reference.

    ``lowercase=True`` (a model trained on lowercased English) folds both sides and the
    signature says ``case:lc``. An empty corpus scores 0.0. The hypotheses are written in
    the corpus' own form (:func:`seq2seq.data.detokenize.join_english` undoes only what
    reading it did), so a corpus whose English is written tokenized (``I love China .``) is
    scored as written on both sides: ``force=True`` silences sacrebleu's "forgot to
    detokenize" warning, which would repeat at every validation; it does not change the
    score or the signature.
    """
    return _sacrebleu_score(BLEU(lowercase=lowercase, force=True), hypotheses, references)


def text_chrf(
    hypotheses: Sequence[str], references: Sequence[str], *, lowercase: bool = False
) -> BleuResult:
    """Corpus chrF (sacrebleu defaults) of detokenized text against the original references;
    ``lowercase`` as in :func:`text_bleu`."""
    return _sacrebleu_score(CHRF(lowercase=lowercase), hypotheses, references)


def exact_match(hypotheses: Sequence[Sentence], references: Sequence[Sentence]) -> float:
    """Fraction (0–1) of sentences whose token sequence equals the reference exactly.

    An empty corpus gives 0.0.
    """
    _check_parallel(hypotheses, references)
    if not hypotheses:
        return 0.0
    hits = sum(list(h) == list(r) for h, r in zip(hypotheses, references, strict=True))
    return hits / len(hypotheses)


def token_accuracy(hypotheses: Sequence[Sentence], references: Sequence[Sentence]) -> float:
    """Position-wise token accuracy (0–1) over the corpus.

    Token ``k`` of a hypothesis is correct when it equals token ``k`` of its reference.
    Each pair contributes ``max(len(hyp), len(ref))`` positions to the denominator, i.e.
    the number of reference tokens, plus any hypothesis tokens running past the end of the
    reference. So a hypothesis that stops early misses the reference tokens it never
    produced, and one that runs on is charged for every extra token: neither truncation
    nor over-generation can raise the score. A one-token insertion shifts every later
    position and costs all of them (this is a strict, order-sensitive measure; use BLEU or
    chrF for a forgiving one).

    An empty corpus gives 0.0; a corpus where every hypothesis and reference is empty
    gives 1.0.
    """
    _check_parallel(hypotheses, references)
    if not hypotheses:
        return 0.0
    correct = 0
    total = 0
    for hyp, ref in zip(hypotheses, references, strict=True):
        correct += sum(h == r for h, r in zip(hyp, ref, strict=False))
        total += max(len(hyp), len(ref))
    return correct / total if total else 1.0


# --------------------------------------------------------------------------- length buckets


def bucket_indices(
    src_lengths: Sequence[int], edges: Sequence[int] = DEFAULT_LENGTH_EDGES
) -> dict[str, list[int]]:
    """Sentence indices per length bucket: non-empty buckets only, shortest bucket first.

    Every index ``0..len(src_lengths)-1`` appears in exactly one bucket.
    """
    by_label: dict[str, list[int]] = {}
    for index, n in enumerate(src_lengths):
        by_label.setdefault(length_bucket(int(n), edges), []).append(index)
    return {label: by_label[label] for label in length_bucket_labels(edges) if label in by_label}


def bleu_by_length(
    hypotheses: Sequence[T],
    references: Sequence[T],
    src_lengths: Sequence[int],
    edges: Sequence[int] = DEFAULT_LENGTH_EDGES,
    score: Callable[[Sequence[T], Sequence[T]], BleuResult] = corpus_bleu,
) -> dict[str, float]:
    """Corpus BLEU (0–100) of each source-length bucket, e.g. ``{"1-10": 31.2, "41+": 4.0}``.

    ``score`` is the corpus BLEU to use: :func:`corpus_bleu` on token sequences (default),
    or e.g. :func:`text_bleu` on detokenized strings.
    ``src_lengths[k]`` is the number of source words of sentence ``k`` (without ``<eos>``).
    Only non-empty buckets appear, in increasing length order; see :func:`length_bucket`
    and :func:`bucket_indices` (for the per-bucket sentence counts).
    """
    _check_parallel(hypotheses, references)
    if len(src_lengths) != len(hypotheses):
        raise ValueError(
            f"got {len(src_lengths)} source lengths for {len(hypotheses)} sentence pairs"
        )
    scores: dict[str, float] = {}
    for label, indices in bucket_indices(src_lengths, edges).items():
        hyps = [hypotheses[k] for k in indices]
        refs = [references[k] for k in indices]
        scores[label] = score(hyps, refs).score
    return scores


# --------------------------------------------------------------------------- attention


def hard_alignment(weights: np.ndarray, src_len: int, tgt_len: int) -> set[Link]:
    """Turn one attention matrix into hard ``(src_index, tgt_index)`` links.

    ``weights`` has shape ``(T_t, T_s)`` with ``T_s == src_len + 1`` (last column: source
    ``<eos>``) and ``T_t >= tgt_len`` (normally ``tgt_len + 1``). For each target word
    ``j < tgt_len`` the argmax is taken over all ``T_s`` columns; the link ``(i, j)`` is kept
    only when ``i < src_len``: attending mostly to the source ``<eos>`` means "unaligned".
    Rows ``>= tgt_len`` (the ``<eos>`` step) are ignored. Ties go to the lowest index.
    """
    weights = np.asarray(weights)
    if weights.ndim != 2:
        raise ValueError(f"expected attention of shape (T_t, T_s), got shape {weights.shape}")
    t_t, t_s = weights.shape
    if t_s != src_len + 1:
        raise ValueError(
            f"attention has {t_s} source columns but src_len={src_len} needs "
            f"{src_len + 1} (the words plus <eos>)"
        )
    if t_t < tgt_len:
        raise ValueError(f"attention has {t_t} target rows, fewer than tgt_len={tgt_len}")
    best = np.argmax(weights[:tgt_len], axis=1)
    return {(int(i), j) for j, i in enumerate(best) if i < src_len}


def alignment_error_rate(
    predicted: Sequence[Iterable[Link]],
    sure: Sequence[Iterable[Link]],
    possible: Sequence[Iterable[Link]] | None = None,
) -> float:
    """Corpus-level alignment error rate (Och & Ney 2003) in 0–1.

    ``AER = 1 - (|A∩S| + |A∩P|) / (|A| + |S|)`` with predicted links ``A``, sure gold links
    ``S`` and possible gold links ``P``. ``possible=None`` uses ``P = S`` (then
    ``AER = 1 - 2|A∩S| / (|A| + |S|)``); otherwise ``P`` is taken as ``possible ∪ sure``, so
    ``P ⊇ S`` holds even if ``possible`` lists only the possible-only links. A predicted
    link in ``P`` costs nothing; a sure link missed costs recall. The counts are summed over
    all sentences before dividing (not a mean of sentence AERs). If there are no predicted
    and no sure links at all, AER is 0.0.
    """
    _check_parallel(predicted, sure)
    if possible is not None:
        _check_parallel(predicted, possible)
    n_sure = n_possible = n_pred = n_gold = 0
    for k, (pred_links, sure_links) in enumerate(zip(predicted, sure, strict=True)):
        if sure_links is None:
            raise ValueError("a gold alignment is None; drop sentences without gold links")
        a = {(int(i), int(j)) for i, j in pred_links}
        s = {(int(i), int(j)) for i, j in sure_links}
        p = s if possible is None else s | {(int(i), int(j)) for i, j in possible[k]}
        n_sure += len(a & s)
        n_possible += len(a & p)
        n_pred += len(a)
        n_gold += len(s)
    if n_pred + n_gold == 0:
        return 0.0
    return 1.0 - (n_sure + n_possible) / (n_pred + n_gold)


def attention_entropy(weights: Sequence[np.ndarray] | np.ndarray) -> float:
    """Mean entropy (nats) of the attention distributions of all target rows.

    ``weights`` is a list of ``(T_t, T_s)`` arrays (one per sentence) or a single such
    array. Each row contributes ``-sum(w * log w)`` over its non-zero entries; the result is
    the mean over every row of every sentence (rows pooled, so long sentences weigh more).
    0 means each step attends to one position; ``log(T_s)`` means uniform attention.
    An empty input gives 0.0.
    """
    arrays = [weights] if isinstance(weights, np.ndarray) and weights.ndim == 2 else weights
    total = 0.0
    rows = 0
    for w in arrays:
        w = np.asarray(w, dtype=np.float64)
        if w.ndim != 2:
            raise ValueError(f"expected attention of shape (T_t, T_s), got shape {w.shape}")
        positive = np.where(w > 0, w, 1.0)  # log(1) = 0, so zeros contribute nothing
        total += float(-(w * np.log(positive)).sum())
        rows += w.shape[0]
    return total / rows if rows else 0.0


def _as_heads(weights: np.ndarray) -> np.ndarray:
    weights = np.asarray(weights, dtype=np.float64)
    if weights.ndim == 2:
        return weights[None]
    if weights.ndim != 3:
        raise ValueError(
            f"expected attention of shape (heads, T_t, T_s) or (T_t, T_s), got {weights.shape}"
        )
    return weights


def alignment_scores(
    weights_list: Sequence[np.ndarray],
    src_lens: Sequence[int],
    tgt_lens: Sequence[int],
    gold: Sequence[Iterable[Link]],
    possible: Sequence[Iterable[Link]] | None = None,
    head: int | None = None,
) -> dict[str, float | int | list[float]]:
    """AER and entropy of (multi-head) attention against gold alignments.

    ``weights_list[k]`` has shape ``(heads, T_t, T_s)`` (a 2-D ``(T_t, T_s)`` array counts as
    one head), with the same number of heads for every sentence; ``src_lens[k]`` and
    ``tgt_lens[k]`` count words (no ``<eos>``), ``gold[k]`` holds the sure gold links and
    ``possible[k]`` the possible ones (``None``: possible = sure).

    Returns a dict with:

    * ``"aer"``: corpus AER of the head-averaged attention, against sure and possible links;
    * ``"aer_sure_only"``: the same with possible = sure (the figure reported before
      possible links existed, kept for continuity);
    * ``"aer_per_head"``: list of each head's corpus AER (sure and possible);
    * ``"best_head"``: ``head`` when given (a head chosen on another split, e.g. validation,
      so the test figure is not picked on test), else the head with the lowest AER here;
    * ``"aer_best_head"``: ``aer_per_head[best_head]`` (equal to ``"aer"`` for one head);
    * ``"entropy"``: :func:`attention_entropy` of the head-averaged attention.

    An empty corpus gives 0.0 everywhere, head 0 and an empty ``"aer_per_head"``.
    """
    n = len(weights_list)
    if not (len(src_lens) == len(tgt_lens) == len(gold) == n):
        raise ValueError(
            f"got {n} attention arrays, {len(src_lens)} src_lens, {len(tgt_lens)} tgt_lens "
            f"and {len(gold)} gold alignments; they must be parallel"
        )
    if n == 0:
        return {
            "aer": 0.0,
            "aer_sure_only": 0.0,
            "aer_best_head": 0.0,
            "best_head": 0,
            "aer_per_head": [],
            "entropy": 0.0,
        }

    stacks = [_as_heads(w) for w in weights_list]
    n_heads = stacks[0].shape[0]
    if any(s.shape[0] != n_heads for s in stacks):
        raise ValueError("every sentence's attention must have the same number of heads")
    if head is not None and not 0 <= head < n_heads:
        raise ValueError(f"head {head} does not exist; the attention has {n_heads} heads")

    averaged = [s.mean(axis=0) for s in stacks]
    gold_sets = list(gold)
    mean_pred = [
        hard_alignment(w, s, t) for w, s, t in zip(averaged, src_lens, tgt_lens, strict=True)
    ]
    aer = alignment_error_rate(mean_pred, gold_sets, possible)
    if n_heads == 1:
        per_head = [aer]
    else:
        per_head = [
            alignment_error_rate(
                [
                    hard_alignment(st[h], s, t)
                    for st, s, t in zip(stacks, src_lens, tgt_lens, strict=True)
                ],
                gold_sets,
                possible,
            )
            for h in range(n_heads)
        ]
    best = head if head is not None else int(np.argmin(per_head))
    return {
        "aer": aer,
        "aer_sure_only": alignment_error_rate(mean_pred, gold_sets),
        "aer_best_head": per_head[best],
        "best_head": best,
        "aer_per_head": per_head,
        "entropy": attention_entropy(averaged),
    }
