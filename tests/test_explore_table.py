"""scripts/explore_table.py: one row per network, one column per deployment, seeds aggregated."""

from __future__ import annotations

import csv
import importlib.util
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "explore_table.py"
spec = importlib.util.spec_from_file_location("explore_table", SCRIPT)
explore_table = importlib.util.module_from_spec(spec)
spec.loader.exec_module(explore_table)

FIELDS = [
    "cell",
    "eps",
    "d",
    "pooling",
    "weight_bits",
    "quantization",
    "seed",
    "status",
    "float_accuracy",
    "accuracy",
]


def _write(path: Path, rows: list[list]) -> Path:
    with path.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(FIELDS)
        w.writerows(rows)
    return path


def test_rows_columns_and_seed_statistics(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rows = [["cmru", "1", "16", "last", 8, "ptq", s, "ok", 0.9 + 0.01 * s, 0.9 + 0.02 * s] for s in range(3)]
    rows += [["cmru", "1", "16", "last", 4, "qat", s, "ok", 0.5, 0.8] for s in range(3)]
    rows += [["cmru", "1", "16", "last", 4, "ptq", 0, "failed", "", ""]]  # failed trials are left out
    rows += [["mingru", "-", "8", "last", 8, "ptq", 0, "ok", 0.97, 0.96]]
    explore_table.main([str(_write(tmp_path / "results.csv", rows))])
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "| cell | eps | d | pooling | float | 8-bit PTQ | 4-bit QAT |"
    # the float column comes from the PTQ trials (QAT fine-tunes the same float run)
    assert lines[2] == "| cmru | 1 | 16 | last | 91.0 [90.0; 92.0] | 92.0 [90.0; 94.0] | 80.0 [80.0; 80.0] |"
    assert lines[3] == "| mingru | - | 8 | last | 97.0 [97.0; 97.0] | 96.0 [96.0; 96.0] (n=1) |  |"


def test_not_a_results_file_is_refused(tmp_path: Path) -> None:
    bad = tmp_path / "other.csv"
    bad.write_text("a,b\n1,2\n")
    with pytest.raises(SystemExit, match=r"other.csv: not an explore results.csv \(no column 'accuracy'\)"):
        explore_table.main([str(bad)])
