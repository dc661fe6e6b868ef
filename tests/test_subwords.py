"""Subwords (data.tgt_subwords for English, data.src_subwords for Chinese): trained on train
only, carried by the vocabulary, joined back into text for BLEU and for translate.py."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest
import torch

from seq2seq.data.batching import ParallelDataset
from seq2seq.data.loading import load_corpus, load_splits
from seq2seq.data.subwords import MODEL_FILE, SOURCE_MODEL_FILE, Subwords
from seq2seq.data.vocab import Vocab
from seq2seq.errors import UserError
from seq2seq.evaluation import scoring
from seq2seq.evaluation.inference import TrainedRun
from seq2seq.model.checkpoint import load_checkpoint
from tests.helpers.config import small_data, tatoeba_data
from tests.helpers.runs import run_script

ENGLISH = [
    "Tom is waiting for his daughters.",
    "Mary waited for her son.",
    "They are waiting outside, aren't they?",
    "I'll wait here until 7:45.",
] * 20


def corpus_file(tmp_path, n: int = 80):
    """A Tatoeba-format file of ``n`` distinct pairs with varied English."""
    digits = "零一二三四五六七八九"
    lines = []
    for k in range(n):
        english = f"{ENGLISH[k % 4][:-1]} (no. {k}){ENGLISH[k % 4][-1]}"
        lines.append(f"{english}\t第{digits[k // 10]}{digits[k % 10]}号。\tCC\n")
    path = tmp_path / "c.txt"
    path.write_text("".join(lines), encoding="utf-8")
    return path


def test_training_is_deterministic_and_segmentation_round_trips():
    first, second = Subwords.train(ENGLISH, 40), Subwords.train(ENGLISH, 40)
    assert first.model == second.model and first == second
    assert 8 <= len(first) <= 40
    for sentence in ENGLISH[:4]:
        pieces = first.segment(sentence)
        assert len(pieces) > len(sentence.split())  # small vocabulary: words are split
        assert first.join(pieces) == sentence


def test_nothing_to_learn_from_is_a_user_error():
    with pytest.raises(UserError, match="no text to learn from"):
        Subwords.train(["", "  "], 40)


def test_fewer_pieces_than_characters_is_a_user_error_naming_the_least_size():
    with pytest.raises(UserError, match=r"data.src_subwords=8 .* at least 13$"):
        Subwords.train(["我爱中国你好世界天气很好"] * 5, 8, "data.src_subwords")


def test_corpus_targets_become_pieces_of_a_model_trained_on_train_only(tmp_path):
    data = tatoeba_data(path=str(corpus_file(tmp_path)), valid_size=8, test_size=8)
    data.tgt_subwords = 60
    corpus = load_corpus(data)
    subwords = corpus.tgt_vocab.subwords
    assert subwords is not None
    train_text = [p.tgt_raw.text.lower() for p in load_splits(data)["train"]]
    assert subwords == Subwords.train(train_text, 60)  # the train split, lowercased, alone
    for pair in corpus.test:
        assert pair.tgt == subwords.segment(pair.tgt_raw.text.lower())
        assert subwords.join(pair.tgt) == pair.tgt_raw.text.lower()
    pieces = {piece for p in corpus.train for piece in p.tgt}
    assert set(corpus.tgt_vocab.itos[4:]) == pieces  # every piece kept (no min_freq cut)


def test_corpus_sources_become_pieces_of_a_model_trained_on_train_only(tmp_path):
    data = tatoeba_data(path=str(corpus_file(tmp_path)), valid_size=8, test_size=8)
    data.src_subwords = 16
    corpus = load_corpus(data)
    subwords = corpus.src_vocab.subwords
    assert subwords is not None and corpus.tgt_vocab.subwords is None
    chars = load_splits(data)  # character-level Chinese, joined without spaces
    train_text = ["".join(p.src) for p in chars["train"]]
    assert subwords == Subwords.train(train_text, 16)
    for plain, pair in zip(chars["test"], corpus.test, strict=True):
        assert pair.src == subwords.segment("".join(plain.src))
        assert pair.tgt == plain.tgt  # English untouched
    assert any(len(piece.lstrip("▁")) > 1 for p in corpus.train for piece in p.src)
    pieces = {piece for p in corpus.train for piece in p.src}
    assert set(corpus.src_vocab.itos[4:]) == pieces
    assert load_corpus(data).src_vocab == corpus.src_vocab  # deterministic


def test_the_vocabulary_carries_the_model_through_plain_data(tmp_path):
    subwords = Subwords.train(ENGLISH, 40)
    vocab = Vocab.build([subwords.segment(s) for s in ENGLISH], 1, subwords)
    plain = json.loads(json.dumps(vocab.to_dict()))  # JSON-able, so weights_only-safe
    again = Vocab.from_dict(plain)
    assert again == vocab and again.subwords == subwords
    assert Vocab.from_dict({"tokens": plain["tokens"]}) != vocab  # a word vocabulary differs
    assert Vocab.from_dict({"tokens": plain["tokens"]}).subwords is None


def test_bleu_joins_pieces_and_scores_against_the_original_sentences(tmp_path, monkeypatch):
    data = tatoeba_data(path=str(corpus_file(tmp_path)), valid_size=8, test_size=8)
    data.tgt_subwords = 60
    corpus = load_corpus(data)
    dataset = ParallelDataset(corpus.test, corpus.src_vocab, corpus.tgt_vocab)
    scored = scoring.bleu_inputs(
        [list(p.tgt) for p in corpus.test], corpus.test, corpus.tgt_vocab.subwords
    )
    assert scored.tokenize == "13a"
    assert scored.hypotheses == [p.tgt_raw.text.lower() for p in corpus.test]
    assert scored.references == [p.tgt_raw.text for p in corpus.test]
    monkeypatch.setattr(
        scoring, "translate_dataset", lambda *a, **k: [list(p.tgt) for p in corpus.test]
    )
    monkeypatch.setattr(scoring, "validation_loss_sum", lambda *a, **k: (0.0, 1))
    scores = scoring.evaluate(
        None, dataset, corpus.tgt_vocab, batch_size=4, device=torch.device("cpu"), full=False
    ).scores
    assert scores.bleu == pytest.approx(100.0) and scores.exact_match == 1.0


@pytest.mark.parametrize("option", ["tgt_subwords", "src_subwords"])
def test_corpora_with_word_alignments_stay_word_level(tmp_path, option):
    with pytest.raises(UserError, match="synthetic one is scored and aligned word by word"):
        load_corpus(replace(small_data(tmp_path / "s"), **{option: 50}))
    own = tmp_path / "own"
    own.mkdir()
    for split in ("train", "valid", "test"):
        (own / f"{split}.tsv").write_text("我 爱 你\tI love you.\t0-0 1-1 2-2\n", encoding="utf-8")
    aligned = replace(small_data(own), synthetic=False, **{option: 50})
    with pytest.raises(UserError, match=f"data.{option}: .*alignment_column=null"):
        load_corpus(aligned)
    corpus = load_corpus(replace(aligned, alignment_column=None))
    vocab = corpus.tgt_vocab if option == "tgt_subwords" else corpus.src_vocab
    assert vocab.subwords is not None


def test_train_translate_and_evaluate_a_subword_run(tmp_path):
    """The real entry points, subwords on both sides: each model is saved in the run and in
    the checkpoint; translate cuts the Chinese into the run's pieces and prints joined English
    (no ``▁``); evaluate re-segments the split with the run's models."""
    run_dir = tmp_path / "run"
    result = run_script(
        "train.py",
        "data=tatoeba",
        f"data.path={corpus_file(tmp_path)}",
        "data.valid_size=8",
        "data.test_size=8",
        "data.tgt_subwords=60",
        "data.src_subwords=16",
        "data.samples=['第一号。']",
        "model.embed_size=16",
        "model.hidden_size=16",
        "train.max_steps=6",
        "train.eval_every=3",
        "train.batch_size=16",
        "train.label_smoothing=0.1",
        "device=cpu",
        f"hydra.run.dir={run_dir}",
    )
    assert result.returncode == 0, result.stderr[-3000:]
    saved = (run_dir / MODEL_FILE).read_bytes()
    payload = load_checkpoint(run_dir / "checkpoints" / "best.pt")
    assert Vocab.from_dict(payload.vocab["tgt"]).subwords == Subwords(saved)
    source_model = Subwords((run_dir / SOURCE_MODEL_FILE).read_bytes())
    assert Vocab.from_dict(payload.vocab["src"]).subwords == source_model
    run = TrainedRun.load(run_dir, "best.pt", device="cpu")
    assert run.tokenize("第一 号。") == source_model.segment("第一号。")
    translated = run_script("translate.py", str(run_dir), "第一号。")
    assert translated.returncode == 0, translated.stderr
    assert translated.stdout.strip() and "▁" not in translated.stdout
    evaluated = run_script("evaluate.py", str(run_dir))
    assert evaluated.returncode == 0, evaluated.stderr
    metrics = json.loads((run_dir / "metrics.json").read_text(encoding="utf-8"))
    assert metrics["test"]["bleu_tokenize"] == "13a"
    assert evaluated.stdout.count("\n") > 1  # the scores of the re-segmented split


def test_label_smoothing_changes_the_training_loss_only():
    logits = torch.randn(2, 3, 7)
    target = torch.tensor([[4, 5, 0], [6, 0, 0]])  # 0 = <pad>
    plain = scoring.sequence_loss(logits, target)
    smoothed = scoring.sequence_loss(logits, target, label_smoothing=0.1)
    assert smoothed != plain
    mask = target != 0
    log_probs = logits.log_softmax(-1)[mask]
    nll = -log_probs.gather(1, target[mask][:, None]).mean()
    expected = 0.9 * nll + 0.1 * -log_probs.mean()
    assert torch.allclose(smoothed, expected) and torch.allclose(plain, nll)
