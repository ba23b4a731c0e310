"""Score a training model as it deploys: quantized by export's rules, run by the bundle's torch model.

Quantization-aware training computes its forward pass on the grids export will use where they
are known before export (weights, biases of some layers, the input grid, the alphaCMRU and
minGRU activation grids). What only calibration fixes -- the state grids, the floor of every
state update, saturation -- it does not see, so a spiking HSRU whose threshold crossings move by
one LSB, or a state that saturates, deploys a point or two off the fake-quantized score. The
trainer therefore selects its checkpoint and reports its test score on the deployed model itself:
:class:`DeployedScorer` quantizes the current weights exactly as ``codesign export`` does (same
formats, same calibration sequences) and evaluates :func:`codesign.quant.stack.deployed_from_bundle`,
whose logits are the golden model's to the bit.
"""

from __future__ import annotations

import torch

from codesign.errors import CodesignError
from codesign.nn.cmru import CMRU
from codesign.quant.export import bundle_from_model
from codesign.quant.stack import deployed_from_bundle
from codesign.train.models import build_model
from codesign.train.recipe import Recipe
from codesign.train.trainer import metric_and_loss, model_score, plain_state


def deployed_model(recipe: Recipe, task, model: torch.nn.Module) -> torch.nn.Module:
    """The float64 torch model of the bundle ``codesign export`` would write for ``model``'s weights."""
    with torch.random.fork_rng(devices=[]):  # building a model draws: leave training's random stream alone
        plain = build_model(recipe, task)
    plain.load_state_dict(plain_state(model))
    cells = [m for m in plain.modules() if isinstance(m, CMRU)]
    for cell, trained in zip(cells, [m for m in model.modules() if isinstance(m, CMRU)], strict=True):
        cell.eps = trained.eps  # an annealed eps is the iteration's, not the recipe's
    return deployed_from_bundle(bundle_from_model(plain, recipe, task))


class DeployedScorer:
    """``(model, task, x, y) -> (metric, loss, deployable)`` on the deployed model.

    A model that does not quantize yet (an annealed eps between 0 and 1, shifts out of range early
    in training) is scored on its own forward pass and reported not deployable, so it is never kept.
    """

    name = "deployed"

    def __init__(self, recipe: Recipe, task) -> None:
        self.recipe, self.task = recipe, task

    def __call__(
        self, model: torch.nn.Module, task, x: torch.Tensor, y: torch.Tensor
    ) -> tuple[float, float, bool]:
        try:
            deployed = deployed_model(self.recipe, self.task, model)
        except CodesignError:
            value, loss, _ = model_score(model, task, x, y)
            return value, loss, False
        return (*metric_and_loss(deployed, task, x, y), True)
