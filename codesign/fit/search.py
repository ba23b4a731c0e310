"""Cross-validation and budget of every candidate on the project's Dask cluster, resumable.

Every candidate x seed x fold is one training (:func:`codesign.fit.stages.cv_stage`) in its own
run directory ``OUT/cv/NAME/sSEED-fFOLD-HASH`` (the hash is of the run's whole recipe, so a
changed space or file never reuses a stale run); every candidate has one budget task
(:func:`codesign.fit.stages.budget_stage`) after its first run. Only what has no result on disk
is submitted: a stopped fit continues where it left off and a finished one submits nothing.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from codesign.fit.features import features_budget_stage, features_cv_stage
from codesign.fit.space import Candidate
from codesign.fit.stages import budget_stage, cv_result, cv_stage, read_json
from codesign.runner import GPU, dask_client

__all__ = ["Job", "Plan", "plan_jobs", "run_jobs"]


def recipe_hash(recipe: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(recipe, sort_keys=True).encode()).hexdigest()[:10]


@dataclass
class Job:
    """One candidate x seed x fold training."""

    candidate: str
    seed: int
    fold: int
    recipe: dict[str, Any]
    run_dir: str
    result: dict[str, Any] | None = None  # cv_stage's answer, once known


@dataclass
class Plan:
    """Every training and budget task of a fit, with what is already on disk."""

    jobs: list[Job]
    budgets: dict[str, str]  # candidate -> its budget record path
    budget_results: dict[str, dict[str, Any]] = field(default_factory=dict)

    def pending(self) -> tuple[list[Job], list[str]]:
        return [j for j in self.jobs if j.result is None], [
            c for c in self.budgets if c not in self.budget_results
        ]


def plan_jobs(
    cands: list[Candidate],
    tasks: dict[tuple[int, int], dict],
    budget: dict[str, Any],
    out: Path,
    fingerprint: str = "",
) -> Plan:
    """The jobs of ``cands`` on the folds ``tasks[(seed, fold)]`` and their budget tasks (``budget``:
    :func:`budget_stage`'s chip, rate, clock and mode), with finished results read back.

    ``fingerprint`` (of the files' contents) is in every run's hash: a file rewritten in place
    trains again instead of reusing runs of its old contents."""
    jobs, budgets = [], {}
    for cand in cands:
        for (seed, fold), task in tasks.items():
            recipe = {**cand.recipe, "name": f"fit-{cand.name}", "seed": seed, "task": task}
            key = recipe_hash({**recipe, "files": fingerprint})
            run_dir = out / "cv" / cand.name / f"s{seed}-f{fold}-{key}"
            jobs.append(Job(cand.name, seed, fold, recipe, str(run_dir), cv_result(str(run_dir))))
        first = next(j for j in jobs if j.candidate == cand.name)
        key = recipe_hash({"recipe": first.recipe, "budget": budget})  # another chip or rate: mapped again
        budgets[cand.name] = str(out / "budget" / f"{cand.name}-{key}.json")
    plan = Plan(jobs, budgets)
    for name, path in budgets.items():
        if (record := read_json(Path(path))) is not None:
            plan.budget_results[name] = record
    return plan


def _cv(recipe: dict[str, Any], run_dir: str, device: str | None) -> dict[str, Any]:
    """One fold of a candidate: a training, or a closed-form random-feature fit."""
    if recipe.get("kind") == "features":
        return features_cv_stage(recipe, run_dir)
    return cv_stage(recipe, run_dir, device)


def _budget(cv: dict[str, Any], record_path: str, **budget: Any) -> dict[str, Any]:
    """The budget of a candidate from its first fold: mapped by the mapper, or a bank's cost model."""
    if cv.get("kind") == "features":
        return features_budget_stage(cv, record_path, **budget)
    return budget_stage(cv, record_path, **budget)


def _first(plan: Plan, name: str) -> Job:
    return next(j for j in plan.jobs if j.candidate == name)


def _submit(client, plan: Plan, device: str | None, gpu: bool, budget: dict[str, Any]) -> dict:
    """Futures of the pending trainings and budgets (a budget waits for its first training)."""
    trains = GPU if gpu else None
    futures: dict[Any, tuple[str, Any]] = {}
    by_run: dict[str, Any] = {}
    jobs, names = plan.pending()
    for job in jobs:
        f = client.submit(
            _cv,
            job.recipe,
            job.run_dir,
            device,
            key=f"cv-{Path(job.run_dir).name}-{job.candidate}",
            resources=trains,
        )
        by_run[job.run_dir] = f
        futures[f] = ("cv", job)
    for name in names:
        first = _first(plan, name)
        cv = by_run.get(first.run_dir, first.result)
        f = client.submit(_budget, cv, plan.budgets[name], key=f"budget-{name}", **budget)
        futures[f] = ("budget", name)
    return futures


def _line(kind: str, what, result: dict[str, Any]) -> str:
    if kind == "cv" and what.recipe.get("kind") == "features":
        return (
            f"fitted {what.candidate} seed {what.seed} fold {what.fold}: held-out golden accuracy "
            f"{100 * result['accuracy']:.1f}%"
        )
    if kind == "cv":
        return (
            f"trained {what.candidate} seed {what.seed} fold {what.fold}: held-out golden accuracy "
            f"{100 * result['accuracy']:.1f}% (best iteration {result['best_iteration']})"
        )
    if result["fits"]:
        return (
            f"mapped {what}: P = {result['lanes']}, {result['energy_nj']:.1f} nJ per inference, "
            f"{result['memory_bits']:,} memory bits"
        )
    return f"mapped {what}: does not fit ({result['miss']})"


def _run_here(plan: Plan, device: str | None, budget: dict[str, Any], console: Console) -> None:
    """``--workers 0``: every pending task in this process, one after another (no cluster)."""
    jobs, names = plan.pending()
    for job in jobs:
        job.result = _cv(job.recipe, job.run_dir, device)
        console.print(_line("cv", job, job.result), highlight=False, soft_wrap=True)
    for name in names:
        record = _budget(_first(plan, name).result, plan.budgets[name], **budget)
        plan.budget_results[name] = record
        console.print(_line("budget", name, record), highlight=False, soft_wrap=True)


def run_jobs(
    plan: Plan,
    *,
    budget: dict[str, Any],
    device: str | None,
    gpu: bool,
    workers: int | None,
    console: Console,
) -> int:
    """Run the pending tasks of ``plan`` (results land in it); the number of trainings run now.

    ``workers``: local Dask workers (``None``: one per core); 0 runs them here, without a cluster.
    ``budget``: the keyword arguments of :func:`budget_stage` besides its run and record path."""
    jobs, names = plan.pending()
    if not jobs and not names:
        return 0
    if workers == 0:
        _run_here(plan, device, budget, console)
        return len(jobs)
    bar = Progress(
        TextColumn("[bold]fit"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
        transient=True,
    )
    with dask_client(None, workers, gpu) as client, bar:
        from distributed import as_completed

        futures = _submit(client, plan, device, gpu, budget)
        task = bar.add_task("runs", total=len(futures))
        for future in as_completed(list(futures)):
            kind, what = futures[future]
            result = future.result()  # a failed training stops the fit with its error
            if kind == "cv":
                what.result = result
            else:
                plan.budget_results[what] = result
            bar.advance(task)
            bar.console.print(_line(kind, what, result), highlight=False, soft_wrap=True)
    return len(jobs)
