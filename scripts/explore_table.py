"""One markdown table from `codesign explore` results: a row per network, a column per deployment.

The explore summary ranks designs under budgets; a comparison of cells wants every configuration
side by side instead: one row per (cell, eps, d, pooling), the float accuracy, then the golden
accuracy of each (weight bits, quantization) pair, mean [min; max] over seeds (in %).

    python scripts/explore_table.py runs/explore/jv_cells/results.csv [more results.csv ...]
"""

from __future__ import annotations

import argparse
import csv
import statistics
from collections import defaultdict
from pathlib import Path

ROW_KEYS = ("cell", "eps", "d", "pooling")


def _stats(values: list[float]) -> str:
    return f"{100 * statistics.mean(values):.1f} [{100 * min(values):.1f}; {100 * max(values):.1f}]"


def read_trials(paths: list[Path]) -> list[dict[str, str]]:
    """The finished trials ("ok") of every results.csv, in file order."""
    rows: list[dict[str, str]] = []
    for path in paths:
        with path.open(newline="") as f:
            reader = csv.DictReader(f)
            missing = {
                *ROW_KEYS,
                "weight_bits",
                "quantization",
                "accuracy",
                "float_accuracy",
                "seed",
                "status",
            } - set(reader.fieldnames or [])
            if missing:
                raise SystemExit(f"{path}: not an explore results.csv (no column {sorted(missing)[0]!r})")
            rows += [r for r in reader if r["status"] == "ok"]
    return rows


def table(rows: list[dict[str, str]]) -> str:
    """The markdown table: float accuracy, then one column per (weight bits, quantization)."""
    golden: dict[tuple, dict[tuple, list[float]]] = defaultdict(lambda: defaultdict(list))
    floats: dict[tuple, dict[str, float]] = defaultdict(dict)
    columns: set[tuple[int, str]] = set()
    for r in rows:
        key = tuple(r[k] for k in ROW_KEYS)
        col = (int(r["weight_bits"]), r["quantization"])
        columns.add(col)
        golden[key][col].append(float(r["accuracy"]))
        if r["quantization"] == "ptq":  # QAT fine-tunes the float run: its float figure is the same network's
            floats[key][r["seed"]] = float(r["float_accuracy"])
    cols = sorted(columns, key=lambda c: (-c[0], c[1]))
    head = (
        "| "
        + " | ".join(ROW_KEYS)
        + " | float | "
        + " | ".join(f"{b}-bit {q.upper()}" for b, q in cols)
        + " |"
    )
    lines = [head, "|" + "---|" * (len(ROW_KEYS) + 1 + len(cols))]
    for key in sorted(golden, key=lambda k: (k[0], k[1], int(k[2]), k[3])):
        cells = [_stats(golden[key][c]) + (f" (n={len(golden[key][c])})" if len(golden[key][c]) != 3 else "")
                 if golden[key][c] else "" for c in cols]  # fmt: skip
        fl = _stats(list(floats[key].values())) if floats[key] else ""
        lines.append("| " + " | ".join(key) + f" | {fl} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("results", nargs="+", type=Path, help="results.csv of codesign explore")
    args = parser.parse_args(argv)
    print(table(read_trials(args.results)))


if __name__ == "__main__":
    main()
