"""The Amaranth accelerator in amaranth.sim, bit for bit against the golden model."""

import numpy as np
import pytest

from codesign.bundle import Bundle, Formats, NetworkSpec, from_spine, spine_view
from codesign.bundle.random import random_integer_inputs, random_manifest, random_weights
from codesign.bundle.v1 import FORMAT_VERSION, Manifest
from codesign.golden.model import run_golden_ragged
from codesign.hw import Accelerator
from codesign.hw.memories import ceil_div, memory_images
from codesign.hw.pysim import simulate
from codesign.intmath import signed_range


def random_bundle(*, d, m, c, cell="cmru", eps=1, seed=0, **formats) -> Bundle:
    manifest = random_manifest(
        d=d, inputs=m, classes=c, cell=cell, eps=eps, seed=seed, formats=Formats.model_validate(formats)
    )
    return spine_view(from_spine(manifest, random_weights(manifest, seed)))


def assert_matches_golden(bundle: Bundle, sequences, lanes: int, seed: int | None = 0):
    result = simulate(bundle, sequences, lanes=lanes, seed=seed)
    golden = run_golden_ragged(bundle, sequences)
    for n, (got, exp) in enumerate(zip(result.sequences, golden, strict=True)):
        np.testing.assert_array_equal(np.array(got.states), exp.states[0], err_msg=f"sequence {n} states")
        np.testing.assert_array_equal(np.array(got.gates), exp.gates[0], err_msg=f"sequence {n} gates")
        assert got.events == exp.events[0].tolist(), f"sequence {n} events"
        assert got.macs == exp.macs[0].tolist(), f"sequence {n} macs"
        np.testing.assert_array_equal(got.logits, exp.logits[0], err_msg=f"sequence {n} logits")
        assert got.class_index == exp.classes[0], f"sequence {n} class"
    return result


CONFIGS = [
    # d, m, c, lanes, cell, eps, formats
    (1, 1, 1, 1, "cmru", 1, {"state": {"bits": 2}}),
    (5, 3, 3, 2, "cmru", 1, {}),
    (4, 2, 2, 1, "cmru", -1, {"state": {"bits": 3}}),
    (6, 4, 5, 6, "bmru", 0, {"state": {"bits": 4}}),
    (7, 5, 9, 3, "cmru", 0, {"state": {"bits": 5}, "alpha": {"bits": 10}}),
    (3, 6, 2, 2, "cmru", -1, {"input": {"bits": 4, "frac": 1}, "weight": {"bits": 3}, "bias": {"bits": 6}}),
]


@pytest.mark.parametrize("d,m,c,lanes,cell,eps,formats", CONFIGS)
def test_random_bundles_match_golden(d, m, c, lanes, cell, eps, formats):
    bundle = random_bundle(d=d, m=m, c=c, cell=cell, eps=eps, seed=d * 10 + lanes, **formats)
    sequences = random_integer_inputs(bundle, sequences=5, steps=(1, 7), seed=lanes)
    assert_matches_golden(bundle, sequences, lanes, seed=d)


def extreme_bundle(eps: int) -> Bundle:
    """Every array at the most negative value of its format: the widest sums and saturation."""
    formats = Formats.model_validate({"state": {"bits": 3}, "input": {"bits": 4, "frac": 0}})
    manifest = Manifest(
        format_version=FORMAT_VERSION,
        name="extreme",
        network=NetworkSpec(input_size=3, hidden_size=3, num_classes=3, cell="cmru", eps=eps),
        formats=formats,
    )
    w = {}
    for name, shape, key in [
        ("w_cand", (3, 3), "weight"),
        ("w_thr", (3, 3), "weight"),
        ("b_cand", (3,), "bias"),
        ("b_thr", (3,), "bias"),
        ("alpha", (3,), "alpha"),
        ("w_out", (3, 3), "readout_weight"),
        ("b_out", (3,), "readout_bias"),
    ]:
        w[name] = np.full(shape, signed_range(getattr(formats, key).bits)[0], dtype=np.int64)
    w["w_thr"][1] = 0  # neuron 1: b = 0, so it updates at every step
    w["b_thr"][1] = 0
    w["alpha"][2] = signed_range(formats.alpha.bits)[1]
    return spine_view(from_spine(manifest, w))


@pytest.mark.parametrize("eps", [-1, 0, 1])
def test_extreme_values_saturate_like_golden(eps):
    bundle = extreme_bundle(eps)
    lo, hi = signed_range(bundle.manifest.formats.input.bits)
    seqs = [
        np.array([[lo, lo, lo], [hi, hi, hi], [0, 0, 0], [lo, 0, hi]] * 2, dtype=np.int64),
        np.array([[lo, lo, lo]], dtype=np.int64),
    ]
    result = assert_matches_golden(bundle, seqs, lanes=2, seed=None)
    state_lo, state_hi = signed_range(3)
    seen = np.concatenate([np.array(s.states) for s in result.sequences])
    assert seen.min() >= state_lo and seen.max() <= state_hi


def test_argmax_ties_go_to_the_lowest_index():
    bundle = random_bundle(d=2, m=1, c=4, seed=3)
    w = dict(bundle.weights)
    w["w_out"] = np.zeros_like(w["w_out"])
    w["b_out"] = np.array([1, 7, 7, 7])
    tied = from_spine(bundle.manifest, w)
    result = assert_matches_golden(tied, [np.array([[3], [0]])], lanes=2, seed=None)
    assert result.sequences[0].class_index == 1


@pytest.mark.parametrize("lanes", [1, 3, 8])
def test_steps_take_the_cycle_floor_when_inputs_stream_back_to_back(lanes):
    bundle = random_bundle(d=8, m=6, c=2, seed=5)
    sequences = random_integer_inputs(bundle, sequences=3, steps=(4, 8), seed=7)
    result = assert_matches_golden(bundle, sequences, lanes, seed=None)
    groups = ceil_div(8, lanes)
    for trace, seq in zip(result.sequences, sequences, strict=True):
        took = np.diff(trace.done_cycles)
        nnz = (seq[1:] != 0).sum(axis=1)
        np.testing.assert_array_equal(took, groups * np.maximum(nnz, 1))


def test_memory_images_pack_lanes_per_group():
    bundle = random_bundle(d=5, m=3, c=3, seed=1)
    img = memory_images(bundle, lanes=2)
    assert len(img.gate_weights) == 3 * 3 and len(img.neuron_params) == 3
    assert img.gate_weights[1 * 3 + 2][1] == {"cand": bundle["w_cand"][3, 2], "thr": bundle["w_thr"][3, 2]}
    assert img.gate_weights[2 * 3 + 0][1] == {"cand": 0, "thr": 0}  # padding lane
    assert img.neuron_params[2][0]["alpha"] == bundle["alpha"][4]
    assert img.readout_weights[1 * 5 + 4][0] == bundle["w_out"][2, 4]
    assert img.readout_bias[1] == [bundle["b_out"][2], 0]


@pytest.mark.parametrize("lanes", [0, 6, -1, 2.0, True])
def test_lanes_outside_range_is_a_value_error_naming_it(lanes):
    bundle = random_bundle(d=5, m=2, c=2)
    with pytest.raises(ValueError, match=rf"lanes must be an integer in 1\.\.5 .*not {lanes!r}"):
        Accelerator(bundle, lanes=lanes)
