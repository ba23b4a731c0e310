"""minGRU (CMRU paper App. F.7.2, eqs. 32-34; Feng et al. 2024), batch first.

Per step and neuron::

    z_t = sigmoid(W_z x_t + b_z)              update gate, in (0, 1)
    c_t = W_h x_t + b_h                       candidate (linear)
    h_t = (1 - z_t) h_{t-1} + z_t c_t

The update is linear in ``h_{t-1}`` with ``a_t = 1 - z_t`` and ``b_t = z_t c_t``; the parallel path
is :func:`codesign.nn.linear_scan` on real, signed states (no log-space trick, so the candidate
needs no positive activation).
"""

from __future__ import annotations

import math
from typing import Literal

import torch
from torch import nn

from codesign.nn._checks import Mode, check_mode, check_sequence, check_sizes, check_state
from codesign.nn.scan import linear_scan

__all__ = ["GateBiasInit", "MinGRU", "init_gate_bias"]

GateBiasInit = float | Literal["zero", "open", "closed", "ugi"]

_SATURATED = 4.0  # sigmoid(4) = 0.982


def init_gate_bias(bias: torch.Tensor, scheme: GateBiasInit) -> None:
    """Initialise an update-gate bias in place (mGRADE App. B).

    ``"zero"``; ``"open"`` (``sigmoid(b) ~ 1``, the state follows the input); ``"closed"``
    (``sigmoid(b) ~ 0``, the state is retained); ``"ugi"``, the uniform gate initialisation of Gu et
    al. (2020): ``sigmoid(b) ~ U[1/d, 1 - 1/d]``; or a number used for every unit.
    """
    with torch.no_grad():
        if isinstance(scheme, (int, float)) and not isinstance(scheme, bool):
            bias.fill_(float(scheme))
        elif scheme == "zero":
            bias.zero_()
        elif scheme == "open":
            bias.fill_(_SATURATED)
        elif scheme == "closed":
            bias.fill_(-_SATURATED)
        elif scheme == "ugi":
            d = bias.numel()
            low = 1.0 / max(d, 2)
            u = torch.empty_like(bias).uniform_(low, 1.0 - low)
            bias.copy_(torch.log(u) - torch.log1p(-u))
        else:
            raise ValueError(
                f"gate_bias_init must be a number or one of 'zero', 'open', 'closed', 'ugi'; got {scheme!r}"
            )


class MinGRU(nn.Module):
    """Minimal GRU in the style of ``torch.nn.GRU`` (batch first).

    Parameters
    ----------
    input_size, hidden_size:
        Feature sizes of the input and of the state.
    bias:
        Whether the gate and candidate projections have biases.
    gate_bias_init:
        ``"zero"`` (default), ``"open"``, ``"closed"``, ``"ugi"`` or a number; see
        :func:`init_gate_bias`.
    mode:
        ``"scan"`` (parallel, default) or ``"sequential"`` (reference loop).

    Shape
    -----
    ``forward(x, h0=None)``: ``x`` is ``(batch, time, input_size)``, ``h0`` ``(batch, hidden_size)``
    (zeros when omitted); returns ``(h, h_last)``, ``h`` of shape ``(batch, time, hidden_size)``.
    """

    def __init__(
        self,
        input_size: int,
        hidden_size: int,
        *,
        bias: bool = True,
        gate_bias_init: GateBiasInit = "zero",
        mode: Mode = "scan",
    ) -> None:
        super().__init__()
        check_sizes(input_size=input_size, hidden_size=hidden_size)
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.mode = check_mode(mode)
        # One projection for [gate pre-activation | candidate].
        self.projection = nn.Linear(input_size, 2 * hidden_size, bias=bias)
        nn.init.trunc_normal_(self.projection.weight, std=math.sqrt(1.0 / input_size))
        if bias:
            nn.init.zeros_(self.projection.bias)
            init_gate_bias(self.projection.bias[:hidden_size], gate_bias_init)

    def extra_repr(self) -> str:
        return f"{self.input_size}, {self.hidden_size}, mode={self.mode}"

    def gates(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Return ``(z, c)``: the update gate and the candidate at every step."""
        pre_z, c = self.projection(x).chunk(2, dim=-1)
        return torch.sigmoid(pre_z), c

    def forward(self, x: torch.Tensor, h0: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        check_sequence(x, self.input_size)
        check_state(h0, x.shape[0], self.hidden_size)
        z, c = self.gates(x)
        if self.mode == "sequential":
            h = x.new_zeros(x.shape[0], self.hidden_size) if h0 is None else h0
            out = []
            for z_t, c_t in zip(z.unbind(1), c.unbind(1), strict=True):
                h = (1 - z_t) * h + z_t * c_t
                out.append(h)
            hs = torch.stack(out, dim=1)
        else:
            hs = linear_scan(1 - z, z * c, h0)
        return hs, hs[:, -1]
