"""The golden integer model.

Implements ``docs/integer-semantics.md`` with int64 numpy arithmetic and nothing else: no torch,
no floats after the input quantizer. The RTL scoreboard and the torch deployed model are both
checked against this module.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from codesign.bundle import Bundle
from codesign.errors import CodesignError
from codesign.intmath import saturate, signed_range


@dataclass
class GoldenResult:
    """Everything the hardware exposes for one batch of equal-length sequences."""

    states: np.ndarray  # (N, T, d) state after every step
    gates: np.ndarray  # (N, T, d) 1 where the neuron updated
    events: np.ndarray  # (N, T) neurons whose state changed at that step
    logits: np.ndarray  # (N, C)
    classes: np.ndarray  # (N,)
    macs: (
        np.ndarray
    )  # (N, T) multiply-accumulates an event-driven datapath performs (non-zero inputs x d x 2)


def quantize_inputs(bundle: Bundle, x: np.ndarray) -> np.ndarray:
    """Float inputs ``(N, T, M)`` to the integer input format (half-up rounding, then saturate or refuse)."""
    fmt = bundle.manifest.formats.input
    x = np.asarray(x, dtype=np.float64)
    if x.ndim != 3 or x.shape[-1] != bundle.net.input_size:
        raise CodesignError(
            f"inputs must have shape (sequences, steps, {bundle.net.input_size}); got {tuple(x.shape)}"
        )
    if not np.isfinite(x).all():
        n, t, j = np.argwhere(~np.isfinite(x))[0]
        raise CodesignError(f"input is not finite at sequence {n}, step {t}, feature {j}")
    q = np.floor(x * float(2**fmt.frac) + 0.5)
    lo, hi = signed_range(fmt.bits)
    if fmt.overflow == "error":
        bad = np.argwhere((q < lo) | (q > hi))
        if bad.size:
            n, t, j = bad[0]
            raise CodesignError(
                f"input {x[n, t, j]!r} at sequence {n}, step {t}, feature {j} is outside the input format "
                f"[{lo * 2.0**-fmt.frac}, {hi * 2.0**-fmt.frac}] (formats.input.overflow: error)"
            )
    return np.clip(q, lo, hi).astype(np.int64)


def check_integer_inputs(bundle: Bundle, xq: np.ndarray) -> np.ndarray:
    xq = np.asarray(xq)
    if xq.ndim != 3 or xq.shape[-1] != bundle.net.input_size:
        raise CodesignError(
            f"integer inputs must have shape (sequences, steps, {bundle.net.input_size}); got {tuple(xq.shape)}"
        )
    if xq.dtype.kind not in "iu":
        raise CodesignError(f"integer inputs must have an integer dtype, got {xq.dtype}")
    bits = bundle.manifest.formats.input.bits
    lo, hi = signed_range(bits)
    if xq.size and (xq.min() < lo or xq.max() > hi):
        raise CodesignError(f"integer inputs must lie in the {bits}-bit input format [{lo}, {hi}]")
    return xq.astype(np.int64)


def run_golden(bundle: Bundle, xq: np.ndarray) -> GoldenResult:
    """Run integer inputs ``(N, T, M)`` (every sequence starts from state 0) through the network."""
    xq = check_integer_inputs(bundle, xq)
    n, steps, _ = xq.shape
    if steps < 1:
        raise CodesignError("sequences need at least one step")
    w = bundle.weights
    net, fmt = bundle.net, bundle.manifest.formats
    d = net.hidden_size
    eps = net.eps
    h = np.zeros((n, d), dtype=np.int64)
    states = np.empty((n, steps, d), dtype=np.int64)
    gates = np.empty((n, steps, d), dtype=np.int8)
    events = np.empty((n, steps), dtype=np.int64)
    for t in range(steps):
        x = xq[:, t, :]
        c = x @ w["w_cand"].T + w["b_cand"]
        b = x @ w["w_thr"].T + w["b_thr"]
        g = np.abs(c) >= np.abs(b)
        u = np.where(c >= 0, 1, -1) * w["alpha"]
        new = saturate(eps * h + u, fmt.state.bits)
        h_next = np.where(g, new, h)
        events[:, t] = (h_next != h).sum(axis=1)
        states[:, t] = h = h_next
        gates[:, t] = g
    logits = h @ w["w_out"].T + w["b_out"]
    macs = 2 * d * (xq != 0).sum(axis=2)
    return GoldenResult(states, gates, events, logits, logits.argmax(axis=1), macs)


def run_golden_ragged(bundle: Bundle, sequences: Sequence[np.ndarray]) -> list[GoldenResult]:
    """Run sequences of different lengths, grouping equal lengths into one batch."""
    by_len: dict[int, list[int]] = {}
    for i, s in enumerate(sequences):
        by_len.setdefault(len(s), []).append(i)
    out: list[GoldenResult | None] = [None] * len(sequences)
    for _, idx in by_len.items():
        res = run_golden(bundle, np.stack([sequences[i] for i in idx]))
        for k, i in enumerate(idx):
            out[i] = GoldenResult(
                res.states[k : k + 1],
                res.gates[k : k + 1],
                res.events[k : k + 1],
                res.logits[k : k + 1],
                res.classes[k : k + 1],
                res.macs[k : k + 1],
            )
    return out  # type: ignore[return-value]
