"""The formal suite behind ``make formal``: which checks run on which designs, resumably, on Dask.

Each job (:mod:`codesign.formal.jobs`) writes its row to ``OUT/rows/<key>.json`` (atomically) when
it ends; a second run skips every job whose row is there, so an interrupted suite resumes. The
jobs go to the project's Dask cluster (:func:`codesign.runner.dask_client`), one solver per worker.
:func:`write_report` turns the rows into the Markdown table of ``docs/reports/formal.md``.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from codesign.atomic import write_text
from codesign.formal.equiv import EQUIV_DEVICES
from codesign.formal.jobs import job_key, load_design, run_job
from codesign.hw.faults import FAULTS

__all__ = ["MUTANT_CHECKS", "REFERENCE", "expected", "mutant_jobs", "plan_jobs", "run_suite", "write_report"]

REFERENCE = Path("models/bundles")
"""The reference bundles every tier draws from."""

STREAM_DEPTH = 16
CONFIG_DEPTH = 12
EQUIV_DEPTH = 12
RANDOM_SEEDS = range(6)
LIVE = (("bundle:models/bundles/parity_hsru", "parity_hsru", 4),)
"""(source, name, lanes) of the designs whose liveness bound is proven to its full depth."""

DEEP_DEPTH = 40
DEEP = ("parity_hsru",)
"""Reference bundles whose stream rules are also proven (and covered) to :data:`DEEP_DEPTH`, a depth
that holds whole sequences: the first result of ``parity_hsru`` at P = 1 is reachable at cycle 35."""

MUTANT_CHECKS = ("stream", "unit", "live")
MUTANT_LIVE_SLACK = 9
UNIT_FAULTS = ("sat_off_by_one", "sign0_flipped", "eps_ignored")
UNIT_REFERENCE = "japanese_vowels_cmru_d8"
"""The reference bundle the update unit's faults also meet (a CMRU layer with eps 1)."""
"""Cycles the mutant's liveness check runs past the bound's own depth."""
"""The checks each mutant meets (on the smallest design that exposes it)."""


MUTANT_NETLIST = {
    "source": "random:11",
    "design": "random11",
    "lanes": 4,
    "check": "equiv",
    "device": "hx8k",
    "mode": "bmc",
    "depth": 12,
    "gate_faults": ["sign0_flipped"],
}
"""The equivalence's own check: the netlist of a mutant against the RTL without it must fail."""


def expected(row: dict) -> bool:
    """Whether ``row`` came out as the suite expects: a design's check passes (or does not apply),
    the miter of a mutant's netlist fails; a mutant's own rows may go either way."""
    if row.get("gate_faults"):
        return row["status"] == "FAIL"
    return bool(row.get("faults")) or row["status"] in ("PASS", "N/A")


def _reference_designs(root: Path) -> list[tuple[str, str]]:
    return [(f"bundle:{d}", d.name) for d in sorted(root.iterdir()) if (d / "manifest.yaml").exists()]


def _lanes(source: str, lanes: int) -> int:
    widest = max(layer.size for layer in load_design(source).manifest.layers)
    return min(lanes, widest)


def _design_jobs(source: str, name: str, lanes: int, config: bool) -> list[dict]:
    base = {"source": source, "design": name, "lanes": _lanes(source, lanes)}
    jobs = [
        dict(base, check="stream", mode="bmc", depth=STREAM_DEPTH),
        dict(base, check="paths", mode="structural", depth=0),
        dict(base, check="unit", mode="bmc", depth=1),
    ]
    if config:
        jobs.append(dict(base, check="config", mode="bmc", depth=CONFIG_DEPTH))
    return jobs


def _live_job(source: str, name: str, lanes: int) -> dict:
    from codesign.formal.bounds import result_bound
    from codesign.hw.plan import plan_accelerator

    bound = result_bound(plan_accelerator(load_design(source).manifest, lanes))
    return {
        "source": source,
        "design": name,
        "lanes": lanes,
        "check": "live",
        "mode": "bmc",
        "depth": bound + 3,
    }


def mutant_jobs(root: Path = REFERENCE) -> list[dict]:
    """Every fault of :data:`FAULTS` on the smallest random design that exposes it, per check; the
    update unit's faults also on :data:`UNIT_REFERENCE`."""
    designs = [
        (f"{kind}:{seed}", load_design(f"{kind}:{seed}").manifest)
        for kind in ("random", "random-su", "random-stride")
        for seed in range(40)
    ]
    jobs = []
    for fault in FAULTS:
        exposing = [(src, m) for src, m in designs if FAULTS[fault].exposed_by(m)]
        if not exposing:
            continue
        source, manifest = min(exposing, key=lambda sm: sum(x.size for x in sm[1].layers) + sm[1].input.size)
        name = source.replace(":", "").replace("-", "_")
        lanes = max(x.size for x in manifest.layers)
        base = {"source": source, "design": name, "lanes": lanes, "faults": [fault]}
        jobs.append(dict(base, check="stream", mode="bmc", depth=STREAM_DEPTH))
        jobs.append(dict(base, check="unit", mode="bmc", depth=1))
        if fault == "stalled_beat_lost":
            live = _live_job(source, name, lanes)  # room for a beat dropped a few cycles in
            jobs.append(dict(live, faults=[fault], depth=live["depth"] + MUTANT_LIVE_SLACK))
        if fault in UNIT_FAULTS:  # and on a reference CMRU layer with eps 1 (where the clip can act)
            reference = {"source": f"bundle:{root / UNIT_REFERENCE}", "design": UNIT_REFERENCE, "lanes": 1}
            jobs.append(dict(reference, faults=[fault], check="unit", mode="bmc", depth=1))
    return jobs


def plan_jobs(root: Path = REFERENCE, *, mutants: bool = True) -> list[dict]:
    """The jobs of ``make formal``: reference bundles at P = 1 and 4, random family members, the
    liveness bounds, the iCE40 equivalences and the mutants."""
    jobs: list[dict] = []
    for source, name in _reference_designs(root):
        for lanes in (1, 4):
            jobs += _design_jobs(source, name, lanes, config=name == "parity_hsru")
    for seed in RANDOM_SEEDS:
        jobs += _design_jobs(f"random:{seed}", f"random{seed}", 4, config=True)
    for name in DEEP:
        source = f"bundle:{root / name}"
        for lanes in (1, 4):
            for mode in ("bmc", "cover"):
                jobs.append(
                    {
                        "source": source,
                        "design": name,
                        "lanes": lanes,
                        "check": "stream",
                        "mode": mode,
                        "depth": DEEP_DEPTH,
                    }
                )
        jobs.append(
            {
                "source": source,
                "design": name,
                "lanes": 1,
                "weights": "frozen",
                "check": "config",
                "mode": "bmc",
                "depth": CONFIG_DEPTH,
            }
        )
    jobs += [_live_job(*spec) for spec in LIVE]
    for device in EQUIV_DEVICES:
        jobs.append(
            {
                "source": f"bundle:{root / 'parity_hsru'}",
                "design": "parity_hsru",
                "lanes": 1,
                "weights": "frozen",
                "counters": "all",
                "check": "equiv",
                "device": device,
                "mode": "bmc",
                "depth": EQUIV_DEPTH,
            }
        )
    if mutants:
        jobs += mutant_jobs(root)
        jobs.append(MUTANT_NETLIST)
    seen, unique = set(), []
    for job in jobs:
        key = job_key(job)
        if key not in seen:
            seen.add(key)
            unique.append(job)
    return unique


def _run_one(job: dict, rows: str, timeout: float) -> dict:
    row = run_job(job, timeout=timeout)
    write_text(Path(rows) / f"{job_key(job)}.json", json.dumps(row, indent=1, sort_keys=True))
    return row


RETRIED = ("TIMEOUT", "ERROR")
"""Row statuses a second run of the suite tries again (a check that ran out of time, or a tool
that failed); every other row is kept."""


def _done(path: Path) -> bool:
    return path.exists() and json.loads(path.read_text())["status"] not in RETRIED


def run_suite(
    jobs: list[dict],
    out: Path,
    *,
    workers: int | None = None,
    scheduler: str | None = None,
    timeout: float = 1800,
    progress: Callable[[dict], None] | None = None,
) -> list[dict]:
    """Run every job whose row is missing from ``out/rows`` (or :data:`RETRIED`) on the Dask
    cluster; return all rows."""
    from distributed import as_completed

    from codesign.runner import dask_client

    rows_dir = out / "rows"
    rows_dir.mkdir(parents=True, exist_ok=True)
    todo = [job for job in jobs if not _done(rows_dir / f"{job_key(job)}.json")]
    if todo:
        with dask_client(scheduler, workers) as client:
            futures = [client.submit(_run_one, job, str(rows_dir), timeout, pure=False) for job in todo]
            for future in as_completed(futures):
                row = future.result()
                if progress is not None:
                    progress(row)
    return [json.loads((rows_dir / f"{job_key(job)}.json").read_text()) for job in jobs]


def _verdict(row: dict) -> str:
    return row["status"] if not row.get("failed") else f"{row['status']}: {'; '.join(row['failed'])[:160]}"


def _design_table(rows: list[dict]) -> list[str]:
    lines = [
        "| design | P | check | mode | depth | result | seconds |",
        "|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        if row.get("faults") or row.get("gate_faults"):
            continue
        check = row["check"] + (f" {row['device']}" if row.get("device") else "")
        check += f" ({row['weights']})" if row.get("weights") else ""
        lines.append(
            f"| {row['design']} | {row['lanes']} | {check} | {row['mode']} | {row['depth']} | {_verdict(row)} | {row['seconds']} |"
        )
    return lines


def _mutant_table(rows: list[dict]) -> list[str]:
    lines = [
        "| fault | design | P | " + " | ".join(MUTANT_CHECKS) + " | caught by proof |",
        "|---|---|---|" + "---|" * (len(MUTANT_CHECKS) + 1),
    ]
    found: dict[tuple[str, str], dict[str, dict]] = {}
    for row in rows:
        for fault in row.get("faults", ()):
            found.setdefault((fault, row["design"]), {})[row["check"]] = row
    for fault in FAULTS:
        keys = [key for key in found if key[0] == fault]
        if not keys:
            lines.append(
                f"| {fault} | (no design of the suite exposes it) | |" + " |" * len(MUTANT_CHECKS) + " no |"
            )
        for key in keys:
            got = found[key]
            cells = []
            for check in MUTANT_CHECKS:
                row = got.get(check)
                cells.append(
                    "-"
                    if row is None
                    else ("**caught**" if row["status"] == "FAIL" else row["status"].lower())
                )
            caught = [c for c in MUTANT_CHECKS if got.get(c, {}).get("status") == "FAIL"]
            lanes = next(iter(got.values()))["lanes"]
            lines.append(
                f"| {fault} | {key[1]} | {lanes} | " + " | ".join(cells) + f" | {', '.join(caught) or 'no'} |"
            )
    return lines


def write_report(rows: list[dict], path: Path, command: str) -> None:
    """The suite's rows as ``path`` (Markdown): the designs' checks, then the mutants."""
    plain = [r for r in rows if not r.get("faults") and not r.get("gate_faults")]
    passed = sum(1 for r in plain if r["status"] in ("PASS", "N/A"))
    designs = len(plain)
    netlists = [
        f"- the {r['device']} netlist of `{r['design']}` at P = {r['lanes']} built with "
        f"`{', '.join(r['gate_faults'])}` against the RTL without it: {_verdict(r)} ({r['seconds']} s)"
        for r in rows
        if r.get("gate_faults")
    ]
    seconds = sum(r["seconds"] for r in rows)
    text = [
        "# Formal checks of the accelerator",
        "",
        f"Made by `{command}` ({len(rows)} checks, {seconds:.0f} s of solver time in all).",
        "What each check states, and what only simulation covers: [the formal page](../formal.md).",
        "",
        f"## Designs ({passed} of {designs} checks pass)",
        "",
        *_design_table(rows),
        "",
        "## Mutants",
        "",
        "Each fault of `codesign/hw/faults.py` built into the smallest random family member that",
        f"exposes it (the update unit's faults also into `{UNIT_REFERENCE}`); a check that fails has",
        "caught it (`pass`: the check holds despite the fault; `n/a`: the design has no CMRU or BMRU",
        "layer for the `unit` check).",
        "",
        *_mutant_table(rows),
        "",
        "The equivalence check on a netlist that differs from its RTL (it must fail):",
        "",
        *netlists,
        "",
    ]
    write_text(path, "\n".join(text))
