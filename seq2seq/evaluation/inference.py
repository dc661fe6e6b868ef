"""Using a trained run: load it, tokenize raw input like its corpus, translate, plot."""

from __future__ import annotations

import unicodedata
import warnings
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np
import torch

from seq2seq.data.batching import ParallelDataset
from seq2seq.data.config import DataConfig
from seq2seq.data.corpus import Pair, join_chinese, tokenize_src
from seq2seq.data.detokenize import join_english
from seq2seq.data.loading import check_same_file, load_splits
from seq2seq.data.segmentation import resegment
from seq2seq.data.vocab import Vocab
from seq2seq.errors import UserError
from seq2seq.evaluation.interventions import Intervention, intervening
from seq2seq.evaluation.run_files import (
    HYDRA_CONFIG,
    MODEL_IDENTITY,
    check_same_model,
    checkpoint_file,
    value_at,
)
from seq2seq.evaluation.summary import METRICS_FILE
from seq2seq.model.checkpoint import load_checkpoint, model_from_checkpoint
from seq2seq.model.networks import Network
from seq2seq.model.search import decode

#: Zero-width characters of typed or pasted text: the zero-width space (U+200B) separates
#: words; the non-joiner, joiner, word joiner and zero-width no-break space (byte-order mark)
#: are not part of any word and are dropped.
ZERO_WIDTH = str.maketrans({"\u200b": " ", "\u200c": None, "\u200d": None, "\u2060": None,
                            "\ufeff": None})  # fmt: skip


def _is_wide(char: str) -> bool:
    """Whether ``char`` is a wide (East Asian) character: Chinese, Japanese, Korean, full-width
    punctuation; each is a word of its own where no known word covers it."""
    return unicodedata.east_asian_width(char) in ("W", "F")


@dataclass
class Translation:
    """One translated sentence: ``output`` the model's tokens (words or subword pieces),
    ``text`` the English sentence they make (detokenized like the run's corpus).

    weights: (heads, T_t, T_s) attention over ``source + <eos>`` for each emitted token
             (``output + <eos>``), or None without attention.
    """

    source: list[str]
    output: list[str]
    unknown: list[str]
    weights: np.ndarray | None
    text: str = ""


@dataclass
class TrainedRun:
    """A run folder's model, vocabularies and config."""

    run_dir: Path
    model: Network
    src_vocab: Vocab
    tgt_vocab: Vocab
    config: dict[str, Any]
    max_src_len: int
    corpus_sha256: str | None = None
    step: int = 0  # the checkpoint's training step

    @classmethod
    def load(
        cls, run_dir: str | Path, checkpoint: str = "best.pt", device: str = "cpu"
    ) -> TrainedRun:
        """The run in ``run_dir`` with its ``checkpoints/<checkpoint>`` on ``device``; a
        checkpoint whose model is not the one the run's ``.hydra/config.yaml`` and
        ``metrics.json`` describe (copied from another run) is refused in one line
        (:func:`~seq2seq.evaluation.run_files.check_same_model`)."""
        run_dir = Path(run_dir)
        path = checkpoint_file(run_dir, checkpoint)
        payload = load_checkpoint(path, map_location=device)
        model, src_vocab, tgt_vocab = model_from_checkpoint(payload, device, f"checkpoint {path}")
        check_same_model(
            run_dir,
            path,
            {
                HYDRA_CONFIG: {key: value_at(payload.config, key) for key in MODEL_IDENTITY},
                METRICS_FILE: {  # as training's run_summary records them
                    "attention": payload.spec.attention,
                    "num_heads": model.attention.num_heads,
                    "decoder": model.decoder.arrangement,
                },
            },
        )
        model.eval()
        return cls(
            run_dir,
            model,
            src_vocab,
            tgt_vocab,
            payload.config,
            payload.max_src_len,
            payload.corpus_sha256,
            payload.step,
        )

    @property
    def data(self) -> DataConfig:
        """The run's ``data`` section, from the checkpoint's stored config (plain data, read
        as it is: resolving it again would expand a crafted ``${oc.env:...}``)."""
        return DataConfig.from_plain(self.config["data"], seed=self.config.get("seed"))

    @property
    def split_punct(self) -> bool:
        """Whether the run's corpus detached English punctuation (undone in the output)."""
        return self.data.split_tgt_punct

    @property
    def input_limit(self) -> int:
        """Longest accepted input: twice the longest training source (and no longer than a
        Transformer's position table)."""
        limit = 2 * self.max_src_len
        table = self.model.max_source_length
        return limit if table is None else min(limit, table)

    def tokenize(self, text: str) -> list[str]:
        """Tokenize like the run's corpus, after :data:`ZERO_WIDTH` characters are read as
        what they are (a zero-width space separates words; the joiners join). In a word-level
        run, unsegmented Chinese is cut into known words by greedy longest match (``我爱中国``
        -> ``我 爱 中国``, :meth:`_segment`); a run with Chinese subwords cuts the sentence into
        its model's pieces."""
        text = text.translate(ZERO_WIDTH)
        char_level = self.data.char_level_src
        if self.src_vocab.subwords is not None:
            tokens = list(tokenize_src(text, char_level=char_level))
            return self.src_vocab.subwords.segment(join_chinese(tokens, char_level))
        if char_level:
            return list(tokenize_src(text, char_level=True))
        tokens: list[str] = []
        for token in text.split():
            tokens += [token] if self.src_vocab.knows(token) else self._segment(token)
        return tokens

    def _segment(self, chunk: str) -> list[str]:
        """``chunk`` (a word not in the vocabulary, or a sentence typed without spaces) cut
        into the vocabulary's words by greedy longest match. What no word covers becomes
        pieces of its own, each one unknown word: a wide (Chinese) character alone, a run of
        other letters and digits together (``NASA``), any other character alone. A chunk in
        which no word is found stays whole, one unknown word as typed."""
        pieces: list[str] = []
        start, found = 0, False
        while start < len(chunk):
            end = self._known_end(chunk, start)
            found = found or end is not None
            if end is None:
                end = start + 1
                if not _is_wide(chunk[start]) and chunk[start].isalnum():
                    while (
                        end < len(chunk)
                        and chunk[end].isalnum()
                        and not _is_wide(chunk[end])
                        and self._known_end(chunk, end) is None
                    ):
                        end += 1
            pieces.append(chunk[start:end])
            start = end
        return pieces if found else [chunk]

    def _known_end(self, chunk: str, start: int) -> int | None:
        """Where the longest vocabulary word starting at ``chunk[start]`` ends, if any."""
        longest = min(len(chunk), start + self._longest_word)
        return next(
            (end for end in range(longest, start, -1) if self.src_vocab.knows(chunk[start:end])),
            None,
        )

    @cached_property
    def _longest_word(self) -> int:
        return max(map(len, self.src_vocab.itos))

    def check_source(self, source: list[str], text: str) -> None:
        """Refuse a sentence this model cannot take: no tokens, or more than :attr:`input_limit`."""
        if not source:
            raise UserError("empty input: give a Chinese sentence to translate")
        if len(source) > self.input_limit:
            raise UserError(
                f"input of {len(source)} tokens is longer than this model's limit of "
                f"{self.input_limit}; split it into shorter sentences ({text[:30]}...)"
            )

    def translate(
        self,
        texts: list[str],
        beam_size: int = 1,
        alpha: float = 0.6,
        intervention: Intervention | None = None,
    ) -> list[Translation]:
        """Translate raw sentences (one batch); warns about words mapped to ``<unk>``."""
        sources = [self.tokenize(text) for text in texts]
        for text, source in zip(texts, sources, strict=True):
            self.check_source(source, text)
        for source in sources:
            if words := self.src_vocab.unknown(source):
                warnings.warn(f"unknown words mapped to <unk>: {' '.join(words)}", stacklevel=2)
        return self.translate_tokens(sources, beam_size, alpha, intervention)

    def translate_tokens(
        self,
        sources: list[list[str]],
        beam_size: int = 1,
        alpha: float = 0.6,
        intervention: Intervention | None = None,
    ) -> list[Translation]:
        """Translate tokenized sentences (checked by :meth:`check_source`) in one batch, with
        the model's attention replaced by ``intervention`` if one is given (a free-running
        one: :mod:`seq2seq.evaluation.interventions`)."""
        if intervention is not None and not intervention.free_running:
            raise UserError(
                f"intervention {intervention.name} exists along a reference translation only; "
                "a sentence of your own has none: use uniform, shuffle, argmax or a head"
            )
        dataset = ParallelDataset(
            [Pair(tuple(s), ()) for s in sources], self.src_vocab, self.tgt_vocab
        )
        device = next(self.model.parameters()).device
        batch = dataset.collate(range(len(dataset))).to(device)
        with torch.no_grad(), intervening(self.model, intervention):
            output = decode(
                self.model, batch.src, batch.src_lengths, batch.src_mask, beam_size, alpha
            )
        results = []
        for b, source in enumerate(sources):
            length = int(output.lengths[b])
            weights = None
            if output.weights is not None:
                weights = output.weights[b, :, :length, : len(source) + 1].float().cpu().numpy()
            tokens = self.tgt_vocab.decode(output.tokens[b].tolist())
            text = join_english(tokens, self.split_punct, self.tgt_vocab.subwords)
            unknown = self.src_vocab.unknown(source)
            results.append(Translation(source, tokens, unknown, weights, text))
        return results

    def splits(self, data: DataConfig | None = None) -> dict[str, list[Pair]]:
        """The run's corpus splits (from ``data``, default the run's own ``data`` section),
        checked to be the file it was trained on and tokenized like its training input
        (subword pieces where the run used them)."""
        data = data or self.data
        check_same_file(data, self.corpus_sha256)
        subwords = self.src_vocab.subwords, self.tgt_vocab.subwords
        return resegment(load_splits(data), *subwords, data.char_level_src)
