"""``codesign fit DATA_TRAIN DATA_TEST``: the deployable network for a user's files, no tuning.

Stages, each resumable from what ``OUT`` holds: check the files (:mod:`codesign.fit.data`), the
candidates (:mod:`codesign.fit.space`), cross-validation and budget on Dask
(:mod:`codesign.fit.search`), the table and the pick (:mod:`codesign.fit.pick`), then the refit
on the whole training file (``OUT/refit-HASH``), its bundle (``OUT/bundle``), the golden accuracy
on the test file and MiniRocket's on the same files when ``aeon`` is installed. ``OUT/fit.json``
holds all of it.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.console import Console

from codesign.errors import CodesignError
from codesign.fit.data import FitData, check_files
from codesign.fit.features import refit_features
from codesign.fit.pick import candidate_rows, pick, refit_iterations, rows_table
from codesign.fit.search import plan_jobs, recipe_hash, run_jobs
from codesign.fit.space import candidates, check_recipe, is_features, load_space
from codesign.fit.stages import read_json, write_json

__all__ = ["FAMILIES", "FitOptions", "fit"]

FAMILIES = ("all", "features", "recurrent")


@dataclass(frozen=True)
class FitOptions:
    """What ``codesign fit`` was asked (the command line's options)."""

    out: Path
    chip: str = "up5k"
    step_rate: float | None = 100.0
    clock_mhz: float | None = None
    max_energy_nj: float | None = None
    folds: int = 3
    seeds: tuple[int, ...] = (0,)
    workers: int | None = None
    device: str | None = None
    quick: bool = False
    minirocket: bool = True
    space: Path | None = None
    family: str = "all"
    """``all``, ``features`` (the random-feature banks alone: a fit of a minute or two) or ``recurrent``."""


def _candidates(data: FitData, opts: FitOptions, notes: list[str]):
    cands = candidates(
        load_space(opts.space),
        quick=opts.quick,
        series_length=data.length,
        notes=notes,
        variance_kept=data.variance_kept,
    )
    if opts.family not in FAMILIES:
        raise CodesignError(f"--family {opts.family!r}: one of {', '.join(FAMILIES)}")
    if opts.family != "all":
        cands = [c for c in cands if is_features(c) == (opts.family == "features")]
        if not cands:
            raise CodesignError(f"--family {opts.family}: the space holds no such candidate")
    for cand in cands:  # every recipe checked against the files before anything trains
        if not is_features(cand):
            check_recipe(cand, data.task(opts.folds, 0, opts.seeds[0]))
    return cands


def _refit(row: dict[str, Any], cand, data: FitData, opts: FitOptions, console: Console) -> dict[str, Any]:
    """Train the pick on the whole training file, export it to ``OUT/bundle``, score the test file."""
    if is_features(cand):
        return _refit_features(cand, data, opts, console)
    from codesign.device import use_device
    from codesign.quant.export import export_run
    from codesign.train import train
    from codesign.train.recipe import parse_recipe
    from codesign.train.trainer import SUMMARY

    recipe = {**cand.recipe, "name": f"fit-{cand.name}", "seed": opts.seeds[0], "task": data.task()}
    spec = parse_recipe(recipe).train  # the keys the recipe leaves out, as training fills them in
    # a weight-averaged selection keeps its last evaluations: the refit trains as long as the CV runs
    iterations = (
        spec.iterations
        if spec.selection == "average"
        else refit_iterations(row, spec.eval_every, spec.iterations)
    )
    recipe["train"] = {**recipe["train"], "iterations": iterations}
    run_dir = opts.out / f"refit-{recipe_hash({**recipe, 'files': data.fingerprint})}"
    record_path = opts.out / "refit.json"
    done = read_json(record_path)
    if done is not None and done.get("run_dir") == str(run_dir) and (opts.out / "bundle").is_dir():
        return done
    console.print(f"refit {cand.name} on the whole training file: {iterations} iterations", highlight=False)
    if not (run_dir / SUMMARY).is_file():
        with use_device(opts.device):
            train(parse_recipe(recipe), run_dir, progress=False)
    _, report = export_run(run_dir, opts.out / "bundle")
    record = {
        "candidate": cand.name,
        "run_dir": str(run_dir),
        "bundle": str(opts.out / "bundle"),
        "iterations": iterations,
        "test_accuracy": report["quantized_test_accuracy"],
        "float_test_accuracy": report["float_test_accuracy"],
        "test_sequences": report["test_sequences"],
        "torch_vs_golden_mismatches": report["torch_vs_golden_mismatches"],
    }
    write_json(record_path, record)
    return record


def _refit_features(cand, data: FitData, opts: FitOptions, console: Console) -> dict[str, Any]:
    """Fit the picked bank on the whole training file into ``OUT/bundle`` (cached by its inputs)."""
    key = recipe_hash({**cand.recipe, "seed": opts.seeds[0], "files": data.fingerprint})
    record_path = opts.out / "refit.json"
    done = read_json(record_path)
    if done is not None and done.get("key") == key and (opts.out / "bundle").is_dir():
        return done
    console.print(f"refit {cand.name} on the whole training file (closed form)", highlight=False)
    record = {"candidate": cand.name, "key": key}
    record |= refit_features(cand.recipe["units"], opts.seeds[0], data.task(), f"fit-{cand.name}", opts.out)
    write_json(record_path, record)
    return record


def _minirocket(data: FitData, opts: FitOptions) -> dict[str, Any] | None:
    """MiniRocket (aeon) fitted on the training file, scored on the test file (None: no aeon)."""
    try:
        from aeon.classification.convolution_based import MiniRocketClassifier
    except ImportError:
        return None
    path = opts.out / "minirocket.json"
    if (
        (done := read_json(path)) is not None
        and done.get("fingerprint") == data.fingerprint
        and done.get("seed") == opts.seeds[0]
        and done.get("normalize") == "auto"  # a record of channel-scaled inputs is not this one
    ):
        return done
    import numpy as np
    import torch

    from codesign.train.recipe import build_task

    # the inputs the candidates see: each series on its own scale where the series defaults pick it
    task = build_task("files", {"train": data.train, "test": data.test, "normalize": "auto"})
    xs, ys = zip(*(task.split(s, 0) for s in ("train", "val")), strict=True)
    x_fit = torch.cat(xs).numpy().transpose(0, 2, 1).astype(np.float64)
    xt, yt = task.split("test", 0)
    clf = MiniRocketClassifier(random_state=opts.seeds[0], n_jobs=1)
    clf.fit(x_fit, torch.cat(ys).numpy())
    accuracy = float((clf.predict(xt.numpy().transpose(0, 2, 1).astype(np.float64)) == yt.numpy()).mean())
    record = {"files": [data.train, data.test], "fingerprint": data.fingerprint, "seed": opts.seeds[0]}
    record |= {"normalize": "auto", "scaling": task.normalization}
    record["test_accuracy"] = accuracy
    write_json(path, record)
    return record


def fit(
    train_file: str | Path, test_file: str | Path, opts: FitOptions, console: Console | None = None
) -> dict:
    """Run (or continue) a fit into ``opts.out``; the JSON-able result (also ``OUT/fit.json``)."""
    from codesign.explore.runner import stage_device
    from codesign.hw.cost import DEVICES

    console = console or Console()
    t0 = time.monotonic()
    if opts.chip not in DEVICES:  # an unknown chip fails before anything trains
        raise CodesignError(f"--target {opts.chip!r} is not one of {', '.join(DEVICES)}")
    chip = DEVICES[opts.chip]
    data = check_files(train_file, test_file, opts.folds)
    notes: list[str] = []
    cands = _candidates(data, opts, notes)
    device, gpu = stage_device(opts.device, None)
    tasks = {(s, f): data.task(opts.folds, f, s) for s in opts.seeds for f in range(opts.folds)}
    budget = {
        "chip": opts.chip,
        "step_rate": opts.step_rate,
        "clock_mhz": opts.clock_mhz,
        "quick": opts.quick,
    }
    plan = plan_jobs(cands, tasks, budget, opts.out.resolve(), data.fingerprint)
    jobs, names = plan.pending()
    console.print(
        f"fit: {data.train_series} training series ({data.classes} classes, up to {data.length} steps, "
        f"{data.channels} channel{'s' if data.channels > 1 else ''}), {len(cands)} candidates x {len(opts.seeds)} seed(s) x {opts.folds} folds "
        f"= {len(plan.jobs)} runs, {len(plan.jobs) - len(jobs)} already done; {chip.name} at "
        f"{opts.step_rate or 0:g} steps/s -> {opts.out}",
        highlight=False,
        soft_wrap=True,
    )
    for note in notes:
        console.print(f"note: {note}", highlight=False)
    trained = run_jobs(plan, budget=budget, device=device, gpu=gpu, workers=opts.workers, console=console)
    rows = candidate_rows(cands, plan, opts.max_energy_nj)
    chosen = pick(rows)
    title = f"{sum(r['fits'] for r in rows)} of {len(rows)} candidates fit the {chip.name}"
    console.print(
        rows_table(rows, chosen and chosen["candidate"], title, "LUT4" if chip.family == "ecp5" else "cells")
    )
    result: dict[str, Any] = {
        "train": data.train,
        "test": data.test,
        "chip": chip.name,
        "step_rate_hz": opts.step_rate,
        "clock_mhz": opts.clock_mhz or chip.clock_mhz,
        "max_energy_nj": opts.max_energy_nj,
        "folds": opts.folds,
        "seeds": list(opts.seeds),
        "quick": opts.quick,
        "notes": notes,
        "candidates": rows,
        "trained_now": trained,
        "pick": None,
    }
    if chosen is None:
        write_json(opts.out / "fit.json", result)
        raise CodesignError(f"no candidate fits the {chip.name} at the budget given (the table says why)")
    cand = next(c for c in cands if c.name == chosen["candidate"])
    result["pick"] = {"candidate": cand.name, "why": cand.why, **_refit(chosen, cand, data, opts, console)}
    result["minirocket"] = _minirocket(data, opts) if opts.minirocket else None
    result["wall_s"] = time.monotonic() - t0
    write_json(opts.out / "fit.json", result)
    return result
