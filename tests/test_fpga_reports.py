"""Parsers of yosys / nextpnr output and the area arithmetic, on small captured snippets."""

from __future__ import annotations

import pytest

from codesign.errors import CodesignError
from codesign.fpga import area, reports
from codesign.fpga.devices import DEVICES, constraints_dir, get_device

# yosys 0.70, synth_ice40 of fpga_top around the spoken-digit accelerator (and a toy with a ROM)
LIBMAP_LOG = """
3.34. Executing MEMORY_LIBMAP pass (mapping memories to cells).
using FF mapping for memory fpga_top.accelerator.gate_weights
mapping memory fpga_top.accelerator.layer0.weights$94 via $__ICE40_RAM4K_
mapping memory fpga_top.accelerator.layer0.state via $__TRELLIS_DPR16X4_
mapping memory fpga_top.accelerator.big via $__ICE40_SPRAM_
mapping memory memt.ram via $__DP16KD_
"""

VERILOG = """
module \\accelerator.layer0 (clk, rst);
  reg [15:0] \\weights$94 [207:0];
  reg [15:0] state [15:0];
endmodule
module accelerator(clk);
  reg [63:0] gate_weights [59:0];
  reg [7:0] not_a_memory;
endmodule
"""

NEXTPNR_REPORT = {
    "utilization": {
        "ICESTORM_LC": {"available": 5280, "used": 1588},
        "ICESTORM_RAM": {"available": 30, "used": 16},
        "ICESTORM_PLL": {"available": 1, "used": 0},
        "SB_IO": {"available": 39, "used": 3},
        "NOT_ON_THIS_PART": {"available": 0, "used": 0},
    },
    "fmax": {"clk$SB_IO_IN_$glb_clk": {"achieved": 25.83, "constraint": 30}},
    "critical_paths": [
        {
            "from": "posedge clk",
            "to": "posedge clk",
            "path": [
                {"delay": 1.39, "type": "clk-to-q", "from": {"cell": "acc_DFF"}, "to": {"cell": "acc_DFF"}},
                {
                    "delay": 1.76,
                    "type": "routing",
                    "net": "acc[0]",
                    "sources": ["accelerator.v:455.14-455.24"],
                },
                {"delay": 0.87, "type": "logic"},
                {"delay": 3.1, "type": "routing", "net": "best_E", "sources": []},
                {"delay": 0.1, "type": "setup", "to": {"cell": "best_DFF"}},
            ],
        },
        {"from": "<async>", "to": "posedge clk", "path": [{"delay": 2.0, "type": "routing"}]},
    ],
}

NEXTPNR_LOG = """
Info: Max frequency for clock 'clk$SB_IO_IN_$glb_clk': 15.16 MHz (FAIL at 30.00 MHz)
Info: Max frequency for clock 'clk$SB_IO_IN_$glb_clk': 14.95 MHz (FAIL at 30.00 MHz)
"""

CMOS = """
     9832 cells
     2179   $_AND_
     1395   $_DFF_P_
       10   $__codesign_memory

   Estimated number of transistors:      71558+
"""


def test_memory_mapping_names_the_block_each_memory_went_to():
    got = reports.memory_mapping(LIBMAP_LOG)
    assert got == {
        "fpga_top.accelerator.gate_weights": reports.LOGIC,
        "fpga_top.accelerator.layer0.weights$94": "EBR (SB_RAM40_4K)",
        "fpga_top.accelerator.layer0.state": "LUT RAM (TRELLIS_DPR16X4)",
        "fpga_top.accelerator.big": "SPRAM (SB_SPRAM256KA)",
        "memt.ram": "EBR (DP16KD)",
    }


def test_memory_declarations_and_placement_join():
    declared = reports.memory_declarations(VERILOG)
    assert declared == {
        "accelerator.layer0.weights$94": {"width": 16, "depth": 208, "bits": 3328},
        "accelerator.layer0.state": {"width": 16, "depth": 16, "bits": 256},
        "accelerator.gate_weights": {"width": 64, "depth": 60, "bits": 3840},
    }
    placed = {m.name: m for m in reports.place_memories(declared, reports.memory_mapping(LIBMAP_LOG))}
    assert placed["fpga_top.accelerator.layer0.weights$94"].bits == 3328
    assert placed["fpga_top.accelerator.gate_weights"].placed == reports.LOGIC
    assert placed["fpga_top.accelerator.big"].bits is None  # declared nowhere: size unknown, still listed


def test_placement_prefers_the_declaration_whose_modules_the_path_names():
    declared = {
        "fpga_top.rx_fifo.storage": {"width": 8, "depth": 511, "bits": 4088},
        "accelerator.layer0.entries.storage": {"width": 23, "depth": 7, "bits": 161},
    }
    mapping = {
        "fpga_top.rx_fifo.unbuffered.storage": "EBR",
        "fpga_top.accelerator.layer0.entries.storage": "EBR",
    }
    bits = {m.name: m.bits for m in reports.place_memories(declared, mapping)}
    assert bits == {
        "fpga_top.rx_fifo.unbuffered.storage": 4088,
        "fpga_top.accelerator.layer0.entries.storage": 161,
    }


def test_resource_counts_per_family():
    ice = {"SB_LUT4": 961, "SB_DFF": 10, "SB_DFFESR": 700, "SB_CARRY": 228, "SB_RAM40_4K": 16, "SB_MAC16": 3}
    assert reports.resource_counts(ice, "ice40") == {
        "lut": 961, "ff": 710, "carry": 228, "bram": 16, "spram": 0, "dsp": 3, "lutram": 0
    }  # fmt: skip
    ecp = {"LUT4": 756, "TRELLIS_FF": 648, "CCU2C": 156, "DP16KD": 1, "MULT18X18D": 3, "TRELLIS_DPR16X4": 40}
    assert reports.resource_counts(ecp, "ecp5")["lutram"] == 40
    stat = {
        "modules": {"\\fpga_top": {"num_cells_by_type": {"SB_LUT4": 3}}},
        "design": {"num_cells_by_type": {}},
    }
    assert reports.yosys_cells(stat, "fpga_top") == {"SB_LUT4": 3}


def test_nextpnr_report_parsing():
    util = reports.nextpnr_utilisation(NEXTPNR_REPORT)
    assert util["ICESTORM_LC"] == {"used": 1588, "available": 5280} and "NOT_ON_THIS_PART" not in util
    assert reports.nextpnr_fmax(NEXTPNR_REPORT) == {
        "clk$SB_IO_IN_$glb_clk": {"achieved": 25.83, "constraint": 30.0}
    }
    # the log's last line per clock is the post-route figure
    assert reports.nextpnr_fmax_from_log(NEXTPNR_LOG)["clk$SB_IO_IN_$glb_clk"]["achieved"] == 14.95
    cp = reports.critical_path(NEXTPNR_REPORT)
    assert cp["delay_ns"] == pytest.approx(7.22) and cp["logic_levels"] == 1
    assert (cp["first_net"], cp["last_net"], cp["to"]) == ("acc[0]", "best_E", "best_DFF")
    assert cp["sources"] == ["accelerator.v:455.14-455.24"]
    assert reports.critical_path({}) is None


def test_area_arithmetic_and_transistor_line():
    assert area.transistors(CMOS) == (71558, True)
    assert area.transistors("Estimated number of transistors: 12") == (12, False)
    cells = {"$_AND_": 2, "$_DFF_P_": 1, "$_NOT_": 1, "$scopeinfo": 3, area.MEMORY_CELL: 1, "$_WEIRD_": 4}
    mems = [{"name": "w", "depth": 4, "width": 8, "bits": 32}]
    got = area.area_from_cells(cells, mems, area.FALLBACK_SIZES, "latch")
    and2, dff, inv = 2.3 * 2.72, 7.36 * 2.72, 1.38 * 2.72
    assert got["logic_um2"] == pytest.approx(2 * and2 + dff + inv, abs=0.1)
    assert got["flop_um2"] == pytest.approx(dff, abs=0.1)
    assert got["memory_um2_per_bit"] == pytest.approx((5.52 + 4.14) * 2.72, abs=1e-3)
    assert got["total_um2"] == pytest.approx(got["logic_um2"] + 32 * got["memory_um2_per_bit"], abs=0.2)
    assert got["unmapped_cells"] == {"$_WEIRD_": 4}
    with pytest.raises(CodesignError, match="memory-model"):
        area.area_from_cells(cells, mems, area.FALLBACK_SIZES, "sram")


def test_every_mapped_cell_has_a_fallback_size():
    needed = set(area.GENERIC_TO_SKY130.values()) | {c for cs in area.MEMORY_MODELS.values() for c in cs}
    assert needed <= set(area.FALLBACK_SIZES)


def test_memory_inventory_from_a_yosys_netlist():
    netlist = {
        "modules": {
            "accelerator": {
                "cells": {
                    "w": {
                        "type": "$mem_v2",
                        "parameters": {
                            "MEMID": "\\layer0.w",
                            "SIZE": "11010000",
                            "WIDTH": "10000",
                            "RD_PORTS": "1",
                            "WR_PORTS": "0",
                        },
                    },
                    "x": {"type": "$add", "parameters": {}},
                }
            }
        }
    }
    assert area.memory_inventory(netlist) == [
        {
            "name": "layer0.w",
            "depth": 208,
            "width": 16,
            "bits": 3328,
            "read_ports": 1,
            "write_ports": 0,
            "kind": "ROM",
        }
    ]


def test_devices_and_constraints_exist():
    for device in DEVICES.values():
        assert (constraints_dir() / device.constraints).is_file()
    assert get_device("up5k").target_mhz == 30 and get_device("ecp5-25k").target_mhz == 80
    with pytest.raises(CodesignError, match="--device 'xc7'"):
        get_device("xc7")


def test_memory_blocks_counts_ram_cells_per_memory():
    netlist = {
        "modules": {
            "fpga_top": {
                "cells": {
                    "accelerator.layer0.bias.0.0": {"type": "SB_RAM40_4K"},
                    "accelerator.layer0.bias.0.1": {"type": "SB_RAM40_4K"},
                    "accelerator.layer0.weights$94.1.0": {"type": "DP16KD"},
                    "rx_fifo.storage.0.0": {"type": "SB_RAM40_4K"},
                    "accelerator.layer0.lanes.$3_SB_MAC16_O": {"type": "SB_MAC16"},
                    "accelerator.x_SB_LUT4_O": {"type": "SB_LUT4"},
                }
            }
        }
    }
    assert reports.memory_blocks(netlist, "fpga_top") == {
        "accelerator.layer0.bias": 2,
        "accelerator.layer0.weights$94": 1,
        "rx_fifo.storage": 1,
    }


def test_block_ram_fill_is_bits_over_the_capacity_of_the_cells_taken():
    """The issue's fill figure: memory bits / (RAM cells x bits per cell), EBR and SPRAM apart."""
    rows = [
        reports.MemoryPlacement("a", 55, 15, 825, "EBR (SB_RAM40_4K)", blocks=4),
        reports.MemoryPlacement("b", 32, 96, 3072, "EBR (SB_RAM40_4K)", blocks=1),
        reports.MemoryPlacement("c", 32, 128, 4096, "SPRAM (SB_SPRAM256KA)", blocks=2),
        reports.MemoryPlacement("d", 64, 8, 512, reports.LOGIC),
    ]
    fill = reports.block_ram_fill(rows)
    assert fill["ebr"] == {"bits": 3897, "blocks": 5, "capacity": 20480, "fill": round(3897 / 20480, 4)}
    assert fill["spram"]["capacity"] == 2 * 262144 and fill["spram"]["bits"] == 4096
    assert reports.block_ram_fill(rows[3:]) == {}


def test_yosys_abc9_assertion_is_named_in_one_line(tmp_path) -> None:
    """yosys 0.70's abc9 assertion (seen at P = 4 on the ECP5) is reported as that, with the log."""
    from codesign.fpga.synth import yosys_failure

    log = "ERROR: Assert `GetSize(conn.first) == GetSize(conn.second)' failed in kernel/rtlil.cc:3091."
    reason = yosys_failure(log, tmp_path / "yosys.log")
    assert reason is not None and "abc9 assertion (rtlil.cc:3091)" in reason and str(tmp_path) in reason
    assert yosys_failure("ERROR: something else", tmp_path / "yosys.log") is None


def test_batch_builds_one_rtl_per_device_target() -> None:
    from codesign.fpga.batch import builds_for

    devices = ["up5k", "hx8k", "ecp5-25k", "ecp5-85k"]
    assert builds_for(devices, "device") == {
        "up5k": ["up5k"],
        "generic": ["hx8k"],
        "ecp5": ["ecp5-25k", "ecp5-85k"],
    }
    assert builds_for(devices, "generic") == {"generic": devices}


def test_ecp5_falls_back_to_abc_when_abc9_asserts(tmp_path, monkeypatch) -> None:
    """On yosys' abc9 assertion the ECP5 flow reruns with ``abc -lut 4:7`` in place of abc9
    (the JapaneseVowels BMRU at P = 4 stopped the reference batch; with abc it closes at 98.8 MHz)."""
    import shutil
    from pathlib import Path

    from codesign.fpga import synth as synth_module

    build = tmp_path / "build"
    shutil.copytree(Path(__file__).parent / "data" / "fpga_standin", build)
    scripts: list[str] = []

    class Stop(Exception):
        pass

    def fake_yosys(work: Path, timeout_s: float) -> None:
        scripts.append((work / "synth.ys").read_text())
        if len(scripts) == 1:
            (work / "yosys.log").write_text(
                "ERROR: Assert `GetSize(conn.first) == GetSize(conn.second)' failed in kernel/rtlil.cc:3091.\n"
            )
            raise CodesignError("yosys failed")
        raise Stop

    monkeypatch.setattr(synth_module, "_run_yosys", fake_yosys)
    with pytest.raises(Stop):
        synth_module.synthesize(build, "ecp5-25k")
    assert "abc9" not in scripts[1] and "abc -lut 4:7" in scripts[1] and "-run map_cells:" in scripts[1]
    assert "synth_ecp5 -top fpga_top -json netlist.json" in scripts[0]
    # the iCE40 flow does not retry: the same failure is named in one line
    monkeypatch.setattr(synth_module, "_run_yosys", fake_yosys)
    scripts.clear()
    with pytest.raises(CodesignError, match="abc9 assertion"):
        synth_module.synthesize(build, "up5k")
    assert len(scripts) == 1


def test_batch_refuses_a_bad_share_before_building(tmp_path) -> None:
    """``make fpga FPGA_SHARE=yes`` stops with the allowed values, not one skipped bundle per build."""
    from codesign.fpga.batch import main

    with pytest.raises(SystemExit) as stop:
        main(["--share-multipliers", "yes", "--out", str(tmp_path / "out")])
    assert stop.value.code == 2
    assert not (tmp_path / "out").exists()


def test_batch_refuses_spram_weights_off_the_up5k(tmp_path, capsys) -> None:
    """``--weights spram`` builds only for the UP5K (its SPRAMs): an ECP5 device in the batch
    stops it before any build, where each bundle would otherwise be skipped as refused."""
    from codesign.fpga.batch import main

    with pytest.raises(SystemExit) as stop:
        main(["--weights", "spram", "--devices", "up5k,ecp5-25k", "--out", str(tmp_path / "out")])
    assert stop.value.code == 2 and "--devices up5k" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()
