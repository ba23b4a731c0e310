"""The table of candidates and the pick: the most accurate one that fits, ties to the smaller.

A row's accuracy is the mean (and standard deviation) over seeds and folds of the golden accuracy
on the held-out fold. A candidate is dropped, with the reason in its row, when no build fits the
chip at the step rate (the mapper's sentence) or its energy per inference exceeds the budget.
The refit's iterations are the median best iteration of the pick's runs, rounded up to a whole
evaluation interval.
"""

from __future__ import annotations

import math
import statistics
from typing import Any

from rich.table import Table

from codesign.fit.search import Plan
from codesign.fit.space import Candidate

__all__ = ["candidate_rows", "pick", "refit_iterations", "rows_table"]


def candidate_rows(cands: list[Candidate], plan: Plan, max_energy_nj: float | None) -> list[dict[str, Any]]:
    """One row per candidate: CV accuracy, budget figures, whether it fits and why not."""
    rows = []
    for cand in cands:
        runs = [j.result for j in plan.jobs if j.candidate == cand.name and j.result is not None]
        accs = [r["accuracy"] for r in runs]
        b = plan.budget_results.get(cand.name, {})
        fits, why = bool(b.get("fits")), b.get("miss") or ""
        if fits and max_energy_nj is not None and b["energy_nj"] > max_energy_nj:
            fits, why = (
                False,
                f"{b['energy_nj']:.1f} nJ per inference exceeds --max-energy {max_energy_nj:g} nJ",
            )
        if not b:
            fits, why = False, "not mapped"
        resources = b.get("resources") or {}
        rows.append(
            {
                "candidate": cand.name,
                "why": cand.why,
                "settings": cand.settings,
                "cv_accuracy_mean": statistics.fmean(accs) if accs else None,
                "cv_accuracy_sd": statistics.pstdev(accs) if len(accs) > 1 else 0.0,
                "cv_accuracies": accs,
                "best_iterations": [r["best_iteration"] for r in runs],
                "fits": fits,
                "dropped_because": None if fits else why,
                "memory_bits": b.get("memory_bits"),
                "energy_nj_per_inference": b.get("energy_nj"),
                "lanes": b.get("lanes"),
                "build_options": b.get("options"),
                "logic_cells": resources.get("logic_cells"),
                "block_rams": resources.get("block_rams"),
                "cycles_per_step": b.get("cycles_per_step"),
            }
        )
    return rows


def pick(rows: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The fitting row of the highest mean CV accuracy; ties go to fewer memory bits (None: none fits)."""
    fitting = [r for r in rows if r["fits"] and r["cv_accuracy_mean"] is not None]
    if not fitting:
        return None
    return min(fitting, key=lambda r: (-round(r["cv_accuracy_mean"], 9), r["memory_bits"], r["candidate"]))


def refit_iterations(row: dict[str, Any], eval_every: int, most: int) -> int:
    """The median best iteration of the pick's CV runs, rounded up to ``eval_every``, at most ``most``."""
    median = statistics.median(row["best_iterations"]) if row["best_iterations"] else most
    return int(min(most, max(eval_every, math.ceil(median / eval_every) * eval_every)))


def _pct(v: float | None) -> str:
    return "-" if v is None else f"{100 * v:.1f}"


def rows_table(rows: list[dict[str, Any]], chosen: str | None, title: str, cell_name: str) -> Table:
    """The candidates as a rich table, best first, the pick marked; why each dropped one is out is
    in the caption (the reasons are sentences, too long for a column); ``*`` marks the pick."""
    from rich import box

    table = Table(title=title, title_justify="left", box=box.SIMPLE_HEAD, caption_justify="left")
    for col in ("candidate", "CV acc. %", "fits", "mem. bits", "nJ/inf.", cell_name, "BRAM"):
        table.add_column(col, justify="left" if col in ("candidate", "fits") else "right", no_wrap=True)
    reasons = []
    for r in sorted(rows, key=lambda r: -(r["cv_accuracy_mean"] or -1)):
        mark = r["candidate"] == chosen
        energy = r["energy_nj_per_inference"]
        table.add_row(
            f"{r['candidate']} *" if mark else r["candidate"],
            f"{_pct(r['cv_accuracy_mean'])}±{_pct(r['cv_accuracy_sd'])}",
            "yes" if r["fits"] else "no",
            "-" if r["memory_bits"] is None else f"{r['memory_bits']:,}",
            "-" if energy is None else f"{energy:.1f}",
            "-" if r["logic_cells"] is None else f"{r['logic_cells']:,}",
            "-" if r["block_rams"] is None else str(r["block_rams"]),
            style="bold" if mark else None,
        )
        if not r["fits"]:
            reasons.append(f"{r['candidate']}: {r['dropped_because']}")
    if reasons:
        table.caption = "dropped: " + "; ".join(reasons)
    return table
