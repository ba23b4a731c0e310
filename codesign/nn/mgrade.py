"""mGRADE layer (mGRADE paper sec. 2, Fig. 1B, App. A.1): delay convolution, minGRU, MLP, LayerNorm.

One layer, for an input ``u`` of ``input_size`` channels::

    c = DCLS(u)                         causal depthwise conv, K learnable delays per channel
    h = minGRU(c)                       (or an LRU: the paper's "LRU + DCLS" baseline)
    y = skip(u) + h                     skip around the convolution and the gated RNN
    y = y + MLP(y)                      2-layer MLP with its own skip (optional)
    y = LayerNorm(y)                    (optional)

``skip`` is the identity when ``input_size == hidden_size`` and a bias-free linear map otherwise.
The DCLS positions learn at their own rate: build the optimiser from :meth:`MGRADELayer.param_groups`
(or :func:`codesign.nn.dcls.param_groups` for a whole model). ``hard()`` / ``soft()`` switch every
DCLS kernel of the layer to integer delays (export) and back.
"""

from __future__ import annotations

from typing import Literal

import torch
from torch import nn

from codesign.nn._checks import Mode, check_mode, check_sequence, check_sizes
from codesign.nn.dcls import DCLS1d, param_groups
from codesign.nn.lru import LRU
from codesign.nn.mingru import GateBiasInit, MinGRU

__all__ = ["MGRADELayer"]


class MGRADELayer(nn.Module):
    """One mGRADE layer, in the style of ``torch.nn.GRU`` (batch first).

    Parameters
    ----------
    input_size, hidden_size:
        Channels of the input (and of the convolution) and of the recurrent state / output.
    kernel_count, kernel_length:
        DCLS ``K`` (elements per channel) and ``Gamma`` (receptive field in steps).
    sigma, weight_scale:
        DCLS Gaussian width and weight-initialisation scale (see :class:`DCLS1d`).
    recurrent:
        ``"mingru"`` (mGRADE) or ``"lru"`` (the paper's LRU + DCLS baseline).
    mlp_expansion:
        Hidden width of the MLP as a multiple of ``hidden_size``; ``0`` drops the MLP.
    norm:
        Whether the layer ends with a LayerNorm.
    gate_bias_init:
        Update-gate bias initialisation of the minGRU (``"zero"``, ``"open"``, ``"closed"``,
        ``"ugi"`` or a number).
    mode:
        ``"scan"`` (parallel, default) or ``"sequential"`` (reference loops everywhere).

    Shape
    -----
    ``forward(x, h0=None)``: ``x`` is ``(batch, time, input_size)``, ``h0`` the recurrent state
    ``(batch, hidden_size)`` (complex for the LRU); returns ``(y, h_last)`` with ``y`` of shape
    ``(batch, time, hidden_size)``. The convolution starts from an all-zero delay line.
    """

    def __init__(
        self,
        input_size: int,
        hidden_size: int,
        *,
        kernel_count: int = 2,
        kernel_length: int = 16,
        sigma: float = 0.5,
        weight_scale: float = 1.0,
        recurrent: Literal["mingru", "lru"] = "mingru",
        mlp_expansion: int = 2,
        norm: bool = True,
        gate_bias_init: GateBiasInit = "zero",
        mode: Mode = "scan",
    ) -> None:
        super().__init__()
        check_sizes(input_size=input_size, hidden_size=hidden_size)
        if recurrent not in ("mingru", "lru"):
            raise ValueError(f"recurrent must be 'mingru' or 'lru', got {recurrent!r}")
        if not isinstance(mlp_expansion, int) or mlp_expansion < 0:
            raise ValueError(f"mlp_expansion must be an integer >= 0, got {mlp_expansion!r}")
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.recurrent = recurrent
        self.conv = DCLS1d(input_size, kernel_count, kernel_length, sigma=sigma, weight_scale=weight_scale)
        if recurrent == "mingru":
            self.rnn: nn.Module = MinGRU(input_size, hidden_size, gate_bias_init=gate_bias_init)
        else:
            self.rnn = LRU(input_size, hidden_size)
        self.skip = (
            nn.Identity() if input_size == hidden_size else nn.Linear(input_size, hidden_size, bias=False)
        )
        self.mlp = None
        if mlp_expansion:
            width = mlp_expansion * hidden_size
            self.mlp = nn.Sequential(nn.Linear(hidden_size, width), nn.GELU(), nn.Linear(width, hidden_size))
        self.norm = nn.LayerNorm(hidden_size) if norm else None
        self.mode = mode

    @property
    def mode(self) -> str:
        return self._mode

    @mode.setter
    def mode(self, value: str) -> None:
        self._mode = check_mode(value)
        self.conv.mode = value
        self.rnn.mode = value

    def extra_repr(self) -> str:
        return f"{self.input_size}, {self.hidden_size}, recurrent={self.recurrent}, mode={self.mode}"

    def hard(self) -> MGRADELayer:
        """Integer delays in the convolution (export form)."""
        self.conv.hard()
        return self

    def soft(self) -> MGRADELayer:
        """Gaussian-interpolated delays (training form)."""
        self.conv.soft()
        return self

    def param_groups(
        self, lr: float, *, weight_decay: float = 0.0, position_lr_scale: float = 5.0
    ) -> list[dict]:
        """Optimiser groups with the DCLS positions at ``lr * position_lr_scale`` (see :func:`param_groups`)."""
        return param_groups(self, lr, weight_decay=weight_decay, position_lr_scale=position_lr_scale)

    def forward(self, x: torch.Tensor, h0: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        check_sequence(x, self.input_size)
        h, h_last = self.rnn(self.conv(x), h0)
        y = self.skip(x) + h
        if self.mlp is not None:
            y = y + self.mlp(y)
        if self.norm is not None:
            y = self.norm(y)
        return y, h_last
