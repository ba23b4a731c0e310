"""suRNN results at this machine's budget: the table of ``models/results/surnn.md``.

Every entry ``RECIPE[:key=value,...]`` (task options overridden, e.g. ``delay=200``) is trained in
``RUNS/NAME`` (a run holding the same recipe is reused or resumed, as ``codesign train`` does),
one after the other, and its best checkpoint is scored on the test split: accuracy for copying
memory (also with the delay filled with random symbols, the paper's robustness check), mean
absolute and squared error for Mackey-Glass (normalised units, beside the persistence forecast
``y_t = x_t`` and the mean forecast ``y_t = 0``), with the update rate ``p`` of selective-update
models (fraction of open neuron-steps over the test length). Rows are appended to ``--jsonl`` as
each run finishes, so a stop loses nothing; the markdown table goes to ``--out``.

    OMP_NUM_THREADS=1 .venv/bin/python scripts/surnn_results.py --runs runs/surnn \\
        --out runs/surnn/table.md models/copying_memory_sugru_d1000.yaml \\
        models/copying_memory_sugru_d1000.yaml:delay=200 ...
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import time
from pathlib import Path

import torch
import yaml


def parse_entry(entry: str) -> tuple[Path, dict]:
    path, _, rest = entry.partition(":")
    overrides = {}
    for item in filter(None, rest.split(",")):
        key, sep, value = item.partition("=")
        if not sep:
            raise SystemExit(f"{entry!r}: override {item!r} is not KEY=VALUE")
        overrides[key] = yaml.safe_load(value)
    return Path(path), overrides


def score(recipe, model, task) -> dict:
    from codesign.nn.surnn import update_rate
    from codesign.train.trainer import evaluate

    x, y = task.split("test", recipe.seed)
    row: dict = {"steps": int(x.shape[1]), "update_rate": update_rate(model, x.shape[1])}
    if task.kind == "classification":
        row["test_accuracy"] = evaluate(model, task, x, y)
        if hasattr(task, "delay_noise"):
            noisy = dataclasses.replace(task, delay_noise=True)
            xn, yn = noisy.split("test", recipe.seed)
            row["noisy_delay_accuracy"] = evaluate(model, noisy, xn, yn)
        return row
    with torch.no_grad():
        model.eval()
        out = torch.cat([model(x[i : i + 16]) for i in range(0, len(x), 16)])
    row |= {
        "test_mae": float((out - y).abs().mean()),
        "test_mse": float(((out - y) ** 2).mean()),
        "persistence_mae": float((x - y).abs().mean()),
        "persistence_mse": float(((x - y) ** 2).mean()),
        "mean_mae": float(y.abs().mean()),
        "mean_mse": float((y**2).mean()),
    }
    return row


def table(rows: list[dict]) -> str:
    lines = [
        "| run | task | cell | iterations | train (s) | test | p (update rate) |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        if "test_accuracy" in r:
            test = f"{100 * r['test_accuracy']:.2f}% (noisy delay {100 * r['noisy_delay_accuracy']:.2f}%)"
        else:
            test = (
                f"MAE {r['test_mae']:.3f}, MSE {r['test_mse']:.4f} (persistence {r['persistence_mae']:.3f} / "
                f"{r['persistence_mse']:.3f}; mean {r['mean_mae']:.3f} / {r['mean_mse']:.3f})"
            )
        p = "-" if r["update_rate"] is None else f"{r['update_rate']:.3f}"
        lines.append(
            f"| `{r['name']}` | {r['task']} | {r['cell']} | {r['iterations']} | {r['wall_s']:.0f} | {test} | {p} |"
        )
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("entries", nargs="+", help="RECIPE[:key=value,...] (task options)")
    parser.add_argument("--runs", type=Path, default=Path("runs/surnn"))
    parser.add_argument("--out", type=Path, required=True, help="markdown table")
    parser.add_argument("--jsonl", type=Path, default=None, help="rows, one per finished run")
    parser.add_argument(
        "--max-seconds", type=float, default=None, help="wall-clock budget of each run (train.max_seconds)"
    )
    args = parser.parse_args()
    torch.set_num_threads(1)

    from codesign.train.recipe import parse_recipe
    from codesign.train.trainer import SUMMARY, load_run, make_recipe_task, train

    rows = []
    for entry in args.entries:
        path, overrides = parse_entry(entry)
        data = yaml.safe_load(path.read_text())
        data["task"] = {**data["task"], **overrides}
        if args.max_seconds is not None:  # part of the recipe, so a run of another budget is not reused
            data["train"] = {**data["train"], "max_seconds": args.max_seconds}
        if overrides:
            data["name"] = data["name"] + "@" + ",".join(f"{k}={v}" for k, v in overrides.items())
        recipe = parse_recipe(data, path)
        run_dir = args.runs / recipe.name
        if not (run_dir / SUMMARY).is_file():
            t0 = time.monotonic()
            train(recipe, run_dir, progress=False)
            print(f"trained {recipe.name} in {time.monotonic() - t0:.0f} s", flush=True)
        _, model, summary = load_run(run_dir)
        task = make_recipe_task(recipe)
        row = {
            "name": recipe.name,
            "recipe": str(path),
            "task": f"{recipe.task.name} " + ", ".join(f"{k} {v}" for k, v in recipe.task.options().items()),
            "cell": recipe.model.cell,
            "iterations": summary.get("iterations"),
            "wall_s": summary.get("wall_s", 0.0),
        } | score(recipe, model, task)
        rows.append(row)
        print(json.dumps(row), flush=True)
        if args.jsonl:
            with args.jsonl.open("a") as f:
                f.write(json.dumps(row) + "\n")
    args.out.write_text(table(rows))


if __name__ == "__main__":
    main()
