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

__all__ = ["OrderBlindWarning", "order_blind", "warn_if_order_blind"]


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
