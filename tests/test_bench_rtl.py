"""``codesign bench rtl`` and the cycle model it shares with the testbench (codesign/verify/cycles.py)."""

from __future__ import annotations

import numpy as np

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
