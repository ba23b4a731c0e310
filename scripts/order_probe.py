"""Does a trained network read the order of its frames? Golden accuracy with the test frames as
they are, reversed and shuffled.

Each argument is ``LABEL=RESULTS.json`` (a ``scripts/real_data.py --json`` file); every run it
lists is loaded from its run directory, exported, and scored by the golden (= hardware) model on
the official test split three ways: as it is, with every series' frames in reverse order, and
with them in one random order (the same permutation for every series). A network whose score
does not move under shuffling cannot tell a shape from its frames' histogram. Name only sets whose
series all have one length with ``--sets``: a shuffle would move a padded series' padding.

    .venv/bin/python scripts/order_probe.py --out models/results/ablation/order.md \\
        --sets ItalyPowerDemand,GunPoint minimal=models/results/ablation/minimal_half.json \\
        default=models/results/ablation/defaults.json
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
from pathlib import Path

import numpy as np
import torch

ORDERS = ("as is", "reversed", "shuffled")


def _orders(x: torch.Tensor, seed: int) -> dict[str, torch.Tensor]:
    """The test frames as they are, reversed and shuffled along time (``x``: batch, time, features)."""
    perm = torch.from_numpy(np.random.default_rng(seed).permutation(x.shape[1]))
    return {"as is": x, "reversed": x.flip(1), "shuffled": x[:, perm]}


def probe_run(run: Path) -> dict[str, float]:
    """Golden accuracy of one run's bundle per frame order."""
    from codesign.quant.export import bundle_from_model, golden_accuracy
    from codesign.train.trainer import load_run, make_recipe_task

    recipe, model, _ = load_run(run)
    task = make_recipe_task(recipe)
    x, y = task.split("test", recipe.seed)
    bundle = bundle_from_model(model, recipe, task)
    return {name: golden_accuracy(bundle, task, xs, y)[0] for name, xs in _orders(x, recipe.seed).items()}


def _cell(values: list[float]) -> str:
    return f"{100 * np.mean(values):.1f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("results", nargs="+", help="LABEL=RESULTS.json of scripts/real_data.py --json")
    parser.add_argument(
        "--sets", required=True, help="comma-separated data sets of one series length to probe"
    )
    parser.add_argument("--out", type=Path, required=True, help="the markdown table to write")
    args = parser.parse_args()
    torch.set_num_threads(1)
    from codesign.atomic import write_text

    wanted = args.sets.split(",")
    rows: dict[str, list[str]] = {name: [] for name in wanted}  # the table's rows, set by set
    for spec in args.results:
        label, sep, path = spec.partition("=")
        if not sep or not Path(path).is_file():
            raise SystemExit(f"{spec!r}: expected LABEL=RESULTS.json with an existing file")
        for entry in json.loads(Path(path).read_text()).values():
            if entry["name"] not in wanted:
                continue
            scores = [probe_run(Path(r["run"])) for r in entry["ours"]]
            cells = {o: [s[o] for s in scores] for o in ORDERS}
            row = (
                f"| {entry['name']} | {label} | {len(scores)} | "
                + " | ".join(_cell(cells[o]) for o in ORDERS)
                + " |"
            )
            rows[entry["name"]].append(row)
            print(row, flush=True)
    if missing := [name for name in wanted if not rows[name]]:
        raise SystemExit(f"--sets: {', '.join(missing)} in none of the results files")
    command = shlex.join(["python", "scripts/order_probe.py", *sys.argv[1:]])
    text = (
        "# Golden accuracy with the test frames as they are, reversed and shuffled\n\n"
        "Mean over the seeds of each results file (%); the same random permutation of the time axis for "
        "every series of a run.\n\n"
        "| data set | network | seeds | as is | reversed | shuffled |\n|---|---|---|---|---|---|\n"
        + "\n".join(row for name in wanted for row in rows[name])
        + f"\n\nMade by `{command}`.\n"
    )
    write_text(args.out, text)


if __name__ == "__main__":
    main()
