"""Checkpoints as plain data: safe to load with ``weights_only=True``, written atomically.

A checkpoint is a dict of tensors, numbers, strings, lists and dicts only — model, optimizer
and scheduler states, RNG states, the training position, the vocabularies and the resolved
config — so loading one never runs code, and a file needing pickle code is refused.

Every failure is one line that says whose it is: the file's (truncated, corrupted, code
inside, an entry edited by hand: :func:`load_checkpoint` reads the file on the CPU first and
checks every entry, :func:`check_payload`, so only the file can fail there), the device's
(not visible, out of memory: moving the loaded tensors there), the disk's (no space,
read-only: :func:`save_checkpoint`, which leaves no temporary behind) or the run's (weights
that do not fit the stored model spec: :func:`model_from_checkpoint` names the tensor and
both shapes).
"""

from __future__ import annotations

import contextlib
import math
import os
import pickle
import zipfile
from collections.abc import Mapping
from dataclasses import MISSING, dataclass, field, fields
from pathlib import Path
from typing import Any

import torch

from seq2seq.choices import ModelKind
from seq2seq.data.config import DataConfig
from seq2seq.data.vocab import Vocab
from seq2seq.errors import UserError
from seq2seq.files import writing
from seq2seq.model import ModelSpec
from seq2seq.model.encoder import rename_one_gru_weights
from seq2seq.model.memory import (
    GIB,
    INFERENCE_BYTES_PER_PARAMETER,
    available_memory,
    memory_needed,
    meta_network,
)
from seq2seq.model.networks import Network, build_network
from seq2seq.records import RecordError, from_plain
from seq2seq.runtime import resolve_device

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
    # older checkpoints' record of the tanh form ({"tanh": ...}); it is model_spec["tanh"] now
    numerics: dict[str, Any] = field(default_factory=dict)

    @property
    def spec(self) -> ModelSpec:
        """The stored model spec (older checkpoints' tanh form taken from ``numerics``)."""
        return ModelSpec.from_dict(self.model_spec, self.numerics.get("tanh"))

    @property
    def step(self) -> int:
        """The training step it was written at (``state.step``)."""
        return self.state.get("step", 0)

    def to_dict(self) -> dict[str, Any]:
        """The file's content (shallow: tensors are not copied)."""
        return {
            "format_version": FORMAT_VERSION,
            **{f.name: getattr(self, f.name) for f in fields(self)},
        }

    @classmethod
    def from_dict(cls, payload: dict[str, Any]) -> Checkpoint:
        """The inverse of :meth:`to_dict`; extra keys are ignored, optional ones (added
        later, with a default) may be missing, and an earlier encoder's weight names are
        today's (:func:`~seq2seq.model.encoder.rename_one_gru_weights`)."""
        checkpoint = cls(**{f.name: payload[f.name] for f in fields(cls) if f.name in payload})
        checkpoint.model = rename_one_gru_weights(checkpoint.model)
        return checkpoint


# Entries every checkpoint holds (the fields without a default).
REQUIRED_KEYS = tuple(
    f.name for f in fields(Checkpoint) if f.default is MISSING and f.default_factory is MISSING
)


def save_checkpoint(path: str | Path, checkpoint: Checkpoint) -> None:
    """Write ``checkpoint`` to ``path`` atomically: a temporary file, fsync, then rename.

    A crash at any moment leaves either the previous file or the new complete one. A save
    that cannot write (no space left, a read-only folder) is a one-line
    :class:`~seq2seq.errors.WriteError`; it leaves the previous file and no temporary.
    """
    path = Path(path)
    tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
    with writing(path):
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            with open(tmp, "wb") as handle:
                torch.save(checkpoint.to_dict(), handle)
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(tmp, path)
        except RuntimeError as err:  # torch's writer wraps the OSError that says why
            cause = _os_error_behind(err)
            if cause is None:
                raise
            raise cause from err
        finally:
            with contextlib.suppress(OSError):
                tmp.unlink(missing_ok=True)
        for stale in path.parent.glob(f".{path.name}.tmp*"):  # left by a process killed mid-save
            stale.unlink(missing_ok=True)
        directory = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(directory)
        finally:
            os.close(directory)


def _os_error_behind(err: BaseException) -> OSError | None:
    """The ``OSError`` in ``err``'s chain (its cause or context), if any."""
    seen: BaseException | None = err
    while seen is not None:
        if isinstance(seen, OSError):
            return seen
        seen = seen.__cause__ or seen.__context__
    return None


def load_checkpoint(
    path: str | Path, map_location: str | torch.device = "cpu", purpose: str = "load"
) -> Checkpoint:
    """Load with ``weights_only=True``; every failure becomes a one-line :class:`UserError`
    whose advice fits the ``purpose`` (``"load"``: evaluate or translate; ``"resume"``).

    The file is read on the CPU, then its tensors are moved to ``map_location`` (RNG states
    stay on the CPU, where generators keep them): a device that is unknown, not visible or
    out of memory is reported as such, never as a damaged file.
    """
    path = Path(path)
    device = resolve_device(str(map_location))
    if not path.is_file():
        raise UserError(f"checkpoint {path} does not exist; check the run folder")
    advice = _ADVICE[purpose]
    damaged = f"checkpoint {path} is truncated or corrupted ({{}}); {advice}"
    with open(path, "rb") as handle:
        is_zip = handle.read(4) == b"PK\x03\x04"
    if is_zip:  # what torch.save writes; other files go to torch.load's legacy reader
        _check_archive(path, damaged)
    try:
        payload = torch.load(path, map_location="cpu", weights_only=True)
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
    try:
        check_payload(payload)
    except RecordError as err:
        raise bad_checkpoint(path, err, purpose) from None
    if device.type != "cpu":
        try:
            payload = {k: v if k == "rng" else _on_device(v, device) for k, v in payload.items()}
        except (RuntimeError, MemoryError) as err:  # e.g. torch.OutOfMemoryError
            raise UserError(
                f"checkpoint {path} is intact but cannot be moved to {device} "
                f"({_first_line(err)}); use another device (e.g. device=cpu)"
            ) from None
    return Checkpoint.from_dict(payload)


def check_payload(payload: Mapping[str, Any]) -> None:
    """Check each entry of a loaded file against the checkpoint format before anything is
    built from it: every field's type (:func:`seq2seq.records.from_plain`),
    the model spec's fields and values (:meth:`ModelSpec.from_dict`), the vocabularies, the
    ``data`` section inference reads, the training step, and that the model the spec describes
    fits this machine's memory (counted without allocating it, :mod:`seq2seq.model.memory`).

    Raises :class:`~seq2seq.records.RecordError` naming the first entry that does not fit
    (``'model_spec.hidden_size' should be positive, got -4``).
    """
    checkpoint = from_plain(Checkpoint, payload)
    spec = checkpoint.spec
    if checkpoint.max_src_len < 1:
        raise RecordError("max_src_len", f"should be positive, got {checkpoint.max_src_len}")
    step = checkpoint.step
    if isinstance(step, bool) or not isinstance(step, int) or step < 0:
        raise RecordError("state.step", f"should be a whole number, got {step!r:.60}")
    for side in ("src", "tgt"):
        try:
            Vocab.from_dict(checkpoint.vocab[side])
        except (KeyError, TypeError, ValueError, RuntimeError) as err:  # sentencepiece: Runtime
            problem = f"is not a vocabulary ({_first_line(err)})"
            raise RecordError(f"vocab.{side}", problem) from None
    data = checkpoint.config.get("data")
    if not isinstance(data, Mapping):
        problem = "is missing" if data is None else f"should be an object, got {data!r:.60}"
        raise RecordError("config.data", problem)
    try:
        DataConfig.from_plain(data, seed=checkpoint.config.get("seed"), key="config.data")
    except UserError as err:  # a value its own checks refuse, e.g. data.min_len above max_len
        raise RecordError("config.data", f"does not fit ({err})") from None
    _check_builds_and_fits(spec)


def _check_builds_and_fits(spec: ModelSpec) -> None:
    """Refuse a spec whose model does not build (heads that do not divide the key size) or
    that this machine cannot hold (its weights only: nothing is trained), before a single
    weight is allocated; where the available memory is unknown, only the first."""
    available = available_memory()
    try:
        parameters, needed = memory_needed(
            spec, INFERENCE_BYTES_PER_PARAMETER, math.inf if available is None else available
        )
    except ValueError as err:
        raise RecordError(
            "model_spec", f"does not describe a model this version builds ({err})"
        ) from None
    if available is not None and needed > available:
        sizes = f"hidden_size={spec.hidden_size}, embed_size={spec.embed_size}"
        if spec.kind == ModelKind.transformer:
            sizes += f", max_positions={spec.max_positions}"
        made = "position tables" if parameters is None else f"{parameters:,} parameters"
        raise RecordError(
            "model_spec",
            f"({sizes}) describes a model of {made}, about {needed / GIB:.1f} GiB of weights; "
            f"this machine has {available / GIB:.1f} GiB available",
        )


#: What to do with a checkpoint that cannot serve, by what it was loaded for.
_ADVICE = {
    "load": "use another checkpoint (e.g. --checkpoint last.pt) or retrain",
    "resume": "resume cannot continue from it: train into a new folder (hydra.run.dir=...); "
    "best.pt still serves evaluate.py and translate.py",
}


def bad_checkpoint(path: str | Path, err: RecordError, purpose: str = "load") -> UserError:
    """The one line for a checkpoint entry that does not fit the format: the file, the entry
    and what is wrong (``err``), and what to do for the ``purpose`` it was loaded for."""
    return UserError(f"checkpoint {path}: {err}; {_ADVICE[purpose]}")


def _on_device(value: Any, device: torch.device) -> Any:
    """``value`` with every tensor in it (nested dicts, lists, tuples) moved to ``device``."""
    if isinstance(value, torch.Tensor):
        return value.to(device)
    if isinstance(value, Mapping):
        return {k: _on_device(v, device) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(_on_device(v, device) for v in value)
    return value


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
    checkpoint: Checkpoint, device: str | torch.device = "cpu", source: str = "checkpoint"
) -> tuple[Network, Vocab, Vocab]:
    """Rebuild the model and its vocabularies; mismatches are a :class:`UserError` that names
    ``source`` (e.g. ``checkpoint runs/x/checkpoints/best.pt``). The stored weights are
    compared with the shapes of the model the spec describes before that model is built."""
    try:
        spec = checkpoint.spec
        src_vocab = Vocab.from_dict(checkpoint.vocab["src"])
        tgt_vocab = Vocab.from_dict(checkpoint.vocab["tgt"])
    except (KeyError, TypeError, ValueError) as err:
        raise UserError(
            f"{source} is inconsistent: unreadable model spec or vocabularies ({err!r:.160})"
        ) from None
    if (len(src_vocab), len(tgt_vocab)) != (spec.src_vocab_size, spec.tgt_vocab_size):
        raise UserError(f"{source} is inconsistent: its vocabularies do not fit its model")
    stored_kind = weights_kind(checkpoint.model)
    if stored_kind != spec.kind:
        raise UserError(
            f"{source} is inconsistent: its weights are a model.kind={stored_kind} network's "
            f"but its model_spec says model.kind={spec.kind}; use another checkpoint or retrain"
        )
    misfits = weight_misfits(meta_network(spec).state_dict(), checkpoint.model)
    if misfits:
        more = f" (and {len(misfits) - 1} more)" if len(misfits) > 1 else ""
        raise UserError(
            f"{source}: its weights do not fit its model config: {misfits[0]}{more}; its "
            "model_spec and weights come from different models: use another checkpoint or retrain"
        )
    model = build_network(spec)
    model.load_state_dict(checkpoint.model)
    return model.to(device), src_vocab, tgt_vocab


def weights_kind(stored: Mapping[str, Any]) -> str:
    """Which network stored weights belong to: a Transformer's have decoder layers."""
    is_transformer = any(name.startswith("decoder.layers.") for name in stored)
    return ModelKind.transformer.value if is_transformer else ModelKind.rnn.value


def weight_misfits(expected: Mapping[str, torch.Tensor], stored: Mapping[str, Any]) -> list[str]:
    """What keeps ``stored`` weights from loading into a model whose state is ``expected``:
    ``"decoder.out.weight is 25×16 in the checkpoint but 25×32 in the model its spec
    describes"``, missing and unexpected tensors; empty when they fit."""
    misfits = []
    for name, tensor in expected.items():
        if name not in stored:
            misfits.append(f"{name} is missing from the checkpoint")
        elif not isinstance(stored[name], torch.Tensor):
            misfits.append(f"{name} is not a tensor in the checkpoint")
        elif stored[name].shape != tensor.shape:
            misfits.append(
                f"{name} is {_shape(stored[name])} in the checkpoint but {_shape(tensor)} "
                "in the model its spec describes"
            )
    misfits += [f"the checkpoint has {name}, which the model has not" for name in stored
                if name not in expected]  # fmt: skip
    return misfits


def _shape(tensor: torch.Tensor) -> str:
    return "×".join(map(str, tensor.shape)) or "a scalar"
