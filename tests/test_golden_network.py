"""Golden model, bundle format 2: every cell's rules by hand, events == dense, v1 bundles still load."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from codesign.bundle.io import Bundle, load_bundle
from codesign.bundle.random import random_integer_inputs, random_network_manifest, random_network_weights
from codesign.bundle.spec import FORMAT_VERSION, InputSpec, LayerSpec, Manifest, ReadoutSpec
from codesign.golden.model import dcls_front_end, run_golden, shift_floor


def one_neuron(cell: str, arrays: dict, *, readout=None, **layer) -> Bundle:
    manifest = Manifest(
        format_version=FORMAT_VERSION,
        name="t",
        input=InputSpec(size=1, bits=6, frac=0),
        layers=[LayerSpec(cell=cell, size=1, **layer)],
        readout=readout or ReadoutSpec(classes=2),
    )
    w = {f"layers.0.{k}": np.array(v, dtype=np.int64) for k, v in arrays.items()}
    w["readout.weight"] = np.array([[1], [-1]])
    w["readout.bias"] = np.array([0, 0])
    return Bundle(manifest, w)


def run(bundle: Bundle, xs: list[int]):
    return run_golden(bundle, np.array(xs, dtype=np.int64).reshape(1, -1, 1))


def test_shift_floor_rounds_down_and_left_shifts() -> None:
    assert shift_floor(np.array([7, -7, 8, -1]), 2).tolist() == [1, -2, 2, -1]
    assert shift_floor(np.array([3, -3]), -2).tolist() == [12, -12]


def test_bgmingru_copies_requantized_candidate_when_gate_open() -> None:
    # u = sat_6(floor(4x / 2)), gate open when x >= 0
    b = one_neuron(
        "bgmingru",
        {"w_cand": [[4]], "b_cand": [0], "cand_shift": [1], "w_gate": [[1]], "b_gate": [0]},
        state_bits=6,
    )
    assert run(b, [3, -5, 0, 31]).states[0, :, 0].tolist() == [6, 6, 0, 31]  # 62 saturates to 31


def test_mingru_hard_sigmoid_gate_and_floor() -> None:
    # gate_bits 2: z = clamp(x + 2, 0, 4) (quarters); u = 8x; h += floor(z (u - h) / 4)
    b = one_neuron(
        "mingru",
        {
            "w_cand": [[8]],
            "b_cand": [0],
            "cand_shift": [0],
            "w_gate": [[1]],
            "b_gate": [0],
            "gate_shift": [0],
        },
        gate_bits=2,
        state_bits=10,
    )
    res = run(b, [1, -1, -2, 2])
    # t0: z=3, u=8: 0 + floor(24/4)=6; t1: z=1, u=-8: 6 + floor(-14/4) = 6 - 4 = 2; t2: z=0: 2; t3: z=4, u=16: 16
    assert res.states[0, :, 0].tolist() == [6, 2, 2, 16]
    assert res.gates[0, :, 0].tolist() == [3, 1, 0, 4]


def test_hsru_leaks_spikes_and_toggles() -> None:
    # I = x; V <- V - floor(V/2) + I; spike when V >= 3; D toggles on spikes
    b = one_neuron(
        "hsru", {"w_in": [[1]], "b_in": [0], "in_shift": [0], "theta": [3]}, leak_shift=1, state_bits=8
    )
    res = run(b, [4, 0, 2, 0, 0])
    assert res.layers[0].potentials[0, :, 0].tolist() == [4, 2, 3, 2, 1]
    assert res.states[0, :, 0].tolist() == [1, 1, 0, 0, 0]


def test_alphacmru_requantizes_alpha() -> None:
    # alpha_t = sat_4(floor(3x / 2)); c = x, gate always (threshold 0), eps = 1
    b = one_neuron(
        "alphacmru",
        {
            "w_cand": [[1]],
            "b_cand": [0],
            "w_thr": [[0]],
            "b_thr": [0],
            "w_alpha": [[3]],
            "b_alpha": [0],
            "alpha_shift": [1],
        },
        eps=1,
        alpha_bits=4,
        state_bits=8,
    )
    # t0 x=2: alpha 3, +3; t1 x=-3: alpha floor(-9/2)=-5, sign(-3)=-1 -> +5; t2 x=9: alpha sat(13)=7 -> +7
    assert run(b, [2, -3, 9]).states[0, :, 0].tolist() == [3, 8, 15]


def test_sum_pooling_saturates_and_per_step_readout() -> None:
    cm = {"w_cand": [[1]], "b_cand": [0], "w_thr": [[0]], "b_thr": [1], "alpha": [5]}
    b = one_neuron("cmru", cm, eps=1, state_bits=8, readout=ReadoutSpec(classes=2, pooling="sum", sum_bits=5))
    res = run(b, [1, 0, 0, 0])  # states 5, 5, 5, 5 -> sum 20 then saturates at 15
    assert res.logits.tolist() == [[15, -15]]
    b = one_neuron("cmru", cm, eps=1, state_bits=8, readout=ReadoutSpec(classes=2, per_step=True))
    res = run(b, [1, -1, -1])
    assert res.logits[0].tolist() == [[5, -5], [0, 0], [-5, 5]] and res.classes[0].tolist() == [0, 0, 1]


def test_dcls_front_end_delays_per_channel() -> None:
    x = np.arange(1, 6).reshape(1, 5, 1)
    z = dcls_front_end(x, np.array([[1, 10]]), np.array([[0, 2]]))
    assert z[0, :, 0].tolist() == [1, 2, 3 + 10, 4 + 20, 5 + 30]


FAMILY = st.sampled_from(
    [
        {"cell": "cmru", "eps": 1},
        {"cell": "cmru", "eps": -1},
        {"cell": "bmru"},
        {"cell": "alphacmru", "eps": 1},
        {"cell": "bgmingru"},
        {"cell": "mingru", "gate_bits": 3},
        {"cell": "hsru", "leak_shift": 2},
    ]
)


@settings(max_examples=30, deadline=None)
@given(
    seed=st.integers(0, 2**31 - 1),
    kinds=st.lists(FAMILY, min_size=1, max_size=3),
    sizes=st.lists(st.integers(1, 9), min_size=3, max_size=3),
    inputs=st.integers(1, 5),
    state_bits=st.integers(4, 14),
    dcls=st.booleans(),
    pooling=st.sampled_from(["last", "sum"]),
    steps=st.integers(1, 60),
)
def test_events_equal_dense(seed, kinds, sizes, inputs, state_bits, dcls, pooling, steps) -> None:
    layers = [dict(k, size=sizes[i], state_bits=state_bits) for i, k in enumerate(kinds)]
    if dcls:
        layers[-1]["dcls"] = {"taps": 2, "span": 4}
    manifest = random_network_manifest(inputs=inputs, layers=layers, classes=3, pooling=pooling, seed=seed)
    bundle = Bundle(manifest, random_network_weights(manifest, seed))
    x = np.stack(random_integer_inputs(bundle, sequences=3, steps=steps, seed=seed))
    events, dense = run_golden(bundle, x, accumulate="events"), run_golden(bundle, x, accumulate="dense")
    for a, b in zip(events.layers, dense.layers, strict=True):
        assert np.array_equal(a.states, b.states) and np.array_equal(a.gates, b.gates)
    assert np.array_equal(events.logits, dense.logits)


def write_v1_bundle(path, manifest, weights) -> None:
    """A bundle exactly as format 1 wrote it (flat formats, spine array names)."""
    import io

    import yaml

    from codesign.bundle.io import sha256

    buf = io.BytesIO()
    np.savez(buf, **weights)
    path.mkdir()
    (path / "weights.npz").write_bytes(buf.getvalue())
    data = manifest.model_dump(mode="json") | {"checksums": {"weights.npz": sha256(buf.getvalue())}}
    (path / "manifest.yaml").write_text(yaml.safe_dump(data))


def test_version1_bundle_loads_and_runs_the_same(tmp_path) -> None:
    from codesign.bundle.random import random_manifest, random_weights

    manifest = random_manifest(d=7, inputs=3, classes=4, eps=-1, seed=5)
    weights = random_weights(manifest, 5)
    write_v1_bundle(tmp_path / "b", manifest, weights)
    bundle = load_bundle(tmp_path / "b")
    assert bundle.manifest.format_version == 2
    assert bundle.manifest.provenance["upgraded_from_format_version"] == 1
    assert np.array_equal(bundle.weights["layers.0.w_cand"], weights["w_cand"])
    assert np.array_equal(bundle.weights["readout.bias"], weights["b_out"])
    x = np.random.default_rng(0).integers(-128, 128, size=(4, 25, 3))
    res = run_golden(bundle, x)
    # the spine's rule, step by step, on the format-1 arrays
    h = np.zeros((4, 7), dtype=np.int64)
    for t in range(25):
        c = x[:, t] @ weights["w_cand"].T + weights["b_cand"]
        b = x[:, t] @ weights["w_thr"].T + weights["b_thr"]
        new = np.clip(-h + np.where(c >= 0, 1, -1) * weights["alpha"], -(2**15), 2**15 - 1)
        h = np.where(np.abs(c) >= np.abs(b), new, h)
    assert np.array_equal(res.states[:, -1], h)
    assert np.array_equal(res.logits, h @ weights["w_out"].T + weights["b_out"])


def test_other_versions_refused(tmp_path) -> None:
    import pytest
    import yaml

    from codesign.bundle.random import make_random_bundle
    from codesign.errors import CodesignError

    make_random_bundle(str(tmp_path / "b"), seed=1, d=2, inputs=2, classes=2)
    path = tmp_path / "b" / "manifest.yaml"
    path.write_text(yaml.safe_dump(yaml.safe_load(path.read_text()) | {"format_version": 7}))
    with pytest.raises(CodesignError, match="format version 7 found, this codesign reads versions 1, 2"):
        load_bundle(tmp_path / "b")
