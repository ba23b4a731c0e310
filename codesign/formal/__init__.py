"""Formal checks of the generated accelerator: properties in Amaranth, proven with SymbiYosys.

``harness`` (stream rules, liveness, configuration writes around an unchanged accelerator),
``units`` (the update unit against its rule), ``paths`` (no combinational path from an input to an
output port), ``equiv`` (the iCE40 netlist against the RTL), ``jobs`` and ``suite`` (one check as a
dict, the resumable suite of ``make formal``), ``commands`` (``codesign prove``, ``codesign
formal``). ``docs/formal.md`` says what is proven and at which depth.
"""
