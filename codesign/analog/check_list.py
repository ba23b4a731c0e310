"""The registry of ``analog-check``: every check by name, in the order they run and are reported.

Adding a check: its module (spec, run, summarize: :class:`~codesign.analog.check_registry.Check`)
and one line here.
"""

from __future__ import annotations

from codesign.analog.check_cells import DPI, DPI_CORNERS, HYSTERESIS, RETENTION
from codesign.analog.check_ladder import CMRU_LADDER, LADDER_AGREEMENT
from codesign.analog.check_layer import AGREEMENT
from codesign.analog.check_power import POWER
from codesign.analog.check_registry import Check
from codesign.analog.check_robustness import ROBUSTNESS

REGISTRY: dict[str, Check] = {
    c.name: c
    for c in (
        HYSTERESIS,
        RETENTION,
        DPI,
        DPI_CORNERS,
        CMRU_LADDER,
        AGREEMENT,
        LADDER_AGREEMENT,
        POWER,
        ROBUSTNESS,
    )
}
"""name -> :class:`~codesign.analog.check_registry.Check`; a dependent check after what it reads."""
