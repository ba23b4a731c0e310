"""Synapses as circuits: a layer's input-weight products as sky130 current-mode mirror arrays.

The analog layer of :mod:`codesign.analog.netlist` is driven by ideal current sources whose values
are the candidate and threshold accumulators computed in Python. This module generates the
circuit that computes those sums instead, so every weight is a device with its area and mismatch:

* **Inputs as DAC currents.** Input ``j`` arrives as the current ``|x_j| I_x`` (an input DAC, here
  an ideal source) into one diode-connected nFET ``d_j`` shared by every neuron, and as a sign line
  ``sx_j`` (VDD when ``x_j >= 0``) with its complement ``sxb_j``.
* **Weights as switched binary-weighted mirrors.** For every weight ``w_ij`` and every bit ``k`` of
  ``|w_ij|`` an nFET of width ``2^k W_u`` (length ``L_u``) mirrors ``d_j``; an nFET switch in series
  is gated by the weight bit (the weight register: tied to VDD or ground here). The bit branches
  join at node ``w_i_j``, which two route switches connect to the neuron's positive or negative
  sum line: the one to ``pos_i`` is gated by ``sx_j`` when ``w_ij > 0`` (by ``sxb_j`` when
  ``w_ij < 0``), the one to ``neg_i`` by the complement -- ``sign(w) sign(x)`` picks the line,
  differential for signed weights and inputs.
* **Sums on wires.** ``I(pos_i) - I(neg_i) = I_x sum_j w_ij x_j`` (Kirchhoff). Each sum line
  has an nFET cascode (gate ``vcn``, the cells' cascode voltage) so the mirrors' drains sit near
  their diodes' voltage whatever the next stage holds the line at: without it, lines at 0.5 V
  read 6 % of full scale high (sky130's weak-inversion DIBL). :func:`synapse_testbench` measures
  the sums with the lines held at 1.3 V, about the input of the neuron's pFET mirrors, which
  would also apply the neuron's scale ``k_i / I_x`` and the window centre (that stage is not
  built; ``analog-eval --synapses circuit`` drives the cells with these arrays' simulated sums
  through an ideal one, :mod:`codesign.analog.synapse_sim`).

Zero bits get no device (a programmable array would hold them switched off; the count of such an
array is :func:`synapse_cost` with ``programmable=True``). Area counts gate area ``W L`` of every
device: the mirrors dominate, ``(2^B - 1) W_u L_u`` per weight of ``B`` magnitude bits.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from codesign.analog.cells import I_CAS, NFET, VDD, fmt
from codesign.analog.spec import Analysis, SimSpec
from codesign.errors import CodesignError

__all__ = ["SynapseDesign", "synapse_cost", "synapse_subckt", "synapse_testbench", "measure_synapse"]


@dataclass(frozen=True)
class SynapseDesign:
    """Sizes and unit current of a synapse array (W, L in um; currents in A)."""

    i_x: float = 100e-15
    """Input DAC current per input LSB (the product's unit is ``i_x`` per weight LSB)."""
    w_unit: float = 2.0
    l_unit: float = 4.0
    w_switch: float = 1.0
    l_switch: float = 0.5
    max_units: int = 1
    """Widest mirror instance in units (bit ``k`` is ``2^k / max_units`` instances in parallel).
    1: every mirror device is one identical unit, as in a matched binary array. Wider instances
    fall into other sky130 model bins than the diode: 14 % of full scale off with 4 units."""


def _check(weights: np.ndarray) -> np.ndarray:
    w = np.asarray(weights)
    if w.ndim != 2 or not np.issubdtype(w.dtype, np.integer):
        raise CodesignError(
            f"synapse weights must be a 2-D integer array (neurons, inputs), got {w.dtype} {w.shape}"
        )
    return w.astype(np.int64)


def synapse_subckt(
    weights: np.ndarray, design: SynapseDesign = SynapseDesign(), name: str = "synapses"
) -> str:
    """``.subckt name d_0.. sx_0.. sxb_0.. pos_0.. neg_0.. vdd``: the mirror array of ``weights`` (neurons, inputs)."""
    w = _check(weights)
    d, m = w.shape
    ports = [f"d_{j}" for j in range(m)] + [f"sx_{j}" for j in range(m)] + [f"sxb_{j}" for j in range(m)]
    ports += [f"pos_{i}" for i in range(d)] + [f"neg_{i}" for i in range(d)] + ["vdd", "vcn"]
    lines = [f".subckt {name} " + " ".join(ports)]
    casc = f"W={design.w_unit * design.max_units:g} L={design.l_unit:g}"
    for i in range(d):  # line cascodes: the mirrors' drains near their diodes' voltage (see module doc)
        lines.append(f"XCP{i} pos_{i} vcn lp_{i} 0 {NFET} {casc}")
        lines.append(f"XCN{i} neg_{i} vcn ln_{i} 0 {NFET} {casc}")
    for j in range(m):
        lines.append(f"XD{j} d_{j} d_{j} 0 0 {NFET} W={design.w_unit:g} L={design.l_unit:g}")
    sw = f"W={design.w_switch:g} L={design.l_switch:g}"
    for i in range(d):
        for j in range(m):
            v = int(w[i, j])
            if v == 0:
                continue
            mag = abs(v)
            node = f"w_{i}_{j}"
            for k in range(mag.bit_length()):
                if not (mag >> k) & 1:
                    continue
                units = 1 << k
                per = min(units, design.max_units)
                for f in range(units // per):
                    lines.append(
                        f"XM{i}_{j}_{k}_{f} b_{i}_{j}_{k} d_{j} 0 0 {NFET} W={design.w_unit * per:g} L={design.l_unit:g}"
                    )
                lines.append(f"XS{i}_{j}_{k} {node} vdd b_{i}_{j}_{k} 0 {NFET} {sw}")  # weight bit = 1
            plus, minus = (f"sx_{j}", f"sxb_{j}") if v > 0 else (f"sxb_{j}", f"sx_{j}")
            lines.append(f"XRP{i}_{j} lp_{i} {plus} {node} 0 {NFET} {sw}")
            lines.append(f"XRN{i}_{j} ln_{i} {minus} {node} 0 {NFET} {sw}")
    lines.append(f".ends {name}")
    return "\n".join(lines) + "\n"


def synapse_cost(
    weights: np.ndarray,
    weight_bits: int,
    design: SynapseDesign = SynapseDesign(),
    *,
    programmable: bool = False,
) -> dict:
    """Devices and gate area (um^2) of the array; ``programmable``: every bit built (switched by a register)."""
    w = _check(weights)
    mag_bits = weight_bits - 1
    if mag_bits < 1 or np.abs(w).max(initial=0) >= 1 << mag_bits:
        raise CodesignError(
            f"weights do not fit {weight_bits} signed bits (largest |w| {int(np.abs(w).max(initial=0))})"
        )
    a_unit = design.w_unit * design.l_unit
    a_sw = design.w_switch * design.l_switch
    d, m = w.shape

    def instances(mag: int) -> int:  # parallel mirror instances of one weight (see synapse_subckt)
        return sum(max((1 << k) // design.max_units, 1) for k in range(mag.bit_length()) if (mag >> k) & 1)

    if programmable:
        n_w = d * m
        mirrors = n_w * instances((1 << mag_bits) - 1)
        mirror_area = n_w * ((1 << mag_bits) - 1) * a_unit
        switches = n_w * (mag_bits + 2)
    else:
        nz = w[w != 0]
        mirrors = int(sum(instances(int(abs(v))) for v in nz))
        mirror_area = float(sum(int(abs(v)) for v in nz)) * a_unit
        switches = int(sum(bin(int(abs(v))).count("1") for v in nz)) + 2 * nz.size
    return {
        "diodes": m,
        "mirror_devices": int(mirrors),
        "switches": int(switches),
        "devices": int(m + mirrors + switches),
        "gate_area_um2": float(m * a_unit + mirror_area + switches * a_sw),
        "programmable": programmable,
    }


def synapse_testbench(
    weights: np.ndarray,
    x: np.ndarray,
    design: SynapseDesign = SynapseDesign(),
    *,
    corner: str = "tt",
    mc_seed: int | None = None,
    line_v: float = 1.3,
) -> str:
    """A DC deck: input DAC currents ``|x_j| I_x``, sign lines from ``x``, sum lines held at ``line_v``
    (1.3 V: about the pFET diode input of the neuron stage that takes the sums)."""
    w = _check(weights)
    x = np.asarray(x, dtype=np.int64)
    d, m = w.shape
    if x.shape != (m,):
        raise CodesignError(f"synapse test input must have {m} values, got shape {x.shape}")
    lines = [f"Vdd vdd 0 {VDD:g}"]
    for j in range(m):
        lines.append(f"Ix{j} vdd d_{j} DC {fmt(abs(int(x[j])) * design.i_x)}")
        pos = x[j] >= 0
        lines.append(f"Vsx{j} sx_{j} 0 {VDD if pos else 0:g}")
        lines.append(f"Vsxb{j} sxb_{j} 0 {0 if pos else VDD:g}")
    for i in range(d):
        lines.append(f"Vp{i} vline pos_{i} 0")
        lines.append(f"Vn{i} vline neg_{i} 0")
    lines.append(f"Vline vline 0 {line_v:g}")
    lines.append(f"Icas vdd vcn DC {fmt(I_CAS)}")
    lines.append(f"XK1 vcn vcn kc 0 {NFET} W=4 L=8")
    lines.append(f"XK2 kc kc 0 0 {NFET} W=4 L=8")
    ports = [f"d_{j}" for j in range(m)] + [f"sx_{j}" for j in range(m)] + [f"sxb_{j}" for j in range(m)]
    ports += [f"pos_{i}" for i in range(d)] + [f"neg_{i}" for i in range(d)] + ["vdd", "vcn"]
    lines.append("Xsyn " + " ".join(ports) + " synapses")
    vecs = [f"i(Vp{i})" for i in range(d)] + [f"i(Vn{i})" for i in range(d)] + ["i(Vdd)"]
    spec = SimSpec(
        f"synapse array {d}x{m}",
        "\n".join(lines) + "\n",
        (Analysis("op", "syn", tuple(vecs)),),
        corner=corner,
        library="\n" + synapse_subckt(w, design) + "\n",
        mc_seed=mc_seed,
        shared_cells=False,
        end=True,
    )
    return spec.deck()


def measure_synapse(
    weights: np.ndarray,
    x: np.ndarray,
    design: SynapseDesign = SynapseDesign(),
    *,
    corner: str = "tt",
    mc_seed: int | None = None,
    timeout: float = 120.0,
) -> dict:
    """Run :func:`synapse_testbench` in ngspice; measured and ideal differential sums (A) per neuron."""
    from codesign.analog.ngspice import run_deck

    w = _check(weights)
    res = run_deck(
        synapse_testbench(w, x, design, corner=corner, mc_seed=mc_seed),
        outputs=["syn"],
        timeout=timeout,
        name="synapse",
    )
    t = res["syn"]
    d = w.shape[0]
    # a voltage source's current flows from + to - through it: from vline into the sum line
    pos = np.array([t[f"i(vp{i})"][-1] for i in range(d)])
    neg = np.array([t[f"i(vn{i})"][-1] for i in range(d)])
    x = np.asarray(x, dtype=np.int64)
    return {
        "measured": pos - neg,
        "ideal": design.i_x * (w @ x).astype(np.float64),
        "full_scale": design.i_x * (np.abs(w) @ np.abs(x)).astype(np.float64),
        "pos": pos,
        "neg": neg,
        "wall_s": res.wall_s,
    }


def bundle_synapses(bundle_dir, design: SynapseDesign = SynapseDesign(), frame_s: float = 10e-3) -> dict:
    """Cost of a trained one-layer bundle's candidate and threshold arrays, and their supply
    current on its test set (Kirchhoff: every line carries ``I_x sum |w| |x|``, every diode ``I_x |x|``)."""
    from codesign.analog.layer import layer_view, test_set
    from codesign.analog.mapping import spine
    from codesign.bundle import load_bundle

    bundle = load_bundle(bundle_dir)
    w = spine(layer_view(bundle)).weights
    arr = np.concatenate([w["w_cand"], w["w_thr"]]).astype(np.int64)
    bits = int(bundle.manifest.layers[0].weight_bits)
    xq, _ = test_set(bundle)
    ax = np.abs(xq).astype(np.float64)
    current = ((ax @ np.abs(arr).T).sum(-1) + ax.sum(-1)) * design.i_x  # (N, T)
    power = VDD * float(current.mean())
    return {
        "bundle": bundle.manifest.name,
        "array": list(arr.shape),
        "weight_bits": bits,
        "i_x_fA": design.i_x / 1e-15,
        "unit_um": [design.w_unit, design.l_unit],
        "static": synapse_cost(arr, bits, design),
        "programmable": synapse_cost(arr, bits, design, programmable=True),
        "mean_current_nA": float(current.mean()) / 1e-9,
        "power_nW": power / 1e-9,
        "energy_per_inference_nJ": power * xq.shape[1] * frame_s / 1e-9,
    }


if __name__ == "__main__":
    import json
    import sys

    print(json.dumps(bundle_synapses(sys.argv[1]), indent=2))
