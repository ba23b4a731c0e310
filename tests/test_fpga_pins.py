"""The chip at its UART pins: fpga_top (RTL and UP5K netlist) driven by a serial model of the host,
the board protocol's bytes in, answers against golden; a netlist mutant in the UART is caught."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from codesign.board.pins import pins_mutant, run_pins
from codesign.cli import app
from codesign.errors import CodesignError
from codesign.fpga.netlist import flip_lut
from codesign.fpga.pins import PINS_DIVISOR, pins_build, pins_script
from codesign.hw.build import build_rtl

BUNDLE = Path(__file__).resolve().parents[1] / "models" / "bundles" / "copy_first_cmru"


@pytest.fixture(scope="module")
def build(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("pins") / "build"
    build_rtl(BUNDLE, out, lanes=1, target="up5k", counters="basic")
    return out


def test_the_pins_script_maps_the_wrapped_top_as_codesign_synth_does():
    script = pins_script("up5k")
    assert "read_verilog accelerator.v\nread_verilog top.v\n" in script
    assert "synth_ice40 -top fpga_top -dsp -spram\n" in script
    assert "synth_ecp5 -top fpga_top\n" in pins_script("ecp5-25k")
    assert "abc -lut 4:7" in pins_script("ecp5-25k", abc=True)
    with pytest.raises(CodesignError, match="'up6k' is not one of"):
        pins_script("up6k")


def test_a_divisor_below_four_and_a_folder_without_rtl_are_refused(build, tmp_path):
    with pytest.raises(CodesignError, match="divisor 3 must be at least 4"):
        pins_build(build, None, divisor=3)
    with pytest.raises(CodesignError, match="accelerator.v or build.json missing"):
        pins_build(tmp_path, None)


def test_flip_lut_keeps_to_one_module():
    text = (
        "SB_LUT4 #(\n.LUT_INIT(16'h00ff)\n) \\accelerator.a_LUT  (\n.O(x));\n"
        "SB_LUT4 #(\n.LUT_INIT(16'h0f0f)\n) \\uart_rx$4.b_LUT  (\n.O(y));\n"
        "`define NO_ICE40_DEFAULT_ASSIGNMENTS\nSB_LUT4 #(.LUT_INIT(16'h1234)) model (.O(z));\n"
    )
    mutated, change = flip_lut(text, 0, "uart_rx")
    assert "16'hf0f0" in mutated and "16'h00ff" in mutated and "16'h1234" in mutated
    assert change.startswith("LUT 0 of 1 'uart_rx' (uart_rx$4.b_LUT)")
    assert "16'hff00" in flip_lut(text, 2)[0]  # index modulo the design's two LUTs, never the model's
    with pytest.raises(CodesignError, match="within 'bridge'"):
        flip_lut(text, 0, "bridge")


def test_pins_takes_random_sequences_only(build, tmp_path):
    inputs = tmp_path / "x.npy"
    inputs.write_bytes(b"")
    result = CliRunner().invoke(app, ["sim", str(build), "--pins", "--inputs", str(inputs)])
    assert result.exit_code != 0
    assert "--pins runs random sequences only" in result.output


@pytest.mark.sim
def test_the_uart_model_drives_the_rtl_wrapper_bit_exact(build, tmp_path):
    folder = pins_build(build, None)
    text = (folder / "fpga_top.v").read_text()
    assert "module fpga_top(" in text and "module copy_first_cmru(" in text
    info = json.loads((folder / "pins.json").read_text())
    assert info["device"] is None and info["divisor"] == PINS_DIVISOR
    report = run_pins(folder, "icarus", vectors=3, seed=2, max_steps=5, timeout_s=600)
    assert report.ok and report.sequences == 3, report.summary_line()
    assert (
        report.bytes_sent > 3 and report.bytes_received > 3 and report.identity == f"0x{info['identity']:08x}"
    )
    assert pins_build(build, None) == folder  # reused while nothing changed


@pytest.mark.sim
@pytest.mark.slow
@pytest.mark.long
def test_the_up5k_netlist_at_its_pins_is_bit_exact_and_a_uart_mutant_is_caught(build, tmp_path):
    folder = pins_build(build, "up5k")
    text = (folder / "fpga_top.v").read_text()
    design = text[: text.index("`define NO_ICE40")]
    for cell in ("SB_RAM40_4K", "SB_LUT4", "SB_DFF"):
        assert f"  {cell}" in design, f"the mapped fpga_top has no {cell}"
    report = run_pins(folder, "icarus", vectors=2, seed=1, max_steps=5, timeout_s=900)
    assert report.ok and report.sequences == 2, report.summary_line()
    change = pins_mutant(folder, 0, tmp_path / "mutant", within="uart_rx")
    assert "'uart_rx'" in change
    mutant = run_pins(tmp_path / "mutant", "icarus", vectors=2, seed=1, max_steps=5, stop_on_mismatch=True)
    assert not mutant.ok, f"mutant {change} survived: {mutant.summary_line()}"
