"""One table of several ``scripts/real_data.py --json`` results: a row per data set, a column per setting.

Each argument is ``LABEL=RESULTS.json``; the columns keep the order given. A cell is the golden
(= hardware) accuracy, mean [min; max] over the seeds of that file; the last rows are the mean
over the data sets every column covers, how many sets each setting wins, and each column against
the first on the sets both cover. MiniRocket's column
comes from the first file that holds it.

    .venv/bin/python scripts/ablation_table.py --out models/results/classify_ablation.md \\
        base=runs/ablation/base.json all=runs/ablation/all.json ...
"""

from __future__ import annotations

import argparse
import json
import shlex
from pathlib import Path

import numpy as np


def load(spec: str) -> tuple[str, dict[str, dict]]:
    label, sep, path = spec.partition("=")
    if not sep or not label:
        raise SystemExit(f"{spec!r}: expected LABEL=RESULTS.json")
    if not Path(path).is_file():
        raise SystemExit(f"{path}: file not found (write it with scripts/real_data.py --json)")
    raw = json.loads(Path(path).read_text())
    return label, {v["name"]: v for v in raw.values()}


def cell(values: list[float]) -> str:
    return f"{100 * np.mean(values):.1f} [{100 * min(values):.1f}; {100 * max(values):.1f}]"


def _golden_mean(entry: dict) -> float:
    """A data set's golden accuracy over the seeds of one results file."""
    return float(np.mean([run["golden"] for run in entry["ours"]]))


def _against_first(columns: list[tuple[str, dict[str, dict]]], label: str, rows: dict[str, dict]) -> str:
    """The column's mean minus the first column's, over the data sets both cover: a column that
    skips the long sets is still compared with the first on what it ran."""
    first_label, first = columns[0]
    if label == first_label:
        return "-"
    shared = [n for n in rows if n in first]
    if not shared:
        return "no set in common"
    delta = 100 * np.mean([_golden_mean(rows[n]) - _golden_mean(first[n]) for n in shared])
    return f"{delta:+.1f} on {len(shared)}"


def table(columns: list[tuple[str, dict[str, dict]]], title: str, command: str) -> str:
    names = list(dict.fromkeys(n for _, rows in columns for n in rows))
    common = [n for n in names if all(n in rows for _, rows in columns)]
    minirocket = {}
    for _, rows in columns:
        for n, v in rows.items():
            mr = [m for m in v.get("minirocket", []) if m == m]  # NaN: not run
            if mr and n not in minirocket:
                minirocket[n] = mr
    head = ["data set", *[label for label, _ in columns], "MiniRocket"]
    lines = [f"# {title}", "", "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    means = {label: [] for label, _ in columns}
    wins = dict.fromkeys(means, 0)
    for n in names:
        golden = {label: [r["golden"] for r in rows[n]["ours"]] for label, rows in columns if n in rows}
        if n in common:
            best = max(np.mean(v) for v in golden.values())
            for label, v in golden.items():
                means[label].append(np.mean(v))
                wins[label] += bool(np.isclose(np.mean(v), best))
        cells = [cell(golden[label]) if label in golden else "not run" for label, _ in columns]
        lines.append(
            f"| {n} | " + " | ".join(cells) + f" | {cell(minirocket[n]) if n in minirocket else '-'} |"
        )
    mean_mr = [np.mean(minirocket[n]) for n in common if n in minirocket]
    mr_mean = f"{100 * np.mean(mean_mr):.1f}" if common and len(mean_mr) == len(common) else "-"
    col_means = [f"{100 * np.mean(means[label]):.1f}" if means[label] else "-" for label, _ in columns]
    lines.append(
        f"| mean of the {len(common)} sets every column covers | " + " | ".join(col_means) + f" | {mr_mean} |"
    )
    lines.append(
        "| sets where the column is best | " + " | ".join(str(wins[label]) for label, _ in columns) + " | |"
    )
    lines.append(
        f"| against {columns[0][0]}, on the sets both cover (points) | "
        + " | ".join(_against_first(columns, label, rows) for label, rows in columns)
        + " | |"
    )
    lines += ["", f"Made by: `{command}`", ""]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("columns", nargs="+", help="LABEL=RESULTS.json, in column order")
    parser.add_argument("--out", required=True)
    parser.add_argument("--title", default="Golden accuracy (%) of each training setting, per data set")
    parser.add_argument(
        "--notes",
        type=Path,
        help="a Markdown file placed under the table (what each column is, what it shows)",
    )
    args = parser.parse_args()
    from codesign.atomic import write_text

    columns = [load(spec) for spec in args.columns]
    notes = ["--notes", str(args.notes)] if args.notes else []
    if args.notes and not args.notes.is_file():
        raise SystemExit(f"--notes {args.notes}: file not found")
    command = shlex.join(
        [".venv/bin/python", "scripts/ablation_table.py", "--out", args.out, *notes, *args.columns]
    )
    text = table(columns, args.title, command)
    if args.notes:  # the notes live in their own file, so a rerun of the table keeps them
        text += "\n" + args.notes.read_text()
    write_text(Path(args.out), text)


if __name__ == "__main__":
    main()
