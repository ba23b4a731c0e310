"""Reproduction machinery: tables with mean [min; max] over seeds, runs reused on a second call."""

import json
from pathlib import Path

import pytest
from rich.console import Console

from codesign import repro
from codesign.errors import CodesignError
from codesign.train.models import build_model
from codesign.train.recipe import build_task, parse_recipe


def test_every_claim_builds() -> None:
    for claim in repro.claims().values():
        for variant in claim.variants:
            recipe = parse_recipe(variant.recipe | {"seed": 0})
            task = build_task(recipe.task.name, recipe.task.options())
            build_model(recipe, task)
            for overrides in claim.columns.values():
                for key in overrides:
                    assert hasattr(task, key)


def test_tiny_claim_writes_table_and_reuses_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    tiny = repro.Claim(
        "tiny",
        "Tiny parity",
        "none",
        "everything",
        [
            repro.Variant(
                "CMRU eps=-1",
                repro._recipe(
                    "t",
                    {
                        "name": "parity",
                        "train_min_length": 4,
                        "train_max_length": 8,
                        "test_min_length": 4,
                        "test_max_length": 8,
                        "val_size": 32,
                        "test_size": 32,
                    },
                    repro._backbone("cmru", 1, eps=-1.0),
                    {"iterations": 10, "eval_every": 5, "batch_size": 16},
                ),
                "100",
            )
        ],
        columns={
            "L=8": {"test_min_length": 8, "test_max_length": 8},
            "L=12": {"test_min_length": 12, "test_max_length": 12},
        },
    )
    monkeypatch.setattr(repro, "claims", lambda: {"tiny": tiny})
    console = Console(file=open("/dev/null", "w"))  # noqa: SIM115
    (path,) = repro.run_repro(
        ["tiny"], seeds=[0, 1], runs_root=tmp_path / "runs", out_dir=tmp_path, console=console
    )
    text = path.read_text()
    assert "| CMRU eps=-1 | 100 |" in text and "ours, L=12" in text and "seeds [0, 1]" in text
    mtime = (tmp_path / "runs" / "tiny" / "CMRU_eps-1" / "seed0" / "best.pt").stat().st_mtime
    repro.run_repro(["tiny"], seeds=[0, 1], runs_root=tmp_path / "runs", out_dir=tmp_path, console=console)
    assert (tmp_path / "runs" / "tiny" / "CMRU_eps-1" / "seed0" / "best.pt").stat().st_mtime == mtime

    # an edited claim must not be scored with the runs of its old recipe
    tiny.variants[0].recipe["train"]["iterations"] = 5
    repro.run_repro(["tiny"], seeds=[0], runs_root=tmp_path / "runs", out_dir=tmp_path, console=console)
    run = tmp_path / "runs" / "tiny" / "CMRU_eps-1" / "seed0"
    assert "iterations: 5" in (run / "recipe.yaml").read_text()
    assert json.loads((run / "summary.json").read_text())["iterations"] == 5
    assert (run.parent / "seed0.stale" / "best.pt").is_file()


def test_unknown_claim_refused(tmp_path: Path) -> None:
    with pytest.raises(CodesignError, match="unknown claim"):
        repro.run_repro(["nope"], seeds=[0], runs_root=tmp_path, out_dir=tmp_path, console=Console())


def test_stats_format() -> None:
    assert repro.fmt_stats([1.0, 0.5], 100.0) == "75.00 [50.00; 100.00]"
    assert repro.fmt_stats([0.01, 0.03], 1.0) == "0.0200 [0.0100; 0.0300]"


def test_a_deployed_claim_scores_the_golden_model(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Hardware claims report what the hardware computes: the golden accuracy of the run's bundle."""
    from codesign.quant.export import bundle_from_model, golden_accuracy
    from codesign.train.trainer import load_run, make_recipe_task

    recipe = repro._recipe(
        "d",
        {"name": "copy_first", "length": 6, "val_size": 32, "test_size": 64},
        {"arch": "hardware", "cell": "cmru", "hidden_size": 2, "eps": 1.0},
        {"iterations": 6, "eval_every": 3, "batch_size": 16},
    )
    claim = repro.Claim(
        "dep", "Deployed", "none", "everything", [repro.Variant("CMRU", recipe)],
        columns={"L=6": {}}, deployed=True,
    )  # fmt: skip
    monkeypatch.setattr(repro, "claims", lambda: {"dep": claim})
    console = Console(file=open("/dev/null", "w"))  # noqa: SIM115
    (path,) = repro.run_repro(
        ["dep"], seeds=[0], runs_root=tmp_path / "runs", out_dir=tmp_path, console=console
    )
    rec, model, _ = load_run(tmp_path / "runs" / "dep" / "CMRU" / "seed0")
    task = make_recipe_task(rec)
    x, y = task.split("test", 0)
    golden = golden_accuracy(bundle_from_model(model, rec, task), task, x, y)[0]
    text = path.read_text()
    assert "of the golden integer model" in text
    assert f"| CMRU |  | {100 * golden:.2f} [{100 * golden:.2f}; {100 * golden:.2f}] |" in text


def test_copy_first_d4_recipe_is_the_claims_16_bit_network() -> None:
    """models/copy_first_cmru_d4_hw.yaml quotes the copy_first_deployed table: it must be that network."""
    import yaml

    from codesign.train.recipe import parse_recipe

    path = Path(__file__).resolve().parents[1] / "models" / "copy_first_cmru_d4_hw.yaml"
    ours = parse_recipe(yaml.safe_load(path.read_text())).model_dump(exclude={"name"})
    (variant,) = [v for v in repro.claims()["copy_first_deployed"].variants if "16-bit" in v.label]
    assert ours == parse_recipe(dict(variant.recipe, seed=0)).model_dump(exclude={"name"})


def test_a_qat_variant_scores_its_fine_tuned_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``Variant.qat``: the golden accuracy of the QAT fine-tuning of each float run, reused on a re-run."""
    from codesign.quant.export import bundle_from_model, golden_accuracy
    from codesign.train.trainer import load_run, make_recipe_task

    recipe = repro._recipe(
        "d",
        {"name": "copy_first", "length": 6, "val_size": 32, "test_size": 64},
        {"arch": "hardware", "cell": "cmru", "hidden_size": 2, "eps": 1.0},
        {"iterations": 6, "eval_every": 3, "batch_size": 16},
    )
    claim = repro.Claim(
        "qat", "QAT", "none", "everything", [repro.Variant("CMRU q4", recipe, qat=(4, 6, 1e-3))],
        columns={"L=6": {}}, deployed=True,
    )  # fmt: skip
    monkeypatch.setattr(repro, "claims", lambda: {"qat": claim})
    console = Console(file=open("/dev/null", "w"))  # noqa: SIM115
    (path,) = repro.run_repro(
        ["qat"], seeds=[0], runs_root=tmp_path / "runs", out_dir=tmp_path, console=console
    )
    tuned = tmp_path / "runs" / "qat" / "CMRU_q4" / "seed0-qat4"
    rec, model, _ = load_run(tuned)
    assert rec.train.qat_bits == 4 and rec.quant.layer.weight_bits == 4
    assert rec.train.init_from == str(tuned.with_name("seed0"))
    task = make_recipe_task(rec)
    x, y = task.split("test", 0)
    golden = golden_accuracy(bundle_from_model(model, rec, task), task, x, y)[0]
    assert f"| CMRU q4 |  | {100 * golden:.2f} [{100 * golden:.2f}; {100 * golden:.2f}] |" in path.read_text()
    mtime = (tuned / "best.pt").stat().st_mtime_ns
    repro.run_repro(["qat"], seeds=[0], runs_root=tmp_path / "runs", out_dir=tmp_path, console=console)
    assert (tuned / "best.pt").stat().st_mtime_ns == mtime
