"""The synapse arrays of a layer simulated in ngspice, product by product, for ``analog-eval --synapses circuit``.

The mirror arrays of :mod:`codesign.analog.synapse` are static (no state, DC currents), and every
product ``w_ij x_j`` is one group of unit mirrors of input diode ``d_j`` whose drain sits on a
cascoded sum line held near the next stage's input voltage: a product depends on its own input
only. So the array is simulated once per chip (corner, mismatch seed) as a table: one DC sweep
of the input level ``|x|`` over ``0 .. 2^(bits-1)`` in ngspice (every level up to 8, every
8th above, linear in between: :func:`sweep_plan`), with every nonzero product on a
line of its own (its devices exactly as in the array: the same diode, unit mirrors, bit and route
switches, line cascode), gives each product's current on the line its sign routes it to and the
leakage on the other. A sequence's sums, ``I(pos_i) - I(neg_i)`` on every step, and the arrays'
supply current (input DACs into the diodes, every line's current, the cascode bias) are then
lookups in that table. What the superposition leaves out -- a sum line's cascode carries the whole
sum rather than one product -- :func:`check_superposition` measures against the full array.

Each product gets its own devices in the sweep deck, so a mismatch seed draws every device of the
chip once. The layer's biases ``b_cand`` and ``b_thr`` are constant currents (a bias DAC, ideal).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from codesign.analog.cells import I_CAS, NFET, VDD, fmt
from codesign.analog.spec import Analysis, SimSpec
from codesign.analog.synapse import SynapseDesign, synapse_subckt
from codesign.errors import CodesignError

__all__ = [
    "ProductTable",
    "product_deck",
    "measure_products",
    "array_sums",
    "line_offsets",
    "load_or_measure",
]

LINE_V = 1.3
"""Sum-line voltage in the sweep: about the pFET diode input of the stage that takes the sums."""


@dataclass(frozen=True)
class ProductTable:
    """Measured products of one chip: ``routed[r, l]`` is nonzero product ``r`` (row ``rows[r]``,
    input ``cols[r]``) at input level ``l`` on the line its sign routes it to, ``other[r, l]`` the
    leakage on the other line (A)."""

    rows: np.ndarray
    cols: np.ndarray
    routed: np.ndarray
    other: np.ndarray
    i_x: float

    @property
    def levels(self) -> int:
        return self.routed.shape[1]

    def gain(self, weights: np.ndarray) -> float:
        """The array's overall gain (least squares of every product against ``|w| |x| I_x``): the
        one trim of the stage that takes the sums, so that they meet the bias currents (exact
        DACs) on the integer scale. sky130 tt: about 1.025 (the mirrors' drains sit higher than
        their diodes')."""
        ideal = np.abs(np.asarray(weights)[self.rows, self.cols])[:, None] * np.arange(self.levels) * self.i_x
        return float((self.routed * ideal).sum() / (ideal**2).sum())


def _nonzero(weights: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    rows, cols = np.nonzero(np.asarray(weights))
    return rows, cols


def product_deck(
    weights: np.ndarray,
    x_max: int,
    design: SynapseDesign = SynapseDesign(),
    *,
    corner: str = "tt",
    mc_seed: int | None = None,
) -> str:
    """A DC-sweep deck: every nonzero product of ``weights`` (rows, inputs) on its own pair of lines,
    the input level swept from 0 to ``x_max`` LSBs (every input at the same level, sign positive)."""
    w = np.asarray(weights, dtype=np.int64)
    rows, cols = _nonzero(w)
    if rows.size == 0:
        raise CodesignError("the synapse array has no nonzero weight to simulate")
    m = w.shape[1]
    expanded = np.zeros((rows.size, m), dtype=np.int64)
    expanded[np.arange(rows.size), cols] = w[rows, cols]
    n = rows.size
    lines = [f"Vdd vdd 0 {VDD:g}", "Isw 0 nsw DC 0", "Vsense nsw 0 0"]
    for j in range(m):
        lines.append(f"F{j} vdd d_{j} Vsense 1")  # every input DAC copies the swept level
        lines.append(f"Vsx{j} sx_{j} 0 {VDD:g}")
        lines.append(f"Vsxb{j} sxb_{j} 0 0")
    for r in range(n):
        lines.append(f"Vp{r} vline pos_{r} 0")
        lines.append(f"Vn{r} vline neg_{r} 0")
    lines.append(f"Vline vline 0 {LINE_V:g}")
    lines.append(f"Icas vdd vcn DC {fmt(I_CAS)}")
    lines.append(f"XK1 vcn vcn kc 0 {NFET} W=4 L=8")
    lines.append(f"XK2 kc kc 0 0 {NFET} W=4 L=8")
    ports = [f"d_{j}" for j in range(m)] + [f"sx_{j}" for j in range(m)] + [f"sxb_{j}" for j in range(m)]
    ports += [f"pos_{r}" for r in range(n)] + [f"neg_{r}" for r in range(n)] + ["vdd", "vcn"]
    lines.append("Xsyn " + " ".join(ports) + " products")
    vecs = tuple(f"i(Vp{r})" for r in range(n)) + tuple(f"i(Vn{r})" for r in range(n))
    fine, coarse = sweep_plan(x_max)
    sweeps = [Analysis(f"dc Isw 0 {fmt(fine * design.i_x)} {fmt(design.i_x)}", "prod", vecs)]
    if coarse:
        step = f"{fmt(fine * design.i_x)} {fmt(x_max * design.i_x)} {fmt(coarse * design.i_x)}"
        sweeps.append(Analysis(f"dc Isw {step}", "prodc", vecs))
    spec = SimSpec(
        f"synapse products {n} of {w.shape}",
        "\n".join(lines) + "\n",
        tuple(sweeps),
        corner=corner,
        library="\n" + synapse_subckt(expanded, design, name="products") + "\n",
        mc_seed=mc_seed,
        shared_cells=False,
        end=True,
    )
    return spec.deck()


def sweep_plan(x_max: int) -> tuple[int, int]:
    """``(fine, coarse)``: every level up to ``fine``, then every ``coarse``-th up to ``x_max`` (0: none).

    A product is smooth in its input above a few LSBs (weak-inversion mirror: linear plus a
    constant leakage), so the levels in between are linear interpolations; the full sweep of a
    16-neuron, 12-input array with 8-bit weights ran for more than 15 min of ngspice here."""
    if x_max <= 16:
        return x_max, 0
    return 8, 8


def measure_products(
    weights: np.ndarray,
    x_max: int,
    design: SynapseDesign = SynapseDesign(),
    *,
    corner: str = "tt",
    mc_seed: int | None = None,
    timeout: float = 1800.0,
) -> ProductTable:
    """Run :func:`product_deck` in ngspice; the chip's :class:`ProductTable`."""
    from codesign.analog.ngspice import SimulationError, run_deck

    w = np.asarray(weights, dtype=np.int64)
    rows, cols = _nonzero(w)
    fine, coarse = sweep_plan(x_max)
    outs = ["prod"] + (["prodc"] if coarse else [])
    res = run_deck(
        product_deck(w, x_max, design, corner=corner, mc_seed=mc_seed),
        outputs=outs,
        timeout=timeout,
        name="synapse_products",
    )
    scale = np.concatenate([res[o]["scale"] for o in outs]) / design.i_x
    want = sorted(set(range(fine + 1)) | set(range(fine, x_max + 1, coarse or 1)) | {x_max})
    level = np.rint(scale).astype(np.int64)
    # the sweeps' points are at whole levels up to rounding (ngspice may add one at the end)
    pick = np.array([np.flatnonzero(level == k)[0] if (level == k).any() else -1 for k in want])
    if np.any(pick < 0):
        missed = [want[i] for i in np.flatnonzero(pick < 0)][:5]
        raise SimulationError(f"the synapse sweep missed input levels {missed}")
    every = np.arange(x_max + 1)

    def column(name: str) -> np.ndarray:  # every level, linear between the swept ones
        return np.interp(every, want, np.concatenate([res[o][name] for o in outs])[pick])

    # a voltage source's current flows from + to - through it: from vline into the line
    pos = np.stack([column(f"i(vp{r})") for r in range(rows.size)])
    neg = np.stack([column(f"i(vn{r})") for r in range(rows.size)])
    positive = w[rows, cols] > 0  # with x >= 0 a positive weight is routed to pos
    routed = np.where(positive[:, None], pos, neg)
    other = np.where(positive[:, None], neg, pos)
    return ProductTable(rows, cols, routed, other, design.i_x)


def array_sums(table: ProductTable, weights: np.ndarray, xq: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Differential sums ``(T, rows)`` in LSB units (``(I_pos - I_neg) / (g I_x)``, ``g`` the
    array's :meth:`ProductTable.gain`) of one sequence ``xq`` (T, inputs), and the lines' total
    current ``(T,)`` (A)."""
    w = np.asarray(weights, dtype=np.int64)
    x = np.asarray(xq, dtype=np.int64)
    if np.abs(x).max(initial=0) >= table.levels:
        raise CodesignError(f"input level {int(np.abs(x).max())} beyond the table's {table.levels - 1}")
    lvl = np.abs(x)[:, table.cols]  # (T, products)
    idx = np.arange(table.cols.size)
    main = table.routed[idx[None, :], lvl]
    leak = table.other[idx[None, :], lvl]
    sign = np.where(x[:, table.cols] >= 0, 1, -1) * np.sign(w[table.rows, table.cols])[None, :]
    on_pos = np.where(sign > 0, main, leak)
    on_neg = np.where(sign > 0, leak, main)
    d = w.shape[0]
    pos = np.zeros((x.shape[0], d))
    neg = np.zeros((x.shape[0], d))
    np.add.at(pos.T, table.rows, on_pos.T)
    np.add.at(neg.T, table.rows, on_neg.T)
    return (pos - neg) / (table.gain(w) * table.i_x), (pos + neg).sum(axis=1)


def line_offsets(table: ProductTable, weights: np.ndarray, inputs: int) -> np.ndarray:
    """Every sum line's differential sum with all inputs at zero ``(rows,)``, in whole LSB units.

    With no input each unit mirror still conducts ~0.1 pA (sky130 tt, 2/4 um), so a row's
    positive and negative lines do not cancel: the JapaneseVowels arrays sit -31..+32 units off
    zero. A chip measures this once (inputs off) and folds it into the row's bias DAC code,
    which is how ``analog-eval --synapse-trim offset`` drives the cells. Untrimmed, the offset
    ate most of neuron 9's 14-unit margin over the left padding (where the sums are the biases
    alone), and its cell, set with 0.8 pA of overdrive, crept over 13 frames and fell back when
    the utterance began: 46 of 77 root errors in the 71-sequence run."""
    z, _ = array_sums(table, weights, np.zeros((1, inputs), dtype=np.int64))
    return np.rint(z[0])


def array_supply(table: ProductTable, xq: np.ndarray, line_current: np.ndarray) -> np.ndarray:
    """Supply power (W) of the arrays on every step: the input DACs into the diodes, every sum
    line's current (drawn from VDD through the next stage) and the cascode bias."""
    x = np.abs(np.asarray(xq, dtype=np.float64))
    return VDD * (x.sum(axis=1) * table.i_x + line_current + I_CAS)


def _key(weights: np.ndarray, x_max: int, design: SynapseDesign, corner: str, mc_seed: int | None) -> str:
    text = json.dumps(
        {
            "v": "synapse-products-2",
            "w": hashlib.sha256(np.ascontiguousarray(weights, dtype=np.int64).tobytes()).hexdigest(),
            "shape": list(np.shape(weights)),
            "x_max": x_max,
            "design": design.__dict__,
            "corner": corner,
            "seed": mc_seed,
        },
        sort_keys=True,
    )
    return hashlib.sha256(text.encode()).hexdigest()[:20]


def load_or_measure(
    weights: np.ndarray,
    x_max: int,
    cache: Path,
    design: SynapseDesign = SynapseDesign(),
    *,
    corner: str = "tt",
    mc_seed: int | None = None,
) -> ProductTable:
    """The chip's table from ``cache`` (``synapses_<key>.npz``, no pickle), or measured and cached."""
    import io

    from codesign.atomic import write_bytes

    path = Path(cache) / f"synapses_{_key(weights, x_max, design, corner, mc_seed)}.npz"
    if path.is_file():
        with np.load(path, allow_pickle=False) as z:
            return ProductTable(z["rows"], z["cols"], z["routed"], z["other"], float(z["i_x"]))
    table = measure_products(weights, x_max, design, corner=corner, mc_seed=mc_seed)
    buf = io.BytesIO()
    np.savez(buf, rows=table.rows, cols=table.cols, routed=table.routed, other=table.other, i_x=table.i_x)
    write_bytes(path, buf.getvalue())
    return table


def test_set_figures(
    bundle_dir: Path, cache: Path, i_x_fa: float = 1000.0, corner: str = "tt", trim: str = "offset"
) -> dict:
    """The chip's arrays (table from ``cache`` or ngspice) over a trained bundle's whole test set:
    how far their sums are from the integers, their supply power, and the states and accuracy of
    ideal complementary-pair cells (no mismatch, step mapping) driven by those sums -- what the
    arrays alone cost in fidelity, without a cell transient per sequence. ``trim``: ``offset``
    folds every line's zero-input sum into its bias (:func:`line_offsets`), ``none`` does not."""
    from codesign.analog.behavioural import golden_signs, pair_signs
    from codesign.analog.layer import analog_readout, layer_view, test_set
    from codesign.analog.mapping import accumulators, map_bundle, spine
    from codesign.bundle import load_bundle
    from codesign.golden import run_golden

    bundle = load_bundle(bundle_dir)
    view = layer_view(bundle)
    sp = spine(view)
    w = sp.weights
    arr = np.concatenate([w["w_cand"], w["w_thr"]]).astype(np.int64)
    d = w["w_cand"].shape[0]
    xq, y = test_set(bundle)
    x_max = 1 << (sp.manifest.formats.input.bits - 1)
    table = load_or_measure(arr, x_max, cache, SynapseDesign(i_x=i_x_fa * 1e-15), corner=corner)
    c, b = accumulators(view, xq)
    maps = map_bundle(view, xq, normalise=True)
    alpha = bundle.weights["layers.0.alpha"].astype(np.int64)
    off = line_offsets(table, arr, xq.shape[2]) if trim == "offset" else np.zeros(arr.shape[0])
    errs, power, sums_c, sums_b = [], [], [], []
    for n in range(len(xq)):
        s, lines = array_sums(table, arr, xq[n])
        cm, bm = s[:, :d] - off[:d] + w["b_cand"], s[:, d:] - off[d:] + w["b_thr"]
        errs.append(np.abs(np.concatenate([cm - c[n], bm - b[n]], axis=1)))
        power.append(array_supply(table, xq[n], lines).mean())
        sums_c.append(cm)
        sums_b.append(bm)
    signs_a = pair_signs(np.asarray(sums_c), np.asarray(sums_b), maps).astype(np.int64)
    err = np.asarray(errs)
    classes = np.array([analog_readout(bundle, alpha[None, :] * s)[1] for s in signs_a])
    frame = 10e-3
    return {
        "bundle": bundle.manifest.name,
        "sequences": len(xq),
        "corner": corner,
        "i_x_fA": i_x_fa,
        "trim": trim,
        "line_offsets_units": off.astype(int).tolist(),
        "array_gain": table.gain(arr),
        "sum_error_units": {
            "median": float(np.median(err)),
            "p99": float(np.percentile(err, 99)),
            "max": float(err.max()),
        },
        "synapse_power_nW": float(np.mean(power) / 1e-9),
        "synapse_energy_nJ_per_inference": float(np.mean(power) * xq.shape[1] * frame / 1e-9),
        "state_agreement_ideal_cells": float((signs_a == golden_signs(view, xq)).mean()),
        "accuracy_ideal_cells": float((classes == y).mean()),
        "golden_accuracy": float((run_golden(bundle, xq).classes == y).mean()),
    }


if __name__ == "__main__":
    import argparse

    from codesign.atomic import write_text

    ap = argparse.ArgumentParser(
        prog="python -m codesign.analog.synapse_sim", description=test_set_figures.__doc__
    )
    ap.add_argument("bundle", type=Path)
    ap.add_argument("--cache", type=Path, required=True, help="where the chip's table is kept")
    ap.add_argument("--ix-fa", type=float, default=1000.0)
    ap.add_argument("--trim", choices=("offset", "none"), default="offset")
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args()
    args.cache.mkdir(parents=True, exist_ok=True)
    res = test_set_figures(args.bundle, args.cache, args.ix_fa, trim=args.trim)
    text = json.dumps(res, indent=2) + "\n"
    print(text, end="")
    if args.json is not None:
        write_text(args.json, text)
