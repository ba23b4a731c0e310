"""``codesign bench rtl`` and the cycle model it shares with the testbench (codesign/verify/cycles.py)."""

from __future__ import annotations

import numpy as np
import pytest

from codesign.bundle.random import make_random_network_bundle, random_integer_inputs
from codesign.golden import run_golden
from codesign.verify.bench import bench_bundle, floor_per_step
from codesign.verify.cycles import cycle_floor, target_per_step


def test_floor_counts_groups_times_items(tmp_path) -> None:
    bundle = make_random_network_bundle(
        str(tmp_path / "b"), seed=2, inputs=3, layers=[{"cell": "cmru", "size": 5, "eps": 1}], classes=2
    )
    x = np.array([[[1, 0, 2], [0, 0, 0], [3, 1, 1]]])
    gold = run_golden(bundle, x)
    # one layer of 5 neurons at P = 2: 3 groups; each walks the step's non-zero inputs (2, 0, 3)
    assert cycle_floor(bundle.manifest, gold, 2).tolist() == [[6, 0, 9]]
    assert floor_per_step(bundle, [x[0]], 2) == 5.0
    assert target_per_step(5.0, 1) == 13.5


def test_bench_row_is_consistent(tmp_path) -> None:
    bundle = make_random_network_bundle(
        str(tmp_path / "b"), seed=3, inputs=4, layers=[{"cell": "bmru", "size": 4}], classes=3
    )
    row = bench_bundle(bundle, 2, 1.0, sequences=2, steps=6, seed=0)
    xs = random_integer_inputs(bundle, sequences=2, steps=6, seed=0, density=1.0)
    assert row["floor_per_step"] == round(floor_per_step(bundle, xs, 2), 2)
    assert row["cycles_per_step"] >= row["floor_per_step"] > 0
    assert row["meets_target"] == (row["cycles_per_step"] <= row["target_per_step"])


def test_dense_dcls_bundle_meets_the_target_at_eight_lanes() -> None:
    """The flip-flop bundle's DCLS front end (5 channels, 2 taps) bounds its step at P >= 4: with
    one tap per cycle it took 19.7 cycles per step against a target of 12.9 at P = 8; its taps
    now go in parallel."""
    from pathlib import Path

    from codesign.bundle import load_bundle

    bundle = load_bundle(Path(__file__).resolve().parents[1] / "models/bundles/flip_flop_bgmingru_dcls")
    row = bench_bundle(bundle, 8, 1.0, sequences=2, steps=40, seed=0)
    assert row["meets_target"], row
    assert row["cycles_per_step"] < 14.0, row


def test_selective_floor_counts_visited_groups(tmp_path) -> None:
    """A selective layer of 4 groups (P = 2): at a step after the first, only the groups with an
    open lane cost slots; the first and the last step hold closed groups (one slot each)."""
    bundle = make_random_network_bundle(
        str(tmp_path / "b"),
        seed=2,
        inputs=3,
        layers=[{"cell": "cmru", "size": 8, "eps": 1, "selective": {"period": 2}}],
        classes=2,
    )
    weights = dict(bundle.weights)
    # phase 0: neurons 0-2 open (groups 0, 1); phase 1: nothing open
    weights["layers.0.su_gate"] = np.array([[1, 1, 1, 0, 0, 0, 0, 0], [0] * 8])
    from codesign.bundle.io import Bundle, check_weights

    bundle = Bundle(bundle.manifest, check_weights(bundle.manifest, weights))
    x = np.array([[[1, 0, 2], [1, 1, 1], [3, 1, 1], [0, 0, 5]]])
    gold = run_golden(bundle, x)
    tables = {0: weights["layers.0.su_gate"]}
    # t0: 2 open groups x 2 items + 2 held; t1: nothing open, last group held; t2: 2 x 3;
    # t3 (last step, phase 1: nothing open): every group held for the final vector
    assert cycle_floor(bundle.manifest, gold, 2, tables).tolist() == [[6, 1, 6, 4]]
    assert gold.layers[0].opens.tolist() == [[3, 0, 3, 0]]
    # period 2: a window of one step of two, the update rate 0.5
    row = bench_bundle(bundle, 2, 1.0, sequences=2, steps=8, seed=0, rate=0.5, shared=True)
    assert row["update_rate"] == 0.5
    assert row["open_steps_per_step"] == round(row["update_rate"] * 8, 2)
    assert row["open_floor_per_step"] <= row["floor_per_step"] <= row["cycles_per_step"]
    assert row["meets_open_target"] == (row["cycles_per_step"] <= row["open_target_per_step"])


def test_shared_multipliers_double_the_floor_and_meet_the_target(tmp_path) -> None:
    """One multiplier per lane over two matrices: a slot takes two cycles, so the floor counts
    ``passes = 2`` per slot; the simulated accelerator stays within 1.1 x floor + 8."""
    bundle = make_random_network_bundle(
        str(tmp_path / "b"), seed=4, inputs=5, layers=[{"cell": "cmru", "size": 8, "eps": 1}], classes=3
    )
    alone = bench_bundle(bundle, 4, 1.0, sequences=2, steps=12, seed=0)
    shared = bench_bundle(bundle, 4, 1.0, sequences=2, steps=12, seed=0, target="up5k", share="on")
    assert (alone["passes"], shared["passes"]) == ([1], [2])
    assert shared["floor_per_step"] == pytest.approx(2 * alone["floor_per_step"], abs=0.02)  # rounded
    assert shared["floor_per_step"] <= shared["cycles_per_step"] and shared["meets_target"], shared
    xs = random_integer_inputs(bundle, sequences=2, steps=12, seed=0, density=1.0)
    gold = run_golden(bundle, xs[0][None])
    np.testing.assert_array_equal(
        cycle_floor(bundle.manifest, gold, 4, passes=[2]), 2 * cycle_floor(bundle.manifest, gold, 4)
    )


def test_shared_update_unit_gap_is_in_the_floor(tmp_path) -> None:
    """One update unit serving P = 4 lanes: the issue stage waits P - 1 cycles after each group,
    which the floor counts (``gaps``: ``ceil(d / P) x (P - 1)`` per step more); the simulated
    accelerator stays within 1.1 x floor + 8."""
    bundle = make_random_network_bundle(
        str(tmp_path / "b"), seed=4, inputs=5, layers=[{"cell": "cmru", "size": 8, "eps": 1}], classes=3
    )
    alone = bench_bundle(bundle, 4, 1.0, sequences=2, steps=12, seed=0)
    shared = bench_bundle(bundle, 4, 1.0, sequences=2, steps=12, seed=0, share_updates="on")
    assert shared["floor_per_step"] == pytest.approx(alone["floor_per_step"] + 2 * 3, abs=0.02)
    assert shared["cycles_per_step"] > alone["cycles_per_step"]
    assert shared["floor_per_step"] <= shared["cycles_per_step"] and shared["meets_target"], shared
    xs = random_integer_inputs(bundle, sequences=2, steps=12, seed=0, density=1.0)
    gold = run_golden(bundle, xs[0][None])
    np.testing.assert_array_equal(
        cycle_floor(bundle.manifest, gold, 4, gaps=[3]), cycle_floor(bundle.manifest, gold, 4) + 2 * 3
    )
