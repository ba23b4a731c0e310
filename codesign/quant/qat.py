"""Quantization-aware training: fake-quantized weights with straight-through gradients.

Every ``Linear`` of a :class:`~codesign.nn.hardware.HardwareStack` (and the CMRU ``alpha``) is
re-parametrized so that the forward pass sees its weights rounded to the power-of-two grid the
export will use (the finest per-row scale that fits ``bits``), while the gradient flows to the
float weights unchanged. Fine-tuning a float run this way (``codesign quantize``) recovers most of
the accuracy lost by post-training rounding at 4 bits and below.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import nn
from torch.nn.utils import parametrize

from codesign.nn.stride import InputStride
from codesign.quant.fixed_point import keep_rest_gates, pow2_frac, quantize_input


def _pow2_scale(m: torch.Tensor, bits: int) -> torch.Tensor:
    """``2**e`` with the finest ``e`` such that ``floor(m 2**e + 1/2) <= 2**(bits-1) - 1``.

    The same rule as :func:`codesign.quant.fixed_point.pow2_frac`, so the grid seen in training
    is exactly the grid the export rounds to.
    """
    hi = (1 << (bits - 1)) - 1
    m = m.clamp_min(1e-12)
    e = torch.floor(torch.log2(hi / m))
    e = torch.where(torch.floor(m * torch.pow(2.0, e + 1) + 0.5) <= hi, e + 1, e)
    e = torch.where(torch.floor(m * torch.pow(2.0, e) + 0.5) > hi, e - 1, e)
    return torch.pow(2.0, e)


class FakeQuant(nn.Module):
    """``w -> round(w * 2**e) / 2**e`` forward, identity backward (straight-through).

    ``per_row`` gives each row its own scale (accumulator rows); otherwise one scale for the
    tensor (the readout, alpha). ``partner`` returns another tensor whose rows share the scale
    (a CMRU's candidate and threshold rows are compared with each other, so they share one).
    ``cap`` returns the coarsest scale each row may have (:class:`BiasCap`), or None.
    """

    def __init__(self, bits: int, per_row: bool = True, partner=None, cap=None) -> None:
        super().__init__()
        self.bits, self.per_row = bits, per_row
        self._partner = [partner]  # a list: not a submodule, not a parameter
        self._cap = [cap]

    def forward(self, w: torch.Tensor) -> torch.Tensor:
        flat = w if self.per_row and w.dim() > 1 else w.reshape(1, -1)
        m = flat.detach().abs().amax(dim=-1, keepdim=True)
        partner = self._partner[0]
        if partner is not None:
            m = torch.maximum(m, partner().detach().abs().amax(dim=-1, keepdim=True))
        scale = _pow2_scale(m, self.bits)
        cap = None if self._cap[0] is None else self._cap[0]()
        if cap is not None:
            scale = torch.minimum(scale, cap.reshape(scale.shape))
        q = (torch.floor(flat * scale + 0.5) / scale).reshape(w.shape)
        return w + (q - w).detach()


class BiasCap:
    """The export's bias limit on a row's weight scale: ``e_i <= pow2_frac(|b_i|, bias_bits) - z_frac``.

    A bias is stored on its accumulator's grid ``2**-(e_i + z_frac)`` in ``bias_bits``; behind a
    fine input grid (a minGRU state, ``z_frac`` 12 or so) a bias near 1 then leaves a 16-bit
    accumulator room for only 2 or 3 fractional weight bits, and export rounds the row that
    coarsely. Returns the largest per-row scale ``2**e_i`` allowed (None while ``z_frac`` is unknown).
    """

    def __init__(self, biases: list[Callable[[], torch.Tensor]], bias_bits: int, z_frac) -> None:
        self.biases, self.bias_bits, self.z_frac = biases, bias_bits, z_frac

    def __call__(self) -> torch.Tensor | None:
        z = self.z_frac()
        if z is None:
            return None
        m = torch.stack([b().detach().abs() for b in self.biases]).amax(dim=0)
        return _pow2_scale(m, self.bias_bits) * 2.0**-z


class FakeQuantBias(nn.Module):
    """A bias on its accumulator's grid ``2**-(e_i + input_frac)`` (``e_i``: its row's weight scale).

    Gates compare accumulators, so a bias that rounds across the other side of a comparison flips
    a neuron between retaining and updating on every zero input; training on the exported grid
    removes that surprise.
    """

    def __init__(
        self,
        bits: int,
        input_frac: int | Callable[[], int],
        rows,
        rest_pair: tuple[Callable[[], torch.Tensor], Callable[[], torch.Tensor], bool] | None = None,
        bias_bits: int = 16,
        cap: BiasCap | None = None,
    ) -> None:
        super().__init__()
        self.bits, self.bias_bits = bits, bias_bits
        self._cap = [cap]
        # a callable when the grid follows other parameters (the previous layer's alpha)
        self._input_frac = [input_frac if callable(input_frac) else (lambda: input_frac)]
        self._rows = [rows]
        # first layer: (candidate bias, threshold bias, this is the candidate) -> rest-gate codes
        self._rest_pair = [rest_pair]

    @property
    def input_frac(self) -> int | None:
        return self._input_frac[0]()

    def forward(self, b: torch.Tensor) -> torch.Tensor:
        z_frac = self.input_frac
        if z_frac is None:  # a grid estimated from a batch, before the first batch
            return b
        m = torch.stack([w().detach().abs().amax(dim=-1) for w in self._rows[0]]).amax(dim=0)
        scale = _pow2_scale(m, self.bits)
        cap = None if self._cap[0] is None else self._cap[0]()
        if cap is not None:
            scale = torch.minimum(scale, cap)
        scale = scale * 2.0**z_frac
        pair = self._rest_pair[0]
        if pair is None:
            q = torch.floor(b * scale + 0.5) / scale
        else:  # the codes the export writes, rest gates kept as in float
            cand, thr, is_cand = pair[0]().detach(), pair[1]().detach(), pair[2]
            qc, qt = keep_rest_gates(
                torch.floor(cand * scale + 0.5), torch.floor(thr * scale + 0.5), cand, thr, self.bias_bits
            )
            q = (qc if is_cand else qt) / scale
        return b + (q - b).detach()


class ActivationGrid(nn.Module):
    """An activation on the grid its deployed datapath computes, rounded to nearest (straight-through).

    The deployed alphaCMRU ``alpha_t`` and minGRU gate are accumulators shifted right onto a coarse
    grid (``docs/integer-semantics.md``); the export puts half a grid step into their biases
    (:func:`codesign.quant.stack.round_half`), so the shift rounds to nearest, and QAT rounds the
    same way here. Trained on a continuous ``alpha_t``, a bias-only alpha a few grid steps wide
    deployed tens of percent off, and eps = 1 accumulated the error.

    ``frac``: a fixed grid ``2**-frac`` (the minGRU gate: ``gate_bits``). Without it the grid is
    the finest power of two on which the largest ``|a|`` of the batch fits ``bits`` -- the rule
    the export applies to the largest calibration ``alpha_t`` (the grid can differ by one power
    of two when a batch's maximum and the calibration set's straddle a power of two). With
    ``bits``, values saturate to ``bits`` signed codes, as the datapath does.
    """

    def __init__(self, bits: int | None = None, frac: int | None = None) -> None:
        super().__init__()
        if bits is None and frac is None:
            raise ValueError("an activation grid needs bits, frac or both")
        self.bits, self.frac = bits, frac

    def extra_repr(self) -> str:
        return f"bits={self.bits}, frac={self.frac}"

    def forward(self, a: torch.Tensor) -> torch.Tensor:
        if self.frac is not None:
            scale = torch.tensor(2.0**self.frac, dtype=a.dtype, device=a.device)
        else:
            scale = _pow2_scale(a.detach().abs().amax(), self.bits)
        q = torch.floor(a.detach() * scale + 0.5)
        if self.bits is not None:
            q = q.clamp(-(1 << (self.bits - 1)), (1 << (self.bits - 1)) - 1)
        return a + (q / scale - a).detach()


class _InputGrid:
    """Forward pre-hook: the model's input on the deployed input format (data, so no gradient)."""

    def __init__(self, bits: int, frac: int) -> None:
        self.bits, self.frac = bits, frac

    def __call__(self, module: nn.Module, args: tuple) -> tuple:
        x, *rest = args
        return (quantize_input(x, self.bits, self.frac).to(x.dtype), *rest)


class _Peak:
    """Forward hook: the largest ``|output|`` of the module's last forward pass.

    Export calibrates a minGRU or alphaCMRU state grid on the largest value the model reaches on
    calibration data; QAT estimates it from the batch it runs (the grid can differ by one power of
    two when the batch's maximum and the calibration set's straddle a power of two).
    """

    def __init__(self, module: nn.Module) -> None:
        self.value: float | None = None
        module.register_forward_hook(self)

    def __call__(self, module: nn.Module, args: tuple, out) -> None:
        value = out[0] if isinstance(out, tuple) else out
        self.value = float(value.detach().abs().max())


def _estimated_state_frac(
    prev: nn.Module, alpha_bits: int | None, state_bits: int
) -> Callable[[], int | None]:
    """A minGRU's or alphaCMRU's state grid as export calibrates it, from the last batch (None before one)."""
    from codesign.nn.cmru import AlphaCMRU

    state = _Peak(prev)
    if isinstance(prev, AlphaCMRU):
        alpha = _Peak(prev.alpha_proj)
        return lambda: (
            None
            if state.value is None or alpha.value is None
            else min(pow2_frac(alpha.value, alpha_bits or 8), pow2_frac(state.value, state_bits - 1))
        )
    cand = _Peak(prev.candidate)
    return lambda: (
        None
        if state.value is None or cand.value is None
        else pow2_frac(max(state.value, cand.value), state_bits - 1)
    )


def _input_fracs(
    model: nn.Module,
    alpha_bits: int | None,
    input_frac: int | None,
    dcls_weight_bits: int,
    state_bits: int | None = None,
) -> dict[int, Callable[[], int | None]]:
    """For each cell whose accumulator grid is known before export: ``id(cell) -> z_frac()``.

    The grid of layer ``k``'s accumulators is ``2**-(e_i + z_frac)`` with ``z_frac`` the
    fractional bits of what reaches it: the input format for layer 0; a CMRU/BMRU layer's state
    grid (set by its alpha, ``pow2_frac(max |alpha|, alpha_bits)``) for the next layer; 0 after
    an HSRU layer (its output is 0 or 1); plus the DCLS weight scale behind a delay front end.
    Grids that export calibrates (after an alphaCMRU or minGRU layer) are estimated from the
    batch with ``state_bits`` (:func:`_estimated_state_frac`) and left out without it.
    """
    from codesign.nn.cmru import CMRU, AlphaCMRU
    from codesign.nn.dcls import DCLS1d
    from codesign.nn.hardware import BinaryGatedMinGRU, HardSigmoidMinGRU, HardwareHSRU

    cells = list(getattr(model, "cells", []))
    fronts = list(getattr(model, "fronts", [None] * len(cells)))
    out: dict[int, Callable[[], int]] = {}
    for index, (front, cell) in enumerate(zip(fronts, cells, strict=True)):
        if index == 0:
            if input_frac is None:
                continue
            base: Callable[[], int] = lambda f=input_frac: f  # noqa: E731
        else:
            prev = cells[index - 1]
            calibrated = (AlphaCMRU, HardSigmoidMinGRU, BinaryGatedMinGRU)
            if isinstance(prev, HardwareHSRU):  # its output is 0/1: integers
                base = lambda: 0  # noqa: E731
            elif isinstance(prev, calibrated) and state_bits is not None:
                base = _estimated_state_frac(prev, alpha_bits, state_bits)
            elif not isinstance(prev, CMRU) or isinstance(prev, AlphaCMRU) or alpha_bits is None:
                continue
            else:
                base = lambda prev=prev: pow2_frac(float(prev.alpha.detach().abs().max()), alpha_bits)  # noqa: E731
        if isinstance(front, DCLS1d):
            out[id(cell)] = lambda base=base, front=front: (
                None
                if base() is None
                else base() + pow2_frac(float(front.weight.detach().abs().max()), dcls_weight_bits)
            )
        else:
            out[id(cell)] = base
    return out


def _bias_caps(model: nn.Module, z_fracs: dict, bias_bits: int) -> dict[int, BiasCap]:
    """``id(Linear) -> BiasCap`` for every accumulator row set whose input grid is known (or estimated).

    Reads the biases before they are re-parametrized: the caps follow the float biases.
    """
    from codesign.nn.cmru import CMRU, AlphaCMRU

    caps: dict[int, BiasCap] = {}
    for cell in getattr(model, "cells", []):
        z = z_fracs.get(id(cell))
        if z is None:
            continue
        names: tuple[str, ...] = ("candidate", "gate", "current")
        if isinstance(cell, CMRU):  # candidate and threshold rows share a scale, so one cap
            bc, bt = cell.candidate.bias, cell.threshold.bias
            caps[id(cell.candidate)] = caps[id(cell.threshold)] = BiasCap(
                [lambda b=bc: b, lambda b=bt: b], bias_bits, z
            )
            names = ("alpha_proj",) if isinstance(cell, AlphaCMRU) else ()
        for name in names:
            lin = getattr(cell, name, None)
            if isinstance(lin, nn.Linear) and lin.bias is not None:
                caps[id(lin)] = BiasCap([lambda b=lin.bias: b], bias_bits, z)
    return caps


def _fake_quant_cmru(
    module: nn.Module, weight_bits: int, bias_bits: int, z_frac, caps: dict, first: bool
) -> None:
    """A CMRU's candidate and threshold rows on one shared scale, their biases on the accumulator grid."""
    cand, thr = module.candidate, module.threshold
    c0, t0 = cand.weight, thr.weight  # the float parameters, before re-parametrization
    cap = caps.get(id(cand))
    parametrize.register_parametrization(
        cand, "weight", FakeQuant(weight_bits, partner=lambda t0=t0: t0, cap=cap)
    )
    parametrize.register_parametrization(
        thr, "weight", FakeQuant(weight_bits, partner=lambda c0=c0: c0, cap=cap)
    )
    if z_frac is None:
        return
    rows = [lambda c0=c0: c0, lambda t0=t0: t0]
    pair = None
    if first:  # silent steps leave the bias alone: keep the rest gates
        bc0, bt0 = cand.bias, thr.bias
        pair = (lambda bc0=bc0: bc0, lambda bt0=bt0: bt0)
    for lin, is_cand in ((cand, True), (thr, False)):
        rest_pair = None if pair is None else (*pair, is_cand)
        quant = FakeQuantBias(weight_bits, z_frac, rows, rest_pair=rest_pair, bias_bits=bias_bits, cap=cap)
        parametrize.register_parametrization(lin, "bias", quant)


def add_fake_quant(
    model: nn.Module,
    weight_bits: int,
    alpha_bits: int | None = None,
    input_frac: int | None = None,
    input_bits: int | None = None,
    dcls_weight_bits: int = 8,
    bias_bits: int = 16,
    gate_bits: int | None = None,
    state_bits: int | None = None,
) -> nn.Module:
    """Fake-quantize the weights of a hardware stack in place, on the grids the export uses.

    * every ``Linear`` weight (per row; the readout with one shared scale), CMRU ``alpha``;
    * the alphaCMRU ``alpha_t`` on its deployed grid at ``alpha_bits`` and, with ``gate_bits``,
      the minGRU gate on its ``2**-gate_bits`` grid (:class:`ActivationGrid`);
    * DCLS front ends: integer delays (hard mode) and weights on their one ``dcls_weight_bits`` scale;
    * CMRU/BMRU, alphaCMRU, minGRU gate and HSRU input biases on their accumulator grid wherever
      that grid is known before export (see :func:`_input_fracs`: layer 0 with ``input_frac``,
      and layers fed by a CMRU/BMRU or HSRU layer);
    * where that grid is known, each row's weight scale no finer than its bias allows in
      ``bias_bits`` (:class:`BiasCap`, the export's rule);
    * with ``state_bits``, the grids behind a minGRU or alphaCMRU layer estimated from the batch
      (export calibrates them);
    * with ``input_bits`` too, the inputs on the deployed input grid (``2**-input_frac``,
      saturated to ``input_bits``) before every forward pass, and an input stride's window mean
      floored on that grid (the hardware's shifted sum, :class:`codesign.nn.stride.InputStride`).
    """
    from codesign.nn.cmru import CMRU, AlphaCMRU
    from codesign.nn.dcls import DCLS1d
    from codesign.nn.hardware import HardSigmoidMinGRU, HardwareHSRU

    for front in getattr(model, "fronts", []):
        if isinstance(front, DCLS1d):
            front.hard()
            parametrize.register_parametrization(front, "weight", FakeQuant(dcls_weight_bits, per_row=False))
    z_fracs = _input_fracs(model, alpha_bits, input_frac, dcls_weight_bits, state_bits)
    caps = _bias_caps(model, z_fracs, bias_bits)
    first = next(iter(getattr(model, "cells", [])), None)
    done: set[int] = set()

    def bias_on_grid(lin: nn.Linear, module: nn.Module) -> None:
        """One row set's bias on its accumulator grid (when that grid is known or estimated)."""
        if id(module) in z_fracs:
            w = lin.weight
            quant = FakeQuantBias(
                weight_bits, z_fracs[id(module)], [lambda w=w: w], bias_bits=bias_bits, cap=caps.get(id(lin))
            )
            parametrize.register_parametrization(lin, "bias", quant)

    for module in model.modules():
        if isinstance(module, CMRU):
            _fake_quant_cmru(module, weight_bits, bias_bits, z_fracs.get(id(module)), caps, module is first)
            done |= {id(module.candidate), id(module.threshold)}
            if alpha_bits and isinstance(getattr(module, "alpha", None), nn.Parameter):
                parametrize.register_parametrization(module, "alpha", FakeQuant(alpha_bits, per_row=False))
            if alpha_bits and isinstance(module, AlphaCMRU):
                module.alpha_quant = ActivationGrid(bits=alpha_bits)
                bias_on_grid(module.alpha_proj, module)  # no ties moved by export
        if isinstance(module, HardwareHSRU):
            # the input current's bias on its accumulator grid: at 4 bits a step of 2**-7 or so,
            # which the leaky potential sums ~2**leak_shift times before the threshold compares it
            bias_on_grid(module.current, module)
        if gate_bits is not None and isinstance(module, HardSigmoidMinGRU):
            module.gate_quant = ActivationGrid(frac=gate_bits)
            bias_on_grid(module.gate, module)  # no ties moved by export
    if input_frac is not None and input_bits is not None:
        model.register_forward_pre_hook(_InputGrid(input_bits, input_frac))
        if isinstance(getattr(model, "stride", None), InputStride):
            model.stride.frac = input_frac  # the window mean floored on the input grid, as deployed
    readout = getattr(model, "readout", None)
    for module in model.modules():
        if isinstance(module, nn.Linear) and id(module) not in done:
            per_row = module is not readout  # the readout shares one scale (argmax compares its rows)
            parametrize.register_parametrization(
                module, "weight", FakeQuant(weight_bits, per_row=per_row, cap=caps.get(id(module)))
            )
    return model


def remove_fake_quant(model: nn.Module) -> nn.Module:
    """Bake the fake-quantized values into plain parameters (what export then rounds, exactly).

    Activation grids are dropped: the export reproduces them (:func:`codesign.quant.stack.round_half`).
    """
    for module in model.modules():
        if isinstance(module, InputStride):
            module.frac = None
        for name in ("alpha_quant", "gate_quant"):
            if isinstance(getattr(module, name, None), ActivationGrid):
                setattr(module, name, None)
        if parametrize.is_parametrized(module):
            for name in list(module.parametrizations.keys()):
                parametrize.remove_parametrizations(module, name, leave_parametrized=True)
    return model
