"""Causal temporal convolution with learnable delays (DCLS; mGRADE paper sec. 2 and App. A.1).

Every channel ``d`` has ``K`` kernel elements with weights ``w_{d,i}`` and real positions
``p_{d,i}`` in ``[0, Gamma - 1]`` (delays in steps). The discrete kernel of length ``Gamma`` is
built by Gaussian interpolation of fixed width ``sigma`` (eqs. 3-4)::

    k_d[n]  = sum_i w_{d,i} exp(-((n - p_{d,i}) / sigma)^2 / 2),   n = 0 .. Gamma - 1
    x_{d,t} = sum_n k_d[n] u_{d,t-n}                               (eq. 5; u_{d,t<0} = 0)

Positions are clamped to ``[0, Gamma - 1]`` wherever they are used and learn with their own
learning rate (:func:`param_groups`). ``hard()`` replaces the interpolation by rounding every
position to an integer delay (the exported, hardware form: a weighted sum of delayed inputs);
``soft()`` goes back to the Gaussian without having changed the learned positions.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from codesign.nn._checks import Mode, check_mode, check_sequence, check_sizes

__all__ = ["AUTO_SPAN_MAX", "DCLS1d", "auto_span", "param_groups"]

AUTO_SPAN_MAX = 64
"""``span: auto`` gives delays under this many steps, or under the series' length when it is shorter."""


def auto_span(steps: int | None) -> int:
    """The span (longest delay + 1) of ``span: auto`` for series of ``steps`` steps: the largest
    power of two up to :data:`AUTO_SPAN_MAX` that the series holds (at least 2; the maximum when the
    length is unknown). A delay longer than the series reads only the zeros before it: on series of
    24 frames, delays under 16 scored 92.6 % on ItalyPowerDemand where delays under 64 scored 77.3 %
    (seed 0, ``models/results/ablation/notes.md``)."""
    if steps is None:
        return AUTO_SPAN_MAX
    span = 2
    while span * 2 <= min(steps, AUTO_SPAN_MAX):
        span *= 2
    return span


class DCLS1d(nn.Module):
    """Depthwise causal convolution with learnable spacings (delays), batch first.

    Parameters
    ----------
    channels:
        Number of channels ``D`` (input size = output size).
    kernel_count:
        ``K``, kernel elements per channel.
    kernel_length:
        ``Gamma``, the longest delay plus one (the receptive field in steps).
    sigma:
        Width of the Gaussian interpolation (fixed).
    weight_scale:
        Weights are drawn from a truncated normal of standard deviation ``sqrt(weight_scale / K)``
        (mGRADE App. C.1, ``alpha``).
    mode:
        ``"scan"`` (``conv1d``, default) or ``"sequential"`` (a delay-line reference loop).

    Shape
    -----
    ``forward(u)``: ``(batch, time, channels)`` -> ``(batch, time, channels)``.
    """

    def __init__(
        self,
        channels: int,
        kernel_count: int,
        kernel_length: int,
        *,
        sigma: float = 0.5,
        weight_scale: float = 1.0,
        mode: Mode = "scan",
    ) -> None:
        super().__init__()
        check_sizes(channels=channels, kernel_count=kernel_count, kernel_length=kernel_length)
        if sigma <= 0:
            raise ValueError(f"sigma must be > 0, got {sigma}")
        self.channels = channels
        self.kernel_count = kernel_count
        self.kernel_length = kernel_length
        self.sigma = float(sigma)
        self.mode = check_mode(mode)
        self.hard_mode = False
        self.weight = nn.Parameter(torch.empty(channels, kernel_count))
        nn.init.trunc_normal_(self.weight, std=math.sqrt(weight_scale / kernel_count))
        self.positions = nn.Parameter(torch.rand(channels, kernel_count) * (kernel_length - 1))

    def extra_repr(self) -> str:
        return (
            f"{self.channels}, kernel_count={self.kernel_count}, kernel_length={self.kernel_length}, "
            f"sigma={self.sigma}, hard={self.hard_mode}, mode={self.mode}"
        )

    def clamped_positions(self) -> torch.Tensor:
        return self.positions.clamp(0.0, self.kernel_length - 1)

    def delays(self) -> torch.Tensor:
        """Integer delays ``round(p)`` of shape ``(channels, K)`` (int64), as exported."""
        return self.clamped_positions().detach().round().long()

    @torch.no_grad()
    def clamp_(self) -> DCLS1d:
        """Clamp the position parameters in place (call after an optimiser step)."""
        self.positions.clamp_(0.0, self.kernel_length - 1)
        return self

    def hard(self) -> DCLS1d:
        """Use integer delays (rounded positions): the exported form. Positions are kept."""
        self.hard_mode = True
        return self

    def soft(self) -> DCLS1d:
        """Back to Gaussian interpolation of the (unchanged) real positions."""
        self.hard_mode = False
        return self

    def kernel(self) -> torch.Tensor:
        """The discrete kernel ``k`` of shape ``(channels, Gamma)``; ``k[:, n]`` weighs delay ``n``."""
        n = torch.arange(self.kernel_length, dtype=self.weight.dtype, device=self.weight.device)
        p = self.clamped_positions().unsqueeze(-1)  # (D, K, 1)
        if self.hard_mode:  # one-hot at the rounded delay; positions receive no gradient
            basis = (n == p.detach().round()).to(self.weight.dtype)
        else:
            basis = torch.exp(-0.5 * ((n - p) / self.sigma) ** 2)  # (D, K, Gamma)
        return torch.einsum("dk,dkn->dn", self.weight, basis)

    def forward(self, u: torch.Tensor) -> torch.Tensor:
        check_sequence(u, self.channels)
        k = self.kernel()
        if self.mode == "sequential":
            return self.forward_sequential(u, k)
        # conv1d is a cross-correlation: left-pad Gamma - 1 steps and flip the kernel.
        padded = F.pad(u.transpose(1, 2), (self.kernel_length - 1, 0))
        return F.conv1d(padded, k.flip(-1).unsqueeze(1), groups=self.channels).transpose(1, 2)

    def forward_sequential(self, u: torch.Tensor, k: torch.Tensor | None = None) -> torch.Tensor:
        """Reference: a delay line of ``Gamma`` past inputs, one step at a time."""
        k = self.kernel() if k is None else k
        line = [u.new_zeros(u.shape[0], self.channels)] * self.kernel_length  # line[n] = u_{t-n}
        out = []
        for u_t in u.unbind(1):
            line = [u_t] + line[:-1]
            out.append(sum(k[:, n] * line[n] for n in range(self.kernel_length)))
        return torch.stack(out, dim=1)


def param_groups(
    model: nn.Module, lr: float, *, weight_decay: float = 0.0, position_lr_scale: float = 5.0
) -> list[dict]:
    """Optimiser parameter groups for a model containing DCLS layers (mGRADE App. B, C.1).

    Three groups: matrices (weight decay ``weight_decay``); biases, norms and other vectors (no
    decay); DCLS positions (no decay, learning rate ``lr * position_lr_scale``). Every group
    carries a ``"name"`` key. Pass the result to ``torch.optim.AdamW``.
    """
    positions = {id(m.positions) for m in model.modules() if isinstance(m, DCLS1d)}
    decay: list[nn.Parameter] = []
    no_decay: list[nn.Parameter] = []
    delays: list[nn.Parameter] = []
    for p in model.parameters():  # deduplicated by torch
        if not p.requires_grad:
            continue
        if id(p) in positions:
            delays.append(p)
        elif p.dim() >= 2:
            decay.append(p)
        else:
            no_decay.append(p)
    groups = [
        {"name": "weights", "params": decay, "lr": lr, "weight_decay": weight_decay},
        {"name": "vectors", "params": no_decay, "lr": lr, "weight_decay": 0.0},
        {"name": "positions", "params": delays, "lr": lr * position_lr_scale, "weight_decay": 0.0},
    ]
    return [g for g in groups if g["params"]]
