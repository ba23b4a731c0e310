"""FPGA flow and ASIC area proxy for the accelerator of a build directory.

* :mod:`~codesign.fpga.ports`: the design's streams from ``BUILD/build.json`` and the byte protocol;
* :mod:`~codesign.fpga.uart`, :mod:`~codesign.fpga.bridge`, :mod:`~codesign.fpga.wrapper`: the
  ``fpga_top`` that puts any accelerator behind a UART (Amaranth, the accelerator as an ``Instance``);
* :mod:`~codesign.fpga.tools`: the yowasp tools, run with timeouts;
* :mod:`~codesign.fpga.devices`: iCE40 UP5K / HX8K and ECP5 25k / 85k with their boards' pins
  (constraints in ``flows/fpga/``);
* :mod:`~codesign.fpga.synth`: ``codesign synth`` (yosys, nextpnr, icepack / ecppack);
* :mod:`~codesign.fpga.reports`: parsers of the tools' statistics, logs and reports;
* :mod:`~codesign.fpga.area`: ``codesign area``, generic gates and sky130_fd_sc_hd area.
"""
