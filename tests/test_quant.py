"""Quantization: power-of-two scales, export refusals, and the deployed torch model == golden, bit for bit."""

import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from codesign.bundle import Bundle
from codesign.bundle.io import check_weights
from codesign.errors import CodesignError
from codesign.golden import quantize_inputs, run_golden
from codesign.nn.hardware import HardwareStack
from codesign.quant import deployed_from_bundle, quantize_stack
from codesign.quant.export import check_deployable
from codesign.quant.fixed_point import pow2_frac


@given(st.floats(1e-6, 1e6), st.integers(2, 16))
def test_pow2_frac_is_the_finest_scale_that_fits(max_abs: float, bits: int) -> None:
    f = pow2_frac(max_abs, bits)
    hi = 2 ** (bits - 1) - 1
    assert math.floor(max_abs * 2.0**f + 0.5) <= hi
    if f < 32:  # scales are clamped to 2**-32 (tiny values are not refined further)
        assert math.floor(max_abs * 2.0 ** (f + 1) + 0.5) > hi


def quantized(model: HardwareStack, x: torch.Tensor, **fmt) -> Bundle:
    layer_fmt = {k: v for k, v in fmt.items() if k != "input_frac"}
    manifest, weights = quantize_stack(
        model,
        name="q",
        input_bits=8,
        input_frac=fmt.get("input_frac", 3),
        layer_formats=[layer_fmt] * len(model.cells),
        readout_formats={},
        calibration=x,
    )
    return Bundle(manifest, check_weights(manifest, weights))


CELLS = st.sampled_from(
    [
        {"cell": "cmru", "eps": 1.0},
        {"cell": "cmru", "eps": -1.0},
        {"cell": "bmru"},
        {"cell": "alphacmru", "eps": 1.0},
        {"cell": "bgmingru"},
        {"cell": "mingru"},
        {"cell": "hsru", "leak_shift": 3},
    ]
)


@settings(max_examples=25, deadline=None)
@given(
    seed=st.integers(0, 10_000),
    kinds=st.lists(CELLS, min_size=1, max_size=3),
    bits=st.integers(3, 8),
    dcls=st.booleans(),
    readout=st.sampled_from(["last", "sum", "per_step"]),
    steps=st.one_of(st.integers(1, 60), st.sampled_from([257, 1000, 2000])),
)
def test_deployed_torch_equals_golden(seed, kinds, bits, dcls, readout, steps) -> None:
    """Random trained-like stacks of every cell, quantized: every layer's states and the logits agree."""
    torch.manual_seed(seed)
    layers = [dict(k, size=3 + i) for i, k in enumerate(kinds)]
    if dcls:
        layers[0]["dcls"] = {"taps": 2, "span": 5}
    model = HardwareStack(
        4, 3, layers, pooling="sum" if readout == "sum" else "last", per_step=readout == "per_step"
    )
    # inputs on and between the input grid, half-way ties and out-of-range values included
    x = torch.randint(-40, 40, (5, steps, 4)).double() / 8.0
    x[0, 0, 0] = 100.0
    bundle = quantized(model, x, weight_bits=bits, alpha_bits=bits, state_bits=12)
    gold = run_golden(bundle, quantize_inputs(bundle, x.numpy()))
    deployed = deployed_from_bundle(bundle)
    outs, _ = deployed.trace(x)
    for out, layer, trace in zip(outs, bundle.manifest.layers, gold.layers, strict=True):
        frac = 0 if layer.cell == "hsru" else layer.state_frac
        assert np.array_equal((out * 2.0**frac).numpy(), trace.states.astype(np.float64))
    assert np.array_equal(deployed.integer_logits(x), gold.logits)


def test_8_bit_quantization_keeps_predictions() -> None:
    torch.manual_seed(0)
    model = HardwareStack(4, 5, [{"cell": "cmru", "size": 16, "eps": 1.0}])
    x = torch.randn(200, 30, 4)
    deployed = deployed_from_bundle(quantized(model, x, weight_bits=8, alpha_bits=8))
    agree = (deployed(x).argmax(-1) == model(x).argmax(-1)).double().mean().item()
    assert agree > 0.9


def test_refusals() -> None:
    from codesign.nn.backbone import Backbone
    from codesign.nn.cmru import CMRU

    x = torch.randn(4, 5, 2)
    with pytest.raises(CodesignError, match=r"eps 0.5 is not deployable.*\{-1, 0, 1\}"):
        quantized(HardwareStack(2, 2, [{"cell": "cmru", "size": 3, "eps": 0.5}]), x)
    with pytest.raises(CodesignError, match="a Backbone is not deployable: only the hardware profile"):
        check_deployable(Backbone(2, 2, lambda m: CMRU(m, 3)))
    model = HardwareStack(2, 2, [{"cell": "cmru", "size": 3}])
    with torch.no_grad():
        model.cells[0].candidate.weight[0, 0] = float("nan")
    with pytest.raises(CodesignError, match="NaN or Inf"):
        quantized(model, x)


@pytest.mark.parametrize("seed", [0, 1])
def test_long_sequences_stay_bit_exact(seed: int) -> None:
    """2000 steps through a three-layer stack: saturation, toggles and drift all agree."""
    torch.manual_seed(seed)
    model = HardwareStack(
        3,
        4,
        [
            {"cell": "cmru", "size": 5, "eps": 1.0, "dcls": {"taps": 2, "span": 6}},
            {"cell": "mingru", "size": 4},
            {"cell": "hsru", "size": 4, "leak_shift": 2},
        ],
        pooling="sum",
    )
    x = torch.randn(2, 2000, 3)
    bundle = quantized(model, x[:, :200], weight_bits=6, alpha_bits=6, state_bits=10)
    gold = run_golden(bundle, quantize_inputs(bundle, x.numpy()))
    assert np.array_equal(deployed_from_bundle(bundle).integer_logits(x), gold.logits)


@settings(max_examples=200, deadline=None)
@given(
    bc=st.lists(st.floats(-2, 2), min_size=1, max_size=8),
    ratio=st.floats(0.9, 1.1),
    frac=st.integers(0, 8),
    bits=st.integers(3, 16),
)
def test_rest_gates_keep_the_float_decision(bc, ratio, frac, bits) -> None:
    """Rounded first-layer biases open a neuron's gate on a zero input exactly when the float ones do."""
    from codesign.quant.fixed_point import keep_rest_gates, quantize

    c = torch.tensor(bc, dtype=torch.float64)
    b = -c.flip(0) * ratio  # near-ties of both signs
    qc, qb = quantize(c, frac, bits), quantize(b, frac, bits)
    cand, thr = (t.numpy() for t in keep_rest_gates(qc, qb, c, b, bits))
    qc, qb = qc.numpy(), qb.numpy()
    lo, hi = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
    assert cand.min() >= lo and thr.min() >= lo and cand.max() <= hi and thr.max() <= hi
    assert (np.abs(cand - qc) + np.abs(thr - qb)).max() <= 1  # one code of nudge at most
    in_range = (c.abs() * 2.0**frac < hi) & (b.abs() * 2.0**frac < hi)  # saturated rows may tie
    want = (c.abs() >= b.abs()).numpy()
    assert ((np.abs(cand) >= np.abs(thr)) == want)[in_range.numpy()].all()


def test_near_tie_bias_no_longer_opens_the_gate_at_7_bits() -> None:
    """Regression: the copy-first demo model went from 100% to 14% at 7-bit weights (neuron 12)."""
    model = HardwareStack(2, 2, [{"cell": "cmru", "size": 1, "eps": 1.0}])
    with torch.no_grad():
        model.cells[0].candidate.weight.copy_(torch.tensor([[0.4693, -0.2]]))
        model.cells[0].threshold.weight.copy_(torch.tensor([[0.3305, 0.1]]))
        model.cells[0].candidate.bias.fill_(0.1380)
        model.cells[0].threshold.bias.fill_(-0.1395)
    bundle = quantized(model, torch.zeros(2, 5, 2), weight_bits=7, input_frac=0)
    w = bundle.layer_weights(0)
    assert abs(int(w["b_cand"][0])) < abs(int(w["b_thr"][0]))  # closed on silence, as in float
    gold = run_golden(bundle, np.zeros((1, 50, 2), dtype=np.int64))
    assert not gold.layers[0].gates.any() and not gold.layers[0].states.any()
