"""codesign synth --hierarchy: the cells of every module, read from an unflattened yosys run."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from codesign.fpga.devices import get_device
from codesign.fpga.hierarchy import hierarchy_costs, hierarchy_script, module_costs

STANDIN = Path(__file__).parent / "data" / "fpga_standin"


def test_module_costs_reads_each_module_of_the_accelerator_only():
    stat = {
        "modules": {
            "\\accelerator": {"num_cells_by_type": {"SB_LUT4": 3, "SB_DFF": 1}},
            "\\accelerator.layer0.front": {
                "num_cells_by_type": {
                    "SB_LUT4": 10,
                    "SB_DFFE": 4,
                    "SB_DFFESR": 2,
                    "$paramod$1c33\\SB_RAM40_4K": 2,
                    "SB_MAC16": 1,
                    "SB_CARRY": 5,
                }
            },
            "\\SB_LUT4": {"num_cells_by_type": {}},  # a cell library module, not the design's
        }
    }
    rows = module_costs(stat, "ice40")
    assert [row.path for row in rows] == ["layer0.front", "(top)"]
    front = rows[0]
    assert (front.lut, front.ff, front.carry, front.bram, front.dsp) == (10, 6, 5, 2, 1)
    assert front.cells == 24


@pytest.mark.parametrize("device", ["up5k", "ecp5-25k"])
def test_script_keeps_the_hierarchy(device):
    script = hierarchy_script(get_device(device))
    assert "-noflatten" in script and "stat -json" in script
    assert "abc9" not in script  # abc9 stops on unflattened designs in the WebAssembly yosys


@pytest.mark.slow
def test_hierarchy_of_the_standin(tmp_path):
    shutil.copyfile(STANDIN / "accelerator.v", tmp_path / "accelerator.v")
    rows = hierarchy_costs(tmp_path, get_device("up5k"), timeout_s=600)
    assert (tmp_path / "hierarchy.json").is_file()
    assert rows and rows[0].path == "(top)"
    assert rows[0].ff > 0  # its counter and its FIFO's registers


def test_hierarchy_script_maps_spram_on_the_up5k() -> None:
    """A ``--weights spram`` build forces ``ram_style = "huge"``: the unflattened run must offer
    SPRAMs as the flattened one does (``synth_ice40 -spram``), or yosys finds no mapping."""
    assert "-spram" in hierarchy_script(get_device("up5k"))
    assert "-spram" not in hierarchy_script(get_device("hx8k"))
