"""The golden integer model of a random-feature bank (``codesign/bundle/features.py``).

Written from the rules in the spec's docstring, in plain numpy, independently of the torch model
it checks: ``y_p[t] = sum_i w_k[i] * s_p[t - i*d]`` over the channels of ``mask[p]``, and unit
``j`` of pair ``p`` adds ``alpha[j]`` at every step where ``y_p[t] > threshold[j]``, saturating at
the spec's ``state_bits``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from codesign.bundle.features import KERNEL_POSITIONS, KERNEL_TAPS, FeatureSpec
from codesign.bundle.io import FeatureBundle
from codesign.errors import CodesignError
from codesign.golden.model import check_integer_inputs
from codesign.intmath import signed_range


def _shifted(s: np.ndarray, delay: int) -> np.ndarray:
    """``s[:, t - delay]`` with zeros before the first step."""
    out = np.zeros_like(s)
    if delay < s.shape[1]:
        out[:, delay:] = s[:, : s.shape[1] - delay]
    return out


def pair_outputs(spec: FeatureSpec, mask: np.ndarray, xq: np.ndarray, pairs: np.ndarray) -> np.ndarray:
    """``y_p`` ``(N, T, len(pairs))`` of the given pairs for integer inputs ``(N, T, channels)``."""
    dil, ker = spec.pair_dilation(), spec.pair_kernel()
    out = np.empty(xq.shape[:2] + (len(pairs),), dtype=np.int64)
    sums: dict[tuple[bytes, int], tuple[list[np.ndarray], np.ndarray]] = {}
    for col, p in enumerate(pairs):
        key = (mask[p].tobytes(), int(dil[p]))
        if key not in sums:
            s = xq @ mask[p].astype(np.int64)
            taps = [_shifted(s, i * int(dil[p])) for i in range(KERNEL_TAPS)]
            sums[key] = (taps, sum(taps))
        taps, total = sums[key]
        a, b, c = KERNEL_POSITIONS[int(ker[p])]
        out[:, :, col] = 3 * (taps[a] + taps[b] + taps[c]) - total
    return out


def feature_counts(spec: FeatureSpec, weights: dict[str, np.ndarray], xq: np.ndarray) -> np.ndarray:
    """The units' last states ``(N, size)`` for integer inputs ``(N, T, channels)`` (equal lengths)."""
    xq = np.asarray(xq)
    if xq.ndim != 3 or xq.shape[-1] != spec.channels:
        raise CodesignError(
            f"integer inputs must have shape (sequences, steps, {spec.channels}); got {xq.shape}"
        )
    xq = xq.astype(np.int64)
    mask = np.asarray(weights["features.mask"], dtype=np.int64)
    thr = np.asarray(weights["features.threshold"], dtype=np.int64).reshape(spec.pairs, spec.biases)
    alpha = np.asarray(weights["features.alpha"], dtype=np.int64).reshape(spec.pairs, spec.biases)
    _, hi = signed_range(spec.state_bits)
    counts = np.empty((xq.shape[0], spec.pairs, spec.biases), dtype=np.int64)
    chunk = 64
    for start in range(0, spec.pairs, chunk):
        pairs = np.arange(start, min(start + chunk, spec.pairs))
        y = pair_outputs(spec, mask, xq, pairs)  # (N, T, P)
        above = (y[:, :, :, None] > thr[pairs][None, None]).sum(axis=1)  # (N, P, B)
        counts[:, pairs] = above * alpha[pairs][None]
    # the increments are never negative, so saturating at every step is saturating once at the end
    return np.minimum(counts.reshape(xq.shape[0], spec.size), hi)


def feature_counts_ragged(
    spec: FeatureSpec, weights: dict[str, np.ndarray], sequences: list[np.ndarray]
) -> np.ndarray:
    """:func:`feature_counts` of sequences of different lengths (each starts at its own step 0)."""
    out = np.empty((len(sequences), spec.size), dtype=np.int64)
    by_len: dict[int, list[int]] = {}
    for i, s in enumerate(sequences):
        by_len.setdefault(len(s), []).append(i)
    for idx in by_len.values():
        out[idx] = feature_counts(spec, weights, np.stack([sequences[i] for i in idx]))
    return out


@dataclass(frozen=True)
class FeatureResult:
    """What a random-feature network computes for a batch: counts, logits, classes."""

    counts: np.ndarray
    """The units' last states ``(N, size)``: what the readout reads."""
    logits: np.ndarray
    classes: np.ndarray


def readout(bundle: FeatureBundle, counts: np.ndarray) -> FeatureResult:
    logits = counts @ bundle.weights["readout.weight"].T + bundle.weights["readout.bias"]
    return FeatureResult(counts, logits, logits.argmax(axis=-1))


def run_features(bundle: FeatureBundle, xq: np.ndarray) -> FeatureResult:
    """A random-feature network over integer inputs ``(N, T, channels)`` of equal length."""
    xq = check_integer_inputs(bundle, xq)  # the input format's rules, as for a recurrent bundle
    return readout(bundle, feature_counts(bundle.manifest.features, bundle.weights, xq))


def run_features_ragged(bundle: FeatureBundle, sequences: list[np.ndarray]) -> FeatureResult:
    """:func:`run_features` over sequences of different lengths ``(T_i, channels)``."""
    checked = [check_integer_inputs(bundle, np.asarray(s)[None])[0] for s in sequences]
    return readout(bundle, feature_counts_ragged(bundle.manifest.features, bundle.weights, checked))
