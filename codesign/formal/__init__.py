"""Formal checks of the generated accelerator: properties in Amaranth, proven with SymbiYosys.

``harness`` (stream rules, liveness, configuration writes around an unchanged accelerator),
``units`` (the update unit against its rule), ``paths`` (no combinational path from an input to an
output port), ``equiv`` (the iCE40 netlist against the RTL), ``jobs`` and ``suite`` (one check as a
dict, the resumable suite of ``make formal``), ``commands`` (``codesign prove``, ``codesign
formal``). ``docs/formal.md`` says what is proven and at which depth.
"""

from codesign.formal.equiv import EQUIV_DEVICES, miter_rtlil
from codesign.formal.harness import CHECKS, FormalHarness
from codesign.formal.jobs import run_job
from codesign.formal.paths import comb_paths
from codesign.formal.sby import Proof, run_sby
from codesign.formal.units import CMRUUnitHarness

__all__ = [
    "CHECKS",
    "EQUIV_DEVICES",
    "CMRUUnitHarness",
    "FormalHarness",
    "Proof",
    "comb_paths",
    "miter_rtlil",
    "run_job",
    "run_sby",
]
