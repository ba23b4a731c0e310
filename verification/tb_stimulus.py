"""Directed stimulus: corner bundles (weight edits that force a behaviour) and corner inputs.

Each corner is one small function editing a layer's arrays in place; :func:`corner_bundles`
applies each to every layer of a bundle (arrays clipped back to their declared widths), and
:func:`corner_sequences` gives the input corners. Cells are told apart by their update rule
(``codesign/bundle/cells.py``), so a new kind with an existing rule gets its corners for free.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from codesign.bundle.cells import CELLS
from codesign.bundle.io import Bundle
from codesign.bundle.spec import array_table
from codesign.intmath import signed_range

__all__ = ["CORNERS", "corner_bundles", "corner_sequences"]

Edit = Callable[[dict, str, object, Callable[[str], tuple[int, int]]], None]
"""``edit(weights, prefix, layer, lohi)``: change layer ``prefix``'s arrays in place."""


def gate_open(w, p, layer, lohi) -> None:
    """Every gate open on every step (and, with non-zero alphas, an event on every neuron at once)."""
    rule = CELLS[layer.cell].rule
    if rule == "cmru":
        w[p + "w_thr"][:] = 0
        w[p + "b_thr"][:] = 0
        if "alpha_shift" in CELLS[layer.cell].params:  # alphaCMRU: alpha from its own matrix
            w[p + "b_alpha"] = np.where(w[p + "b_alpha"] == 0, 1 << 4, w[p + "b_alpha"])
            w[p + "alpha_shift"][:] = 0
        else:
            w[p + "alpha"] = np.where(w[p + "alpha"] == 0, 1, w[p + "alpha"])
    elif rule == "bgmingru":
        w[p + "w_gate"][:] = 0
        w[p + "b_gate"][:] = 0
    elif rule == "mingru":
        w[p + "w_gate"][:] = 0
        w[p + "b_gate"][:] = lohi(p + "b_gate")[1]
        w[p + "gate_shift"][:] = 0
    elif rule == "hsru":
        w[p + "theta"][:] = lohi(p + "theta")[0]


def gate_closed(w, p, layer, lohi) -> None:
    """No gate ever opens."""
    rule = CELLS[layer.cell].rule
    if rule == "cmru":
        w[p + "w_cand"][:] = 0
        w[p + "b_cand"][:] = 0
        w[p + "w_thr"][:] = 0
        w[p + "b_thr"][:] = 1
    elif rule == "bgmingru":
        w[p + "w_gate"][:] = 0
        w[p + "b_gate"][:] = -1
    elif rule == "mingru":
        w[p + "w_gate"][:] = 0
        w[p + "b_gate"][:] = lohi(p + "b_gate")[0]
        w[p + "gate_shift"][:] = 0
    elif rule == "hsru":
        w[p + "w_in"][:] = 0
        w[p + "b_in"][:] = 0
        w[p + "theta"][:] = 1


def sign0(w, p, layer, lohi) -> None:
    """Candidate and threshold both 0: the gate opens and sign(0) = +1 (the CMRU family)."""
    if CELLS[layer.cell].rule == "cmru":
        for k in ("w_cand", "b_cand", "w_thr", "b_thr"):
            w[p + k][:] = 0


def tie(w, p, layer, lohi) -> None:
    """``b = -c``: ``|c| = |b|`` with ``c != 0`` (the CMRU family)."""
    if CELLS[layer.cell].rule == "cmru":
        for c, b in (("w_cand", "w_thr"), ("b_cand", "b_thr")):
            lo, hi = lohi(p + c)
            w[p + c] = np.clip(w[p + c], lo + 1, hi)
            w[p + b] = -w[p + c]


def saturate(w, p, layer, lohi) -> None:
    """Gates open and the largest alpha: the state runs into both bounds under the input ramps."""
    gate_open(w, p, layer, lohi)
    if CELLS[layer.cell].rule != "cmru":
        return
    if "alpha" in CELLS[layer.cell].params:
        w[p + "alpha"] = np.where(w[p + "alpha"] < 0, lohi(p + "alpha")[0], lohi(p + "alpha")[1])
    else:  # alphaCMRU
        w[p + "w_alpha"][:] = 0
        w[p + "b_alpha"][:] = lohi(p + "b_alpha")[1]
    w[p + "b_cand"][:] = 0


def delay(value: str) -> Edit:
    """Every DCLS tap at delay ``span - 1`` (``"max"``) or 0."""

    def fn(w, p, layer, lohi) -> None:
        if layer.dcls is not None:
            w[p + "dcls_delay"][:] = layer.dcls.span - 1 if value == "max" else 0

    return fn


CORNERS: dict[str, Edit] = {
    "gate open": gate_open,
    "gate closed": gate_closed,
    "sign0": sign0,
    "tie": tie,
    "saturate": saturate,
}
"""Corner bundles made by editing every layer (``argmax tie`` and the DCLS delays besides)."""


def _clip_to_formats(bundle: Bundle, weights: dict[str, np.ndarray]) -> Bundle:
    table = array_table(bundle.manifest)
    out = {}
    for k, v in weights.items():
        bits = table[k][1]
        lo, hi = (0, (1 << bits) - 1) if k.endswith("dcls_delay") else signed_range(bits)
        out[k] = np.clip(np.asarray(v, dtype=np.int64), lo, hi)
    return Bundle(bundle.manifest, out, bundle.path)


def _edit(bundle: Bundle, fn: Edit) -> Bundle:
    table = array_table(bundle.manifest)

    def lohi(name: str) -> tuple[int, int]:
        return signed_range(table[name][1])

    w = {k: v.copy() for k, v in bundle.weights.items()}
    for i, layer in enumerate(bundle.manifest.layers):
        fn(w, f"layers.{i}.", layer, lohi)
    return _clip_to_formats(bundle, w)


def corner_bundles(bundle: Bundle) -> dict[str, Bundle]:
    """Weight edits of ``bundle`` (same shape) that force the directed corners: :data:`CORNERS`,
    ``argmax tie`` (a zero readout: every logit 0, the lowest class wins) and, with a DCLS front
    end, ``delay span-1`` / ``delay 0`` on every tap."""
    out = {name: _edit(bundle, fn) for name, fn in CORNERS.items()}
    tied = {k: v.copy() for k, v in bundle.weights.items()}
    tied["readout.weight"][:] = 0
    tied["readout.bias"][:] = 0
    out["argmax tie"] = Bundle(bundle.manifest, tied, bundle.path)
    if any(layer.dcls is not None for layer in bundle.manifest.layers):
        out["delay span-1"] = _edit(bundle, delay("max"))
        out["delay 0"] = _edit(bundle, delay("zero"))
    return out


def corner_sequences(bundle: Bundle, rng: np.random.Generator, *, short: bool = False) -> list[np.ndarray]:
    """Input corners: all-zero, T = 1, maximum magnitude, saturating ramps both ways, alternating
    signs, sparse steps. ``short``: a cheaper set for the corner bundles (alternating, T = 1,
    the ramps)."""
    fmt = bundle.manifest.input
    m = fmt.size
    lo, hi = signed_range(fmt.bits)
    ramp = np.concatenate([np.full((6, m), hi), np.full((6, m), lo)])
    alt = np.array([np.full(m, hi if t % 2 == 0 else lo) for t in range(6)])
    one = rng.integers(lo, hi + 1, size=(1, m))
    if short:
        return [s.astype(np.int64) for s in (alt, one, ramp, ramp[::-1].copy())]
    seqs = [np.zeros((4, m), dtype=np.int64), np.zeros((1, m), dtype=np.int64), one]
    x = rng.integers(lo, hi + 1, size=(1, m))
    x[rng.random((1, m)) < 0.5] = 0
    seqs.append(x)
    seqs.append(rng.choice(np.array([lo, hi]), size=(6, m)))
    seqs += [ramp, ramp[::-1].copy(), alt]
    sparse = np.zeros((7, m), dtype=np.int64)
    sparse[::3, 0] = hi
    seqs.append(sparse)
    return [s.astype(np.int64) for s in seqs]
