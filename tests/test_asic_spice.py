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
