"""Hybrid State Recurrent Unit (HSRU paper, "Methods"), batch first.

Per step and neuron, with an analog potential ``V`` and a digital flip bit ``D``::

    I_t     = W_in x_t + b_in                          input current
    alpha_v = exp(-softplus(t_v))                      learnable leak, in (0, 1)
    V_t     = alpha_v V_{t-1} + I_t                    leaky integration (no reset)
    S_t     = H(V_t - theta)                           spike; fast-sigmoid surrogate
    D_t     = D_{t-1} (1 - S_t) + (1 - D_{t-1}) S_t    flip on spike: D_{t-1} XOR S_t
    y_t     = tanh(W_out [V_t; D_t] + b_out)           fused output

The surrogate gradient of the spike is ``dS/dV ~ 1 / (1 + k |V - theta|)^2``. Both recurrences are
scans: ``V`` a linear scan with a per-neuron constant gate, ``D`` the parity scan
:func:`codesign.nn.scan.xor_scan` (``D_t = (D_0 + sum S) mod 2``), exactly binary at any length and
differentiable as the XOR expression above.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from codesign.nn._checks import Mode, check_mode, check_sequence, check_sizes, check_state
from codesign.nn.scan import linear_scan, xor_scan
from codesign.nn.surrogate import spike

__all__ = ["HSRU", "spike"]


class HSRU(nn.Module):
    """Hybrid State Recurrent Unit in the style of ``torch.nn.GRU`` (batch first).

    Parameters
    ----------
    input_size, hidden_size:
        Feature sizes of the input and of both states (and of the output).
    slope:
        ``k``, the steepness of the fast-sigmoid surrogate.
    leak_init:
        Initial ``alpha_v`` in ``(0, 1)``.
    threshold_init:
        Initial firing threshold ``theta``.
    mode:
        ``"scan"`` (parallel, default) or ``"sequential"`` (reference loop).

    Shape
    -----
    ``forward(x, state=None)``: ``x`` is ``(batch, time, input_size)``; ``state`` an optional pair
    ``(V0, D0)`` of ``(batch, hidden_size)`` tensors (``D0`` binary), zeros when omitted. Returns
    ``(y, (V_last, D_last))`` with ``y`` of shape ``(batch, time, hidden_size)``.
    """

    def __init__(
        self,
        input_size: int,
        hidden_size: int,
        *,
        slope: float = 10.0,
        leak_init: float = 0.9,
        threshold_init: float = 1.0,
        mode: Mode = "scan",
    ) -> None:
        super().__init__()
        check_sizes(input_size=input_size, hidden_size=hidden_size)
        if not 0.0 < leak_init < 1.0:
            raise ValueError(f"leak_init must lie in (0, 1), got {leak_init}")
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.slope = float(slope)
        self.mode = check_mode(mode)
        self.input = nn.Linear(input_size, hidden_size)
        # softplus(t_v) = -log(leak_init)  =>  t_v = log(expm1(-log(leak_init)))
        self.time_constant = nn.Parameter(
            torch.full((hidden_size,), math.log(math.expm1(-math.log(leak_init))))
        )
        self.threshold = nn.Parameter(torch.full((hidden_size,), float(threshold_init)))
        self.output = nn.Linear(2 * hidden_size, hidden_size)

    def extra_repr(self) -> str:
        return f"{self.input_size}, {self.hidden_size}, slope={self.slope}, mode={self.mode}"

    def leak(self) -> torch.Tensor:
        """``alpha_v = exp(-softplus(t_v))``."""
        return torch.exp(-F.softplus(self.time_constant))

    def forward(
        self, x: torch.Tensor, state: tuple[torch.Tensor, torch.Tensor] | None = None
    ) -> tuple[torch.Tensor, tuple[torch.Tensor, torch.Tensor]]:
        check_sequence(x, self.input_size)
        v0, d0 = (None, None) if state is None else state
        check_state(v0, x.shape[0], self.hidden_size, "V0")
        check_state(d0, x.shape[0], self.hidden_size, "D0")
        current = self.input(x)
        alpha = self.leak()
        if self.mode == "sequential":
            v = x.new_zeros(x.shape[0], self.hidden_size) if v0 is None else v0
            d = x.new_zeros(x.shape[0], self.hidden_size) if d0 is None else d0
            vs, ds = [], []
            for i_t in current.unbind(1):
                v = alpha * v + i_t
                s = spike(v - self.threshold, self.slope)
                d = d * (1 - s) + (1 - d) * s
                vs.append(v)
                ds.append(d)
            v_seq, d_seq = torch.stack(vs, dim=1), torch.stack(ds, dim=1)
        else:
            v_seq = linear_scan(alpha.expand_as(current), current, v0)
            d_seq = xor_scan(spike(v_seq - self.threshold, self.slope), d0)
        y = torch.tanh(self.output(torch.cat([v_seq, d_seq], dim=-1)))
        return y, (v_seq[:, -1], d_seq[:, -1])
