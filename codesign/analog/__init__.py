"""Analog path: transistor-level BMRU / DPI / native-CMRU netlists (sky130, ngspice) from bundles.

One-way layers (``docs/analog-pipeline.md``):

* devices and simulator: :mod:`~codesign.analog.pdk` (the sky130 models), :mod:`~codesign.analog.ngspice`
  (batch runs with timeouts);
* circuits: :mod:`~codesign.analog.cells`, :mod:`~codesign.analog.synapse`, :mod:`~codesign.analog.mapping`
  (a bundle's neurons as currents), :mod:`~codesign.analog.drive`, :mod:`~codesign.analog.netlist`
  (``codesign analog``);
* specs and runs: :mod:`~codesign.analog.spec` (typed decks), :mod:`~codesign.analog.sim`;
* measurements: :mod:`~codesign.analog.measure_cells`, :mod:`~codesign.analog.measure_ladder`,
  :mod:`~codesign.analog.trace`, :mod:`~codesign.analog.ladder_trace`;
* checks: :mod:`~codesign.analog.checks` over the registry :mod:`~codesign.analog.check_list`
  (``codesign analog-check``); evaluation: :mod:`~codesign.analog.evaluate` (``codesign analog-eval``).
"""

from __future__ import annotations

__all__ = ["Report", "analog_check", "generate_netlists"]


def __getattr__(name: str):
    # Lazy: importing codesign.analog must not pull matplotlib or run anything.
    if name in ("Report", "analog_check"):
        from codesign.analog import checks

        return getattr(checks, name)
    if name == "generate_netlists":
        from codesign.analog.netlist import generate_netlists

        return generate_netlists
    raise AttributeError(name)
