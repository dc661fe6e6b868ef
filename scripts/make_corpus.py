"""Write the synthetic corpus: ``python scripts/make_corpus.py [data.dir=...] [seed=...]``.

Takes the same overrides as training (``data.train_size``, ``data.max_len``, ``seed``, ...),
writes train/valid/test.tsv into ``data.dir`` and prints a summary. An existing, different
corpus in that folder is never overwritten.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from seq2seq.config.compose import load_config
from seq2seq.data.corpus import read_tsv
from seq2seq.data.loading import SPLITS, corpus_spec
from seq2seq.data.synthetic.generator import corpus_summary, generate_splits, write_splits
from seq2seq.data.vocab import Vocab
from seq2seq.errors import UserError, exit_on_user_error


@exit_on_user_error
def main(argv: list[str]) -> None:
    if any(arg in ("-h", "--help") for arg in argv):
        print(__doc__)
        return
    cfg = load_config(argv)
    data = cfg.data
    if not data.synthetic:
        raise UserError(
            f"data={data.name} is not synthetic; make_corpus writes the synthetic corpus only"
        )
    started = time.perf_counter()
    splits = generate_splits(corpus_spec(data, cfg.seed))
    seconds = time.perf_counter() - started
    directory = Path(data.dir)
    present = [s for s in SPLITS if (directory / f"{s}.tsv").exists()]
    if not present:
        write_splits(splits, directory)
        print(f"wrote {', '.join(f'{s}.tsv' for s in SPLITS)} to {directory} in {seconds:.1f}s")
    elif present == list(SPLITS) and all(
        read_tsv(directory / f"{s}.tsv") == splits[s] for s in SPLITS
    ):
        print(f"{directory} already holds this corpus (same settings and seed); nothing written")
    else:
        raise UserError(
            f"{directory} already holds a different corpus; remove it or choose another data.dir"
        )
    print(corpus_summary(splits))
    src_vocab = Vocab.build(p.src for p in splits["train"])
    tgt_vocab = Vocab.build(p.tgt for p in splits["train"])
    print(f"model vocabularies (with 4 specials): {len(src_vocab)} zh, {len(tgt_vocab)} en")


if __name__ == "__main__":
    main(sys.argv[1:])
