"""Recurrent cells by name, for recipes and hybrid stacks (e.g. minGRU + CMRU layers)."""

from __future__ import annotations

from torch import nn

from codesign.nn.cmru import BMRU, CMRU, AlphaCMRU
from codesign.nn.hsru import HSRU
from codesign.nn.lru import LRU
from codesign.nn.mgrade import MGRADELayer
from codesign.nn.mingru import MinGRU
from codesign.nn.surnn import SelectiveUpdateGRU, SelectiveUpdateMinGRU

__all__ = ["CELL_TYPES", "build_cell"]

CELL_TYPES: dict[str, type[nn.Module]] = {
    "bmru": BMRU,
    "cmru": CMRU,
    "alphacmru": AlphaCMRU,
    "mingru": MinGRU,
    "lru": LRU,
    "mgrade": MGRADELayer,
    "hsru": HSRU,
    "sugru": SelectiveUpdateGRU,
    "sumingru": SelectiveUpdateMinGRU,
}


def build_cell(name: str, input_size: int, hidden_size: int, **options) -> nn.Module:
    """``CELL_TYPES[name](input_size, hidden_size, **options)``; unknown names and options are refused.

    Raises
    ------
    ValueError
        Naming the unknown cell and the allowed names, or the cell and the option it rejected.
    """
    if name not in CELL_TYPES:
        raise ValueError(f"unknown cell {name!r}; choose one of {sorted(CELL_TYPES)}")
    try:
        return CELL_TYPES[name](input_size, hidden_size, **options)
    except TypeError as err:  # an unexpected keyword argument
        raise ValueError(f"cell {name!r}: {err}") from err
