"""Every recipe shipped in models/ validates and builds its model."""

from pathlib import Path

import pytest

from codesign.train.models import build_model
from codesign.train.recipe import build_task, load_recipe

RECIPES = sorted((Path(__file__).parents[1] / "models").glob("*.yaml"))
NEEDS_DATA = {"spoken_digits"}  # building these tasks synthesises or reads a dataset


@pytest.mark.parametrize("path", RECIPES, ids=[p.stem for p in RECIPES])
def test_recipe_builds(path: Path) -> None:
    recipe = load_recipe(path)
    if recipe.task.name in NEEDS_DATA:
        return
    task = build_task(recipe.task.name, recipe.task.options())
    model = build_model(recipe, task)
    assert sum(p.numel() for p in model.parameters()) > 0
