"""Series tasks (uea, files) get the small-data defaults where a recipe is silent, and only there."""

from pathlib import Path

from codesign.train.defaults import SERIES_DEFAULTS
from codesign.train.recipe import parse_recipe
from codesign.train.trainer import holds_recipe, recipe_text

MINIMAL = {
    "name": "minimal",
    "task": {"name": "uea", "dataset": "GunPoint"},
    "model": {"arch": "hardware", "cell": "cmru", "hidden_size": 16},
}


def test_a_minimal_series_recipe_gets_the_series_defaults() -> None:
    recipe = parse_recipe(MINIMAL)
    expected = SERIES_DEFAULTS["train"]
    assert recipe.train.iterations == expected["iterations"] and recipe.train.lr == expected["lr"]
    assert recipe.train.selection == "average" and recipe.train.qat_bits == 8
    assert recipe.train.augment.active and recipe.train.label_smoothing == expected["label_smoothing"]
    assert recipe.task.options()["val_fraction"] == 0.0 and recipe.quant.input.frac == 5
    assert recipe.model.cell == "cmru" and recipe.model.hidden_size == 16 and recipe.model.layers is None


def test_what_a_recipe_writes_wins_null_and_false_included() -> None:
    data = dict(MINIMAL, train={"qat_bits": None, "augment": False, "lr": 3e-3})
    recipe = parse_recipe(data)
    assert recipe.train.qat_bits is None and not recipe.train.augment.active and recipe.train.lr == 3e-3
    assert recipe.train.iterations == SERIES_DEFAULTS["train"]["iterations"]
    partial = parse_recipe(dict(MINIMAL, train={"augment": {"scaling": 0.5}}))
    assert partial.train.augment.scaling == 0.5
    assert partial.train.augment.time_warp == SERIES_DEFAULTS["train"]["augment"]["time_warp"]


def test_a_selection_that_reads_validation_keeps_the_carve_out() -> None:
    recipe = parse_recipe(dict(MINIMAL, train={"selection": "smoothed"}))
    assert "val_fraction" not in recipe.task.options()  # the task's own default (0.1)


def test_backbone_models_train_in_float_and_other_tasks_keep_the_schema_defaults() -> None:
    assert parse_recipe(dict(MINIMAL, model={"arch": "backbone", "cell": "cmru"})).train.qat_bits is None
    synthetic = parse_recipe({"name": "cf", "task": {"name": "copy_first"}})
    assert synthetic.train.selection == "smoothed" and synthetic.train.lr == 1e-3
    assert not synthetic.train.augment.active and synthetic.train.qat_bits is None


def test_a_stored_run_recipe_means_what_it_meant(tmp_path: Path) -> None:
    """A run directory stores every key: parsing it again fills in nothing."""
    recipe = parse_recipe(dict(MINIMAL, train={"selection": "smoothed", "lr": 1e-3}))
    stored = tmp_path / "recipe.yaml"
    stored.write_text(recipe_text(recipe))
    assert holds_recipe(stored, recipe)
    assert parse_recipe(dict(MINIMAL, train={"selection": "smoothed", "lr": 1e-3})) == recipe
