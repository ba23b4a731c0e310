"""Linear Recurrent Unit (CMRU paper App. F.7.1, eqs. 29-31; Orvieto et al. 2023), batch first.

Per step, with a complex diagonal state ``x_t`` of size ``hidden_size``::

    Lambda = exp(-exp(nu) + i exp(theta))             eigenvalues, |Lambda| < 1
    gamma  = sqrt(1 - |Lambda|^2)                     input normalisation
    x_t    = Lambda * x_{t-1} + (gamma * B) u_t       B complex (hidden, input)
    y_t    = Re(C x_t) + D u_t                        C complex (hidden, hidden), D real

``nu`` and ``theta`` are initialised so that ``|Lambda|`` is uniform on the ring
``[r_min, r_max]`` and the phase uniform on ``[0, max_phase]``. The recurrence is a complex
:func:`codesign.nn.linear_scan` with a gate that is constant over batch and time.
"""

from __future__ import annotations

import math
from typing import Literal

import torch
from torch import nn

from codesign.nn._checks import Mode, check_mode, check_sequence, check_sizes
from codesign.nn.scan import linear_scan

__all__ = ["LRU"]


class LRU(nn.Module):
    """Linear Recurrent Unit in the style of ``torch.nn.GRU`` (batch first).

    Parameters
    ----------
    input_size, hidden_size:
        Feature sizes of the input ``u`` and of the complex state (also the output size).
    r_min, r_max:
        Ring of initial eigenvalue magnitudes, ``0 <= r_min < r_max < 1`` (paper: 0.9, 0.999).
    max_phase:
        Initial phases are uniform on ``[0, max_phase]`` (paper: ``2 pi``).
    gamma:
        ``"tied"`` (default): ``gamma = sqrt(1 - |Lambda|^2)`` follows the eigenvalues, as in the
        CMRU paper; ``"learned"``: a free parameter initialised to that value (Orvieto et al.).
    mode:
        ``"scan"`` (parallel, default) or ``"sequential"`` (reference loop).

    Shape
    -----
    ``forward(u, x0=None)``: ``u`` is ``(batch, time, input_size)``; ``x0`` a complex (or real)
    ``(batch, hidden_size)`` initial state. Returns ``(y, x_last)``: the real output
    ``(batch, time, hidden_size)`` and the complex last state ``(batch, hidden_size)``.
    """

    def __init__(
        self,
        input_size: int,
        hidden_size: int,
        *,
        r_min: float = 0.9,
        r_max: float = 0.999,
        max_phase: float = 2 * math.pi,
        gamma: Literal["tied", "learned"] = "tied",
        mode: Mode = "scan",
    ) -> None:
        super().__init__()
        check_sizes(input_size=input_size, hidden_size=hidden_size)
        if not 0.0 <= r_min < r_max < 1.0:
            raise ValueError(f"need 0 <= r_min < r_max < 1, got r_min={r_min}, r_max={r_max}")
        if gamma not in ("tied", "learned"):
            raise ValueError(f"gamma must be 'tied' or 'learned', got {gamma!r}")
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.mode = check_mode(mode)
        self.gamma_mode = gamma
        u1, u2 = torch.rand(hidden_size), torch.rand(hidden_size)
        magnitude_sq = u1 * (r_max**2 - r_min**2) + r_min**2
        self.nu_log = nn.Parameter(torch.log(-0.5 * torch.log(magnitude_sq)))
        self.theta_log = nn.Parameter(torch.log(max_phase * u2 + 1e-12))
        if gamma == "learned":
            self.gamma_log = nn.Parameter(0.5 * torch.log1p(-magnitude_sq))
        self.B_re = nn.Parameter(torch.randn(hidden_size, input_size) / math.sqrt(2 * input_size))
        self.B_im = nn.Parameter(torch.randn(hidden_size, input_size) / math.sqrt(2 * input_size))
        self.C_re = nn.Parameter(torch.randn(hidden_size, hidden_size) / math.sqrt(hidden_size))
        self.C_im = nn.Parameter(torch.randn(hidden_size, hidden_size) / math.sqrt(hidden_size))
        self.D = nn.Linear(input_size, hidden_size, bias=False)

    def extra_repr(self) -> str:
        return f"{self.input_size}, {self.hidden_size}, gamma={self.gamma_mode}, mode={self.mode}"

    def eigenvalues(self) -> torch.Tensor:
        """``Lambda = exp(-exp(nu) + i exp(theta))`` (complex, ``hidden_size``)."""
        return torch.exp(torch.complex(-torch.exp(self.nu_log), torch.exp(self.theta_log)))

    def normalisation(self) -> torch.Tensor:
        if self.gamma_mode == "learned":
            return torch.exp(self.gamma_log)
        return torch.sqrt(-torch.expm1(-2 * torch.exp(self.nu_log)))  # sqrt(1 - |Lambda|^2)

    def drive(self, u: torch.Tensor) -> torch.Tensor:
        """``(gamma * B) u_t`` for every step (complex)."""
        gamma = self.normalisation().unsqueeze(-1)
        return torch.complex(u @ (gamma * self.B_re).T, u @ (gamma * self.B_im).T)

    def readout(self, u: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        """``Re(C x_t) + D u_t``."""
        return x.real @ self.C_re.T - x.imag @ self.C_im.T + self.D(u)

    def forward(self, u: torch.Tensor, x0: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        check_sequence(u, self.input_size)
        batch = u.shape[0]
        if x0 is not None:
            if tuple(x0.shape) != (batch, self.hidden_size):
                raise ValueError(f"x0 must be (batch, {self.hidden_size}), got {tuple(x0.shape)}")
            if not x0.is_complex():
                x0 = torch.complex(x0, torch.zeros_like(x0))
        lam = self.eigenvalues()
        bu = self.drive(u)
        if self.mode == "sequential":
            x = bu.new_zeros(batch, self.hidden_size) if x0 is None else x0
            out = []
            for bu_t in bu.unbind(1):
                x = lam * x + bu_t
                out.append(x)
            xs = torch.stack(out, dim=1)
        else:
            xs = linear_scan(lam.expand_as(bu), bu, x0)
        return self.readout(u, xs), xs[:, -1]
