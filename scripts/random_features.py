"""Random-feature networks beside MiniRocket: ``models/results/random_features.md``.

For every set, seed and bank size, a random-feature network (:mod:`codesign.quant.features`) is
fitted on the whole official training file in closed form and scored by the golden integer model
(= the hardware) on the official test file; the float ridge it came from is scored too, and
MiniRocket (aeon, 10 000 kernels, ridge) on the same inputs, one fit per seed. Each result is a
JSON file under ``--work``: a stopped run loses nothing finished, and a second call computes only
what is missing. Sets are aeon names (``ArrowHead``) or files (``NAME=TRAIN,TEST``)::

    OMP_NUM_THREADS=1 .venv/bin/python scripts/random_features.py --seeds 0,1,2 --units 420,840,1680 \\
        --out models/results/random_features.md --json models/results/random_features.json \\
        ItalyPowerDemand UnitTest ...

Every accuracy is the mean [min; max] over the seeds. The table also gives, per set, the smallest
bank within 2 points of MiniRocket (its units, memory bits and 45 nm proxy energy per inference).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

FIELDS = ("golden", "float", "memory_bits", "energy_nj", "units", "fit_s")


def _task(entry: str) -> dict:
    """The ``files``-like task options of an entry (aeon sets are read from aeon's own files)."""
    if "=" in entry:
        name, files = entry.split("=", 1)
        train, test = files.split(",")
        return {"name": name, "train": train, "test": test}
    from codesign.data.uea import _files

    train, test = _files(entry)
    return {"name": entry, "train": str(train), "test": str(test)}


def ours(entry: str, seed: int, units: int, work: str) -> dict:
    """One bank of one set and seed (cached in ``work``)."""
    path = Path(work) / f"{_task(entry)['name']}_u{units}_s{seed}.json"
    if path.is_file():
        return json.loads(path.read_text())
    from codesign.atomic import write_text
    from codesign.fit.features import bank_cost, task_series
    from codesign.golden.features import run_features_ragged
    from codesign.quant.features import fit_feature_bundle, quantize_series

    task = _task(entry)
    data = task_series({"train": task["train"], "test": task["test"]})
    t0 = time.monotonic()
    bundle, bank = fit_feature_bundle(
        *data["train"], classes=data["classes"], name=task["name"], features=units, seed=seed
    )
    fit_s = time.monotonic() - t0
    xs, ys = data["test"]
    xq = quantize_series(bundle.manifest.input, xs)
    mean_mask = float(bundle.weights["features.mask"].sum(axis=1).mean())
    cost = bank_cost(bundle.manifest, mean_mask)
    steps = float(np.mean([len(s) for s in xs]))
    result = {
        "set": task["name"],
        "seed": seed,
        "units": bundle.manifest.features.size,
        "golden": float((run_features_ragged(bundle, xq).classes == ys).mean()),
        "float": float((bank.float_logits(xq).argmax(axis=1) == ys).mean()),
        "memory_bits": cost["memory_bits"],
        "energy_nj": (cost["step_pj"] * steps + cost["readout_pj"]) * 1e-3,
        "fit_s": fit_s,
        "test_sequences": len(ys),
        "scaling": data["scaling"],
    }
    write_text(path, json.dumps(result, indent=1) + "\n")
    return result


def minirocket(entry: str, seed: int, work: str) -> dict:
    path = Path(work) / f"{_task(entry)['name']}_minirocket_s{seed}.json"
    if path.is_file():
        return json.loads(path.read_text())
    from aeon.classification.convolution_based import MiniRocketClassifier

    from codesign.atomic import write_text
    from codesign.fit.features import task_series

    task = _task(entry)
    data = task_series({"train": task["train"], "test": task["test"]})
    (xs, ys), (xt, yt) = data["train"], data["test"]
    width = max(len(s) for s in xs + xt)

    def pad(series: list[np.ndarray]) -> np.ndarray:  # front padding, as the recurrent tables do
        out = np.zeros((len(series), series[0].shape[1], width))
        for i, s in enumerate(series):
            out[i, :, width - len(s) :] = s.T
        return out

    clf = MiniRocketClassifier(random_state=seed, n_jobs=1).fit(pad(xs), ys)
    result = {"set": task["name"], "seed": seed, "minirocket": float((clf.predict(pad(xt)) == yt).mean())}
    write_text(path, json.dumps(result, indent=1) + "\n")
    return result


def fmt(values: list[float]) -> str:
    return f"{100 * np.mean(values):.1f} [{100 * min(values):.1f}; {100 * max(values):.1f}]"


def table(entries: list[str], units: list[int], seeds: list[int], results: dict, command: str) -> str:
    lines = [
        "# Random-feature networks beside MiniRocket",
        "",
        "Golden-model (= hardware) accuracy on the official test file of random-feature networks fitted in "
        "closed form on the whole training file (`codesign/quant/features.py`: 84 kernels of weights -1 and 2 "
        "from their index, exponentially spaced dilations, thresholds from training quantiles, counting units "
        "whose increments carry the readout's column scales, a ridge readout with its regularisation by "
        f"leave-one-out cross-validation, 8-bit readout weights), mean [min; max] over seeds {','.join(map(str, seeds))}. "
        "`float` is the ridge before its readout is quantised. MiniRocket (aeon, 10 000 kernels, ridge) sees the "
        "same inputs, one fit per seed. Memory bits: the bank's arrays, counters, delay line and readout; energy: "
        "`45 nm per-op proxy` (`codesign/fit/features.py` `bank_cost`), per inference on the mean test length: "
        "dynamic energy of the operations only, so it does not depend on the clock or the step rate and leaves out "
        "the clock tree, leakage and whatever the chip does between steps.",
        "",
        "| data set | units | golden (%) | float (%) | MiniRocket (%) | golden - MiniRocket | memory bits | nJ / inference (45 nm proxy) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    smallest = []
    for entry in entries:
        name = _task(entry)["name"]
        mr = [results[(name, "mr", s)]["minirocket"] for s in seeds]
        best = None
        for u in units:
            rs = [results[(name, u, s)] for s in seeds]
            g = [r["golden"] for r in rs]
            gap = 100 * (np.mean(g) - np.mean(mr))
            lines.append(
                f"| {name} | {rs[0]['units']} | {fmt(g)} | {fmt([r['float'] for r in rs])} | {fmt(mr)} | {gap:+.1f} "
                f"| {rs[0]['memory_bits']:,} | {np.mean([r['energy_nj'] for r in rs]):.1f} |"
            )
            if best is None and gap >= -2:
                best = (rs[0]["units"], rs[0]["memory_bits"])
        smallest.append(
            f"| {name} | "
            + ("none of these sizes |" if best is None else f"{best[0]} units, {best[1]:,} bits |")
        )
    lines += [
        "",
        "Smallest bank within 2 points of MiniRocket (mean over seeds):",
        "",
        "| data set | smallest bank |",
        "|---|---|",
    ]
    lines += smallest
    lines += ["", "One size for every set (no per-set choice), mean over seeds:", ""]
    lines += ["| units asked for | within 3 points of MiniRocket | within 5 | within 10 | worst gap |"]
    lines += ["|---|---|---|---|---|"]
    for u in units:
        gaps = []
        for entry in entries:
            name = _task(entry)["name"]
            mr = np.mean([results[(name, "mr", s)]["minirocket"] for s in seeds])
            gaps.append(100 * (np.mean([results[(name, u, s)]["golden"] for s in seeds]) - mr))
        counts = [sum(g >= -k for g in gaps) for k in (3, 5, 10)]
        cells = " | ".join(f"{c} of {len(gaps)}" for c in counts)
        lines.append(f"| {u} | {cells} | {min(gaps):+.1f} |")
    lines += ["", f"Made by: `{command}`", ""]
    return "\n".join(lines)


def plot(entries: list[str], units: list[int], seeds: list[int], results: dict, path: Path) -> None:
    """Golden accuracy minus MiniRocket's against memory bits, one line per set (a Pareto view)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4.5))
    colours = plt.get_cmap("tab20").colors
    for i, entry in enumerate(entries):
        name = _task(entry)["name"]
        mr = np.mean([results[(name, "mr", s)]["minirocket"] for s in seeds])
        bits = [results[(name, u, seeds[0])]["memory_bits"] for u in units]
        gaps = [100 * (np.mean([results[(name, u, s)]["golden"] for s in seeds]) - mr) for u in units]
        ax.plot(bits, gaps, marker="os^D"[i % 4], color=colours[i % len(colours)], label=name)
    ax.axhline(-2, color="grey", linestyle="--", linewidth=0.8)
    ax.set_xscale("log")
    ax.set_xlabel("memory bits (arrays, counters, delay line, readout)")
    ax.set_ylabel("golden - MiniRocket (points, mean of seeds)")
    ax.legend(fontsize=7, ncol=2)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main() -> None:
    import shlex
    import sys

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("entries", nargs="+")
    parser.add_argument("--seeds", default="0,1,2")
    parser.add_argument("--units", default="420,840,1680")
    parser.add_argument("--work", default="runs/random_features")
    parser.add_argument("--workers", type=int, default=2, help="local Dask workers (0: run here)")
    parser.add_argument("--out", type=Path)
    parser.add_argument("--json", type=Path)
    parser.add_argument("--plot", type=Path, help="a PNG of accuracy against memory bits")
    args = parser.parse_args()
    seeds = [int(s) for s in args.seeds.split(",")]
    units = [int(u) for u in args.units.split(",")]
    Path(args.work).mkdir(parents=True, exist_ok=True)
    calls = [
        (ours, (e, s, u, args.work), (_task(e)["name"], u, s))
        for e in args.entries
        for u in units
        for s in seeds
    ]
    calls += [
        (minirocket, (e, s, args.work), (_task(e)["name"], "mr", s)) for e in args.entries for s in seeds
    ]
    results: dict = {}
    if args.workers == 0:
        for fn, call_args, key in calls:
            results[key] = fn(*call_args)
            print(key, results[key].get("golden", results[key].get("minirocket")), flush=True)
    else:
        from distributed import as_completed

        from codesign.runner import dask_client

        with dask_client(None, args.workers) as client:
            futures = {client.submit(fn, *a, pure=False): key for fn, a, key in calls}
            for future in as_completed(list(futures)):
                key = futures[future]
                results[key] = future.result()
                print(key, results[key].get("golden", results[key].get("minirocket")), flush=True)
    from codesign.atomic import write_text

    command = shlex.join(["OMP_NUM_THREADS=1", ".venv/bin/python", *sys.argv])
    text = table(args.entries, units, seeds, results, command)
    if args.out:
        write_text(args.out, text)
    if args.plot:
        plot(args.entries, units, seeds, results, args.plot)
    if args.json:
        rows = [dict(v, key=list(map(str, k))) for k, v in results.items()]
        write_text(args.json, json.dumps(rows, indent=1) + "\n")
    print(text)


if __name__ == "__main__":
    main()
