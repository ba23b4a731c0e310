"""Quantization: power-of-two scales, export refusals, and fake-quant torch == golden on float inputs."""

import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from codesign.bundle import FORMAT_VERSION, Bundle, Formats, Manifest, NetworkSpec
from codesign.errors import CodesignError
from codesign.golden import quantize_inputs, run_golden
from codesign.nn import HardwareNet
from codesign.quant import quantize_model
from codesign.quant.fixed_point import pow2_frac


@given(st.floats(1e-6, 1e6), st.integers(2, 16))
def test_pow2_frac_is_the_finest_scale_that_fits(max_abs: float, bits: int) -> None:
    f = pow2_frac(max_abs, bits)
    hi = 2 ** (bits - 1) - 1
    assert math.floor(max_abs * 2.0**f + 0.5) <= hi
    if f < 32:  # scales are clamped to 2**-32 (tiny values are not refined further)
        assert math.floor(max_abs * 2.0 ** (f + 1) + 0.5) > hi


def _bundle_from(model: HardwareNet, formats: Formats):
    deployed, weights, formats = quantize_model(model, formats)
    manifest = Manifest(
        format_version=FORMAT_VERSION,
        name="q",
        network=NetworkSpec(
            input_size=model.rnn.input_size,
            hidden_size=model.rnn.hidden_size,
            num_classes=model.readout.out_features,
            cell=model.cell_name,
            eps=int(model.rnn.eps),
        ),
        formats=formats,
    )
    return deployed, Bundle(manifest, weights)


@settings(max_examples=25, deadline=None)
@given(
    seed=st.integers(0, 10_000),
    cell_eps=st.sampled_from([("cmru", 1.0), ("cmru", -1.0), ("bmru", 0.0)]),
    bits=st.integers(2, 8),
    steps=st.integers(1, 120),
)
def test_fake_quant_torch_equals_golden(seed: int, cell_eps, bits: int, steps: int) -> None:
    torch.manual_seed(seed)
    model = HardwareNet(5, 7, 4, cell=cell_eps[0], eps=cell_eps[1])
    formats = Formats.model_validate(
        {
            "input": {"bits": 6, "frac": 2},
            "weight": {"bits": bits},
            "alpha": {"bits": bits},
            "readout_weight": {"bits": bits},
            "state": {"bits": 10},
        }
    )
    deployed, bundle = _bundle_from(model, formats)
    # inputs on and between the input grid, including exact half-way ties and out-of-range values
    x = torch.randint(-40, 40, (6, steps, 5)).double() / 8.0
    x[0, 0, 0] = 100.0
    gold = run_golden(bundle, quantize_inputs(bundle, x.numpy()))
    assert np.array_equal(deployed.integer_logits(x).numpy(), gold.logits)


def test_trained_like_weights_keep_argmax() -> None:
    """8-bit quantization of a random float net keeps nearly every prediction."""
    torch.manual_seed(0)
    model = HardwareNet(4, 16, 5, cell="cmru", eps=1.0)
    deployed, _ = _bundle_from(model, Formats())
    x = torch.randn(200, 30, 4)
    agree = (deployed(x).argmax(-1) == model(x).argmax(-1)).double().mean().item()
    assert agree > 0.9


def test_refuses_alphacmru_and_fractional_eps() -> None:
    with pytest.raises(CodesignError, match="alphacmru is not deployable yet.*Supported: cell cmru"):
        quantize_model(HardwareNet(2, 3, 2, cell="alphacmru"), Formats())
    with pytest.raises(CodesignError, match=r"eps 0.5 is not deployable.*\{-1, 0, 1\}"):
        quantize_model(HardwareNet(2, 3, 2, cell="cmru", eps=0.5), Formats())


def test_refuses_nan_parameters() -> None:
    model = HardwareNet(2, 3, 2)
    with torch.no_grad():
        model.rnn.candidate.weight[0, 0] = float("nan")
    with pytest.raises(CodesignError, match="NaN or Inf"):
        quantize_model(model, Formats())
