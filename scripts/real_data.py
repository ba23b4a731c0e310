"""Real-data accuracy of deployable recipes beside MiniRocket: ``models/results/real_data.md``.

For every entry ``RECIPE[:dataset=NAME]`` and seed, the recipe is trained (``runs`` are reused when
they hold the same recipe, as ``codesign train`` does), its best checkpoint is quantized with the
recipe's formats and scored by the golden integer model (= the hardware) on the official test
split. MiniRocket (aeon, 10 000 kernels, ridge classifier) is fitted on the same task's whole
training data (our training plus validation splits, the same standardisation and padding) once per
seed, single-threaded. Every accuracy is quoted as mean [min; max] over the seeds.

    OMP_NUM_THREADS=1 NUMBA_NUM_THREADS=1 .venv/bin/python scripts/real_data.py --seeds 0,1,2 \\
        --out models/results/real_data.md models/japanese_vowels_cmru_hw.yaml \\
        models/uea_cmru_hw.yaml:dataset=GunPoint ...
"""

from __future__ import annotations

import argparse
import json
import re
import shlex
import time
from pathlib import Path

import numpy as np
import torch
import yaml


def minirocket(task, seeds: list[int]) -> list[float]:
    from aeon.classification.convolution_based import MiniRocketClassifier

    xs, ys = zip(*(task.split(s, 0) for s in ("train", "val")), strict=True)
    x_fit = torch.cat(xs).numpy().transpose(0, 2, 1).astype(np.float64)  # (n, channels, time)
    y_fit = torch.cat(ys).numpy()
    xt, yt = task.split("test", 0)
    x_test = xt.numpy().transpose(0, 2, 1).astype(np.float64)
    accs = []
    for seed in seeds:
        clf = MiniRocketClassifier(random_state=seed, n_jobs=1)
        clf.fit(x_fit, y_fit)
        accs.append(float((clf.predict(x_test) == yt.numpy()).mean()))
    return accs


def ours(recipe_data: dict, seed: int, work: Path) -> dict:
    """Train (or reuse) one seed of one recipe and score its bundle with the golden model.

    Runs in a Dask worker process as well as in this one: one torch thread, imports inside."""
    torch.set_num_threads(1)
    from codesign.errors import CodesignError
    from codesign.quant.export import bundle_from_model, golden_accuracy
    from codesign.train.recipe import parse_recipe
    from codesign.train.trainer import RECIPE_FILE, holds_recipe, load_run, make_recipe_task, train

    recipe = parse_recipe(dict(recipe_data, seed=seed))
    options = recipe.task.options()
    dataset = options.get("dataset") or (Path(options["train"]).stem if "train" in options else None)
    run = work / f"{recipe.name}{'_' + dataset if dataset else ''}_s{seed}"
    if not (run / "summary.json").is_file():
        train(recipe, run, progress=False)
    elif not holds_recipe(run / RECIPE_FILE, recipe):  # a finished run of other settings: never reused
        raise CodesignError(
            "holds a finished run of another recipe (other --set values or defaults); use another --work",
            path=run,
        )
    recipe, model, summary = load_run(run)
    task = make_recipe_task(recipe)
    x, y = task.split("test", seed)
    golden, _ = golden_accuracy(bundle_from_model(model, recipe, task), task, x, y)
    return {
        "run": str(run),
        "golden": golden,
        "float": summary["test"],
        "test_sequences": len(y),
        "train_s": summary.get("wall_s"),  # the run's own training time, also when it is reused
    }


def fmt(values: list[float]) -> str:
    return f"{100 * np.mean(values):.1f} [{100 * min(values):.1f}; {100 * max(values):.1f}]"


def read_before(path: Path) -> dict[str, str]:
    """Golden accuracy per data set from a table this script wrote earlier (the ``--before`` column).

    Rows are matched by the data set name (first column); the golden cell is the fifth column.
    A file that holds no such table is refused, naming it: a silently empty column would read as
    "not run" for every set.
    """
    if not path.is_file():
        raise SystemExit(f"--before {path}: file not found")
    golden = {}
    for line in path.read_text().splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if (
            len(cells) >= 8
            and line.startswith("|")
            and cells[0] not in ("data set", "")
            and "---" not in cells[0]
        ):
            golden[cells[0]] = cells[4]
    if not golden:
        raise SystemExit(f"--before {path}: no rows of a scripts/real_data.py table found")
    return golden


DEFAULT_OPTIONS = {"work": "runs/real_data", "baselines": "runs/real_data/minirocket.json"}
"""Where runs and MiniRocket's scores are kept unless ``--work`` and ``--baselines`` say otherwise."""


def against_aim(golden: list[float], baseline: list[float], aim: float) -> str:
    """``met`` when the mean golden accuracy is within ``aim`` points of the baseline's mean, else by how much it misses."""
    shortfall = 100 * (np.mean(baseline) - np.mean(golden)) - aim
    if np.isnan(shortfall):
        return "no baseline"
    return "met" if shortfall <= 1e-9 else f"misses by {shortfall:.1f}"


def describe(recipe, length: int | None = None) -> str:
    """The network column: :func:`codesign.train.advice.describe_network` (``span: auto`` resolved
    for series of ``length`` frames), and the input scaling where it is not one per channel (a
    row whose series are each scaled on its own sees other inputs than its neighbours)."""
    from codesign.data.series import check_normalize
    from codesign.train.advice import describe_network

    mode = check_normalize(recipe.task.options().get("normalize", True), recipe.task.name)
    scaling = {"series": "; each series scaled on its own", "none": "; unscaled inputs"}
    return describe_network(recipe, length) + scaling.get(mode, "")


def entry_recipe(entry: str, settings: list[str] | None = None):
    """``(recipe path, Recipe)`` of ``RECIPE.yaml[:key=value,...]`` (task options after the colon),
    with ``settings`` (``KEY=VALUE``, dotted keys as ``codesign train --set``) applied first."""
    from codesign.train.recipe import apply_override, parse_recipe

    path, _, override = entry.partition(":")
    data = yaml.safe_load(Path(path).read_text())
    for item in settings or []:
        data = apply_override(data, item)
    for item in filter(None, override.split(",")):  # RECIPE:key=value[,key=value]: task options
        key, _, value = item.partition("=")
        value = yaml.safe_load(value)
        if key in ("train", "test") and isinstance(value, str):  # typed here: from the working directory
            value = str(Path(value).resolve())
        data["task"] = dict(data["task"], **{key: value})
    return path, parse_recipe(data, Path(path))  # the recipe's own paths: relative to the recipe file


def trained(recipes: list, seeds: list[int], work: Path, workers: int):
    """Per recipe, in order, the list of :func:`ours` results over ``seeds``.

    With ``workers`` > 1 every run goes to a local Dask cluster at once (:func:`codesign.runner.dask_client`)
    and a recipe's results come back as soon as all its seeds are done; finished runs are reused
    from ``work`` either way, so a stopped table continues where it stopped."""
    jobs = [[(r.model_dump(mode="json"), seed) for seed in seeds] for _, r in recipes]
    if workers <= 1:
        for row in jobs:
            yield [ours(data, seed, work) for data, seed in row]
        return
    from codesign.runner import dask_client

    with dask_client(None, workers) as client:
        futures = [[client.submit(ours, data, seed, work, pure=False) for data, seed in row] for row in jobs]
        for row in futures:
            yield [f.result() for f in row]


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """The command line (``sys.argv`` when ``argv`` is None)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "entries",
        nargs="+",
        help="RECIPE.yaml[:dataset=NAME] or RECIPE.yaml:train=PATH,test=PATH (a files task: your own data)",
    )
    parser.add_argument("--seeds", default="0,1,2")
    parser.add_argument("--work", default=DEFAULT_OPTIONS["work"])
    parser.add_argument("--out", default="models/results/real_data.md")
    parser.add_argument("--json", default=None, help="also write the raw numbers here")
    parser.add_argument(
        "--baselines",
        default=DEFAULT_OPTIONS["baselines"],
        help="MiniRocket accuracies per data set and seeds, reused when present (a spoken-digit fit takes minutes)",
    )
    parser.add_argument("--no-minirocket", action="store_true", help="only train and score our recipes")
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a recipe setting for every entry (as codesign train --set), e.g. train.threads=1",
    )
    parser.add_argument(
        "--workers",
        type=int,
        default=1,
        help="train this many runs at once on a local Dask cluster (1: in this process)",
    )
    parser.add_argument(
        "--before",
        default=None,
        help="an earlier table of this script: its golden accuracy per data set becomes a 'before' column",
    )
    parser.add_argument(
        "--aim",
        type=float,
        default=None,
        help="add a column saying whether the golden mean is within this many points of MiniRocket's",
    )
    return parser.parse_args(argv)


def main() -> None:
    args = parse_args()
    torch.set_num_threads(1)
    from codesign.train.trainer import make_recipe_task

    seeds = [int(s) for s in args.seeds.split(",")]
    t0 = time.monotonic()
    rows, raw = [], {}
    before = read_before(Path(args.before)) if args.before else None
    cache = Path(args.baselines)
    baselines = json.loads(cache.read_text()) if cache.is_file() else {}
    recipes = [entry_recipe(entry, args.set) for entry in args.entries]
    for entry, (path, recipe), results in zip(
        args.entries, recipes, trained(recipes, seeds, Path(args.work), args.workers), strict=True
    ):
        task = make_recipe_task(recipe.model_copy(update={"seed": 0}))
        options = recipe.task.options()
        name = options.get("dataset") or (
            # a files task is named after its training file, without the UCR/UEA "_TRAIN"
            re.sub(r"_train$", "", Path(options["train"]).stem, flags=re.IGNORECASE)
            if "train" in options
            else recipe.task.name
        )
        key = f"{name} {json.dumps(recipe.task.run_options(0), sort_keys=True)} seeds {args.seeds}"
        if key not in baselines and not args.no_minirocket:
            baselines[key] = minirocket(task, seeds)
            cache.parent.mkdir(parents=True, exist_ok=True)
            cache.write_text(json.dumps(baselines, indent=1))
        golden = [r["golden"] for r in results]
        mr = baselines.get(key, [float("nan")])
        raw[entry] = {"name": name, "recipe": path, "ours": results, "minirocket": mr}
        gap = 100 * (np.mean(golden) - np.mean(mr))
        extra = ("" if before is None else f" {before.get(name, 'not run')} |") + (
            "" if args.aim is None else f" {against_aim(golden, mr, args.aim)} |"
        )
        rows.append(
            f"| {name} | {results[0]['test_sequences']} | `{path}` | {describe(recipe, getattr(task, 'length', None))} | {fmt(golden)} | "
            f"{fmt([r['float'] for r in results])} | {fmt(mr)} | {gap:+.1f} |{extra}"
        )
        print(rows[-1], flush=True)
        write_table(args, rows, raw, time.monotonic() - t0, done=len(rows))  # a stopped run keeps its rows


def _training(raw: dict) -> str:
    """The runs' own training time in all: the same figure when a rerun reuses finished runs."""
    runs = [r for entry in raw.values() for r in entry["ours"]]
    total = sum(r.get("train_s") or 0.0 for r in runs)
    return f"{len(runs)} runs trained for {total:,.0f} s in all"


def made_by(args) -> str:
    """The command line that rewrites the table from the same runs: every option that changes which
    runs train, where they are kept or what the table holds (``--work`` too: a rerun with another
    one trains every run again)."""
    return (
        f"OMP_NUM_THREADS=1 NUMBA_NUM_THREADS=1 .venv/bin/python scripts/real_data.py --seeds {args.seeds} "
        + ("" if args.workers <= 1 else f"--workers {args.workers} ")
        + "".join(f"--set {shlex.quote(item)} " for item in args.set)
        + "".join(
            f"--{key} {getattr(args, key)} "
            for key, value in DEFAULT_OPTIONS.items()
            if getattr(args, key) != value
        )
        + ("--no-minirocket " if args.no_minirocket else "")
        + f"--out {args.out}"
        + ("" if args.json is None else f" --json {args.json}")
        + ("" if args.before is None else f" --before {args.before}")
        + ("" if args.aim is None else f" --aim {args.aim:g}")
        + f" {' '.join(args.entries)}"
    )


def write_table(args, rows: list[str], raw: dict, seconds: float, *, done: int) -> None:
    """The markdown table (and ``--json``) of the rows so far, written atomically."""
    from codesign.atomic import write_text

    pending = len(args.entries) - done
    lines = [
        "# Real-data accuracy of deployable models beside MiniRocket",
        "",
        "Golden-model (= hardware) accuracy on the official test split of bundles quantized with each "
        "recipe's formats (weights of at most 8 bits, d <= 32, at most 2 layers), mean [min; max] over "
        f"seeds {args.seeds} (the seed also draws the UEA train/validation carve-out). MiniRocket (aeon, "
        "default 10 000 kernels, ridge) sees the same inputs and the whole official training data, "
        "one fit per seed. `float` is the trained (QAT) torch model before export.",
        "",
        "| data set | test sequences | recipe | network | golden accuracy (%) | float (%) | MiniRocket (%) | "
        "golden - MiniRocket (points) |"
        + ("" if args.before is None else f" before: golden (%) of `{args.before}` |")
        + ("" if args.aim is None else f" within {args.aim:g} points of MiniRocket |"),
        "|---|---|---|---|---|---|---|---|" + "---|" * ((args.before is not None) + (args.aim is not None)),
        *rows,
        "",
        *(
            [f"{pending} of {len(args.entries)} entries not run yet (the same command continues).", ""]
            if pending
            else []
        ),
        f"Made by (one thread per run, {args.workers} at once; {_training(raw)}, this call {seconds:.0f} s): "
        f"`{made_by(args)}`",
        "",
    ]
    write_text(Path(args.out), "\n".join(lines))
    if args.json:
        write_text(Path(args.json), json.dumps(raw, indent=1))


if __name__ == "__main__":
    main()
