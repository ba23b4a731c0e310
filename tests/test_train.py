"""Trainer: learns copy-first, resumes after an interruption, refuses bad recipes and checkpoints."""

import csv
from pathlib import Path

import pytest
import torch
import yaml

from codesign.data import CopyFirstDiscrete
from codesign.errors import CodesignError
from codesign.train import load_recipe, train
from codesign.train.recipe import parse_recipe
from codesign.train.trainer import LAST, load_checkpoint, load_run, lr_factor

RECIPE = {
    "name": "tiny",
    "seed": 0,
    "task": {"name": "copy_first", "classes": 4, "length": 12, "val_size": 128, "test_size": 128},
    "model": {"cell": "cmru", "hidden_size": 6, "eps": 1.0},
    "train": {
        "iterations": 40,
        "batch_size": 32,
        "eval_every": 10,
        "eval_batches": 2,
        "early_stop_evals": 50,
    },
}


def test_copy_first_task_shapes() -> None:
    task = CopyFirstDiscrete(classes=5, length=9)
    x, y = task.sample(7, torch.Generator().manual_seed(0))
    assert x.shape == (7, 9, 5) and torch.equal(x[:, 0].argmax(-1), y) and x[:, 1:].abs().sum() == 0
    xv, _ = task.split("val", 0)
    xv2, _ = task.split("val", 0)
    assert torch.equal(xv, xv2)


def test_lr_schedule_warmup_then_cosine() -> None:
    spec = parse_recipe(RECIPE).train.model_copy(update={"iterations": 1000, "warmup": 0.1})
    assert lr_factor(0, spec) == pytest.approx(0.01)
    assert lr_factor(99, spec) == pytest.approx(1.0)
    assert lr_factor(999, spec) == pytest.approx(spec.min_lr / spec.lr, rel=1e-2)


def test_train_learns_and_writes_artifacts(tmp_path: Path) -> None:
    recipe = parse_recipe(dict(RECIPE, train=dict(RECIPE["train"], iterations=300, lr=3e-3)))
    result = train(recipe, tmp_path / "run", progress=False)
    assert result.test_accuracy >= 0.9
    for name in ("recipe.yaml", "best.pt", "last.pt", "metrics.csv", "summary.json"):
        assert (tmp_path / "run" / name).is_file()


def test_resume_after_interruption(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    recipe = parse_recipe(RECIPE)
    calls = {"n": 0}
    real_sample = CopyFirstDiscrete.sample

    def flaky(self, n, generator):
        if n == 32:
            calls["n"] += 1
            if calls["n"] == 25:
                raise KeyboardInterrupt
        return real_sample(self, n, generator)

    monkeypatch.setattr(CopyFirstDiscrete, "sample", flaky)
    with pytest.raises(KeyboardInterrupt):
        train(recipe, tmp_path / "run", progress=False)
    assert load_checkpoint(tmp_path / "run" / LAST)["iteration"] == 20
    monkeypatch.setattr(CopyFirstDiscrete, "sample", real_sample)
    result = train(recipe, tmp_path / "run", progress=False)
    assert result.iterations == 40
    rows = list(csv.DictReader((tmp_path / "run" / "metrics.csv").open()))
    assert [int(r["iteration"]) for r in rows] == [10, 20, 30, 40]
    # same final weights as an uninterrupted run
    train(recipe, tmp_path / "straight", progress=False)
    a = load_checkpoint(tmp_path / "run" / LAST)["model"]
    b = load_checkpoint(tmp_path / "straight" / LAST)["model"]
    assert all(torch.equal(a[k], b[k]) for k in a)


def test_different_recipe_in_same_run_dir_refused(tmp_path: Path) -> None:
    train(
        parse_recipe(dict(RECIPE, train=dict(RECIPE["train"], iterations=10))),
        tmp_path / "run",
        progress=False,
    )
    with pytest.raises(CodesignError, match="different recipe"):
        train(parse_recipe(RECIPE), tmp_path / "run", progress=False)


def test_run_dir_written_before_a_schema_key_was_added_resumes(tmp_path: Path) -> None:
    """A recipe.yaml without keys added later (at their defaults) is the same recipe, not another."""
    recipe = parse_recipe(RECIPE)
    train(recipe, tmp_path / "run", progress=False)
    stored = tmp_path / "run" / "recipe.yaml"
    old = yaml.safe_load(stored.read_text())
    for key in ("drop", "readout_hidden", "readout_act"):
        del old["model"][key]
    stored.write_text(yaml.safe_dump(old, sort_keys=False))
    result = train(recipe, tmp_path / "run", progress=False)
    assert result.test == load_run(tmp_path / "run")[2]["test"]
    changed = parse_recipe(dict(RECIPE, seed=1))
    with pytest.raises(CodesignError, match="different recipe"):
        train(changed, tmp_path / "run", progress=False)


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda r: r["model"].update(hidden=3), r"unknown key 'model\.hidden'"),
        (lambda r: r["model"].update(eps=1.5), r"model\.eps: Input should be less than or equal to 1"),
        (
            lambda r: r["task"].update(name="imagenet"),
            r"unknown task 'imagenet'; known tasks: \[.*'copy_first'",
        ),
        (lambda r: r["model"].update(cell="bmru", eps=1.0), "cell 'bmru' requires eps 0"),
        (lambda r: r["train"].update(iterations="many"), r"train\.iterations"),
        (lambda r: r.pop("task"), "missing key 'task'"),
        (lambda r: r["model"].update(drop=["gate"]), r"model.drop \['gate'\] removes backbone elements"),
        (
            lambda r: r["model"].update(arch="backbone", drop=["skip"]),
            r"model.drop: \['skip'\] are not backbone elements",
        ),
        (lambda r: r["model"].update(arch="backbone", readout_hidden=8), "readout_hidden 8 is a hardware"),
        (
            lambda r: r["model"].update(layers=[{"cell": "mingru", "size": 4}], hidden_size=32),
            r"model.hidden_size 32 is ignored when model.layers lists the layers \(the first layer has size 4\)",
        ),
        (
            lambda r: r["model"].update(layers=[{"cell": "mingru", "size": 6}], cell="bmru", eps=0.0),
            r"model.cell 'bmru' is ignored when model.layers",
        ),
        (
            lambda r: r["model"].update(layers=[{"cell": "cmru", "size": 6}], cell_options={"x": 1}),
            r"model.cell_options is ignored when model.layers",
        ),
    ],
)
def test_bad_recipes_name_the_key(tmp_path: Path, edit, message: str) -> None:
    data = yaml.safe_load(yaml.safe_dump(RECIPE))
    edit(data)
    path = tmp_path / "r.yaml"
    path.write_text(yaml.safe_dump(data))
    with pytest.raises(CodesignError, match=message):
        load_recipe(path)


def test_corrupt_and_mismatched_checkpoints(tmp_path: Path) -> None:
    train(
        parse_recipe(dict(RECIPE, train=dict(RECIPE["train"], iterations=10))),
        tmp_path / "run",
        progress=False,
    )
    (tmp_path / "run" / "best.pt").write_bytes(b"garbage")
    with pytest.raises(CodesignError, match="cannot load checkpoint"):
        load_run(tmp_path / "run")
    torch.save({"model": {"rnn.alpha": torch.ones(99)}}, tmp_path / "run" / "best.pt")
    with pytest.raises(CodesignError, match="does not match the recipe's model"):
        load_run(tmp_path / "run")


def test_default_recipe_is_valid() -> None:
    recipe = load_recipe(Path(__file__).parents[1] / "models" / "copy_first_cmru.yaml")
    assert recipe.model.cell == "cmru" and recipe.task.classes == 15


def test_eps_annealing_schedule() -> None:
    from codesign.train.models import annealed_eps

    assert annealed_eps(0, 1000) == 1.0 and annealed_eps(49, 1000) == 1.0
    assert annealed_eps(400, 1000) == pytest.approx(0.5)
    assert annealed_eps(750, 1000) == 0.0 and annealed_eps(999, 1000) == 0.0


def test_annealed_run_deploys_as_bmru(tmp_path: Path) -> None:
    """Checkpoints are only kept once eps reached 0, and the loaded model runs at eps = 0."""
    data = dict(RECIPE, train=dict(RECIPE["train"], iterations=80, eps_schedule="anneal"))
    result = train(parse_recipe(data), tmp_path / "run", progress=False)
    assert result.best_iteration >= 60
    _, model, _ = load_run(tmp_path / "run")
    assert model.rnn.eps == 0.0
    rows = list(csv.DictReader((tmp_path / "run" / "metrics.csv").open()))
    eps = [float(r["eps"]) for r in rows]
    assert eps == sorted(eps, reverse=True) and eps[0] > 0.5 and eps[-1] == 0.0


def test_backbone_hybrid_stack_trains(tmp_path: Path) -> None:
    data = dict(
        RECIPE,
        model={
            "arch": "backbone",
            "cell": "cmru",
            "cells": ["cmru", "bmru"],
            "blocks": 2,
            "dim": 16,
            "hidden_size": 4,
            "eps": 0.0,
        },
        train=dict(RECIPE["train"], iterations=20),
    )
    result = train(parse_recipe(data), tmp_path / "run", progress=False)
    assert 0.0 <= result.test <= 1.0
    _, model, _ = load_run(tmp_path / "run")
    assert type(model).__name__ == "Backbone"


@pytest.mark.parametrize(
    "drop", [[], ["gate"], ["enc_mlp", "pe", "norm", "gate", "mlp", "residual", "dec_mlp"]]
)
def test_backbone_ablation_removes_the_named_elements(tmp_path: Path, drop: list[str]) -> None:
    """``model.drop`` trains a backbone without the named elements (the issue-19 ladder)."""
    data = dict(
        RECIPE,
        model={"arch": "backbone", "cell": "cmru", "dim": 8, "hidden_size": 4, "drop": drop},
        train=dict(RECIPE["train"], iterations=10),
    )
    train(parse_recipe(data), tmp_path / "run", progress=False)
    _, model, _ = load_run(tmp_path / "run")
    names = {type(m).__name__ for m in model.modules()}
    assert ("LayerNorm" in names) == ("norm" not in drop)
    assert (model.blocks[0].sub.gate is None) == ("gate" in drop)
    assert (model.enc_mlp is None) == ("enc_mlp" in drop)
    assert (model.dec_mlp is None) == ("dec_mlp" in drop)
    assert len(model.blocks) == (1 if "mlp" in drop else 2)
    assert (model.blocks[0].scale is None) == ("residual" in drop)
    assert model.pe_dim == (0 if "pe" in drop else 16)


def test_hardware_readout_mlp_trains_and_is_refused_by_export(tmp_path: Path) -> None:
    from codesign.quant.export import export_run

    data = dict(
        RECIPE, model=dict(RECIPE["model"], readout_hidden=5), train=dict(RECIPE["train"], iterations=10)
    )
    train(parse_recipe(data), tmp_path / "run", progress=False)
    _, model, _ = load_run(tmp_path / "run")
    assert model.hidden.out_features == 5 and model.readout.in_features == 5
    with pytest.raises(CodesignError, match=r"hidden readout layer \(model.readout_hidden: 5\)"):
        export_run(tmp_path / "run", tmp_path / "bundle")


def test_unknown_task_option_named(tmp_path: Path) -> None:
    data = dict(RECIPE, task=dict(RECIPE["task"], lenght=5))
    with pytest.raises(CodesignError, match="unknown option 'lenght' for task 'copy_first'"):
        parse_recipe(data)
    data = dict(RECIPE, model={"cell": "gruu"})
    with pytest.raises(CodesignError, match="unknown cell 'gruu'"):
        parse_recipe(data)


def test_tiny_validation_set_neither_stops_early_nor_keeps_an_early_lucky_checkpoint(tmp_path: Path) -> None:
    """Regression: with 4 validation sequences the first evaluations read 100%; the run used
    to stop there and keep that checkpoint. Now it trains on, and among windows at 100% the one with
    the lowest validation loss (late in training) is kept, at its centre."""
    task = dict(RECIPE["task"], val_size=4)
    train_spec = dict(RECIPE["train"], iterations=200, lr=3e-3, early_stop_evals=2)
    result = train(parse_recipe(dict(RECIPE, task=task, train=train_spec)), tmp_path / "run", progress=False)
    assert result.iterations == 200 and result.stopped == "iterations"
    rows = list(csv.DictReader((tmp_path / "run" / "metrics.csv").open()))
    first_perfect = min(int(r["iteration"]) for r in rows if float(r["val_accuracy"]) == 1.0)
    assert result.best_iteration > first_perfect + 20 and result.best_iteration % 10 == 0
    assert load_checkpoint(tmp_path / "run" / "best.pt")["iteration"] == result.best_iteration
    # the single-best rule is still available
    best = dict(train_spec, selection="best", early_stop_min_val=1)
    old = train(parse_recipe(dict(RECIPE, task=task, train=best)), tmp_path / "old", progress=False)
    assert old.stopped.startswith("early stop") and old.iterations < 200


def test_window_criterion_prefers_accuracy_then_lower_loss() -> None:
    from codesign.train.trainer import window_criterion

    def w(*pairs):
        return [{"score": s, "loss": loss} for s, loss in pairs]

    assert window_criterion(w((1.0, 0.5), (1.0, 0.3))) < window_criterion(w((1.0, 0.2), (1.0, 0.2)))
    assert window_criterion(w((0.9, 0.1), (0.9, 0.1))) < window_criterion(w((1.0, 0.9), (0.9, 0.9)))


def test_input_noise_perturbs_only_non_silent_training_frames(tmp_path: Path, monkeypatch) -> None:
    import codesign.train.trainer as trainer

    seen = []
    real_build = trainer.build_model

    def recording_build(recipe, task):
        model = real_build(recipe, task)
        model.register_forward_pre_hook(lambda m, args: seen.append(args[0].clone()) if m.training else None)
        return model

    monkeypatch.setattr(trainer, "build_model", recording_build)
    data = dict(RECIPE, train=dict(RECIPE["train"], iterations=3, input_noise=0.5, label_smoothing=0.1))
    train(parse_recipe(data), tmp_path / "run", progress=False)
    x = seen[0]  # copy-first: a one-hot first step, silent after it
    assert (x[:, 1:] == 0).all() and (x[:, 0] != 0).all()
    assert not ((x[:, 0] == 0) | (x[:, 0] == 1)).all()  # the one-hot frame is noisy


def test_resume_from_a_last_checkpoint_written_before_windowed_selection(tmp_path: Path, monkeypatch) -> None:
    recipe = parse_recipe(RECIPE)
    real_sample = CopyFirstDiscrete.sample
    calls = {"n": 0}

    def flaky(self, n, generator):
        calls["n"] += 1
        if calls["n"] == 25:
            raise KeyboardInterrupt
        return real_sample(self, n, generator)

    monkeypatch.setattr(CopyFirstDiscrete, "sample", flaky)
    with pytest.raises(KeyboardInterrupt):
        train(recipe, tmp_path / "run", progress=False)
    monkeypatch.setattr(CopyFirstDiscrete, "sample", real_sample)
    state = load_checkpoint(tmp_path / "run" / LAST)
    state["best_score"] = 0.5  # the former format: one number, no window
    del state["window"]
    torch.save(state, tmp_path / "run" / LAST)
    assert train(recipe, tmp_path / "run", progress=False).iterations == 40


def test_set_on_a_stack_recipe_names_the_ignored_key() -> None:
    """``--set model.hidden_size=N`` on a recipe with ``layers`` did nothing; now it is refused."""
    path = Path(__file__).resolve().parents[1] / "models" / "classify_hw.yaml"
    load_recipe(path)  # the stack recipe itself is fine, and so is a value equal to its first layer
    load_recipe(path, ["model.hidden_size=16"])
    with pytest.raises(CodesignError, match="model.hidden_size 32 is ignored when model.layers"):
        load_recipe(path, ["model.hidden_size=32"])
