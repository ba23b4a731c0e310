"""scripts/real_data.py: the 'before' column read from an earlier table, and the per-set aim column."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "real_data.py"
spec = importlib.util.spec_from_file_location("real_data", SCRIPT)
real_data = importlib.util.module_from_spec(spec)
spec.loader.exec_module(real_data)

EARLIER = """# Real-data accuracy of deployable models beside MiniRocket

| data set | test sequences | recipe | network | golden accuracy (%) | float (%) | MiniRocket (%) | golden - MiniRocket (points) |
|---|---|---|---|---|---|---|---|
| ItalyPowerDemand | 1029 | `models/classify_hw.yaml` | CMRU 16, last pooling, 8-bit weights | 66.6 [61.1; 71.2] | 66.9 [60.6; 72.3] | 96.5 [96.3; 96.7] | -29.9 |
| GunPoint | 150 | `models/classify_hw.yaml` | CMRU 16, last pooling, 8-bit weights | 88.0 [84.0; 94.7] | 89.3 [86.0; 95.3] | 99.3 [99.3; 99.3] | -11.3 |

Made by ...
"""


def test_before_reads_the_golden_column_per_data_set(tmp_path) -> None:
    path = tmp_path / "before.md"
    path.write_text(EARLIER)
    assert real_data.read_before(path) == {
        "ItalyPowerDemand": "66.6 [61.1; 71.2]",
        "GunPoint": "88.0 [84.0; 94.7]",
    }


def test_before_refuses_a_file_without_a_table(tmp_path) -> None:
    path = tmp_path / "notes.md"
    path.write_text("# notes\n\nno table here\n")
    with pytest.raises(SystemExit, match="notes.md: no rows"):
        real_data.read_before(path)
    with pytest.raises(SystemExit, match="missing.md: file not found"):
        real_data.read_before(tmp_path / "missing.md")


def test_aim_says_met_or_by_how_much_it_misses() -> None:
    assert real_data.against_aim([0.95, 0.96], [0.99, 0.99], 5.0) == "met"  # 4.5 points below
    assert real_data.against_aim([0.90], [0.95], 5.0) == "met"  # exactly 5 points below
    assert real_data.against_aim([0.80, 0.84], [0.99], 5.0) == "misses by 12.0"
    assert real_data.against_aim([1.0], [0.9], 5.0) == "met"  # above the baseline
    assert real_data.against_aim([0.9], [float("nan")], 5.0) == "no baseline"
