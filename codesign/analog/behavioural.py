"""A step-level behavioural model of the analog BMRU layer, for Monte Carlo over the whole test set.

SPICE runs one test sequence in minutes; a mismatch study wants every test sequence under 20 or
more chips. This model keeps what decides a BMRU neuron's state (the Schmitt trigger on the
candidate current, the complementary pair's 0 start) and replaces the transistors by the
statistics measured on them in ngspice:

* every core (cell ``a`` and cell ``b`` of a pair have their own copies) gets a gain error of its
  input mirror ``e_in`` and of its two threshold sources ``e_up``, ``e_down``;
* the cell sets when ``I_in (1 + e_in) > I_up (1 + e_up)`` and resets when
  ``I_in (1 + e_in) < I_down (1 + e_down)``, with ``I_in``, ``I_up``, ``I_down`` the mapped
  currents of :mod:`codesign.analog.mapping` (the thresholds' targets);
* the errors are Gaussian, ``e_in`` common to both thresholds as seen from the input: the
  thresholds measured in SPICE Monte Carlo, referred to the input, are
  ``I_th (1 + e_th) / (1 + e_in)``; their relative spreads ``sigma_up``, ``sigma_down`` and
  correlation ``rho`` give ``sigma_in^2 = rho sigma_up sigma_down`` and the rest to the sources
  (:meth:`Mismatch.from_threshold_stats`).

Settling and near-tie dynamics are not modelled (a decision is instantaneous); with zero mismatch
the model is the integer model exactly, which is what the tests check, and the SPICE runs with
mismatch on check the spread it predicts.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from codesign.analog.mapping import AnyBundle, NeuronMap, accumulators

__all__ = ["Mismatch", "behavioural_states", "draw_errors", "golden_signs"]


def golden_signs(bundle: AnyBundle, xq: np.ndarray) -> np.ndarray:
    """The stored sign of every golden state ``(N, T, d)``: +1 / -1 after a neuron's first update
    (``h = alpha s``, so the sign of ``h`` times the sign of ``alpha``), 0 before it."""
    from codesign.analog.mapping import golden_bits

    q, _ = golden_bits(bundle, xq)
    return np.where(q == 1, 1, np.where(q == 0, -1, 0)).astype(np.int8)


@dataclass(frozen=True)
class Mismatch:
    """Relative (1 sigma) gain errors of a core's input mirror and threshold sources."""

    sigma_in: float = 0.0
    sigma_up: float = 0.0
    sigma_down: float = 0.0
    sigma_neuron: float = 0.0
    """Relative error of each neuron's own threshold DAC (its up and down bias diodes, one error
    each), common to both cores of a pair: the term the per-core errors leave out. 0 in the
    cell-level statistics; fitted to the ngspice Monte Carlo draws of a whole layer
    (:func:`codesign.analog.mismatch.fit_neuron_sigma`)."""

    @classmethod
    def from_threshold_stats(cls, sigma_up: float, sigma_down: float, rho: float) -> Mismatch:
        """From the thresholds' relative spreads and their correlation (SPICE Monte Carlo)."""
        if not (sigma_up >= 0 and sigma_down >= 0 and -1.0 <= rho <= 1.0):
            raise ValueError(f"bad threshold statistics: sigma {sigma_up}, {sigma_down}, rho {rho}")
        common = max(rho, 0.0) * sigma_up * sigma_down
        s_in = math.sqrt(common)
        return cls(
            s_in,
            math.sqrt(max(sigma_up**2 - common, 0.0)),
            math.sqrt(max(sigma_down**2 - common, 0.0)),
        )

    def scaled(self, factor: float) -> Mismatch:
        return Mismatch(
            self.sigma_in * factor,
            self.sigma_up * factor,
            self.sigma_down * factor,
            self.sigma_neuron * factor,
        )

    def with_neuron(self, sigma_neuron: float) -> Mismatch:
        """The same per-core errors with a neuron-common threshold error of ``sigma_neuron``."""
        return Mismatch(self.sigma_in, self.sigma_up, self.sigma_down, sigma_neuron)


def draw_errors(mm: Mismatch, d: int, seed: int, cores: int = 2) -> np.ndarray:
    """Gain errors ``(cores, 3, d)``: [input, up, down] of every core of every neuron, for chip ``seed``
    (with ``sigma_neuron``, each neuron's up and down errors also carry one term common to its cores)."""
    rng = np.random.default_rng(seed)
    sig = np.array([mm.sigma_in, mm.sigma_up, mm.sigma_down])[None, :, None]
    err = rng.standard_normal((cores, 3, d)) * sig  # drawn first: draws without the common term stay
    if mm.sigma_neuron:
        err[:, 1:] += rng.standard_normal((1, 2, d)) * mm.sigma_neuron  # up, down: shared by the cores
    return err


def behavioural_states(
    bundle: AnyBundle,
    xq: np.ndarray,
    maps: list[NeuronMap],
    errors: np.ndarray | None = None,
    *,
    pair: bool = True,
) -> np.ndarray:
    """Sign of every neuron's state ``(N, T, d)`` in {-1, 0, +1} (0: a pair not yet updated).

    ``errors`` from :func:`draw_errors` (``None``: no mismatch). ``pair=False``: one cell per
    neuron starting low (-1).
    """
    c, b = accumulators(bundle, xq)
    return pair_signs(c, b, maps, errors, pair=pair)


def pair_signs(
    c: np.ndarray,
    b: np.ndarray,
    maps: list[NeuronMap],
    errors: np.ndarray | None = None,
    *,
    pair: bool = True,
) -> np.ndarray:
    """:func:`behavioural_states` from given accumulators ``c``, ``b`` ``(N, T, d)``: the cells
    driven by sums that are not the integer ones (the synapse arrays' simulated sums)."""
    n, t, d = c.shape
    cores = 2 if pair else 1
    err = np.zeros((cores, 3, d)) if errors is None else np.asarray(errors)[:cores]
    i_in = np.stack([m.input_current(c[..., i], b[..., i]) for i, m in enumerate(maps)], axis=-1)
    lo = np.empty_like(i_in)
    hi = np.empty_like(i_in)
    for i, m in enumerate(maps):
        lo[..., i], hi[..., i] = m.threshold_targets(b[..., i])
    q = np.zeros((cores, n, d), dtype=np.int8)
    if pair:
        q[1] = 1
    out = np.zeros((n, t, d), dtype=np.int8)
    for k in range(t):
        for j in range(cores):
            x = i_in[:, k] * (1 + err[j, 0])
            up = hi[:, k] * (1 + err[j, 1])
            dn = lo[:, k] * (1 + err[j, 2])
            q[j] = np.where(x > up, 1, np.where(x < dn, 0, q[j]))
        out[:, k] = (q[0] + q[1] - 1) if pair else (2 * q[0] - 1)
    return out


SKY130_TT = Mismatch.from_threshold_stats(0.05344, 0.05581, 0.844)
"""The BMRU cell's thresholds under sky130 mismatch (``codesign analog-check``, 20 Monte Carlo
seeds at tt, 4/8 um current sources: up 0.356 nA sigma 5.34 %, down 0.153 nA sigma 5.58 %,
correlation 0.844; ``analog/report/robustness.csv``): an input-mirror error of 5.0 % and source
errors of 1.8 / 2.4 %."""
