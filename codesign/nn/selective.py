"""Selective update as a layer option of the hardware family (suRNN paper, eq. 4 and eq. 6).

Neuron ``i`` of a layer with ``selective: {period: T, ...}`` applies its cell's own rule at step
``t`` only when ``g_{t,i} = H(b_i + sum_k alpha_ik sin(omega_k t + phi_ik))`` is 1; otherwise its
whole state is kept (HSRU: the potential and the digital state). The frequencies are the
harmonics ``omega_k = 2 pi k / T`` of a power-of-two period ``T``, so the generator repeats
exactly every ``T`` steps and its deployed form is one ``T x d`` table of bits
(``layers.<l>.su_gate``, ``docs/integer-semantics.md``).

Quantization-aware by construction: the layer is trained with the table the generator gives over
one period, tiled over the sequence (``g_t = table[t mod T]``), so the deployed schedule *is* the
trained one; the export reads :meth:`SelectiveSchedule.table` from the trained model in its own
dtype. ``t`` counts from 0 at a sequence's first step. The gate's backward is the generator's
surrogate (:func:`codesign.nn.surnn.step_gate`).

* :func:`selective_forward`: the parallel (scan) path used for training, any cell kind;
* :func:`selective_sequential`: the step-by-step path, with a :class:`LayerQuant` exactly the
  golden model's integer rule.
"""

from __future__ import annotations

import math

import torch
from torch import nn

from codesign.nn.cmru import CMRU, AlphaCMRU
from codesign.nn.hardware_cells import BinaryGatedMinGRU, HardSigmoidMinGRU, HardwareHSRU, _sat
from codesign.nn.scan import cumulative_scan, linear_scan, xor_scan
from codesign.nn.surnn import RhythmicGate, Surrogate
from codesign.nn.surrogate import heaviside

__all__ = ["SelectiveSchedule", "selective_forward", "selective_sequential", "step_rate"]


class SelectiveSchedule(nn.Module):
    """The rhythmic gate generator with harmonic frequencies of a power-of-two ``period``.

    Parameters
    ----------
    hidden_size:
        Neurons of the layer.
    period:
        ``T`` (a power of two, at most 4096): the schedule repeats every ``T`` steps.
    harmonics:
        ``K`` frequencies ``2 pi k / T``, ``k = 1 .. K`` (default ``min(hidden_size, max(1, T // 2))``).
    surrogate, beta:
        Backward of the Heaviside (:func:`codesign.nn.surnn.step_gate`).
    bias_init:
        Initial ``b_i``: positive values open the gates more often (a higher update rate).
    share:
        Neurons ``share x j .. share x j + share - 1`` share one generator (one gate). With
        ``share`` equal to the accelerator's lanes ``P`` every lane group opens and closes as a
        whole, so the hardware walks exactly ``ceil(open / P)`` groups per step.
    """

    def __init__(
        self,
        hidden_size: int,
        period: int,
        *,
        harmonics: int | None = None,
        surrogate: Surrogate = "sigmoid",
        beta: float = 4.0,
        bias_init: float = 0.0,
        share: int = 1,
    ) -> None:
        super().__init__()
        if not isinstance(period, int) or period < 1 or period > 4096 or period & (period - 1):
            raise ValueError(f"selective.period must be a power of two in 1..4096, got {period!r}")
        if not isinstance(share, int) or share < 1:
            raise ValueError(f"selective.share must be a positive integer, got {share!r}")
        k = harmonics if harmonics is not None else min(hidden_size, max(1, period // 2))
        if k < 1:
            raise ValueError(f"selective.harmonics must be at least 1, got {k}")
        self.hidden_size, self.period, self.share = hidden_size, period, share
        units = -(-hidden_size // share)
        self.generator = RhythmicGate(units, k, surrogate=surrogate, beta=beta, bias_init=bias_init)
        omega = 2 * math.pi * torch.arange(1, k + 1, dtype=torch.float64) / period
        self.generator.omega = omega.to(self.generator.omega.dtype)
        self.register_buffer("fixed", None)

    def load_table(self, table: torch.Tensor) -> None:
        """Freeze the schedule to a deployed ``(period, hidden_size)`` table of 0/1."""
        if tuple(table.shape) != (self.period, self.hidden_size):
            raise ValueError(f"su_gate must be {(self.period, self.hidden_size)}, got {tuple(table.shape)}")
        self.fixed = (table != 0).to(torch.get_default_dtype())

    def table(self) -> torch.Tensor:
        """Gates ``(period, hidden_size)`` of steps ``t = 0 .. period - 1`` (0/1, with the surrogate's
        gradient unless the table is frozen)."""
        if self.fixed is not None:
            return self.fixed
        # RhythmicGate evaluates t = offset + 1 ..: offset -1 starts at t = 0
        table = self.generator(self.period, offset=-1)
        if self.share > 1:
            table = table.repeat_interleave(self.share, dim=1)[:, : self.hidden_size]
        return table

    def gates(self, steps: int) -> torch.Tensor:
        """Gates ``(steps, hidden_size)``: row ``t mod period`` of :meth:`table`."""
        table = self.table()
        reps = -(-steps // self.period)
        return table.repeat(reps, 1)[:steps]

    def integer_table(self) -> torch.Tensor:
        """The deployed table as int64 0/1 (what ``layers.<l>.su_gate`` holds)."""
        with torch.no_grad():
            return (self.table() > 0).to(torch.int64)


def _batch(su: torch.Tensor, x: torch.Tensor, hidden: int) -> torch.Tensor:
    return su.to(x.dtype).unsqueeze(0).expand(x.shape[0], x.shape[1], hidden)


def selective_forward(cell: nn.Module, x: torch.Tensor, su: torch.Tensor) -> torch.Tensor:
    """Parallel path of any hardware cell with selective update: the output ``(B, T, d)``.

    ``su`` is ``(T, d)`` (0/1 forward). For the gated cells the selective gate multiplies the cell's
    own gate (closed: ``h_t = h_{t-1}``); for HSRU it holds the potential and masks the spike.
    """
    g = _batch(su, x, cell.hidden_size)
    if isinstance(cell, CMRU):
        z, s, alpha = cell.gates(x)
        z = z * g
        if cell.eps == 1.0:
            return cumulative_scan(z * s * alpha)
        return linear_scan(1.0 - z * (1.0 - cell.eps), z * s * alpha)
    if isinstance(cell, BinaryGatedMinGRU):
        z = heaviside(cell.gate(x), cell.alpha_surr) * g
        return linear_scan(1.0 - z, z * cell.candidate(x))
    if isinstance(cell, HardSigmoidMinGRU):
        z = (cell.gate(x) + 0.5).clamp(0.0, 1.0) * g
        return linear_scan(1.0 - z, z * cell.candidate(x))
    if isinstance(cell, HardwareHSRU):
        lam = 1.0 - 2.0**-cell.leak_shift
        v = linear_scan(g * lam + (1.0 - g), g * cell.current(x)) - cell.theta
        hard = (v >= 0).to(v.dtype)
        soft = torch.sigmoid(cell.slope * v)
        return xor_scan((hard + (soft - soft.detach())) * g)
    raise TypeError(f"selective update is not defined for {type(cell).__name__}")


def selective_sequential(cell: nn.Module, x: torch.Tensor, su: torch.Tensor, quant=None) -> torch.Tensor:
    """Step-by-step output of any hardware cell with selective update ``su`` ``(T, d)``.

    With the :class:`~codesign.nn.hardware_cells.LayerQuant` of a bundle this is the golden model's
    rule: the cell's own rule where ``su`` is 1, the state kept exactly where it is 0.
    """
    open_ = su != 0
    h = x.new_zeros(x.shape[0], cell.hidden_size)
    out = []
    if isinstance(cell, CMRU):
        c, b = cell.candidate(x), cell.threshold(x)
        g = c.abs() >= b.abs()
        s = torch.where(c >= 0, 1.0, -1.0).to(x.dtype)
        if isinstance(cell, AlphaCMRU):
            alpha = cell.alpha_proj(x)
            if quant is not None:
                lo, hi = -(1 << (quant.alpha_bits - 1)), (1 << (quant.alpha_bits - 1)) - 1
                alpha = quant.to_grid(alpha).clamp(lo * 2.0**-quant.state_frac, hi * 2.0**-quant.state_frac)
        else:
            alpha = cell.alpha.expand_as(c)
        for t in range(x.shape[1]):
            new = cell.eps * h + s[:, t] * alpha[:, t]
            if quant is not None:
                new = _sat(new, quant)
            h = torch.where(g[:, t] & open_[t], new, h)
            out.append(h)
    elif isinstance(cell, BinaryGatedMinGRU):
        u = cell.candidate(x)
        if quant is not None:
            u = _sat(quant.to_grid(u), quant)
        g = cell.gate(x) >= 0
        for t in range(x.shape[1]):
            h = torch.where(g[:, t] & open_[t], u[:, t], h)
            out.append(h)
    elif isinstance(cell, HardSigmoidMinGRU):
        u, a = cell.candidate(x), cell.gate(x)
        if quant is None:
            z = (a + 0.5).clamp(0.0, 1.0)
        else:
            u = _sat(quant.to_grid(u), quant)
            z = (quant.to_grid(a, quant.gate_bits) + 0.5).clamp(0.0, 1.0)
        for t in range(x.shape[1]):
            step = z[:, t] * (u[:, t] - h)
            h = torch.where(open_[t], h + (step if quant is None else quant.to_grid(step)), h)
            out.append(h)
    elif isinstance(cell, HardwareHSRU):
        i = cell.current(x)
        if quant is not None:
            i = quant.to_grid(i)
        v = torch.zeros_like(h)
        for t in range(x.shape[1]):
            if quant is None:
                v_open = (1.0 - 2.0**-cell.leak_shift) * v + i[:, t]
            else:
                v_open = _sat(v - quant.to_grid(v * 2.0**-quant.leak_shift) + i[:, t], quant)
            v = torch.where(open_[t], v_open, v)
            h = torch.where(open_[t] & (v >= cell.theta), 1.0 - h, h)
            out.append(h)
    else:
        raise TypeError(f"selective update is not defined for {type(cell).__name__}")
    return torch.stack(out, dim=1)


def step_rate(tables: list[torch.Tensor], steps: int) -> float | None:
    """Fraction ``p`` of open neuron-steps over ``steps`` steps of every table (``None``: no table)."""
    if not tables:
        return None
    opened = sum(float((t[torch.arange(steps) % t.shape[0]] != 0).sum()) for t in tables)
    return opened / (steps * sum(t.shape[1] for t in tables))
