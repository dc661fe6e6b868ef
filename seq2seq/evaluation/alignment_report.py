"""Where attention goes wrong as an alignment: every English word's link, classified.

Pure functions over teacher-forced attention arrays and gold links, with the conventions of
:mod:`seq2seq.evaluation.metrics`: attention ``(T_t, T_s)`` or ``(heads, T_t, T_s)`` with
``T_s = src_len + 1`` (last column: the source ``<eos>``), rows ``j < tgt_len`` are the
English reference words; heads are averaged and each word's predicted link is its most
attended source position (:func:`metrics.hard_alignment`: ties to the lowest index, the
``<eos>`` column meaning "unaligned").

Each English word falls in exactly one category, tested in this order:

* ``correct``: the predicted link is in P (sure or possible);
* ``gold_unaligned``: the word has no gold link at all (whatever attention did; AER charges
  only a link it predicts, ``<eos>`` costs nothing);
* ``on_eos``: attention peaks on the source ``<eos>`` although the word has gold links;
* ``one_ahead`` / ``one_behind``: the predicted source word is one position after / before
  the nearest gold source position of the word (sure or possible; when gold positions lie
  one before *and* one after, ``one_ahead``) — the off-by-one of a shifted attention;
* ``unlinked_source``: a source word without any gold link in the sentence — a particle or
  measure word (了 的 吗 本 个, 一起 in ``跟 … 一起``): attention parks on a word that has
  nothing to translate to, typically next to the phrase it is producing (``with ← 一起``);
* ``two_away``: two positions from the nearest gold source position of the word;
* ``nearby_word``: a source word gold-linked to another English word at most
  :data:`NEARBY` positions before or after this one — attention lagging behind or already
  reading ahead (``the coffee that David sold``: ``the`` on 大卫, the source of *David*
  three words later, where the reordered noun phrase starts);
* ``elsewhere``: any other source word — the residual the categories above do not explain.

So the counts add up to the number of English words, and ``explained_share`` is the share
of wrong links (:data:`WRONG`) outside the residual ``elsewhere``. The report also lists the most
frequent wrong links (English word ← attended source word or ``<eos>``) and the mean
entropy and peak weight of the attention rows of right links versus wrong ones (every
category from ``on_eos`` on): confident mistakes look different from vague ones.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

Link = tuple[int, int]
EOS = "<eos>"
CATEGORIES = (
    "correct",
    "gold_unaligned",
    "on_eos",
    "one_ahead",
    "one_behind",
    "unlinked_source",
    "two_away",
    "nearby_word",
    "elsewhere",
)
#: How far (in English words) ``nearby_word`` looks for the English word whose source the
#: attention sits on: 3 covers ``the N that X V``, where ``the`` attends to X.
NEARBY = 3
#: How :func:`format_report` prints the categories ("1 ahead": one source word after gold).
LABELS = {
    "correct": "correct",
    "gold_unaligned": "gold-unaligned",
    "on_eos": "on <eos>",
    "one_ahead": "1 ahead",
    "one_behind": "1 behind",
    "unlinked_source": "on an unlinked source word",
    "two_away": "2 away",
    "nearby_word": "on a nearby word's source",
    "elsewhere": "elsewhere",
}
#: Categories of a wrong link (a word with gold links whose predicted link misses P).
WRONG = CATEGORIES[2:]


@dataclass(frozen=True)
class WordLink:
    """One English word's predicted link: ``src_index`` (``src_len`` = ``<eos>``), its
    category, and the entropy (nats) and peak weight of its attention row."""

    tgt_index: int
    src_index: int
    category: str
    entropy: float
    peak: float


def classify(
    predicted: int,
    src_len: int,
    gold_sources: Iterable[int],
    linked_sources: Iterable[int] | None = None,
    nearby_sources: Iterable[int] = (),
) -> str:
    """The category of a predicted source position (``src_len`` = ``<eos>``) for an English
    word whose gold (sure or possible) source positions are ``gold_sources``.

    ``linked_sources``: the source positions with any gold link in the sentence (``None``:
    all of them, so no ``unlinked_source``); ``nearby_sources``: those linked to the English
    words at most :data:`NEARBY` positions away (not to this word itself).
    """
    gold = set(gold_sources)
    if predicted in gold:
        return "correct"
    if not gold:
        return "gold_unaligned"
    if predicted >= src_len:
        return "on_eos"
    nearest = min(abs(predicted - g) for g in gold)
    if nearest == 1:
        return "one_ahead" if predicted - 1 in gold else "one_behind"
    if linked_sources is not None and predicted not in set(linked_sources):
        return "unlinked_source"
    if nearest == 2:
        return "two_away"
    if predicted in set(nearby_sources):
        return "nearby_word"
    return "elsewhere"


def _row_stats(row: np.ndarray) -> tuple[float, float]:
    """Entropy (nats) and peak weight of one attention row."""
    positive = row[row > 0]
    return float(-(positive * np.log(positive)).sum()), float(row.max())


def sentence_links(
    weights: np.ndarray, src_len: int, tgt_len: int, possible: Iterable[Link]
) -> list[WordLink]:
    """Every English word's :class:`WordLink` for one sentence.

    weights (T_t, T_s) or (heads, T_t, T_s) with ``T_s == src_len + 1`` and ``T_t >=
    tgt_len``; ``possible`` is P (sure and possible links, ``(src, tgt)``).
    """
    weights = np.asarray(weights, dtype=np.float64)
    if weights.ndim == 3:
        weights = weights.mean(axis=0)
    if weights.ndim != 2 or weights.shape[1] != src_len + 1 or weights.shape[0] < tgt_len:
        raise ValueError(
            f"attention of shape {weights.shape} does not fit src_len={src_len}, "
            f"tgt_len={tgt_len} (expected (>= tgt_len, src_len + 1))"
        )
    gold: dict[int, set[int]] = {}
    for i, j in possible:
        gold.setdefault(int(j), set()).add(int(i))
    linked = set().union(*gold.values())
    links = []
    for j in range(tgt_len):
        row = weights[j]
        predicted = int(np.argmax(row))
        entropy, peak = _row_stats(row)
        nearby = [i for k in range(j - NEARBY, j + NEARBY + 1) if k != j for i in gold.get(k, ())]
        category = classify(predicted, src_len, gold.get(j, ()), linked, nearby)
        links.append(WordLink(j, predicted, category, entropy, peak))
    return links


def _mean(values: list[float]) -> float | None:
    return float(np.mean(values)) if values else None


def alignment_report(
    weights_list: Sequence[np.ndarray],
    sources: Sequence[Sequence[str]],
    targets: Sequence[Sequence[str]],
    possible: Sequence[Iterable[Link]],
    top: int = 10,
) -> dict[str, Any]:
    """The corpus' alignment error report (plain JSON data).

    ``weights_list[k]``: sentence ``k``'s teacher-forced attention; ``sources[k]`` /
    ``targets[k]``: its words (no ``<eos>``); ``possible[k]``: its P links (sure and
    possible). Returns:

    * ``words``: the number of English words;
    * ``counts`` / ``shares``: per category (:data:`CATEGORIES`), adding up to ``words`` / 1;
    * ``explained_share``: the share of wrong links (:data:`WRONG`) in a category other than
      ``elsewhere`` (``None`` without wrong links);
    * ``top_confusions``: up to ``top`` most frequent wrong links, ``{"tgt", "src",
      "count"}`` (``src`` may be ``<eos>``), most frequent first, ties by words;
    * ``entropy`` / ``peak_weight``: mean over rows of right (``correct``) and wrong
      (:data:`WRONG`) links, ``{"right": x, "wrong": y}`` (``None`` without such rows).
    """
    n = len(weights_list)
    if not (len(sources) == len(targets) == len(possible) == n):
        raise ValueError("weights, sources, targets and links must be parallel")
    counts = dict.fromkeys(CATEGORIES, 0)
    confusions: Counter[tuple[str, str]] = Counter()
    entropy: dict[str, list[float]] = {"right": [], "wrong": []}
    peak: dict[str, list[float]] = {"right": [], "wrong": []}
    for weights, src, tgt, links in zip(weights_list, sources, targets, possible, strict=True):
        for link in sentence_links(weights, len(src), len(tgt), links):
            counts[link.category] += 1
            side = "right" if link.category == "correct" else None
            if link.category in WRONG:
                side = "wrong"
                attended = EOS if link.src_index >= len(src) else src[link.src_index]
                confusions[(tgt[link.tgt_index], attended)] += 1
            if side is not None:
                entropy[side].append(link.entropy)
                peak[side].append(link.peak)
    words = sum(counts.values())
    wrong = sum(counts[name] for name in WRONG)
    ranked = sorted(confusions.items(), key=lambda item: (-item[1], item[0]))[:top]
    return {
        "words": words,
        "counts": counts,
        "shares": {k: (v / words if words else 0.0) for k, v in counts.items()},
        "explained_share": 1 - counts["elsewhere"] / wrong if wrong else None,
        "top_confusions": [{"tgt": t, "src": s, "count": c} for (t, s), c in ranked],
        "entropy": {side: _mean(values) for side, values in entropy.items()},
        "peak_weight": {side: _mean(values) for side, values in peak.items()},
    }


def format_report(report: dict[str, Any], confusions: int = 5) -> list[str]:
    """A few indented text lines: category shares, the share of wrong links explained, top
    confusions, right vs wrong rows (``explained_share`` may be missing in older reports)."""

    def number(value: float | None) -> str:
        return "n/a" if value is None else f"{value:.2f}"

    shares = report["shares"]
    parts = [f"{LABELS[name]} {100 * shares[name]:.1f}%" for name in CATEGORIES if name in shares]
    lines = [f"  Alignment of {report['words']} English words: " + ", ".join(parts[:3])]
    lines.append("    " + ", ".join(parts[3:6]))
    lines.append("    " + ", ".join(parts[6:]))
    if "explained_share" in report:
        explained = report["explained_share"]
        shown = "n/a" if explained is None else f"{100 * explained:.1f}%"
        lines.append(f"    wrong links explained by a category (not elsewhere): {shown}")
    top = report["top_confusions"][:confusions]
    if top:
        lines.append(
            "    top confusions: " + ", ".join(f"{c['tgt']}←{c['src']} ×{c['count']}" for c in top)
        )
    ent, pk = report["entropy"], report["peak_weight"]
    lines.append(
        f"    right vs wrong links: entropy {number(ent['right'])} vs {number(ent['wrong'])}, "
        f"peak weight {number(pk['right'])} vs {number(pk['wrong'])}"
    )
    return lines
