"""The hardware cells: the recurrent layer kinds the accelerator family runs, and their integer grid.

Each cell trains in float with parallel scans and surrogate gradients; ``forward_sequential(x,
quant=...)`` is the step-by-step path that, with the :class:`LayerQuant` of a bundle, computes
exactly what the golden model computes (in float64, on power-of-two grids). The stack that puts
them behind fronts and a readout is :class:`codesign.nn.hardware.HardwareStack`; the cells live
apart from it so that the selective-update paths (``codesign.nn.selective``) sit between the
two without an import circle.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from codesign.nn.cmru import BMRU, CMRU, AlphaCMRU
from codesign.nn.scan import linear_scan, xor_scan
from codesign.nn.surrogate import heaviside


@dataclass(frozen=True)
class LayerQuant:
    """The integer grid of one deployed layer, in float64 terms.

    ``state_frac``: the state is a multiple of ``2**-state_frac``; ``state_bits`` its saturating
    width; ``alpha_frac``/``alpha_bits`` the alphaCMRU update grid (state units); ``gate_bits``
    the minGRU gate grid; ``leak_shift`` the HSRU leak.
    """

    state_frac: int
    state_bits: int
    alpha_bits: int = 8
    gate_bits: int = 6
    leak_shift: int = 4

    @property
    def limits(self) -> tuple[float, float]:
        lo, hi = -(1 << (self.state_bits - 1)), (1 << (self.state_bits - 1)) - 1
        return lo * 2.0**-self.state_frac, hi * 2.0**-self.state_frac

    def to_grid(self, v: torch.Tensor, frac: int | None = None) -> torch.Tensor:
        """``floor`` onto the ``2**-frac`` grid (the integer ``shr``)."""
        f = self.state_frac if frac is None else frac
        return torch.floor(v * 2.0**f) * 2.0**-f


def _sat(v: torch.Tensor, q: LayerQuant) -> torch.Tensor:
    return v.clamp(*q.limits)


class BinaryGatedMinGRU(nn.Module):
    """minGRU with a binary, input-dependent update gate (selective update).

    ``g_t = H(W_g x_t + b_g)``, ``h_t = g_t * (W_c x_t + b_c) + (1 - g_t) * h_{t-1}``: when the
    gate is shut the state is held exactly (persistent memory), when open it is overwritten.
    """

    def __init__(self, input_size: int, hidden_size: int, *, alpha_surr: float = 1.0, **_) -> None:
        super().__init__()
        self.input_size, self.hidden_size, self.alpha_surr = input_size, hidden_size, alpha_surr
        self.candidate = nn.Linear(input_size, hidden_size)
        self.gate = nn.Linear(input_size, hidden_size)

    def forward(self, x: torch.Tensor, h0: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        g = heaviside(self.gate(x), self.alpha_surr)
        h = linear_scan(1.0 - g, g * self.candidate(x), h0)
        return h, h[:, -1]

    def forward_sequential(self, x: torch.Tensor, quant: LayerQuant | None = None) -> torch.Tensor:
        u = self.candidate(x)
        if quant is not None:
            u = _sat(quant.to_grid(u), quant)
        g = self.gate(x) >= 0
        h = x.new_zeros(x.shape[0], self.hidden_size)
        out = []
        for t in range(x.shape[1]):
            h = torch.where(g[:, t], u[:, t], h)
            out.append(h)
        return torch.stack(out, dim=1)


class HardSigmoidMinGRU(nn.Module):
    """minGRU with a hard-sigmoid gate ``z = clamp(W_z x + b_z + 1/2, 0, 1)`` (quantizable, as in mGRADE).

    ``h_t = h_{t-1} + z_t (c_t - h_{t-1})``. On hardware ``z`` has ``gate_bits`` fractional bits
    and the product is floored onto the state grid.
    """

    def __init__(self, input_size: int, hidden_size: int, **_) -> None:
        super().__init__()
        self.input_size, self.hidden_size = input_size, hidden_size
        self.candidate = nn.Linear(input_size, hidden_size)
        self.gate = nn.Linear(input_size, hidden_size)
        # quantization-aware training sets this to the deployed gate grid
        # (:class:`codesign.quant.qat.ActivationGrid`); None trains a continuous gate
        self.gate_quant: nn.Module | None = None

    def forward(self, x: torch.Tensor, h0: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        a = self.gate(x)
        z = ((a if self.gate_quant is None else self.gate_quant(a)) + 0.5).clamp(0.0, 1.0)
        h = linear_scan(1.0 - z, z * self.candidate(x), h0)
        return h, h[:, -1]

    def forward_sequential(self, x: torch.Tensor, quant: LayerQuant | None = None) -> torch.Tensor:
        u = self.candidate(x)
        a = self.gate(x)
        if quant is None:
            z = (a + 0.5).clamp(0.0, 1.0)
        else:
            u = _sat(quant.to_grid(u), quant)
            z = (quant.to_grid(a, quant.gate_bits) + 0.5).clamp(0.0, 1.0)
        h = x.new_zeros(x.shape[0], self.hidden_size)
        out = []
        for t in range(x.shape[1]):
            step = z[:, t] * (u[:, t] - h)
            h = h + (step if quant is None else quant.to_grid(step))
            out.append(h)
        return torch.stack(out, dim=1)


class HardwareHSRU(nn.Module):
    """HSRU with a power-of-two leak: ``V_t = (1 - 2**-k) V_{t-1} + I_t``, ``s_t = H(V_t - theta)``,
    ``D_t = D_{t-1} xor s_t``; the layer outputs ``D`` (0/1). Straight-through sigmoid surrogate for ``H``
    (``d sigmoid(slope v)``; the software HSRU uses the fast sigmoid of :func:`codesign.nn.surrogate.spike`).
    """

    def __init__(
        self,
        input_size: int,
        hidden_size: int,
        *,
        leak_shift: int = 4,
        slope: float = 10.0,
        threshold_init: float = 0.5,
        **_,
    ) -> None:
        super().__init__()
        self.input_size, self.hidden_size = input_size, hidden_size
        self.leak_shift, self.slope = leak_shift, slope
        self.current = nn.Linear(input_size, hidden_size)
        self.theta = nn.Parameter(torch.full((hidden_size,), float(threshold_init)))

    def potentials(self, x: torch.Tensor) -> torch.Tensor:
        i = self.current(x)
        return linear_scan(torch.full_like(i, 1.0 - 2.0**-self.leak_shift), i)

    def forward(self, x: torch.Tensor, h0: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        v = self.potentials(x) - self.theta
        hard = (v >= 0).to(v.dtype)
        soft = torch.sigmoid(self.slope * v)  # surrogate: straight through sigmoid(slope v)
        spikes = hard + (soft - soft.detach())  # exactly 0 or 1 forward; grouping keeps it exact
        d = xor_scan(spikes, h0)
        return d, d[:, -1]

    def forward_sequential(self, x: torch.Tensor, quant: LayerQuant | None = None) -> torch.Tensor:
        i = self.current(x)
        if quant is not None:
            i = quant.to_grid(i)
        v = x.new_zeros(x.shape[0], self.hidden_size)
        d = torch.zeros_like(v)
        out = []
        for t in range(x.shape[1]):
            if quant is None:
                v = (1.0 - 2.0**-self.leak_shift) * v + i[:, t]
            else:
                v = _sat(v - quant.to_grid(v * 2.0**-quant.leak_shift) + i[:, t], quant)
            d = torch.where(v >= self.theta, 1.0 - d, d)
            out.append(d)
        return torch.stack(out, dim=1)


def _cmru_sequential(cell: CMRU, x: torch.Tensor, quant: LayerQuant | None) -> torch.Tensor:
    if quant is None:
        return cell.forward_sequential(x)
    c, b = cell.candidate(x), cell.threshold(x)
    g = c.abs() >= b.abs()
    s = torch.where(c >= 0, 1.0, -1.0).to(x.dtype)
    if isinstance(cell, AlphaCMRU):
        lo, hi = -(1 << (quant.alpha_bits - 1)), (1 << (quant.alpha_bits - 1)) - 1
        alpha = quant.to_grid(cell.alpha_proj(x)).clamp(
            lo * 2.0**-quant.state_frac, hi * 2.0**-quant.state_frac
        )
    else:
        alpha = cell.alpha.expand_as(c)
    h = x.new_zeros(x.shape[0], cell.hidden_size)
    out = []
    for t in range(x.shape[1]):
        h = torch.where(g[:, t], _sat(cell.eps * h + s[:, t] * alpha[:, t], quant), h)
        out.append(h)
    return torch.stack(out, dim=1)


HW_CELLS: dict[str, type[nn.Module]] = {
    "cmru": CMRU,
    "bmru": BMRU,
    "alphacmru": AlphaCMRU,
    "bgmingru": BinaryGatedMinGRU,
    "mingru": HardSigmoidMinGRU,
    "hsru": HardwareHSRU,
}
"""Bundle cell name -> torch module of the hardware profile."""


def layer_sequential(cell: nn.Module, x: torch.Tensor, quant: LayerQuant | None = None) -> torch.Tensor:
    """Step-by-step output of any hardware cell (exact integer rules when ``quant`` is given)."""
    if isinstance(cell, CMRU):
        return _cmru_sequential(cell, x, quant)
    return cell.forward_sequential(x, quant)
