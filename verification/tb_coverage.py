"""Functional coverage of the accelerator testbench (cocotb-coverage).

Every bin is a behaviour the regression must have *checked* at least once: the golden model's
expectations (gates, saturation, ties, sign(0), events per step) are sampled when they are
compared, the stream monitors sample the stall patterns, the tests sample the protocol corners.
:func:`export` turns the cocotb-coverage database into ``{point: {bin: hits}}`` for the result
JSON; ``verification/regress.py`` merges those across runs and reports every bin that was missed.
"""

from __future__ import annotations

import numpy as np
from cocotb_coverage.coverage import CoverPoint, coverage_db

from codesign.bundle.cells import CELLS
from codesign.bundle.io import Bundle
from codesign.golden.model import dcls_front_end, stride_frames
from codesign.intmath import signed_range

__all__ = ["BINS", "cover_bundle", "cover_sequence", "export", "sample"]

BINS: dict[str, list[str]] = {
    "cell": list(CELLS),  # every kind of the registry (codesign/bundle/cells.py)
    "eps": ["-1", "0", "1"],
    "readout": ["last", "sum", "per_step"],
    "layers": ["1", "2", "3"],
    "dcls": ["layer 0", "later layer", "delay 0", "delay span-1"],
    "lanes": ["P=1", "1<P<d", "P=d", "partial last group"],
    "gate": [f"{name} {state}" for name, kind in CELLS.items() for state in kind.gate_bins],
    "saturation": ["state upper", "state lower", "pool upper", "pool lower"],
    "sign": ["sign(0) with gate open", "tie |c|=|b|"],
    "events per step": ["none", "one", "some", "every neuron"],
    "stall": ["input valid gap", "input not ready", "result back-pressure", "config gap"],
    "sequence length": ["T=1", "2..40", "41..1000", ">1000"],
    "input stride": ["S=1", "S>1", "partial last window", "DCLS layer 0"],
    "inputs": ["all-zero sequence", "max magnitude", "empty step", "back-to-back sequences"],
    "protocol": ["reset mid-sequence", "weights reloaded", "argmax tie"],
    "selective": [
        "period 1",
        "period > 1",
        "event-driven layer",
        "every neuron closed",
        "every neuron open",
        "group skipped",
        "partly open group",
    ],
}
"""Cover points and their bins."""


def _point(name: str):
    return CoverPoint(
        f"accelerator.{name}",
        xf=lambda point, value, _name=name: value if point == _name else None,
        bins=BINS[name],
    )


def _decorate(fn):
    for name in BINS:
        fn = _point(name)(fn)
    return fn


@_decorate
def _sample(point: str, value: str) -> None:
    """Record one hit of ``value`` in cover point ``point``."""


def sample(point: str, value: str) -> None:
    if point not in BINS or value not in BINS[point]:
        raise KeyError(f"no coverage bin {point!r}/{value!r}")
    _sample(point, value)


def export() -> dict[str, dict[str, int]]:
    """``{point: {bin: hits}}`` of every cover point (bins never hit have 0)."""
    out: dict[str, dict[str, int]] = {}
    for name, bins in BINS.items():
        item = coverage_db[f"accelerator.{name}"]
        hits = item.detailed_coverage
        out[name] = {b: int(hits.get(b, 0)) for b in bins}
    return out


def merge(into: dict[str, dict[str, int]], other: dict[str, dict[str, int]]) -> dict[str, dict[str, int]]:
    """Add ``other``'s hits to ``into`` (in place) and return it."""
    for point, bins in other.items():
        target = into.setdefault(point, {})
        for b, hits in bins.items():
            target[b] = target.get(b, 0) + int(hits)
    return into


def summary(cov: dict[str, dict[str, int]]) -> dict:
    """Bins hit / total and the names of the bins never hit."""
    total = sum(len(BINS[p]) for p in BINS)
    missed = [f"{p}: {b}" for p in BINS for b in BINS[p] if not cov.get(p, {}).get(b)]
    return {"bins": total, "hit": total - len(missed), "missed": missed}


# --------------------------------------------------------------------------- what a bundle and a sequence cover
def cover_bundle(bundle: Bundle, lanes: int) -> None:
    """The shape a checked bundle exercises: cells, eps, DCLS, lanes, readout, depth."""
    man = bundle.manifest
    for i, layer in enumerate(man.layers):
        sample("cell", layer.cell)
        if CELLS[layer.cell].rule == "cmru":
            sample("eps", str(layer.eps))
        if layer.dcls is not None:
            sample("dcls", "layer 0" if i == 0 else "later layer")
            delays = bundle.weights[f"layers.{i}.dcls_delay"]
            if (delays == 0).any():
                sample("dcls", "delay 0")
            if (delays == layer.dcls.span - 1).any() and layer.dcls.span > 1:
                sample("dcls", "delay span-1")
        p = min(lanes, layer.size)
        sample("lanes", "P=1" if p == 1 else ("P=d" if p == layer.size else "1<P<d"))
        if layer.size % p:
            sample("lanes", "partial last group")
        if layer.selective is not None:
            sample("selective", "period 1" if layer.selective.period == 1 else "period > 1")
            if i > 0:
                sample("selective", "event-driven layer")
    r = man.readout
    sample("readout", "per_step" if r.per_step else r.pooling)
    if len(man.layers) <= 3:
        sample("layers", str(len(man.layers)))


def cover_sequence(bundle: Bundle, x: np.ndarray, g, lanes: int | None = None) -> None:
    """What one checked sequence exercises (golden result ``g``): length, input corners, each
    layer's gates, saturation, sign(0) and ties, events per step, pooled-sum saturation."""
    steps = x.shape[0]
    sample(
        "sequence length",
        "T=1" if steps == 1 else "2..40" if steps <= 40 else "41..1000" if steps <= 1000 else ">1000",
    )
    lo, hi = signed_range(bundle.manifest.input.bits)
    if not x.any():
        sample("inputs", "all-zero sequence")
    if ((x == lo) | (x == hi)).all():
        sample("inputs", "max magnitude")
    man = bundle.manifest
    stride = man.input.stride
    sample("input stride", "S=1" if stride == 1 else "S>1")
    if steps % stride:
        sample("input stride", "partial last window")
    if stride > 1 and man.layers[0].dcls is not None:
        sample("input stride", "DCLS layer 0")
    z = stride_frames(x[None], stride)
    steps = z.shape[1]
    for i, (layer, trace) in enumerate(zip(man.layers, g.layers, strict=True)):
        w = bundle.layer_weights(i)
        zin = dcls_front_end(z, w["dcls_weight"], w["dcls_delay"]) if layer.dcls is not None else z
        _cover_gates(layer, trace.gates[0])
        if CELLS[layer.cell].rule == "cmru":
            _cover_cmru(layer, w, zin[0], trace.gates[0], trace.states[0])
        _cover_events(layer.size, trace.events[0])
        if layer.selective is not None and lanes is not None:
            _cover_schedule(w["su_gate"], steps, min(lanes, layer.size))
        z = trace.states
    r = man.readout
    if r.pooling == "sum" and not r.per_step:
        _cover_pool(r.sum_bits, g.layers[-1].states[0])


def _cover_schedule(table: np.ndarray, steps: int, lanes: int) -> None:
    """The steps of a selective layer's schedule one sequence ran (steps after the first: the
    first walks every group): closed and open steps, skipped and partly open groups."""
    from codesign.hw.selective import group_open

    phases = np.arange(1, steps) % table.shape[0]
    if not phases.size:
        return
    rows = table[phases] != 0
    if (~rows.any(axis=1)).any():
        sample("selective", "every neuron closed")
    if rows.all(axis=1).any():
        sample("selective", "every neuron open")
    groups = group_open(table, lanes)[phases].astype(bool)  # (steps, G, P)
    valid = np.zeros(groups.shape[1:], dtype=bool)
    valid.reshape(-1)[: table.shape[1]] = True
    opened = groups.any(axis=2)
    if (~opened).any():
        sample("selective", "group skipped")
    if (opened & ~(groups | ~valid[None]).all(axis=2)).any():
        sample("selective", "partly open group")


def _cover_gates(layer, gates: np.ndarray) -> None:
    kind = CELLS[layer.cell]
    if kind.graded_gate:  # z in [0, 2**gate_bits]: closed, between, open
        one = 1 << layer.gate_bits
        hits = (gates == 0, (gates > 0) & (gates < one), gates == one)
    else:  # a 0/1 gate: open (or spike), closed (or none)
        hits = (gates != 0, gates == 0)
    for label, hit in zip(kind.gate_bins, hits, strict=True):
        if hit.any():
            sample("gate", f"{layer.cell} {label}")


def _cover_cmru(layer, w: dict, zin: np.ndarray, gates: np.ndarray, states: np.ndarray) -> None:
    slo, shi = signed_range(layer.state_bits)
    if (states == shi).any():
        sample("saturation", "state upper")
    if (states == slo).any():
        sample("saturation", "state lower")
    c = zin @ w["w_cand"].T + w["b_cand"]
    b = zin @ w["w_thr"].T + w["b_thr"]
    if ((c == 0) & (gates == 1)).any():
        sample("sign", "sign(0) with gate open")
    if ((np.abs(c) == np.abs(b)) & (c != 0)).any():
        sample("sign", "tie |c|=|b|")


def _cover_events(d: int, events: np.ndarray) -> None:
    for label, hit in (
        ("none", events == 0),
        ("one", events == 1),
        ("some", (events > 1) & (events < d)),
        ("every neuron", events == d),
    ):
        if hit.any():
            sample("events per step", label)


def _cover_pool(sum_bits: int, states: np.ndarray) -> None:
    plo, phi = signed_range(sum_bits)
    pooled = np.zeros(states.shape[1], dtype=np.int64)
    for row in states:
        raw = pooled + row
        if (raw > phi).any():
            sample("saturation", "pool upper")
        if (raw < plo).any():
            sample("saturation", "pool lower")
        pooled = np.clip(raw, plo, phi)
