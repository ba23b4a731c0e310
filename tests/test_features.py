"""Random-feature networks: kernel table, golden rules by hand, torch == golden, fit, bundle I/O."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from codesign.bundle.features import (
    KERNEL_COUNT,
    KERNEL_POSITIONS,
    FeatureManifest,
    FeatureSpec,
    kernel_weights,
)
from codesign.bundle.io import (
    FeatureBundle,
    check_feature_weights,
    load_any_bundle,
    load_bundle,
    save_feature_bundle,
)
from codesign.errors import CodesignError
from codesign.golden.features import feature_counts, run_features, run_features_ragged
from codesign.nn.features import FeatureBankModule
from codesign.quant.features import fit_feature_bundle, fold_alpha, quantize_series


def test_kernel_table_is_minirockets_84_zero_sum_kernels():
    assert KERNEL_COUNT == 84 and len(set(KERNEL_POSITIONS)) == 84
    for k in range(KERNEL_COUNT):
        w = kernel_weights(k)
        assert sorted(w.tolist()) == [-1] * 6 + [2] * 3 and w.sum() == 0


def _weights(spec: FeatureSpec, rng: np.random.Generator, classes: int = 3) -> dict[str, np.ndarray]:
    mask = rng.integers(0, 2, (spec.pairs, spec.channels))
    mask[np.arange(spec.pairs), rng.integers(0, spec.channels, spec.pairs)] = 1
    return {
        "features.mask": mask,
        "features.threshold": rng.integers(-40, 40, spec.size),
        "features.alpha": rng.integers(0, 1 << spec.alpha_bits, spec.size),
        "readout.weight": rng.integers(-128, 128, (classes, spec.size)),
        "readout.bias": rng.integers(-1000, 1000, classes),
    }


def test_one_unit_by_hand():
    """Kernel 0 (taps 0, 1, 2 weigh 2) at dilation 2 over one channel, threshold 3, alpha 5."""
    spec = FeatureSpec(channels=1, dilations=[2], kernels=1, alpha_bits=4, state_bits=8)
    x = np.array([1, 2, 0, -1, 3, 1, 0, 2, 5, -2, 1, 0, 4, 1, 2, 0, 3, 1], dtype=np.int64)
    w = kernel_weights(0)
    y = [
        sum(int(w[i]) * (int(x[t - 2 * i]) if t - 2 * i >= 0 else 0) for i in range(9)) for t in range(len(x))
    ]
    want = 5 * sum(v > 3 for v in y)
    weights = {
        "features.mask": np.ones((1, 1)),
        "features.threshold": np.array([3]),
        "features.alpha": np.array([5]),
    }
    assert feature_counts(spec, weights, x[None, :, None])[0, 0] == want
    small = spec.model_copy(update={"state_bits": 3})  # saturates at 3
    assert feature_counts(small, weights, x[None, :, None])[0, 0] == min(want, 3)


@settings(max_examples=25, deadline=None)
@given(
    channels=st.integers(1, 3),
    dilations=st.lists(st.integers(1, 5), min_size=1, max_size=3),
    kernels=st.integers(1, 12),
    biases=st.integers(1, 3),
    state_bits=st.integers(4, 20),
    steps=st.integers(1, 40),
    seed=st.integers(0, 2**31),
)
def test_torch_module_equals_golden(channels, dilations, kernels, biases, state_bits, steps, seed):
    rng = np.random.default_rng(seed)
    spec = FeatureSpec(
        channels=channels,
        dilations=dilations,
        kernels=kernels,
        biases=biases,
        alpha_bits=3,
        state_bits=state_bits,
    )
    weights = _weights(spec, rng)
    xq = rng.integers(-128, 128, (4, steps, channels))
    golden = feature_counts(spec, weights, xq)
    module = FeatureBankModule(spec, weights)
    x = torch.as_tensor(xq, dtype=torch.float64)
    assert np.array_equal(module.counts(x).numpy().astype(np.int64), golden)
    logits = golden @ weights["readout.weight"].T + weights["readout.bias"]
    assert np.array_equal(module(x).numpy().astype(np.int64), logits)


def _toy_set(rng: np.random.Generator, n: int, steps: int = 60) -> tuple[list[np.ndarray], np.ndarray]:
    """Two classes: a slow sine or a fast one, with noise and a random phase (2 channels)."""
    y = rng.integers(0, 2, n)
    t = np.arange(steps)
    xs = []
    for label in y:
        f = 0.05 if label == 0 else 0.2
        base = np.sin(2 * np.pi * f * t + rng.uniform(0, 2 * np.pi))
        xs.append(np.stack([base, rng.normal(size=steps)], axis=1) + 0.3 * rng.normal(size=(steps, 2)))
    return xs, y


def test_fit_save_load_and_every_model_agree(tmp_path):
    rng = np.random.default_rng(0)
    train, ytr = _toy_set(rng, 40)
    test, yte = _toy_set(rng, 40)
    bundle, bank = fit_feature_bundle(train, ytr, classes=["slow", "fast"], name="toy", features=168, seed=1)
    xq = np.stack(quantize_series(bundle.manifest.input, test))
    result = run_features(bundle, xq)
    assert (result.classes == yte).mean() >= 0.9
    float_acc = (bank.float_logits(list(xq)).argmax(1) == yte).mean()
    assert (result.classes == yte).mean() >= float_acc - 0.05
    saved = save_feature_bundle(tmp_path / "b", bundle.manifest, bundle.weights)
    loaded = load_any_bundle(tmp_path / "b")
    assert isinstance(loaded, FeatureBundle) and loaded.manifest == saved.manifest
    assert loaded.manifest.provenance["labels"] == ["slow", "fast"]
    assert np.array_equal(run_features(loaded, xq).logits, result.logits)
    module = FeatureBankModule(loaded.manifest.features, loaded.weights)
    assert np.array_equal(
        module(torch.as_tensor(xq, dtype=torch.float64)).numpy().astype(np.int64), result.logits
    )
    ragged = run_features_ragged(loaded, [xq[0][:30], xq[1]])
    assert np.array_equal(ragged.logits[1], result.logits[1])
    with pytest.raises(CodesignError, match="random-feature network"):
        load_bundle(tmp_path / "b")


def test_fold_alpha_equalises_readout_columns():
    rng = np.random.default_rng(3)
    coef = rng.normal(size=(4, 50)) * rng.uniform(0.01, 1, 50)
    std = rng.uniform(0.05, 20, 50)
    alpha = fold_alpha(coef, std, 8)
    peaks = np.abs(coef).max(axis=0) / (std * alpha)
    assert alpha.max() == 255 and alpha.min() >= 1
    unclipped = alpha > 1
    assert peaks[unclipped].max() / peaks[unclipped].min() < 1.5


def test_bad_arrays_are_named():
    spec = FeatureSpec(channels=2, dilations=[1], kernels=2)
    manifest = FeatureManifest.model_validate(
        {
            "format_version": 2,
            "kind": "features",
            "name": "t",
            "input": {"size": 2},
            "features": spec.model_dump(),
            "readout": {"classes": 3},
        }
    )
    weights = _weights(spec, np.random.default_rng(0))
    check_feature_weights(manifest, weights)
    with pytest.raises(CodesignError, match=r"'features.mask' holds 2, outside its allowed range \[0, 1\]"):
        check_feature_weights(manifest, dict(weights, **{"features.mask": weights["features.mask"] * 2}))
    with pytest.raises(CodesignError, match="'features.alpha' has shape"):
        check_feature_weights(manifest, dict(weights, **{"features.alpha": np.ones(3, np.int64)}))
    with pytest.raises(ValueError, match="features.channels 2 must equal input.size 3"):
        FeatureManifest.model_validate(
            {
                "format_version": 2,
                "kind": "features",
                "name": "t",
                "input": {"size": 3},
                "features": spec.model_dump(),
                "readout": {"classes": 3},
            }
        )


def _write_toy(path, n: int, seed: int) -> None:
    xs, y = _toy_set(np.random.default_rng(seed), n)
    np.savez(path, X=np.stack(xs), y=np.array(["slow", "fast"])[y])  # (n, t, c)


def test_features_fit_and_eval_commands(tmp_path):
    import json

    from typer.testing import CliRunner

    from codesign.cli import app

    _write_toy(tmp_path / "train.npz", 40, 0)
    _write_toy(tmp_path / "test.npz", 30, 1)
    out = tmp_path / "bank"
    args = ["features", "fit", str(tmp_path / "train.npz"), str(tmp_path / "test.npz"), "--out", str(out)]
    result = CliRunner().invoke(app, [*args, "--units", "168", "--json", str(tmp_path / "fit.json")])
    assert result.exit_code == 0, result.output
    assert "168 units, golden test accuracy" in result.output
    fitted = json.loads((tmp_path / "fit.json").read_text())
    assert fitted["test_accuracy"] >= 0.9 and fitted["reloaded_bundle_identical"]
    scored = CliRunner().invoke(
        app, ["features", "eval", str(out), str(tmp_path / "test.npz"), "--json", str(tmp_path / "e.json")]
    )
    assert scored.exit_code == 0, scored.output
    assert json.loads((tmp_path / "e.json").read_text())["accuracy"] == fitted["test_accuracy"]
    cost = CliRunner().invoke(app, ["features", "report", str(out), "--json", str(tmp_path / "c.json")])
    assert cost.exit_code == 0, cost.output
    figures = json.loads((tmp_path / "c.json").read_text())
    assert figures["fits"] and figures["units"] == 168 and 0 < figures["busy_fraction"] < 1
    assert (
        figures["energy_basis"] == "45 nm per-op proxy (dynamic only)"
        and figures["energy_per_inference_nj"] > 0
    )
    refused = CliRunner().invoke(app, ["inspect", str(out)])
    assert refused.exit_code != 0 and "random-feature network" in refused.output
    built = CliRunner().invoke(app, ["rtl", str(out), "--out", str(tmp_path / "build")])
    assert built.exit_code == 0, built.output
    assert "random-feature accelerator, 168 units" in built.output
    assert (tmp_path / "build" / "features.v").is_file()
    mapped = CliRunner().invoke(app, ["rtl", str(out), "--out", str(tmp_path / "b2"), "--device", "up5k"])
    assert (
        mapped.exit_code != 0
        and "--device: a random-feature bundle has no such mapping option" in mapped.output
    )
