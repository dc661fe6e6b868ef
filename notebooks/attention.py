# ---
# jupyter:
#   jupytext:
#     formats: ipynb,py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
#       format_version: '1.3'
#       jupytext_version: 1.19.6
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Why attention matters in translation — with seq2seq's real modules
#
# This notebook follows the outline of the article this project grew from: each heading carries
# the article's section number and Chinese title beside the English one, so a reader of the
# article finds their place. Everything is computed here, with the package's own modules: the
# models are trained by `seq2seq.training.run.train` (what `scripts/train.py` runs), the
# attention is `seq2seq.model.attention`, the figures are `seq2seq.viz`. Cells that state a fact
# assert it, and every number in the text is printed by a cell above it.
#
# Run it top to bottom after `pip install -e ".[notebook]"` (plain Jupyter or VS Code; nothing is
# downloaded). By default it trains tiny models on a tiny corpus in a few minutes on one CPU
# core; set `FULL = True` below to train the default-size models with the default schedule
# instead (much longer).
#
# The source of this notebook is `notebooks/attention.py` (jupytext percent format); the
# `.ipynb` is generated from it (see `notebooks/README.md`).

# %%
# ruff: noqa: E402 (the switch comes before the imports)
FULL = False  # True: the default-size models, corpus and schedule (for the learner with time)
RUNS_DIR = None  # None: a temporary folder, removed with the kernel; or a folder to keep runs in

# %%
# %matplotlib inline
import warnings

# tqdm (progress bars, off in a notebook) asks for ipywidgets when imported in Jupyter
warnings.filterwarnings("ignore", message="IProgress not found")

import math
import tempfile
import time
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from IPython.display import Image, display
from matplotlib import font_manager
from matplotlib.ft2font import FT2Font

import seq2seq
from seq2seq import extract_attention_weights
from seq2seq.config.compose import load_config
from seq2seq.data.batching import ParallelDataset
from seq2seq.data.corpus import read_tsv
from seq2seq.data.synthetic.generator import has_crossing
from seq2seq.evaluation.alignment_report import alignment_report, format_report
from seq2seq.evaluation.inference import TrainedRun
from seq2seq.evaluation.metrics import attention_entropy
from seq2seq.evaluation.scoring import gold_attention
from seq2seq.model.attention import (
    AdditiveAttention,
    MultiHeadAttention,
    ScaledDotProductAttention,
    masked_softmax,
)
from seq2seq.training.run import train
from seq2seq.viz.charts import plot_lines
from seq2seq.viz.figures import register_cjk_font
from seq2seq.viz.heatmap import plot_attention

torch.set_num_threads(1)
REPO = Path(seq2seq.__file__).resolve().parents[1]  # the checkout (pip install -e .)
_runs = None if RUNS_DIR else tempfile.TemporaryDirectory(prefix="seq2seq-notebook-")
RUNS = Path(RUNS_DIR or _runs.name)
RUNS.mkdir(parents=True, exist_ok=True)
CORPUS = RUNS / "corpus"  # the synthetic corpus is generated here on first use
CPU = torch.device("cpu")

# %% [markdown]
# ## 1 为什么需要注意力机制 · The bottleneck
#
# Without attention (`attention=none`) the encoder squeezes the whole sentence into its final
# state, and the decoder reads that one vector at every step. With attention the decoder looks
# back at every encoder state and takes a weighted average of them at each step. We train both
# on the same small synthetic corpus (generated with its gold word alignments), with the same
# sizes, steps and seed: only the attention differs.
#
# The small setting uses PyTorch's default initialisation (`model.init=pytorch`), the
# plateau schedule (`train.lr_schedule=plateau`) and PyTorch's Adam β₂ of 0.999
# (`train.adam_beta2`): at these tiny sizes and 600 steps we found they leave the initial
# plateau sooner than the package's defaults (xavier, linear warm-up and decay, β₂ 0.99,
# tuned for the default model's 2,500 steps).
# Multi-head attention, trained in section 6, uses Luong's decoder arrangement, in which it
# trains fastest (`docs/model.md`).

# %%
SMALL = [
    "data.train_size=3000",
    "data.valid_size=200",
    "data.test_size=300",
    "data.max_len=30",
    "model.embed_size=32",
    "model.hidden_size=64",
    "model.dropout=0",
    "model.init=pytorch",
    "train.lr_schedule=plateau",
    "train.batch_size=32",
    "train.lr=5e-3",
    "train.adam_beta2=0.999",
    "train.max_steps=600",
    "train.eval_every=300",
    "device=cpu",
]
COMMON = [
    f"data.dir={CORPUS}",
    "train.processes=1",
    "train.num_threads=1",
    *([] if FULL else SMALL),
]


def train_variant(attention, *extra):
    """Train one model through the package, as scripts/train.py does, into a new run folder
    under RUNS; return its summary (what metrics.json holds) and the loaded best checkpoint."""
    cfg = load_config([*COMMON, f"attention={attention}", *extra])
    run_dir = Path(tempfile.mkdtemp(prefix=f"{attention}-", dir=RUNS))
    started = time.perf_counter()
    summary = train(cfg, run_dir)
    seconds = time.perf_counter() - started
    print(
        f"{attention:>9}: {summary.steps} steps of {cfg.train.batch_size} pairs, "
        f"{summary.parameters:,} parameters, {seconds:.0f} s with its evaluations; "
        f"test BLEU {summary.test.bleu:.1f}, exact match {summary.test.exact_match:.3f}"
    )
    return summary, TrainedRun.load(run_dir)


none_summary, _ = train_variant("none")
additive_summary, additive_run = train_variant("additive")
splits = {split: read_tsv(CORPUS / f"{split}.tsv") for split in ("train", "valid", "test")}
print("corpus:", ", ".join(f"{len(pairs)} {split} pairs" for split, pairs in splits.items()))

# %% [markdown]
# Test BLEU per source-length bucket (the test split holds the same number of sentences in
# every bucket):

# %%
by_length = {
    "none": none_summary.test.bleu_by_length,
    "additive": additive_summary.test.bleu_by_length,
}
buckets = list(by_length["none"])
print(f"{'words':>9}" + "".join(f"{b:>8}" for b in buckets))
print(f"{'pairs':>9}" + "".join(f"{additive_summary.test.bucket_sizes[b]:>8}" for b in buckets))
for name, scores in by_length.items():
    print(f"{name:>9}" + "".join(f"{scores[b]:>8.1f}" for b in buckets))
display(
    plot_lines(
        {name: list(scores.items()) for name, scores in by_length.items()},
        xlabel="source length (words)",
        ylabel="test BLEU",
        title=f"this notebook's brief training ({additive_summary.steps} steps)",
    )
)
none_bleu, additive_bleu = by_length["none"], by_length["additive"]
print(
    f"none falls from {none_bleu[buckets[0]]:.1f} ({buckets[0]} words) to "
    f"{none_bleu[buckets[-1]]:.1f} ({buckets[-1]}); additive's lowest bucket is "
    f"{min(additive_bleu.values()):.1f}"
)
assert none_bleu[buckets[0]] > none_bleu[buckets[-1]], "the baseline should fall with length"
assert min(additive_bleu.values()) > max(none_bleu.values()), "attention should win everywhere"

# %% [markdown]
# How high each curve is depends on how long one trains; the shape is the point: the baseline
# falls with length while attention stays high at every length. The **converged picture** is
# the project's canonical comparison (every variant, three seeds, the default sizes), read
# here from its results file, `results/compare.json` (what README's tables are rendered from),
# and `docs/bleu_by_length.png`: not computed in this notebook.


# %%
from seq2seq.analysis.results import load_records

(comparison,) = load_records(REPO / "results" / "compare.json")
variants = {v["variant"]: v for v in comparison.data["variants"]}
canonical = {
    name: {bucket: stat["mean"] for bucket, stat in v["bleu_by_length"].items()}
    for name, v in variants.items()
}
print(f"`{comparison.provenance.command}`: test BLEU by source length, mean over seeds:")
canonical_buckets = list(canonical["none"])
print(f"{'words':>12}" + "".join(f"{b:>8}" for b in canonical_buckets))
for name, scores in canonical.items():
    print(f"{name:>12}" + "".join(f"{scores[b]:>8.1f}" for b in canonical_buckets))
print("\nand overall (mean ± sd over seeds):")
for name, v in variants.items():
    metrics = v["metrics"]
    bleu, exact_match, aer = (metrics[k] for k in ("bleu", "exact_match", "aer"))
    shown_aer = "n/a" if aer["mean"] is None else f"{aer['mean']:.3f} ± {aer['sd']:.3f}"
    print(
        f"{name:>12}  BLEU {bleu['mean']:6.2f} ± {bleu['sd']:.2f}  exact match "
        f"{exact_match['mean']:.3f} ± {exact_match['sd']:.3f}  AER {shown_aer}"
    )
display(Image(filename=str(REPO / "docs" / "bleu_by_length.png"), width=560))
attention_variants = [name for name in canonical if name != "none"]
lowest_attention = min(min(canonical[name].values()) for name in attention_variants)
print(
    f"converged: none falls from {canonical['none'][canonical_buckets[0]]:.1f} to "
    f"{canonical['none'][canonical_buckets[-1]]:.1f}; every attention variant stays at or above "
    f"{lowest_attention:.1f}"
)
assert canonical["none"][canonical_buckets[0]] > canonical["none"][canonical_buckets[-1]]
assert lowest_attention > max(canonical["none"].values())

# %% [markdown]
# ## 2 注意力的三个步骤 · Three steps
#
# Attention is three steps: **score** every source position against the decoder's state,
# turn the scores into weights with a **softmax**, and take the **weighted sum** of the values
# (the encoder states). The article's example translates 我 爱 中国 and gives the scores
# 0.05 (我), 0.1 (爱) and 5.8 (中国) for the step that writes *China*, and then the weights
# 0.05 / 0.1 / 0.8 / 0.05 (with `<eos>`). Those weights are not a softmax of those scores, whatever
# the fourth (`<eos>`) score is: a softmax keeps the ratio of two weights at `e` to the power of
# the difference of their scores, which does not involve the other scores.

# %%
tokens = ["我", "爱", "中国", "<eos>"]
article_scores = [0.05, 0.1, 5.8]  # the article's; its <eos> score is not known
article_weights = torch.tensor([0.05, 0.1, 0.8, 0.05])

softmax_ratio = math.exp(article_scores[1] - article_scores[0])  # w(爱) / w(我)
article_ratio = float(article_weights[1] / article_weights[0])
print(
    f"w(爱)/w(我): a softmax of the scores gives e^({article_scores[1]} - {article_scores[0]}) "
    f"= {softmax_ratio:.3f} for any <eos> score; the article's weights give {article_ratio:.3f}"
)
for eos_score in torch.linspace(-20.0, 20.0, 401):  # every <eos> score, in steps of 0.1
    weights = torch.softmax(torch.tensor([*article_scores, eos_score]), dim=-1)
    assert math.isclose(float(weights[1] / weights[0]), softmax_ratio, rel_tol=1e-4)
assert not math.isclose(article_ratio, softmax_ratio, rel_tol=0.1)

# Scores that do give the article's weights exist (any constant may be added to all of them):
matching_scores = article_weights.log()
assert torch.allclose(torch.softmax(matching_scores, dim=-1), article_weights)
print(
    "scores whose softmax is 0.05 / 0.1 / 0.8 / 0.05:",
    " ".join(f"{t} {s:.2f}" for t, s in zip(tokens, matching_scores.tolist(), strict=True)),
)

# %% [markdown]
# For the worked example we keep the article's three scores and **choose** 0.0 as the `<eos>`
# score. Step 2 is a real softmax (the package's `masked_softmax`, here with every position
# real); step 3 averages the values, one made-up 3-dimensional encoder state per source token.

# %%
EOS_SCORE = 0.0  # our choice
scores = torch.tensor([*article_scores, EOS_SCORE])  # step 1: the scores
weights = masked_softmax(scores, torch.ones(4, dtype=torch.bool))  # step 2: the softmax
values = torch.tensor(  # made-up encoder states h_i, one per source token
    [
        [1.0, 0.0, 0.0],  # 我
        [0.0, 1.0, 0.0],  # 爱
        [0.0, 0.0, 1.0],  # 中国
        [0.5, 0.5, 0.5],  # <eos>
    ]
)
context = (weights[:, None] * values).sum(0)  # step 3: c = Σ_i α_i h_i
for token, score, weight in zip(tokens, scores.tolist(), weights.tolist(), strict=True):
    print(f"{token:>6}  score {score:5.2f}  weight {weight:.4f}")
print("context vector c =", [round(x, 4) for x in context.tolist()])
assert torch.allclose(weights, torch.softmax(scores, dim=-1))
assert math.isclose(float(weights.sum()), 1.0, rel_tol=1e-6)
assert torch.allclose(context, weights @ values)
assert int(weights.argmax()) == tokens.index("中国")
assert (context - values[2]).abs().max() < 0.02  # nearly 中国's own state
print(
    f"中国 takes {float(weights[2]):.1%} of the weight: with a score gap of "
    f"{article_scores[2] - article_scores[1]:.1f} a softmax is nearly one-hot, "
    "and the context is nearly 中国's state"
)

# %% [markdown]
# ## 3 加性注意力与缩放点积注意力 · The formulas
#
# **Additive attention** (Bahdanau et al., 2015) scores source position *i* for decoder state
# *s* as `e_i = v_aᵀ tanh(W_a s + U_a h_i)`; **scaled dot-product attention** as
# `e_i = s·h_i / √d_k`. In both, `α = softmax(e)` over the real source tokens and `c = Σ_i α_i h_i`.
# Below, each is computed by hand from its equation with plain tensor algebra, using the
# parameters of the package's module, and asserted equal to the module (a batch of two, the
# second sentence padded). The dot product is also checked against PyTorch's own
# `torch.nn.functional.scaled_dot_product_attention`.

# %%
torch.manual_seed(0)
B, T_s, D_q, D_k, A = 2, 5, 6, 8, 7  # batch, source positions, query, key, attention sizes
query = torch.randn(B, D_q)  # the decoder state s
keys = torch.randn(B, T_s, D_k)  # the encoder states h_1 ... h_T (also the values)
mask = torch.tensor([[True] * 5, [True, True, True, False, False]])  # True = real token

additive = AdditiveAttention(D_q, D_k, A)  # query and key sizes may differ
W_a, b_a = additive.query_layer.weight, additive.query_layer.bias  # (A, D_q); W_a's bias (A,)
U_a = additive.key_layer.weight  # (A, D_k)
v_a = additive.energy_layer.weight[0]  # (A,)
with torch.no_grad():
    energy = torch.tanh((query @ W_a.T + b_a)[:, None, :] + keys @ U_a.T)  # (B, T_s, A)
    e = energy @ v_a  # (B, T_s): e_i = v_aᵀ tanh(W_a s + U_a h_i)
    alpha = torch.softmax(e.masked_fill(~mask, -math.inf), dim=-1)  # padding gets weight 0
    c = (alpha[:, :, None] * keys).sum(1)  # (B, D_k): c = Σ_i α_i h_i
    module_context, module_weights = additive(query, keys, mask)

print("additive α (second sentence padded):\n", alpha.numpy().round(3))
assert torch.allclose(module_weights[:, 0], alpha, atol=1e-6)  # (B, heads=1, T_s)
assert torch.allclose(module_context, c, atol=1e-6)

# %%
dot = ScaledDotProductAttention(D_k, D_k)  # equal sizes: no query projection
query_k = torch.randn(B, D_k)
with torch.no_grad():
    e = (keys @ query_k[:, :, None])[..., 0] / math.sqrt(D_k)  # e_i = s·h_i / √d_k
    alpha = torch.softmax(e.masked_fill(~mask, -math.inf), dim=-1)
    c = alpha[:, None, :] @ keys  # (B, 1, D_k)
    module_context, module_weights = dot(query_k, keys, mask)
    # PyTorch's fused kernel; its boolean attn_mask also means True = take part
    torch_context = F.scaled_dot_product_attention(
        query_k[:, None, :], keys, keys, attn_mask=mask[:, None, :]
    )

print("dot-product α (second sentence padded):\n", alpha.numpy().round(3))
assert dot.query_layer is None
assert torch.allclose(module_weights[:, 0], alpha, atol=1e-6)
assert torch.allclose(module_context, c[:, 0], atol=1e-6)
assert torch.allclose(torch_context, c, atol=1e-6)
print("hand-computed = seq2seq's modules = torch.nn.functional.scaled_dot_product_attention")

# %% [markdown]
# ## 4 掩码 · Masks
#
# Padding must get **exactly zero** weight. The package's convention everywhere is
# `mask = True` for a real token. First the article's two demos, re-run with our modules and
# the same shapes: additive attention from a 32-dimensional query over 4 positions of
# 64-dimensional keys with `<eos>` masked, then 2-head attention over a 3 × 3 grid with one
# key masked.

# %%
torch.manual_seed(1)
attention = AdditiveAttention(query_dim=32, key_dim=64, hidden_size=32)
query, keys = torch.randn(1, 32), torch.randn(1, 4, 64)
eos_masked = torch.tensor([[True, True, True, False]])
with torch.no_grad():
    context, weights = attention(query, keys, eos_masked)
print("context", tuple(context.shape), "weights", tuple(weights.shape))
print("weights:", weights[0, 0].numpy().round(4))
assert weights.shape == (1, 1, 4) and context.shape == (1, 64)
assert weights[0, 0, 3].item() == 0.0  # exactly zero, not merely small
assert math.isclose(weights[0, 0, :3].sum().item(), 1.0, rel_tol=1e-6)

# %%
torch.manual_seed(2)
two_heads = MultiHeadAttention(query_dim=8, key_dim=8, num_heads=2)
queries, keys = torch.randn(1, 3, 8), torch.randn(1, 3, 8)  # 3 queries over 3 keys
third_masked = torch.tensor([[True, True, False]])
with torch.no_grad():
    context, weights = two_heads(queries, keys, third_masked)
print("weights (batch, heads, queries, keys):", tuple(weights.shape))
print(weights[0].numpy().round(3))
assert weights.shape == (1, 2, 3, 3)
assert (weights[..., 2] == 0).all()  # the masked key: exactly 0 in every head and row
assert torch.allclose(weights.sum(-1), torch.ones(1, 2, 3))

# %% [markdown]
# The article builds its multi-head mask with `torch.ones`, sets one column to 1, and fills the
# scores where the mask is 1 with -1e9. But the column was already 1: **every** key is masked,
# every score becomes the same -1e9, and the softmax is uniform, so its printed output (a zero
# third column) cannot come from its code. A mask that starts from `torch.zeros` would do what
# the text says.

# %%
scores = torch.randn(1, 2, 3, 3)  # (batch, heads, queries, keys): any scores will do
article_mask = torch.ones(1, 1, 3, 3)
article_mask[:, :, :, 2] = 1  # "mask the third key"
article_weights = torch.softmax(scores.masked_fill(article_mask == 1, -1e9), dim=-1)
print(f"masked: {int((article_mask == 1).sum())} of {article_mask.numel()} positions")
print(article_weights[0, 0].numpy().round(4))
assert (article_mask == 1).all()
assert torch.allclose(article_weights, torch.full_like(article_weights, 1 / 3))
assert not (article_weights[..., 2] == 0).any()  # no zero column: not the printed output

intended_mask = torch.zeros(1, 1, 3, 3)
intended_mask[:, :, :, 2] = 1
intended = torch.softmax(scores.masked_fill(intended_mask == 1, -1e9), dim=-1)
assert (intended[..., 2] == 0).all()

# %% [markdown]
# **Why not -1e9?** Half precision cannot hold it: -1e9 becomes -inf in float16, `masked_fill`
# with -1e9 refuses a float16 tensor, and an additive -1e9 mask turns a fully masked row (such
# as the article's) into `NaN`. The package fills with the dtype's lowest *finite* value and
# then multiplies by the mask, so masked positions are exactly 0 in any dtype and a row without
# a real token comes out all zeros, never `NaN`.

# %%
half_scores = torch.tensor([[1.0, 2.0, 3.0]], dtype=torch.float16)
print("-1e9 in float16:", torch.tensor(-1e9, dtype=torch.float16).item())
try:
    half_scores.masked_fill(torch.tensor([[False, False, True]]), -1e9)
    raise AssertionError("float16 masked_fill with -1e9 was expected to fail")
except RuntimeError as err:
    print("masked_fill(-1e9) in float16:", err)
all_masked = torch.softmax(half_scores + torch.tensor(-1e9, dtype=torch.float16), dim=-1)
print("additive -1e9 mask, every key masked:", all_masked.tolist())
assert torch.isnan(all_masked).all()

print("the package's fill in float16:", torch.finfo(torch.float16).min)
one_masked = masked_softmax(half_scores, torch.tensor([[True, True, False]]))
none_real = masked_softmax(half_scores, torch.tensor([[False, False, False]]))
print("masked_softmax, third key masked:", one_masked.tolist())
print("masked_softmax, every key masked:", none_real.tolist())
assert one_masked[0, 2].item() == 0.0 and abs(one_masked.float().sum().item() - 1) < 1e-3
assert (none_real == 0).all() and not torch.isnan(none_real).any()

# %% [markdown]
# ## 5 提取注意力权重 · Extraction
#
# `extract_attention_weights(model, batch)` returns a trained model's weights as a NumPy array
# `(B, heads, T_t, T_s)`: one row per target step (the reference words, then `<eos>`; teacher
# forcing), one column per source token (the words, then `<eos>`). Real rows sum to 1; padding
# rows and columns are exactly 0. Here on three test sentences of different lengths, padded into
# one batch.

# %%
by_source_length = sorted(splits["test"], key=lambda pair: len(pair.src))
examples = [by_source_length[0], by_source_length[len(by_source_length) // 2], by_source_length[-1]]


def check_extraction(run, pairs):
    """Extract a batch's attention and assert the contract; return the array."""
    batch = ParallelDataset(pairs, run.src_vocab, run.tgt_vocab).collate(range(len(pairs)))
    weights = extract_attention_weights(run.model, batch)
    heads = run.model.attention.num_heads
    longest = (max(len(p.tgt) for p in pairs) + 1, max(len(p.src) for p in pairs) + 1)
    assert weights.shape == (len(pairs), heads, *longest), weights.shape
    for b, pair in enumerate(pairs):
        t, s = len(pair.tgt) + 1, len(pair.src) + 1  # real rows and columns, <eos> included
        assert np.allclose(weights[b, :, :t, :s].sum(-1), 1.0, atol=1e-5)
        assert (weights[b, :, t:, :] == 0).all() and (weights[b, :, :, s:] == 0).all()
    trimmed = extract_attention_weights(run.model, batch, trim=True)
    assert [w.shape for w in trimmed] == [(heads, len(p.tgt) + 1, len(p.src) + 1) for p in pairs]
    return weights


print(
    f"source words {[len(p.src) for p in examples]}, target words {[len(p.tgt) for p in examples]}"
)
weights = check_extraction(additive_run, examples)
print("additive: (B, heads, T_t, T_s) =", weights.shape)
b = 0  # the shortest sentence: its rows and columns past its own length are padding
print(f"sentence {b}: real rows sum to", weights[b, 0, : len(examples[b].tgt) + 1].sum(-1).round(4))
print(
    f"sentence {b}: padding holds {np.count_nonzero(weights[b, 0, len(examples[b].tgt) + 1 :])}"
    " non-zero weights"
)

# %% [markdown]
# ## 6 注意力热力图 · Heatmaps
#
# `seq2seq.viz.heatmap.plot_attention` draws one panel per head with the tokens on both axes and a
# fixed 0–1 colour scale. The article sets matplotlib's font to SimHei, a Windows font that a Linux
# machine usually lacks; matplotlib then falls back to DejaVu Sans, which has no Chinese glyphs, and
# the labels come out as empty boxes. `seq2seq.viz.figures` registers the Noto Sans CJK collection
# that the `noto-cjk-sans-otc` dependency installs (nothing is downloaded) and draws Latin text with
# DejaVu Sans and Chinese with Noto.

# %%
try:
    font_manager.findfont("SimHei", fallback_to_default=False)
    simhei = "installed"
except ValueError:
    simhei = "not installed"
cjk_family = register_cjk_font()
cjk_file = font_manager.findfont(cjk_family, fallback_to_default=False)
print(f"SimHei on this machine: {simhei}; seq2seq.viz uses {cjk_family} ({Path(cjk_file).name})")
chinese = "我爱中国昨天北京吃了苹果"
dejavu = FT2Font(font_manager.findfont("DejaVu Sans", fallback_to_default=False))
assert not any(dejavu.get_char_index(ord(ch)) for ch in chinese)  # matplotlib's default: none
assert all(FT2Font(cjk_file).get_char_index(ord(ch)) for ch in chinese)  # Noto: every glyph

# %% [markdown]
# The running example through the trained additive model (`TrainedRun.translate`, what
# `scripts/translate.py` runs). Each English word should attend to the Chinese word it
# translates.

# %%
love = additive_run.translate(["我 爱 中国"])[0]
print(" ".join(love.source), "→", love.text)
display(
    plot_attention(
        love.weights,
        love.source,
        love.output,
        show_values=True,
        title="additive attention, trained in this notebook",
    )
)
assert love.output == ["I", "love", "China"]
peaks = love.weights[0].argmax(-1)[:3]  # the most attended source word of I, love, China
assert peaks.tolist() == [0, 1, 2], peaks

# %% [markdown]
# A multi-head model (its heads as `conf/attention/multihead.yaml` sets them), trained like the
# others; its heads side by side on a short sentence whose time and place phrases move behind
# the object in English.

# %%
multihead_summary, multihead_run = train_variant("multihead", "model.decoder=luong")
reordered = multihead_run.translate(["我 昨天 在 北京 吃 了 苹果"])[0]
print(" ".join(reordered.source), "→", reordered.text)
heads = reordered.weights.shape[0]
display(
    plot_attention(
        reordered.weights,
        reordered.source,
        reordered.output,
        title=f"multi-head attention, {heads} heads",
    )
)
assert heads == multihead_run.model.attention.num_heads == 4
print("its extraction: (B, heads, T_t, T_s) =", check_extraction(multihead_run, examples).shape)
assert reordered.output == ["I", "ate", "apples", "in", "Beijing", "yesterday"]

# %% [markdown]
# A long test sentence with reordering: the longest one in the test split whose gold alignment
# has crossing links and that the additive model translates exactly.

# %%
longest_bucket = [p for p in splits["test"] if len(p.src) > 20 and has_crossing(p.alignment)]
outputs = additive_run.translate([" ".join(p.src) for p in longest_bucket])
exact = [(p, o) for p, o in zip(longest_bucket, outputs, strict=True) if o.output == list(p.tgt)]
print(
    f"{len(exact)} of {len(longest_bucket)} test sentences of over 20 words with crossing links "
    "are translated exactly"
)
assert exact
pair, long_translation = max(exact, key=lambda item: len(item[0].src))
print(f"{len(pair.src)} words:", " ".join(pair.src), "→", long_translation.text)
display(
    plot_attention(
        long_translation.weights,
        long_translation.source,
        long_translation.output,
        title="additive attention on a long sentence with reordering",
    )
)

# %% [markdown]
# ## 7 多头注意力在做什么 · What the heads and the weights really do
#
# The article says one head focuses and another looks at the neighbours. We can measure what
# each trained head does on the whole test split, because the corpus records the gold
# alignment of every pair: per head, the entropy of its attention rows (0 = all weight on one
# word, higher = spread out), its AER against the gold links (0 = perfect; each English word
# linked to its most attended source word), and the share of English words whose most attended
# source word is the gold one, or one position beside it (the "neighbour").

# %%
test_for_heads = ParallelDataset(splits["test"], multihead_run.src_vocab, multihead_run.tgt_vocab)
gold = gold_attention(multihead_run.model, test_for_heads, batch_size=256, device=CPU)
aer_per_head = gold.scores()["aer_per_head"]
row_sizes = [
    len(src) + 1
    for src, tgt in zip(gold.sources, gold.targets, strict=True)
    for _ in range(len(tgt) + 1)
]  # one entry per attention row: its source tokens
uniform = float(np.mean(np.log(row_sizes)))  # the entropy of spreading each row evenly
per_head = []
for h in range(heads):
    head_weights = [w[h] for w in gold.weights]
    shares = alignment_report(head_weights, gold.sources, gold.targets, gold.possible)["shares"]
    per_head.append(
        {
            "entropy": attention_entropy(head_weights),
            "aer": aer_per_head[h],
            "gold": shares["correct"],
            "neighbour": shares["one_ahead"] + shares["one_behind"],
            "eos": shares["on_eos"],
        }
    )
print(f"{len(gold.weights)} test sentences; a uniform row would have entropy {uniform:.2f} nats")
print(f"{'head':>5} {'entropy':>8} {'AER':>6} {'on gold':>8} {'1 off':>6} {'on <eos>':>9}")
for h, row in enumerate(per_head, start=1):
    entropy, aer, on_gold = row["entropy"], row["aer"], row["gold"]
    print(
        f"{h:>5} {entropy:>8.2f} {aer:>6.3f} {on_gold:>8.1%} {row['neighbour']:>6.1%} "
        f"{row['eos']:>9.1%}"
    )

# %%
entropies = [row["entropy"] for row in per_head]
sharpest = int(np.argmin(entropies))
most_neighbour = max(range(heads), key=lambda h: per_head[h]["neighbour"])
on_gold = [row["gold"] for row in per_head]
heads_alignment = multihead_summary.test.alignment
print(
    f"focus: the heads' entropies range from {min(entropies):.2f} to {max(entropies):.2f} nats; "
    f"head {sharpest + 1} is the most focused"
)
print(
    f"neighbours: in every head, {min(on_gold):.1%} to {max(on_gold):.1%} of the English words "
    f"point at their gold source word; the head with the most links one word off (head "
    f"{most_neighbour + 1}) has {per_head[most_neighbour]['neighbour']:.1%} of them there"
)
best_head, best_head_aer = heads_alignment.best_head, heads_alignment.aer_best_head
print(
    f"as an alignment: the heads' average scores AER {heads_alignment.aer:.3f}; the head picked "
    f"on the validation split (head {best_head + 1}) scores {best_head_aer:.3f}"
)
assert max(entropies) > 1.5 * min(entropies)  # the heads differ in focus
assert all(row["gold"] > 3 * row["neighbour"] for row in per_head)  # none points at neighbours
assert heads_alignment.aer < min(aer_per_head)  # the average aligns better than any one head

# %% [markdown]
# So half of the article's picture holds here: the heads differ in how focused they are. The
# other half does not: no head looks at the neighbours. Every head mostly points at the word
# being translated, and a word one position away is the exception in all of them. As an
# alignment, the average of the heads is better than any single head.

# %% [markdown]
# And attention as alignment in general, on the additive model: its AER and the package's
# alignment error report (`seq2seq.evaluation.alignment_report`, also printed by
# `scripts/evaluate.py`), which says *why* a link misses (one word ahead, one behind, on a
# particle with no counterpart, ...) and compares the attention rows of right and wrong links.

# %%
alignment = additive_summary.test.alignment
print(
    f"additive: AER {alignment.aer:.3f} (sure links only {alignment.aer_sure_only:.3f}), "
    f"mean entropy {alignment.attention_entropy:.2f} nats"
)
print("\n".join(format_report(alignment.alignment_report)))
report = alignment.alignment_report
assert sum(report["counts"].values()) == report["words"]
assert report["explained_share"] > 0.8  # most misses are near misses, few are "elsewhere"
assert report["entropy"]["wrong"] > report["entropy"]["right"]  # wrong rows are flatter ...
assert report["peak_weight"]["wrong"] > 0.5  # ... but still have a clear peak

# %% [markdown]
# Most wrong links are near misses (a word ahead or behind, on a particle, on a nearby word's
# source), and a wrong link's row is flatter than a right one's but still peaks clearly: a
# bright cell in a heatmap is not proof that those two words translate each other.

# %% [markdown]
# Attention is trained to predict the next word, not to align. **Guided alignment**
# (`train.alignment_weight=1.0`) adds a loss pulling each attention row toward the gold links.
# Its effect at the default budget, three seeds, as `docs/alignment.md` renders it from its
# results file (read here, not computed):

# %%
guided = next(
    record
    for record in load_records(REPO / "results" / "levers" / "alignment.json")
    if record.key == "guided-sure-links"
)
for field in ("lever", "effect", "kept", "why"):
    print(f"{field:>7}: {guided.data[field]}")
print(f"measured: {guided.provenance.date[:10]}, {guided.provenance.machine.cpu}")
assert guided.data["kept"].startswith("yes")
for label, figure in (("unguided", "alignment_plain.png"), ("guided", "alignment_guided.png")):
    print(f"{label} (docs/{figure}):")
    display(Image(filename=str(REPO / "docs" / figure), width=480))

# %% [markdown]
# ## 注意力是解释吗？· Is attention an explanation?
#
# A question the article does not ask. The heatmaps show where the model looked; whether that is
# *why* it wrote what it wrote is another matter. Jain & Wallace (2019) permuted and replaced the
# attention weights of models for text classification, question answering and inference, and often
# found the prediction unchanged: "attention is not explanation". Wiegreffe & Pinter (2019) answered
# that the test is whether the model *needs* its weights: make them uniform, and where nothing
# changes, the attention never mattered. A translation decoder reads the source only through its
# context vector, so here the weights should matter. Other accounts of where an output word came
# from compete with attention: the gradient of the word's probability with respect to each source
# word, which Ding, Xu & Koehn (2019) found to align words better than attention; for the
# Transformer, Chen et al. (2020)'s Shift-Att, the attention of the step that *reads* the word. And
# Michel et al. (2019) took heads away one at a time and found that most could go.
#
# The package puts these to the test (`seq2seq.evaluation.interventions`, `.attributions`,
# `.explain`; `python scripts/evaluate.py RUN --explain` runs them all on a split and records
# them in `metrics.json`). Here on 60 test sentences, the first 20 of each length bucket, with
# the additive model trained above. First the **interventions**: the weights the model computes
# are replaced before the context is read from them, and the sentences are translated again.
# `uniform` spreads each row evenly over the source words, `shuffle` puts the same weights on
# other words, `argmax` puts all of a row on its peak (hard attention). `gold` puts each
# reference word's row on its gold links; those exist only along the reference, so it is
# scored teacher-forced (loss and token accuracy) and has no BLEU.

# %%
from seq2seq.evaluation.attributions import attribution_maps, row_shares
from seq2seq.evaluation.explain import explain, length_spread_sample, map_aer
from seq2seq.evaluation.interventions import Intervention, intervention_scores

test_pairs = splits["test"]
spread = length_spread_sample(
    ParallelDataset(test_pairs, additive_run.src_vocab, additive_run.tgt_vocab), 20
)
sample = ParallelDataset(
    [test_pairs[i] for i in spread], additive_run.src_vocab, additive_run.tgt_vocab
)
started = time.perf_counter()
put_to_test = explain(
    additive_run.model, sample, additive_run.tgt_vocab, checkpoint="best.pt",
    step=additive_run.step, split="test", batch_size=64, device=CPU, ig_per_bucket=3,
)  # fmt: skip
print(f"{len(sample)} test sentences, {time.perf_counter() - started:.0f} s")
print(f"{'attention':>10} {'BLEU':>6} {'exact':>6} {'loss':>6} {'token acc.':>10}")
for scores in put_to_test.interventions:
    bleu = "—" if scores.bleu is None else f"{scores.bleu:.1f}"
    exact = "—" if scores.exact_match is None else f"{scores.exact_match:.2f}"
    print(
        f"{scores.intervention:>10} {bleu:>6} {exact:>6} {scores.loss:>6.2f} "
        f"{scores.token_accuracy:>10.1%}"
    )
own, uniform, shuffled, hard, gold_rows = (
    put_to_test.intervention(name) for name in ("none", "uniform", "shuffle", "argmax", "gold")
)
assert uniform.bleu < own.bleu / 2 and shuffled.bleu < own.bleu / 2  # the weights are used
assert own.bleu / 2 < hard.bleu < own.bleu  # the peak carries most of it, not all
assert gold_rows.bleu is None and gold_rows.exact_match is None  # teacher-forced only
assert gold_rows.loss < 1.5 * own.loss < uniform.loss  # gold rows: nearly the model's own

# %% [markdown]
# This model uses its attention: with uniform or shuffled weights its translations fall apart,
# so the heatmaps above are not decoration. Hard attention keeps most of the translation but
# not all of it: the weight beside the peak carries something too. And the gold links, which
# the model never saw as weights, read the reference nearly as well as its own attention does:
# where it looks is, in effect, the alignment.
#
# **One head at a time.** The multi-head model of section 6, with one head's row made uniform
# while the others keep theirs (`head:H`; Michel et al. masked heads instead):

# %%
heads_sample = ParallelDataset(
    [test_pairs[i] for i in spread], multihead_run.src_vocab, multihead_run.tgt_vocab
)
ablations = [
    intervention_scores(
        multihead_run.model, heads_sample, multihead_run.tgt_vocab, intervention,
        batch_size=64, device=CPU,
    )
    for intervention in [None, *(Intervention.parse(f"head:{h}") for h in range(heads))]
]  # fmt: skip
for scores in ablations:
    print(f"{scores.intervention:>8}: BLEU {scores.bleu:5.1f}, loss {scores.loss:.2f}")
drops = [ablations[0].bleu - scores.bleu for scores in ablations[1:]]
print("BLEU lost per head:", ", ".join(f"{drop:.1f}" for drop in drops))
assert min(drops) < max(drops) / 4  # some heads can go almost for free, not every one

# %% [markdown]
# The heads are not equally needed: some can be flattened at almost no cost, while another
# carries much of the translation, as Michel et al. found.
#
# **Maps.** Gradient × input and integrated gradients (Captum) attribute each reference word's
# log-probability, teacher-forced, to the source words; a map's row is the size of each source
# word's attribution (its L2 norm over the embedding) and is scored by the same AER as
# attention, each English word linked to its largest entry. Integrated gradients integrates
# the gradient from the all-zero embedding to the sentence's (16 steps; Captum's convergence
# delta says how far the attributions' sum is from the change of the output, in nats); it is
# the slowest, so it runs on the first 3 sentences of each bucket.

# %%
attention_map, gradient_map, integrated_map = (
    put_to_test.map(method) for method in ("attention", "grad_x_input", "integrated_gradients")
)
for scores in (attention_map, gradient_map, integrated_map):
    integral = "" if scores.steps is None else (
        f" ({scores.steps} steps, mean |convergence delta| {scores.convergence_delta:.2f})"
    )  # fmt: skip
    print(f"{scores.method:>21}: AER {scores.aer:.3f} on {scores.sentences} sentences{integral}")
assert attention_map.aer < gradient_map.aer < integrated_map.aer

# %% [markdown]
# In this model attention is the best of the three as an alignment, unlike in the models of
# Ding, Xu & Koehn, and integrated gradients the worst (on fewer sentences, and with the
# convergence delta printed above). One
# sentence of the sample, read by the additive model: its attention beside its gradient × input
# map, each row as shares of the row (`row_shares`), so that both are drawn on one scale.

# %%
shown = next(p for p in sample.pairs if 8 <= len(p.src) <= 12 and has_crossing(p.alignment))
one = ParallelDataset([shown], additive_run.src_vocab, additive_run.tgt_vocab).collate([0])
(attention_weights,) = extract_attention_weights(additive_run.model, one, trim=True)
gradients, _ = attribution_maps(additive_run.model, one, "grad_x_input")
gradient_shares = row_shares(gradients).numpy()  # (1, T_t, T_s), like the attention
assert gradient_shares.shape == attention_weights.shape  # (1, words + <eos>, words + <eos>)
assert (gradient_shares >= 0).all() and np.allclose(gradient_shares.sum(-1), 1.0, atol=1e-5)
words = len(shown.tgt)
attended, attributed = (m[0, :words].argmax(-1) for m in (attention_weights, gradient_shares))
agree = int((attended == attributed).sum())
position = [sample.pairs.index(shown)]
one_aer = {
    name: map_aer(sample, position, [weights])["aer"]
    for name, weights in (("attention", attention_weights), ("gradient × input", gradient_shares))
}
print(" ".join(shown.src), "→", " ".join(shown.tgt))
print("sentence AER:", ", ".join(f"{name} {aer:.3f}" for name, aer in one_aer.items()))
peaks = [float(m[0, :words].max(-1).mean()) for m in (attention_weights, gradient_shares)]
print(
    f"the gradient's largest share is on the attention's word for {agree} of {words} English "
    f"words; a row's peak holds on average {peaks[0]:.0%} (attention), {peaks[1]:.0%} (gradient)"
)
assert agree > words / 2 and peaks[1] < peaks[0]
display(
    plot_attention(
        np.concatenate([attention_weights, gradient_shares]),
        shown.src,
        shown.tgt,
        head_labels=["attention", "gradient × input (row shares)"],
        title="one test sentence read by the additive model",
    )
)

# %% [markdown]
# The gradient map mostly finds the same words, more faintly: each English word's probability
# moves a little with every source word (the encoder mixes them), and most with the one the
# attention picks. So
# for this model the answer to the section's question is yes, in the sense Wiegreffe & Pinter
# ask for: the translation needs the weights, and the weights are where the words come from.
# `python scripts/serve.py RUN` shows all of it for one sentence at a time: a switch between the
# maps, and the translation under each intervention beside the model's own.

# %% [markdown]
# ## 8 动手试试 · Your turn
#
# Translate your own sentence with the additive model trained above. Unsegmented Chinese is
# split into the words the model knows (`TrainedRun.tokenize`, longest match first); a word it
# never saw becomes `<unk>`, with a warning.

# %%
segmented = additive_run.tokenize("我昨天在北京吃了苹果")
print(segmented)
assert segmented == ["我", "昨天", "在", "北京", "吃", "了", "苹果"]

# %%
SENTENCE = "我昨天在北京吃了苹果"  # change me
yours = additive_run.translate([SENTENCE])[0]
print(" ".join(yours.source), "→", yours.text)
display(plot_attention(yours.weights, yours.source, yours.output, title="your sentence"))

# %% [markdown]
# ## 9 下一篇：自注意力 · Next: self-attention
#
# The article ends by announcing its sequel: self-attention, a complete multi-head module and a
# Transformer encoder layer built step by step. Here is its outline, on the package's own
# modules (`seq2seq.model.transformer` builds the whole Transformer from them:
# `python scripts/train.py model=transformer`, measured in `docs/transformer.md`).
#
# **Q, K and V from one sequence.** In the decoder's attention above, the query came from the
# decoder and the keys from the encoder. In self-attention all three come from the same
# sequence: every word asks every word (itself included) how relevant it is. The module is the
# same `MultiHeadAttention`; only what is passed in changes.

# %%
torch.manual_seed(0)
words = ["我", "爱", "中国"]
x = torch.randn(1, len(words), 8)  # three positions of size 8 (embeddings, say)
real = torch.ones(1, len(words), dtype=torch.bool)
self_attention = MultiHeadAttention(8, 8, num_heads=2)
own_memory = self_attention.prepare(x, real)  # K and V: projections of x itself
context, self_weights = self_attention.attend(x, own_memory)  # Q: also x
print("weights", tuple(self_weights.shape), "= (batch, heads, queries, keys)")
assert self_weights.shape == (1, 2, 3, 3) and context.shape == x.shape
torch.testing.assert_close(self_weights.sum(-1), torch.ones(1, 2, 3))

# head 1 by hand: softmax(Q Kᵀ / √d) with d = 8 / 2 = 4, Q and K the first 4 columns
head_size = 4
queries = self_attention.query_layer(x)[..., :head_size]
keys = self_attention.key_layer(x)[..., :head_size]
by_hand = torch.softmax(queries @ keys.transpose(1, 2) / math.sqrt(head_size), dim=-1)
torch.testing.assert_close(self_weights[:, 0], by_hand)
print("head 1 (rows: the asking word, columns: the word asked):")
for word, row in zip(words, self_weights[0, 0].tolist(), strict=True):
    print(f"  {word:<3}", " ".join(f"{w:.2f}" for w in row))

# %% [markdown]
# **The causal mask.** A decoder that writes English word by word must not look at words it
# has not written yet. The same masked softmax does it: the mask becomes a matrix, query `j`
# sees keys `≤ j`, and everything above the diagonal gets exactly 0.

# %%
from seq2seq.model.transformer import EncoderLayer, causal_mask, sinusoidal_positions

allowed = causal_mask(len(words)).unsqueeze(0)  # (1, queries, keys)
print(allowed[0].int())
_, causal_weights = self_attention.attend(x, self_attention.prepare(x, allowed))
print("head 1 with the causal mask:")
for word, row in zip(words, causal_weights[0, 0].tolist(), strict=True):
    print(f"  {word:<3}", " ".join(f"{w:.2f}" for w in row))
assert (causal_weights[0][:, ~allowed[0]] == 0).all()  # the future: exactly zero
torch.testing.assert_close(causal_weights.sum(-1), torch.ones(1, 2, 3))

# %% [markdown]
# **One encoder layer, step by step.** Self-attention has no notion of order, so positions are
# added to the embeddings (sinusoids of different frequencies). Then a layer is two blocks,
# each normalised first and added back to its input (a residual connection): self-attention,
# then a small feed-forward network applied to every position on its own. Computed by hand
# below and checked against the package's `EncoderLayer`:

# %%
layer = EncoderLayer(8, 2, 16, dropout=0.0).eval()
h = x + sinusoidal_positions(len(words), 8)  # 1. add the positions
normed = layer.attention_norm(h)  # 2. layer norm
attended, _ = layer.self_attention.attend(normed, layer.self_attention.prepare(normed, real))
h = h + attended  # 3. self-attention, added back
h = h + layer.feed_forward(layer.feed_forward_norm(h))  # 4. feed-forward, added back
output, _ = layer(x + sinusoidal_positions(len(words), 8), real)
torch.testing.assert_close(output, h)
print("the layer's output equals the four steps:", tuple(output.shape))

# %% [markdown]
# The article's last table says why the Transformer replaced the RNN: any word is one step
# away instead of n, and every position is computed at once instead of one after another.
# A Transformer's encoder runs all positions in one matrix product, where a GRU steps
# through the sentence. `docs/transformer.md` measures what that buys at these sizes on a CPU,
# and puts the Transformer in the same table as the four attentions.

# %% [markdown]
# Where to go next:
#
# * **The scripts**: `python scripts/train.py` trains the default model (`attention=dot`,
#   `attention=multihead`, `train.alignment_weight=1.0`, ...), `python scripts/translate.py RUN
#   "我 爱 中国" --heatmap love.png` translates with a heatmap, `python scripts/evaluate.py RUN`
#   prints every metric with the alignment error report.
# * **TensorBoard**: `tensorboard --logdir outputs` shows the loss, BLEU and one heatmap per
#   sample sentence at every validation: drag the step slider to watch the weights sharpen into
#   the alignment. For this notebook's own runs, point `--logdir` at its `RUNS` folder (set
#   `RUNS_DIR` at the top to keep them after the kernel stops).
# * **The comparison sweep**: `python scripts/train.py -m +experiment=compare`, then
#   `python scripts/compare.py multirun/<time>`: the README's results table and figures.
# * **Real sentences**: `python scripts/train.py data=tatoeba` trains on the Tatoeba
#   English–Mandarin pairs shipped in `data/tatoeba/` (see `docs/tatoeba.md`).
