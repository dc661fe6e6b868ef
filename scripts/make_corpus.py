"""Write the synthetic corpus: ``python scripts/make_corpus.py [data.dir=...] [data.seed=...]``.

Takes the same overrides as training (``data.train_size``, ``data.max_len``, ``data.seed``, ...),
writes train/valid/test.tsv and corpus.json (the generator settings and a hash of
data/grammar.yaml) into ``data.dir`` (by default a folder named after those settings) and
prints a summary. A folder holding a different corpus is never overwritten; one written by an
older version (no corpus.json) is adopted when it holds exactly this corpus. A folder that
cannot be written (a read-only place, a full disk) is one line naming it.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from seq2seq.config.compose import load_config
from seq2seq.data.corpus import read_tsv
from seq2seq.data.loading import SPLITS
from seq2seq.data.synthetic.generator import corpus_summary
from seq2seq.data.synthetic.store import Outcome, ensure_corpus
from seq2seq.data.vocab import Vocab
from seq2seq.errors import UserError, exit_on_user_error


@exit_on_user_error
def main(argv: list[str]) -> None:
    if any(arg in ("-h", "--help") for arg in argv):
        print(__doc__)
        return
    data = load_config(argv).data
    if not data.synthetic:
        raise UserError(
            f"data={data.name} is not synthetic; make_corpus writes the synthetic corpus only"
        )
    started = time.perf_counter()
    directory = Path(data.dir or "")
    outcome = ensure_corpus(directory, data.corpus_spec)  # write errors name data.dir
    seconds = time.perf_counter() - started
    if outcome is Outcome.GENERATED:
        files = ", ".join(f"{s}.tsv" for s in SPLITS)
        print(f"wrote {files} and corpus.json to {directory} in {seconds:.1f}s")
    else:
        added = " (added its corpus.json)" if outcome is Outcome.ADOPTED else ""
        print(
            f"{directory} already holds this corpus (same settings and seed){added}; "
            "nothing written"
        )
    splits = {s: read_tsv(directory / f"{s}.tsv") for s in SPLITS}
    print(corpus_summary(splits))
    src_vocab = Vocab.build(p.src for p in splits["train"])
    tgt_vocab = Vocab.build(p.tgt for p in splits["train"])
    print(f"model vocabularies (with 4 specials): {len(src_vocab)} zh, {len(tgt_vocab)} en")


if __name__ == "__main__":
    main(sys.argv[1:])
