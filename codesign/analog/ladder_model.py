"""A step-level behavioural model of native CMRU ladders, calibrated on their ngspice runs.

A ladder sequence costs minutes of ngspice; the whole test set (JapaneseVowels: 370 sequences)
would take a day. What decides a ladder's count is the same comparison as the integer model's
gate (``|c| >= |b|``, the candidate current against the step's window), so the model keeps the
golden update rule and moves the two thresholds by offsets measured in SPICE:

* a step sets (count + 1) when the candidate current exceeds the upper threshold by more than
  ``delta_up``, and resets (count - 1) when it is below the lower threshold by more than
  ``delta_down`` (signed margins ``s_up = I_in - I_up``, ``s_down = I_down - I_in``, pA, from
  :mod:`codesign.analog.mapping`);
* ``delta_up = delta_down = 0`` is the integer model exactly (the window's thresholds sit half an
  accumulator unit inside the integer thresholds, so no margin is 0); a positive offset makes
  near-tie updates go missing, a negative one adds spurious updates, and a missed update offsets
  every later count, as on the circuit.

:func:`fit_offsets` picks the offsets that reproduce most of the ngspice updates (each offset is
fitted on its own side's steps); :func:`model_counts` then runs any number of sequences. The model
has no settling, no saturation of a full or empty ladder, no level errors, and no mismatch (the
ngspice runs it is fitted on are one nominal chip).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from codesign.analog.mapping import AnyBundle, NeuronMap, accumulators

__all__ = ["LadderOffsets", "fit_offsets", "model_counts", "signed_margins"]


@dataclass(frozen=True)
class LadderOffsets:
    """Threshold offsets (pA) of the ladder's set and reset decisions against the mapped window."""

    delta_up_pa: float = 0.0
    delta_down_pa: float = 0.0


def signed_margins(maps: list[NeuronMap], c: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(s_up, s_down)`` in pA, each ``(N, T, d)``: how far every step's candidate current lies
    beyond the upper threshold (a set when > 0) and below the lower one (a reset when > 0)."""
    c = np.asarray(c)
    b = np.asarray(b)
    s_up = np.zeros(c.shape, dtype=np.float64)
    s_down = np.zeros_like(s_up)
    for i, nm in enumerate(maps):
        i_in = nm.input_current(c[..., i], b[..., i])
        lo, hi = nm.threshold_targets(b[..., i])
        s_up[..., i] = (i_in - hi) / 1e-12
        s_down[..., i] = (lo - i_in) / 1e-12
    return s_up, s_down


def _updates(s_up: np.ndarray, s_down: np.ndarray, off: LadderOffsets) -> np.ndarray:
    up = s_up > off.delta_up_pa
    down = s_down > off.delta_down_pa
    both = up & down  # only with negative offsets on a zero-width window: the larger margin wins
    up_wins = s_up - off.delta_up_pa >= s_down - off.delta_down_pa
    return np.where(both, np.where(up_wins, 1, -1), up.astype(np.int64) - down.astype(np.int64))


def model_counts(
    bundle: AnyBundle, maps: list[NeuronMap], xq: np.ndarray, off: LadderOffsets = LadderOffsets()
) -> np.ndarray:
    """Ladder counts ``(N, T, d)`` (stages on minus the reset state) of sequences ``xq`` under ``off``."""
    c, b = accumulators(bundle, xq)
    s_up, s_down = signed_margins(maps, c, b)
    return np.cumsum(_updates(s_up, s_down, off), axis=1)


def _best_offset(margin: np.ndarray, fired: np.ndarray) -> tuple[float, int]:
    """The offset ``t`` minimising ``#(fired & margin <= t) + #(~fired & margin > t)`` and that count.

    Ties between equally good offsets go to the one nearest 0 (the integer model)."""
    cand = np.unique(np.concatenate([[0.0], margin]))
    order = np.argsort(margin)
    m_sorted, f_sorted = margin[order], fired[order]
    fired_le = np.cumsum(f_sorted)  # fired steps with margin <= m_sorted[j]
    best = (np.inf, 0.0)
    total_fired = int(fired.sum())
    for t in cand:
        j = int(np.searchsorted(m_sorted, t, side="right"))
        fired_below = int(fired_le[j - 1]) if j else 0
        idle_above = (len(margin) - j) - (total_fired - fired_below)
        err = fired_below + idle_above
        if (err, abs(t)) < (best[0], abs(best[1])):
            best = (err, float(t))
    return best[1], int(best[0])


def fit_offsets(
    bundle: AnyBundle, maps: list[NeuronMap], xq: np.ndarray, h_analog: np.ndarray
) -> tuple[LadderOffsets, dict]:
    """Offsets that best reproduce the ngspice counts ``h_analog`` ``(N, T, d)`` of sequences ``xq``.

    The ngspice updates are the steps' count differences. ``delta_up`` is fitted on the steps whose
    candidate lies above the window's centre (where a set is the question), ``delta_down`` on those
    below. Returns the offsets and how many of those steps each offset leaves wrong."""
    c, b = accumulators(bundle, xq)
    s_up, s_down = signed_margins(maps, c, b)
    h = np.asarray(h_analog, dtype=np.int64)
    d_a = np.diff(h, axis=1, prepend=0)
    upper = s_up >= s_down
    up, err_up = _best_offset(s_up[upper], d_a[upper] == 1)
    down, err_down = _best_offset(s_down[~upper], d_a[~upper] == -1)
    return LadderOffsets(up, down), {
        "steps_upper": int(upper.sum()),
        "wrong_upper": err_up,
        "steps_lower": int((~upper).sum()),
        "wrong_lower": err_down,
    }


def ladder_model_summary(bundle, xq: np.ndarray, y: np.ndarray, records: list[dict], normalise: bool) -> dict:
    """The model fitted on the ngspice ladder ``records`` (the sequences of ``xq`` they name),
    checked against them (in sample, and fitted on the even sequences, checked on the odd
    ones), then run on the whole test set ``xq, y`` with the bundle's digital readout."""
    from codesign.analog.layer import analog_readout, layer_view
    from codesign.analog.mapping import map_bundle
    from codesign.golden import run_golden

    view = layer_view(bundle)
    maps = map_bundle(view, xq, normalise=normalise)
    alpha = bundle.weights["layers.0.alpha"].astype(np.int64)
    n = len(records)
    seqs = np.array([int(r["sequence"]) for r in records])
    h_sp = np.stack([np.asarray(r["h_analog"], dtype=np.int64) for r in records])

    def classes(counts: np.ndarray) -> np.ndarray:
        return np.array([analog_readout(bundle, alpha[None, :] * h)[1] for h in counts])

    def check(off: LadderOffsets, idx: np.ndarray) -> dict:
        model = model_counts(view, maps, xq[seqs[idx]], off)
        return {
            "sequences": int(len(idx)),
            "count_agreement_with_spice": float((model == h_sp[idx]).mean()),
            "class_agreement_with_spice": float((classes(model) == classes(h_sp[idx])).mean()),
            "update_agreement_with_spice": float(
                (np.diff(model, axis=1, prepend=0) == np.diff(h_sp[idx], axis=1, prepend=0)).mean()
            ),
        }

    off, fit = fit_offsets(view, maps, xq[seqs], h_sp)
    even, odd = np.arange(0, n, 2), np.arange(1, n, 2)
    out: dict = {
        "offsets_pa": {"delta_up": off.delta_up_pa, "delta_down": off.delta_down_pa},
        "fit": fit,
        "in_sample": check(off, np.arange(n)),
        "integer_model_in_sample": check(LadderOffsets(), np.arange(n)),
    }
    if len(odd):
        off_even, _ = fit_offsets(view, maps, xq[seqs[even]], h_sp[even])
        out["held_out"] = {
            "fitted_on": "even sequences",
            "offsets_pa": {"delta_up": off_even.delta_up_pa, "delta_down": off_even.delta_down_pa},
        } | check(off_even, odd)
    counts = model_counts(view, maps, xq, off)
    gold = run_golden(bundle, xq)
    g_counts = gold.layers[0].states // np.where(alpha == 0, 1, alpha)[None, None, :]
    cls = classes(counts)
    out["test_set"] = {
        "sequences": int(len(xq)),
        "model_accuracy": float((cls == y).mean()),
        "golden_accuracy": float((gold.classes == y).mean()),
        "class_agreement_with_golden": float((cls == gold.classes).mean()),
        "count_agreement_with_golden": float((counts == g_counts).mean()),
    }
    out["note"] = (
        "step-level ladder model: the golden update rule with the set / reset thresholds moved by "
        "offsets fitted to the ngspice updates (codesign.analog.ladder_model); no settling, mismatch "
        "or level errors"
    )
    return out
