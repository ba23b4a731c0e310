"""The golden integer model of a bundle (format version 2): a stack of layers and a readout.

Implements ``docs/integer-semantics.md`` with int64 numpy arithmetic and nothing else: no torch,
no floats after the input quantizer. Layers have no feedback between them, so the model runs
layer by layer over whole sequences: layer l+1 sees every step of layer l's output. The RTL
scoreboard and the torch deployed model are checked against this module.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

import numpy as np

from codesign.bundle.io import Bundle
from codesign.bundle.spec import LayerSpec, Manifest
from codesign.bundle.spine import SpineBundle, as_bundle
from codesign.errors import CodesignError
from codesign.intmath import saturate, signed_range

Accumulate = Literal["dense", "events"]

MATRICES = {"cmru": 2, "bmru": 2, "alphacmru": 3, "bgmingru": 2, "mingru": 2, "hsru": 1}
"""Weight matrices a cell multiplies its input with (MACs per non-zero input and neuron)."""


@dataclass
class LayerTrace:
    """What one layer did at every step of every sequence."""

    states: np.ndarray  # (N, T, d) the layer's output (its state; HSRU: the digital bit D)
    gates: np.ndarray  # (N, T, d) update gate (CMRU family, bgmingru: 0/1; mingru: z_int; hsru: spike)
    events: np.ndarray  # (N, T) neurons whose output changed
    macs: np.ndarray  # (N, T) multiply-accumulates of an event-driven datapath
    potentials: np.ndarray | None = None  # (N, T, d) HSRU analog potential V
    opens: np.ndarray | None = None  # (N, T) neurons whose selective-update gate is open
    items: np.ndarray | None = None  # (N, T) items the layer's engine walks (non-zero inputs or events)


@dataclass
class GoldenResult:
    layers: list[LayerTrace]
    logits: np.ndarray  # (N, C), or (N, T, C) for per-step readouts
    classes: np.ndarray  # (N,) or (N, T)
    readout_macs: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))

    # single-layer shorthands (the spine's names)
    @property
    def states(self) -> np.ndarray:
        return self.layers[-1].states

    @property
    def gates(self) -> np.ndarray:
        return self.layers[-1].gates

    @property
    def events(self) -> np.ndarray:
        return sum(t.events for t in self.layers)

    @property
    def macs(self) -> np.ndarray:
        return sum(t.macs for t in self.layers)


def shift_floor(v: np.ndarray, shift: np.ndarray | int) -> np.ndarray:
    """``floor(v / 2**shift)`` (arithmetic right shift); a negative shift is an exact left shift."""
    shift = np.asarray(shift, dtype=np.int64)
    return np.where(shift >= 0, v >> np.maximum(shift, 0), v << np.maximum(-shift, 0))


def quantize_inputs(bundle: Bundle | SpineBundle, x: np.ndarray) -> np.ndarray:
    """Float inputs ``(N, T, M)`` to the integer input format (half-up rounding, then saturate or refuse)."""
    bundle = as_bundle(bundle)
    fmt = bundle.manifest.input
    x = np.asarray(x, dtype=np.float64)
    if x.ndim != 3 or x.shape[-1] != fmt.size:
        raise CodesignError(f"inputs must have shape (sequences, steps, {fmt.size}); got {tuple(x.shape)}")
    if not np.isfinite(x).all():
        n, t, j = np.argwhere(~np.isfinite(x))[0]
        raise CodesignError(f"input is not finite at sequence {n}, step {t}, feature {j}")
    q = np.floor(x * 2.0**fmt.frac + 0.5)
    lo, hi = signed_range(fmt.bits)
    if fmt.overflow == "error":
        bad = np.argwhere((q < lo) | (q > hi))
        if bad.size:
            n, t, j = bad[0]
            raise CodesignError(
                f"input {x[n, t, j]!r} at sequence {n}, step {t}, feature {j} is outside the input format "
                f"[{lo * 2.0**-fmt.frac}, {hi * 2.0**-fmt.frac}] (input.overflow: error)"
            )
    return np.clip(q, lo, hi).astype(np.int64)


def check_integer_inputs(bundle: Bundle | SpineBundle, xq: np.ndarray) -> np.ndarray:
    bundle = as_bundle(bundle)
    fmt = bundle.manifest.input
    xq = np.asarray(xq)
    if xq.ndim != 3 or xq.shape[-1] != fmt.size:
        raise CodesignError(
            f"integer inputs must have shape (sequences, steps, {fmt.size}); got {tuple(xq.shape)}"
        )
    if xq.dtype.kind not in "iu":
        raise CodesignError(f"integer inputs must have an integer dtype, got {xq.dtype}")
    lo, hi = signed_range(fmt.bits)
    if xq.size and (xq.min() < lo or xq.max() > hi):
        raise CodesignError(f"integer inputs must lie in the {fmt.bits}-bit input format [{lo}, {hi}]")
    if xq.shape[1] < 1:
        raise CodesignError("sequences need at least one step")
    return xq.astype(np.int64)


def stride_frames(xq: np.ndarray, stride: int) -> np.ndarray:
    """Integer inputs ``(N, T, M)`` -> layer 0's steps ``(N, ceil(T / S), M)``: the sum of each
    window of ``S`` frames per channel, shifted right by ``log2 S`` (floor).

    The trailing partial window of a sequence whose length is not a multiple of ``S`` sums the
    frames present (zero frames complete it): the hardware's window ends at ``seq_end`` as well as
    at its ``S``-th frame, and the sequence's last step still holds its last frames, which ``last``
    pooling reads (front-padded series end on their real last frame).
    """
    if stride == 1:
        return xq
    n, steps, m = xq.shape
    windows = -(-steps // stride)
    padded = np.zeros((n, windows * stride, m), dtype=np.int64)
    padded[:, :steps] = xq
    return padded.reshape(n, windows, stride, m).sum(axis=2) >> (stride.bit_length() - 1)


def dcls_front_end(x: np.ndarray, weight: np.ndarray, delay: np.ndarray) -> np.ndarray:
    """``z[:, t, j] = sum_k weight[j, k] * x[:, t - delay[j, k], j]`` (zero before the first step)."""
    n, steps, m = x.shape
    z = np.zeros_like(x)
    for j in range(m):
        for k in range(weight.shape[1]):
            dly = int(delay[j, k])
            if dly < steps:
                z[:, dly:, j] += weight[j, k] * x[:, : steps - dly, j]
    return z


def affine(w: np.ndarray, b: np.ndarray, z: np.ndarray, accumulate: Accumulate) -> np.ndarray:
    """``z @ w.T + b`` for every step ``(N, T, d)``.

    ``events`` computes it the way the hardware does between layers: start from the bias and add
    ``w[:, i] * delta`` for every input i that changed since the previous step. It must equal the
    dense product exactly (tests check both).
    """
    if accumulate == "dense":
        return z @ w.T + b
    delta = np.diff(z, axis=1, prepend=0)
    acc = np.empty(z.shape[:2] + (w.shape[0],), dtype=np.int64)
    running = np.broadcast_to(b, (z.shape[0], w.shape[0])).copy()
    for t in range(z.shape[1]):
        n_idx, i_idx = np.nonzero(delta[:, t])
        np.add.at(running, n_idx, (w[:, i_idx] * delta[n_idx, t, i_idx]).T)
        acc[:, t] = running
    return acc


def selective_gates(table: np.ndarray, steps: int) -> np.ndarray:
    """``(T, d)`` selective-update gates of steps ``0 .. T-1``: row ``t mod period`` of the table."""
    return np.asarray(table, dtype=np.int64)[np.arange(steps) % table.shape[0]] != 0


def run_layer(
    layer: LayerSpec, w: dict[str, np.ndarray], x: np.ndarray, accumulate: Accumulate
) -> LayerTrace:
    """One layer over whole sequences ``x`` (N, T, m) of its integer input."""
    n, steps, _ = x.shape
    d = layer.size
    if layer.dcls is not None:
        # the delay filter is linear and time-invariant: the front end of a layer fed by change
        # events sends the changes of z, and the layer follows them like any event-driven layer
        z = dcls_front_end(x, w["dcls_weight"], w["dcls_delay"])
    else:
        z = x
    nnz = (z != 0).sum(axis=2) if accumulate == "dense" else (np.diff(z, axis=1, prepend=0) != 0).sum(axis=2)
    if layer.selective is None:
        su = np.ones((steps, d), dtype=bool)
        opens = None
    else:
        su = selective_gates(w["su_gate"], steps)
        opens = np.broadcast_to(su.sum(axis=1), (n, steps)).astype(np.int64)
    # a closed neuron needs no sum when the layer recomputes from scratch; kept accumulators
    # follow every input event whatever the gate (they must be right when the neuron opens)
    work_neurons = su.sum(axis=1) if accumulate == "dense" else d
    macs = nnz * work_neurons * MATRICES[layer.cell]
    states = np.empty((n, steps, d), dtype=np.int64)
    gates = np.empty((n, steps, d), dtype=np.int64)
    potentials = None
    h = np.zeros((n, d), dtype=np.int64)
    sb = layer.state_bits
    cell = layer.cell
    if cell in ("cmru", "bmru", "alphacmru"):
        c = affine(w["w_cand"], w["b_cand"], z, accumulate)
        b = affine(w["w_thr"], w["b_thr"], z, accumulate)
        g = np.abs(c) >= np.abs(b)
        s = np.where(c >= 0, 1, -1)
        if cell == "alphacmru":
            a = affine(w["w_alpha"], w["b_alpha"], z, accumulate)
            alpha = saturate(shift_floor(a, w["alpha_shift"]), layer.alpha_bits)
        else:
            alpha = np.broadcast_to(w["alpha"], c.shape)
        for t in range(steps):
            new = saturate(layer.eps * h + s[:, t] * alpha[:, t], sb)
            h = np.where(g[:, t] & su[t], new, h)
            states[:, t] = h
        gates[:] = g
    elif cell == "bgmingru":
        u = saturate(shift_floor(affine(w["w_cand"], w["b_cand"], z, accumulate), w["cand_shift"]), sb)
        g = affine(w["w_gate"], w["b_gate"], z, accumulate) >= 0
        for t in range(steps):
            h = np.where(g[:, t] & su[t], u[:, t], h)
            states[:, t] = h
        gates[:] = g
    elif cell == "mingru":
        one = 1 << layer.gate_bits
        u = saturate(shift_floor(affine(w["w_cand"], w["b_cand"], z, accumulate), w["cand_shift"]), sb)
        zg = np.clip(
            shift_floor(affine(w["w_gate"], w["b_gate"], z, accumulate), w["gate_shift"]) + one // 2, 0, one
        )
        for t in range(steps):
            h = np.where(su[t], h + ((zg[:, t] * (u[:, t] - h)) >> layer.gate_bits), h)
            states[:, t] = h
        gates[:] = zg
    elif cell == "hsru":
        current = shift_floor(affine(w["w_in"], w["b_in"], z, accumulate), w["in_shift"])
        v = np.zeros((n, d), dtype=np.int64)
        potentials = np.empty((n, steps, d), dtype=np.int64)
        for t in range(steps):
            # the trace reports the spike the open rule would give (the RTL unit's gate); a
            # closed neuron keeps V and D
            v_open = saturate(v - (v >> layer.leak_shift) + current[:, t], sb)
            spike = v_open >= w["theta"]
            v = np.where(su[t], v_open, v)
            h = h ^ (spike & su[t]).astype(np.int64)
            potentials[:, t], states[:, t], gates[:, t] = v, h, spike
    else:  # pragma: no cover - the schema admits only the kinds above
        raise CodesignError(f"unknown cell {cell!r}")
    events = (np.diff(states, axis=1, prepend=0) != 0).sum(axis=2)
    return LayerTrace(states, gates, events, macs, potentials, opens, nnz)


def run_golden(
    bundle: Bundle | SpineBundle, xq: np.ndarray, *, accumulate: Accumulate = "events"
) -> GoldenResult:
    """Run integer inputs ``(N, T, M)`` (every sequence starts from state 0) through the network."""
    bundle = as_bundle(bundle)
    xq = check_integer_inputs(bundle, xq)
    m: Manifest = bundle.manifest
    traces = []
    x = stride_frames(xq, m.input.stride)
    for i, layer in enumerate(m.layers):
        prefix = f"layers.{i}."
        w = {k[len(prefix) :]: v for k, v in bundle.weights.items() if k.startswith(prefix)}
        trace = run_layer(layer, w, x, "dense" if i == 0 else accumulate)
        traces.append(trace)
        x = trace.states
    r = m.readout
    wo, bo = bundle.weights["readout.weight"], bundle.weights["readout.bias"]
    h = traces[-1].states
    if r.per_step:
        logits = h @ wo.T + bo
        # event-driven: the logits follow the last layer's change events (W[:, i] * delta)
        readout_macs = (np.diff(h, axis=1, prepend=0) != 0).sum(axis=2) * r.classes
    else:
        if r.pooling == "last":
            pooled = h[:, -1]
        else:
            lo, hi = signed_range(r.sum_bits)
            pooled = np.zeros(h.shape[::2], dtype=np.int64)
            for t in range(h.shape[1]):
                pooled = np.clip(pooled + h[:, t], lo, hi)
        logits = pooled @ wo.T + bo
        readout_macs = (pooled != 0).sum(axis=1) * r.classes
    return GoldenResult(traces, logits, logits.argmax(axis=-1), readout_macs)


def run_golden_ragged(bundle: Bundle | SpineBundle, sequences: list[np.ndarray]) -> list[GoldenResult]:
    """Run sequences of different lengths (one result each), batching equal lengths together."""
    bundle = as_bundle(bundle)
    by_len: dict[int, list[int]] = {}
    for i, s in enumerate(sequences):
        by_len.setdefault(len(s), []).append(i)
    out: list[GoldenResult | None] = [None] * len(sequences)
    for idx in by_len.values():
        res = run_golden(bundle, np.stack([sequences[i] for i in idx]))
        for k, i in enumerate(idx):
            layers = [
                LayerTrace(
                    t.states[k : k + 1],
                    t.gates[k : k + 1],
                    t.events[k : k + 1],
                    t.macs[k : k + 1],
                    None if t.potentials is None else t.potentials[k : k + 1],
                    None if t.opens is None else t.opens[k : k + 1],
                    None if t.items is None else t.items[k : k + 1],
                )
                for t in res.layers
            ]
            out[i] = GoldenResult(
                layers, res.logits[k : k + 1], res.classes[k : k + 1], res.readout_macs[k : k + 1]
            )
    return out  # type: ignore[return-value]
