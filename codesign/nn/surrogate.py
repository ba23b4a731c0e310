"""Heaviside and sign with the atan surrogate gradient (BMRU paper eqs. 12-13).

Forward passes are exact (``H(0) = 1``, ``S(0) = +1``, matching the hardware's ``|c| >= |b|`` and
sign(0) = +1); backward passes use ``dH/dx ~ 1 / (1 + (pi * alpha_surr * x)^2)`` and
``dS/dx ~ 2 dH/dx``. ``alpha_surr = 0`` is the straight-through estimator. The HSRU's spike uses
the fast-sigmoid surrogate ``1 / (1 + k |x|)^2`` instead (HSRU paper).
"""

from __future__ import annotations

import math

import torch


def atan_surrogate_grad(x: torch.Tensor, alpha_surr: float) -> torch.Tensor:
    return 1.0 / (1.0 + (math.pi * alpha_surr * x) ** 2)


class _Heaviside(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x: torch.Tensor, alpha_surr: float) -> torch.Tensor:
        ctx.save_for_backward(x)
        ctx.alpha_surr = alpha_surr
        return (x >= 0).to(x.dtype)

    @staticmethod
    def backward(ctx, grad: torch.Tensor):
        (x,) = ctx.saved_tensors
        return grad * atan_surrogate_grad(x, ctx.alpha_surr), None


class _Sign(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x: torch.Tensor, alpha_surr: float) -> torch.Tensor:
        ctx.save_for_backward(x)
        ctx.alpha_surr = alpha_surr
        return torch.where(x >= 0, 1.0, -1.0).to(x.dtype)

    @staticmethod
    def backward(ctx, grad: torch.Tensor):
        (x,) = ctx.saved_tensors
        return 2.0 * grad * atan_surrogate_grad(x, ctx.alpha_surr), None


def heaviside(x: torch.Tensor, alpha_surr: float = 1.0) -> torch.Tensor:
    """``1 if x >= 0 else 0`` with the atan surrogate gradient."""
    return _Heaviside.apply(x, alpha_surr)


def sign(x: torch.Tensor, alpha_surr: float = 1.0) -> torch.Tensor:
    """``+1 if x >= 0 else -1`` (sign(0) = +1) with twice the atan surrogate gradient."""
    return _Sign.apply(x, alpha_surr)


class _Spike(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x: torch.Tensor, slope: float) -> torch.Tensor:
        ctx.save_for_backward(x)
        ctx.slope = slope
        return (x >= 0).to(x.dtype)

    @staticmethod
    def backward(ctx, grad: torch.Tensor):
        (x,) = ctx.saved_tensors
        return grad / (1.0 + ctx.slope * x.abs()) ** 2, None


def spike(x: torch.Tensor, slope: float = 10.0) -> torch.Tensor:
    """``1 if x >= 0 else 0`` with the fast-sigmoid surrogate gradient ``1 / (1 + slope |x|)^2``."""
    return _Spike.apply(x, slope)
