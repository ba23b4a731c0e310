"""Quantize a :class:`HardwareStack` into a format-2 bundle, and rebuild its deployed torch model.

Scales are powers of two (``docs/integer-semantics.md``). Per layer, ``z_frac`` is the fraction of
what its matrices multiply (the input's, or the DCLS output's). Each accumulator row i gets the
finest weight scale ``2**-e_i`` that fits ``weight_bits`` (and its bias ``bias_bits``); rows that
are requantized to the state grid carry ``shift_i = e_i + z_frac - state_frac``. The state grid
``2**-state_frac`` comes from ``alpha`` (CMRU, BMRU), from the largest calibration ``alpha_t`` at
``alpha_bits`` (alphaCMRU, see :func:`_alphacmru_state_frac`) or from calibration data (the largest
state, candidate or potential the float model reaches, for the other cells).

:func:`deployed_from_bundle` rebuilds the float64 model from nothing but the bundle: weights are
the bundle's integers times the powers of two implied by the shifts, so its logits are the golden
model's times one power of two.
"""

from __future__ import annotations

import copy

import numpy as np
import torch

from codesign.bundle.io import Bundle
from codesign.bundle.spec import (
    FORMAT_VERSION,
    InputSpec,
    LayerSpec,
    Manifest,
    ReadoutSpec,
)
from codesign.errors import CodesignError
from codesign.intmath import signed_range
from codesign.nn.cmru import CMRU, AlphaCMRU
from codesign.nn.hardware import HardwareStack, LayerQuant, layer_sequential
from codesign.nn.selective import selective_sequential
from codesign.nn.stride import InputStride
from codesign.quant.fixed_point import keep_rest_gates, pow2_frac, quantize, quantize_input

SHIFT_RANGE = signed_range(7)


def _row_fracs(w: torch.Tensor, b: torch.Tensor, wbits: int, bbits: int, z_frac: int) -> torch.Tensor:
    return torch.tensor(
        [
            min(pow2_frac(float(w[i].abs().max()), wbits), pow2_frac(float(b[i].abs()), bbits) - z_frac)
            for i in range(w.shape[0])
        ],
        dtype=torch.float64,
    )


def _shift(e: torch.Tensor, z_frac: int, target_frac: int, what: str) -> np.ndarray:
    s = (e + z_frac - target_frac).to(torch.int64).numpy()
    lo, hi = SHIFT_RANGE
    if s.min() < lo or s.max() > hi:
        raise CodesignError(
            f"{what} shifts {s.min()}..{s.max()} leave the 7-bit shift range [{lo}, {hi}]: "
            "the weights and the state grid are too far apart; widen state_bits or retrain"
        )
    return s


def round_half(bias: np.ndarray, shift: np.ndarray, bits: int) -> np.ndarray:
    """``bias + 2**(shift - 1)`` where ``shift > 0`` (saturated to ``bits``): the floor becomes a rounding.

    The datapath shifts some accumulators right onto a coarse grid with a floor
    (``sat(shr(A, shift))``: the alphaCMRU ``alpha_t``, the 6-bit minGRU gate). Half a grid step in
    the bias turns that floor into round-half-up without changing the integer rules, so a value
    a few grid steps wide no longer loses up to a whole step, always downwards; QAT trains on the
    same rounding (:class:`codesign.quant.qat.ActivationGrid`). A shift <= 0 is exact and gets nothing.
    """
    lo, hi = signed_range(bits)
    half = np.where(shift > 0, np.left_shift(1, np.maximum(shift - 1, 0)), 0)
    return np.clip(bias + half, lo, hi)


def quant_of(spec: LayerSpec) -> LayerQuant:
    return LayerQuant(
        state_frac=spec.state_frac,
        state_bits=spec.state_bits,
        alpha_bits=spec.alpha_bits,
        gate_bits=spec.gate_bits,
        leak_shift=spec.leak_shift,
    )


@torch.no_grad()
def _calibrate(cell, z: torch.Tensor) -> float:
    """Largest magnitude the state grid must hold, from the float model on calibration data."""
    if isinstance(cell, CMRU) and not isinstance(cell, AlphaCMRU):
        return float(cell.alpha.abs().max())
    if hasattr(cell, "potentials"):
        return max(float(cell.potentials(z).abs().max()), float(cell.theta.abs().max()))
    return max(float(cell.candidate(z).abs().max()), float(cell(z)[0].abs().max()))


@torch.no_grad()
def _alphacmru_state_frac(cell: AlphaCMRU, z: torch.Tensor, alpha_bits: int, state_bits: int) -> int:
    """The alphaCMRU state grid: its updates must fit ``alpha_bits`` and its state ``state_bits``.

    The datapath computes ``alpha_t = sat_{alpha_bits}(shr(A_alpha, alpha_shift))`` on the state
    grid (``docs/integer-semantics.md``), so an update is at most ``2**(alpha_bits-1) - 1`` LSB of
    the state. The grid is therefore the one where the largest calibration ``|alpha_t|`` fits
    ``alpha_bits`` -- what CMRU/BMRU do with their stored alpha. (Fitting it to ``state_bits - 1``
    instead, as for the other cells' candidates, capped every 8-bit update at 127/16384 of the
    largest: JapaneseVowels d = 16 fell from 87.8 % float to 38.5 %.) When ``alpha_bits`` is
    close to ``state_bits`` that grid would leave the state no room to accumulate updates, so it
    is also no finer than the one where the largest calibration state fits ``state_bits - 1``
    bits (one bit of headroom over the float model's range).
    """
    alpha = pow2_frac(float(cell.alpha_proj(z).abs().max()), alpha_bits)
    state = pow2_frac(float(cell(z)[0].abs().max()), state_bits - 1)
    return min(alpha, state)


@torch.no_grad()
def quantize_stack(
    model: HardwareStack,
    *,
    name: str,
    input_bits: int,
    input_frac: int,
    layer_formats: list[dict],
    readout_formats: dict,
    calibration: torch.Tensor,
) -> tuple[Manifest, dict[str, np.ndarray]]:
    """Integer arrays and the format-2 manifest of ``model`` (calibration inputs set the state grids).

    Layer by layer (:func:`_quantize_layer`): each one's calibration output, computed by the
    deployed integer rules, is the next one's calibration input; then the readout.
    """
    for pname, param in model.named_parameters():
        if not torch.isfinite(param).all():
            raise CodesignError(f"model parameter '{pname}' holds NaN or Inf; cannot quantize")
    # the selective-update schedules as the trained model evaluates them (its own dtype): the
    # deployed table is the trained one bit for bit
    tables = {
        index: model.schedule(index).integer_table().numpy()
        for index in range(len(model.cells))
        if model.schedule(index) is not None
    }
    model = copy.deepcopy(model).double().eval()
    weights: dict[str, np.ndarray] = {}
    layers: list[LayerSpec] = []
    stride = model.stride.stride
    x = InputStride(stride, input_frac)(quantize_input(calibration, input_bits, input_frac))
    in_frac = input_frac
    for index, (front, cell, spec) in enumerate(
        zip(model.fronts, model.cells, model.layer_specs, strict=True)
    ):
        fmt = dict(layer_formats[index]) if index < len(layer_formats) else {}
        layer, z = _quantize_layer(index, front, cell, spec, fmt, x, in_frac, tables.get(index), weights)
        layers.append(layer)
        x = _layer_output(cell, z, layer, weights.get(f"layers.{index}.su_gate"))
        in_frac = 0 if layer.cell == "hsru" else layer.state_frac
    readout = _quantize_readout(model.readout, readout_formats, in_frac, model, weights)
    manifest = Manifest(
        format_version=FORMAT_VERSION,
        name=name,
        input=InputSpec(size=model.cells[0].input_size, bits=input_bits, frac=input_frac, stride=stride),
        layers=layers,
        readout=readout,
    )
    return manifest, weights


def _quantize_layer(
    index: int,
    front,
    cell,
    spec: dict,
    fmt: dict,
    x: torch.Tensor,
    in_frac: int,
    table: np.ndarray | None,
    weights: dict[str, np.ndarray],
) -> tuple[LayerSpec, torch.Tensor]:
    """Layer ``index``'s spec (its arrays added to ``weights``) and its cell's calibration input."""
    p = f"layers.{index}."
    z_frac = in_frac
    dcls = spec.get("dcls")
    if dcls is not None:
        front.hard()
        wd = front.weight.double()
        e_d = pow2_frac(float(wd.abs().max()), fmt.get("dcls_weight_bits", 8))
        weights[p + "dcls_weight"] = quantize(wd, e_d, fmt.get("dcls_weight_bits", 8)).numpy()
        weights[p + "dcls_delay"] = front.delays().to(torch.int64).numpy()
        z_frac = in_frac + e_d
    z = front(x)
    kind = spec["cell"]
    state_bits, alpha_bits = fmt.get("state_bits", 16), fmt.get("alpha_bits", 8)
    if kind in ("cmru", "bmru"):
        state_frac = pow2_frac(float(cell.alpha.abs().max()), alpha_bits)
    elif kind == "alphacmru":
        state_frac = _alphacmru_state_frac(cell, z, alpha_bits, state_bits)
    else:
        state_frac = pow2_frac(_calibrate(cell, z), state_bits - 1)
    fields = {
        "cell": kind,
        "size": spec["size"],
        "weight_bits": fmt.get("weight_bits", 8),
        "bias_bits": fmt.get("bias_bits", 16),
        "state_bits": state_bits,
        "alpha_bits": alpha_bits,
        "state_frac": state_frac,
    }
    arrays = {"cmru": _cmru_arrays, "bmru": _cmru_arrays, "alphacmru": _cmru_arrays, "hsru": _hsru_arrays}
    fields |= arrays.get(kind, _mingru_arrays)(index, cell, fmt, fields, z_frac, weights)
    if dcls is not None:
        fields["dcls"] = {
            "taps": dcls["taps"],
            "span": dcls["span"],
            "weight_bits": fmt.get("dcls_weight_bits", 8),
        }
    if table is not None:
        fields["selective"] = {"period": int(table.shape[0])}
        weights[p + "su_gate"] = table
    return LayerSpec.model_validate(fields), z


def _cmru_arrays(index: int, cell, fmt: dict, fields: dict, z_frac: int, weights: dict) -> dict:
    """CMRU, BMRU, alphaCMRU: candidate and threshold rows sharing a scale, alpha (or its projection)."""
    p, kind, state_frac = f"layers.{index}.", fields["cell"], fields["state_frac"]
    wbits, bbits, alpha_bits = fields["weight_bits"], fields["bias_bits"], fields["alpha_bits"]
    if cell.eps not in (-1.0, 0.0, 1.0):
        raise CodesignError(
            f"layer {index}: eps {cell.eps} is not deployable; the datapath computes "
            "eps * h exactly only for eps in {-1, 0, 1} (anneal eps to 0 for BMRU hardware)"
        )
    wc, bc, wb, bb = (
        cell.candidate.weight,
        cell.candidate.bias,
        cell.threshold.weight,
        cell.threshold.bias,
    )
    e = _row_fracs(torch.maximum(wc.abs(), wb.abs()), torch.maximum(bc.abs(), bb.abs()), wbits, bbits, z_frac)
    b_cand, b_thr = quantize(bc, e + z_frac, bbits).numpy(), quantize(bb, e + z_frac, bbits).numpy()
    if index == 0:  # a zero input leaves the bias alone in the accumulators
        qc, qt = keep_rest_gates(torch.from_numpy(b_cand), torch.from_numpy(b_thr), bc, bb, bbits)
        b_cand, b_thr = qc.numpy(), qt.numpy()
    weights |= {
        p + "w_cand": quantize(wc, e[:, None], wbits).numpy(),
        p + "b_cand": b_cand,
        p + "w_thr": quantize(wb, e[:, None], wbits).numpy(),
        p + "b_thr": b_thr,
    }
    if kind == "alphacmru":
        wa, ba = cell.alpha_proj.weight, cell.alpha_proj.bias
        ea = _row_fracs(wa, ba, wbits, bbits, z_frac)
        alpha_shift = _shift(ea, z_frac, state_frac, f"layer {index} alpha")
        weights |= {
            p + "w_alpha": quantize(wa, ea[:, None], wbits).numpy(),
            p + "b_alpha": round_half(quantize(ba, ea + z_frac, bbits).numpy(), alpha_shift, bbits),
            p + "alpha_shift": alpha_shift,
        }
    else:
        weights[p + "alpha"] = quantize(cell.alpha, state_frac, alpha_bits).numpy()
    return {"eps": int(cell.eps)}


def _mingru_arrays(index: int, cell, fmt: dict, fields: dict, z_frac: int, weights: dict) -> dict:
    """Binary-gated and hard-sigmoid minGRU: candidate rows onto the state grid, gate rows."""
    p, state_frac = f"layers.{index}.", fields["state_frac"]
    wbits, bbits = fields["weight_bits"], fields["bias_bits"]
    gate_bits = fmt.get("gate_bits", 6)
    wc, bc, wg, bg = cell.candidate.weight, cell.candidate.bias, cell.gate.weight, cell.gate.bias
    ec, eg = _row_fracs(wc, bc, wbits, bbits, z_frac), _row_fracs(wg, bg, wbits, bbits, z_frac)
    weights |= {
        p + "w_cand": quantize(wc, ec[:, None], wbits).numpy(),
        p + "b_cand": quantize(bc, ec + z_frac, bbits).numpy(),
        p + "cand_shift": _shift(ec, z_frac, state_frac, f"layer {index} candidate"),
        p + "w_gate": quantize(wg, eg[:, None], wbits).numpy(),
        p + "b_gate": quantize(bg, eg + z_frac, bbits).numpy(),
    }
    if fields["cell"] == "mingru":
        gate_shift = _shift(eg, z_frac, gate_bits, f"layer {index} gate")
        weights[p + "gate_shift"] = gate_shift
        weights[p + "b_gate"] = round_half(weights[p + "b_gate"], gate_shift, bbits)
    return {"gate_bits": gate_bits}


def _hsru_arrays(index: int, cell, fmt: dict, fields: dict, z_frac: int, weights: dict) -> dict:
    """HSRU: input-current rows onto the state grid, thresholds on the state grid."""
    p, state_frac = f"layers.{index}.", fields["state_frac"]
    wbits, bbits = fields["weight_bits"], fields["bias_bits"]
    wi, bi = cell.current.weight, cell.current.bias
    ei = _row_fracs(wi, bi, wbits, bbits, z_frac)
    weights |= {
        p + "w_in": quantize(wi, ei[:, None], wbits).numpy(),
        p + "b_in": quantize(bi, ei + z_frac, bbits).numpy(),
        p + "in_shift": _shift(ei, z_frac, state_frac, f"layer {index} input"),
        p + "theta": quantize(cell.theta, state_frac, fields["state_bits"]).numpy(),
    }
    return {"leak_shift": cell.leak_shift}


def _quantize_readout(
    readout, formats: dict, in_frac: int, model: HardwareStack, weights: dict
) -> ReadoutSpec:
    """The linear readout on one shared scale; its bias on the accumulator grid."""
    rw, rb = formats.get("weight_bits", 8), formats.get("bias_bits", 24)
    wo, bo = readout.weight, readout.bias
    e_o = min(pow2_frac(float(wo.abs().max()), rw), pow2_frac(float(bo.abs().max()), rb) - in_frac)
    weights["readout.weight"] = quantize(wo, e_o, rw).numpy()
    weights["readout.bias"] = quantize(bo, e_o + in_frac, rb).numpy()
    return ReadoutSpec(
        classes=wo.shape[0],
        pooling=model.pooling,
        per_step=model.per_step,
        weight_bits=rw,
        bias_bits=rb,
        sum_bits=formats.get("sum_bits", 24),
    )


def _layer_output(cell, z: torch.Tensor, layer: LayerSpec, table: np.ndarray | None) -> torch.Tensor:
    """The deployed layer's output sequence (the golden rule in float64), selective or not."""
    if layer.selective is None:
        return layer_sequential(cell, z, quant_of(layer))
    steps = z.shape[1]
    su = torch.from_numpy(np.asarray(table)[np.arange(steps) % layer.selective.period])
    return selective_sequential(cell, z, su, quant_of(layer))


class DeployedStack(torch.nn.Module):
    """The float64 torch model of a format-2 bundle; ``logit_frac`` converts its logits to integers."""

    def __init__(self, model: HardwareStack, bundle: Bundle, logit_frac: int) -> None:
        super().__init__()
        self.model, self.bundle, self.logit_frac = model.double().eval(), bundle, logit_frac

    def quantize_input(self, x: torch.Tensor) -> torch.Tensor:
        f = self.bundle.manifest.input
        return quantize_input(x, f.bits, f.frac)

    @torch.no_grad()
    def trace(self, x: torch.Tensor) -> tuple[list[torch.Tensor], torch.Tensor]:
        """Every layer's output sequence (float64) and the logits."""
        f = self.bundle.manifest.input
        h = InputStride(f.stride, f.frac)(self.quantize_input(x))
        outs = []
        for index, (front, cell, spec) in enumerate(
            zip(self.model.fronts, self.model.cells, self.bundle.manifest.layers, strict=True)
        ):
            table = self.bundle.weights.get(f"layers.{index}.su_gate")
            h = _layer_output(cell, front(h), spec, table)
            outs.append(h)
        r = self.bundle.manifest.readout
        if r.per_step or r.pooling == "last":
            return outs, self.model.read(h)
        lo, hi = signed_range(r.sum_bits)
        frac = (
            self.bundle.manifest.layers[-1].state_frac
            if self.bundle.manifest.layers[-1].cell != "hsru"
            else 0
        )
        pooled = torch.zeros_like(h[:, 0])
        for t in range(h.shape[1]):  # saturating running sum, as the hardware does
            pooled = (pooled + h[:, t]).clamp(lo * 2.0**-frac, hi * 2.0**-frac)
        return outs, self.model.readout(pooled)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.trace(x)[1]

    @torch.no_grad()
    def integer_logits(self, x: torch.Tensor) -> np.ndarray:
        y = self.forward(x) * 2.0**self.logit_frac
        if not torch.equal(y, y.round()):
            raise AssertionError("deployed logits are not integers: a scale is not a power of two")
        return y.to(torch.int64).numpy()


def _load_row(
    lin: torch.nn.Linear,
    weight: np.ndarray,
    bias: np.ndarray,
    shift: np.ndarray | None,
    target: int,
    z_frac: int,
    size: int,
) -> None:
    """Set a float row whose accumulator is the integer one times ``2**-(shift + target)``."""
    s = torch.zeros(size, dtype=torch.float64) if shift is None else torch.from_numpy(shift).double()
    scale = 2.0 ** -(s + target)
    lin.weight.copy_(torch.from_numpy(weight).double() * (scale * 2.0**z_frac)[:, None])
    lin.bias.copy_(torch.from_numpy(bias).double() * scale)


def deployed_from_bundle(bundle: Bundle) -> DeployedStack:
    """Rebuild the float64 hardware model from a bundle alone (see the module docstring)."""
    m = bundle.manifest
    specs = []
    for layer in m.layers:
        spec = {"cell": layer.cell, "size": layer.size}
        if layer.cell in ("cmru", "alphacmru"):
            spec["eps"] = float(layer.eps)
        if layer.cell == "hsru":
            spec["leak_shift"] = layer.leak_shift
        if layer.dcls is not None:
            spec["dcls"] = {"taps": layer.dcls.taps, "span": layer.dcls.span}
        if layer.selective is not None:
            spec["selective"] = {"period": layer.selective.period}
        specs.append(spec)
    model = HardwareStack(
        m.input.size,
        m.readout.classes,
        specs,
        pooling=m.readout.pooling,
        per_step=m.readout.per_step,
        input_stride=m.input.stride,
    ).double()

    def t(v: np.ndarray) -> torch.Tensor:
        return torch.from_numpy(np.asarray(v)).double()

    with torch.no_grad():
        in_frac = m.input.frac
        for index, (front, cell, layer) in enumerate(zip(model.fronts, model.cells, m.layers, strict=True)):
            w = bundle.layer_weights(index)
            z_frac = in_frac
            if layer.dcls is not None:
                front.weight.copy_(t(w["dcls_weight"]))
                front.positions.copy_(t(w["dcls_delay"]))
                front.hard()
            sf = layer.state_frac

            def row(
                name: str, shift: np.ndarray | None, target: int, lin, w=w, z=z_frac, d=layer.size
            ) -> None:
                _load_row(lin, w["w_" + name], w["b_" + name], shift, target, z, d)

            if layer.cell in ("cmru", "bmru", "alphacmru"):
                row("cand", None, z_frac, cell.candidate)
                row("thr", None, z_frac, cell.threshold)
                if layer.cell == "alphacmru":
                    row("alpha", w["alpha_shift"], sf, cell.alpha_proj)
                else:
                    cell.alpha.copy_(t(w["alpha"]) * 2.0**-sf)
            elif layer.cell in ("bgmingru", "mingru"):
                row("cand", w["cand_shift"], sf, cell.candidate)
                if layer.cell == "mingru":
                    row("gate", w["gate_shift"], layer.gate_bits, cell.gate)
                else:
                    row("gate", None, z_frac, cell.gate)
            elif layer.cell == "hsru":
                row("in", w["in_shift"], sf, cell.current)
                cell.theta.copy_(t(w["theta"]) * 2.0**-sf)
            if layer.selective is not None:
                model.schedule(index).load_table(torch.from_numpy(w["su_gate"]))
            in_frac = 0 if layer.cell == "hsru" else sf
        r_frac = in_frac
        model.readout.weight.copy_(t(bundle.weights["readout.weight"]))
        model.readout.bias.copy_(t(bundle.weights["readout.bias"]) * 2.0**-r_frac)
    return DeployedStack(model, bundle, logit_frac=r_frac)
