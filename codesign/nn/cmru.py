"""The CMRU family: BMRU (eps = 0), CMRU (eps in [-1, 1]) and alphaCMRU.

Equations (CMRU paper eqs. 2-4, 7, 10-11), per step and neuron::

    c_t     = W_x x_t + b_x                    candidate
    beta_t  = |W_beta x_t + b_beta|            threshold
    z_t     = H(|c_t| - beta_t)                binary update gate (H(0) = 1)
    alpha_t = alpha            (CMRU)    or    W_alpha x_t + b_alpha   (alphaCMRU)
    h_t     = z_t * (S(c_t) * alpha_t + eps * h_{t-1}) + (1 - z_t) * h_{t-1}

H and S use the atan surrogate gradient. The update is linear in ``h_{t-1}``:
``h_t = a_t h_{t-1} + b_t`` with ``a_t = 1 - z_t (1 - eps)`` and ``b_t = z_t S(c_t) alpha_t``,
which is what the parallel scan evaluates (for ``eps = 1``, ``a = 1``: a cumulative sum). The
step-by-step path is the reference and also the deployed (quantized, saturating) evaluation path.
"""

from __future__ import annotations

from typing import Literal

import torch
from torch import nn

from codesign.nn.scan import cumulative_scan, linear_scan
from codesign.nn.surrogate import heaviside, sign

Mode = Literal["scan", "sequential"]


class CMRU(nn.Module):
    """Cumulative Memory Recurrent Unit, batch first, in the style of ``torch.nn.GRU``.

    Parameters
    ----------
    input_size, hidden_size:
        Feature sizes of the input and of the state.
    eps:
        Fraction of the previous state kept on update, in ``[-1, 1]``. ``0`` is the BMRU, ``1`` a
        selective integrator, ``-1`` a reflection (solves parity). May be changed between calls
        (eps annealing).
    alpha_surr:
        Sharpness of the atan surrogate gradient (0 = straight-through).
    alpha_init, learn_alpha:
        Initial update magnitude and whether it is trained.
    mode:
        ``"scan"`` (parallel, default) or ``"sequential"`` (reference loop).

    Shape
    -----
    ``forward(x, h0=None)`` takes ``x`` of shape ``(batch, time, input_size)`` and an optional
    ``h0`` of shape ``(batch, hidden_size)``; returns ``(h, h_last)`` with ``h`` of shape
    ``(batch, time, hidden_size)`` and ``h_last = h[:, -1]``.
    """

    input_dependent_alpha = False

    def __init__(
        self,
        input_size: int,
        hidden_size: int,
        eps: float = 1.0,
        *,
        alpha_surr: float = 1.0,
        alpha_init: float = 1.0,
        learn_alpha: bool = True,
        mode: Mode = "scan",
        mismatch: tuple[float, float, float] | list[float] | None = None,
    ) -> None:
        super().__init__()
        self.mismatch = tuple(float(v) for v in mismatch) if mismatch else None
        if self.mismatch is not None and (len(self.mismatch) != 3 or min(self.mismatch) < 0):
            raise ValueError(f"mismatch must be three sigmas >= 0 (input, up, down), got {mismatch}")
        if input_size < 1 or hidden_size < 1:
            raise ValueError(f"input_size and hidden_size must be >= 1, got {input_size} and {hidden_size}")
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.eps = eps
        self.alpha_surr = alpha_surr
        self.mode: Mode = mode
        self.candidate = nn.Linear(input_size, hidden_size)
        self.threshold = nn.Linear(input_size, hidden_size)
        if not self.input_dependent_alpha:
            self.alpha = nn.Parameter(
                torch.full((hidden_size,), float(alpha_init)), requires_grad=learn_alpha
            )

    @property
    def eps(self) -> float:
        return self._eps

    @eps.setter
    def eps(self, value: float) -> None:
        if not -1.0 <= float(value) <= 1.0:
            raise ValueError(f"eps must lie in [-1, 1], got {value}")
        self._eps = float(value)

    def extra_repr(self) -> str:
        return f"{self.input_size}, {self.hidden_size}, eps={self.eps}, alpha_surr={self.alpha_surr}, mode={self.mode}"

    def update_magnitude(self, x: torch.Tensor) -> torch.Tensor:
        """``alpha_t``: a learned vector (CMRU) broadcast over batch and time."""
        return self.alpha

    def gates(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Return ``(z, s, alpha_t)`` for every step of ``x``."""
        c = self.candidate(x)
        beta = self.threshold(x).abs()
        if self.training and self.mismatch is not None:
            return self._mismatched_gates(x, c, beta)
        z = heaviside(c.abs() - beta, self.alpha_surr)
        return z, sign(c, self.alpha_surr), self.update_magnitude(x)

    def _mismatched_gates(self, x: torch.Tensor, c: torch.Tensor, beta: torch.Tensor):
        """Mismatch-aware training: the gate of an analog BMRU chip with gain errors (one draw per
        sequence and neuron, ``codesign.analog.behavioural``). The analog cell compares
        ``I_c0 + k c`` with ``I_c0 +- k beta``, ``I_c0 = 2.5 k B`` (B: the neuron's largest beta,
        here over the batch); a gain error ``e`` on a current adds ``e (2.5 B +- value)``."""
        s_in, s_up, s_down = self.mismatch
        off = 2.5 * beta.detach().amax(dim=(0, 1), keepdim=True).clamp_min(1e-6)
        e = torch.randn(3, c.shape[0], 1, c.shape[-1], device=c.device, dtype=c.dtype)
        cc = c + e[0] * s_in * (off + c)
        up = beta + e[1] * s_up * (off + beta)
        down = beta - e[2] * s_down * (off - beta)
        z = heaviside(cc - up, self.alpha_surr) + heaviside(-cc - down, self.alpha_surr)
        return z.clamp(max=1.0), sign(cc, self.alpha_surr), self.update_magnitude(x)

    def forward(self, x: torch.Tensor, h0: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        if x.dim() != 3 or x.shape[-1] != self.input_size:
            raise ValueError(f"expected input (batch, time, {self.input_size}), got {tuple(x.shape)}")
        if self.mode == "sequential":
            h = self.forward_sequential(x, h0)
        else:
            z, s, alpha = self.gates(x)
            if self.eps == 1.0:  # closed form: a = 1, a cumulative sum of the updates
                h = cumulative_scan(z * s * alpha, h0)
            else:
                h = linear_scan(1.0 - z * (1.0 - self.eps), z * s * alpha, h0)
        return h, h[:, -1]

    def forward_sequential(
        self, x: torch.Tensor, h0: torch.Tensor | None = None, state_limits: tuple[float, float] | None = None
    ) -> torch.Tensor:
        """Step-by-step evaluation; ``state_limits`` saturates ``eps * h + u`` as the hardware does."""
        z, s, alpha = self.gates(x)
        alpha = alpha.expand_as(z)
        h = x.new_zeros(x.shape[0], self.hidden_size) if h0 is None else h0
        out = []
        for t in range(x.shape[1]):
            new = s[:, t] * alpha[:, t] + self.eps * h
            if state_limits is not None:
                new = new.clamp(*state_limits)
            h = z[:, t] * new + (1.0 - z[:, t]) * h
            out.append(h)
        return torch.stack(out, dim=1)


class BMRU(CMRU):
    """Bistable Memory Recurrent Unit: the CMRU with ``eps = 0`` (state is overwritten by +-alpha)."""

    def __init__(self, input_size: int, hidden_size: int, **kwargs) -> None:
        if kwargs.pop("eps", 0.0) != 0.0:
            raise ValueError("BMRU has eps = 0 by definition; use CMRU for other values")
        super().__init__(input_size, hidden_size, eps=0.0, **kwargs)


class AlphaCMRU(CMRU):
    """alphaCMRU: the update magnitude is input dependent, ``alpha_t = W_alpha x_t + b_alpha``."""

    input_dependent_alpha = True

    def __init__(self, input_size: int, hidden_size: int, eps: float = 1.0, **kwargs) -> None:
        kwargs.pop("learn_alpha", None)
        alpha_init = kwargs.pop("alpha_init", None)
        super().__init__(input_size, hidden_size, eps, **kwargs)
        self.alpha_proj = nn.Linear(input_size, hidden_size)
        if alpha_init is not None:
            nn.init.constant_(self.alpha_proj.bias, float(alpha_init))
        # quantization-aware training sets this to the deployed alpha_t grid
        # (:class:`codesign.quant.qat.ActivationGrid`); None trains a continuous alpha_t
        self.alpha_quant: nn.Module | None = None

    def update_magnitude(self, x: torch.Tensor) -> torch.Tensor:
        alpha = self.alpha_proj(x)
        return alpha if self.alpha_quant is None else self.alpha_quant(alpha)
