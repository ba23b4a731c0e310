"""The Python API as users call it: ``codesign.export``, ``load``, ``map``, ``Build.simulate`` and
``Build.report``; golden == deployed torch, save/load round trips, the same bundle as the command
line's export, and one-line errors for bad input."""

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
import yaml

import codesign
from codesign.errors import CodesignError
from codesign.nn.hardware import HardwareStack

ROOT = Path(__file__).resolve().parents[1]


def tiny(seed: int = 0) -> tuple[HardwareStack, torch.Tensor, torch.Tensor]:
    torch.manual_seed(seed)
    model = HardwareStack(2, 3, [{"cell": "cmru", "size": 4, "eps": 0.0}])
    x = torch.randn(16, 12, 2)
    y = torch.randint(0, 3, (16,))
    return model, x, y


@pytest.mark.sim
def test_ten_lines_from_a_model_to_a_simulated_up5k_build_and_its_report(tmp_path: Path) -> None:
    """The issue's target: a model in memory to a bit-exact simulated UP5K build and its report."""
    model, x, y = tiny()
    # --- what a user writes (7 lines) ---
    bundle = codesign.export(model, x, check=(x, y), labels=["a", "b", "c"])
    build = codesign.map(bundle, device="up5k", step_rate=100, inputs=x[:2], out=tmp_path / "build")
    sim = build.simulate(x[:3], y[:3], sim="icarus")
    report = build.report(inputs=x[:2])
    table = sim.to_frame()
    sweep = report.to_frame()
    path = report.save(tmp_path / "report")
    # --- checks ---
    assert build.mapping["device"] == "up5k"
    assert build.mapping["cycle_inputs"].startswith("the caller's inputs")
    assert sim.bit_exact and sim.mismatches == 0 and sim.sequences == 3
    golden = bundle.golden(x[:3])
    assert list(table["rtl_class"]) == list(golden.classes) == list(table["golden_class"])
    assert np.array_equal(sim.logits, golden.logits)
    assert sim.cycles > 0 and len(sim.counters_frame()) == len(sim.counters)  # the mapper's counter set
    assert sim.accuracy == pytest.approx(float((golden.classes == y[:3].numpy()).mean()))
    assert report.figures["inputs"]["source"].startswith("the caller's inputs")
    assert report.energy["energy_uj_per_inference"] > 0
    assert list(sweep["lanes"]) == sorted(sweep["lanes"]) and 1 in list(sweep["lanes"])
    assert path.is_file() and (tmp_path / "report" / "pareto.png").is_file()
    assert build.bundle.labels == ["a", "b", "c"]


def test_export_checks_torch_against_golden_and_records_it() -> None:
    model, x, y = tiny()
    bundle = codesign.export(model, x, check=(x, y), name="mine")
    prov = bundle.provenance
    assert prov["torch_vs_golden_mismatches"] == 0 and prov["test_sequences"] == 16
    golden = bundle.golden(x)
    assert prov["quantized_test_accuracy"] == pytest.approx(float((golden.classes == y.numpy()).mean()))
    with torch.no_grad():
        float_acc = float((model(x).argmax(-1) == y).float().mean())
    assert prov["float_test_accuracy"] == pytest.approx(float_acc)
    assert np.array_equal(bundle.torch().integer_logits(x.double()), golden.logits)
    assert bundle.manifest.name == "mine" and bundle.path is None
    # integers are taken as quantized: the same logits
    assert np.array_equal(bundle.golden(bundle.integer_inputs(x)).logits, golden.logits)


def test_export_of_a_qat_model_leaves_it_training() -> None:
    model, x, y = tiny(1)
    codesign.prepare_qat(model, {"layer": {"weight_bits": 4}})
    before = model(x).detach().clone()
    bundle = codesign.export(model, x, check=(x, y))  # the formats prepare_qat was given
    assert bundle.manifest.layers[0].weight_bits == 4
    assert bundle.provenance["torch_vs_golden_mismatches"] == 0
    assert torch.equal(model(x), before)  # the user's model keeps its fake quantization
    assert np.abs(bundle.weights["layers.0.w_cand"]).max() <= 7
    assert codesign.export(model, x, formats={}).manifest.layers[0].weight_bits == 8  # unless given others
    two = {"layers": [{"weight_bits": 4}, {"weight_bits": 6}]}
    with pytest.raises(CodesignError, match="prepare_qat takes one layer format"):
        codesign.prepare_qat(tiny()[0], two)


def test_save_load_round_trip_keeps_labels_and_scaling(tmp_path: Path) -> None:
    model, x, _ = tiny()
    raw = x.numpy() * 3.0 + 5.0
    scaling = codesign.fit_scaling(raw)
    bundle = codesign.export(model, x, labels=["up", "down", "flat"], scaling=scaling)
    saved = bundle.save(tmp_path / "b")
    back = codesign.load(tmp_path / "b")
    assert saved.path == tmp_path / "b" and back.labels == ["up", "down", "flat"]
    assert back.scaling.mode == "channel" and back.scaling.mean == pytest.approx(scaling["mean"])
    assert all(np.array_equal(back.weights[k], bundle.weights[k]) for k in bundle.weights)
    manifest = yaml.safe_load((tmp_path / "b" / "manifest.yaml").read_text())
    assert manifest["provenance"]["labels"] == ["up", "down", "flat"]
    # prepare: the stored scaling, then the input grid; raw * 3 + 5 standardised is close to x
    prepared = back.prepare(raw)
    mean, std = np.asarray(scaling["mean"]), np.asarray(scaling["std"])
    assert np.array_equal(prepared, back.integer_inputs((raw - mean) / std))
    assert np.abs(prepared - back.integer_inputs(x)).max() <= 2
    assert list(back.class_names(back.golden(x[:2]).classes)) == [
        ["up", "down", "flat"][c] for c in back.golden(x[:2]).classes
    ]


def test_series_scaling_standardises_each_recording_on_its_own() -> None:
    model, x, _ = tiny()
    raw = x.numpy() * np.array([1.0, 100.0]) + np.arange(16)[:, None, None]  # offsets per recording
    bundle = codesign.export(model, x, scaling="series")
    own = (raw - raw.mean(axis=1, keepdims=True)) / raw.std(axis=1, keepdims=True)
    assert bundle.scaling.mode == "series"
    assert np.array_equal(bundle.prepare(raw), bundle.integer_inputs(own))


def test_old_bundles_load_without_labels_or_scaling() -> None:
    bundle = codesign.load(ROOT / "models" / "bundles" / "copy_first_cmru")
    assert bundle.labels is None and bundle.scaling is None
    with pytest.raises(CodesignError, match="stores no input scaling"):
        bundle.prepare(np.zeros((1, 3, bundle.manifest.input.size)))


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda m, x: codesign.export(torch.nn.Linear(2, 3), x), "a Linear is not deployable"),
        (
            lambda m, x: codesign.export(m, x[:, :, :1]),
            r"calibration: expected shape \(sequences, steps, 2\)",
        ),
        (lambda m, x: codesign.export(m, x, formats={"layer": {"wieght_bits": 4}}), "formats: unknown key"),
        (
            lambda m, x: codesign.export(m, x, formats={"layer": {"weight_bits": 40}}),
            "formats: layer.weight_bits",
        ),
        (
            lambda m, x: codesign.export(m, x, labels=["a", "b"]),
            "provenance.labels: lists 2 names for a readout of 3",
        ),
        (
            lambda m, x: codesign.export(m, x, scaling={"mode": "channel", "mean": [0, 0], "std": [1, 0]}),
            "provenance.input_scaling: every std must be a finite number > 0",
        ),
        (lambda m, x: codesign.export(m, x, scaling="zscore"), "provenance.input_scaling: mode"),
        (
            lambda m, x: codesign.export(m, x, check=(x, torch.zeros(3, dtype=torch.long))),
            "check labels: 3 labels",
        ),
        (lambda m, x: codesign.map(codesign.export(m, x), device="pdp11"), "pdp11"),
        (lambda m, x: codesign.load("/nonexistent/bundle"), "bundle directory not found"),
    ],
)
def test_bad_input_is_one_line(call, message: str) -> None:
    model, x, _ = tiny()
    with pytest.raises(CodesignError, match=message) as err:
        call(model, x)
    assert "\n" not in str(err.value)


def test_a_malformed_labels_key_is_refused_on_load(tmp_path: Path) -> None:
    model, x, _ = tiny()
    codesign.export(model, x).save(tmp_path / "b")
    path = tmp_path / "b" / "manifest.yaml"
    data = yaml.safe_load(path.read_text())
    data["provenance"]["labels"] = [1, 2, 3]
    path.write_text(yaml.safe_dump(data))
    with pytest.raises(
        CodesignError, match=r"manifest.yaml: provenance.labels: must be a list of non-empty strings"
    ):
        codesign.load(tmp_path / "b")


def test_same_bundle_through_the_api_and_the_command_line(tmp_path: Path) -> None:
    """A trained run exported by ``codesign export`` and by ``codesign.export`` on the same model and
    calibration: the same weights.npz byte for byte and the same manifest but for its provenance."""
    from typer.testing import CliRunner

    from codesign.cli import app
    from codesign.train import train
    from codesign.train.recipe import parse_recipe
    from codesign.train.trainer import load_run, make_recipe_task

    recipe = {
        "name": "same",
        "task": {"name": "copy_first", "classes": 3, "length": 6, "val_size": 32, "test_size": 32},
        "model": {"arch": "hardware", "cell": "cmru", "hidden_size": 4, "eps": 1.0},
        "train": {"iterations": 10, "batch_size": 16, "eval_every": 10, "eval_batches": 1},
        "quant": {"input": {"bits": 6, "frac": 2}, "layer": {"weight_bits": 6}},
    }
    train(parse_recipe(recipe), tmp_path / "run", progress=False)
    res = CliRunner().invoke(app, ["export", str(tmp_path / "run"), "--out", str(tmp_path / "cli")])
    assert res.exit_code == 0, res.output
    r, model, _ = load_run(tmp_path / "run")
    calibration, _ = make_recipe_task(r).sample(
        r.quant.calibration_sequences, torch.Generator().manual_seed(r.seed + 7)
    )
    codesign.export(model, calibration, formats=r.quant.model_dump(), name=r.name).save(tmp_path / "api")
    assert (tmp_path / "api" / "weights.npz").read_bytes() == (tmp_path / "cli" / "weights.npz").read_bytes()
    api, cli = (yaml.safe_load((tmp_path / d / "manifest.yaml").read_text()) for d in ("api", "cli"))
    assert api.pop("provenance")["source"] == "codesign.export" and cli.pop("provenance")["recipe"] == "same"
    assert api == cli


def test_import_codesign_stays_cheap() -> None:
    code = "import sys, codesign; print('torch' in sys.modules, 'codesign.api' in sys.modules)"
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    assert out.stdout.split() == ["False", "False"]
    assert codesign.export is codesign.api.export and "export" in dir(codesign)  # imported on first use
    with pytest.raises(AttributeError, match="no attribute 'exprot'"):
        codesign.exprot  # noqa: B018


def test_missing_extra_names_what_to_install() -> None:
    from codesign.extras import MissingExtra, require

    with pytest.raises(MissingExtra, match=r"needs the package no_such_pkg.*pip install 'codesign\[sim\]'"):
        require("no_such_pkg", "RTL simulation", extra="sim")
    assert require("numpy", "arrays").__name__ == "numpy"


def test_rtl_inputs_on_the_command_line_map_as_the_api_does(tmp_path: Path) -> None:
    """``codesign rtl --device up5k --inputs X.npy`` times the candidates on the user's inputs and
    picks what ``codesign.map`` picks on the same inputs; without ``--device`` it is refused."""
    from typer.testing import CliRunner

    from codesign.cli import app

    model, x, _ = tiny()
    bundle = codesign.export(model, x).save(tmp_path / "b")
    np.save(tmp_path / "x.npy", x[:2].numpy())
    args = ["rtl", str(tmp_path / "b"), "--out", str(tmp_path / "cli"), "--device", "up5k"]
    res = CliRunner().invoke(app, [*args, "--inputs", str(tmp_path / "x.npy")])
    assert res.exit_code == 0, res.output
    api = codesign.map(bundle, device="up5k", step_rate=None, inputs=x[:2], out=tmp_path / "api")
    cli = codesign.Build(tmp_path / "cli")
    assert cli.mapping["cycle_inputs"].startswith("the caller's inputs") and cli.mapping == api.mapping
    res = CliRunner().invoke(
        app, ["rtl", str(tmp_path / "b"), "--out", str(tmp_path / "o"), "--inputs", "x.npy"]
    )
    assert res.exit_code == 2 and "--inputs choose among builds for a chip: give --device too" in res.output
    np.save(tmp_path / "bad.npy", x[:2, :, :1].numpy())
    res = CliRunner().invoke(app, [*args, "--inputs", str(tmp_path / "bad.npy")])
    assert res.exit_code == 2 and "bad.npy: --inputs: expected shape (sequences, steps, 2)" in res.output


def test_a_random_feature_bundle_loads_but_does_not_map(tmp_path: Path) -> None:
    from codesign.bundle.io import FeatureBundle, save_feature_bundle
    from codesign.quant.features import fit_feature_bundle

    rng = np.random.default_rng(0)
    xs = [rng.normal(size=(30, 2)) for _ in range(8)]
    bundle, _ = fit_feature_bundle(xs, np.arange(8) % 2, classes=["a", "b"], name="rf", features=168, seed=1)
    save_feature_bundle(tmp_path / "rf", bundle.manifest, bundle.weights)
    loaded = codesign.load(tmp_path / "rf")
    assert isinstance(loaded, FeatureBundle) and loaded.manifest.provenance["labels"] == ["a", "b"]
    with pytest.raises(
        CodesignError, match="random-feature network .* codesign.map and Build take recurrent"
    ):
        codesign.map(tmp_path / "rf")
