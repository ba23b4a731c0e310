"""Synapses as circuits: the mirror array's differential sums in ngspice against the ideal products."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

from codesign.analog.synapse import SynapseDesign, measure_synapse, synapse_cost, synapse_subckt
from codesign.errors import CodesignError


def test_device_count_and_area() -> None:
    """|w| unit mirrors and one bit switch per set bit of every weight, two route switches per
    nonzero weight, one diode per input; a programmable array builds every bit."""
    w = np.array([[3, 0, -4], [-1, 5, 2]])
    cost = synapse_cost(w, 4)
    # set bits: 3 -> 2, 4 -> 1, 1 -> 1, 5 -> 2, 2 -> 1; unit mirrors: |w|
    assert cost["mirror_devices"] == 3 + 4 + 1 + 5 + 2
    assert cost["switches"] == 7 + 2 * 5 and cost["diodes"] == 3
    d = SynapseDesign()
    units = 3 + 4 + 1 + 5 + 2
    assert cost["gate_area_um2"] == pytest.approx(
        (3 + units) * d.w_unit * d.l_unit + cost["switches"] * d.w_switch * d.l_switch
    )
    full = synapse_cost(w, 4, programmable=True)
    assert full["mirror_devices"] == 6 * 7 and full["switches"] == 6 * 5
    assert synapse_cost(w, 4, SynapseDesign(max_units=4))["mirror_devices"] == 2 + 1 + 1 + 2 + 1
    text = synapse_subckt(w)
    assert text.count("XM") == units  # identical unit devices (max_units 1)
    with pytest.raises(CodesignError, match="do not fit 4 signed bits"):
        synapse_cost(np.array([[8]]), 4)
    with pytest.raises(CodesignError, match="2-D integer array"):
        synapse_subckt(np.array([0.5, 1.0]))


@pytest.mark.skipif(shutil.which("ngspice") is None, reason="ngspice not installed (apt-get install ngspice)")
def test_sums_match_the_ideal_products_in_ngspice() -> None:
    """2 neurons x 4 inputs, signed 4-bit weights and signed 8-bit inputs: I(pos) - I(neg) is
    I_x sum w x within 3 % of the full scale sum |w| |x| I_x (tt, no mismatch)."""
    rng = np.random.default_rng(2)
    w = rng.integers(-7, 8, (2, 4))
    x = rng.integers(-127, 128, 4)
    r = measure_synapse(w, x)
    assert np.all(np.abs(r["ideal"]) > 0)
    err = (r["measured"] - r["ideal"]) / r["full_scale"]
    assert np.all(np.abs(err) < 0.03), err
    assert np.all(np.sign(r["measured"]) == np.sign(r["ideal"]))


def test_array_sums_from_an_ideal_table_are_the_integer_products() -> None:
    """The lookup routes each product by sign(w) sign(x): with ideal products and leakage on the
    other line it gives W x exactly, and the lines' current counts |w| |x| plus the leakage."""
    from codesign.analog.synapse_sim import ProductTable, array_sums, array_supply

    w = np.array([[3, 0, -4], [-1, 5, 2]])
    rows, cols = np.nonzero(w)
    levels = np.arange(9)
    i_x = 1e-13
    routed = np.abs(w[rows, cols])[:, None] * levels[None, :] * i_x
    table = ProductTable(rows, cols, routed, np.zeros_like(routed), i_x)
    x = np.array([[2, -3, 5], [-8, 0, 1], [0, 0, 0]])
    sums, lines = array_sums(table, w, x)
    np.testing.assert_allclose(sums, x @ w.T, atol=1e-9)
    np.testing.assert_allclose(lines, (np.abs(x) @ np.abs(w).T).sum(1) * i_x, atol=1e-20)
    leaky = ProductTable(rows, cols, routed, np.full_like(routed, 1e-16), i_x)
    _, with_leak = array_sums(leaky, w, x)
    np.testing.assert_allclose(with_leak - lines, rows.size * 1e-16)
    assert np.all(array_supply(table, x, lines) > 0)
    with pytest.raises(CodesignError, match="beyond the table"):
        array_sums(table, w, np.array([[9, 0, 0]]))


@pytest.mark.skipif(shutil.which("ngspice") is None, reason="ngspice not installed (apt-get install ngspice)")
def test_product_table_sums_match_the_full_array_in_ngspice() -> None:
    """The per-product sweep (what analog-eval --synapses circuit uses) against the full array's
    operating point: within 1 % of full scale (superposition; measured 0.3-0.6 %)."""
    from codesign.analog.synapse_sim import array_sums, measure_products

    rng = np.random.default_rng(2)
    w = rng.integers(-7, 8, (2, 4))
    x = rng.integers(-127, 128, (2, 4))
    table = measure_products(w, 128)
    sums, _ = array_sums(table, w, x)
    assert 1.0 < table.gain(w) < 1.05  # the mirrors' drains sit above their diodes (tt)
    for t in range(2):
        full = measure_synapse(w, x[t])
        err = (sums[t] * table.gain(w) * 1e-13 - full["measured"]) / full["full_scale"]
        assert np.all(np.abs(err) < 0.01), err


def test_test_set_figures_with_ideal_products_reproduce_the_golden_model(tmp_path, monkeypatch) -> None:
    """`python -m codesign.analog.synapse_sim`: with exact products (no leakage, unit gain) in
    place of the ngspice table, the arrays' sums are the integers, the ideal cells agree with the
    golden states on every neuron-step, the accuracy is golden's, and the table is cached once."""
    import codesign.analog.synapse_sim as synapse_sim

    calls: list[int] = []

    def exact_products(weights, x_max, design=synapse_sim.SynapseDesign(), **_):
        calls.append(x_max)
        w = np.asarray(weights, dtype=np.int64)
        rows, cols = np.nonzero(w)
        routed = np.abs(w[rows, cols])[:, None] * np.arange(x_max + 1)[None, :] * design.i_x
        return synapse_sim.ProductTable(rows, cols, routed, np.zeros_like(routed), design.i_x)

    monkeypatch.setattr(synapse_sim, "measure_products", exact_products)
    bundle = Path(__file__).resolve().parents[1] / "models" / "bundles" / "japanese_vowels_bmru_anneal"
    figures = synapse_sim.test_set_figures(bundle, tmp_path)
    assert figures["sequences"] == 370
    assert figures["sum_error_units"]["max"] < 1e-6
    assert figures["array_gain"] == pytest.approx(1.0)
    assert figures["state_agreement_ideal_cells"] == 1.0
    assert figures["accuracy_ideal_cells"] == figures["golden_accuracy"]
    assert figures["synapse_power_nW"] > 0
    again = synapse_sim.test_set_figures(bundle, tmp_path)  # from the cached table
    assert calls == [128] and again == figures


def test_line_offsets_fold_the_mirrors_zero_input_current_into_the_bias(monkeypatch) -> None:
    """Unit mirrors conduct with no input, so a row's lines do not cancel at x = 0: line_offsets
    measures that sum, and analog-eval's default trim (--synapse-trim offset) subtracts it, so the
    cells see the bias alone over zero input (untrimmed, JapaneseVowels neuron 9 lost 13 of its 14
    units of margin there and its cell fell back in SPICE)."""
    from codesign.analog.evaluate import _array_drive
    from codesign.analog.layer import layer_view
    from codesign.analog.mapping import spine
    from codesign.analog.synapse_sim import ProductTable, array_sums, line_offsets
    from codesign.bundle import load_bundle

    w = np.array([[3, 0, -4], [-1, 5, 2]])
    rows, cols = np.nonzero(w)
    i_x, leak = 1e-12, 0.3e-12  # per unit mirror, as a fraction of an LSB
    routed = np.abs(w[rows, cols])[:, None] * (np.arange(9)[None, :] * i_x + leak)
    table = ProductTable(rows, cols, routed, np.zeros_like(routed), i_x)
    off = line_offsets(table, w, 3)
    np.testing.assert_array_equal(off, np.rint(w.sum(axis=1) * leak / i_x))
    assert np.any(off != 0)
    x = np.array([[0, 0, 0], [2, 3, 5], [8, 1, 0]])
    sums, _ = array_sums(table, w, x)
    np.testing.assert_allclose(sums[0] - off, 0, atol=0.5)
    np.testing.assert_allclose(
        sums - off, x @ w.T, rtol=0.1, atol=0.5
    )  # the gain trim absorbs part of the leak

    bundle = load_bundle(
        Path(__file__).resolve().parents[1] / "models" / "bundles" / "japanese_vowels_bmru_anneal"
    )
    view = layer_view(bundle)
    wts = spine(view).weights
    arr = np.concatenate([wts["w_cand"], wts["w_thr"]]).astype(np.int64)
    r, c = np.nonzero(arr)
    leaky = ProductTable(
        r,
        c,
        np.abs(arr[r, c])[:, None] * (np.arange(129)[None, :] * i_x + leak),
        np.zeros((r.size, 129)),
        i_x,
    )

    import codesign.analog.synapse_sim as synapse_sim

    settings = {"synapse_ix_fa": 1000.0, "corner": "tt"}
    zeros = np.zeros((2, arr.shape[1]), dtype=np.int64)
    monkeypatch.setattr(synapse_sim, "load_or_measure", lambda *a, **k: leaky)
    (cu, bu), _ = _array_drive(view, zeros, Path("unused"), settings)
    (ct, bt), _ = _array_drive(view, zeros, Path("unused"), settings | {"synapse_trim": "offset"})
    assert np.abs(cu - wts["b_cand"]).max() >= 1  # the untrimmed drive is off by the leakage
    np.testing.assert_allclose(ct, np.broadcast_to(wts["b_cand"], ct.shape), atol=0.5)
    np.testing.assert_allclose(bt, np.broadcast_to(wts["b_thr"], bt.shape), atol=0.5)
