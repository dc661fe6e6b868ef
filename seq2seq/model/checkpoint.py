"""Checkpoints as plain data: safe to load with ``weights_only=True``, written atomically.

A checkpoint is a dict of tensors, numbers, strings, lists and dicts only — model, optimizer
and scheduler states, RNG states, the training position, the vocabularies and the resolved
config — so loading one never runs code, and a file needing pickle code is refused.
"""

from __future__ import annotations

import os
import pickle
import zipfile
from dataclasses import MISSING, dataclass, fields
from pathlib import Path
from typing import Any

import torch

from seq2seq.data.vocab import Vocab
from seq2seq.errors import UserError
from seq2seq.model import ModelSpec, Seq2Seq

FORMAT_VERSION = 1


@dataclass
class Checkpoint:
    """What a checkpoint file holds: the one definition that saving and loading share.

    Every field is plain data (tensors, numbers, strings, lists, dicts).
    """

    model: dict[str, Any]  # the model's state_dict
    optimizer: dict[str, Any]  # the optimizer's state_dict
    scheduler: dict[str, Any]  # the learning-rate scheduler's state_dict
    rng: dict[str, Any]  # seq2seq.runtime.rng_states()
    state: dict[str, Any]  # the trainer's position and history (TrainState as a dict)
    model_spec: dict[str, Any]  # ModelSpec as a dict
    vocab: dict[str, Any]  # {"src": Vocab.to_dict(), "tgt": Vocab.to_dict()}
    config: dict[str, Any]  # the resolved run config, plain data; never resolved again
    max_src_len: int  # the longest training source (tokens): translate's input limit
    corpus_sha256: str | None = None  # SHA-256 of data.path, when the splits came from one file

    def to_dict(self) -> dict[str, Any]:
        """The file's content (shallow: tensors are not copied)."""
        return {
            "format_version": FORMAT_VERSION,
            **{f.name: getattr(self, f.name) for f in fields(self)},
        }

    @classmethod
    def from_dict(cls, payload: dict[str, Any]) -> Checkpoint:
        """The inverse of :meth:`to_dict`; extra keys are ignored, optional ones (added
        later, with a default) may be missing."""
        return cls(**{f.name: payload[f.name] for f in fields(cls) if f.name in payload})


# Entries every checkpoint holds (the fields without a default).
REQUIRED_KEYS = tuple(f.name for f in fields(Checkpoint) if f.default is MISSING)


def save_checkpoint(path: str | Path, checkpoint: Checkpoint) -> None:
    """Write ``checkpoint`` to ``path`` atomically: a temporary file, fsync, then rename.

    A crash at any moment leaves either the previous file or the new complete one.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
    with open(tmp, "wb") as handle:
        torch.save(checkpoint.to_dict(), handle)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(tmp, path)
    for stale in path.parent.glob(f".{path.name}.tmp*"):  # left by a process killed mid-save
        stale.unlink(missing_ok=True)
    directory = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(directory)
    finally:
        os.close(directory)


def load_checkpoint(
    path: str | Path, map_location: str | torch.device = "cpu", purpose: str = "load"
) -> Checkpoint:
    """Load with ``weights_only=True``; every failure becomes a one-line :class:`UserError`
    whose advice fits the ``purpose`` (``"load"``: evaluate or translate; ``"resume"``)."""
    path = Path(path)
    if not path.is_file():
        raise UserError(f"checkpoint {path} does not exist; check the run folder")
    advice = (
        "resume cannot continue from it: train into a new folder (hydra.run.dir=...); "
        "best.pt still serves evaluate.py and translate.py"
        if purpose == "resume"
        else "use another checkpoint (e.g. --checkpoint last.pt) or retrain"
    )
    damaged = f"checkpoint {path} is truncated or corrupted ({{}}); {advice}"
    with open(path, "rb") as handle:
        is_zip = handle.read(4) == b"PK\x03\x04"
    if is_zip:  # what torch.save writes; other files go to torch.load's legacy reader
        _check_archive(path, damaged)
    try:
        payload = torch.load(path, map_location=map_location, weights_only=True)
    except pickle.UnpicklingError as err:
        if any(sign in str(err) for sign in _CODE_SIGNS):
            raise UserError(
                f"checkpoint {path} contains Python objects that need code to load; refusing it "
                "(only checkpoints written by this project, which hold plain data, load)"
            ) from None
        raise UserError(damaged.format(_unpickler_reason(err))) from None
    except Exception as err:  # any other failure to read the file: it is damaged
        raise UserError(damaged.format(_first_line(err))) from None
    if not isinstance(payload, dict) or payload.get("format_version") != FORMAT_VERSION:
        raise UserError(f"{path} is not a checkpoint written by this version of seq2seq")
    missing = [key for key in REQUIRED_KEYS if key not in payload]
    if missing:
        raise UserError(f"checkpoint {path} is incomplete (no {', '.join(missing)}); retrain")
    return Checkpoint.from_dict(payload)


# What the weights-only unpickler says when a file asks for a class or function to be called.
_CODE_SIGNS = ("GLOBAL", "add_safe_globals", "unrecognized function")


def _check_archive(path: Path, damaged: str) -> None:
    """``torch.save`` writes a zip archive with a CRC-32 per record: verify them all, so a
    truncated file or bytes changed inside the weights are reported instead of loaded."""
    try:
        with zipfile.ZipFile(path) as archive:
            bad_record = archive.testzip()
    except Exception as err:  # e.g. the end of the archive is missing
        raise UserError(damaged.format(f"incomplete zip archive: {_first_line(err)}")) from None
    if bad_record is not None:
        raise UserError(damaged.format(f"checksum mismatch in {bad_record}"))


def _unpickler_reason(err: BaseException) -> str:
    """The weights-only unpickler's own reason, without torch's advice around it."""
    text = str(err)
    _, found, reason = text.partition("WeightsUnpickler error:")
    return _first_line(reason if found else text) or type(err).__name__


def _first_line(err: BaseException | str) -> str:
    lines = [line.strip() for line in str(err).splitlines() if line.strip()]
    return lines[0][:160] if lines else type(err).__name__


def model_from_checkpoint(
    checkpoint: Checkpoint, device: str | torch.device = "cpu"
) -> tuple[Seq2Seq, Vocab, Vocab]:
    """Rebuild the model and its vocabularies; mismatches are a :class:`UserError`."""
    try:
        spec = ModelSpec.from_dict(checkpoint.model_spec)
        src_vocab = Vocab.from_dict(checkpoint.vocab["src"])
        tgt_vocab = Vocab.from_dict(checkpoint.vocab["tgt"])
    except (KeyError, TypeError, ValueError) as err:
        raise UserError(
            f"checkpoint is inconsistent: unreadable model spec or vocabularies ({err!r:.160})"
        ) from None
    if (len(src_vocab), len(tgt_vocab)) != (spec.src_vocab_size, spec.tgt_vocab_size):
        raise UserError("checkpoint is inconsistent: its vocabularies do not fit its model")
    model = Seq2Seq(spec)
    try:
        model.load_state_dict(checkpoint.model)
    except RuntimeError as err:
        raise UserError(
            f"checkpoint weights do not fit its model config ({_first_line(err)})"
        ) from None
    return model.to(device), src_vocab, tgt_vocab
