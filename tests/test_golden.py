"""Golden model on single-layer (spine-shaped) bundles: hand-checked rules, and bit-exact agreement
with the torch deployed model rebuilt from the bundle."""

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from codesign.bundle import Bundle, Formats, NetworkSpec, from_spine
from codesign.bundle.random import random_integer_inputs, random_manifest, random_weights
from codesign.bundle.v1 import FORMAT_VERSION, Manifest
from codesign.errors import CodesignError
from codesign.golden import quantize_inputs, run_golden
from codesign.quant import deployed_from_bundle


def tiny_bundle(eps: int, *, state_bits: int = 4, alpha: int = 3, **over) -> Bundle:
    """One neuron, one input: c = x, b = 1 (update when |x| >= 1), readout y = [h, -h]."""
    w = {
        "w_cand": np.array([[1]]),
        "b_cand": np.array([0]),
        "w_thr": np.array([[0]]),
        "b_thr": np.array([1]),
        "alpha": np.array([alpha]),
        "w_out": np.array([[1], [-1]]),
        "b_out": np.array([0, 0]),
    }
    w.update(over)
    manifest = Manifest(
        format_version=FORMAT_VERSION,
        name="tiny",
        network=NetworkSpec(input_size=1, hidden_size=1, num_classes=2, cell="cmru", eps=eps),
        formats=Formats.model_validate({"input": {"bits": 4, "frac": 0}, "state": {"bits": state_bits}}),
    )
    return from_spine(manifest, {k: np.asarray(v, dtype=np.int64) for k, v in w.items()})


def states(bundle: Bundle, xs: list[int]) -> list[int]:
    return run_golden(bundle, np.array(xs, dtype=np.int64).reshape(1, -1, 1)).states[0, :, 0].tolist()


def test_counter_saturates() -> None:
    # eps = 1: +3 per positive input, saturating at 7 (4-bit state); 0 input retains; -1 steps down
    assert states(tiny_bundle(1), [1, 0, 1, 5, 1, -1, 0]) == [3, 3, 6, 7, 7, 4, 4]


def test_bmru_overwrites() -> None:
    assert states(tiny_bundle(0), [1, 0, -2, 0, 3]) == [3, 3, -3, -3, 3]


def test_reflection_saturates_instead_of_wrapping() -> None:
    # eps = -1 and alpha = 0: h <- -h. From -8 (most negative 4-bit) the result is +7, not -8.
    b = tiny_bundle(-1, alpha=-8, w_cand=np.array([[-1]]))
    # first update: c = -1 < 0 -> u = -alpha = 8 -> sat(0 + 8) = 7; then x=-1: c = 1 -> u = -8 -> sat(-7 - 8) = -8
    assert states(b, [1, -1]) == [7, -8]
    b0 = tiny_bundle(-1, alpha=0)
    assert states(b0, [1]) == [0]


def test_sign_of_zero_is_plus() -> None:
    # c = 0 and b = 0: gate fires (|0| >= |0|) and sign(0) = +1
    b = tiny_bundle(1, b_thr=np.array([0]))
    assert states(b, [0, 0]) == [3, 6]


def test_argmax_ties_go_to_lowest_index() -> None:
    b = tiny_bundle(1)
    res = run_golden(b, np.zeros((1, 3, 1), dtype=np.int64))
    assert res.logits.tolist() == [[0, 0]] and res.classes.tolist() == [0]


def test_input_quantizer_rounds_half_up_and_saturates() -> None:
    b = tiny_bundle(1)  # 4-bit input, frac 0: [-8, 7]
    x = np.array([0.5, -0.5, 1.49, -1.5, 100.0, -100.0]).reshape(1, -1, 1)
    assert quantize_inputs(b, x).ravel().tolist() == [1, 0, 1, -1, 7, -8]


def test_input_overflow_error_mode_names_position() -> None:
    b = tiny_bundle(1)
    inp = b.manifest.input.model_copy(update={"overflow": "error"})
    b = Bundle(b.manifest.model_copy(update={"input": inp}), b.weights)
    with pytest.raises(CodesignError, match="sequence 0, step 2, feature 0"):
        quantize_inputs(b, np.array([0.0, 1.0, 9.0]).reshape(1, -1, 1))


def test_bad_inputs_refused() -> None:
    b = tiny_bundle(1)
    with pytest.raises(CodesignError, match=r"shape \(sequences, steps, 1\)"):
        run_golden(b, np.zeros((2, 3), dtype=np.int64))
    with pytest.raises(CodesignError, match="4-bit input format"):
        run_golden(b, np.full((1, 2, 1), 9, dtype=np.int64))
    with pytest.raises(CodesignError, match="not finite"):
        quantize_inputs(b, np.array([np.nan]).reshape(1, 1, 1))


def test_event_and_mac_counts() -> None:
    res = run_golden(tiny_bundle(1), np.array([1, 0, 1, 5, 1]).reshape(1, -1, 1))
    assert res.events[0].tolist() == [1, 0, 1, 1, 0]  # the last update saturates: no change
    assert res.macs[0].tolist() == [2, 0, 2, 2, 2]


@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(0, 2**31 - 1),
    d=st.integers(1, 24),
    m=st.integers(1, 12),
    c=st.integers(1, 6),
    cell_eps=st.sampled_from([("cmru", 1), ("cmru", 0), ("cmru", -1), ("bmru", 0)]),
    input_bits=st.integers(2, 12),
    weight_bits=st.integers(2, 12),
    state_bits=st.integers(3, 20),
    alpha_bits=st.integers(2, 10),
    steps=st.integers(1, 200),
)
def test_torch_deployed_equals_golden(
    seed, d, m, c, cell_eps, input_bits, weight_bits, state_bits, alpha_bits, steps
) -> None:
    """Random family members at the extremes of their formats: 0 mismatches on every state and logit."""
    formats = Formats.model_validate(
        {
            "input": {"bits": input_bits, "frac": seed % 5},
            "weight": {"bits": weight_bits},
            "state": {"bits": state_bits},
            "alpha": {"bits": alpha_bits},
            "state_frac": seed % 7 - 3,
        }
    )
    manifest = random_manifest(
        d=d, inputs=m, classes=c, cell=cell_eps[0], eps=cell_eps[1], formats=formats, seed=seed
    )
    bundle = from_spine(manifest, random_weights(manifest, seed))
    xq = np.stack(random_integer_inputs(bundle, sequences=3, steps=steps, seed=seed, density=0.6))
    gold = run_golden(bundle, xq)
    deployed = deployed_from_bundle(bundle)
    x_float = torch.from_numpy(xq).double() * 2.0**-formats.input.frac
    (h,), _ = deployed.trace(x_float)
    assert np.array_equal((h * 2.0**formats.state_frac).numpy(), gold.states.astype(np.float64))
    assert np.array_equal(deployed.integer_logits(x_float), gold.logits)
