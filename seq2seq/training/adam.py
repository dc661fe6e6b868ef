"""Adam as ``torch.optim.Adam`` computes it on a CPU, without ``torch.optim``'s machinery.

Why not ``torch.optim.Adam`` itself: its ``step`` (and ``add_param_group``, ``zero_grad``)
import ``torch._dynamo`` on first call, to mark graph breaks for ``torch.compile``; that import
is about 2 s of every training process's start on a laptop core (docs/performance.md), a fifth
of a short run's wall time and most of what the test suite's trainings pay. This class does
the same arithmetic as PyTorch's single-tensor path — the one it takes for CPU tensors:
foreach and fused off, no weight decay, no AMSGrad — in the same order, and reads and writes
the same ``state_dict``, so a checkpoint of either resumes with the other.
``tests/test_adam.py`` holds the two equal bit for bit, state and checkpoint included.

On a GPU PyTorch would step all tensors at once (its foreach path); this steps them one by
one with the same formulas, so a GPU run may round differently from one with
``torch.optim.Adam`` in the last bits.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import torch
from torch import Tensor, nn

#: What ``torch.optim.Adam`` keeps in a parameter group besides ``params`` and its three
#: settings, with the values this class computes by: written to checkpoints as PyTorch does.
TORCH_GROUP_DEFAULTS: dict[str, Any] = {
    "weight_decay": 0,
    "amsgrad": False,
    "maximize": False,
    "foreach": None,
    "capturable": False,
    "differentiable": False,
    "fused": None,
    "decoupled_weight_decay": False,
}


class Adam:
    """Adam (Kingma & Ba, 2015) over ``params`` at rate ``lr`` with ``betas`` and ``eps``.

    Attributes as ``torch.optim.Optimizer`` has them: :attr:`param_groups` (one group; a
    schedule changes its ``"lr"``) and :attr:`state` (per parameter that has had a gradient:
    ``step``, a float32 scalar tensor, and ``exp_avg``, ``exp_avg_sq`` shaped like it).
    """

    def __init__(
        self,
        params: Iterable[nn.Parameter],
        lr: float,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
    ) -> None:
        group: dict[str, Any] = {"params": list(params), "lr": lr, "betas": betas, "eps": eps}
        self.param_groups: list[dict[str, Any]] = [{**group, **TORCH_GROUP_DEFAULTS}]
        self.state: dict[Tensor, dict[str, Tensor]] = {}

    def zero_grad(self) -> None:
        """Forget every gradient (``set_to_none``, as ``torch.optim`` does by default)."""
        for group in self.param_groups:
            for param in group["params"]:
                param.grad = None

    @torch.no_grad()
    def step(self) -> None:
        """One Adam update of every parameter that has a gradient."""
        for group in self.param_groups:
            lr, (beta1, beta2), eps = group["lr"], group["betas"], group["eps"]
            for param in group["params"]:
                if param.grad is not None:
                    self._update(param, param.grad, lr, beta1, beta2, eps)

    def _update(
        self, param: Tensor, grad: Tensor, lr: float, beta1: float, beta2: float, eps: float
    ) -> None:
        """``torch.optim.adam._single_tensor_adam`` for one float parameter, op for op."""
        state = self.state.get(param)
        if state is None:
            state = self.state[param] = {
                "step": torch.tensor(0.0, dtype=torch.float32),
                "exp_avg": torch.zeros_like(param, memory_format=torch.preserve_format),
                "exp_avg_sq": torch.zeros_like(param, memory_format=torch.preserve_format),
            }
        exp_avg, exp_avg_sq = state["exp_avg"], state["exp_avg_sq"]
        state["step"] += 1
        exp_avg.lerp_(grad, 1 - beta1)
        exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
        step = state["step"].item()
        bias_correction1 = 1 - beta1**step
        bias_correction2 = 1 - beta2**step
        step_size = lr / bias_correction1
        denom = (exp_avg_sq.sqrt() / bias_correction2**0.5).add_(eps)
        param.addcdiv_(exp_avg, denom, value=-step_size)

    def state_dict(self) -> dict[str, Any]:
        """``torch.optim.Optimizer.state_dict``'s layout: parameters by their position."""
        index = {id(p): i for i, p in enumerate(p for g in self.param_groups for p in g["params"])}
        groups, start = [], 0
        for group in self.param_groups:
            size = len(group["params"])
            packed = {k: v for k, v in group.items() if k != "params"}
            groups.append({**packed, "params": list(range(start, start + size))})
            start += size
        state = {index[id(p)]: values for p, values in self.state.items()}
        return {"state": state, "param_groups": groups}

    def load_state_dict(self, saved: dict[str, Any]) -> None:
        """Continue from ``saved`` (this class's or ``torch.optim.Adam``'s ``state_dict``):
        copies of its moments on each parameter's device and dtype, its group settings."""
        saved_groups = saved["param_groups"]
        if [len(g["params"]) for g in saved_groups] != [
            len(g["params"]) for g in self.param_groups
        ]:
            raise ValueError("the saved optimizer state is for parameters of other sizes")
        params = [p for g in self.param_groups for p in g["params"]]
        self.state = {}
        for i, values in saved["state"].items():
            param = params[int(i)]
            self.state[param] = {
                key: value.clone()
                if key == "step"
                else value.to(device=param.device, dtype=param.dtype, copy=True)
                for key, value in values.items()
            }
        self.param_groups = [
            {**{k: v for k, v in saved_group.items() if k != "params"}, "params": group["params"]}
            for group, saved_group in zip(self.param_groups, saved_groups, strict=True)
        ]
