"""scripts/train.py with bad input: one clear line, a non-zero exit, nothing written or lost."""

from __future__ import annotations

import pytest

from tests.helpers.bad_input import (
    Case,
    Outcome,
    check_fails_cleanly,
    check_shows_traceback,
    corpus_with,
    hand_edited,
    last_good_checkpoint_loads,
    no_sweep_folder,
    non_finite_run,
    other_vocabulary,
    outcomes_fixture,
    resume,
    run_copy,
    scramble,
    train,
    truncate,
    user_folders,
    user_folders_kept,
)
from tests.helpers.runs import TINY_TRANSFORMER

TRAIN_CASES = [
    Case("unknown-attention", "train.py", train("attention=addtive"),
         ("Could not find 'attention/addtive'", "additive"), code=1),
    Case("unknown-key", "train.py", train("train.bach_size=8"), ("bach_size",), code=1),
    Case("wrong-type", "train.py", train("train.lr=abc"), ("train.lr", "abc"), code=1),
    Case("negative-hidden-size", "train.py", train("model.hidden_size=-1"),
         ("model.hidden_size must be positive", "-1")),
    Case("zero-batch-size", "train.py", train("train.batch_size=0"),
         ("train.batch_size must be at least 1",)),
    Case("heads-do-not-divide", "train.py", train("attention=multihead", "attention.num_heads=3"),
         ("attention.num_heads=3", "must divide")),
    Case("zero-lr", "train.py", train("train.lr=0"), ("train.lr must be positive",)),
    Case("adam-beta2-of-one", "train.py", train("train.adam_beta2=1"),
         ("train.adam_beta2 must be in [0, 1)", "1.0")),
    Case("transformer-without-attention", "train.py", train("model=transformer", "attention=none"),
         ("attention=none does not apply to model=transformer", "attention=multihead")),
    Case("transformer-additive", "train.py",
         train("model=transformer", "attention=additive"),
         ("attention=additive does not apply to model=transformer",)),
    Case("transformer-heads-do-not-divide", "train.py",
         train("model=transformer", "attention.num_heads=3"),
         ("attention.num_heads=3 must divide the Transformer's model.hidden_size=16",
          "e.g. 2")),
    Case("transformer-rnn-decoder", "train.py", train("model=transformer", "model.decoder=luong"),
         ("model.decoder=luong is an RNN decoder arrangement", "drop model.decoder")),
    Case("transformer-scheduled-sampling", "train.py",
         train("model=transformer", "train.teacher_forcing=0.5"),
         ("train.teacher_forcing=0.5", "full teacher forcing")),
    Case("transformer-alignment-layer", "train.py",
         train("model=transformer", "model.alignment_layer=2"),
         ("model.alignment_layer=2 is not a layer of the 2 decoder layers", "-1")),
    Case("transformer-position-table", "train.py",
         train("model=transformer", "model.max_positions=8"),
         ("a sentence of 12 tokens", "model.max_positions=8", "model.max_positions=13")),
    Case("missing-data-folder", "train.py", train("data.dir=/nonexistent/corpus"),
         ("/nonexistent/corpus", "does not exist", "data.dir")),
    Case("empty-corpus", "train.py", train(), ("train split", "is empty"),
         prepare=corpus_with("train", 0, None)),
    Case("missing-column", "train.py", train(), ("valid.tsv:3:", "columns"),
         prepare=corpus_with("valid", 3, "我 爱 中国 I love China".encode())),
    Case("bad-alignment", "train.py", train(), ("test.tsv:2:", "'1-x'"),
         prepare=corpus_with("test", 2, "我 爱\tI love\t0-0 1-x".encode())),
    Case("alignment-out-of-range", "train.py", train(), ("train.tsv:5:", "'2-1'", "out of range"),
         prepare=corpus_with("train", 5, "我 爱\tI love\t0-0 2-1".encode())),
    Case("not-utf8", "train.py", train(), ("train.tsv:4:", "UTF-8"),
         prepare=corpus_with("train", 4, "我 爱\tI love".encode("gb18030"))),
    Case("resume-without-checkpoint", "train.py", train("resume=true"),
         ("resume=true", "last.pt does not exist")),
    Case("resume-truncated", "train.py", resume(), ("last.pt", "truncated or corrupted"),
         prepare=run_copy("last.pt", truncate)),
    Case("resume-corrupted", "train.py", resume(), ("last.pt", "corrupted"),
         prepare=run_copy("last.pt", scramble)),
    Case("resume-other-model-config", "train.py", resume("model.hidden_size=32"),
         ("cannot resume", "model"), prepare=run_copy()),
    Case("resume-as-transformer", "train.py", resume(*TINY_TRANSFORMER),
         ("cannot resume: the checkpoint holds a model.kind=rnn network, not a transformer one",),
         prepare=run_copy()),
    Case("resume-other-vocabulary", "train.py", resume(), ("cannot resume", "vocabulary"),
         prepare=other_vocabulary),
    Case("non-finite-loss", "train.py",
         train("data.samples=[]", "train.lr=1e36", "train.clip_grad_norm=0", "train.eval_every=1",
               "train.max_steps=6", "train.num_threads=1", run="{nan_run}"),
         ("loss became", "train.lr"),
         prepare=non_finite_run, check=last_good_checkpoint_loads),
    Case("negative-column", "train.py", train("data.src_column=-1"),
         ("data.src_column must not be negative, got -1",)),
    Case("one-column-twice", "train.py", train("data.alignment_column=1"),
         ("data.tgt_column and data.alignment_column are both column 1",)),
    Case("unreachable-exact-match", "train.py", train("train.stop_at_exact_match=5"),
         ("train.stop_at_exact_match must be in [0, 1] or null (off), got 5",)),
    Case("more-threads-than-cores", "train.py", train("train.num_threads=1000"),
         ("train.num_threads=1000 is more than the", "CPU core")),
    Case("unknown-device", "train.py", train("device=tpu"),
         ("device=tpu is unknown; use auto, cpu, cuda, cuda:N or mps",)),
    Case("absent-gpu", "train.py", train("device=cuda:5"), ("device=cuda:5 but", "CUDA GPU")),
    Case("more-processes-than-cores", "train.py", train("train.processes=1000"),
         ("train.processes=1000 is more than the", "CPU core", "auto = one per core")),
    Case("typo-added-with-plus", "train.py", train("+train.max_step=3"),
         ("train.max_step is not an option; did you mean train.max_steps?", "--help")),
    Case("unknown-key-added-with-plus", "train.py", train("+model.hiden_size=8"),
         ("model.hiden_size is not an option; did you mean model.hidden_size?",)),
    Case("unknown-tanh-form", "train.py", train("model.tanh=Tanh"),
         ("Invalid value 'Tanh', expected one of [auto, tanh, sigmoid]",), code=1),
    Case("resume-other-tanh-form", "train.py", resume("model.tanh=sigmoid"),
         ("cannot resume", "model.tanh is 'tanh' in the checkpoint, 'sigmoid' now"),
         prepare=run_copy()),
    *[Case(f"resume-hand-edited-{key}", "train.py", resume(),
           ("checkpoints/last.pt: ", says, "resume cannot continue from it"),
           prepare=run_copy("last.pt", hand_edited(key, value)))
      for key, value, says in (
          ("state.step", "abc", "'state.step' should be a whole number, got 'abc'"),
          ("state.history", [5], "'state.history' should be a list of objects with step, "),
          ("model_spec.attention", "evil", "'model_spec.attention' should be one of none, "),
      )],
    Case("refused-in-a-folder-the-user-made", "train.py",
         train("model=transformer", "attention=none", run="{mine}"),
         ("attention=none does not apply to model=transformer",),
         prepare=user_folders, check=user_folders_kept),
    Case("refused-through-a-link-to-a-user-folder", "train.py",
         train("model=transformer", "attention=none", run="{link}"),
         ("attention=none does not apply to model=transformer",),
         prepare=user_folders, check=user_folders_kept),
    Case("run-folder-is-a-file", "train.py", train(run="{file}"),
         ("hydra.run.dir=", "/file is a file, not a folder", "choose a folder"),
         prepare=user_folders, check=user_folders_kept),
    Case("run-folder-inside-a-file", "train.py", train(run="{file}/run"),
         ("hydra.run.dir=", "/file is a file, not a folder"),
         prepare=user_folders, check=user_folders_kept),
    Case("sweep-folder-is-a-file", "train.py",
         ("-m", *train("seed=0,1", "hydra.sweep.dir={file}")),
         ("hydra.sweep.dir=", "/file is a file, not a folder"),
         prepare=user_folders, check=user_folders_kept),
    Case("sweep-with-a-bad-job", "train.py",
         ("-m", *train("attention=none,multihead,dot", "attention.num_heads=3",
                       "hydra.sweep.dir={tmp}/sweep", "hydra.launcher.n_jobs=1")),
         ("the sweep's job 2 of 3 (attention=multihead)", "attention.num_heads=3 must divide",
          "no job was started"),
         check=no_sweep_folder),
    Case("sweep-with-an-unknown-choice", "train.py",
         ("-m", *train("attention=none,addtive", "hydra.sweep.dir={tmp}/sweep")),
         ("the sweep's job 2 of 2 (attention=addtive)", "Could not find 'attention/addtive'"),
         check=no_sweep_folder),
    Case("cfg-of-an-invalid-config", "train.py", ("--cfg", "job", *train("model.hidden_size=-1")),
         ("model.hidden_size must be positive", "-1")),
    Case("cfg-of-a-sweep", "train.py", ("--cfg", "job", "-m", *train("attention=none,additive")),
         ("--cfg shows the config of one run", "drop -m")),
    Case("rank-not-a-number", "train.py", train(), ("RANK='abc' is not a whole number",
         "torchrun sets RANK"), env={"RANK": "abc"}),
    Case("empty-world-size", "train.py", train(), ("WORLD_SIZE='' is not a whole number",),
         env={"WORLD_SIZE": ""}),
    Case("world-size-without-torchrun", "train.py", train(),
         ("WORLD_SIZE=2 makes this process rank 0 of 2, but MASTER_ADDR and MASTER_PORT are "
          "not set",
          "start it with torchrun", "unset WORLD_SIZE"),
         env={"WORLD_SIZE": "2", "RANK": "0"}),
    Case("rank-outside-the-world", "train.py", train(),
         ("RANK=3 is not a rank of WORLD_SIZE=2",),
         env={"WORLD_SIZE": "2", "RANK": "3", "MASTER_ADDR": "localhost", "MASTER_PORT": "1"}),
]  # fmt: skip

MODEL_TOO_LARGE = Case(
    "model-too-large-for-memory", "train.py", train("model.hidden_size=100000"),
    ("model.hidden_size=100000", "GiB for its weights, gradients and optimizer state",
     "lower model.hidden_size or model.embed_size"),
)  # fmt: skip

# An lr past float32's range would overflow Adam's first step: refused in one line by the
# train section's checks (seq2seq/config/schema.py).
LR_OVERFLOW = Case(
    "lr-overflows-float32", "train.py", train("train.lr=1e38", "train.num_threads=1"), ("train.lr",)
)

DEBUG_CASES = [
    Case("train-hydra-full-error", "train.py", train("train.lr=0"),
         ("UserError: train.lr must be positive",), code=1, env={"HYDRA_FULL_ERROR": "1"}),
]  # fmt: skip

CASES = [*TRAIN_CASES, LR_OVERFLOW, MODEL_TOO_LARGE]


outcomes = outcomes_fixture(CASES + DEBUG_CASES)


@pytest.mark.parametrize("case", [pytest.param(c, id=c.id) for c in CASES])
def test_bad_input_fails_cleanly(case: Case, outcomes: dict[str, Outcome]) -> None:
    check_fails_cleanly(case, outcomes[case.id])


@pytest.mark.parametrize("case", [pytest.param(c, id=c.id) for c in DEBUG_CASES])
def test_debug_switch_shows_the_traceback(case: Case, outcomes: dict[str, Outcome]) -> None:
    check_shows_traceback(case, outcomes[case.id])
