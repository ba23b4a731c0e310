"""Synapses as circuits: the mirror array's differential sums in ngspice against the ideal products."""

from __future__ import annotations

import shutil

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
