"""The FPGA power estimate: its arithmetic, the netlist's toggle counter, the report section and
the real-time margin table."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from typer.testing import CliRunner

from codesign.bundle.random import make_random_network_bundle
from codesign.cli import app
from codesign.errors import CodesignError
from codesign.hw.build import build_rtl
from codesign.hw.power import coarse_activity, estimate, load_power_data, power_devices
from codesign.hw.toggles import netlist_cells, parse_bits, vcd_activity

ROOT = Path(__file__).resolve().parents[1]

DATA = """
e: &e
  lut_toggle_pj: 1.0
  carry_toggle_pj: 0.5
  ff_toggle_pj: 2.0
  ff_clock_pj: 0.1
  clock_tree_pj: 10.0
  bram_read_pj: 20.0
  bram_write_pj: 30.0
  spram_read_pj: 40.0
  spram_write_pj: 50.0
  dsp_op_pj: 5.0
devices:
  toy:
    part: TOY1
    vcc_v: 1.0
    static_core_ua: 100
    static_source: a hand-made figure
    luts: 100
    energies: *e
"""


@pytest.fixture
def toy(tmp_path) -> object:
    path = tmp_path / "power.yaml"
    path.write_text(DATA)
    return load_power_data("toy", path)


def test_static_and_dynamic_arithmetic_on_a_hand_made_activity(toy):
    activity = {
        "lut_toggles": 1000,
        "carry_toggles": 40,
        "ff_toggles": 500,
        "bram_reads": 10,
        "bram_writes": 5,
        "spram_reads": 2,
        "spram_writes": 1,
        "dsp_ops": 8,
        "cycles": 200,
        "steps": 10,
        "ffs": 50,
    }
    est = estimate(toy, activity, clock_mhz=10.0, step_rate=100.0, steps_per_inference=20)
    assert est["static_mw"] == pytest.approx(0.1)  # 100 uA x 1 V
    # (1000 x 1 + 40 x 0.5 + 500 x 2 + 10 x 20 + 5 x 30 + 2 x 40 + 1 x 50 + 8 x 5) / 10 steps
    logic = (1000 + 20 + 1000 + 200 + 150 + 80 + 50 + 40) / 10
    assert est["logic_pj_per_step"] == pytest.approx(logic)
    assert est["logic_pj_per_step_by_class"]["dsp"] == pytest.approx(4.0)
    assert est["clock_pj_per_cycle"] == pytest.approx(10 + 50 * 0.1)
    clock_mw = 15.0 * 10e6 * 1e-12 * 1e3  # pJ a cycle x cycles a second, in mW
    assert est["clock_mw"] == pytest.approx(clock_mw)
    # flat out: a step every 20 cycles at 10 MHz = 500,000 steps a second
    assert est["cycles_per_step"] == pytest.approx(20)
    assert est["dynamic_mw"] == pytest.approx(clock_mw + logic * 5e5 * 1e-9)
    average = 0.1 + clock_mw + logic * 100 * 1e-9
    assert est["average_mw"] == pytest.approx(average)
    assert est["duty"] == pytest.approx(100 / 5e5)
    assert est["energy_uj_per_step"] == pytest.approx(average / 100 * 1e3)
    assert est["energy_uj_per_inference"] == pytest.approx(20 * average / 100 * 1e3)
    # at 100 steps a second the static power and the clock are nearly all of it
    assert est["logic_share"] < 1e-3
    faster = estimate(
        toy, activity, clock_mhz=10.0, step_rate=100.0, steps_per_inference=1, cycles_per_step=40
    )
    assert faster["dynamic_mw"] == pytest.approx(clock_mw + logic * 2.5e5 * 1e-9)


def test_bad_power_data_and_activity_are_refused(toy, tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text(DATA.replace("dsp_op_pj: 5.0", "dsp_op_pj: -1"))
    with pytest.raises(CodesignError, match=r"devices.toy.energies.dsp_op_pj must be a number >= 0"):
        load_power_data("toy", bad)
    with pytest.raises(CodesignError, match=r"no FPGA power data for device 'up6k'"):
        load_power_data("up6k")
    with pytest.raises(CodesignError, match="steps and cycles must be > 0"):
        estimate(toy, {"cycles": 0, "steps": 0, "ffs": 0}, clock_mhz=12, step_rate=100, steps_per_inference=1)
    assert set(power_devices()) == {"up5k", "hx8k", "ecp5-25k", "ecp5-85k"}
    for name in power_devices():
        data = load_power_data(name)
        assert data.static_mw > 0 and data.static_source


def test_coarse_activity_places_accesses_as_the_plan_does():
    plan = {
        "memories": [
            {"name": "l0_weights", "elements": 2, "elem_bits": 8, "style": "block"},
            {"name": "l0_big", "elements": 1, "elem_bits": 16, "style": "huge"},
            {"name": "l0_state", "elements": 4, "elem_bits": 4, "style": "logic"},
        ],
        "engines": [
            {"name": "l0", "multiplier": "hard", "item_bits": 4},
            {"name": "readout", "multiplier": "lut", "item_bits": 4},
        ],
    }
    counters = {
        "l0_weights_reads": 7,
        "l0_big_writes": 3,
        "l0_state_reads": 2,
        "l0_macs": 9,
        "readout_macs": 2,
    }
    a = coarse_activity(plan, counters, steps=5, cycles=100, luts=80, ffs=40, family="ice40")
    assert a["bram_reads"] == 7 and a["spram_writes"] == 3 and a["dsp_ops"] == 9
    assert a["ff_toggles"] == pytest.approx(2 * 16 / 2 + 100 * 40 * 0.125)
    assert a["lut_toggles"] == pytest.approx(2 * 8 * 4 / 2 + 100 * 80 * 0.125)
    assert a["basis"] == "coarse" and a["steps"] == 5


NETLIST = """module accelerator(clk, a, q);
  input clk;
  input a;
  output q;
  wire [1:0] n;
  SB_LUT4 #(
    .LUT_INIT(16'h5555)
  ) lut0 (
    .I0(a),
    .I1(1'h0),
    .I2(1'h0),
    .I3(1'h0),
    .O(n[0])
  );
  SB_DFF ff0 (
    .C(clk),
    .D(n[0]),
    .Q(q)
  );
  SB_RAM40_4K #(
    .READ_MODE(2'h0)
  ) \\mem.ram  (
    .RCLK(clk),
    .RCLKE(q),
    .RE(1'h1),
    .WCLK(clk),
    .WCLKE(a),
    .WE(1'h1)
  );
  SB_MAC16 #(
    .A_SIGNED(1'h0)
  ) mac (
    .CLK(clk),
    .O({ 31'h00000000, n[1] })
  );
endmodule
"""

# edges at 5, 15, 25, 35; the lut0 scope inside the top is not the top's
VCD = """$timescale 1ps $end
$scope module accelerator $end
$var wire 1 ! clk $end
$var wire 1 " a $end
$var wire 1 # q $end
$var wire 2 $ n [1:0] $end
$scope module lut0 $end
$var wire 1 % O $end
$upscope $end
$upscope $end
$enddefinitions $end
#0
$dumpvars
0!
x"
x#
bx $
1%
$end
#5
1!
#6
0"
b1 $
0#
#10
0!
#15
1!
#16
1"
b10 $
1#
0%
#20
0!
#25
1!
#26
b0 $
#30
0!
#35
1!
"""


def test_the_toggle_counter_on_a_hand_made_netlist_and_vcd(tmp_path):
    assert parse_bits("{ \\a.b [3], 2'h1, c }") == [("\\a.b", 3), "0", "1", ("c", -1)]
    assert parse_bits("x [2:1]") == [("x", 2), ("x", 1)]
    cells = netlist_cells(NETLIST)
    assert [(c.type, c.name) for c in cells] == [
        ("SB_LUT4", "lut0"),
        ("SB_DFF", "ff0"),
        ("SB_RAM40_4K", "\\mem.ram"),
        ("SB_MAC16", "mac"),
    ]
    vcd = tmp_path / "t.vcd"
    vcd.write_text(VCD)
    a = vcd_activity(vcd, cells)
    # n[0] 1 -> 0 (LUT), q 0 -> 1 (FF); x -> known is no toggle
    assert (a["lut_toggles"], a["ff_toggles"], a["carry_toggles"]) == (1, 1, 0)
    # reads with q = 1 and writes with a = 1, sampled before the edges at 25 and 35
    assert (a["bram_reads"], a["bram_writes"]) == (2, 2)
    assert a["dsp_ops"] == 2 and a["cycles"] == 4 and a["ffs"] == 1 and a["unresolved_bits"] == 0


ECP5_NETLIST = """module accelerator(clk, e, w, p);
  input clk;
  input e;
  input w;
  output [1:0] p;
  DP16KD #(
    .DATA_WIDTH_A(32'sd18)
  ) \\ram$1.0.0  (
    .CEA(e),
    .CEB(1'h0),
    .CLKA(clk),
    .CLKB(1'h0),
    .WEA(w),
    .WEB(1'h0)
  );
  MULT18X18D #(
    .REG_INPUTA_CLK("NONE")
  ) mul (
    .P0(p[0]),
    .P1(p[1])
  );
  CCU2C #(
    .INIT0(16'h9696)
  ) add (
    .S0(p[1])
  );
endmodule
"""

ECP5_VCD = """$scope module accelerator $end
$var wire 1 ! clk $end
$var wire 1 " e $end
$var wire 1 # w $end
$var wire 2 $ p [1:0] $end
$upscope $end
$enddefinitions $end
#0
0!
1"
0#
b0 $
#5
1!
#6
b11 $
1#
#10
0!
#15
1!
"""


def test_the_toggle_counter_reads_the_ecp5_cells(tmp_path):
    cells = netlist_cells(ECP5_NETLIST)
    assert [(c.type, c.name) for c in cells] == [
        ("DP16KD", "\\ram$1.0.0"),
        ("MULT18X18D", "mul"),
        ("CCU2C", "add"),
    ]
    vcd = tmp_path / "e.vcd"
    vcd.write_text(ECP5_VCD)
    a = vcd_activity(vcd, cells)
    # port A read at 5 (CEA, WEA low), written at 15; port B is tied off
    assert (a["bram_reads"], a["bram_writes"], a["memory_ports"]) == (1, 1, 2)
    # the product changed between the edges; p[1] is also a CCU2C sum (a carry-chain toggle)
    assert (a["dsp_ops"], a["carry_toggles"], a["cycles"]) == (1, 1, 2)


@pytest.mark.sim
def test_the_toggle_counter_on_an_icarus_run_of_a_mapped_counter(tmp_path):
    """A two-bit counter in iCE40 primitives under Icarus: bit 0 toggles every cycle, bit 1 every other."""
    from codesign.fpga.netlist import cell_models

    iverilog = shutil.which("iverilog")
    assert iverilog, "iverilog is part of the environment"
    netlist = """module accelerator(clk, rst, q);
  input clk;
  input rst;
  output [1:0] q;
  wire [1:0] d;
  SB_LUT4 #(
    .LUT_INIT(16'h5555)
  ) l0 (
    .I0(q[0]),
    .I1(1'h0),
    .I2(1'h0),
    .I3(1'h0),
    .O(d[0])
  );
  SB_LUT4 #(
    .LUT_INIT(16'h6666)
  ) l1 (
    .I0(q[0]),
    .I1(q[1]),
    .I2(1'h0),
    .I3(1'h0),
    .O(d[1])
  );
  SB_DFFSR f0 (
    .C(clk),
    .D(d[0]),
    .R(rst),
    .Q(q[0])
  );
  SB_DFFSR f1 (
    .C(clk),
    .D(d[1]),
    .R(rst),
    .Q(q[1])
  );
endmodule
"""
    tb = f"""module tb;
  reg clk = 0, rst = 1;
  wire [1:0] q;
  accelerator accelerator(.clk(clk), .rst(rst), .q(q));
  always #5 clk = ~clk;
  initial begin
    $dumpfile("{tmp_path / "c.vcd"}"); $dumpvars(0, tb);
    #12 rst = 0;
    #160 $finish;
  end
endmodule
"""
    (tmp_path / "n.v").write_text(netlist + "\n" + cell_models("up5k"))
    (tmp_path / "tb.v").write_text(tb)
    subprocess.run(
        [
            iverilog,
            "-g2005",
            "-o",
            str(tmp_path / "sim"),
            "-s",
            "tb",
            str(tmp_path / "tb.v"),
            str(tmp_path / "n.v"),
        ],
        check=True,
        timeout=120,
        capture_output=True,
    )
    subprocess.run(["vvp", str(tmp_path / "sim")], check=True, timeout=120, capture_output=True, cwd=tmp_path)
    a = vcd_activity(tmp_path / "c.vcd", netlist_cells(netlist))
    # edges at 5, 15, ..., 165: 17; reset holds the first (q = 0), the 16 after it count
    assert a["cycles"] == 17 and a["ffs"] == 2
    assert a["ff_toggles"] == 16 + 8  # q[0] every counting edge, q[1] every other
    # d[0] = ~q[0] follows q[0]; d[1] = q[0] ^ q[1] goes 0 1 1 0 over 00 01 10 11: twice in four
    assert a["lut_toggles"] == 16 + 8


@pytest.fixture(scope="module")
def tiny_build(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("power")
    make_random_network_bundle(
        str(root / "bundle"),
        seed=3,
        inputs=3,
        layers=[{"cell": "cmru", "size": 4, "eps": 1}],
        classes=2,
        input_bits=4,
    )
    build_rtl(root / "bundle", root / "build", lanes=1, target="up5k", weights="frozen")
    return root / "build"


def test_the_report_shows_the_fpga_estimate_beside_the_asic_proxy(tiny_build, tmp_path):
    out = tmp_path / "rep"
    args = ["report", str(tiny_build), "--out", str(out), "--lanes", "1", "--steps", "4", "--sequences", "1"]
    result = CliRunner().invoke(app, [*args, "--no-analog", "--clock-mhz", "12"])
    assert result.exit_code == 0, result.output
    assert "FPGA power (estimate, up5k, coarse)" in result.output
    md = (out / "report.md").read_text()
    assert md.index("## Energy and power (proxy)") < md.index("## FPGA power (estimate): iCE40UP5K (up5k)")
    assert "**FPGA power (estimate): static 0.090 mW, dynamic" in md and "at 12 MHz" in md
    fp = json.loads((out / "report.json").read_text())["fpga_power"]
    assert fp["label"] == "estimate" and fp["basis"] == "coarse" and fp["device"] == "up5k"
    assert fp["average_mw"] > fp["static_mw"] > 0
    # a netlist activity file takes over, with its own cycles per step
    activity = {"lut_toggles": 120, "ff_toggles": 60, "bram_reads": 4, "cycles": 80, "steps": 8, "ffs": 30}
    (tiny_build / "power").mkdir(exist_ok=True)
    (tiny_build / "power" / "up5k.json").write_text(json.dumps({**activity, "basis": "netlist"}))
    result = CliRunner().invoke(
        app, [*args, "--no-analog", "--clock-mhz", "12", "--json", str(tmp_path / "r.json")]
    )
    assert result.exit_code == 0, result.output
    fp = json.loads((tmp_path / "r.json").read_text())["fpga_power"]
    assert fp["basis"] == "netlist" and fp["cycles_per_step"] == 10
    assert fp["logic_pj_per_step"] == pytest.approx((120 * 0.2 + 60 * 0.2 + 4 * 10.0) / 8)
    assert "netlist simulation" in (out / "report.md").read_text()
    result = CliRunner().invoke(app, [*args, "--no-analog", "--fpga-device", "up6k"])
    assert result.exit_code != 0 and "--fpga-device 'up6k' is not one of" in result.output


def test_power_needs_a_netlist_under_icarus(tiny_build):
    result = CliRunner().invoke(app, ["sim", str(tiny_build), "--power"])
    assert result.exit_code == 2 and "--power needs --netlist DEVICE and --sim icarus" in result.output


def test_the_margin_table_on_one_bundle(tmp_path):
    out, js = tmp_path / "m.md", tmp_path / "m.json"
    args = ["margin", "--bundles", str(ROOT / "models" / "bundles"), "--only", "parity_hsru"]
    result = CliRunner().invoke(
        app, [*args, "--lanes", "1,64", "--steps", "20", "--out", str(out), "--json", str(js)]
    )
    assert result.exit_code == 0, result.output
    table = json.loads(js.read_text())
    ok, wide = table["rows"]
    assert ok["status"] == "ok" and ok["bundle"] == "parity_hsru" and ok["lanes"] == 1
    slow, fast = ok["link"]["115200"], ok["link"]["3000000"]
    assert fast["realtime_margin"] >= slow["realtime_margin"] > 0
    assert slow["bottleneck"] in ("link", "accelerator")
    assert ok["accelerator_us_per_step"] == pytest.approx(ok["cycles_per_step"] / 12.0)
    assert ok["fpga_power"]["average_mw"] > ok["fpga_power"]["static_mw"]
    assert "exceeds the widest layer" in wide["status"]
    md = out.read_text()
    assert "| parity_hsru | 1 |" in md and "Made by:" in md and "codesign margin" in md
    result = CliRunner().invoke(app, ["margin", "--only", "no_such_bundle"])
    assert result.exit_code == 2 and "no bundle no_such_bundle" in result.output
