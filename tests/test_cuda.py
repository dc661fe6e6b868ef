"""The model on a CUDA GPU, in this process (marked ``cuda``: skipped where no CUDA device is
visible, see tests/helpers/cuda.py): every attention mechanism, the GRU encoder-decoder in
each arrangement and recurrence, and the Transformer give the CPU's values and gradients; the
fused recurrence on CUDA equals the textbook step loop there; nccl starts and DDP's gradient
all-reduce runs over it; the step profile sees the GPU's kernels.

Tolerances: float32 against float64 on the CPU, these tiny models' logits are 1e-7 apart and
their gradients 1e-8, so two float32 devices summing in different orders agree to a few times
that. The checks allow about a hundred times more (:data:`VALUES`, :data:`GRADIENTS`), and
run with TF32 off (:func:`~tests.helpers.cuda.full_fp32`): TF32's 10-bit mantissa, cuDNN's
default for the GRU, moves values by about 1e-3 and would fail them.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from pathlib import Path

import pytest
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel

from seq2seq.analysis.bench.measure import trainer_contestant
from seq2seq.analysis.bench.profile import profile_row
from seq2seq.config.compose import load_config
from seq2seq.model.attention import AdditiveAttention, MultiHeadAttention, ScaledDotProductAttention
from seq2seq.model.transformer import Transformer
from seq2seq.training.trainer import Trainer
from tests.helpers.cuda import full_fp32
from tests.helpers.models import (
    RECURRENCE_VARIANTS,
    same_model,
    spec_of,
    tiny_model,
    training_pass,
)
from tests.helpers.runs import TINY_OVERRIDES

pytestmark = pytest.mark.cuda

CUDA = torch.device("cuda")
VALUES = {"atol": 1e-5, "rtol": 1e-4}
GRADIENTS = {"atol": 1e-5, "rtol": 1e-4}
B, T_Q, T_S = 3, 4, 6


@pytest.fixture(autouse=True)
def no_tf32() -> Iterator[None]:
    with full_fp32():
        yield


def assert_same_pass(cpu: tuple, cuda: tuple) -> None:
    """Two :func:`training_pass` results (logits, weights, gradients) agree."""
    (logits, weights, grads), (cuda_logits, cuda_weights, cuda_grads) = cpu, cuda
    torch.testing.assert_close(cuda_logits, logits, **VALUES)
    assert (weights is None) == (cuda_weights is None)
    if weights is not None:
        torch.testing.assert_close(cuda_weights, weights, **VALUES)
    assert cuda_grads.keys() == grads.keys() and grads
    for name, grad in grads.items():
        torch.testing.assert_close(cuda_grads[name], grad, **GRADIENTS, msg=name)


MECHANISMS = {
    "additive": lambda: AdditiveAttention(8, 10, 5),
    "dot": lambda: ScaledDotProductAttention(8, 10),  # the query projected: sizes differ
    "multihead": lambda: MultiHeadAttention(8, 10, num_heads=2),
}


@pytest.mark.parametrize("name", sorted(MECHANISMS))
def test_each_attention_on_cuda_gives_the_cpus_context_weights_and_gradients(name: str) -> None:
    generator = torch.Generator().manual_seed(0)
    query = torch.randn(B, T_Q, 8, generator=generator)
    keys = torch.randn(B, T_S, 10, generator=generator)
    mask = torch.ones(B, T_S, dtype=torch.bool)
    mask[1, 4:] = False  # a padded sentence
    mask[2, :] = False  # a row without a real token: zeros on both devices, never NaN
    torch.manual_seed(0)
    module = MECHANISMS[name]()
    results = []
    for device in ("cpu", CUDA):
        on = copy.deepcopy(module).to(device)
        q, k = (t.to(device).requires_grad_() for t in (query, keys))
        context, weights = on(q, k, mask.to(device))
        (context.square().sum() + weights.square().sum()).backward()
        grads = {n: p.grad.cpu() for n, p in on.named_parameters()}
        values = (context.detach(), weights.detach(), q.grad, k.grad)
        results.append((*(t.cpu() for t in values), grads))
    (context, weights, q_grad, k_grad, grads), cuda = results
    torch.testing.assert_close(cuda[0], context, **VALUES)
    torch.testing.assert_close(cuda[1], weights, **VALUES)
    assert (cuda[1][2] == 0).all() and not cuda[0].isnan().any()
    torch.testing.assert_close(cuda[2], q_grad, **GRADIENTS)
    torch.testing.assert_close(cuda[3], k_grad, **GRADIENTS)
    for n, grad in grads.items():
        torch.testing.assert_close(cuda[4][n], grad, **GRADIENTS, msg=n)


# (attention, decoder arrangement, recurrence): every path a GRU model trains through
GRU_PATHS = [
    ("none", "bahdanau", "fused"),
    *[(a, "bahdanau", r) for a in ("additive", "dot", "multihead") for r in ("fused", "textbook")],
    *[(a, "luong", "fused") for a in ("additive", "dot", "multihead")],
]


@pytest.mark.parametrize(("attention", "decoder", "recurrence"), GRU_PATHS)
def test_the_gru_model_on_cuda_gives_the_cpus_logits_weights_and_gradients(
    attention: str, decoder: str, recurrence: str
) -> None:
    model = tiny_model(attention, decoder=decoder, recurrence=recurrence).train()
    cuda = copy.deepcopy(model).to(CUDA)
    assert_same_pass(training_pass(model), training_pass(cuda, CUDA))


def test_the_transformer_on_cuda_gives_the_cpus_logits_weights_and_gradients() -> None:
    torch.manual_seed(3)
    spec = spec_of(
        20, 25, kind="transformer", attention="multihead", hidden_size=16, num_heads=4,
        ff_size=32, encoder_layers=2, decoder_layers=2, dropout=0.0, max_positions=64,
    )  # fmt: skip
    model = Transformer(spec).train()
    cuda = copy.deepcopy(model).to(CUDA)
    assert_same_pass(training_pass(model), training_pass(cuda, CUDA))


@pytest.mark.parametrize(("attention", "bidirectional", "tanh"), RECURRENCE_VARIANTS)
def test_the_fused_recurrence_on_cuda_equals_the_textbook_step_loop(
    attention: str, bidirectional: bool, tanh: str
) -> None:
    """On the GPU itself, and against the textbook loop on the CPU."""
    textbook = tiny_model(
        attention, bidirectional=bidirectional, tanh=tanh, recurrence="textbook"
    ).train()
    on_cpu = training_pass(textbook)
    fused = same_model(textbook, "fused").to(CUDA)
    on_cuda = training_pass(fused, CUDA)
    assert_same_pass(training_pass(textbook.to(CUDA), CUDA), on_cuda)
    assert_same_pass(on_cpu, on_cuda)


def test_the_step_profile_sees_the_gpus_kernels(tmp_path: Path, toy_corpus: Path) -> None:
    overrides = [*TINY_OVERRIDES, f"data.dir={toy_corpus}", "device=cuda"]
    trainer = Trainer(load_config(overrides), tmp_path / "run")
    row, table = profile_row(
        "additive", trainer_contestant("additive", trainer), 32, trainer.device,
        steps=3, profiled_steps=2, warmup=1,
    )  # fmt: skip
    assert trainer.device.type == "cuda" and row.batch_size == 32
    assert row.kernels_per_step and row.kernels_per_step > 10 and row.ops_per_step > 10
    assert row.kernel_ms_per_step and 0 < row.kernel_ms_per_step < row.wall_ms_per_step * 10
    assert row.busy_share is not None and row.busy_share > 0 and "aten::" in table


def test_nccl_starts_here_and_ddp_averages_gradients_over_it(tmp_path: Path) -> None:
    """One GPU is a world of one: DDP over nccl gives the plain model's gradients. (Two
    processes cannot share one GPU under nccl; tests/test_cuda_runs.py starts one per GPU.)"""
    store = dist.FileStore(str(tmp_path / "store"), 1)
    dist.init_process_group("nccl", store=store, rank=0, world_size=1)
    try:
        assert dist.get_backend() == "nccl"
        model = tiny_model("additive").train().to(CUDA)
        wrapped = DistributedDataParallel(copy.deepcopy(model), device_ids=[CUDA.index or 0])
        plain = training_pass(model, CUDA)
        _, _, ddp_grads = training_pass(wrapped, CUDA)
        assert {f"module.{name}" for name in plain[2]} == ddp_grads.keys()
        for name, grad in plain[2].items():
            torch.testing.assert_close(ddp_grads[f"module.{name}"], grad, **GRADIENTS)
        total = torch.tensor([1.5, 2.0], dtype=torch.float64, device=CUDA)
        dist.all_reduce(total)  # as ProcessGroup.sum does
        box: list[object] = [{"run_dir": "x"}]
        dist.broadcast_object_list(box, src=0, device=CUDA)  # as ProcessGroup.broadcast does
        assert total.tolist() == [1.5, 2.0] and box == [{"run_dir": "x"}]
    finally:
        dist.destroy_process_group()
