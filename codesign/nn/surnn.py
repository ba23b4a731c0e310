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
  exact carry. The saturated gate passes no gradient to ``g``, so the fused forward is wrapped in
  :class:`_FusedSelectiveGRU`, whose backward is the straight-through estimator of App. B: ``g``
  is treated as entering eq. 4 directly, ``dL/dg_{t,i} = lambda_{t,i} Delta h_{t,i}`` with
  ``lambda_t = dL/dh_t`` the full adjoint (the paper's "local signal proportional to
  (dL/dh_{t,i}) Delta h_{t,i}"), then the Heaviside's surrogate (:func:`step_gate`). Every gate
  activation and ``Delta h`` is recomputed in parallel over time from the stored states; only the
  adjoint recursion ``lambda_{t-1} = lambda_t (1 - g_t (1 - z_t)) + dgh_t W_hh`` runs step by step
  (a closed neuron passes its adjoint on unchanged). Outputs and all gradients, the generator's
  included, equal the sequential path; the forward is the fused kernel unchanged.

Mask-aware inference (:meth:`SelectiveUpdateGRU.stream`, :meth:`SelectiveUpdateMinGRU.stream`):
one step at a time with no gradient, the dense path computes every neuron and masks afterwards;
``masked=True`` gathers the open neurons' weight rows, computes only their gates and candidates
and scatters them back, so the cost follows ``sum_i g_{t,i}`` (the paper's Table A2). A closed
neuron's state is not touched. :func:`update_rate` is the fraction ``p`` of open neuron-steps.
"""

from __future__ import annotations

import math
from typing import Literal

import torch
from torch import nn

from codesign.nn._checks import Mode, check_mode, check_sequence, check_sizes, check_state
from codesign.nn.mingru import GateBiasInit, init_gate_bias
from codesign.nn.scan import linear_scan

__all__ = [
    "RhythmicGate",
    "SelectiveUpdateGRU",
    "SelectiveUpdateMinGRU",
    "open_rows",
    "step_gate",
    "update_rate",
]

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


def update_rate(model: nn.Module, steps: int, offset: int = 0) -> float | None:
    """Fraction ``p`` of open neuron-steps (eq. 11) over every :class:`RhythmicGate` in ``model``
    for ``steps`` steps from ``offset``; ``None`` when the model has no rhythmic gate."""
    gates = [m for m in model.modules() if isinstance(m, RhythmicGate)]
    if not gates:
        return None
    with torch.no_grad():
        opened = sum(float(m(steps, offset).sum()) for m in gates)
    return opened / (steps * sum(m.hidden_size for m in gates))


def open_rows(gate_row: torch.Tensor, heads: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Open neuron indices of one step's gates ``(H,)`` and the matching weight rows of ``heads``
    stacked heads (``idx, idx + H, ...``), as the mask-aware step gathers them."""
    hidden = gate_row.shape[0]
    idx = torch.nonzero(gate_row > 0).squeeze(1)
    rows = torch.cat([idx + k * hidden for k in range(heads)])
    return idx, rows


def _stream_gates(cell: nn.Module, steps: int, offset: int, gates: torch.Tensor | None) -> torch.Tensor:
    if gates is None:
        return cell.gate(steps, offset)
    if tuple(gates.shape) != (steps, cell.hidden_size):
        raise ValueError(
            f"gates must be (time, hidden) = {(steps, cell.hidden_size)}, got {tuple(gates.shape)}"
        )
    return gates


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

    @torch.no_grad()
    def stream(
        self,
        x: torch.Tensor,
        h0: torch.Tensor | None = None,
        offset: int = 0,
        *,
        masked: bool = True,
        gates: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Streaming inference, one step at a time, no gradient: ``(h, h_last)`` as :meth:`forward`.

        ``masked=False`` is the dense path (every neuron's ``z`` and ``c``, then the mask);
        ``masked=True`` projects only the open neurons' rows and scatters them back, so a step
        costs ``2 * open * input_size`` multiply-adds. ``gates`` ``(time, hidden)`` replaces the
        generator's schedule (for benchmarks at a chosen update rate).
        """
        check_sequence(x, self.input_size)
        check_state(h0, x.shape[0], self.hidden_size)
        g = _stream_gates(self, x.shape[1], offset, gates).to(x.dtype)
        w, b = self.projection.weight, self.projection.bias
        hidden = self.hidden_size
        h = x.new_zeros(x.shape[0], hidden) if h0 is None else h0.clone()
        out = x.new_empty(x.shape[0], x.shape[1], hidden)
        for t in range(x.shape[1]):
            x_t = x[:, t]
            if masked:
                idx, rows = open_rows(g[t], 2)
                k = idx.numel()
                if k:
                    pre = torch.addmm(b.index_select(0, rows), x_t, w.index_select(0, rows).T)
                    z = torch.sigmoid(pre[:, :k])
                    h_open = h.index_select(1, idx)
                    h.index_copy_(1, idx, (1 - z) * h_open + z * pre[:, k:])
            else:
                pre_z, c = torch.addmm(b, x_t, w.T).chunk(2, dim=-1)
                z = torch.sigmoid(pre_z)
                h = h + g[t] * ((1 - z) * h + z * c - h)
            out[:, t] = h
        return out, out[:, -1]


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
        ``"sequential"`` (default; eq. 4 step by step) or ``"fused"`` (one fused GRU call forward,
        the straight-through backward of App. B -- see the module docstring). Both give gradients
        to everything, the gate generator included, and agree.
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
        return _FusedSelectiveGRU.apply(x, g, h0, *self._weights(), self.carry_drive, self.training)

    @torch.no_grad()
    def stream(
        self,
        x: torch.Tensor,
        h0: torch.Tensor | None = None,
        offset: int = 0,
        *,
        masked: bool = True,
        gates: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Streaming inference, one step at a time, no gradient: ``(h, h_last)`` as :meth:`forward`.

        ``masked=False`` is the dense path (every neuron's r, z, n, then the mask); ``masked=True``
        gathers the open neurons' rows of ``W_ih`` and ``W_hh``, computes their gates and candidate
        from ``x_t`` and the whole ``h_{t-1}``, and scatters the new states back: a step costs
        ``3 * open * (input_size + hidden_size)`` multiply-adds. ``gates`` ``(time, hidden)``
        replaces the generator's schedule (for benchmarks at a chosen update rate).
        """
        check_sequence(x, self.input_size)
        check_state(h0, x.shape[0], self.hidden_size)
        g = _stream_gates(self, x.shape[1], offset, gates).to(x.dtype)
        w_ih, w_hh, b_ih, b_hh = self._weights()
        hidden = self.hidden_size
        h = x.new_zeros(x.shape[0], hidden) if h0 is None else h0.clone()
        out = x.new_empty(x.shape[0], x.shape[1], hidden)
        for t in range(x.shape[1]):
            x_t = x[:, t]
            if masked:
                idx, rows = open_rows(g[t], 3)
                k = idx.numel()
                if k:
                    gi = torch.addmm(b_ih.index_select(0, rows), x_t, w_ih.index_select(0, rows).T)
                    gh = torch.addmm(b_hh.index_select(0, rows), h, w_hh.index_select(0, rows).T)
                    r = torch.sigmoid(gi[:, :k] + gh[:, :k])
                    z = torch.sigmoid(gi[:, k : 2 * k] + gh[:, k : 2 * k])
                    n = torch.tanh(gi[:, 2 * k :] + r * gh[:, 2 * k :])
                    h.index_copy_(1, idx, (1 - z) * n + z * h.index_select(1, idx))
            else:
                gi_r, gi_z, gi_n = torch.addmm(b_ih, x_t, w_ih.T).chunk(3, dim=-1)
                gh_r, gh_z, gh_n = torch.addmm(b_hh, h, w_hh.T).chunk(3, dim=-1)
                r = torch.sigmoid(gi_r + gh_r)
                z = torch.sigmoid(gi_z + gh_z)
                n = torch.tanh(gi_n + r * gh_n)
                h = h + g[t] * ((1 - z) * n + z * h - h)
            out[:, t] = h
        return out, out[:, -1]


def _fused_kernel(
    x: torch.Tensor,
    g: torch.Tensor,
    h0: torch.Tensor | None,
    w_ih: torch.Tensor,
    w_hh: torch.Tensor,
    b_ih: torch.Tensor,
    b_hh: torch.Tensor,
    carry_drive: float,
    training: bool,
) -> torch.Tensor:
    """One fused GRU call on ``[x, 1 - g]`` with the skip drive wired to z by ``C * I`` (App. B.1)."""
    hidden = w_hh.shape[1]
    wiring = torch.zeros(3 * hidden, hidden, dtype=w_ih.dtype, device=w_ih.device)
    wiring[hidden : 2 * hidden].fill_diagonal_(carry_drive)
    drive = (1 - g).expand(x.shape[0], -1, -1)
    x_aug = torch.cat([x, drive], dim=-1)
    w_aug = torch.cat([w_ih, wiring], dim=1)
    hx = x.new_zeros(1, x.shape[0], hidden) if h0 is None else h0.unsqueeze(0)
    hs, _ = torch._VF.gru(x_aug, hx, [w_aug, w_hh, b_ih, b_hh], True, 1, 0.0, training, False, True)
    return hs


class _FusedSelectiveGRU(torch.autograd.Function):
    """Fused-kernel forward; backward with the gate's straight-through estimator (module docstring)."""

    @staticmethod
    def forward(ctx, x, g, h0, w_ih, w_hh, b_ih, b_hh, carry_drive: float, training: bool):
        hs = _fused_kernel(x, g, h0, w_ih, w_hh, b_ih, b_hh, carry_drive, training)
        ctx.has_h0 = h0 is not None
        ctx.save_for_backward(
            x, g, h0 if h0 is not None else hs.new_zeros(x.shape[0], w_hh.shape[1]), w_ih, w_hh, hs
        )
        ctx.biases = (b_ih.detach(), b_hh.detach())
        return hs

    @staticmethod
    def backward(ctx, grad_hs: torch.Tensor):
        x, g, h0, w_ih, w_hh, hs = ctx.saved_tensors
        b_ih, b_hh = ctx.biases
        batch, steps, hidden = hs.shape
        hprev = torch.cat([h0.unsqueeze(1), hs[:, :-1]], dim=1)
        gi_r, gi_z, gi_n = (x @ w_ih.T + b_ih).chunk(3, dim=-1)
        gh_r, gh_z, gh_n = (hprev @ w_hh.T + b_hh).chunk(3, dim=-1)
        r = torch.sigmoid(gi_r + gh_r)
        z = torch.sigmoid(gi_z + gh_z)
        n = torch.tanh(gi_n + r * gh_n)
        opened = g * (1 - z)  # dh_t / dn_t
        dn = opened * (1 - n * n)  # per unit of the adjoint lambda_t: d n-preactivation
        dz = -g * (n - hprev) * z * (1 - z)
        dr = dn * gh_n * r * (1 - r)
        per_gh = torch.cat([dr, dz, dn * r], dim=-1)  # d gh_t = [lambda_t] * per_gh
        keep = 1 - opened  # dh_t / dh_{t-1}, direct part (1 for a closed neuron)
        lam = grad_hs.new_zeros(batch, hidden)
        lams = torch.empty_like(hs)
        for t in range(steps - 1, -1, -1):
            lam = lam + grad_hs[:, t]
            lams[:, t] = lam
            lam = torch.addmm(lam * keep[:, t], lam.repeat(1, 3) * per_gh[:, t], w_hh)
        lam3 = lams.repeat(1, 1, 3)
        d_gh = lam3 * per_gh
        d_gi = lam3 * torch.cat([dr, dz, dn], dim=-1)
        flat = 3 * hidden
        grads = [
            d_gi @ w_ih if ctx.needs_input_grad[0] else None,
            (lams * (1 - z) * (n - hprev)).sum(0) if ctx.needs_input_grad[1] else None,  # lambda * Delta h
            lam if ctx.has_h0 and ctx.needs_input_grad[2] else None,
            d_gi.reshape(-1, flat).T @ x.reshape(-1, x.shape[-1]) if ctx.needs_input_grad[3] else None,
            d_gh.reshape(-1, flat).T @ hprev.reshape(-1, hidden) if ctx.needs_input_grad[4] else None,
            d_gi.sum((0, 1)) if ctx.needs_input_grad[5] else None,
            d_gh.sum((0, 1)) if ctx.needs_input_grad[6] else None,
        ]
        return (*grads, None, None)
