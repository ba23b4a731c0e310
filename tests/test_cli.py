"""Command line: real runs of the subcommands and one-line errors with exit code 2 on bad input."""

import json
from pathlib import Path

import numpy as np
import pytest
import yaml
from typer.testing import CliRunner

from codesign.cli import app

runner = CliRunner()


def invoke(*args: str):
    return runner.invoke(app, [str(a) for a in args], catch_exceptions=False)


def test_random_bundle_golden_and_inspect(tmp_path: Path) -> None:
    res = invoke(
        "random-bundle",
        "--out",
        tmp_path / "b",
        "--seed",
        "4",
        "--d",
        "6",
        "--inputs",
        "3",
        "--classes",
        "4",
        "--eps",
        "-1",
        "--state-bits",
        "6",
    )
    assert res.exit_code == 0, res.output
    x = np.random.default_rng(0).normal(size=(5, 9, 3))
    np.save(tmp_path / "x.npy", x)
    for what, shape in [("classes", (5,)), ("logits", (5, 4)), ("states", (5, 9, 6))]:
        res = invoke(
            "golden",
            tmp_path / "b",
            "--inputs",
            tmp_path / "x.npy",
            "--out",
            tmp_path / f"{what}.npy",
            "--output",
            what,
        )
        assert res.exit_code == 0, res.output
        assert np.load(tmp_path / f"{what}.npy").shape == shape
    res = invoke("inspect", tmp_path / "b")
    assert res.exit_code == 0 and "memory bits" in res.output


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["train", "missing.yaml", "--out", "r"], "missing.yaml: recipe file not found"),
        (["export", "nowhere", "--out", "b"], "nowhere: not a run directory"),
        (["inspect", "nowhere"], "nowhere: bundle directory not found"),
        (["random-bundle", "--out", "b", "--cell", "lstm"], "--cell 'lstm': cells must be among cmru"),
        (["random-bundle", "--out", "b", "--dcls", "3"], "--dcls '3' is not TAPS,SPAN"),
        (["random-bundle", "--out", "b", "--state-bits", "40"], "state_bits"),
        (["random-bundle", "--out", "b", "--selective", "--period", "6"], "period must be a power of two"),
        (
            ["random-bundle", "--out", "b", "--selective", "--update-rate", "2"],
            "--update-rate 2.0 is outside",
        ),
        (["bench", "rtl", "--rates", "0.1,x"], "--rates '0.1,x' is not a comma-separated list"),
        (["sweep", "nowhere", "--qat-lr", "0"], "--qat-lr 0.0: the learning rate must be > 0"),
        (["quantize", "nowhere", "--bits", "4", "--out", "q", "--lr", "-1"], "--lr -1.0: the learning rate"),
    ],
)
def test_errors_are_one_line_exit_2(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, args, message) -> None:
    monkeypatch.chdir(tmp_path)
    res = runner.invoke(app, args)
    assert res.exit_code == 2, res.output
    assert message in res.output
    assert res.output.strip().count("\n") <= 1  # one line (rich may wrap very long lines once)
    assert not (tmp_path / "b").exists()


def test_rtl_share_multipliers(tmp_path: Path) -> None:
    """``codesign rtl --share-multipliers``: the summary line names the cycles per slot; a bad
    value is a one-line error naming it, and no build is left."""
    assert invoke("random-bundle", "--out", tmp_path / "b", "--d", "4", "--inputs", "3").exit_code == 0
    res = invoke("rtl", tmp_path / "b", "--out", tmp_path / "r", "--lanes", "2", "--share-multipliers", "on")
    assert res.exit_code == 0, res.output
    assert (
        "1 multiplier(s) per lane, 2 cycles per slot" in res.output and "multipliers shared (1)" in res.output
    )
    res = invoke("rtl", tmp_path / "b", "--out", tmp_path / "x", "--share-multipliers", "x")
    assert res.exit_code == 2 and "--share-multipliers 'x' is not one of off, on, auto" in res.output
    assert not (tmp_path / "x").exists()


def test_rtl_share_updates(tmp_path: Path) -> None:
    """``codesign rtl --share-updates on``: build.json records one update unit per layer; the
    UP5K target folds by default (``--narrow`` left out) and ``--narrow off`` does not; a bad
    value is a one-line error naming it, and no build is left."""
    assert invoke("random-bundle", "--out", tmp_path / "b", "--d", "4", "--inputs", "3").exit_code == 0
    args = ("rtl", tmp_path / "b", "--lanes", "2", "--target", "up5k", "--share-multipliers", "on")
    res = invoke(*args, "--out", tmp_path / "r", "--share-updates", "on")
    assert res.exit_code == 0, res.output
    plan = json.loads((tmp_path / "r" / "build.json").read_text())["plan"]
    assert plan["share_updates"] == "on" and plan["engines"][0]["update_units"] == 1
    assert plan["narrow"] == "auto"
    res = invoke(*args, "--out", tmp_path / "o", "--narrow", "off")
    assert res.exit_code == 0, res.output
    plan = json.loads((tmp_path / "o" / "build.json").read_text())["plan"]
    assert plan["narrow"] == "off" and plan["engines"][0]["update_units"] == 2
    res = invoke(*args, "--out", tmp_path / "x", "--share-updates", "x")
    assert res.exit_code == 2 and "--share-updates 'x' is not one of off, on" in res.output
    assert not (tmp_path / "x").exists()


def test_random_bundle_selective(tmp_path: Path) -> None:
    res = invoke(
        "random-bundle", "--out", tmp_path / "b", "--cell", "cmru,hsru", "--d", "8",
        "--selective", "--period", "8", "--update-rate", "0.25",
    )  # fmt: skip
    assert res.exit_code == 0, res.output
    manifest = yaml.safe_load((tmp_path / "b" / "manifest.yaml").read_text())
    assert [layer["selective"] for layer in manifest["layers"]] == [{"period": 8}] * 2
    with np.load(tmp_path / "b" / "weights.npz") as w:
        assert w["layers.0.su_gate"].shape == (8, 8) and w["layers.1.su_gate"].mean() == 0.25
    res = invoke("inspect", tmp_path / "b")
    assert "selective update (period 8, 25.0% of neuron-steps open)" in res.output


def test_golden_bad_inputs(tmp_path: Path) -> None:
    invoke("random-bundle", "--out", tmp_path / "b", "--inputs", "3")
    np.save(tmp_path / "x.npy", np.zeros((2, 4, 5)))
    res = runner.invoke(
        app,
        [
            "golden",
            str(tmp_path / "b"),
            "--inputs",
            str(tmp_path / "x.npy"),
            "--out",
            str(tmp_path / "y.npy"),
        ],
    )
    assert res.exit_code == 2 and "x.npy" in res.output and "(sequences, steps, 3)" in res.output
    assert not (tmp_path / "y.npy").exists()
    np.save(tmp_path / "obj.npy", np.array([{"a": 1}], dtype=object), allow_pickle=True)
    res = runner.invoke(
        app,
        [
            "golden",
            str(tmp_path / "b"),
            "--inputs",
            str(tmp_path / "obj.npy"),
            "--out",
            str(tmp_path / "y.npy"),
        ],
    )
    assert res.exit_code == 2 and "without pickles" in res.output


def test_train_export_round_trip(tmp_path: Path) -> None:
    recipe = {
        "name": "cli",
        "task": {"name": "copy_first", "classes": 3, "length": 6, "val_size": 64, "test_size": 64},
        "model": {"hidden_size": 4},
        "train": {"iterations": 20, "batch_size": 16, "eval_every": 10, "eval_batches": 1},
    }
    (tmp_path / "r.yaml").write_text(yaml.safe_dump(recipe))
    res = invoke("train", tmp_path / "r.yaml", "--out", tmp_path / "run", "--quiet")
    assert res.exit_code == 0 and "test accuracy" in res.output
    # a long path (here: a deep folder) wrapped the line at 80 columns, splitting what scripts grep
    bundle = tmp_path / ("deep_" * 12) / "bundle"
    res = invoke("export", tmp_path / "run", "--out", bundle)
    assert res.exit_code == 0 and "torch vs golden mismatches 0/64" in res.output
    assert len(res.output.strip().splitlines()) == 1
    manifest = yaml.safe_load((bundle / "manifest.yaml").read_text())
    assert manifest["provenance"]["torch_vs_golden_mismatches"] == 0


def test_help_lists_commands_in_flow_panels() -> None:
    from codesign.cli import FLOW

    names = [info.name for info in app.registered_commands]
    placed = [name for group in FLOW.values() for name in group]
    assert set(names) <= set(placed)
    assert names == [n for n in placed if n in names]  # in the flow's order
    result = CliRunner().invoke(app, ["--help"], env={"COLUMNS": "120"})
    assert result.exit_code == 0
    assert result.output.index("Model") < result.output.index("Hardware") < result.output.index("Analysis")


def test_rtl_merge(tmp_path: Path) -> None:
    """``codesign rtl --merge auto`` on the ECP5: the CMRU layer's 8-bit parameters and 16-bit state
    share one physical word (one block RAM instead of two), which the command names and build.json records (parts, offsets); ``off`` (the
    default) records none; a bad value is a one-line error naming it, and no build is left."""
    assert invoke("random-bundle", "--out", tmp_path / "b", "--d", "4", "--inputs", "3").exit_code == 0
    args = ("rtl", tmp_path / "b", "--lanes", "1", "--target", "ecp5")
    res = invoke(*args, "--out", tmp_path / "r", "--merge", "auto")
    assert res.exit_code == 0, res.output
    assert "merged layer0_held (layer0_params + layer0_state: 4 x 24)" in res.output
    plan = json.loads((tmp_path / "r" / "build.json").read_text())["plan"]
    held = plan["physical"]["layer0_held"]
    assert plan["merge"] == "auto" and [p["offset"] for p in held["parts"]] == [0, held["parts"][0]["width"]]
    res = invoke(*args, "--out", tmp_path / "o")
    assert res.exit_code == 0, res.output
    plan = json.loads((tmp_path / "o" / "build.json").read_text())["plan"]
    assert plan["merge"] == "off" and plan["physical"] == {}
    res = invoke(*args, "--out", tmp_path / "x", "--merge", "x")
    assert res.exit_code == 2 and "--merge 'x' is not one of off, auto" in res.output
    assert not (tmp_path / "x").exists()
