"""What a recipe's network cannot see, said before it trains.

A lone CMRU-family layer with ``eps = 1`` read at its last step cannot read the order of its frames
(:mod:`codesign.train.order`). The series defaults put a DCLS front end in front of such a layer
where a recipe names only the cell; a series recipe that still trains one (its ``model.layers``
written out, or ``model.cell_options: {dcls: null}``) gets :class:`OrderBlindWarning` from
:func:`warn_if_order_blind`.
"""

from __future__ import annotations

import warnings

from codesign.train.defaults import SERIES_TASKS
from codesign.train.order import order_blind
from codesign.train.recipe import Recipe

__all__ = ["OrderBlindWarning", "describe_inputs", "describe_network", "order_blind", "warn_if_order_blind"]


class OrderBlindWarning(UserWarning):
    """The network's output does not depend on the order of its input frames."""


def warn_if_order_blind(recipe: Recipe) -> None:
    """Warn (:class:`OrderBlindWarning`) when a series recipe's hardware network is order-blind.

    Only series tasks (a user's recordings) are checked: a synthetic task may want a count. A
    layer annealed to ``eps`` 0 (``train.eps_schedule: anneal``) deploys a state that the last
    event sets, which reads the order."""
    if recipe.task.name not in SERIES_TASKS or recipe.model.arch != "hardware":
        return
    if recipe.train.eps_schedule == "anneal":
        return
    reason = order_blind(recipe.model.hardware_layers(), recipe.model.pooling)
    if reason is not None:
        warnings.warn(f"recipe {recipe.name!r}: {reason}", OrderBlindWarning, stacklevel=2)


def _layer_label(layer: dict) -> str:
    """``CMRU 16``, with its DCLS front end when it has one (``DCLS 8x64 > CMRU 16``)."""
    dcls = layer.get("dcls")
    front = f"DCLS {dcls['taps']}x{dcls['span']} > " if dcls else ""
    return f"{front}{layer['cell'].upper()} {layer['size']}"


def describe_network(recipe: Recipe, length: int | None = None) -> str:
    """The hardware network a recipe trains, in one line (``DCLS 8x64 > CMRU 16, last pooling,
    8-bit weights``): what a user reads before training, since the series defaults can add a
    front end the recipe does not write. With the task's series ``length`` a ``span: auto`` is
    given as the number it resolves to; without, as ``auto``."""
    from codesign.train.models import with_spans

    layers = recipe.model.hardware_layers()
    if length is not None:
        layers = with_spans(layers, length, recipe.model.stride_for(length))
    layers = " + ".join(_layer_label(layer) for layer in layers)
    quant = recipe.quant
    bits = quant.layer.weight_bits if quant.layers is None else quant.layers[0].weight_bits
    return f"{layers}, {recipe.model.pooling} pooling, {bits}-bit weights"


INPUT_SCALING = {
    "channel": "each channel standardised with the training set's mean and standard deviation",
    "series": "each series standardised on its own, so its level is not seen",
    "none": "the values as they are in the files",
    "auto": "standardised per series or per channel, as the training series' spread decides",
}
"""What each ``task.normalize`` does to the inputs, in words."""


def describe_inputs(recipe: Recipe) -> str | None:
    """How a series recipe's inputs are scaled before quantization (``None`` for other tasks):
    the series defaults may choose ``series`` for data whose levels differ by orders of
    magnitude, and a user should see that the network then never sees a series' level."""
    from codesign.data.series import check_normalize

    if recipe.task.name not in SERIES_TASKS:
        return None
    mode = check_normalize(recipe.task.options().get("normalize", True), recipe.task.name)
    return f"{INPUT_SCALING[mode]} (task.normalize: {mode})"
