"""The synthetic corpus on disk: a folder that says which corpus it holds.

Beside ``train/valid/test.tsv`` a ``corpus.json`` records the generator's spec (seed, sizes,
lengths, length buckets) and a hash of the grammar file, so a folder generated with other
settings is never mistaken for the requested corpus. Generation writes into a unique
temporary folder next to the target and renames it into place in one step, so jobs of a
parallel sweep that start on one missing folder never see (or write) half a corpus: the
first rename wins and the others check the winner's identity and discard their own copy.
"""

from __future__ import annotations

import hashlib
import json
import os
import secrets
import shutil
from dataclasses import asdict, fields
from enum import Enum
from pathlib import Path
from typing import Any

from seq2seq.data.corpus import SPLITS, read_tsv
from seq2seq.data.synthetic.generator import CorpusSpec, generate_splits, write_splits
from seq2seq.data.synthetic.grammar_file import DEFAULT_GRAMMAR
from seq2seq.errors import UserError, WriteError
from seq2seq.files import write_json, writing

CORPUS_FILE = "corpus.json"
#: The generator and its version: bump the version when the same spec and grammar file
#: give another corpus, so folders of the old one are refused instead of reused.
GENERATOR = "seq2seq.data.synthetic/3"
#: How each identity field is set, for messages that say what to change.
FIELD_NAMES = {
    "generator": "generator",
    **{f.name: f"data.{f.name}" for f in fields(CorpusSpec)},
    "bucket_edges": "length buckets",
    "grammar_sha256": "grammar (hash of data/grammar.yaml)",
}


class Outcome(Enum):
    """What :func:`ensure_corpus` did."""

    FOUND = "found"  # the folder already held this corpus
    ADOPTED = "adopted"  # an older version's folder held it; corpus.json was added
    GENERATED = "generated"


def corpus_identity(spec: CorpusSpec, grammar: Path = DEFAULT_GRAMMAR) -> dict[str, Any]:
    """What makes a synthetic corpus: the generator spec and the grammar file's SHA-256."""
    digest = hashlib.sha256(Path(grammar).read_bytes()).hexdigest()
    edges = list(spec.bucket_edges)  # as JSON reads it back
    return {"generator": GENERATOR, **asdict(spec), "bucket_edges": edges, "grammar_sha256": digest}


def differences(found: dict[str, Any], wanted: dict[str, Any]) -> list[str]:
    """``"data.seed 1 there, 0 asked"`` for each field that differs."""
    extra = sorted((set(found) | set(wanted)) - set(FIELD_NAMES))
    changed = [key for key in [*FIELD_NAMES, *extra] if found.get(key) != wanted.get(key)]
    return [
        f"{FIELD_NAMES[key]} differs"
        if key == "grammar_sha256"
        else f"{FIELD_NAMES.get(key, key)} {found.get(key)} there, {wanted.get(key)} asked"
        for key in changed
    ]


def ensure_corpus(directory: str | Path, spec: CorpusSpec) -> Outcome:
    """Make ``directory`` hold the corpus of ``spec``; raise :class:`UserError` when it holds
    another one (nothing is overwritten)."""
    directory = Path(directory)
    wanted = corpus_identity(spec)
    if directory.exists() and not directory.is_dir():
        raise UserError(f"data.dir {directory} is a file; point data.dir to a folder")
    if directory.is_dir() and any(directory.iterdir()):
        return _check(directory, spec, wanted)
    # a unique name, made like any folder (its mode follows the umask; mkdtemp's is 0700)
    tmp = directory.parent / f".{directory.name}.tmp-{os.getpid()}-{secrets.token_hex(4)}"
    try:
        with writing(directory):  # a full disk, a read-only place: one line naming data.dir
            tmp.mkdir(parents=True)
            write_splits(generate_splits(spec), tmp)
            write_json(tmp / CORPUS_FILE, wanted)
            try:
                os.rename(tmp, directory)  # atomic; replaces an empty folder (POSIX)
            except OSError:
                if not (directory / CORPUS_FILE).is_file():
                    raise
                _check(directory, spec, wanted)  # another job won the race
                return Outcome.FOUND
    except WriteError as err:  # raised for a file inside the temporary folder: name data.dir
        if not isinstance(err.__cause__, OSError):
            raise
        raise WriteError.from_os_error(directory, err.__cause__) from err
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    return Outcome.GENERATED


def _check(directory: Path, spec: CorpusSpec, wanted: dict[str, Any]) -> Outcome:
    """A non-empty folder: this corpus (found or adopted), or a :class:`UserError`."""
    fix = f"choose another data.dir or delete {directory} to regenerate it"
    identity_file = directory / CORPUS_FILE
    present = [s for s in SPLITS if (directory / f"{s}.tsv").is_file()]
    if identity_file.is_file():
        try:
            found = json.loads(identity_file.read_text(encoding="utf-8"))
        except (json.JSONDecodeError, UnicodeDecodeError):
            raise UserError(f"{identity_file} is not valid JSON; {fix}") from None
        if not isinstance(found, dict):
            raise UserError(f"{identity_file} is not a corpus description; {fix}")
        diff = differences(found, wanted)
        if diff:
            raise UserError(
                f"{directory} already holds a different corpus ({'; '.join(diff)}); {fix}"
            )
        if len(present) < len(SPLITS):
            raise UserError(f"{directory} has lost some of train/valid/test.tsv; {fix}")
        return Outcome.FOUND
    if len(present) == len(SPLITS):
        splits = generate_splits(spec)
        if all(read_tsv(directory / f"{s}.tsv") == splits[s] for s in SPLITS):
            write_json(identity_file, wanted)
            return Outcome.ADOPTED
    raise UserError(
        f"{directory} already holds a different corpus, or one without {CORPUS_FILE} "
        f"(written by an older version) that these settings do not generate; {fix}, "
        "or read it as it is with data.synthetic=false"
    )
