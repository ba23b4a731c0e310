"""The random-feature accelerator (``codesign/hw/features.py``) against the golden model, bit for bit.

Amaranth's simulator runs small random banks (one and several channels, several dilations, more
units per pair than taps, counters driven into saturation, ragged sequences, random gaps and
back-pressure, ROM and SPRAM readout weights): every logit, class and unit count equals
:func:`codesign.golden.features.run_features_ragged`'s, and the cycles equal the cycle model. The
cocotb tests run a fitted bundle's Verilog under Icarus and Verilator.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest

from codesign.bundle.features import (
    KERNEL_COUNT,
    FeatureManifest,
    FeatureReadout,
    FeatureSpec,
    kernel_weights,
)
from codesign.bundle.io import FeatureBundle, check_feature_weights, save_feature_bundle
from codesign.bundle.spec import FORMAT_VERSION, InputSpec
from codesign.errors import CodesignError
from codesign.golden.features import run_features_ragged
from codesign.hw.features import MAX_RTL_CHANNELS, FeatureAccelerator, _kernel_table, feature_cycles
from codesign.hw.features_build import build_feature_rtl
from codesign.hw.features_sim import simulate_features

VERIFICATION = Path(__file__).resolve().parents[1] / "verification"


def _bundle(spec: FeatureSpec, rng: np.random.Generator, *, classes: int = 3, bits: int = 6, thr=(-40, 40)):
    manifest = FeatureManifest(
        format_version=FORMAT_VERSION,
        kind="features",
        name="hwtest",
        input=InputSpec(size=spec.channels, bits=bits),
        features=spec,
        readout=FeatureReadout(classes=classes),
    )
    mask = rng.integers(0, 2, (spec.pairs, spec.channels))
    mask[np.arange(spec.pairs), rng.integers(0, spec.channels, spec.pairs)] = 1
    weights = {
        "features.mask": mask,
        "features.threshold": rng.integers(thr[0], thr[1], spec.size),
        "features.alpha": rng.integers(0, 1 << spec.alpha_bits, spec.size),
        "readout.weight": rng.integers(-128, 128, (classes, spec.size)),
        "readout.bias": rng.integers(-1000, 1000, classes),
    }
    return FeatureBundle(manifest, check_feature_weights(manifest, weights))


def _sequences(rng, channels: int, lengths, bits: int = 6) -> list[np.ndarray]:
    lo, hi = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
    return [rng.integers(lo, hi + 1, (n, channels)) for n in lengths]


def _check(bundle: FeatureBundle, seqs, **kwargs):
    got = simulate_features(bundle, seqs, **kwargs)
    want = run_features_ragged(bundle, seqs)
    np.testing.assert_array_equal(np.stack(got.counts), want.counts)
    np.testing.assert_array_equal(got.logits, want.logits)
    np.testing.assert_array_equal(got.classes, want.classes)
    return got, want


CASES = {
    "one_channel": (FeatureSpec(channels=1, dilations=[1], kernels=3), None),
    "three_channels_three_dilations": (
        FeatureSpec(channels=3, dilations=[1, 2, 5], kernels=2, biases=2, alpha_bits=4, state_bits=12),
        7,
    ),
    "more_units_than_taps": (FeatureSpec(channels=2, dilations=[3], kernels=2, biases=11, alpha_bits=2), 3),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_rtl_equals_golden_on_ragged_sequences(case):
    spec, gaps = CASES[case]
    rng = np.random.default_rng(len(case))
    bundle = _bundle(spec, rng)
    # a one-frame sequence, sequences shorter and longer than the delay line's span
    seqs = _sequences(rng, spec.channels, [1, spec.span - 2, spec.span + 6, 4])
    got, _ = _check(bundle, seqs, gaps=gaps)
    if gaps is None:  # full rate: the cycle model, frame by frame and sequence by sequence
        cycles = feature_cycles(spec, 3)
        firsts = np.cumsum([0] + [len(s) for s in seqs[:-1]])
        for i, s in enumerate(seqs):
            assert got.finals[i] - got.accepts[firsts[i]] == cycles.sequence(len(s))
        frame_steps = {
            b - a
            for a, b in zip(got.accepts[1 : len(seqs[1])], got.accepts[2 : len(seqs[1]) + 1], strict=True)
        }
        assert frame_steps == {cycles.frame}


def test_counters_saturate_at_state_bits():
    """4-bit counts (at most 7) with increments up to 63 and low thresholds: most units saturate."""
    spec = FeatureSpec(channels=2, dilations=[1, 2], kernels=2, biases=2, alpha_bits=6, state_bits=4)
    rng = np.random.default_rng(5)
    bundle = _bundle(spec, rng, thr=(-200, -100))
    seqs = _sequences(rng, 2, [12, 3, 20])
    _, want = _check(bundle, seqs, gaps=11)
    assert (want.counts == 7).mean() > 0.5  # the test reaches the saturation it claims to check


def test_all_84_kernels_from_the_index_table():
    assert [sum(1 << i for i in range(9) if kernel_weights(k)[i] == 2) for k in range(KERNEL_COUNT)] == (
        _kernel_table(KERNEL_COUNT)
    )
    spec = FeatureSpec(channels=1, dilations=[2], kernels=KERNEL_COUNT, alpha_bits=2, state_bits=6)
    rng = np.random.default_rng(8)
    bundle = _bundle(spec, rng, classes=2, thr=(-30, 30))
    _check(bundle, _sequences(rng, 1, [4, 3]))


def test_spram_readout_weights_arrive_through_config():
    spec = FeatureSpec(channels=2, dilations=[1, 4], kernels=2, biases=2)
    rng = np.random.default_rng(9)
    bundle = _bundle(spec, rng, classes=4)
    _check(bundle, _sequences(rng, 2, [6, 2]), weights="spram", gaps=1)


def test_bad_options_get_one_clear_line():
    rng = np.random.default_rng(0)
    bundle = _bundle(FeatureSpec(channels=1, dilations=[1], kernels=1), rng)
    with pytest.raises(CodesignError, match="weights must be one of rom, spram, not 'ram'"):
        FeatureAccelerator(bundle, weights="ram")
    wide = _bundle(FeatureSpec(channels=MAX_RTL_CHANNELS + 1, dilations=[1], kernels=1), rng)
    with pytest.raises(CodesignError, match=f"features.channels {MAX_RTL_CHANNELS + 1}: .* at most"):
        FeatureAccelerator(wide)


def test_build_directory_and_spram_verilog(tmp_path):
    rng = np.random.default_rng(3)
    bundle = _bundle(FeatureSpec(channels=2, dilations=[1, 2], kernels=3), rng)
    save_feature_bundle(tmp_path / "b", bundle.manifest, bundle.weights)
    info = build_feature_rtl(tmp_path / "b", tmp_path / "rom")
    assert info["ports"]["inputs__payload"]["width"] == 2 * 6 + 1
    assert info["cycles"] == {"frame": 6 * 9 + 1 + 4, "readout": 3 * (6 + 4) - 1}
    assert set(info["results_payload"]) == {"logits[0]", "group", "final", "class_index", "seq_end"}
    assert (tmp_path / "rom" / "manifest.yaml").is_file()
    spram = build_feature_rtl(tmp_path / "b", tmp_path / "spram", weights="spram")
    text = (tmp_path / "spram" / "features.v").read_text()
    assert '(* ram_style = "huge" *)' in text and "config__payload" in spram["ports"]
    with pytest.raises(CodesignError, match="not a random-feature bundle"):
        build_feature_rtl(_a_recurrent_bundle(), tmp_path / "x")


def _a_recurrent_bundle() -> Path:
    root = Path(__file__).resolve().parents[1] / "models" / "bundles"
    return sorted(p for p in root.iterdir() if (p / "manifest.yaml").is_file())[0]


@pytest.fixture(scope="module")
def fitted_build(tmp_path_factory):
    """A bundle fitted on the toy set of tests/test_features.py (84 features, 2 classes), built."""
    from codesign.quant.features import fit_feature_bundle

    rng = np.random.default_rng(0)
    y = rng.integers(0, 2, 24)
    t = np.arange(30)
    xs = [
        np.stack(
            [np.sin(2 * np.pi * (0.05 if c == 0 else 0.2) * t + rng.uniform(0, 6)), rng.normal(size=30)], 1
        )
        for c in y
    ]
    bundle, _ = fit_feature_bundle(xs, y, classes=["slow", "fast"], name="toyfit", features=84, seed=1)
    root = tmp_path_factory.mktemp("features_sim")
    save_feature_bundle(root / "bundle", bundle.manifest, bundle.weights)
    build_feature_rtl(root / "bundle", root / "build")
    return root / "build"


@pytest.mark.sim
@pytest.mark.parametrize(
    "sim",
    # Verilator's compile takes about a minute here: make sim and the regression cover it
    ["icarus", pytest.param("verilator", marks=pytest.mark.long)],
)
def test_cocotb_fitted_bundle_bit_exact(fitted_build, sim):
    sys.path.insert(0, str(VERIFICATION))
    try:
        from features_regress import run_features_cocotb
    finally:
        sys.path.remove(str(VERIFICATION))
    res = run_features_cocotb(fitted_build, sim, sequences=3, seed=2, max_steps=12, timeout_s=300)
    assert res["mismatches"] == 0, res["first_mismatch"]
    assert res["sequences"] == 3 and res["sequence_cycles"] == res["model_cycles"]
    build = json.loads((fitted_build / "build.json").read_text())
    steps = [c - build["cycles"]["readout"] for c in res["model_cycles"]]
    assert all(s % build["cycles"]["frame"] == 0 for s in steps)


@pytest.fixture(scope="module")
def regress():
    """verification/features_regress.py as a module."""
    sys.path.insert(0, str(VERIFICATION))
    try:
        import features_regress

        yield features_regress
    finally:
        sys.path.remove(str(VERIFICATION))


def test_regression_banks_are_valid_and_a_passed_run_is_not_repeated(regress, tmp_path):
    modes = set()
    for seed in range(20):
        manifest, weights, mode = regress.random_feature_bundle(seed)
        save_feature_bundle(tmp_path / f"b{seed}", manifest, weights)  # validates every array
        modes.add(mode)
    assert modes == {"rom", "spram"}
    done = {"bank": 0, "seed": 5, "sim": "icarus", "ok": True, "sequences": 6}
    (tmp_path / "r" / "bank0").mkdir(parents=True)
    (tmp_path / "r" / "bank0" / "result_icarus.json").write_text(json.dumps(done))
    args = regress.argparse.Namespace(netlist=0, sequences=6, max_steps=24, timeout=60)
    rows = regress._bank(tmp_path / "r", 0, 5, ["icarus"], args)
    assert rows == [done | {"resumed": True}]
    assert not (tmp_path / "r" / "bank0" / "build").exists()  # nothing was built or simulated


@pytest.mark.sim
@pytest.mark.long
def test_up5k_netlist_of_a_spram_bank_is_bit_exact(regress, tmp_path):
    """yosys' UP5K mapping (EBR, SPRAM, DSP, LUTs) of a bank with SPRAM readout weights, under Icarus."""
    spec = FeatureSpec(channels=2, dilations=[1, 3], kernels=3, biases=2, alpha_bits=5, state_bits=8)
    bundle = _bundle(spec, np.random.default_rng(4), classes=3)
    save_feature_bundle(tmp_path / "b", bundle.manifest, bundle.weights)
    build_feature_rtl(tmp_path / "b", tmp_path / "rtl", weights="spram")
    netlist = regress.feature_netlist(tmp_path / "rtl", tmp_path / "netlist")
    assert "SB_SPRAM256KA" in (netlist / "features.v").read_text()
    res = regress.run_features_cocotb(netlist, "icarus", sequences=3, seed=4, max_steps=10, timeout_s=600)
    assert res["mismatches"] == 0, res["first_mismatch"]
    assert res["sequence_cycles"] == res["model_cycles"]
