"""Bundle -> current mapping and netlist generation (no simulator)."""

from __future__ import annotations

import numpy as np
import pytest

from codesign.analog import cells
from codesign.analog.checks import default_agreement_bundle, reference_bundle
from codesign.analog.drive import Timing, neuron_drive
from codesign.analog.mapping import (
    ALPHA_MAX,
    HALF_WINDOW,
    I_CENTRE,
    NA,
    THRESHOLD_TRIM,
    accumulators,
    golden_bits,
    map_bundle,
    spine,
)
from codesign.analog.netlist import generate_netlists, neuron_subckt
from codesign.bundle import SpineBundle
from codesign.bundle.random import make_random_bundle, random_integer_inputs
from codesign.errors import CodesignError
from codesign.golden import run_golden


def ideal_schmitt(i_in: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """An ideal hysteretic comparator on currents: -1 until the first switch, then 0/1."""
    q = np.full(i_in.shape, -1, dtype=np.int8)
    cur = -1
    for t in range(len(i_in)):
        if i_in[t] > hi[t]:
            cur = 1
        elif i_in[t] < lo[t]:
            cur = 0
        q[t] = cur
    return q


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_mapped_currents_reproduce_the_golden_gates_exactly(tmp_path, seed):
    """An ideal comparator driven by the mapped currents gives the golden model's stored bit on every step."""
    b = make_random_bundle(str(tmp_path / "b"), seed=seed, d=6, inputs=5, classes=3, cell="bmru", eps=0)
    xq = np.stack(random_integer_inputs(b, sequences=3, steps=30, seed=seed))
    maps = map_bundle(b, xq)
    c, thr = accumulators(b, xq)
    q_gold, gates = golden_bits(b, xq)
    gold = run_golden(b, xq)
    np.testing.assert_array_equal(gates, gold.gates)
    for n in range(xq.shape[0]):
        for i, m in enumerate(maps):
            lo, hi = m.threshold_targets(thr[n, :, i])
            q = ideal_schmitt(m.input_current(c[n, :, i]), lo, hi)
            defined = q_gold[n, :, i] >= 0
            np.testing.assert_array_equal(q[defined], q_gold[n, defined, i])
            # margins: every decision is at least half a unit from its threshold
            i_in = m.input_current(c[n, :, i])
            assert np.all(np.minimum(abs(i_in - lo), abs(i_in - hi)) >= m.k / 2 * (1 - 1e-9))


def test_current_ranges_and_fixed_thresholds():
    b = default_agreement_bundle()
    xq = np.stack(random_integer_inputs(b, sequences=2, steps=20, seed=3))
    maps = map_bundle(b, xq)
    assert maps[0].fixed_threshold and not any(m.fixed_threshold for m in maps[1:])
    m0 = maps[0]
    # |b| = 12 -> targets centre +- k (12 - 1/2) = 0.15 / 0.35 nA, divided by the trim
    assert m0.i_down == pytest.approx((I_CENTRE - HALF_WINDOW) / THRESHOLD_TRIM)
    assert m0.i_up == pytest.approx((I_CENTRE + HALF_WINDOW) / THRESHOLD_TRIM)
    c, thr = accumulators(b, xq)
    for i, m in enumerate(maps):
        i_in = m.input_current(c[..., i])
        assert i_in.min() >= I_CENTRE - 2 * HALF_WINDOW - 1e-15
        assert i_in.max() <= I_CENTRE + 2 * HALF_WINDOW + 1e-15
        lo, hi = m.threshold_currents(thr[..., i])
        assert lo.min() >= (I_CENTRE - HALF_WINDOW) / THRESHOLD_TRIM - 1e-15  # fast-settling biases
        assert 0 < m.i_alpha <= ALPHA_MAX
    assert max(m.i_alpha for m in maps) == pytest.approx(ALPHA_MAX)


def test_golden_bits_match_golden_states():
    b, x = reference_bundle()
    gold = run_golden(b, x)
    q, _ = golden_bits(b, x)
    alpha = b.weights["alpha"]
    d = q >= 0
    np.testing.assert_array_equal(gold.states[d], np.where(q == 1, alpha, -alpha)[d])
    assert np.all(gold.states[~d] == 0)


def test_eps_minus_one_is_refused(tmp_path):
    b = make_random_bundle(str(tmp_path / "b"), seed=0, d=2, inputs=2, classes=2, cell="cmru", eps=-1)
    with pytest.raises(CodesignError, match="eps -1"):
        map_bundle(b)


def _replay(m, dr, t, steps, start):
    """An ideal Schmitt trigger (thresholds where the trimmed bias currents put them) driven by the PWL drive, sampled every 5 us: the state read at the
    end of every step, and the smallest margin by which a held state was kept (A)."""
    grid = np.arange(0.0, t.stop(steps), 5e-6)
    i_in = np.interp(grid, dr.t_in, dr.i_in)
    if dr.t_down is None:
        lo = np.full_like(grid, m.i_down)
        hi = np.full_like(grid, m.i_up)
    else:
        lo, hi = np.interp(grid, dr.t_down, dr.i_down), np.interp(grid, dr.t_up, dr.i_up)
        lo, hi = lo * THRESHOLD_TRIM, hi * THRESHOLD_TRIM  # the cell's thresholds (bias currents are trimmed)
    q, hold = start, np.inf
    states = []
    reads = iter(t.sample_time(k) for k in range(steps))
    nxt = next(reads)
    for when, x, d, u in zip(grid, i_in, lo, hi, strict=True):
        if when >= t.step_start(0):
            if x > u:
                q = 1
            elif x < d:
                q = 0
            else:
                hold = min(hold, x - d if q else u - x)
        if when >= nxt:
            states.append(q)
            nxt = next(reads, np.inf)
    return states, hold


def test_drive_never_passes_closer_to_a_threshold_than_the_steps_own_margins():
    """Regression: the first drive parked the candidate at the window centre between steps, half a
    (previous, narrow) window from a threshold: a near tie the integer model does not have.

    Replayed on an ideal Schmitt trigger, the drive must give the golden bits, and a held state
    must never come closer to a threshold than the steps' own margins (|c| against |b| and against
    the widest window B)."""
    b = default_agreement_bundle()
    m = map_bundle(b, np.zeros((1, 1, 3), dtype=np.int64))[1]
    assert not m.fixed_threshold
    big = m.b_max
    c = np.array([3, 2 * big, 1, -big // 2, 0, 5, -5, 1])
    bb = np.array([2, 1, big - 1, big, 0, 4, 4, 1])
    t = Timing()
    states, hold = _replay(m, neuron_drive(m, c, bb, t), t, len(c), start=0)
    g = np.abs(c) >= np.abs(bb)
    expect, q = [], 0
    for k in range(len(c)):
        q = int(c[k] >= 0) if g[k] else q
        expect.append(q)
    assert states == expect
    own = np.minimum(np.abs(np.abs(c) - np.abs(bb)) + 0.5, np.abs((big - 0.5) - np.abs(c)))
    assert hold >= 0.9 * m.k * own.min()


def test_drive_phases():
    """Thresholds open to the widest window, then the candidate moves, then the window closes."""
    b = default_agreement_bundle()
    m = map_bundle(b, np.zeros((1, 1, 3), dtype=np.int64))[1]
    t = Timing()
    dr = neuron_drive(m, np.array([5, -3, 2]), np.array([0, 4, 4]), t)
    at = lambda ts, vs, when: float(np.interp(when, ts, vs))  # noqa: E731
    w_lo, _ = m.threshold_currents(np.array([m.b_max]))
    lo4, _ = m.threshold_currents(np.array([4]))
    t1 = t.step_start(1)
    # phase A: widest window, the candidate still at the previous step's value
    assert at(dr.t_down, dr.i_down, t1 + t.t_a / 2) == pytest.approx(w_lo[0])
    assert at(dr.t_in, dr.i_in, t1 + t.t_a / 2) == pytest.approx(m.input_current(np.array([5]))[0])
    # phase B: the candidate at the new value, the window still widest
    assert at(dr.t_in, dr.i_in, t1 + t.t_a + t.t_b / 2) == pytest.approx(m.input_current(np.array([-3]))[0])
    assert at(dr.t_down, dr.i_down, t1 + t.t_a + t.t_b / 2) == pytest.approx(w_lo[0])
    # phase C: the step's own window, read at the end
    assert at(dr.t_down, dr.i_down, t.sample_time(1)) == pytest.approx(lo4[0])
    assert at(dr.t_in, dr.i_in, t.sample_time(2)) == pytest.approx(m.input_current(np.array([2]))[0])


def test_generate_netlists_bmru(tmp_path):
    b = make_random_bundle(str(tmp_path / "b"), seed=4, d=3, inputs=4, classes=2, cell="bmru", eps=0)
    files = generate_netlists(tmp_path / "b", tmp_path / "out")
    names = {f.name for f in files}
    assert {
        "cells.spice",
        "layer.spice",
        "tb_layer.cir",
        "mapping.csv",
        "README.md",
        "models_tt.spice",
        "neuron_000.spice",
        "neuron_001.spice",
        "neuron_002.spice",
    } <= names
    n0 = (tmp_path / "out" / "neuron_000.spice").read_text()
    assert ".subckt neuron_000 in out vdd vddb vbb vcn vbd vbu params: I_CENTRE=250p" in n0
    assert "bmru_cell_dyn" in n0
    layer = (tmp_path / "out" / "layer.spice").read_text()
    assert all(f"Xneuron_00{i}" in layer for i in range(3))
    lib = (tmp_path / "out" / "cells.spice").read_text()
    for sub in ("bmru_core", "bmru_core_dyn", "bmru_cell", "bmru_cell_dyn", "dpi", "bias_shared"):
        assert f".subckt {sub} " in lib
    assert len((tmp_path / "out" / "mapping.csv").read_text().splitlines()) == 4
    assert spine(b).net.hidden_size == 3


def test_generate_netlists_fixed_and_native(tmp_path):
    b = default_agreement_bundle()
    generate_netlists(b, tmp_path / "fixed", models=False)
    n0 = (tmp_path / "fixed" / "neuron_000.spice").read_text()
    assert "I_DOWN=" in n0 and "I_UP=" in n0 and "bmru_cell I_DOWN={I_DOWN}" in n0
    assert not (tmp_path / "fixed" / "models_tt.spice").exists()
    c = make_random_bundle(str(tmp_path / "c"), seed=0, d=2, inputs=2, classes=2, cell="cmru", eps=1)
    generate_netlists(c, tmp_path / "native", stages=3, models=False)
    lib = (tmp_path / "native" / "cells.spice").read_text()
    assert ".subckt cmru_native_3 in out vdd vddb params:" in lib
    assert ".subckt cmru_native_3_dyn in out vdd vddb vbd1 vbu1 vbd2 vbu2 params:" in lib
    assert "cmru_native_3" in (tmp_path / "native" / "neuron_000.spice").read_text()


def test_neuron_subckt_names_biases():
    b = default_agreement_bundle()
    m = map_bundle(b)[0]
    text = neuron_subckt(m, bundle_name="x")
    assert f"I_DOWN={cells.fmt(m.i_down)}" in text and f"I_ALPHA={cells.fmt(m.i_alpha)}" in text


def test_fmt_and_pwl():
    assert cells.fmt(0.35e-9) == "350p"
    assert cells.fmt(9.2e-12) == "9.2p"
    assert cells.fmt(0) == "0"
    assert cells.fmt(2e-3) == "2m"
    text = cells.pwl([0, 1e-3, 2e-3], [0, 0.25 * NA, 0.5 * NA], per_line=2)
    assert text.startswith("PWL(0 0 0.001 250p") and "\n+ 0.002 500p)" in text
    with pytest.raises(ValueError):
        cells.cmru_ladder(0)


def test_bundle_is_a_plain_value():
    b, x = reference_bundle(b_fixed=5)
    assert isinstance(b, SpineBundle) and x.shape == (1, 40, 1)
    assert map_bundle(b, x)[0].b_max == 5


@pytest.mark.parametrize("seed", [0, 1])
def test_per_step_normalisation_keeps_the_gates_and_widens_the_margins(tmp_path, seed):
    """Regression: one scale per neuron, set by the largest |b| of the test set, left
    the trained JapaneseVowels neurons 4 fA per unit and step-0 margins of 0.07-0.76 pA. Normalising
    every step's window keeps every golden decision and gives each step the margin
    H ||c| - |b| + 1/2| / (|b| - 1/2) (at least the neuron scale's, or H when clipped), with the thresholds fixed at
    the widest window."""
    b = make_random_bundle(str(tmp_path / "b"), seed=seed, d=6, inputs=5, classes=3, cell="bmru", eps=0)
    xq = np.stack(random_integer_inputs(b, sequences=3, steps=30, seed=seed))
    per_neuron = map_bundle(b, xq)
    normalised = map_bundle(b, xq, normalise=True)
    c, thr = accumulators(b, xq)
    q_gold, _ = golden_bits(b, xq)
    assert any(m.normalised for m in normalised)
    for i, (m0, m) in enumerate(zip(per_neuron, normalised, strict=True)):
        assert m.normalised == (not m.fixed_threshold)
        for n in range(xq.shape[0]):
            cc, bb = c[n, :, i], thr[n, :, i]
            lo, hi = m.threshold_targets(bb)
            i_in = m.input_current(cc, bb)
            q = ideal_schmitt(i_in, lo, hi)
            defined = q_gold[n, :, i] >= 0
            np.testing.assert_array_equal(q[defined], q_gold[n, defined, i])
            assert i_in.min() >= I_CENTRE - 2 * HALF_WINDOW - 1e-18
            assert i_in.max() <= I_CENTRE + 2 * HALF_WINDOW + 1e-18
            margin = np.minimum(abs(i_in - lo), abs(i_in - hi))
            lo0, hi0 = m0.threshold_targets(bb)
            i0 = m0.input_current(cc)
            # at least the neuron scale's margin, or H (a candidate clipped at I_c0 +- 2H)
            floor = np.minimum(np.minimum(abs(i0 - lo0), abs(i0 - hi0)), HALF_WINDOW)
            assert np.all(margin >= floor * (1 - 1e-9))
            if m.normalised:
                wide = np.abs(bb) >= 1
                np.testing.assert_allclose(hi[wide], I_CENTRE + HALF_WINDOW)
                np.testing.assert_allclose(lo[wide], I_CENTRE - HALF_WINDOW)
                own = np.abs(np.abs(cc) - np.abs(bb) + 0.5) / (np.maximum(np.abs(bb), 1) - 0.5)
                check = wide & (np.abs(cc) <= 2 * np.abs(bb) - 1)
                np.testing.assert_allclose(margin[check], (HALF_WINDOW * own)[check], rtol=1e-9)
    with pytest.raises(ValueError, match="need the accumulators b"):
        next(m for m in normalised if m.normalised).input_current(np.array([1]))


def test_normalised_drive_replays_the_golden_bits():
    """The PWL drive of a normalised neuron on an ideal Schmitt trigger: the golden bits."""
    b = default_agreement_bundle()
    m = map_bundle(b, np.zeros((1, 1, 3), dtype=np.int64), normalise=True)[1]
    assert m.normalised
    big = m.b_max
    c = np.array([3, 2 * big, 1, -big // 2, 0, 5, -5, 1, -1])
    bb = np.array([2, 1, big - 1, big, 0, 4, 4, 1, 0])
    t = Timing()
    states, _ = _replay(m, neuron_drive(m, c, bb, t), t, len(c), start=0)
    q, expect = 0, []
    for k in range(len(c)):
        q = int(c[k] >= 0) if abs(c[k]) >= abs(bb[k]) else q
        expect.append(q)
    assert states == expect
    lo, hi = m.threshold_currents(bb[bb != 0])  # |b| >= 1: the window is always the widest
    assert np.allclose(lo, lo[0]) and np.allclose(hi, hi[0])


def test_ladder_window_shift_is_trimmed_like_the_thresholds(tmp_path):
    """Stages >= 2 of a native CMRU ladder compare I_in + D with their window shifted by one state
    unit; the shift goes through the same threshold sources as I_DOWN / I_UP, so it is divided by
    THRESHOLD_TRIM too (untrimmed it put both thresholds 6 pA high: spurious resets, missed sets)."""
    from codesign.analog.mapping import LADDER_SHIFT_GAIN, THRESHOLD_TRIM, ladder_shift

    assert ladder_shift(0.5e-9) == pytest.approx(0.5e-9 * LADDER_SHIFT_GAIN / THRESHOLD_TRIM)
    assert 0.97 < LADDER_SHIFT_GAIN < 1.0  # the neighbour's DPI delivers a little less than I_alpha
    c = make_random_bundle(str(tmp_path / "c"), seed=0, d=2, inputs=2, classes=2, cell="cmru", eps=1)
    generate_netlists(c, tmp_path / "native", stages=3, models=False)
    lib = (tmp_path / "native" / "cells.spice").read_text()
    assert "Ib2 vbd2 0 DC {I_DOWN+I_SHIFT}" in lib
    maps = map_bundle(c)
    for m in maps:
        text = (tmp_path / "native" / f"neuron_{m.index:03d}.spice").read_text()
        if m.fixed_threshold:
            assert f"I_SHIFT={cells.fmt(ladder_shift(m.i_alpha))}" in text


def test_ladders_with_dpi_n_use_it_between_every_stage_with_their_own_shift(tmp_path):
    """``dpi_n`` (kappa-matched) in a ladder: every stage's DPI is a dpi_n biased from nFET diodes,
    the subcircuit is named ``..._n`` so both kinds can share a deck, and its stages >= 2 shift
    their down and up thresholds by their own calibrated gains."""
    from codesign.analog.cells import DPI_N, cmru_ladder
    from codesign.analog.mapping import LADDER_SHIFT_GAINS, THRESHOLD_TRIM, ladder_shift
    from codesign.analog.netlist import neuron_subckt

    text = cmru_ladder(3, DPI_N, dynamic=True)
    assert ".subckt cmru_native_3_dyn_n " in text and text.count(" dpi_n C=") == 3
    assert " dpi C=" not in text and "XMb6 vbtau vbtau 0 0" in text and "Ib6 vddb vbtau" in text
    assert f"I_TAU={cells.fmt(DPI_N.i_tau)}" in text
    assert cmru_ladder(3).count(" dpi C=") == 3 and "_n " not in cmru_ladder(3)
    g_d, g_u = LADDER_SHIFT_GAINS["n"]
    assert ladder_shift(0.5e-9, "n", "down") == pytest.approx(0.5e-9 * g_d / THRESHOLD_TRIM)
    assert ladder_shift(0.5e-9, "n", "up") == pytest.approx(0.5e-9 * g_u / THRESHOLD_TRIM)
    assert ladder_shift(0.5e-9, "p", "up") == ladder_shift(0.5e-9, "p", "down") == ladder_shift(0.5e-9)
    c = make_random_bundle(str(tmp_path / "c"), seed=0, d=2, inputs=2, classes=2, cell="cmru", eps=1)
    for m in map_bundle(c):
        sub = neuron_subckt(m, native_stages=4, dpi_kind="n")
        assert ("cmru_native_4_n" if m.fixed_threshold else "cmru_native_4_dyn_n") in sub


def test_ladder_ranges_cover_the_golden_count_with_spare_stages(tmp_path):
    from codesign.analog.checks import ladder_ranges

    c = make_random_bundle(str(tmp_path / "c"), seed=0, d=3, inputs=2, classes=2, cell="cmru", eps=1)
    xq = np.stack(random_integer_inputs(c, sequences=1, steps=12, seed=2, density=0.7))
    cc, bb = accumulators(c, xq)
    count = np.cumsum(np.where(np.abs(cc[0]) >= np.abs(bb[0]), np.where(cc[0] >= 0, 1, -1), 0), axis=0)
    for spare in (0, 1, 2):
        for i, (n0, stages) in enumerate(ladder_ranges(c, xq, spare)):
            lo, hi = min(count[:, i].min(), 0), max(count[:, i].max(), 0)
            assert n0 == -lo + spare and stages == hi - lo + 2 * spare


def test_ladder_drive_shares_the_step_frames_across_reset_states():
    """pre_pulses: a neuron with fewer init pulses waits, so every neuron's steps start together;
    hold: a ladder reset from the operating point starts at the window centre (retain)."""
    from codesign.analog.drive import LadderTiming, ladder_drive

    b = default_agreement_bundle()
    m = map_bundle(b)[1]
    c, bb = np.array([50, -50]), np.array([10, 10])
    t = LadderTiming()
    a = ladder_drive(m, c, bb, 1, t, pre_pulses=3)
    z = ladder_drive(m, c, bb, 3, t)
    assert a.t_down == z.t_down and a.t_in[-6:] == z.t_in[-6:]
    h = ladder_drive(m, c, bb, 0, t, hold=True)
    assert h.i_in[0] == m.i_centre and h.t_down[1] == pytest.approx(t.step_start(0, 0))
    with pytest.raises(ValueError, match="pre_pulses"):
        ladder_drive(m, c, bb, 2, t, pre_pulses=1)
