"""The sky130 cells in ngspice: a characterised inverter and NAND, checked against a direct chain.

Long (`make test-long`; `make asic-cells` runs every cell): each cell is a few decks of ngspice.
"""

from __future__ import annotations

import pytest

from codesign.asic import pdk
from codesign.asic.characterise import characterise_cell
from codesign.asic.validate import failures, validate_cell

pytestmark = pytest.mark.long


@pytest.fixture(scope="module")
def nand2() -> dict:
    return characterise_cell("nand2_1", pdk.corner("tt"))


def test_nand2_tables_are_physical(nand2) -> None:
    vdd = 1.8
    for arc in nand2["arcs"]:
        for key in ("cell_rise", "cell_fall", "rise_transition", "fall_transition"):
            table = arc[key]
            # slower with more load and with a slower input
            assert all(row[0] < row[1] < row[2] for row in table)
            assert all(table[0][j] < table[2][j] for j in range(3))
        # an output rise draws at least the load's C * VDD^2 from the supply
        for i, row in enumerate(arc["rise_energy"]):
            for j, energy in enumerate(row):
                assert energy >= nand2["loads"][j] * vdd**2
                assert arc["rise_power"][i][j] == pytest.approx(energy - nand2["loads"][j] * vdd**2)
    for pin in nand2["pins"].values():
        assert 0.0005 < pin["capacitance"] < 0.01  # 0.5-10 fF
    powers = [row["power"] for row in nand2["leakage"]]
    assert len(powers) == 4 and all(0 < p < 1e-9 for p in powers)
    # both inputs high: the off pull-up pair leaks most
    assert max(powers) == nand2["leakage"][3]["power"]


def test_nand2_tables_agree_with_a_direct_chain(nand2) -> None:
    result = validate_cell(nand2, pdk.corner("tt"))
    assert failures([result]) == []


def test_asic_command_on_a_random_build(tmp_path) -> None:
    """`codesign asic` end to end: every total of the report is the sum of its parts, each power
    figure is the characterised cells' (the library is characterised first when not cached)."""
    import json

    from typer.testing import CliRunner

    from codesign.asic import library
    from codesign.cli import app

    runner = CliRunner()

    def invoke(*args):
        return runner.invoke(app, [str(a) for a in args], catch_exceptions=False)

    assert invoke("random-bundle", "--out", tmp_path / "b", "--d", "4", "--inputs", "3").exit_code == 0
    assert invoke("rtl", tmp_path / "b", "--out", tmp_path / "r", "--lanes", "1").exit_code == 0
    res = invoke("asic", tmp_path / "r", "--clock", "20", "--json", tmp_path / "asic.json")
    assert res.exit_code == 0, res.output
    assert "sky130 gate-level tt 1.8 V 25 C" in res.output
    report = json.loads((tmp_path / "asic.json").read_text())
    records = {r["cell"]: r for r in library.load_records(pdk.corner("tt"))}
    assert report["cell_count"] == sum(report["cells"].values()) > 0
    assert report["flops"] == report["cells"].get("dfxtp_1", 0) > 0
    logic = sum(n * records[c]["area"] for c, n in report["cells"].items())
    assert report["logic_area_um2"] == pytest.approx(logic)
    trees = report["buffer_trees"]
    assert report["area_um2"] == pytest.approx(logic + report["memory_area_um2"] + trees["area_um2"])
    leak = sum(n * records[c]["leakage_mean"] for c, n in report["cells"].items())
    assert report["leakage_w"] == pytest.approx(leak + report["memory_leakage_w"] + trees["leakage_w"])
    clock = records["dfxtp_1"]["pins"]["CLK"]
    per_flop = clock["rise_energy"] + clock["fall_energy"]
    assert report["clock"]["pins_pj"] == pytest.approx(report["flops"] * per_flop)
    assert report["clock"]["power_w"] == pytest.approx(report["clock"]["per_cycle_pj"] * 1e-12 * 20e6)
    assert report["idle_power_w"]["clock gated"] == pytest.approx(report["leakage_w"])
    assert report["timing"]["fmax_mhz"] > 20 and report["timing_met"]
