"""Real data shipped in packages: UEA/UCR sets from aeon, MNIST-1D's generator, sklearn digits."""

from __future__ import annotations

import dataclasses
import random

import numpy as np
import pytest
import torch

from codesign.data.base import Task
from codesign.data.mnist_1d import MNIST1D
from codesign.data.sklearn_digits import SklearnDigits
from codesign.data.uea import UEADataset, available
from codesign.errors import CodesignError
from codesign.train.recipe import build_task


def test_uea_unknown_name_lists_available_sets():
    names = available()
    assert {"JapaneseVowels", "GunPoint", "BasicMotions", "ArrowHead"} <= set(names)
    with pytest.raises(CodesignError, match="does not ship") as err:
        UEADataset(dataset="NoSuchSet")
    assert "JapaneseVowels" in str(err.value) and "GunPoint" in str(err.value)
    with pytest.raises(CodesignError, match="NoSuchSet"):
        build_task("uea", {"dataset": "NoSuchSet"})


def test_uea_japanese_vowels_variable_length_front_padding():
    task = UEADataset(dataset="JapaneseVowels")
    assert isinstance(task, Task)
    assert task.input_size == 12 and task.output_size == 9 and task.length == 29
    assert task.classes == [str(i) for i in range(1, 10)]
    xtr, ytr = task.split("train", 0)
    xv, yv = task.split("val", 0)
    xt, yt = task.split("test", 0)
    assert len(xtr) + len(xv) == 270 and len(xt) == 370 and xt.shape[1:] == (29, 12)
    assert sorted(torch.bincount(yv).tolist()) == [3] * 9  # stratified 10% of 30 per speaker
    lengths = task.lengths("test")
    assert lengths.min() >= 7 and lengths.max() == 29
    for i in range(0, len(xt), 37):  # padding in front, real frames at the end
        pad = 29 - int(lengths[i])
        assert (xt[i, :pad] == 0).all() and (xt[i, pad:].abs().sum(1) > 0).all()
    frames = xtr.reshape(-1, 12)[xtr.reshape(-1, 12).abs().sum(1) > 0]
    assert frames.mean(0).abs().max() < 0.05 and (frames.std(0) - 1).abs().max() < 0.05
    x, y = task.sample(7, torch.Generator().manual_seed(0))
    assert x.shape == (7, 29, 12) and y.dtype == torch.int64
    assert torch.equal(x, task.sample(7, torch.Generator().manual_seed(0))[0])
    back = UEADataset(dataset="JapaneseVowels", padding="back").split("test", 0)[0]
    assert (back[0, int(lengths[0]) :] == 0).all()


def test_uea_univariate_equal_length():
    task = UEADataset(dataset="GunPoint")
    xt, yt = task.split("test", 0)
    assert xt.shape == (150, 150, 1) and task.output_size == 2 and set(yt.tolist()) == {0, 1}


def test_mnist1d_is_generated_not_downloaded(monkeypatch):
    import mnist1d.data

    def no_network(*args, **kwargs):
        raise AssertionError("mnist1d tried to download")

    monkeypatch.setattr(mnist1d.data.requests, "get", no_network)
    np_state, py_state = np.random.get_state()[1].copy(), random.getstate()
    task = MNIST1D(num_samples=500)
    x, y = task.split("train", 0)
    xv, yv = task.split("val", 0)
    xt, yt = task.split("test", 0)
    assert len(x) + len(xv) == 400 and len(xt) == 100
    assert x.shape[1:] == (40, 1) and task.output_size == 10 and set(yt.tolist()) <= set(range(10))
    assert np.array_equal(np.random.get_state()[1], np_state) and random.getstate() == py_state
    again = MNIST1D(num_samples=500, split_seed=0)
    assert again == task and torch.equal(again.split("test", 0)[0], xt)
    other = MNIST1D(num_samples=500, dataset_seed=7)
    assert not torch.equal(other.split("test", 0)[0], xt)


def test_sklearn_digits_rows_and_pixels():
    rows = SklearnDigits(steps="rows")
    x, y = rows.split("train", 0)
    xv, _ = rows.split("val", 0)
    xt, yt = rows.split("test", 0)
    assert len(x) + len(xv) + len(xt) == 1797 and x.shape[1:] == (8, 8)
    assert 0 <= x.min() and x.max() <= 1 and sorted(set(yt.tolist())) == list(range(10))
    px = SklearnDigits(steps="pixels")
    xp, yp = px.split("train", 0)
    assert xp.shape[1:] == (64, 1) and torch.equal(xp.reshape(-1, 8, 8), x) and torch.equal(yp, y)
    perm = SklearnDigits(steps="pixels", permute_seed=3).split("train", 0)[0]
    assert not torch.equal(perm, xp) and torch.equal(perm.sort(1).values, xp.sort(1).values)
    assert rows.sample(5, torch.Generator().manual_seed(0))[0].shape == (5, 8, 8)


def test_uea_recipe_dataset_option_selects_the_set():
    """Regression: ``task: {name: uea, dataset: X}`` used to be refused ('name' was shadowed)."""
    from codesign.data.registry import TASKS
    from codesign.train.recipe import parse_recipe
    from codesign.train.trainer import make_recipe_task

    def recipe(task: dict):
        return parse_recipe({"name": "r", "task": task, "model": {"pooling": "sum"}})

    task = make_recipe_task(recipe({"name": "uea", "dataset": "GunPoint"}))
    assert task.dataset == "GunPoint" and task.input_size == 1 and task.output_size == 2
    assert make_recipe_task(recipe({"name": "uea"})).dataset == "JapaneseVowels"  # old recipes
    with pytest.raises(
        CodesignError, match="does not ship a UEA/UCR classification set named 'Nope'.*GunPoint"
    ):
        recipe({"name": "uea", "dataset": "Nope"})
    with pytest.raises(CodesignError, match="unknown option 'datset'") as err:
        recipe({"name": "uea", "datset": "GunPoint"})
    assert "'dataset'" in str(err.value) and "'name'" not in str(err.value.args[0].split("options:")[1])
    for name, cls in TASKS.items():  # no task option can hide behind the task's own name
        assert "name" not in {f.name for f in dataclasses.fields(cls)}, name


def test_uea_small_sets_get_a_usable_validation_split_per_seed():
    """Regression: 10% of a 40-series file was 4 validation series; now at least ~min_val."""
    from codesign.train.recipe import parse_recipe
    from codesign.train.trainer import make_recipe_task

    old = UEADataset(dataset="BasicMotions", min_val=0)  # the former rule: 10%, one per class
    assert len(old.split("val", 0)[1]) == 4
    task = UEADataset(dataset="BasicMotions")
    xv, yv = task.split("val", 0)
    xtr, _ = task.split("train", 0)
    assert len(yv) == 12 and len(xtr) == 28 and sorted(torch.bincount(yv).tolist()) == [3] * 4
    jv = UEADataset(dataset="JapaneseVowels")  # large enough: unchanged
    assert len(jv.split("val", 0)[1]) == 27

    def run_task(seed: int):
        return make_recipe_task(
            parse_recipe(
                {
                    "name": "r",
                    "seed": seed,
                    "task": {"name": "uea", "dataset": "BasicMotions"},
                    "train": {"selection": "smoothed"},  # a selection that reads a carve-out
                }
            )
        )

    a, b = run_task(0), run_task(1)
    assert a.split_seed == 0 and b.split_seed == 1  # a null split_seed follows the run seed
    assert torch.equal(a.split("val", 0)[0], xv)  # seed 0 is the split the reference bundles used
    assert not torch.equal(a.split("val", 0)[0], b.split("val", 1)[0])
    assert torch.equal(a.split("test", 0)[1], b.split("test", 1)[1])  # the official test file


def test_every_shipped_classification_set_loads():
    for name in available():
        task = UEADataset(dataset=name)
        x, y = task.split("test", 0)
        xv, yv = task.split("val", 0)
        assert x.ndim == 3 and x.shape[2] == task.input_size and torch.isfinite(x).all(), name
        assert 0 <= int(y.min()) and int(y.max()) < task.output_size and len(yv) > 0, name


def test_uea_run_with_seed_1_exports_a_bundle_whose_provenance_rebuilds_its_data(tmp_path):
    """Regression: the provenance must name the split the run used (its normalisation statistics
    come from that training split), or the bundle's inputs cannot be rebuilt from it."""
    from codesign.bundle.io import load_bundle
    from codesign.quant.export import export_run, golden_accuracy
    from codesign.train import train
    from codesign.train.recipe import parse_recipe

    recipe = parse_recipe(
        {
            "name": "jv_tiny",
            "seed": 1,
            "task": {"name": "uea", "dataset": "JapaneseVowels"},
            "model": {"hidden_size": 4, "pooling": "sum"},
            "train": {"iterations": 20, "eval_every": 10, "batch_size": 16, "threads": 1},
        }
    )
    train(recipe, tmp_path / "run", progress=False)
    _, report = export_run(tmp_path / "run", tmp_path / "bundle")
    bundle = load_bundle(tmp_path / "bundle")
    options = dict(bundle.manifest.provenance["task"])
    assert options == report["task"] and options["split_seed"] == 1
    task = build_task(options.pop("name"), options)
    x, y = task.split("test", 1)
    assert golden_accuracy(bundle, task, x, y)[0] == report["quantized_test_accuracy"]
