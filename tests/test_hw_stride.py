"""The accelerator's input stride (``codesign/hw/stride.py``) against the golden model.

In Amaranth's simulator: random family bundles with a stride, a stride in front of a DCLS layer
and a selective layer, every target's memory mapping, the fault of the mutation check; the plan's
memory and counters; and under cocotb, one design with a stride in Icarus and in Verilator.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from codesign.bundle import Bundle
from codesign.bundle.io import check_weights
from codesign.bundle.random import (
    make_random_network_bundle,
    random_family_bundle,
    random_integer_inputs,
    random_network_manifest,
    random_network_weights,
)
from codesign.golden import run_golden
from codesign.hw.build import build_rtl, plan_summary
from codesign.hw.faults import FAULTS, faults_exposed_by
from codesign.hw.plan import plan_accelerator
from codesign.hw.pysim import simulate
from codesign.verify import run_sim


def check(bundle: Bundle, xs: list[np.ndarray], **options) -> dict:
    """Every layer's states and gates at every step, the logits and the counted work equal golden's."""
    result = simulate(bundle, xs, **options)
    macs = np.zeros(len(bundle.manifest.layers), dtype=np.int64)
    events = np.zeros_like(macs)
    for n, (x, got) in enumerate(zip(xs, result.sequences, strict=True)):
        exp = run_golden(bundle, x[None])
        for i, trace in enumerate(exp.layers):
            assert got.states[i].shape[0] == -(-len(x) // bundle.manifest.input.stride)
            np.testing.assert_array_equal(got.states[i], trace.states[0], err_msg=f"seq {n} layer {i}")
            if bundle.manifest.layers[i].selective is None:
                np.testing.assert_array_equal(got.gates[i], trace.gates[0], err_msg=f"seq {n} layer {i}")
            macs[i] += trace.macs.sum()
            events[i] += trace.events.sum()
        np.testing.assert_array_equal(got.logits, exp.logits[0], err_msg=f"seq {n} logits")
    c = result.counters
    for i in range(len(macs)):
        assert (c[f"layer{i}_macs"], c[f"layer{i}_events"]) == (macs[i], events[i]), f"layer {i}"
    assert c["sequences"] == len(xs)
    return c


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10**6), lanes=st.integers(1, 4), stalls=st.booleans(), runtime=st.booleans())
def test_random_family_bundles_with_a_stride_match_golden(seed, lanes, stalls, runtime) -> None:
    bundle = random_family_bundle(seed, stride=True)
    assert bundle.manifest.input.stride > 1
    lanes = min(lanes, max(layer.size for layer in bundle.manifest.layers))
    xs = random_integer_inputs(bundle, sequences=3, steps=(1, 19), seed=seed)
    check(bundle, xs, lanes=lanes, seed=seed if stalls else None, weights="runtime" if runtime else "baked")


def strided_bundle(stride: int, seed: int = 3) -> Bundle:
    layers = [
        {"cell": "cmru", "size": 5, "eps": 1, "state_bits": 5, "dcls": {"taps": 2, "span": 3}},
        {"cell": "mingru", "size": 4, "state_bits": 6, "gate_bits": 3, "selective": {"period": 2}},
    ]
    manifest = random_network_manifest(
        inputs=3, layers=layers, classes=3, input_bits=5, pooling="sum", seed=seed, input_stride=stride
    )
    return Bundle(manifest, check_weights(manifest, random_network_weights(manifest, seed)))


@pytest.mark.parametrize(
    ("target", "weights"), [("generic", "baked"), ("up5k", "frozen"), ("ecp5", "runtime")]
)
def test_stride_before_dcls_and_selective_layers_matches_golden(target: str, weights: str) -> None:
    """Partial last windows (lengths not multiples of S), all-zero windows, the format's extremes."""
    bundle = strided_bundle(4)
    xs = random_integer_inputs(bundle, sequences=3, steps=(5, 14), seed=7)
    xs[0][:4] = 0  # a window of empty frames: layer 0 still steps on its biases
    xs.append(np.full((9, 3), -16, dtype=np.int64))  # sums of the lowest code, floor of negatives
    xs.append(np.full((1, 3), 15, dtype=np.int64))  # one frame: a single partial window
    counters = check(bundle, xs, lanes=2, seed=5, target=target, weights=weights)
    frames_with_items = sum(int((x != 0).any(axis=1).sum()) for x in xs)
    assert counters["layer0_stride_sums_writes"] >= frames_with_items


def test_plan_declares_the_sums_memory_and_its_counters() -> None:
    plan = plan_accelerator(strided_bundle(8).manifest, 2)
    e = plan.layers[0]
    assert e.stride == 8 and e.stride_shift == 3
    sums = plan.memory("layer0_stride_sums")
    assert (sums.depth, sums.elements, sums.elem_bits) == (3, 1, 5 + 3)
    assert plan.counter_owners["layer0_stride_cycles"] == "layer0.stride"
    assert plan.counter_owners["layer0_stride_sums_reads"] == "layer0.stride"
    assert plan.shape_key()["manifest"]["input"]["stride"] == 8
    flat = plan_accelerator(strided_bundle(1).manifest, 2)
    assert "stride" not in flat.shape_key()["manifest"]["input"]  # keys of earlier builds unchanged
    assert not any("stride" in mem.name for mem in flat.memories)
    assert not any("stride" in name for name in flat.counters)
    assert plan_summary(plan)["engines"][0]["stride"] == 8  # build.json
    assert "stride" not in plan_summary(flat)["engines"][0]


def test_shortened_shift_is_exposed_and_caught() -> None:
    bundle = strided_bundle(2)
    assert "stride_shift_short" in faults_exposed_by(bundle.manifest)
    assert "stride_shift_short" not in faults_exposed_by(strided_bundle(1).manifest)
    assert "stalled_beat_lost" not in faults_exposed_by(bundle.manifest)  # inputs meet the stride first
    xs = random_integer_inputs(bundle, sequences=2, steps=(6, 8), seed=1)
    check(bundle, xs, lanes=2)
    with pytest.raises(AssertionError, match="layer 0"):
        check(bundle, xs, lanes=2, faults={"stride_shift_short"})
    assert FAULTS["stride_shift_short"].engines == "first"


@pytest.mark.sim
@pytest.mark.parametrize("sim", ["icarus", "verilator"])
def test_cocotb_with_a_stride_is_bit_exact(tmp_path, sim: str) -> None:
    layers = [{"cell": "bgmingru", "size": 4, "state_bits": 5}, {"cell": "cmru", "size": 3, "eps": -1}]
    bundle = make_random_network_bundle(
        str(tmp_path / "b"), seed=4, inputs=3, layers=layers, classes=3, input_bits=4, input_stride=4
    )
    build_rtl(bundle.path, tmp_path / "rtl", lanes=2, weights="runtime")
    report = run_sim(
        tmp_path / "rtl",
        sim=sim,
        vectors=6,
        seed=2,
        tests=("random_sequences", "reset_mid_sequence"),
        bundles=[bundle.path],
        timeout_s=900,
    )
    assert report.ok, report.summary_line()
    assert report.mismatches == 0 and report.sequences >= 6
    assert report.coverage["input stride"]["S>1"] >= 6
    assert report.coverage["input stride"]["partial last window"] >= 1


def test_cost_model_prices_the_stride_sums_and_adder() -> None:
    from codesign.hw.cost import features, get_device, predict

    device = get_device("up5k")
    plans = {s: plan_accelerator(strided_bundle(s).manifest, 2, target=device.target) for s in (1, 8)}
    bits = features(plans[8])["dcls"] - features(plans[1])["dcls"]
    # sum and shifted sum, pending item (value, channel, valid), channel and frame counters, FSM
    assert bits == 2 * (5 + 3) + (5 + 2 + 1) + 2 + 3 + 3
    assert predict(plans[8], device).logic_cells > predict(plans[1], device).logic_cells


def test_board_link_streams_frames_unchanged(tmp_path) -> None:
    """The UART bridge and the host send input frames as without a stride; results match golden."""
    from codesign.board.driver import Board
    from codesign.board.simboard import SimulatedBoard

    bundle = make_random_network_bundle(
        str(tmp_path / "b"),
        seed=6,
        inputs=3,
        layers=[{"cell": "cmru", "size": 3, "eps": 1}],
        classes=2,
        input_bits=4,
        input_stride=4,
    )
    build_rtl(bundle.path, tmp_path / "rtl", lanes=1, counters="none")
    rng = np.random.default_rng(3)
    x = rng.integers(-8, 8, size=(2, 9, 3)) * (rng.random((2, 9, 3)) < 0.5)
    golden = run_golden(bundle, x)
    with SimulatedBoard(tmp_path / "rtl", timeout=400, counters=False) as sim:
        with Board.open(tmp_path / "rtl", sim.port, timeout_s=60, drop_s=0.05) as board:
            results = board.run(list(x))
    assert sim.error is None
    for i, r in enumerate(results):
        assert r.logits.tolist() == golden.logits[i].tolist() and int(r.classes) == golden.classes[i]
