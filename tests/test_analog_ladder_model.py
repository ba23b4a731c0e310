"""The behavioural ladder model (codesign.analog.ladder_model): the integer model at zero offsets,
missed near-tie updates with a positive one, and offsets fitted back from the counts they made."""

from __future__ import annotations

import numpy as np
import pytest

from codesign.analog.ladder_model import LadderOffsets, fit_offsets, model_counts, signed_margins
from codesign.analog.mapping import accumulators, map_bundle
from codesign.bundle.random import make_random_bundle, random_integer_inputs
from codesign.golden import run_golden


@pytest.fixture
def layer(tmp_path):
    b = make_random_bundle(str(tmp_path / "c"), seed=3, d=4, inputs=3, classes=2, cell="cmru", eps=1)
    xq = np.stack(random_integer_inputs(b, sequences=12, steps=20, seed=5, density=0.8))
    return b, xq, map_bundle(b, xq, normalise=True)


def test_zero_offsets_are_the_integer_model(layer) -> None:
    b, xq, maps = layer
    counts = model_counts(b, maps, xq)
    states = run_golden(b, xq).layers[0].states
    alpha = b.weights["layers.0.alpha"].astype(np.int64)
    assert (counts * alpha[None, None, :] == states).all()
    c, bb = accumulators(b, xq)
    s_up, s_down = signed_margins(maps, c, bb)
    assert np.abs(s_up).min() > 0 and np.abs(s_down).min() > 0  # no exact ties on the current axis
    off, fit = fit_offsets(b, maps, xq, counts)
    assert off == LadderOffsets() and fit["wrong_upper"] == fit["wrong_lower"] == 0


def test_offsets_drop_near_ties_and_are_fitted_back(layer) -> None:
    b, xq, maps = layer
    c, bb = accumulators(b, xq)
    s_up, s_down = signed_margins(maps, c, bb)
    gold = model_counts(b, maps, xq)
    # an offset between two set margins: the smaller sets go missing, every later count shifts
    sets = np.sort(s_up[s_up > 0])
    delta = float((sets[2] + sets[3]) / 2)
    shifted = model_counts(b, maps, xq, LadderOffsets(delta, 0.0))
    assert (np.diff(shifted, axis=1, prepend=0) != np.diff(gold, axis=1, prepend=0)).sum() == 3
    off, fit = fit_offsets(b, maps, xq, shifted)
    assert sets[2] <= off.delta_up_pa < sets[3] and off.delta_down_pa == 0.0
    assert (model_counts(b, maps, xq, off) == shifted).all() and fit["wrong_upper"] == 0
