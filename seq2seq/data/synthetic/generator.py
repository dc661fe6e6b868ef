"""The synthetic corpus: train/valid/test splits drawn from the grammar, and a summary.

Train and valid source lengths are uniform over ``[min_len, max_len]``; the test split is
stratified so every length bucket (1-10, 11-20, ..., 41+) holds the same number of pairs,
which is what a BLEU-by-length plot needs. No source sentence appears twice, within or
across splits, and the running example ``我 爱 中国 -> I love China`` is the first
training pair. The same seed gives byte-identical files.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from seq2seq.data.corpus import SPLITS, Alignment, Pair, write_tsv
from seq2seq.data.lengths import DEFAULT_LENGTH_EDGES, length_bucket
from seq2seq.data.synthetic.grammar import Grammar

RUNNING_EXAMPLE = Pair(("我", "爱", "中国"), ("I", "love", "China"), ((0, 0), (1, 1), (2, 2)))
#: Draws allowed per requested pair before giving up (the grammar is too small).
MAX_ATTEMPTS = 1000
BAR_WIDTH = 24


@dataclass(frozen=True)
class CorpusSpec:
    """Sizes, lengths and seed of a synthetic corpus."""

    seed: int = 0
    train_size: int = 16000
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
    bounds = [*edges, max(max_len, edges[-1] + 1 if edges else max_len)]
    buckets = []
    low = 1
    for high in bounds:
        lo, hi = max(low, min_len), min(high, max_len)
        if lo <= hi:
            buckets.append(Bucket(length_bucket(lo, edges), lo, hi))
        low = high + 1
    return buckets


def generate_splits(spec: CorpusSpec, grammar: Grammar | None = None) -> dict[str, list[Pair]]:
    """Draw ``{"train", "valid", "test"}`` from the grammar (the default one when ``None``).

    Train and valid pairs draw a length uniformly from ``[min_len, max_len]`` and a sentence
    of exactly that length; test pairs a sentence anywhere in their bucket. Raises
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
        """A pair of ``low..high`` source tokens whose source is not ``seen`` yet."""
        for _ in range(MAX_ATTEMPTS):
            pair = grammar.sample_pair(rng, low, high)
            if pair.src not in seen:
                seen.add(pair.src)
                return pair
        raise ValueError(
            f"could not draw a new sentence of {low}-{high} tokens in {MAX_ATTEMPTS} tries; "
            "the grammar is too small for the requested corpus size"
        )

    def uniform(rng: random.Random) -> Pair:
        length = rng.randint(spec.min_len, spec.max_len)
        return draw(rng, length, length)

    train = [RUNNING_EXAMPLE, *(uniform(streams["train"]) for _ in range(spec.train_size - 1))]
    valid = [uniform(streams["valid"]) for _ in range(spec.valid_size)]
    test = []
    for bucket, size in zip(buckets, _shares(spec.test_size, len(buckets)), strict=True):
        test.extend(draw(streams["test"], bucket.low, bucket.high) for _ in range(size))
    return {"train": train, "valid": valid, "test": test}


def _shares(total: int, parts: int) -> list[int]:
    """``total`` split into ``parts`` near-equal sizes, the larger ones first."""
    base, extra = divmod(total, parts)
    return [base + (k < extra) for k in range(parts)]


def write_splits(splits: Mapping[str, Sequence[Pair]], directory: str | Path) -> None:
    """Write ``train.tsv``, ``valid.tsv`` and ``test.tsv`` (with alignments) into ``directory``."""
    directory = Path(directory)
    for split in SPLITS:
        write_tsv(directory / f"{split}.tsv", splits[split])


def has_crossing(alignment: Alignment | None) -> bool:
    """Whether two links cross: ``i < i'`` but ``j > j'`` (reordering)."""
    if not alignment:
        return False
    links = sorted(alignment)
    highest_before = -1  # largest target index among links with a smaller source index
    group_high = -1
    current = links[0][0]
    for i, j in links:
        if i != current:
            highest_before = max(highest_before, group_high)
            group_high, current = -1, i
        if j < highest_before:
            return True
        group_high = max(group_high, j)
    return False


# --------------------------------------------------------------------------- summary


def corpus_summary(
    splits: Mapping[str, Sequence[Pair]], edges: Sequence[int] = CorpusSpec.bucket_edges
) -> str:
    """A printable overview: sizes, length histograms, vocabularies, reordering, examples."""
    names = [split for split in SPLITS if split in splits]
    train = splits.get("train", [])
    lines = [
        "Synthetic zh->en corpus",
        "  pairs: " + " | ".join(f"{name} {len(splits[name])}" for name in names),
        f"  vocabulary (types in train): source {_types(p.src for p in train)} | "
        f"target {_types(p.tgt for p in train)}",
        "  pairs with crossing alignment links: "
        + " | ".join(f"{name} {_crossing_share(splits[name]):.1%}" for name in names),
        "",
    ]
    for side in ("src", "tgt"):
        title = "source" if side == "src" else "target"
        lines.append(f"{title} length (tokens):")
        lines.extend(_histogram({n: splits[n] for n in names}, side, edges))
        lines.append("")
    lines.append("examples (gold alignment):")
    for pair in _examples(train):
        lines.extend(draw_alignment(pair))
    return "\n".join(lines)


def _types(sentences: Iterable[Sequence[str]]) -> int:
    return len({token for sentence in sentences for token in sentence})


def _crossing_share(pairs: Sequence[Pair]) -> float:
    return sum(has_crossing(p.alignment) for p in pairs) / len(pairs) if pairs else 0.0


def _histogram(splits: Mapping[str, Sequence[Pair]], side: str, edges: Sequence[int]) -> list[str]:
    """One row per bucket; per split a bar scaled to that split's largest bucket."""
    counts = {
        name: Counter(length_bucket(len(getattr(p, side)), edges) for p in pairs)
        for name, pairs in splits.items()
    }
    labels = sorted({label for c in counts.values() for label in c}, key=_bucket_start)
    header = "  bucket  " + "".join(f"{name:<{BAR_WIDTH + 8}}" for name in splits)
    rows = [header.rstrip()]
    for label in labels:
        cells = []
        for name in splits:
            count = counts[name][label]
            peak = max(counts[name].values(), default=0)
            bar = "#" * round(BAR_WIDTH * count / peak) if peak else ""
            cells.append(f"{bar:<{BAR_WIDTH}} {count:>6} ")
        rows.append(f"  {label:<7} " + "".join(cells).rstrip())
    return rows


def _bucket_start(label: str) -> int:
    return int(label.split("-")[0].rstrip("+"))


def _examples(train: Sequence[Pair]) -> list[Pair]:
    """The running example, a short reordering example, and a short one with many-to-one
    links and unaligned words (or just many-to-one links)."""
    short = [p for p in train[1:] if p.alignment and len(p.src) <= 12]
    picks = [p for p in train[:1] if p.alignment]
    reordering = next((p for p in short if has_crossing(p.alignment) and "，" not in p.src), None)
    many_to_one = [p for p in short if _has_many_to_one(p) and p is not reordering]
    with_unaligned = (p for p in many_to_one if len({i for i, _ in p.alignment or ()}) < len(p.src))
    third = next(with_unaligned, many_to_one[0] if many_to_one else None)
    return [*picks, *(p for p in (reordering, third) if p is not None)]


def _has_many_to_one(pair: Pair) -> bool:
    targets = Counter(j for _, j in pair.alignment or ())
    return any(n > 1 for n in targets.values())


def draw_alignment(pair: Pair) -> list[str]:
    """The pair and its links as text: ``吃 -> ate``, ``了 -> ate``, then unaligned words."""
    lines = [f"  {' '.join(pair.src)}  =>  {' '.join(pair.tgt)}"]
    links = pair.alignment or ()
    for i, word in enumerate(pair.src):
        targets = [pair.tgt[j] for src, j in links if src == i]
        if targets:
            lines.append(f"      {word} -> {' '.join(targets)}")
    aligned_src = {i for i, _ in links}
    aligned_tgt = {j for _, j in links}
    lone_src = [w for i, w in enumerate(pair.src) if i not in aligned_src]
    lone_tgt = [w for j, w in enumerate(pair.tgt) if j not in aligned_tgt]
    lines.append(
        f"      unaligned: zh {' '.join(lone_src) or '-'} | en {' '.join(lone_tgt) or '-'}"
    )
    return lines
