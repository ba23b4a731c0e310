"""The behavioural mismatch model of the BMRU layer and the complementary pair's start state."""

from __future__ import annotations

import numpy as np
import pytest

from codesign.analog.behavioural import SKY130_TT, Mismatch, behavioural_states, draw_errors, golden_signs
from codesign.analog.checks import default_agreement_bundle
from codesign.analog.mapping import map_bundle
from codesign.analog.netlist import neuron_subckt
from codesign.bundle.random import random_integer_inputs
from codesign.golden import run_golden


def _inputs(bundle, seed: int = 3) -> np.ndarray:
    return np.stack(random_integer_inputs(bundle, sequences=6, steps=12, seed=seed, density=0.6))


def test_without_mismatch_the_pair_is_the_integer_model() -> None:
    """The pair's state is 0 until the first update, +-alpha after: the golden states' signs exactly;
    a single cell starts at -1 where golden is 0 (what the previous analog-eval lost accuracy to)."""
    b = default_agreement_bundle()
    x = _inputs(b)
    maps = map_bundle(b, x)
    golden = golden_signs(b, x)
    states = run_golden(b, x).states
    assert np.array_equal(states, b.weights["alpha"] * golden) and (golden == 0).any()
    assert np.array_equal(behavioural_states(b, x, maps), golden)
    single = behavioural_states(b, x, maps, pair=False)
    assert np.array_equal(single[golden != 0], golden[golden != 0])
    assert np.all(single[golden == 0] == -1)


def test_split_of_the_threshold_statistics() -> None:
    """Thresholds referred to the input, (1 + e_th) / (1 + e_in), get back the measured spreads and correlation."""
    mm = Mismatch.from_threshold_stats(0.05, 0.06, 0.8)
    e = draw_errors(mm, 200_000, seed=1, cores=1)[0]
    up = (1 + e[1]) / (1 + e[0])
    down = (1 + e[2]) / (1 + e[0])
    assert np.std(up) == pytest.approx(0.05, rel=0.03)
    assert np.std(down) == pytest.approx(0.06, rel=0.03)
    assert np.corrcoef(up, down)[0, 1] == pytest.approx(0.8, abs=0.02)
    with pytest.raises(ValueError, match="bad threshold statistics"):
        Mismatch.from_threshold_stats(0.05, 0.06, 1.5)


def test_mismatch_moves_decisions_and_draws_are_reproducible() -> None:
    b = default_agreement_bundle()
    x = _inputs(b)
    maps = map_bundle(b, x)
    golden = golden_signs(b, x)
    a = behavioural_states(b, x, maps, draw_errors(SKY130_TT.scaled(4), 4, seed=7))
    again = behavioural_states(b, x, maps, draw_errors(SKY130_TT.scaled(4), 4, seed=7))
    assert np.array_equal(a, again) and not np.array_equal(a, golden)


def test_pair_netlist_has_the_reset_ports() -> None:
    b = default_agreement_bundle()
    maps = map_bundle(b, _inputs(b))
    fixed, dyn = neuron_subckt(maps[0], pair=True), neuron_subckt(maps[1], pair=True)
    assert ".subckt neuron_000 in out vdd vddb vbb vcn rst rstb params:" in fixed and "bmru_pair " in fixed
    assert ".subckt neuron_001 in out vdd vddb vbb vcn vbd vbu rst rstb params:" in dyn
    assert "bmru_pair_dyn" in dyn
    with pytest.raises(ValueError, match="complementary pair"):
        neuron_subckt(maps[1], pair=True, native_stages=2)


def test_mismatch_aware_training_gates() -> None:
    """The CMRU's mismatch option perturbs the gate only while training: zero sigmas are the plain
    gate, eval is unchanged, nonzero sigmas move decisions and gradients still reach the weights."""
    import torch

    from codesign.nn.cmru import CMRU

    torch.manual_seed(0)
    x = torch.randn(8, 20, 3)
    plain = CMRU(3, 5, eps=0.0)
    zero = CMRU(3, 5, eps=0.0, mismatch=[0.0, 0.0, 0.0])
    noisy = CMRU(3, 5, eps=0.0, mismatch=[0.3, 0.3, 0.3])
    zero.load_state_dict(plain.state_dict())
    noisy.load_state_dict(plain.state_dict())
    for m in (plain, zero, noisy):
        m.train()
    h_plain = plain(x)[0]
    assert torch.equal(zero(x)[0], h_plain)
    h_noisy = noisy(x)[0]
    assert not torch.equal(h_noisy, h_plain)
    h_noisy.square().sum().backward()
    assert noisy.candidate.weight.grad is not None and noisy.candidate.weight.grad.abs().sum() > 0
    noisy.eval()
    plain.eval()
    assert torch.equal(noisy(x)[0], plain(x)[0])
    with pytest.raises(ValueError, match="three sigmas"):
        CMRU(3, 5, mismatch=[0.1, -0.1, 0.1])


def test_normalised_mapping_survives_an_input_gain_error_the_neuron_scale_does_not() -> None:
    """Regression: with one scale per neuron a 5 % input-mirror error shifts the window
    centre (0.25 nA) by 12.5 pA, more than the windows of steps with |b| well below B. Normalised
    per step, the same error is 12.5 % of |b| and moves fewer decisions."""
    b = default_agreement_bundle()
    x = _inputs(b)
    golden = golden_signs(b, x)
    d = golden.shape[-1]
    err = np.zeros((2, 3, d))
    err[:, 0] = 0.05  # both cores' input mirrors 5 % strong
    per_neuron = behavioural_states(b, x, map_bundle(b, x), err)
    normalised = behavioural_states(b, x, map_bundle(b, x, normalise=True), err)
    assert np.array_equal(behavioural_states(b, x, map_bundle(b, x, normalise=True)), golden)
    assert (normalised == golden).mean() > (per_neuron == golden).mean()


def test_neuron_common_error_is_shared_by_both_cores_and_leaves_the_core_draws() -> None:
    """sigma_neuron (fitted to ngspice draws of a whole layer): each neuron's up and down errors get
    one term shared by the pair's two cores; the per-core draws of a chip stay what they were."""
    base = draw_errors(SKY130_TT, 50_000, seed=3)
    common = draw_errors(SKY130_TT.with_neuron(0.07), 50_000, seed=3)
    assert np.array_equal(base[:, 0], common[:, 0])  # input mirrors: per core only
    shared = common[:, 1:] - base[:, 1:]
    assert np.allclose(shared[0], shared[1], atol=1e-12) and abs(shared.std() - 0.07) < 0.002
    assert SKY130_TT.scaled(2).with_neuron(0.01).sigma_neuron == 0.01
    assert SKY130_TT.with_neuron(0.07).scaled(2).sigma_neuron == pytest.approx(0.14)


def test_fit_neuron_sigma_finds_the_agreement_of_the_ngspice_draws(tmp_path) -> None:
    """Without per-core errors and at sigma_neuron 0 the model is golden (agreement 1): a target of
    1 fits sigma 0; a lower target needs a larger common error, and the fit is the grid's nearest."""
    from codesign.analog.mismatch import fit_neuron_sigma
    from codesign.bundle.random import make_random_network_bundle

    b = make_random_network_bundle(
        str(tmp_path / "b"), seed=2, inputs=3, layers=[{"cell": "bmru", "size": 4}], classes=2
    )
    xq = np.stack(random_integer_inputs(b, sequences=6, steps=15, seed=1, density=0.8))
    y = np.zeros(len(xq), dtype=np.int64)
    grid = (0.0, 0.05, 0.2)
    sigma, rows = fit_neuron_sigma(b, xq, y, [0, 1, 2], 1.0, draws=4, grid=grid, mm=Mismatch())
    assert sigma == 0.0 and rows[0]["state_agreement_mean"] == 1.0
    low = rows[-1]["state_agreement_mean"]
    assert low < 1.0
    assert fit_neuron_sigma(b, xq, y, [0, 1, 2], low, draws=4, grid=grid, mm=Mismatch())[0] == 0.2
