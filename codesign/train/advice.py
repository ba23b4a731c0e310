"""What a recipe's network cannot see, said before it trains.

One CMRU-family layer with ``eps = 1`` (the cumulative update) adds ``sign(c_t) * alpha`` whenever
``|c_t| >= beta_t``, and ``c_t``, ``beta_t`` (and alphaCMRU's ``alpha_t``) are functions of the
frame ``x_t`` alone. Its state after ``T`` frames is a sum of one function of each frame, so, short
of saturating, it is the same for every order of the frames: last pooling reads a weighted
histogram of the frames' values, never a shape. ``models/results/ablation/order.md`` measures it:
such a network scores the same on shuffled test series as on the real ones. A minGRU layer in
front of it (``models/classify_hw.yaml``) or a DCLS front end (delayed frames) reads the order.
A series recipe with this network (the minimal ``model: {cell: cmru, hidden_size: 16}``) gets
:class:`OrderBlindWarning` from :func:`warn_if_order_blind` when it trains.
"""

from __future__ import annotations

import warnings
from typing import Any

from codesign.bundle.cells import CELLS
from codesign.train.defaults import SERIES_TASKS
from codesign.train.recipe import Recipe

__all__ = ["OrderBlindWarning", "order_blind", "warn_if_order_blind"]


class OrderBlindWarning(UserWarning):
    """The network's output does not depend on the order of its input frames."""


def order_blind(layers: list[dict[str, Any]], pooling: str) -> str | None:
    """Why the hardware network of ``layers`` and ``pooling`` cannot read the order of its
    frames, or ``None`` when it can.

    Only a lone layer read at its last step is blind: a second layer reads the first one's running
    state, and sum pooling adds every step's state (an event at frame ``s`` counts ``T - s + 1``
    times), both of which depend on the order. A DCLS front end (delayed frames), a
    selective-update schedule (fixed update times) or an ``eps`` other than 1 (a state that is
    reset or reflected) each give it the order.
    """
    if len(layers) != 1 or pooling != "last":
        return None
    (layer,) = layers
    kind = CELLS.get(layer.get("cell", ""))
    if kind is None or kind.rule != "cmru" or not kind.has_eps or layer.get("eps", 1.0) != 1.0:
        return None
    if layer.get("dcls") is not None or layer.get("selective") is not None:
        return None
    return (
        f"one {layer['cell']} layer with eps 1 read at its last step sums one function of each frame: "
        "it gives the same output for any order of the frames, so it cannot tell shapes apart. "
        "Put a minGRU layer in front of it, as models/classify_hw.yaml does "
        "(model.layers=[{cell: mingru, size: 16}, {cell: cmru, size: 16, eps: 1.0}]), "
        "or give it delayed frames through a DCLS front end "
        "(model.layers=[{cell: cmru, size: 16, eps: 1.0, dcls: {taps: 8, span: 64}}])"
    )


def warn_if_order_blind(recipe: Recipe) -> None:
    """Warn (:class:`OrderBlindWarning`) when a series recipe's hardware network is order-blind.

    Only series tasks (a user's recordings) are checked: a synthetic task may want a count."""
    if recipe.task.name not in SERIES_TASKS or recipe.model.arch != "hardware":
        return
    reason = order_blind(recipe.model.hardware_layers(), recipe.model.pooling)
    if reason is not None:
        warnings.warn(f"recipe {recipe.name!r}: {reason}", OrderBlindWarning, stacklevel=2)
