"""The hardware profile: every layer kind the accelerator family runs, trainable as is.

``HardwareStack`` = optional DCLS front end + one hardware cell per layer, a linear readout with
last or sum pooling (or per-step logits) -- each piece has an integer counterpart in
``docs/integer-semantics.md``. The cells here are trained in float with parallel scans and
surrogate gradients; ``forward_sequential(x, quant=...)`` is the step-by-step path that, with the
:class:`LayerQuant` of a bundle, computes exactly what the golden model computes (in float64, on
power-of-two grids).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from codesign.nn.cmru import BMRU, CMRU, AlphaCMRU
from codesign.nn.dcls import DCLS1d
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


READOUT_ACTS = {"relu": torch.relu, "hardtanh": nn.functional.hardtanh}
"""Activations of the hidden readout layer (both are a clamp in integers)."""


class HardwareStack(nn.Module):
    """Hardware layers (each optionally behind a DCLS front end) and a linear readout.

    Parameters
    ----------
    input_size, num_classes:
        Task sizes.
    layers:
        One dict per layer: ``cell`` (a key of :data:`HW_CELLS`), ``size``, and the cell's options
        (``eps``, ``leak_shift`` ...); ``dcls: {taps, span}`` adds a delay front end.
    pooling:
        ``last`` or ``sum`` (the readout sees the last state or the sum of states over time).
    per_step:
        Logits at every step ``(batch, time, classes)`` instead of one per sequence.
    readout_hidden, readout_act:
        A hidden readout layer (pooled state -> ``readout_hidden`` units -> ReLU or hard tanh ->
        logits) instead of a linear readout; 0 keeps the linear one. The readout MLP adds a
        nonlinearity after pooling, the cheapest step from the deployable network toward the
        papers' decoder.
    """

    def __init__(
        self,
        input_size: int,
        num_classes: int,
        layers: list[dict],
        *,
        pooling: str = "last",
        per_step: bool = False,
        readout_hidden: int = 0,
        readout_act: str = "relu",
    ) -> None:
        super().__init__()
        if not layers:
            raise ValueError("a hardware stack needs at least one layer")
        if readout_act not in READOUT_ACTS:
            raise ValueError(f"readout_act {readout_act!r} is not one of {sorted(READOUT_ACTS)}")
        self.layer_specs = [dict(layer) for layer in layers]
        self.pooling, self.per_step = pooling, per_step
        self.cells = nn.ModuleList()
        self.fronts = nn.ModuleList()
        self.schedules = nn.ModuleDict()  # layer index (str) -> SelectiveSchedule
        width = input_size
        for index, spec in enumerate(self.layer_specs):
            spec = dict(spec)
            kind, size, dcls = spec.pop("cell"), spec.pop("size"), spec.pop("dcls", None)
            selective = spec.pop("selective", None)
            if selective is not None:
                from codesign.nn.selective import SelectiveSchedule

                options = dict(selective)
                self.schedules[str(index)] = SelectiveSchedule(size, options.pop("period"), **options)
            if kind not in HW_CELLS:
                raise ValueError(f"unknown hardware cell {kind!r}; choose one of {sorted(HW_CELLS)}")
            self.fronts.append(nn.Identity() if dcls is None else DCLS1d(width, dcls["taps"], dcls["span"]))
            self.cells.append(HW_CELLS[kind](width, size, **spec))
            width = size
        self.readout_hidden, self.readout_act = readout_hidden, readout_act
        if readout_hidden:
            self.hidden = nn.Linear(width, readout_hidden)
            width = readout_hidden
        self.readout = nn.Linear(width, num_classes)

    def head(self, pooled: torch.Tensor) -> torch.Tensor:
        """Logits of pooled states: the (optional) hidden layer, then the linear readout."""
        if self.readout_hidden:
            pooled = READOUT_ACTS[self.readout_act](self.hidden(pooled))
        return self.readout(pooled)

    @property
    def rnn(self) -> nn.Module:
        """The first (for the spine: only) recurrent layer."""
        return self.cells[0]

    def schedule(self, index: int) -> nn.Module | None:
        """Layer ``index``'s selective-update schedule (``None`` without the option)."""
        return self.schedules[str(index)] if str(index) in self.schedules else None

    def states(self, x: torch.Tensor) -> torch.Tensor:
        for index, (front, cell) in enumerate(zip(self.fronts, self.cells, strict=True)):
            sched = self.schedule(index)
            if sched is None:
                x, _ = cell(front(x))
            else:
                from codesign.nn.selective import selective_forward

                x = selective_forward(cell, front(x), sched.gates(x.shape[1]))
        return x

    def read(self, h: torch.Tensor) -> torch.Tensor:
        if self.per_step:
            return self.head(h)
        return self.head(h[:, -1] if self.pooling == "last" else h.sum(dim=1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.read(self.states(x))
