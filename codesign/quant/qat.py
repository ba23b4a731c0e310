"""Quantization-aware training: fake-quantized weights with straight-through gradients.

Every ``Linear`` of a :class:`~codesign.nn.hardware.HardwareStack` (and the CMRU ``alpha``) is
re-parametrized so that the forward pass sees its weights rounded to the power-of-two grid the
export will use (the finest per-row scale that fits ``bits``), while the gradient flows to the
float weights unchanged. Fine-tuning a float run this way (``codesign quantize``) recovers most of
the accuracy lost by post-training rounding at 4 bits and below.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn.utils import parametrize


def _row_scale(w: torch.Tensor, bits: int) -> torch.Tensor:
    """Per-row power-of-two scale ``2**e`` with ``max|row| * 2**e <= 2**(bits-1) - 1``."""
    hi = (1 << (bits - 1)) - 1
    m = w.detach().abs().amax(dim=-1, keepdim=True).clamp_min(1e-12)
    return torch.pow(2.0, torch.floor(torch.log2(hi / m)))


class FakeQuant(nn.Module):
    """``w -> round(w * 2**e) / 2**e`` forward, identity backward (straight-through)."""

    def __init__(self, bits: int, per_row: bool = True) -> None:
        super().__init__()
        self.bits, self.per_row = bits, per_row

    def forward(self, w: torch.Tensor) -> torch.Tensor:
        flat = w if self.per_row and w.dim() > 1 else w.reshape(1, -1)
        scale = _row_scale(flat, self.bits)
        q = torch.floor(flat * scale + 0.5) / scale
        q = q.reshape(w.shape)
        return w + (q - w).detach()


def add_fake_quant(model: nn.Module, weight_bits: int, alpha_bits: int | None = None) -> nn.Module:
    """Fake-quantize every Linear weight (per row) and every CMRU ``alpha`` (per tensor) in place."""
    for module in model.modules():
        if isinstance(module, nn.Linear):
            parametrize.register_parametrization(module, "weight", FakeQuant(weight_bits))
        if alpha_bits and isinstance(getattr(module, "alpha", None), nn.Parameter):
            parametrize.register_parametrization(module, "alpha", FakeQuant(alpha_bits, per_row=False))
    return model


def remove_fake_quant(model: nn.Module) -> nn.Module:
    """Bake the fake-quantized values into plain parameters (what export then rounds, exactly)."""
    for module in model.modules():
        if parametrize.is_parametrized(module):
            for name in list(module.parametrizations.keys()):
                parametrize.remove_parametrizations(module, name, leave_parametrized=True)
    return model
