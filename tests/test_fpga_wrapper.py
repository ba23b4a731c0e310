"""The generated fpga_top (UART + bridge + the accelerator as an Instance) around a stand-in
accelerator, under Icarus; and the full synth / area flows on that stand-in (slow)."""

from __future__ import annotations

import json
import random
import shutil
import subprocess
from pathlib import Path

import pytest

from codesign.fpga.ports import decode_messages, encode_message, load_port_map
from codesign.fpga.wrapper import TOP_NAME, top_verilog

STAND_IN = Path(__file__).parent / "data" / "fpga_standin"
DIVISOR = 8

TESTBENCH = """
`timescale 1ns/1ps
module tb;
  localparam DIV = %(div)d;
  reg clk = 0;
  always #5 clk = ~clk;
  reg rx = 1;
  wire tx;
  %(top)s dut(.clk(clk), .uart_rx(rx), .uart_tx(tx));
  reg [7:0] host [0:1023];
  integer i;
  task send(input [7:0] v);
    integer k;
    begin
      rx = 0; repeat (DIV) @(posedge clk);
      for (k = 0; k < 8; k = k + 1) begin rx = v[k]; repeat (DIV) @(posedge clk); end
      rx = 1; repeat (DIV) @(posedge clk);
    end
  endtask
  initial begin : receiver
    reg [7:0] v;
    integer k;
    forever begin
      @(negedge tx);
      repeat (DIV / 2) @(posedge clk);
      for (k = 0; k < 8; k = k + 1) begin repeat (DIV) @(posedge clk); v[k] = tx; end
      repeat (DIV) @(posedge clk);
      $display("RX %%02x", v);
    end
  end
  initial begin
    $readmemh("host.hex", host);
    repeat (40) @(posedge clk);
    for (i = 0; i < %(n)d; i = i + 1) send(host[i]);
    repeat (DIV * 10 * 4 * 8) @(posedge clk);
    $finish;
  end
endmodule
"""


@pytest.mark.sim
@pytest.mark.skipif(shutil.which("iverilog") is None, reason="iverilog not installed (make setup)")
def test_fpga_top_round_trip_under_icarus(tmp_path: Path) -> None:
    ports = load_port_map(STAND_IN)
    (tmp_path / "top.v").write_text(top_verilog(ports, DIVISOR))
    rng = random.Random(5)
    host, expected, cfg = bytearray(), [], 0
    host += encode_message(ports.stream("config"), cfg)
    for _ in range(8):
        x = rng.randrange(1 << 12)
        host += encode_message(ports.stream("inputs"), x)
        expected.append(("results", x + cfg))
        if rng.random() < 0.5:
            cfg = rng.randrange(16)
            host += encode_message(ports.stream("config"), cfg)
    (tmp_path / "host.hex").write_text("\n".join(f"{b:02x}" for b in host) + "\n")
    (tmp_path / "tb.v").write_text(TESTBENCH % {"div": DIVISOR, "top": TOP_NAME, "n": len(host)})
    shutil.copyfile(STAND_IN / "accelerator.v", tmp_path / "accelerator.v")
    subprocess.run(
        ["iverilog", "-o", "sim.vvp", "tb.v", "top.v", "accelerator.v"],
        cwd=tmp_path,
        check=True,
        timeout=120,
    )
    run = subprocess.run(["vvp", "-n", "sim.vvp"], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    received = bytes(int(line.split()[1], 16) for line in run.stdout.splitlines() if line.startswith("RX "))
    got, rest = decode_messages(ports, received)
    assert [v for _, v in got] == [v for _, v in expected] and rest == b"", host.hex()


@pytest.mark.slow
def test_synth_and_area_of_a_tiny_design_on_up5k(tmp_path: Path) -> None:
    """The whole flow on the stand-in: bitstream, utilisation, Fmax, the RAM in EBR, area."""
    from codesign.fpga.area import FALLBACK_SIZES, area_report
    from codesign.fpga.synth import synthesize

    build = tmp_path / "build"
    shutil.copytree(STAND_IN, build)
    summary = synthesize(build, "up5k")
    out = build / "synth" / "up5k"
    assert summary["status"] == "ok" and (out / "top.bin").stat().st_size > 100_000
    assert json.loads((out / "summary.json").read_text())["fmax_mhz"] == summary["fmax_mhz"] > 30
    assert summary["utilisation"]["SB_IO"]["used"] == 3 and summary["resources"]["lut"] > 20
    (history,) = summary["memories"]
    assert history["name"].endswith("accelerator.history") and history["bits"] == 4096
    assert history["placed"].startswith("EBR") and history["blocks"] == 1  # 256 x 16: one SB_RAM40_4K
    assert summary["resources"]["bram"] >= 1
    # cycle_count only feeds an unconnected output: synthesis removed it
    assert "cycle_count" not in (out / "netlist.json").read_text()
    assert summary["wrapper_memories"][0]["placed"].startswith("EBR")  # the RX FIFO
    assert [r["stream"] for r in summary["protocol"]["host_to_device"]] == ["inputs", "config"]

    report = area_report(build, sizes=FALLBACK_SIZES)
    assert report["memory_bits"] == 4096 and report["memories"][0]["kind"] == "RAM"
    assert report["flops"] > 32 and report["transistors_logic"] > 1000
    assert report["total_um2"] == pytest.approx(report["logic_um2"] + report["memory_um2"], abs=1)


def test_tool_paths_are_relative_so_yowasp_sees_them() -> None:
    from codesign.fpga.synth import tool_path

    assert tool_path(Path("/tmp/co/flows/fpga/up5k.pcf"), Path("/tmp/b/synth/up5k")) == (
        "../../../co/flows/fpga/up5k.pcf"
    )


@pytest.mark.slow
def test_constraints_under_the_system_temp_folder(tmp_path: Path, monkeypatch) -> None:
    """A checkout (or constraint file) under /tmp: yowasp mounts its own /tmp over it, so the
    flow must not hand the tools an absolute /tmp path ("Failed to open PCF file" before)."""
    import tempfile

    from codesign.fpga import synth as synth_module
    from codesign.fpga.devices import constraints_dir

    with tempfile.TemporaryDirectory(dir=tempfile.gettempdir()) as checkout:
        flows = Path(checkout) / "flows" / "fpga"
        flows.mkdir(parents=True)
        shutil.copyfile(constraints_dir() / "up5k.pcf", flows / "up5k.pcf")
        monkeypatch.setattr(synth_module, "constraints_dir", lambda: flows)
        build = Path(checkout) / "build"
        shutil.copytree(STAND_IN, build)
        summary = synth_module.synthesize(build, "up5k")
        assert summary["status"] == "ok", summary.get("failure")
        assert (build / "synth" / "up5k" / "top.bin").is_file()


@pytest.mark.slow
@pytest.mark.long
def test_selective_bundle_places_and_routes_on_the_ecp5(tmp_path) -> None:
    """The selective-update reference bundle through the whole ECP5 flow. Its su_walk rows were
    products of the phase; yosys shared that multiplier with the one of the next group's inputs
    base, whose operand is su_walk's asynchronous read, and nextpnr stopped: "Timing analysis
    failed due to combinational loops" (159 loops, every P)."""
    from codesign.fpga.synth import synthesize
    from codesign.hw.build import build_rtl

    bundle = Path(__file__).parents[1] / "models" / "bundles" / "japanese_vowels_cmru2_su"
    build = tmp_path / "su"
    build_rtl(bundle, build, lanes=1, target="ecp5", counters="none", weights="frozen")
    summary = synthesize(build, "ecp5-25k")
    assert summary["status"] == "ok" and summary["fmax_mhz"] > 0
