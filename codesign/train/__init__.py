"""Recipes and the trainer."""

from codesign.train.recipe import Recipe, load_recipe
from codesign.train.trainer import TrainResult, train

__all__ = ["Recipe", "TrainResult", "load_recipe", "train"]
