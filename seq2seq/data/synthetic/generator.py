"""The synthetic corpus: train/valid/test splits drawn from the grammar, and a summary.

Train and valid source lengths are uniform over ``[min_len, max_len]``; the test split is
stratified so every length bucket (1-10, 11-20, ..., 41+) holds the same number of pairs,
uniform over the bucket's lengths, which is what a BLEU-by-length plot needs. No source
sentence appears twice, within or across splits, and the running example
``我 爱 中国 -> I love China`` is the first training pair. The same seed gives
byte-identical files.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from itertools import groupby, islice
from operator import itemgetter
from pathlib import Path

from seq2seq.data.corpus import SPLITS, Alignment, Pair, write_tsv
from seq2seq.data.lengths import DEFAULT_LENGTH_EDGES, length_bucket, length_bucket_labels
from seq2seq.data.synthetic.grammar import Grammar

RUNNING_EXAMPLE = Pair(("我", "爱", "中国"), ("I", "love", "China"), ((0, 0), (1, 1), (2, 2)))
#: Draws allowed per requested pair before giving up (the grammar is too small).
MAX_ATTEMPTS = 1000


@dataclass(frozen=True)
class CorpusSpec:
    """Sizes, lengths and seed of a synthetic corpus."""

    seed: int = 0
    train_size: int = 64000
    valid_size: int = 1000
    test_size: int = 1000  # stratified over length buckets
    min_len: int = 3
    max_len: int = 50
    bucket_edges: tuple[int, ...] = DEFAULT_LENGTH_EDGES

    def __post_init__(self) -> None:
        if self.train_size < 1 or self.valid_size < 0 or self.test_size < 0:
            raise ValueError("train_size must be >= 1 and valid_size, test_size >= 0")
        if not 1 <= self.min_len <= self.max_len:
            raise ValueError(f"need 1 <= min_len <= max_len, got {self.min_len}, {self.max_len}")
        if list(self.bucket_edges) != sorted(set(self.bucket_edges)) or any(
            edge < 1 for edge in self.bucket_edges
        ):
            raise ValueError(f"bucket_edges must increase and be >= 1, got {self.bucket_edges}")


@dataclass(frozen=True)
class Bucket:
    """A length bucket clipped to the corpus' lengths: ``label`` covers ``low..high``."""

    label: str
    low: int
    high: int


def length_buckets(min_len: int, max_len: int, edges: Sequence[int]) -> list[Bucket]:
    """The buckets that hold at least one length in ``[min_len, max_len]``."""
    buckets = []
    for low, high in zip([1, *(edge + 1 for edge in edges)], [*edges, max_len], strict=True):
        low, high = max(low, min_len), min(high, max_len)
        if low <= high:
            buckets.append(Bucket(length_bucket(low, edges), low, high))
    return buckets


def generate_splits(spec: CorpusSpec, grammar: Grammar | None = None) -> dict[str, list[Pair]]:
    """Draw ``{"train", "valid", "test"}`` from the grammar (the default one when ``None``).

    Every pair draws a length uniformly (train and valid from ``[min_len, max_len]``, test
    from its bucket), then a sentence of exactly that length. Raises
    ``ValueError`` when the test split cannot put at least one pair in each bucket, or when
    the grammar cannot produce enough distinct sentences (or sentences that short).
    """
    grammar = grammar or Grammar.load()
    buckets = length_buckets(spec.min_len, spec.max_len, spec.bucket_edges)
    if spec.test_size < len(buckets):
        raise ValueError(
            f"test_size={spec.test_size} gives fewer than one pair for each of the "
            f"{len(buckets)} length buckets; raise test_size"
        )
    master = random.Random(spec.seed)
    streams = {split: random.Random(master.getrandbits(64)) for split in SPLITS}
    seen = {RUNNING_EXAMPLE.src}

    def draw(rng: random.Random, low: int, high: int) -> Pair:
        """A pair whose source length is drawn uniformly from ``low..high``, and whose source
        is not ``seen`` yet."""
        length = rng.randint(low, high)
        for _ in range(MAX_ATTEMPTS):
            pair = grammar.sample_pair(rng, length)
            if pair.src not in seen:
                seen.add(pair.src)
                return pair
        raise ValueError(
            f"could not draw a new sentence of {length} tokens in {MAX_ATTEMPTS} tries; "
            "the grammar is too small for the requested corpus size"
        )

    lengths = spec.min_len, spec.max_len
    train = [
        RUNNING_EXAMPLE,
        *(draw(streams["train"], *lengths) for _ in range(spec.train_size - 1)),
    ]
    valid = [draw(streams["valid"], *lengths) for _ in range(spec.valid_size)]
    test = []
    base, extra = divmod(spec.test_size, len(buckets))  # the larger shares first
    for k, bucket in enumerate(buckets):
        test += [draw(streams["test"], bucket.low, bucket.high) for _ in range(base + (k < extra))]
    return {"train": train, "valid": valid, "test": test}


def write_splits(splits: Mapping[str, Sequence[Pair]], directory: str | Path) -> None:
    """Write ``train.tsv``, ``valid.tsv`` and ``test.tsv`` (with alignments) into ``directory``."""
    for split in SPLITS:
        write_tsv(Path(directory) / f"{split}.tsv", splits[split])


def has_crossing(alignment: Alignment | None) -> bool:
    """Whether two links cross: ``i < i'`` but ``j > j'`` (reordering)."""
    highest = -1  # the largest target index among links with a smaller source index
    for _, links in groupby(sorted(alignment or ()), key=itemgetter(0)):
        targets = [j for _, j in links]  # sorted
        if targets[0] < highest:
            return True
        highest = max(highest, targets[-1])
    return False


# --------------------------------------------------------------------------- summary


def corpus_summary(
    splits: Mapping[str, Sequence[Pair]], edges: Sequence[int] = CorpusSpec.bucket_edges
) -> str:
    """A printable overview: sizes, vocabularies, reordering, length histograms, examples."""
    present = {split: splits[split] for split in SPLITS if split in splits}
    train = present.get("train", [])
    src, tgt = (len({w for p in train for w in getattr(p, side)}) for side in ("src", "tgt"))

    def each(show: Callable[[Sequence[Pair]], str]) -> str:
        return " | ".join(f"{name} {show(pairs)}" for name, pairs in present.items())

    def crossing(pairs: Sequence[Pair]) -> str:
        return f"{sum(has_crossing(p.alignment) for p in pairs) / max(len(pairs), 1):.1%}"

    lines = [
        "Synthetic zh->en corpus",
        "  pairs: " + each(lambda pairs: str(len(pairs))),
        f"  vocabulary (types in train): source {src} | target {tgt}",
        "  pairs with crossing alignment links: " + each(crossing),
        "",
        *_length_table(present, edges),
        "",
        "examples (gold alignment):",
    ]
    for pair in _examples(train):
        lines.extend(draw_alignment(pair))
    return "\n".join(lines)


def _length_table(splits: Mapping[str, Sequence[Pair]], edges: Sequence[int]) -> list[str]:
    """Pairs per length bucket, in a column for each split's source and for its target."""
    columns = {
        f"{side} {name}": Counter(length_bucket(len(getattr(p, side)), edges) for p in pairs)
        for side in ("src", "tgt")
        for name, pairs in splits.items()
    }
    rows = ["length (tokens)" + "".join(f"{title:>11}" for title in columns)]
    for label in length_bucket_labels(edges):
        if any(counts[label] for counts in columns.values()):
            rows.append(f"  {label:<13}" + "".join(f"{c[label]:>11}" for c in columns.values()))
    return rows


def _examples(train: Sequence[Pair]) -> list[Pair]:
    """The running example, and the first short one-clause pair whose one-to-one links cross
    (a reordering, not only a many-to-one link such as 找 了 -> looked for)."""

    def reorders(pair: Pair) -> bool:
        links = pair.alignment or ()
        src, tgt = Counter(i for i, _ in links), Counter(j for _, j in links)
        return has_crossing([(i, j) for i, j in links if src[i] == tgt[j] == 1])

    short = (p for p in train[1:] if len(p.src) <= 12 and "，" not in p.src)
    return [*train[:1], *islice(filter(reorders, short), 1)]


def draw_alignment(pair: Pair) -> list[str]:
    """The pair and its links as text: ``吃 -> ate``, ``了 -> ate``, then unaligned words."""
    lines = [f"  {' '.join(pair.src)}  =>  {' '.join(pair.tgt)}"]
    links = pair.alignment or ()
    for i, word in enumerate(pair.src):
        targets = [pair.tgt[j] for src, j in links if src == i]
        if targets:
            lines.append(f"      {word} -> {' '.join(targets)}")
    aligned_src, aligned_tgt = {i for i, _ in links}, {j for _, j in links}
    lone_src = " ".join(w for i, w in enumerate(pair.src) if i not in aligned_src) or "-"
    lone_tgt = " ".join(w for j, w in enumerate(pair.tgt) if j not in aligned_tgt) or "-"
    lines.append(f"      unaligned: zh {lone_src} | en {lone_tgt}")
    return lines
