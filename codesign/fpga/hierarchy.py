"""Where an accelerator's LUTs, flip-flops, block RAMs and multipliers go: one row per module.

``codesign synth --hierarchy`` runs a second yosys synthesis of ``accelerator.v`` alone, without
flattening, and reads ``stat -json`` per module of the hierarchy (``accelerator.layer0.front.lanes``,
``accelerator.layer0.update_0``, ...). Each row counts the cells of that module itself, not of its
submodules, so the rows add up to the design.

The flattened run of ``codesign synth`` is what fits or does not fit the chip; this one maps LUTs
with yosys' own techmapping (iCE40 ``-noabc``, ECP5 ``abc -lut 4`` in place of ``abc9``, which
stops on unflattened designs in the WebAssembly build), so its LUT counts are those of a less
optimised netlist: use it to see proportions, not to read utilisation. Flip-flops, block RAMs and
multipliers are the same as in the flattened run, less what flattening lets yosys share or remove
across module boundaries (the counters a wrapper leaves unconnected, for instance).
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path

from codesign.atomic import write_text
from codesign.fpga import reports
from codesign.fpga.devices import Device
from codesign.fpga.tools import run_tool

__all__ = ["ModuleCost", "hierarchy_costs", "hierarchy_script", "module_costs"]

TOP = "accelerator"
"""The top module's name where none is given (a build's own is ``build.json``'s ``top``)."""


@dataclass(frozen=True)
class ModuleCost:
    """The cells one module of the hierarchy holds itself (``path`` without the top's name)."""

    path: str
    lut: int
    ff: int
    carry: int
    bram: int
    dsp: int
    lutram: int

    @property
    def cells(self) -> int:
        return self.lut + self.ff + self.carry + self.bram + self.dsp + self.lutram


def hierarchy_script(device: Device, top: str = TOP) -> str:
    """The yosys script: unflattened synthesis of ``accelerator.v`` (top module ``top``) and
    ``stat -json``."""
    if device.family == "ice40":
        dsp = " -dsp -spram" if device.name == "up5k" else ""  # -spram: a --weights spram build's memories
        synth = [f"synth_ice40 -top {top} -noflatten -noabc{dsp}"]
    else:
        synth = [
            f"synth_ecp5 -top {top} -noflatten -run begin:map_luts",
            "techmap -map +/lattice/latches_map.v",
            "abc -lut 4",
            "clean",
            f"synth_ecp5 -top {top} -noflatten -run map_cells:json",
        ]
    return "\n".join(["read_verilog accelerator.v", *synth, "tee -q -o hierarchy_stat.json stat -json", ""])


def module_costs(stat: dict, family: str, top: str = TOP) -> list[ModuleCost]:
    """One :class:`ModuleCost` per module of ``stat -json`` under ``top``, largest (LUT + FF) first."""
    rows = []
    for name, module in stat.get("modules", {}).items():
        name = name.lstrip("\\")
        if name != top and not name.startswith(f"{top}."):
            continue  # cell library modules
        cells: dict[str, int] = {}
        for cell, n in module.get("num_cells_by_type", {}).items():
            base = cell.rsplit("\\", 1)[-1]  # "$paramod$...\\SB_RAM40_4K" -> "SB_RAM40_4K"
            cells[base] = cells.get(base, 0) + int(n)
        counts = reports.resource_counts(cells, family)
        rows.append(
            ModuleCost(
                path=name.removeprefix(top).removeprefix(".") or "(top)",
                lut=counts["lut"],
                ff=counts["ff"],
                carry=counts["carry"],
                bram=counts["bram"] + counts.get("spram", 0),
                dsp=counts["dsp"],
                lutram=counts.get("lutram", 0),
            )
        )
    return sorted(rows, key=lambda row: (-(row.lut + row.ff), row.path))


def hierarchy_costs(work: Path, device: Device, *, timeout_s: float, top: str = TOP) -> list[ModuleCost]:
    """Run the unflattened synthesis in ``work`` (which holds ``accelerator.v``, top module
    ``top``); write ``hierarchy.json`` there and return the rows."""
    (work / "hierarchy.ys").write_text(hierarchy_script(device, top))
    run_tool(
        "yosys",
        ["-q", "-l", "hierarchy.log", "-s", "hierarchy.ys"],
        cwd=work,
        timeout=timeout_s,
        what="per-module synthesis",
    )
    rows = module_costs(json.loads((work / "hierarchy_stat.json").read_text()), device.family, top)
    write_text(work / "hierarchy.json", json.dumps([asdict(row) for row in rows], indent=2) + "\n")
    return rows
