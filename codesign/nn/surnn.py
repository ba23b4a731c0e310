"""Selective-update RNNs (suRNN paper sec. 3): per-neuron binary gates from a rhythmic generator.

Eq. 4 and eq. 6, per step ``t = 1 .. T`` and neuron ``i``::

    a_{t,i} = b_i + sum_k alpha_{ik} sin(omega_k t + phi_{ik})     rhythmic generator
    g_{t,i} = H(a_{t,i})  = 1{a_{t,i} > 0}                        binary gate
    h_t     = h_{t-1} + g_t * (f(h_{t-1}, x_t) - h_{t-1})          update (g = 1) or exact carry

``H`` has a sigmoid surrogate gradient (or the straight-through estimator). The ``K`` frequencies
are shared by the layer and fixed on a logarithmic grid of periods; amplitudes, phases and biases
are learned per unit. Gates depend on time only, so they are computed once per sequence as
``sin(omega t) @ (alpha cos phi)^T + cos(omega t) @ (alpha sin phi)^T + b``.

* :class:`SelectiveUpdateMinGRU` -- ``f`` is the minGRU step. The whole update stays linear in
  ``h``: ``h_t = (1 - g_t z_t) h_{t-1} + g_t z_t c_t``, a :func:`codesign.nn.linear_scan`.
* :class:`SelectiveUpdateGRU` (suGRU) -- ``f`` is the ``torch.nn.GRU`` step, which is not linear in
  ``h``. ``mode="sequential"`` (default) runs eq. 4 step by step with exact STE/surrogate gradients
  for the gate generator. ``mode="fused"`` is the paper's App. B implementation: one call of
  PyTorch's fused GRU kernel whose input is augmented with the skip drive ``1 - g_t``, wired to the
  update-gate pre-activation with a large constant so that ``g = 0`` saturates the GRU gate into an
  exact carry. Its outputs and its gradients for the GRU weights, inputs and initial state equal
  the sequential path; the gate generator receives no gradient through the saturated gate (use it
  for evaluation, or training with the gates frozen).
"""

from __future__ import annotations

import math
from typing import Literal

import torch
from torch import nn

from codesign.nn._checks import Mode, check_mode, check_sequence, check_sizes, check_state
from codesign.nn.mingru import GateBiasInit, init_gate_bias
from codesign.nn.scan import linear_scan

__all__ = ["RhythmicGate", "SelectiveUpdateGRU", "SelectiveUpdateMinGRU", "step_gate"]

Surrogate = Literal["sigmoid", "ste"]


class _StepGate(torch.autograd.Function):
    @staticmethod
    def forward(ctx, a: torch.Tensor, surrogate: str, beta: float) -> torch.Tensor:
        ctx.save_for_backward(a)
        ctx.surrogate, ctx.beta = surrogate, beta
        return (a > 0).to(a.dtype)

    @staticmethod
    def backward(ctx, grad: torch.Tensor):
        (a,) = ctx.saved_tensors
        if ctx.surrogate == "ste":
            return grad, None, None
        s = torch.sigmoid(ctx.beta * a)
        return grad * ctx.beta * s * (1 - s), None, None


def step_gate(a: torch.Tensor, surrogate: Surrogate = "sigmoid", beta: float = 4.0) -> torch.Tensor:
    """``1{a > 0}``; backward: ``d sigmoid(beta a) / da`` (``"sigmoid"``) or identity (``"ste"``)."""
    if surrogate not in ("sigmoid", "ste"):
        raise ValueError(f"surrogate must be 'sigmoid' or 'ste', got {surrogate!r}")
    return _StepGate.apply(a, surrogate, float(beta))


class RhythmicGate(nn.Module):
    """The rhythmic gate generator of eq. 6.

    Parameters
    ----------
    hidden_size:
        Number of gated units ``H``.
    num_frequencies:
        ``K`` (default ``H``, as in the paper).
    min_period, max_period:
        The fixed frequencies ``omega_k = 2 pi / P_k`` have periods ``P_k`` log-spaced on
        ``[min_period, max_period]`` steps.
    surrogate, beta:
        Backward of the Heaviside: ``"sigmoid"`` with slope ``beta`` or ``"ste"``.
    bias_init:
        Initial ``b_i``; positive values make units update more often.

    ``forward(steps, offset=0)`` returns the binary gates ``(steps, H)`` for ``t = offset + 1 ..
    offset + steps``; :meth:`preactivation` the real ``a_{t,i}``.
    """

    def __init__(
        self,
        hidden_size: int,
        num_frequencies: int | None = None,
        *,
        min_period: float = 2.0,
        max_period: float = 10_000.0,
        surrogate: Surrogate = "sigmoid",
        beta: float = 4.0,
        bias_init: float = 0.0,
    ) -> None:
        super().__init__()
        k = hidden_size if num_frequencies is None else num_frequencies
        check_sizes(hidden_size=hidden_size, num_frequencies=k)
        if not 0 < min_period <= max_period:
            raise ValueError(f"need 0 < min_period <= max_period, got {min_period} and {max_period}")
        step_gate(torch.zeros(1), surrogate)  # validates the surrogate name
        self.hidden_size = hidden_size
        self.surrogate: Surrogate = surrogate
        self.beta = float(beta)
        periods = torch.logspace(math.log10(min_period), math.log10(max_period), k)
        self.register_buffer("omega", 2 * math.pi / periods)
        self.amplitude = nn.Parameter(torch.randn(hidden_size, k) / math.sqrt(k))
        self.phase = nn.Parameter(torch.rand(hidden_size, k) * 2 * math.pi)
        self.bias = nn.Parameter(torch.full((hidden_size,), float(bias_init)))

    def preactivation(self, steps: int, offset: int = 0) -> torch.Tensor:
        t = torch.arange(
            offset + 1, offset + steps + 1, dtype=self.amplitude.dtype, device=self.amplitude.device
        )
        wt = t.unsqueeze(1) * self.omega.to(t.dtype)  # (T, K)
        sin_part = torch.sin(wt) @ (self.amplitude * torch.cos(self.phase)).T
        cos_part = torch.cos(wt) @ (self.amplitude * torch.sin(self.phase)).T
        return sin_part + cos_part + self.bias

    def forward(self, steps: int, offset: int = 0) -> torch.Tensor:
        return step_gate(self.preactivation(steps, offset), self.surrogate, self.beta)


class SelectiveUpdateMinGRU(nn.Module):
    """minGRU with per-neuron rhythmic binary update gates (suRNN on a minGRU backbone).

    ``h_t = h_{t-1} + g_t (f(h_{t-1}, x_t) - h_{t-1})`` with ``f`` the minGRU step
    ``(1 - z_t) h + z_t c_t``; equivalently ``h_t = (1 - g_t z_t) h_{t-1} + g_t z_t c_t``.

    Parameters
    ----------
    input_size, hidden_size:
        Feature sizes of the input and of the state.
    gate_bias_init:
        minGRU update-gate bias initialisation.
    mode:
        ``"scan"`` (parallel, default) or ``"sequential"`` (reference loop).
    **gate_options:
        Passed to :class:`RhythmicGate` (``num_frequencies``, ``min_period``, ``max_period``,
        ``surrogate``, ``beta``, ``bias_init``).

    Shape
    -----
    ``forward(x, h0=None, offset=0)`` -> ``(h, h_last)``; ``offset`` is the time index of the first
    step (for streaming continuation).
    """

    def __init__(
        self,
        input_size: int,
        hidden_size: int,
        *,
        gate_bias_init: GateBiasInit = "zero",
        mode: Mode = "scan",
        **gate_options,
    ) -> None:
        super().__init__()
        check_sizes(input_size=input_size, hidden_size=hidden_size)
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.mode = check_mode(mode)
        self.projection = nn.Linear(input_size, 2 * hidden_size)
        nn.init.trunc_normal_(self.projection.weight, std=math.sqrt(1.0 / input_size))
        nn.init.zeros_(self.projection.bias)
        init_gate_bias(self.projection.bias[:hidden_size], gate_bias_init)
        self.gate = RhythmicGate(hidden_size, **gate_options)

    def extra_repr(self) -> str:
        return f"{self.input_size}, {self.hidden_size}, mode={self.mode}"

    def forward(
        self, x: torch.Tensor, h0: torch.Tensor | None = None, offset: int = 0
    ) -> tuple[torch.Tensor, torch.Tensor]:
        check_sequence(x, self.input_size)
        check_state(h0, x.shape[0], self.hidden_size)
        pre_z, c = self.projection(x).chunk(2, dim=-1)
        z = torch.sigmoid(pre_z)
        g = self.gate(x.shape[1], offset).to(x.dtype)  # (T, H), shared by the batch
        if self.mode == "sequential":
            h = x.new_zeros(x.shape[0], self.hidden_size) if h0 is None else h0
            out = []
            for z_t, c_t, g_t in zip(z.unbind(1), c.unbind(1), g.unbind(0), strict=True):
                proposal = (1 - z_t) * h + z_t * c_t
                h = h + g_t * (proposal - h)
                out.append(h)
            hs = torch.stack(out, dim=1)
        else:
            gz = g * z
            hs = linear_scan(1 - gz, gz * c, h0)
        return hs, hs[:, -1]


class SelectiveUpdateGRU(nn.Module):
    """suGRU: ``torch.nn.GRU`` dynamics with per-neuron rhythmic binary update gates.

    Parameters
    ----------
    input_size, hidden_size:
        Feature sizes of the input and of the state. The GRU weights are those of a
        ``torch.nn.GRU(input_size, hidden_size)`` (attribute :attr:`gru`; gates ordered r, z, n).
    carry_drive:
        ``C``, the constant added to the GRU update-gate pre-activation when ``g = 0`` in
        ``"fused"`` mode (large enough that the sigmoid rounds to exactly 1).
    mode:
        ``"sequential"`` (default; eq. 4 step by step, gradients for everything) or ``"fused"``
        (one fused GRU call; the gate generator gets no gradient -- see the module docstring).
    **gate_options:
        Passed to :class:`RhythmicGate`.

    Shape
    -----
    ``forward(x, h0=None, offset=0)`` -> ``(h, h_last)``, batch first.
    """

    def __init__(
        self,
        input_size: int,
        hidden_size: int,
        *,
        carry_drive: float = 1e3,
        mode: Literal["sequential", "fused"] = "sequential",
        **gate_options,
    ) -> None:
        super().__init__()
        check_sizes(input_size=input_size, hidden_size=hidden_size)
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.carry_drive = float(carry_drive)
        self.mode = check_mode(mode, ("sequential", "fused"))
        self.gru = nn.GRU(input_size, hidden_size, batch_first=True)
        self.gate = RhythmicGate(hidden_size, **gate_options)

    def extra_repr(self) -> str:
        return f"{self.input_size}, {self.hidden_size}, mode={self.mode}"

    def forward(
        self, x: torch.Tensor, h0: torch.Tensor | None = None, offset: int = 0
    ) -> tuple[torch.Tensor, torch.Tensor]:
        check_sequence(x, self.input_size)
        check_state(h0, x.shape[0], self.hidden_size)
        g = self.gate(x.shape[1], offset).to(x.dtype)
        if self.mode == "fused":
            hs = self._fused(x, g, h0)
        else:
            hs = self._sequential(x, g, h0)
        return hs, hs[:, -1]

    def _weights(self) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        gru = self.gru
        return gru.weight_ih_l0, gru.weight_hh_l0, gru.bias_ih_l0, gru.bias_hh_l0

    def _sequential(self, x: torch.Tensor, g: torch.Tensor, h0: torch.Tensor | None) -> torch.Tensor:
        w_ih, w_hh, b_ih, b_hh = self._weights()
        projected = (x @ w_ih.T + b_ih).unbind(1)  # input projections of every step at once
        h = x.new_zeros(x.shape[0], self.hidden_size) if h0 is None else h0
        out = []
        for gi, g_t in zip(projected, g.unbind(0), strict=True):
            gi_r, gi_z, gi_n = gi.chunk(3, dim=-1)
            gh_r, gh_z, gh_n = torch.addmm(b_hh, h, w_hh.T).chunk(3, dim=-1)
            r = torch.sigmoid(gi_r + gh_r)
            z = torch.sigmoid(gi_z + gh_z)
            n = torch.tanh(gi_n + r * gh_n)
            proposal = (1 - z) * n + z * h
            h = h + g_t * (proposal - h)
            out.append(h)
        return torch.stack(out, dim=1)

    def _fused(self, x: torch.Tensor, g: torch.Tensor, h0: torch.Tensor | None) -> torch.Tensor:
        w_ih, w_hh, b_ih, b_hh = self._weights()
        hidden = self.hidden_size
        # Skip-drive channels (1 - g) wired only to the update gate z with C * I (App. B.1).
        wiring = torch.zeros(3 * hidden, hidden, dtype=w_ih.dtype, device=w_ih.device)
        wiring[hidden : 2 * hidden].fill_diagonal_(self.carry_drive)
        drive = (1 - g).detach().expand(x.shape[0], -1, -1)
        x_aug = torch.cat([x, drive], dim=-1)
        w_aug = torch.cat([w_ih, wiring], dim=1)
        hx = x.new_zeros(1, x.shape[0], hidden) if h0 is None else h0.unsqueeze(0)
        hs, _ = torch._VF.gru(x_aug, hx, [w_aug, w_hh, b_ih, b_hh], True, 1, 0.0, self.training, False, True)
        return hs
