"""Map a bundle's integer neurons to the unipolar bias and input currents of the analog cells.

The rules (also in ``docs/analog.md``):

* The gate of neuron ``i`` compares ``|c|`` with ``|b|`` (candidate and threshold accumulators,
  ``docs/integer-semantics.md``). For integers that is a Schmitt trigger on ``c``: the state goes
  high (``s = +1``) when ``c >= |b|``, low when ``c <= -|b|`` (with ``b = 0``: when ``c < 0``), and
  is retained in between. A positive per-neuron scale does not change the gate, so each neuron
  gets its own current scale ``k_i`` (nA per accumulator unit).
* Candidate -> input current (first quadrant): ``I_in = I_c0 + k_i * clip(c, -(2B_i - 1), 2B_i - 1)``
  with the window centre ``I_c0`` (0.25 nA, the retain level of CMRU Fig. 4C). The clip never
  changes a decision because every ``|b| <= B_i`` and ``2B_i - 1 >= B_i``; it keeps ``I_in`` inside
  ``[I_c0 - 2H, I_c0 + 2H]`` = [0.05, 0.45] nA, the paper's reset and set levels.
* Threshold -> two bias currents, placed half an integer step inside the integer decision
  boundaries so that ties ``|c| == |b|`` resolve like the golden model (update), with a margin of
  ``k_i / 2`` on both sides:

  ``I_up = I_c0 + k_i (|b| - 1/2)`` and ``I_down = I_c0 - k_i (|b| - 1/2)`` for ``|b| >= 1``;
  ``I_up = I_down = I_c0 - k_i / 2`` for ``b = 0`` (no hysteresis: every step updates, ``c = 0`` goes high).

  A fixed-threshold cell takes ``I_DOWN`` and ``I_UP - I_DOWN`` (the hysteresis width) as bias
  currents; a per-step cell is driven with ``I_DOWN`` and ``I_UP`` (both >= ``I_c0 - H`` = 0.15 nA,
  so they settle fast) and forms the width inside.
* Trim: the cell's thresholds come out about 1.2 % above their bias currents (tt), so the
  threshold bias currents are the targets divided by ``THRESHOLD_TRIM`` = 1.012.
* Scale: ``B_i`` is the largest ``|b|`` the neuron meets (``|b_thr[i]|`` when its threshold weights
  are all zero, i.e. a *fixed* threshold; otherwise the largest ``|b|`` over calibration inputs, or
  without them the worst case ``sum_j |w_thr[i, j]| 2^(input.bits-1) + |b_thr[i]|``), floored at 1,
  and ``k_i = H / (B_i - 1/2)`` so the widest window is ``I_c0 +- H`` (H = 0.1 nA: 0.15 / 0.35 nA).
* Fixed thresholds (``w_thr[i] == 0``): ``I_DOWN`` and ``I_UP - I_DOWN`` are constant bias currents,
  exactly the published chip's mode. Input-dependent thresholds: both are driven every step by a
  threshold DAC, like the candidate current.
* Output: the cell stores the sign bit ``q = (s == +1)`` and outputs ``I_out = q * I_alpha,i`` with
  ``I_alpha,i = A * |alpha_i| / max_j |alpha_j|`` (A = 0.5 nA). The signed state is
  ``h_i = alpha_i (2 q - 1) = (2 alpha_i / I_alpha,i) I_out - alpha_i``: a readout folds the offset
  ``-alpha_i`` into its bias. The golden state 0 before a neuron's first update has no analog
  counterpart; those steps are not compared.
* Native CMRU (eps = 1) ladders use the same input and threshold currents for their first stage;
  their state unit is fixed (``I_alpha`` = A for every neuron, ``|alpha_i|`` goes into the readout
  gain) and the ladder state ``n`` (stages on) means ``h = (n - n0) alpha_i`` with ``n0`` the
  stages on at reset. eps = -1 has no analog primitive and is refused.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from codesign.bundle import Bundle, SpineBundle, spine_view
from codesign.errors import CodesignError

AnyBundle = Bundle | SpineBundle
"""A bundle (format 2) or its single-layer view; the analog path works on the view."""


def spine(bundle: AnyBundle) -> SpineBundle:
    """The one-layer CMRU/BMRU view of a bundle (a clear error for networks the analog path cannot map)."""
    return spine_view(bundle, consumer="the analog path (codesign analog)")


NA = 1e-9

I_CENTRE = 0.25 * NA
"""Window centre = retain level (CMRU Fig. 4C)."""
HALF_WINDOW = 0.10 * NA
"""Half width of the widest window: thresholds 0.15 / 0.35 nA around 0.25 nA."""
ALPHA_MAX = 0.50 * NA
"""Output current of the neuron with the largest |alpha| (CMRU Fig. 4C: alpha = 0.5 nA)."""
THRESHOLD_TRIM = 1.012
"""Systematic gain of the cell's thresholds over their bias currents (tt, 0.15-0.35 nA: +0.6 to +1.5 %,
from the hysteresis sweeps; the pFET sources see a larger drain voltage than their diodes). The
threshold bias currents are the target thresholds divided by it."""


LADDER_SHIFT_GAIN = 0.9832
"""The neighbour's DPI level a native CMRU stage >= 2 sees, over ``I_alpha`` (tt): measured with
:func:`codesign.analog.checks.measure_ladder_thresholds`. With 1.0 (the DPI's own gain at 0.5 nA
into an ideal load is 0.9986) stage 2's thresholds sat 9.6 / 7.1 pA above stage 1's (up / down):
the DPI's input is the stage's pFET tap and its output drives the next stage's diode, each about
1 % short. JapaneseVowels CMRU sequence 0 missed sets 9.8-12.5 pA above the up threshold with it.
At 0.9832 stage 2 is within 0.8 / 1.5 pA of stage 1."""


LADDER_SHIFT_GAINS_N = (0.9915, 0.976)
""":data:`LADDER_SHIFT_GAIN` for ladders whose DPIs are the kappa-matched ``dpi_n``
(:data:`codesign.analog.cells.DPI_N`), one per threshold (down, up): at gain 1 its stage 2 sat
4.3 / 12.0 pA above stage 1 (down / up, :func:`codesign.analog.checks.measure_ladder_thresholds`),
so the neighbour's ``dpi_n`` delivers 0.9915 / 0.976 of ``I_alpha`` there (the up threshold is
met while stage 2's own tap is still off, the down one while it is on)."""

LADDER_SHIFT_GAINS = {"p": (LADDER_SHIFT_GAIN, LADDER_SHIFT_GAIN), "n": LADDER_SHIFT_GAINS_N}
"""The calibrated window-shift gains (down, up) of each DPI kind (:attr:`codesign.analog.cells.DpiParams.kind`)."""


def ladder_shift(i_alpha: float, dpi_kind: str = "p", side: str = "mean") -> float:
    gains = LADDER_SHIFT_GAINS[dpi_kind]
    g = {"down": gains[0], "up": gains[1], "mean": (gains[0] + gains[1]) / 2}[side]
    return i_alpha * g / THRESHOLD_TRIM


@dataclass(frozen=True)
class NeuronMap:
    """Bias and scale of one neuron (currents in A)."""

    index: int
    fixed_threshold: bool
    b_max: int  # B_i
    k: float  # A per accumulator unit
    i_alpha: float
    alpha: int  # the bundle's alpha (signed, state units)
    i_centre: float = I_CENTRE
    i_down: float | None = None  # constant thresholds (fixed-threshold neurons only)
    i_up: float | None = None
    normalised: bool = False
    """Per-step window normalisation (per-step neurons only): every step gets its own scale
    ``k_t = H / (max(|b_t|, 1) - 1/2)``, so the thresholds always sit at the widest window
    ``I_c0 -+ H`` and the candidate carries ``c_t / |b_t|``. The gate ``|c| >= |b|`` is unchanged
    (both sides are scaled by the same positive number); the margins grow from ``k (||c| - |b||)``
    with the neuron's one scale ``k = H / (B_i - 1/2)`` to ``H ||c| - |b|| / |b|``."""

    @property
    def clip(self) -> int:
        return 2 * self.b_max - 1

    @property
    def low_level(self) -> float:
        """The lowest candidate current (``c`` at the lower clip): ``I_c0 - 2H`` in both scale modes."""
        return self.i_centre - (2 * HALF_WINDOW if self.normalised else self.k * self.clip)

    @property
    def high_level(self) -> float:
        return self.i_centre + (2 * HALF_WINDOW if self.normalised else self.k * self.clip)

    def step_scale(self, b: np.ndarray | None) -> tuple[np.ndarray | float, np.ndarray | int]:
        """``(k_t, clip_t)`` of every step: the neuron's own ``(k, 2 B - 1)`` unless normalised."""
        if not self.normalised:
            return self.k, self.clip
        if b is None:
            raise ValueError(
                f"neuron {self.index} is normalised per step: its currents need the accumulators b"
            )
        mag = np.maximum(np.abs(np.asarray(b, dtype=np.float64)), 1.0)
        return HALF_WINDOW / (mag - 0.5), 2 * mag - 1

    def input_current(self, c: np.ndarray, b: np.ndarray | None = None) -> np.ndarray:
        """Candidate current for accumulators ``c`` (and ``b``, which a normalised neuron needs)."""
        k, clip = self.step_scale(b)
        c = np.clip(np.asarray(c, dtype=np.float64), -clip, clip)
        return self.i_centre + k * c

    def threshold_targets(self, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Target thresholds ``(down, up)`` in A, on the input-current axis, for accumulators ``b``."""
        mag = np.abs(np.asarray(b, dtype=np.float64))
        k, _ = self.step_scale(b)
        half = np.where(mag >= 1, mag - 0.5, 0.0)
        centre = np.where(mag >= 1, self.i_centre, self.i_centre - k / 2)
        return centre - k * half, centre + k * half

    def threshold_currents(self, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Bias currents ``(I_DOWN, I_UP)`` that realise the targets (divided by :data:`THRESHOLD_TRIM`)."""
        lo, hi = self.threshold_targets(b)
        return lo / THRESHOLD_TRIM, hi / THRESHOLD_TRIM

    def row(self) -> dict[str, object]:
        return {
            "neuron": self.index,
            "thresholds": "fixed" if self.fixed_threshold else "per-step",
            "B": self.b_max,
            "k_nA_per_unit": self.k / NA,
            "I_centre_nA": self.i_centre / NA,
            "I_down_nA": None if self.i_down is None else self.i_down / NA,
            "I_up_nA": None if self.i_up is None else self.i_up / NA,
            "alpha": self.alpha,
            "I_alpha_nA": self.i_alpha / NA,
        }


def accumulators(bundle: AnyBundle, xq: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Candidate and threshold accumulators ``c, b`` of shape ``(N, T, d)`` (the golden formulas)."""
    bundle = spine(bundle)
    xq = np.asarray(xq, dtype=np.int64)
    w = bundle.weights
    c = xq @ w["w_cand"].T + w["b_cand"]
    b = xq @ w["w_thr"].T + w["b_thr"]
    return c, b


def worst_case_b(bundle: AnyBundle) -> np.ndarray:
    bundle = spine(bundle)
    fmt = bundle.manifest.formats
    x_max = 1 << (fmt.input.bits - 1)
    return np.abs(bundle.weights["w_thr"]).sum(axis=1) * x_max + np.abs(bundle.weights["b_thr"])


def check_mappable(bundle: AnyBundle) -> None:
    bundle = spine(bundle)
    if bundle.net.eps == -1:
        raise CodesignError(
            "eps -1 has no analog primitive (the state would have to be negated on every update); "
            "the analog path maps bmru/eps 0 (Schmitt-trigger cells) and cmru eps 1 (native CMRU ladders)"
        )


def map_bundle(
    bundle: AnyBundle, calibration: np.ndarray | None = None, *, normalise: bool = False
) -> list[NeuronMap]:
    """One :class:`NeuronMap` per neuron; ``calibration`` are integer inputs ``(N, T, M)`` giving ``B_i``.

    ``normalise``: per-step neurons get the per-step window normalisation of
    :attr:`NeuronMap.normalised` (fixed-threshold neurons already have ``B_i = |b|``).
    """
    bundle = spine(bundle)
    check_mappable(bundle)
    w = bundle.weights
    d = bundle.net.hidden_size
    fixed = ~np.any(w["w_thr"] != 0, axis=1)
    if calibration is not None:
        _, b = accumulators(bundle, calibration)
        b_obs = np.abs(b).reshape(-1, d).max(axis=0)
    else:
        b_obs = worst_case_b(bundle)
    alpha = w["alpha"]
    a_max = int(np.abs(alpha).max()) if alpha.size else 0
    native = bundle.net.eps == 1
    maps = []
    for i in range(d):
        bb = abs(int(w["b_thr"][i]))
        b_max = max(bb if fixed[i] else int(b_obs[i]), bb, 1)
        k = HALF_WINDOW / (b_max - 0.5)
        if native:
            i_alpha = ALPHA_MAX
        else:
            i_alpha = ALPHA_MAX * abs(int(alpha[i])) / a_max if a_max else 0.0
        nm = NeuronMap(
            i, bool(fixed[i]), b_max, k, i_alpha, int(alpha[i]), normalised=normalise and not fixed[i]
        )
        if fixed[i]:
            lo, hi = nm.threshold_currents(np.array([bb]))
            nm = NeuronMap(i, True, b_max, k, i_alpha, int(alpha[i]), i_down=float(lo[0]), i_up=float(hi[0]))
        maps.append(nm)
    return maps


def golden_bits(bundle: AnyBundle, xq: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Stored sign bit ``q`` after every step (-1 before the first update) and the gates, ``(N, T, d)``.

    Derived from the same accumulators as the golden model; :func:`codesign.golden.run_golden`
    is used by the callers to check that ``states == alpha * (2 q - 1)`` wherever ``q`` is defined.
    """
    c, b = accumulators(bundle, xq)
    g = np.abs(c) >= np.abs(b)
    s = c >= 0
    n, t, d = c.shape
    q = np.full((n, t, d), -1, dtype=np.int8)
    cur = np.full((n, d), -1, dtype=np.int8)
    for k in range(t):
        cur = np.where(g[:, k], s[:, k].astype(np.int8), cur)
        q[:, k] = cur
    return q, g.astype(np.int8)
