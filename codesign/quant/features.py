"""Fit a random-feature bank and its readout, in closed form, straight onto integer grids.

Nothing here trains by gradient: the kernels come from their index, the dilations from the series
length, the channel subsets and thresholds from a seed and the training data, and the readout is
ridge regression with its regularisation chosen by leave-one-out cross-validation
(scikit-learn's ``RidgeClassifierCV``). The features the readout is fitted on are the golden
model's own integer counts, so the deployed features are the fitted ones by construction.

Quantising the readout is the design problem: a naive 8-bit readout over hundreds of features
rounds most weights to zero on some sets, because a few columns (units of tiny spread, which the
standardisation magnifies) take the grid's whole range. Here each unit's increment carries its
column's magnitude, ``alpha[j] ~ max_c |coef[c, j]| / std_j`` on ``alpha_bits`` (``fold_alpha``),
so every readout column ``coef[:, j] / (std_j * alpha[j])`` peaks near the same value and one
8-bit grid resolves them all (PickupGestureWiimoteZ, 672 units: 76 % naive, 94 % folded, the
float ridge 94 %).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np

from codesign.bundle.features import FeatureManifest, FeatureReadout, FeatureSpec
from codesign.bundle.io import FeatureBundle, check_feature_weights
from codesign.bundle.spec import FORMAT_VERSION, InputSpec
from codesign.errors import CodesignError
from codesign.golden.features import feature_counts_ragged, pair_outputs
from codesign.intmath import bits_for_magnitude, signed_range

GOLDEN_RATIO = (np.sqrt(5.0) - 1.0) / 2.0
RIDGE_ALPHAS = np.logspace(-3, 3, 10)


def dilations_for(length: int, count: int) -> list[int]:
    """Up to ``count`` exponentially spaced dilations whose kernels fit in ``length`` steps."""
    top = max(np.log2(max(length - 1, 1) / 8.0), 0.0)
    return sorted({int(d) for d in np.floor(2.0 ** np.linspace(0.0, top, count))})


def draw_masks(pairs: int, channels: int, rng: np.random.Generator) -> np.ndarray:
    """Channel subsets ``(pairs, channels)``: MiniRocket's 2**U(0, log2(min(m, 9) + 1)) channels each."""
    mask = np.zeros((pairs, channels), dtype=np.int64)
    top = np.log2(min(channels, 9) + 1)
    for p in range(pairs):
        k = min(channels, int(2 ** rng.uniform(0, top)))
        mask[p, rng.choice(channels, size=k, replace=False)] = 1
    return mask


def draw_thresholds(
    spec: FeatureSpec, mask: np.ndarray, train: list[np.ndarray], rng: np.random.Generator
) -> np.ndarray:
    """Thresholds ``(size,)``: quantiles (a low-discrepancy sequence) of each pair's output on one
    random training series, floored to integers (a unit counts ``y > threshold``)."""
    thr = np.empty((spec.pairs, spec.biases), dtype=np.int64)
    j = np.arange(spec.size, dtype=np.float64).reshape(spec.pairs, spec.biases)
    quantiles = ((j + 1) * GOLDEN_RATIO) % 1.0
    for p in range(spec.pairs):
        series = train[int(rng.integers(len(train)))]
        y = pair_outputs(spec, mask, series[None], np.array([p]))[0, :, 0]
        thr[p] = np.floor(np.quantile(y, quantiles[p]))
    return thr.reshape(-1)


@dataclass(frozen=True)
class FittedBank:
    """A feature bank with its integer readout, and the float ridge it came from."""

    spec: FeatureSpec
    weights: dict[str, np.ndarray]
    """``features.*`` and ``readout.weight`` / ``readout.bias`` (integers)."""
    ridge_alpha: float
    float_coef: np.ndarray
    float_intercept: np.ndarray
    mean: np.ndarray
    scale: np.ndarray

    def counts(self, sequences: list[np.ndarray]) -> np.ndarray:
        return feature_counts_ragged(self.spec, self.weights, sequences)

    def float_logits(self, sequences: list[np.ndarray]) -> np.ndarray:
        """The ridge's logits on standardised counts (before the readout is quantised)."""
        ones = dict(self.weights, **{"features.alpha": np.ones(self.spec.size, dtype=np.int64)})
        z = (feature_counts_ragged(self.spec, ones, sequences) - self.mean) / self.scale
        return z @ self.float_coef.T + self.float_intercept

    def logits(self, sequences: list[np.ndarray]) -> np.ndarray:
        """The integer logits: what the golden model and the hardware compute."""
        return self.counts(sequences) @ self.weights["readout.weight"].T + self.weights["readout.bias"]


def quantize_readout(
    coef: np.ndarray,
    intercept: np.ndarray,
    mean: np.ndarray,
    scale: np.ndarray,
    weight_bits: int,
    bias_bits: int,
) -> tuple[np.ndarray, np.ndarray]:
    """Fold ``(h - mean) / scale`` into the ridge and put it on one signed grid.

    ``h`` is the scaled count ``alpha * count``. The weights ``coef / scale`` share one power-of-two
    scale (the argmax of the logits is unchanged by any positive scale); the bias carries the
    folded means on the same scale, saturating at ``bias_bits``.
    """
    w = coef / scale[None]
    b = intercept - w @ mean
    peak = float(np.abs(w).max())
    if peak == 0:
        return np.zeros(w.shape, dtype=np.int64), np.zeros(b.shape, dtype=np.int64)
    _, whi = signed_range(weight_bits)
    shift = int(np.floor(np.log2(whi / peak)))
    wq = np.clip(np.rint(w * 2.0**shift), -whi - 1, whi).astype(np.int64)
    blo, bhi = signed_range(bias_bits)
    bq = np.clip(np.rint(b * 2.0**shift), blo, bhi).astype(np.int64)
    return wq, bq


def _class_rows(ridge, classes: int) -> tuple[np.ndarray, np.ndarray]:
    """The ridge's decision functions as one row per class ``0 .. classes - 1`` (a class absent
    from the training data gets a row that never wins)."""
    coef = np.atleast_2d(ridge.coef_)
    intercept = np.atleast_1d(ridge.intercept_)
    if coef.shape[0] == 1:  # two classes, one decision function: logits (-f, f)
        coef, intercept = np.vstack([-coef, coef]) / 2, np.array([-intercept[0], intercept[0]]) / 2
    rows = np.zeros((classes, coef.shape[1]))
    bias = np.full(classes, -1e6)
    for i, c in enumerate(np.asarray(ridge.classes_, dtype=np.int64)):
        rows[c], bias[c] = coef[i], intercept[i]
    return rows, bias


def fold_alpha(coef: np.ndarray, std: np.ndarray, alpha_bits: int) -> np.ndarray:
    """Increments that carry each unit's weight magnitude: ``alpha_j ~ max_c |coef_cj| / std_j``.

    The readout's column ``j`` is then ``coef_cj / (std_j * alpha_j)``, about the same peak for
    every unit, so one 8-bit grid resolves every column instead of the few largest.
    """
    top = (1 << alpha_bits) - 1
    alive = std > 0
    need = np.where(alive, np.abs(coef).max(axis=0) / np.where(alive, std, 1.0), 0.0)
    if not (need > 0).any():
        return np.zeros(std.shape, dtype=np.int64)
    alpha = np.where(need > 0, np.clip(np.rint(top * need / need.max()), 1, top), 0)
    return alpha.astype(np.int64)


def fit_bank(
    train: list[np.ndarray],
    labels: np.ndarray,
    *,
    classes: int,
    features: int = 840,
    seed: int = 0,
    input_bits: int = 8,
    alpha_bits: int = 8,
    weight_bits: int = 8,
    bias_bits: int = 32,
    increments: Literal["columns", "ones"] = "columns",
) -> FittedBank:
    """Fit a bank of about ``features`` units on integer training series ``(T_i, channels)``.

    ``increments``: ``columns`` carries each readout column's magnitude in the unit's increment
    (:func:`fold_alpha`); ``ones`` counts by 1 and folds the standardisation into the weights
    alone (the naive readout, kept for the comparison in ``docs/features.md``).
    """
    from sklearn.linear_model import RidgeClassifierCV

    if not train:
        raise CodesignError("random features need at least one training series")
    channels = train[0].shape[1]
    length = int(np.median([len(s) for s in train]))
    rng = np.random.default_rng(seed)
    dilations = dilations_for(length, max(1, min(32, features // 84)))
    biases = max(1, int(round(features / (84 * len(dilations)))))
    longest = max(len(s) for s in train)
    # counts up to twice the longest training series at the largest increment never saturate
    state_bits = min(32, bits_for_magnitude(2 * longest * ((1 << alpha_bits) - 1)))
    spec = FeatureSpec(
        channels=channels, dilations=dilations, biases=biases, alpha_bits=alpha_bits, state_bits=state_bits
    )
    mask = draw_masks(spec.pairs, channels, rng)
    thr = draw_thresholds(spec, mask, train, rng)
    ones = {"features.mask": mask, "features.threshold": thr, "features.alpha": np.ones(spec.size, np.int64)}
    counts = feature_counts_ragged(spec, ones, train).astype(np.float64)
    mean, std = counts.mean(axis=0), counts.std(axis=0)
    scale = np.where(std > 0, std, 1.0)
    ridge = RidgeClassifierCV(alphas=RIDGE_ALPHAS).fit((counts - mean) / scale, labels)
    coef, intercept = _class_rows(ridge, classes)
    alpha = fold_alpha(coef, std, alpha_bits) if increments == "columns" else (std > 0).astype(np.int64)
    # h = alpha * count: the standardisation of h is that of the count, scaled by alpha
    wq, bq = quantize_readout(
        coef, intercept, alpha * mean, np.maximum(alpha, 1) * scale, weight_bits, bias_bits
    )
    weights = {
        "features.mask": mask,
        "features.threshold": thr,
        "features.alpha": alpha,
        "readout.weight": wq,
        "readout.bias": bq,
    }
    return FittedBank(spec, weights, float(ridge.alpha_), coef, intercept, mean, scale)


def input_format(train: list[np.ndarray], bits: int = 8, quantile: float = 0.999) -> InputSpec:
    """The input grid of float training series: the fraction that puts the ``quantile`` of ``|x|``
    just inside ``bits`` signed bits (larger values saturate)."""
    peak = float(np.quantile(np.abs(np.concatenate([np.asarray(s).ravel() for s in train])), quantile))
    _, hi = signed_range(bits)
    frac = int(np.clip(np.floor(np.log2(hi / peak)) if peak > 0 else 16, -16, 16))
    return InputSpec(size=train[0].shape[1], bits=bits, frac=frac)


def quantize_series(fmt: InputSpec, series: list[np.ndarray]) -> list[np.ndarray]:
    """Float series to the input grid: half-up rounding, then saturation (the golden rule)."""
    lo, hi = signed_range(fmt.bits)
    return [
        np.clip(np.floor(np.asarray(s, dtype=np.float64) * 2.0**fmt.frac + 0.5), lo, hi).astype(np.int64)
        for s in series
    ]


def fit_feature_bundle(
    train: list[np.ndarray],
    labels: np.ndarray,
    *,
    classes: list[str],
    name: str,
    features: int = 840,
    seed: int = 0,
    weight_bits: int = 8,
    provenance: dict | None = None,
) -> tuple[FeatureBundle, FittedBank]:
    """A random-feature bundle (in memory) fitted on float series ``(T_i, channels)``.

    The input grid comes from the training series; ``labels`` index ``classes``.
    """
    fmt = input_format(train)
    bank = fit_bank(
        quantize_series(fmt, train),
        np.asarray(labels),
        classes=len(classes),
        features=features,
        seed=seed,
        input_bits=fmt.bits,
        weight_bits=weight_bits,
    )
    manifest = FeatureManifest(
        format_version=FORMAT_VERSION,
        kind="features",
        name=name,
        input=fmt,
        features=bank.spec,
        readout=FeatureReadout(classes=len(classes), weight_bits=weight_bits),
        provenance={
            "labels": list(classes),
            "seed": seed,
            "ridge_alpha": bank.ridge_alpha,
            **(provenance or {}),
        },
    )
    weights = check_feature_weights(manifest, bank.weights)
    return FeatureBundle(manifest, weights), bank
